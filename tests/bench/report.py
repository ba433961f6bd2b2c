#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""make bench: results table and plots.

  report.py build RECORDS.jsonl... -o results.json [--host-meta K=V ...]
      collect the guest's records (tests/bench/bench.sh) and the host's
      (the engine scenario, tests/bench/engine) into results.json
  report.py render results.json
      compute the summary (targets, pass/miss), write results.md and the
      PNG plots next to results.json, and store the summary in it

Runs on the host with Debian's python3; plots need python3-matplotlib
(scripts/deps bench) and are skipped with a warning without it.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

PROVS = ("metaroce", "rxe")
# scenario 1 targets: metaroce goodput / its lossless goodput, data-direction loss
LOSS_TARGETS = {0.1: 0.99, 1.0: 0.97, 5.0: 0.90, 10.0: 0.85}


# --- build -------------------------------------------------------------------
def cmd_build(args):
    meta, runs, times, end = {}, [], {}, {}
    guest = False
    for path in args.records:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except ValueError as e:
                    print(f"report: {path}:{n}: bad record skipped ({e})", file=sys.stderr)
                    continue
                t = r.pop("type", None)
                if t == "meta":
                    meta.update(r)
                    guest = True
                elif t == "scenario_time":
                    times[r["scen"]] = r["seconds"]
                elif t == "end":
                    end = r
                else:
                    runs.append(r)
    for kv in args.host_meta or []:
        k, _, v = kv.partition("=")
        meta["host_" + k if not k.startswith("host_") else k] = num_or_str(v)
    meta["scenario_seconds"] = times
    meta["guest_seconds"] = end.get("seconds")
    meta["kernel_warnings"] = end.get("kernel_warnings", "")
    # no guest ran (the engine scenario alone): nothing to be incomplete
    meta["guest"] = guest
    meta["complete"] = bool(end) or not guest
    with open(args.output, "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
        f.write("\n")
    print(f"report: {len(runs)} runs -> {args.output}")


def num_or_str(v):
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


# --- helpers -----------------------------------------------------------------
def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, nd=1, unit=""):
    if x is None:
        return "n/a"
    return f"{x:.{nd}f}{unit}"


def pct_label(p):
    return f"{p:g} %"


def qstat(run, role):
    q = (run.get("qdisc") or {}).get(role) or {}
    sent, dropped, over = q.get("sent_pkts"), q.get("dropped"), q.get("overflow") or 0
    if sent is None or dropped is None:
        return None, None
    rnd = max(dropped - over, 0)
    tot = sent + dropped
    return (100.0 * rnd / tot if tot else 0.0), over


def ctr(run, side, name):
    return ((run.get("counters") or {}).get(side) or {}).get(name, 0)


# --- scenario 1: loss --------------------------------------------------------
def summarize_loss(runs):
    out = []
    cfgs = sorted({(r["mtu"], r["rate_mbit"]) for r in runs}, key=lambda c: -c[0])
    for mtu, rate in cfgs:
        rs = [r for r in runs if r["mtu"] == mtu and r["rate_mbit"] == rate]
        base = {p: mean([r.get("goodput_mbps") for r in rs if r["prov"] == p and r["dir"] == "none"]) for p in PROVS}
        base_runs = {p: [r.get("goodput_mbps") for r in rs if r["prov"] == p and r["dir"] == "none"] for p in PROVS}
        points = []
        keys = []
        for r in rs:
            k = (r["dir"], r["model"], float(r["loss_pct"] or 0))
            if k not in keys:
                keys.append(k)
        order = {"none": 0, "data": 1, "both": 2}
        keys.sort(key=lambda k: (k[1] == "gemodel", order[k[0]], k[2]))
        for d, model, p in keys:
            pt = {"dir": d, "model": model, "loss_pct": p, "prov": {}}
            for prov in PROVS:
                sel = [r for r in rs if r["prov"] == prov and r["dir"] == d and r["model"] == model
                       and float(r["loss_pct"] or 0) == p]
                if not sel:
                    continue
                gp = mean([r.get("goodput_mbps") for r in sel])
                ratio = gp / base[prov] if gp is not None and base[prov] else None
                loss_meas = mean([qstat(r, "data")[0] for r in sel])
                cpu = [steady_cpu(r) for r in sel]
                over = sum((qstat(r, "data")[1] or 0) + (qstat(r, "ack")[1] or 0) for r in sel)
                pt["prov"][prov] = {
                    "goodput_mbps": gp, "ratio": ratio, "runs": len(sel),
                    "failed": sum(1 for r in sel if r.get("goodput_mbps") is None),
                    "iters": sum(r.get("iters") or 0 for r in sel),
                    "measured_loss_pct": loss_meas, "overflow_drops": over,
                    "cpu_util": mean([c[2] for c in cpu]),
                    "wire_mbps": mean([c[1] * 8 / 1e6 if c[1] is not None else None for c in cpu]),
                    "counters": sel[-1].get("counters"), "qdisc": sel[-1].get("qdisc"),
                }
            points.append(pt)
        out.append({"mtu": mtu, "rate_mbit": rate, "lossless_mbps": base,
                    "lossless_runs": base_runs, "points": points})
    return out


def loss_rows(loss):
    rows = []
    for c in loss:
        scen = f"loss, MTU {c['mtu']}, {c['rate_mbit']} Mbit/s"
        for pt in c["points"]:
            m, x = pt["prov"].get("metaroce"), pt["prov"].get("rxe")
            p = pt["loss_pct"]
            if pt["dir"] == "none":
                case = "lossless (mean of %d)" % max((v["runs"] for v in pt["prov"].values()), default=0)
                target, res = ">= rxe", verdict(m and x and m["goodput_mbps"] is not None and x["goodput_mbps"] is not None
                                                and m["goodput_mbps"] >= x["goodput_mbps"], m, x)
                cell = lambda v: fmt(v["goodput_mbps"], 1, " Mbit/s") if v else "n/a"
            else:
                if pt["model"] == "gemodel":
                    case = f"bursty ~{p:.2g} % on data (GE)"
                else:
                    case = f"{pct_label(p)} on {'data' if pt['dir'] == 'data' else 'both dirs'}"
                case += f" (1-p = {1 - p / 100:.3f})"
                t = LOSS_TARGETS.get(p) if pt["dir"] == "data" and pt["model"] == "random" else None
                if t is not None:
                    target = f">= {t:.2f}"
                    res = verdict(m and m["ratio"] is not None and m["ratio"] >= t, m)
                else:
                    target, res = "-", "-"
                cell = lambda v: (f"{fmt(v['ratio'], 3)} ({fmt(v['goodput_mbps'], 1)} Mbit/s)" if v else "n/a")
            rows.append([scen, case, cell(m), cell(x), target, res])
    return rows


def verdict(ok, *vals):
    if any(v is None or (isinstance(v, dict) and v.get("failed") and v.get("failed") == v.get("runs")) for v in vals):
        return "n/a"
    return "**pass**" if ok else "**MISS**"


# --- scenario 1b: READ, atomics and SEND under loss --------------------------
# metaroce rate / its lossless rate, per tool and loss point (issue 50);
# judged on loss on the data direction and on both directions
OPS_TARGETS = {"ib_read_bw": {1.0: 0.95, 10.0: 0.85}, "ib_atomic_bw": {1.0: 0.90}}
OPS_TOOLS = ("ib_read_bw", "ib_atomic_bw", "ib_send_bw")
OPS_LAT_TOOLS = ("ib_read_lat", "ib_atomic_lat")


def ops_point(sel, base):
    """one provider at one loss point: mean rate and its ratio to base"""
    ops = mean([r.get("ops_per_s") for r in sel])
    cpu = [steady_cpu(r) for r in sel]
    return {"ops_per_s": ops, "goodput_mbps": mean([r.get("goodput_mbps") for r in sel]),
            "ratio": ops / base if ops is not None and base else None, "runs": len(sel),
            "failed": sum(1 for r in sel if r.get("ops_per_s") is None),
            "iters": sum(r.get("iters") or 0 for r in sel),
            "measured_loss_pct": mean([qstat(r, "data")[0] for r in sel]),
            "overflow_drops": sum((qstat(r, "data")[1] or 0) + (qstat(r, "ack")[1] or 0) for r in sel),
            "cpu_util": mean([c[2] for c in cpu]),
            "wire_mbps": mean([c[1] * 8 / 1e6 if c[1] is not None else None for c in cpu]),
            "data_port": sel[-1].get("data_port"),
            "counters": sel[-1].get("counters"), "qdisc": sel[-1].get("qdisc")}


def summarize_ops(runs):
    out = []
    cfgs = sorted({(r["mtu"], r["rate_mbit"]) for r in runs}, key=lambda c: -c[0])
    order = {"none": 0, "data": 1, "both": 2}
    for mtu, rate in cfgs:
        for tool in [t for t in OPS_TOOLS if any(r["tool"] == t for r in runs)]:
            rs = [r for r in runs if r["mtu"] == mtu and r["rate_mbit"] == rate and r["tool"] == tool]
            if not rs:
                continue
            lossless = {p: [r.get("ops_per_s") for r in rs if r["prov"] == p and r["dir"] == "none"] for p in PROVS}
            base = {p: mean(v) for p, v in lossless.items()}
            keys = sorted({(r["dir"], float(r["loss_pct"] or 0)) for r in rs}, key=lambda k: (order[k[0]], k[1]))
            points = []
            for d, p in keys:
                pt = {"dir": d, "loss_pct": p, "prov": {}}
                for prov in PROVS:
                    sel = [r for r in rs if r["prov"] == prov and r["dir"] == d and float(r["loss_pct"] or 0) == p]
                    if sel:
                        pt["prov"][prov] = ops_point(sel, base[prov])
                points.append(pt)
            out.append({"mtu": mtu, "rate_mbit": rate, "tool": tool, "lossless_ops": base,
                        "lossless_runs": lossless, "points": points})
    return out


def ops_abs(tool, v):
    """absolute rate: Mbit/s of goodput, or operations per second"""
    if not v:
        return "n/a"
    if tool == "ib_atomic_bw":
        return fmt(v["ops_per_s"], 0, " ops/s")
    return fmt(v["goodput_mbps"], 1, " Mbit/s")


def ops_case(pt):
    if pt["dir"] == "none":
        return "lossless (mean of %d)" % max((v["runs"] for v in pt["prov"].values()), default=0)
    return f"{pct_label(pt['loss_pct'])} on {'data' if pt['dir'] == 'data' else 'both dirs'}"


def ops_target(tool, pt, m):
    t = OPS_TARGETS.get(tool, {}).get(pt["loss_pct"]) if pt["dir"] != "none" else None
    if t is None:
        return "-", "-"
    return f">= {t:.2f}", verdict(m and m["ratio"] is not None and m["ratio"] >= t, m)


def ops_rows(ops):
    """rows of the main table (scenario, case, metaroce, rxe, target, result)"""
    rows = []
    for c in ops:
        scen = f"ops, {c['tool']}, MTU {c['mtu']}, {c['rate_mbit']} Mbit/s"
        for pt in c["points"]:
            m, x = pt["prov"].get("metaroce"), pt["prov"].get("rxe")
            if pt["dir"] == "none":
                cell = lambda v: ops_abs(c["tool"], v)
            else:
                cell = lambda v: f"{fmt(v['ratio'], 3)} ({ops_abs(c['tool'], v)})" if v else "n/a"
            rows.append([scen, ops_case(pt), cell(m), cell(x), *ops_target(c["tool"], pt, m)])
    return rows


def ops_details(ops):
    """the "Operations under loss" table: ratios, rates and what the wire did"""
    rows = []
    for c in ops:
        tool = c["tool"]
        for pt in c["points"]:
            m, x = pt["prov"].get("metaroce"), pt["prov"].get("rxe")
            g = lambda v, k: v.get(k) if v else None
            ratio = lambda v: fmt(g(v, "ratio"), 3) if pt["dir"] != "none" else "1 (base)"
            fake = {"counters": g(m, "counters"), "qdisc": g(m, "qdisc")}
            k = (f"retx {ctr(fake, 'a', 'retransmitted_packets')}/{ctr(fake, 'b', 'retransmitted_packets')}, "
                 f"rack {ctr(fake, 'a', 'rack_losses')}, tlp {ctr(fake, 'a', 'tail_loss_probes')}, "
                 f"rto {ctr(fake, 'a', 'rto_events')}, spurious {ctr(fake, 'a', 'spurious_retransmits')}, "
                 f"cc cuts {ctr(fake, 'a', 'cc_window_cuts')}") if m else "-"
            both = lambda k, nd, sc=1: " / ".join(fmt(sc * g(v, k) if g(v, k) is not None else None, nd)
                                                   for v in (m, x))
            rows.append([f"{tool}, {c['mtu']}/{c['rate_mbit']}", ops_case(pt), ratio(m), ratio(x),
                         ops_abs(tool, m), ops_abs(tool, x), *ops_target(tool, pt, m),
                         both("measured_loss_pct", 2), both("overflow_drops", 0), both("wire_mbps", 1),
                         both("cpu_util", 0, 100), k])
    return rows


def summarize_ops_lat(runs):
    out = {}
    for tool in OPS_LAT_TOOLS:
        for p in sorted({float(r["loss_pct"] or 0) for r in runs}):
            for prov in PROVS:
                sel = [r for r in runs if r["tool"] == tool and r["prov"] == prov and float(r["loss_pct"] or 0) == p]
                if not sel:
                    continue
                s = summarize_lat(sel, (tool,)).get(tool, {}).get(prov)
                if s:
                    out.setdefault(tool, {}).setdefault(str(p), {})[prov] = s
    return out


def ops_lat_cases(ol):
    """(tool, case, n, metaroce, rxe, median cell, target, result) per point"""
    g = lambda v, k: v.get(k) if v else None
    cell = lambda v, k: f"{fmt(g(v, k + '_best'), 1)} / {fmt(g(v, k), 1)} us"
    for tool, by in ol.items():
        for p, d in by.items():
            m, x = d.get("metaroce"), d.get("rxe")
            case = "lossless, unshaped" if float(p) == 0 else f"{float(p):g} % on both dirs, shaped"
            mb, xb = g(m, "median_us_best"), g(x, "median_us_best")
            yield (tool, case, (m or x)["runs"], cell, m, x, "<= rxe (lowest run)",
                   verdict(mb is not None and xb is not None and mb <= xb, mb, xb))


def ops_lat_rows(ol):
    rows = []
    for tool, case, n, cell, m, x, target, res in ops_lat_cases(ol):
        rows.append([f"ops latency, {tool}", f"{case}: median (lowest of {n} runs / median of runs)",
                     cell(m, "median_us"), cell(x, "median_us"), target, res])
        rows.append([f"ops latency, {tool}", f"{case}: 99th percentile (lowest run / median of runs)",
                     cell(m, "p99_us"), cell(x, "p99_us"), "-", "-"])
    return rows


def ops_lat_details(ol):
    return [[tool, f"{case} ({n} runs)", cell(m, "median_us"), cell(x, "median_us"), cell(m, "p99_us"),
             cell(x, "p99_us"), target, res] for tool, case, n, cell, m, x, target, res in ops_lat_cases(ol)]


# --- scenario 2: efficiency --------------------------------------------------
def steady_cpu(run):
    """CPU-seconds per second and wire bytes per second over the steady part
    of the samples: from the first to the last sample that saw traffic,
    minus the perftest margin at both ends."""
    s = run.get("samples") or []
    if len(s) < 3:
        return None, None, None
    act = [i for i in range(1, len(s)) if s[i][1] > s[i - 1][1]]
    if not act:
        return None, None, None
    ta, tb = s[act[0]][0], s[act[-1]][0]
    m = run.get("margin_s", 1)
    i0 = next((i for i in range(len(s)) if s[i][0] >= ta + m), None)
    i1 = next((i for i in reversed(range(len(s))) if s[i][0] <= tb - m), None)
    if i0 is None or i1 is None or i1 <= i0:
        i0, i1 = act[0], act[-1]
    dt = s[i1][0] - s[i0][0]
    if dt <= 0:
        return None, None, None
    hz = run.get("user_hz", 100)
    busy = (s[i1][2] - s[i0][2]) / hz
    idle = (s[i1][3] - s[i0][3]) / hz
    util = busy / (busy + idle) if busy + idle > 0 else None
    return busy / dt, (s[i1][1] - s[i0][1]) / dt, util


def summarize_eff(runs):
    out = {}
    for prov in PROVS:
        sel = [r for r in runs if r["prov"] == prov]
        if not sel:
            continue
        per = []
        for r in sel:
            cpu, wire, util = steady_cpu(r)
            gp = r.get("goodput_mbps")
            cpu_gb = cpu / (gp * 1e6 / 8 / 1e9) if cpu is not None and gp else None
            per.append({"goodput_mbps": gp, "cpu_s_per_s": cpu, "cpu_util": util,
                        "wire_mbps": wire * 8 / 1e6 if wire is not None else None, "cpu_s_per_gb": cpu_gb})
        out[prov] = {k: median([p[k] for p in per]) for k in per[0]}
        out[prov]["runs"] = per
    return out


def eff_rows(eff):
    m, x = eff.get("metaroce"), eff.get("rxe")
    g = lambda v, k: v.get(k) if v else None
    rows = []
    mg, xg = g(m, "goodput_mbps"), g(x, "goodput_mbps")
    n = len((m or x or {}).get("runs", []))
    rows.append(["efficiency, unshaped, MTU 9000", f"goodput (median of {n})", fmt(mg, 1, " Mbit/s"), fmt(xg, 1, " Mbit/s"),
                 ">= 2 x rxe", verdict(mg is not None and xg is not None and mg >= 2 * xg, mg, xg)])
    rows.append(["efficiency, unshaped, MTU 9000", "guest CPU per GB of goodput", fmt(g(m, "cpu_s_per_gb"), 1, " CPU-s"),
                 fmt(g(x, "cpu_s_per_gb"), 1, " CPU-s"), "-", "-"])
    rows.append(["efficiency, unshaped, MTU 9000", "guest CPU busy (2 vCPUs = 100 %)",
                 fmt(100 * g(m, "cpu_util") if g(m, "cpu_util") is not None else None, 0, " %"),
                 fmt(100 * g(x, "cpu_util") if g(x, "cpu_util") is not None else None, 0, " %"), "-", "-"])
    return rows


# --- scenario 3: latency -----------------------------------------------------
def summarize_lat(runs, tools=("ib_write_lat", "ib_send_lat")):
    out = {}
    for tool in tools:
        for prov in PROVS:
            sel = [r for r in runs if r["tool"] == tool and r["prov"] == prov]
            if not sel:
                continue

            def us(r, k):
                v, mhz = r.get(k), r.get("tsc_mhz")
                if v is None:
                    return None
                return v / mhz if r.get("unit") == "cycles" and mhz else v
            meds = [us(r, "median") for r in sel if us(r, "median") is not None]
            p99s = [us(r, "p99") for r in sel if us(r, "p99") is not None]
            out.setdefault(tool, {})[prov] = {
                "median_us": median(meds),
                # host contention only adds latency: the least disturbed
                # run is the best estimate of the transport's own figure
                "median_us_best": min(meds) if meds else None,
                "p99_us": median(p99s),
                "p99_us_best": min(p99s) if p99s else None,
                "min_us": median([us(r, "min") for r in sel]),
                "runs": len(sel), "failed": sum(1 for r in sel if r.get("median") is None),
                "medians_us": [us(r, "median") for r in sel],
            }
    return out


def lat_rows(lat):
    rows = []
    for tool, d in lat.items():
        m, x = d.get("metaroce"), d.get("rxe")
        g = lambda v, k: v.get(k) if v else None
        n = (m or x)["runs"]
        cell = lambda v, k: f"{fmt(g(v, k + '_best'), 1)} / {fmt(g(v, k), 1)} us"
        mb, xb = g(m, "median_us_best"), g(x, "median_us_best")
        rows.append([f"latency, {tool}, 2 B", f"median (lowest of {n} runs / median of runs)", cell(m, "median_us"),
                     cell(x, "median_us"), "<= rxe (lowest run)",
                     verdict(mb is not None and xb is not None and mb <= xb, mb, xb)])
        rows.append([f"latency, {tool}, 2 B", "99th percentile (lowest run / median of runs)", cell(m, "p99_us"),
                     cell(x, "p99_us"), "-", "-"])
    return rows


# --- scenario 4: recovery ----------------------------------------------------
def recov_metrics(run):
    """Transfer time and longest delivery stall from the data port's byte
    samples. The transfer starts at the last sample before 64 KiB had
    crossed (start-up, connection set-up and stray ARP traffic excluded)
    and ends at the first sample that saw the final byte count."""
    s = run.get("samples") or []
    if len(s) < 2:
        return {}
    final = s[-1][1]
    if final < 65536:
        return {"capped": bool(run.get("capped")), "rc": run.get("rc"), "wire_bytes": final}
    i0 = max(next(i for i in range(len(s)) if s[i][1] >= 65536) - 1, 0)
    i1 = next(i for i in range(len(s)) if s[i][1] >= final)
    t_start, t_end = s[i0][0], s[i1][0]
    # a stall: from a sample that saw new bytes to the last sample before
    # the next one that did (the poller may itself be late: only gaps it
    # observed count)
    stall, last_inc = 0.0, t_start
    for i in range(i0 + 1, i1 + 1):
        if s[i][1] > s[i - 1][1]:
            stall = max(stall, s[i - 1][0] - last_inc)
            last_inc = s[i][0]
    ev = run.get("events") or {}
    m = {"transfer_s": t_end - t_start, "stall_ms": 1000 * stall, "wire_bytes": final,
         "capped": bool(run.get("capped")), "rc": run.get("rc"),
         "tc_unconfirmed": bool(ev.get("tc_unconfirmed")),
         "dropped": sum(((run.get("qdisc") or {}).get(r) or {}).get("dropped") or 0 for r in ("data", "ack"))}
    if "down" in ev and "up" in ev:
        m["outage_ms_actual"] = 1000 * (ev["up"] - ev["down"])
        # first new delivery once the outage is over
        m["resume_after_up_ms"] = None
        for i in range(1, len(s)):
            if s[i - 1][0] >= ev["up"] and s[i][1] > s[i - 1][1]:
                m["resume_after_up_ms"] = 1000 * (s[i][0] - ev["up"])
                break
    return m


def summarize_recov(runs):
    out = {}
    for prov in PROVS:
        d = {}
        for kind, sel in (("baseline", [r for r in runs if r["prov"] == prov and not r.get("outage_ms")]),
                          ("outage", [r for r in runs if r["prov"] == prov and r.get("outage_ms")])):
            ms = [recov_metrics(r) for r in sel]
            ok = [m for m in ms if m and not m["capped"] and m["rc"] == 0]
            d[kind] = {"runs": len(sel), "ok": len(ok), "capped": sum(1 for m in ms if m and m["capped"]),
                       "transfer_s": median([m["transfer_s"] for m in ok]),
                       "stall_ms": median([m["stall_ms"] for m in ok]),
                       "outage_ms_actual": median([m.get("outage_ms_actual") for m in ok]),
                       "per_run": ms}
        if d["baseline"]["runs"] or d["outage"]["runs"]:
            b, o = d["baseline"]["transfer_s"], d["outage"]["transfer_s"]
            d["extra_s"] = o - b if o is not None and b is not None else None
            out[prov] = d
    return out


def recov_rows(rec, mb):
    rows = []
    g = lambda p, kind, k: rec.get(p, {}).get(kind, {}).get(k)

    def cell(p):
        o, b = g(p, "outage", "transfer_s"), g(p, "baseline", "transfer_s")
        if o is None:
            c = g(p, "outage", "capped")
            return f"capped ({c} runs)" if c else "n/a"
        return f"{o:.2f} s ({(o - b) * 1000:+.0f} ms vs {b:.2f} s)" if b is not None else f"{o:.2f} s"
    n = g("metaroce", "outage", "runs") or g("rxe", "outage", "runs") or 0
    rows.append([f"recovery, {mb} MiB, 100 Mbit/s", f"completion after a 50 ms outage (median of {n})",
                 cell("metaroce"), cell("rxe"), "-", "-"])
    rows.append([f"recovery, {mb} MiB, 100 Mbit/s", "longest delivery stall (outage / no outage)",
                 f"{fmt(g('metaroce', 'outage', 'stall_ms'), 0)} / {fmt(g('metaroce', 'baseline', 'stall_ms'), 0)} ms",
                 f"{fmt(g('rxe', 'outage', 'stall_ms'), 0)} / {fmt(g('rxe', 'baseline', 'stall_ms'), 0)} ms", "-", "-"])
    return rows


# --- scenario 5: multipath ---------------------------------------------------
MP_SHARE_TARGET = 0.90      # goodput / aggregate, clean and one lossy link
MP_RECOVER_LEVEL = 0.70     # share of the aggregate that counts as recovered
MP_RECOVER_TARGET_S = 1.0
MP_RATE_WIN_S = 0.2         # rate window of the recovery metric
WC_STATUS = {4: "LOC_PROT_ERR", 5: "WR_FLUSH_ERR", 9: "REM_INV_REQ_ERR", 10: "REM_ACCESS_ERR",
             11: "REM_OP_ERR", 12: "RETRY_EXC_ERR", 13: "RNR_RETRY_EXC_ERR"}


def mp_cols(run):
    cols = run.get("cols") or []
    deliv = cols.index("deliv_" + run["prov"]) + 1 if ("deliv_" + run["prov"]) in cols else None
    links = [i + 1 for i, c in enumerate(cols) if c.startswith("l") and c[1:].isdigit()]
    return deliv, links


def mp_active(run, col):
    """first and last sample index at which column col moved"""
    s = run.get("samples") or []
    act = [i for i in range(1, len(s)) if s[i][col] > s[i - 1][col]]
    if not act:
        return None, None
    return max(act[0] - 1, 0), act[-1]


def mp_rate_series(run, col, bin_s):
    s = run.get("samples") or []
    t, r, j = [], [], 0
    for i in range(1, len(s)):
        if s[i][0] - s[j][0] >= bin_s:
            t.append(s[i][0])
            r.append((s[i][col] - s[j][col]) * 8 / (s[i][0] - s[j][0]) / 1e6)
            j = i
    return t, r


def mp_metrics(run):
    s = run.get("samples") or []
    deliv, links = mp_cols(run)
    agg = run["links"] * run["link_mbit"]
    m = {"goodput_mbps": run.get("goodput_mbps"), "agg_mbit": agg, "rc": run.get("rc"),
         "capped": bool(run.get("capped")), "error": run.get("error")}
    m["share"] = m["goodput_mbps"] / agg if m["goodput_mbps"] is not None else None
    if run["prov"] == "metaroce":
        m["qp_errors"] = ctr(run, "a", "retry_exceeded") + ctr(run, "b", "retry_exceeded")
    else:
        # completer_retry_err counts retries; retry_exceeded_err the QPs that gave up
        m["qp_errors"] = ctr(run, "a", "retry_exceeded_err") + ctr(run, "a", "rnr_retry_exceeded_err")
    if deliv is None or len(s) < 3:
        return m
    i0, i1 = mp_active(run, deliv)
    if i0 is None:
        return m
    ev = run.get("event") or {}
    tf = ev.get("t")
    # per-link share of the offered bytes: the whole transfer without a
    # lossy link, else from 1 s after the loss began to the end
    a = i0
    if run.get("case") == "lossy" and tf is not None:
        a = next((i for i in range(len(s)) if s[i][0] >= tf + 1.0), i0)
    if run.get("case") == "fail" and tf is not None:
        a = next((i for i in range(len(s)) if s[i][0] >= tf + 1.0), i0)
    tot = sum(s[i1][c] - s[a][c] for c in links)
    m["link_share"] = [(s[i1][c] - s[a][c]) / tot if tot > 0 else None for c in links]
    dt = s[i1][0] - s[a][0]
    m["deliv_after_mbps"] = (s[i1][deliv] - s[a][deliv]) * 8 / dt / 1e6 if dt > 0 else None
    ci = len(run.get("cols") or []) - 1
    busy, idle = s[i1][ci] - s[i0][ci], s[i1][ci + 1] - s[i0][ci + 1]
    m["cpu_util"] = busy / (busy + idle) if busy + idle > 0 else None
    m["event_link"] = ev.get("link")
    m["event_conf"] = ev.get("tc_confirmed")
    m["event_t"] = tf
    if run.get("case") == "fail" and tf is not None:
        # first W-window entirely after the failure whose delivered rate is
        # >= MP_RECOVER_LEVEL of the aggregate; its end, from the failure
        rec = None
        for i in range(len(s)):
            if s[i][0] < tf + MP_RATE_WIN_S:
                continue
            if s[i][0] > s[i1][0] + 0.05:
                break
            j = max(k for k in range(i + 1) if s[k][0] <= s[i][0] - MP_RATE_WIN_S + 1e-9)
            if s[j][0] < tf:
                continue
            rate = (s[i][deliv] - s[j][deliv]) * 8 / (s[i][0] - s[j][0]) / 1e6
            if rate >= MP_RECOVER_LEVEL * agg:
                rec = s[i][0] - tf
                break
        m["recover_s"] = rec
        # the delivered rate: before the failure (from 1 s after the start)
        # and the longest gap without delivery after it
        b = next((i for i in range(len(s)) if s[i][0] >= s[i0][0] + 1.0), i0)
        f = next((i for i in range(len(s)) if s[i][0] >= tf), None)
        if f is not None and f > b:
            m["deliv_before_mbps"] = (s[f][deliv] - s[b][deliv]) * 8 / (s[f][0] - s[b][0]) / 1e6
        # the same, relative to this run's own rate before the failure (a
        # guest whose CPU limits it below the aggregate never reaches the
        # absolute level)
        rec_rel = None
        lvl = MP_RECOVER_LEVEL * (m.get("deliv_before_mbps") or 0)
        for i in range(len(s)):
            if lvl <= 0 or s[i][0] < tf + MP_RATE_WIN_S:
                continue
            if s[i][0] > s[i1][0] + 0.05:
                break
            j = max(k for k in range(i + 1) if s[k][0] <= s[i][0] - MP_RATE_WIN_S + 1e-9)
            if s[j][0] < tf:
                continue
            if (s[i][deliv] - s[j][deliv]) * 8 / (s[i][0] - s[j][0]) / 1e6 >= lvl:
                rec_rel = s[i][0] - tf
                break
        m["recover_rel_s"] = rec_rel
        stall, last = 0.0, tf
        end = s[-1][0]
        for i in range(f or 0, len(s)):
            if i > 0 and s[i][deliv] > s[i - 1][deliv]:
                stall = max(stall, s[i - 1][0] - last)
                last = s[i][0]
        stall = max(stall, (end - last) if last < s[i1][0] or last < end - 0.5 else 0)
        m["stall_after_s"] = stall
        m["delivery_resumed"] = any(s[i][deliv] > s[i - 1][deliv] for i in range(max(f or 1, 1), len(s))
                                    if s[i][0] >= tf + 1.0)
    return m


def summarize_mp(runs):
    out = {}
    for case in ("clean", "fail", "lossy"):
        for prov in PROVS:
            sel = [r for r in runs if r.get("case") == case and r["prov"] == prov]
            if not sel:
                continue
            ms = [mp_metrics(r) for r in sel]
            d = {"runs": len(sel), "per_run": ms,
                 "goodput_mbps": median([m["goodput_mbps"] for m in ms]),
                 "share": median([m["share"] for m in ms]),
                 "qp_errors": sum(m.get("qp_errors") or 0 for m in ms),
                 "rcs": [m["rc"] for m in ms]}
            if case == "fail":
                recs = [m.get("recover_s") for m in ms]
                d["recover_s"] = max(recs) if recs and None not in recs else None
                d["recovered_runs"] = sum(1 for x in recs if x is not None)
                rr = [m.get("recover_rel_s") for m in ms]
                d["recover_rel_s"] = max(rr) if rr and None not in rr else None
                d["recovered_rel_runs"] = sum(1 for x in rr if x is not None)
                d["deliv_before_mbps"] = median([m.get("deliv_before_mbps") for m in ms])
                d["deliv_after_mbps"] = median([m.get("deliv_after_mbps") for m in ms])
                d["stall_after_s"] = max([m.get("stall_after_s") or 0 for m in ms])
            if case in ("clean", "lossy"):
                shares = [m.get("link_share") for m in ms if m.get("link_share")]
                d["link_share"] = shares
                d["event_link"] = [m.get("event_link") for m in ms]
            d["agg_mbit"] = ms[0]["agg_mbit"]
            out.setdefault(case, {})[prov] = d
    lossy = [r.get("loss_pct") for r in runs if r.get("case") == "lossy"]
    if lossy:
        out["loss_pct"] = lossy[0]
    return out


def mp_rows(mp):
    rows = []
    any_run = next(v for c in ("clean", "fail", "lossy") for v in mp.get(c, {}).values())
    agg = any_run["agg_mbit"]
    scen = f"multipath, 1 QP, 4 x {agg // 4} Mbit/s ECMP"
    g = lambda case, p: mp.get(case, {}).get(p)

    def gp_cell(v):
        if not v:
            return "n/a"
        return f"{fmt(v['goodput_mbps'], 1)} Mbit/s ({fmt(v['share'], 2)})"

    def shares(v, lossy=False):
        if not v or not v.get("link_share"):
            return "n/a"
        out = []
        for k, sh in enumerate(v["link_share"]):
            el = v["event_link"][k] if lossy and k < len(v["event_link"]) else None
            out.append(" / ".join(("**" if el == i + 1 else "") + fmt(100 * x if x is not None else None, 0)
                                  + ("**" if el == i + 1 else "") for i, x in enumerate(sh)))
        return "; ".join(out) + " %"
    n = max((v["runs"] for c in ("clean", "fail", "lossy") for v in mp.get(c, {}).values()), default=0)
    if "clean" in mp:
        m, x = g("clean", "metaroce"), g("clean", "rxe")
        rows.append([scen, f"clean: goodput (share of {agg} Mbit/s; median of {n})", gp_cell(m), gp_cell(x),
                     f">= {MP_SHARE_TARGET:.2f}", verdict(m and m["share"] is not None and m["share"] >= MP_SHARE_TARGET, m)])
        rows.append([scen, "clean: bytes per link l1 / l2 / l3 / l4", shares(m), shares(x), "-", "-"])
    if "fail" in mp:
        m, x = g("fail", "metaroce"), g("fail", "rxe")

        def rec_cell(v):
            if not v:
                return "n/a"
            if v["recover_s"] is not None:
                return f"{v['recover_s']:.2f} s"
            return (f"not within the run ({v['recovered_runs']} of {v['runs']} runs recovered; longest stall "
                    f"{v['stall_after_s']:.1f} s)")
        rows.append([scen, f"busiest link fails mid-transfer: time to >= {MP_RECOVER_LEVEL:.0%} of {agg} Mbit/s "
                     f"({MP_RATE_WIN_S * 1000:.0f} ms windows of delivered bytes; worst of {n})",
                     rec_cell(m), rec_cell(x), f"<= {MP_RECOVER_TARGET_S:g} s",
                     verdict(m and m["recover_s"] is not None and m["recover_s"] <= MP_RECOVER_TARGET_S, m)])

        def rel_cell(v):
            if not v:
                return "n/a"
            if v["recover_rel_s"] is not None:
                return f"{v['recover_rel_s']:.2f} s (of {fmt(v['deliv_before_mbps'], 1)} Mbit/s)"
            return (f"not within the run ({v['recovered_rel_runs']} of {v['runs']} runs; before: "
                    f"{fmt(v['deliv_before_mbps'], 1)} Mbit/s)")
        rows.append([scen, f"busiest link fails: time to >= {MP_RECOVER_LEVEL:.0%} of the run's own delivered rate "
                     "before the failure", rel_cell(m), rel_cell(x), "-", "-"])

        def err_cell(v):
            if not v:
                return "n/a"
            wc = sorted({WC_STATUS.get(int(x), x) for pm in v["per_run"]
                         for x in re.findall(r"[Ff]ailed status (\d+)", pm.get("error") or "")})
            return (f"{v['qp_errors']} retry-exceeded, exit {'/'.join(str(r) for r in v['rcs'])}"
                    + (f", error completion {', '.join(wc)}" if wc else "")
                    + (" (capped)" if any(pm.get("capped") for pm in v["per_run"]) else ""))
        rows.append([scen, "busiest link fails: QP errors", err_cell(m), err_cell(x), "none",
                     verdict(m and m["qp_errors"] == 0 and all(r == 0 for r in m["rcs"]), m)])

        def after_cell(v):
            if not v:
                return "n/a"
            return f"{fmt(v['goodput_mbps'], 1)} / {fmt(v['deliv_after_mbps'], 1)} Mbit/s"
        rows.append([scen, "busiest link fails: goodput over the run / delivered from 1 s after the failure",
                     after_cell(m), after_cell(x), "-", "-"])
    if "lossy" in mp:
        m, x = g("lossy", "metaroce"), g("lossy", "rxe")
        rows.append([scen, f"busiest link at {mp.get('loss_pct', '?'):g} % loss: goodput (share of {agg} Mbit/s)", gp_cell(m), gp_cell(x),
                     f">= {MP_SHARE_TARGET:.2f}", verdict(m and m["share"] is not None and m["share"] >= MP_SHARE_TARGET, m)])
        rows.append([scen, "lossy link: bytes per link from 1 s after (lossy link in bold)", shares(m, True),
                     shares(x, True), "-", "-"])
    return rows


# --- scenario 6: incast ------------------------------------------------------
INC_GOODPUT_TARGET = 0.90
INC_JAIN_TARGET = 0.95
INC_QUEUE_BDP = 2.0
INC_DROP_TARGET = 0.001     # share of the port's packets: "near zero"
VARIANTS = ("full", "nocc", "nocred", "rxe")
VARIANT_NAME = {"full": "metaroce", "nocc": "metaroce, sender CC off (cc=N cc_ecn=N)",
                "nocred": "metaroce, credits off (credits=N)", "rxe": "rxe"}


def pctl(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    f = math.floor(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def inc_metrics(run):
    cols = run.get("cols") or []
    s = [x for x in run.get("samples") or [] if len(x) == len(cols) + 1]
    ix = {c: i + 1 for i, c in enumerate(cols)}
    gps = [f.get("goodput_mbps") for f in run.get("flows") or []]
    ok = [g for g in gps if g is not None]
    m = {"n": run["n"], "flows_ok": len(ok), "flow_goodput": gps,
         "goodput_mbps": sum(ok) if ok else None,
         "jain": (sum(ok) ** 2 / (len(gps) * sum(g * g for g in ok))) if ok and sum(ok) > 0 else None,
         "rtt_min_us": run.get("rtt_min_us"), "margin_s": run.get("margin_s")}
    m["share"] = m["goodput_mbps"] / run["rate_mbit"] if m["goodput_mbps"] is not None else None
    if len(s) < 3:
        return m
    c = ix["port_tx"]
    act = [i for i in range(1, len(s)) if s[i][c] - s[i - 1][c] > 20000]
    if not act:
        return m
    ta, tb = s[act[0]][0], s[act[-1]][0]
    mg = run.get("margin_s", 1)
    st = [x for x in s if ta + mg <= x[0] <= tb - mg] or s[act[0]:act[-1] + 1]
    q = [x[ix["backlog_bytes"]] for x in st]
    m["queue_p50"], m["queue_p99"], m["queue_max"] = pctl(q, 0.5), pctl(q, 0.99), max(q)
    m["queue_samples"] = len(q)
    d = lambda k: s[-1][ix[k]] - s[0][ix[k]]
    m["dropped"], m["ce_marks"] = d("dropped"), d("ce_mark")
    sent_pkts = (run.get("counters") or {})
    m["port_bytes"] = d("sent_bytes")
    dt = st[-1][0] - st[0][0]
    m["wire_mbps"] = (st[-1][c] - st[0][c]) * 8 / dt / 1e6 if dt > 0 else None
    busy = st[-1][ix["cpu_busy"]] - st[0][ix["cpu_busy"]]
    idle = st[-1][ix["cpu_idle"]] - st[0][ix["cpu_idle"]]
    m["cpu_util"] = busy / (busy + idle) if busy + idle > 0 else None
    # each sender's bytes onto the switch: when each flow ran, and the
    # shares over the time all of them ran (a wire view of fairness)
    sc = [ix[k] for k in cols if k.startswith("sender")]
    if sc:
        starts, ends = [], []
        for k in sc:
            a = [i for i in range(1, len(s)) if s[i][k] - s[i - 1][k] > 20000]
            if a:
                starts.append(s[a[0] - 1][0])
                ends.append(s[a[-1]][0])
        if len(starts) == len(sc):
            m["start_spread_s"] = max(starts) - min(starts)
            t0, t1 = max(starts) + 0.5, min(ends) - 0.5
            w = [x for x in s if t0 <= x[0] <= t1]
            if len(w) >= 2 and w[-1][0] > w[0][0]:
                by = [w[-1][k] - w[0][k] for k in sc]
                m["common_s"] = w[-1][0] - w[0][0]
                m["wire_jain"] = sum(by) ** 2 / (len(by) * sum(b * b for b in by)) if sum(by) > 0 else None
    # packets: the port's bytes over full-size frames (RDMA MTU 4096 + headers)
    pkts = m["port_bytes"] / 4200 if m["port_bytes"] else 0
    m["drop_share"] = m["dropped"] / (pkts + m["dropped"]) if pkts + m["dropped"] > 0 else None
    return m


def runs_of(inc):
    return inc.get("margins", [])


def meta_margin(ms):
    return "/".join(str(x) for x in sorted(set(ms))) or "?"


def summarize_incast(runs, pings):
    out = {"by": {}, "margins": sorted({r.get("margin_s") for r in runs if r.get("margin_s") is not None})}
    for r in runs:
        out["by"].setdefault(str(r["n"]), {})[r["variant"]] = inc_metrics(r)
    rtts = [m.get("rtt_min_us") for d in out["by"].values() for m in d.values() if m.get("rtt_min_us")]
    out["base_rtt_us"] = min(rtts) if rtts else None
    out["ping_min_ms"] = min([p["rtt_min_ms"] for p in pings], default=None)
    rate = runs[0]["rate_mbit"] if runs else 100
    out["rate_mbit"] = rate
    out["ce_ms"] = runs[0].get("ce_ms", 2) if runs else 2
    out["burst_bytes"] = runs[0].get("burst_bytes") if runs else None
    # base RTT: ICMP through the idle bottleneck (the network's RTT); the
    # transport's lowest RTT sample only if ping gave nothing
    rtt_s = out["ping_min_ms"] / 1e3 if out["ping_min_ms"] else (
        out["base_rtt_us"] / 1e6 if out["base_rtt_us"] else None)
    out["bdp_bytes"] = rate * 1e6 / 8 * rtt_s if rtt_s else None
    out["bdp_from"] = "ping" if out["ping_min_ms"] else ("metaroce rtt_min_us" if out["base_rtt_us"] else None)
    return out


def incast_rows(inc):
    rows = []
    bdp = inc.get("bdp_bytes")
    qlim = INC_QUEUE_BDP * bdp if bdp else None
    for n in sorted(inc["by"], key=int):
        d = inc["by"][n]
        scen = f"incast {n} -> 1, {inc['rate_mbit']} Mbit/s port, CE > {inc.get('ce_ms', 2):g} ms"
        m, x = d.get("full"), d.get("rxe")
        var = lambda k, f: "; ".join(f"{lab} {f(d[v])}" for v, lab in (("nocc", "CC off"), ("nocred", "credits off"))
                                    if v in d)

        def mcell(k, f):
            if not m:
                return "n/a"
            o = var(k, f)
            return f"{f(m)}" + (f" ({o})" if o else "")
        gpf = lambda v: f"{fmt(v.get('goodput_mbps'), 1)} ({fmt(v.get('share'), 2)})"
        rows.append([scen, f"aggregate goodput, Mbit/s (share of link)", mcell("g", gpf), gpf(x) if x else "n/a",
                     f">= {INC_GOODPUT_TARGET:.2f}",
                     verdict(m and m.get("share") is not None and m["share"] >= INC_GOODPUT_TARGET, m)])
        jf = lambda v: fmt(v.get("jain"), 3)
        rows.append([scen, "Jain's index over per-flow goodput", mcell("j", jf), jf(x) if x else "n/a",
                     f">= {INC_JAIN_TARGET:.2f}", verdict(m and m.get("jain") is not None and m["jain"] >= INC_JAIN_TARGET, m)])
        qf = lambda v: (f"{fmt(v.get('queue_p50') / 1000 if v.get('queue_p50') is not None else None, 1)} / "
                        f"{fmt(v.get('queue_p99') / 1000 if v.get('queue_p99') is not None else None, 1)} kB")
        rows.append([scen, "bottleneck queue p50 / p99", mcell("q", qf), qf(x) if x else "n/a",
                     f"p99 <= 2 BDP ({fmt(qlim / 1000 if qlim else None, 1)} kB)",
                     verdict(m and qlim and m.get("queue_p99") is not None and m["queue_p99"] <= qlim, m, qlim)])
        df = lambda v: f"{v.get('dropped', 'n/a')} ({fmt(100 * v['drop_share'] if v.get('drop_share') is not None else None, 2)} %)"
        rows.append([scen, "packets dropped at the bottleneck (share)", mcell("d", df), df(x) if x else "n/a",
                     f"<= {100 * INC_DROP_TARGET:g} % with credits on",
                     verdict(m and m.get("drop_share") is not None and m["drop_share"] <= INC_DROP_TARGET, m)])
    return rows


def incast_details(inc):
    rows = []
    for n in sorted(inc["by"], key=int):
        for v in VARIANTS:
            m = inc["by"][n].get(v)
            if not m:
                continue
            q = lambda k: fmt(m.get(k) / 1000 if m.get(k) is not None else None, 1)
            rows.append([n, VARIANT_NAME[v], f"{m['flows_ok']}/{m['n']}", fmt(m.get("goodput_mbps"), 1),
                         fmt(m.get("wire_mbps"), 1), " ".join(fmt(g, 1) for g in m["flow_goodput"]),
                         fmt(m.get("jain"), 3), fmt(m.get("wire_jain"), 3),
                         f"{fmt(m.get('start_spread_s'), 1)} / {fmt(m.get('common_s'), 1)}"
                         + (" (**> margin**)" if (m.get("start_spread_s") or 0) > m.get("margin_s", 1e9) else ""), q("queue_p50"), q("queue_p99"), q("queue_max"),
                         m.get("dropped", "n/a"), m.get("ce_marks", "n/a"),
                         fmt(100 * m["cpu_util"] if m.get("cpu_util") is not None else None, 0)])
    return rows


# --- scenario 7: collective step time (issue 44) ------------------------------
# p50 / p99 / max of the per-step time of the ring all-reduce, per condition
# and provider; targets (metaroce): p99 at 1 % loss <= 1.2 x lossless p99;
# no step over 3 x lossless p99 when a link dies
STEP_CONDS = ("lossless", "loss0.1", "loss1", "bursty", "fail", "incast")
STEP_P99_TARGET = {"loss1": 1.2}
STEP_FAIL_MAX = 3.0


def step_cond_label(c):
    return {"lossless": "lossless", "loss0.1": "0.1 % random loss", "loss1": "1 % random loss",
            "bursty": "bursty loss (Gilbert-Elliott)", "fail": "busiest of 4 ECMP links dies",
            "incast": "8 -> 1 incast background"}.get(c, c)


def summarize_step(runs):
    out = {"conds": {}, "size": None, "links": None, "link_mbit": None, "steps_req": None}
    for r in runs:
        out["size"], out["links"] = r.get("size"), r.get("links")
        out["link_mbit"], out["steps_req"] = r.get("link_mbit"), r.get("steps_req")
        c = out["conds"].setdefault(r["cond"], {})
        # one run per condition and provider; a repeated one replaces it
        c[r["prov"]] = {k: r.get(k) for k in ("status", "steps", "timed", "warmup", "capped", "verified", "bad", "p50_us", "p90_us",
                                               "p99_us", "max_us", "mean_us", "algbw_mbps", "elapsed_s",
                                               "netem_dropped", "event", "background", "error")}
        c[r["prov"]]["ok"] = r.get("status") == "PASS"
    for prov in PROVS:
        base = out["conds"].get("lossless", {}).get(prov)
        b99 = base["p99_us"] if base and base["ok"] else None
        for c in out["conds"].values():
            v = c.get(prov)
            if v:
                v["p99_ratio"] = v["p99_us"] / b99 if b99 and v.get("p99_us") else None
                v["max_ratio"] = v["max_us"] / b99 if b99 and v.get("max_us") else None
    return out


def step_cell(v):
    if not v:
        return "n/a"
    if not v.get("p50_us"):
        return f"failed ({v.get('timed', v.get('steps')) or 0} steps)"
    cell = f"{v['p50_us'] / 1000:.1f} / {v['p99_us'] / 1000:.1f} / {v['max_us'] / 1000:.1f} ms"
    if v.get("capped"):
        cell += f" (capped: {v.get('timed')} steps)"
    if not v["ok"]:
        cell += f" (**{v.get('status')}** after {v.get('timed', v.get('steps'))} steps)"
    return cell


def step_ratio(v, key):
    return fmt(v.get(key), 2) if v and v.get(key) else "n/a"


def step_rows(st):
    rows = []
    scen = (f"step: ring all-reduce of {st['size']}, 4 ranks, {st['links']} x {st['link_mbit']} Mbit/s ECMP, "
            f"{st['steps_req']} steps")
    conds = [c for c in STEP_CONDS if c in st["conds"]] + sorted(set(st["conds"]) - set(STEP_CONDS))
    for c in conds:
        m, x = st["conds"][c].get("metaroce"), st["conds"][c].get("rxe")
        rows.append([scen, f"{step_cond_label(c)}: step time p50 / p99 / max", step_cell(m), step_cell(x), "-", "-"])
        if c == "lossless":
            continue
        tgt, res = "-", "-"
        if c in STEP_P99_TARGET:
            t = STEP_P99_TARGET[c]
            tgt = f"metaroce <= {t:g}"
            ok = bool(m and m["ok"] and m.get("p99_ratio") is not None and m["p99_ratio"] <= t)
            res = verdict(ok, m.get("p99_ratio") if m else None)
        rows.append([scen, f"{step_cond_label(c)}: p99 / lossless p99", step_ratio(m, "p99_ratio"),
                     step_ratio(x, "p99_ratio"), tgt, res])
        if c == "fail":
            ok = bool(m and m["ok"] and m.get("max_ratio") is not None and m["max_ratio"] <= STEP_FAIL_MAX)
            rows.append([scen, f"{step_cond_label(c)}: slowest step / lossless p99", step_ratio(m, "max_ratio"),
                         step_ratio(x, "max_ratio"), f"metaroce <= {STEP_FAIL_MAX:g}",
                         verdict(ok, m.get("max_ratio") if m else None)])
    return rows


def step_details(runs):
    out = []
    keys = ("retransmitted_packets", "rto_events", "tail_loss_probes", "rack_losses", "path_switches",
            "entropies_retired", "retry_exceeded", "rcvd_seq_err", "retry_exceeded_err", "send_err")
    for r in runs:
        ev = r.get("event") or {}
        evs = f"l{ev['link']}" if ev.get("link") else "-"
        if ev.get("link") and r.get("t0_real"):
            evs += f" at {ev['t_real'] - r['t0_real']:.1f} s"
        bg = r.get("background") or {}
        ctr = r.get("counters") or {}
        mean = r.get("mean_us")
        steps = r.get("steps") if r.get("timed") is None else f"{r.get('timed')} + {r.get('warmup')} warm-up"
        out.append([step_cond_label(r["cond"]), r["prov"], r.get("status"), steps, r.get("verified"),
                    r.get("bad"), fmt(mean / 1000 if mean else None, 1), fmt(r.get("algbw_mbps"), 1),
                    r.get("netem_dropped"), evs,
                    f"{bg.get('without_errors')}/{bg.get('flows')}" if bg else "-",
                    ", ".join(f"{k} {ctr[k]}" for k in keys if ctr.get(k)) or "-",
                    (r.get("error") or "")[:200].replace("|", "/")])
    return out


def plot_step(plt, runs, outdir, colors):
    conds = [c for c in STEP_CONDS if any(r["cond"] == c for r in runs)]
    if not conds:
        return None
    fig, axs = plt.subplots(1, len(PROVS), figsize=(11, 4.5), sharey=True, squeeze=False)
    cmap = plt.get_cmap("tab10")
    for j, prov in enumerate(PROVS):
        ax = axs[0][j]
        for i, c in enumerate(conds):
            r = next((r for r in runs if r["cond"] == c and r["prov"] == prov and r.get("step_us")), None)
            if not r:
                continue
            xs = sorted(v / 1000 for v in r["step_us"])
            ys = [(k + 1) / len(xs) for k in range(len(xs))]
            ax.step(xs, ys, where="post", color=cmap(i), label=step_cond_label(c)
                    + ("" if r.get("status") == "PASS" else f" ({r.get('status')})"))
        ax.set_xscale("log")
        ax.set_xlabel("step time (ms, log scale)")
        ax.set_title(prov, fontsize=9, color=colors.get(prov))
        ax.grid(True, alpha=0.3)
        ax.axhline(0.99, color="gray", lw=0.8, ls=":")
        if j == 0:
            ax.set_ylabel("fraction of steps")
        ax.legend(fontsize=7, loc="lower right")
    r0 = runs[0]
    fig.suptitle(f"ring all-reduce of {r0.get('size')} over 4 ranks, {r0.get('links')} x {r0.get('link_mbit')} "
                 "Mbit/s ECMP: CDF of the per-step time (dotted: p99)", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "step_cdf.png"), dpi=110)
    plt.close(fig)
    return "step_cdf.png"


# --- engine: cost per packet, natively on the host ------------------------------
# issue 46: under 100 ns per packet, at each end of a flow
ENGINE_TARGET_NS = 100.0
ENGINE_CASES = ("lossless", "loss1", "reorder")


def engine_cpu(runs):
    r = runs[0]
    return f"{r.get('cpu', '?')}, {r.get('cpu_id', '?')}, {r.get('cpu_mhz', '?')} MHz"


def engine_order(runs):
    return sorted(runs, key=lambda r: (ENGINE_CASES.index(r["case"]) if r.get("case") in ENGINE_CASES
                                       else len(ENGINE_CASES), r.get("case", "")))


def engine_rows(runs):
    rows = []
    for r in engine_order(runs):
        snd, rcv = r.get("sender_ns_pkt"), r.get("receiver_ns_pkt")
        ok = snd is not None and rcv is not None and max(snd, rcv) < ENGINE_TARGET_NS
        res = verdict(ok, snd, rcv) if r.get("checks") == "ok" else "**MISS** (checks failed)"
        rows.append([f"engine, native on the host ({r.get('cpu', '?')})",
                     f"{r.get('desc', r.get('case'))}: ns per packet, sender / receiver "
                     f"(median of {r.get('repeats', '?')} runs of {r.get('packets', '?')} PSNs)",
                     f"{fmt(snd, 1)} / {fmt(rcv, 1)} ns (send {fmt(r.get('tx_ns_pkt'), 1)}, "
                     f"{fmt(r.get('ack_ns'), 0)} per ACK x {fmt(r.get('acks_per_pkt'), 2)}; "
                     f"{fmt(r.get('mpps_core'), 1)} Mpkt/s per core)",
                     "-", f"< {ENGINE_TARGET_NS:g} ns each (issue 46)", res])
    return rows


def engine_md(runs, meta):
    r0 = runs[0]
    md = ["", "## Engine cost per packet, native (engine)", "",
          f"The transport engine's sources (unchanged) in a driver-like harness (`tests/bench/engine`), on the "
          f"host: {engine_cpu(runs)}, gcc -O2; host load average {meta.get('host_engine_load_start', '?')} at "
          f"the start. One RC WRITE stream of 4 KiB segments at {r0.get('rate_pkt_us', '?')} packets per "
          f"simulated us ({fmt(r0['rate_pkt_us'] * 4096 * 8 / 1000 if r0.get('rate_pkt_us') else None, 0)} "
          f"Gbit/s), one-way delay {r0.get('owd_us', '?')} us, 16 entropies, the module's "
          "default parameters. Each phase is timed with CLOCK_MONOTONIC, the clock read's own cost "
          f"({r0.get('clock_ns', '?')} ns) taken off; an interval over 50 us + 5 us per packet counts as "
          "interrupted (scheduler, hypervisor) and is left out with its packets. Figures are the median "
          "of the runs (lowest in brackets); every run does the same work and checks it (every PSN "
          "delivered once, no engine call refused, drops repaired by RACK).", ""]
    rows = []
    for r in engine_order(runs):
        g = lambda k, nd=1: f"{fmt(r.get(k), nd)} ({fmt(r.get(k + '_min'), nd)})"
        rows.append([r.get("case"), g("tx_ns_pkt"), g("ack_ns", 0), fmt(r.get("acks_per_pkt"), 3),
                     g("sender_ns_pkt"), g("rx_ns_pkt"), g("both_ns_pkt"), fmt(r.get("mpps_core"), 2),
                     f"{r.get('retx', '?')} / {r.get('drops', '?')} / {r.get('rack_marked', '?')} / "
                     f"{r.get('tlps', '?')} / {r.get('rtos', '?')}",
                     f"{r.get('interrupted', '?')} of {r.get('intervals', '?')}", r.get("checks", "?")])
    md.append(md_table(["case", "send ns/pkt", "ns per ACK", "ACKs per pkt", "sender ns/pkt", "receive ns/pkt",
                        "both ends ns/pkt", "Mpkt/s per core", "resent / dropped / RACK / probes / RTOs",
                        "intervals interrupted", "checks"], rows))
    md += ["", "send: the send path per packet sent (pacing, path pick, header, scoreboard, window); per ACK: "
           "parse, SACK and RACK processing, path feedback, congestion window, credit, loss detection and the "
           "timers; receive: parse, classify, credit, placement checks, accept, ACK coalescing and building, "
           "per packet arrived. sender = send path + ACK work per PSN delivered, both ends = sender + "
           "receiver; Mpkt/s per core = 1000 / the busier end. The target row judges the busier end."]
    return md


# --- render ------------------------------------------------------------------
def summarize_nvme(runs):
    """Per provider, rw and loss: median bandwidth (MB/s) and p99 latency."""
    out = {}
    for r in runs:
        k = out.setdefault(r["prov"], {}).setdefault(r["rw"], {}).setdefault(str(r["loss_pct"]), [])
        k.append(r)
    summ = {}
    for prov, d in out.items():
        for rw, byloss in d.items():
            for loss, rs in byloss.items():
                bw = [x["bw_bytes"] / 1e6 for x in rs if x.get("bw_bytes")]
                p99 = [x["clat_p99_us"] for x in rs if x.get("clat_p99_us")]
                summ.setdefault(prov, {}).setdefault(rw, {})[loss] = {
                    "mb_s": median(bw) if bw else None, "p99_us": median(p99) if p99 else None,
                    "errors": [x["error"] for x in rs if x.get("error")]}
    return summ


def nvme_rows(nv):
    rows = []
    losses = sorted({l for p in nv.values() for rw in p.values() for l in rw}, key=float)
    scen = "NVMe-oF, fio 128 KiB, iodepth 16, MTU 9000, 100 Mbit/s"
    for rw in ("write", "read"):
        for loss in losses:
            def cell(prov):
                v = nv.get(prov, {}).get(rw, {}).get(loss)
                if not v or v["mb_s"] is None:
                    return "-" if not v else "failed"
                base = nv.get(prov, {}).get(rw, {}).get("0", {}).get("mb_s")
                txt = f"{v['mb_s']:.2f} MB/s"
                if float(loss) and base:
                    txt = f"{v['mb_s'] / base:.3f} ({txt})"
                if v["p99_us"] is not None:
                    txt += f", p99 {v['p99_us'] / 1000:.1f} ms"
                return txt
            case = f"{rw} " + ("lossless" if not float(loss) else f"{pct_label(float(loss))} on both dirs (ratio)")
            rows.append([scen, case, cell("metaroce"), cell("rxe"), "-", "-"])
    return rows


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def details_loss(loss):
    rows = []
    for c in loss:
        for pt in c["points"]:
            for prov in PROVS:
                v = pt["prov"].get(prov)
                if not v:
                    continue
                if pt["dir"] == "none":
                    case = "lossless"
                elif pt["model"] == "gemodel":
                    case = "bursty data"
                else:
                    case = f"{pct_label(pt['loss_pct'])} {pt['dir']}"
                fake = {"counters": v["counters"], "qdisc": v["qdisc"]}
                lost_d = lost_pkts(fake, "data")
                if prov == "metaroce":
                    retx = ctr(fake, "a", "retransmitted_packets")
                    k = (f"retx {retx} (lost {lost_d}), rack {ctr(fake, 'a', 'rack_losses')}, "
                         f"tlp {ctr(fake, 'a', 'tail_loss_probes')}, rto {ctr(fake, 'a', 'rto_events')}, "
                         f"cc cuts {ctr(fake, 'a', 'cc_window_cuts')}, rtt min/srtt "
                         f"{ctr(fake, 'a', 'rtt_min_us')}/{ctr(fake, 'a', 'rtt_smoothed_us')} us; "
                         f"B: dup {ctr(fake, 'b', 'duplicate_packets')}, ooo {ctr(fake, 'b', 'out_of_order_packets')}")
                else:
                    k = (f"sent {ctr(fake, 'a', 'sent_pkts')} (lost {lost_d}), "
                         f"B: seq err {ctr(fake, 'b', 'rcvd_seq_err')}, dup req {ctr(fake, 'b', 'duplicate_request')}, "
                         f"ooo req {ctr(fake, 'b', 'out_of_seq_request')}; A: retry err "
                         f"{ctr(fake, 'a', 'completer_retry_err')}")
                cpu = v.get("cpu_util")
                rows.append([f"{c['mtu']}/{c['rate_mbit']}", case, prov, fmt(v["goodput_mbps"], 1),
                             fmt(v.get("wire_mbps"), 1), fmt(100 * cpu if cpu is not None else None, 0),
                             fmt(v["measured_loss_pct"], 2), v["overflow_drops"], k])
    return rows


def run_case(r):
    s = r.get("scen")
    if s == "loss":
        return f"MTU {r.get('mtu')} {r.get('dir')} {r.get('model')} {r.get('loss_pct')} % (run {r.get('rep')})"
    if s == "lat":
        return f"{r.get('tool')} (run {r.get('rep')})"
    if s in ("ops", "ops_lat"):
        return f"{r.get('tool')} {r.get('dir')} {r.get('loss_pct')} % (run {r.get('rep')})"
    if s == "recov":
        return f"outage {r.get('outage_ms')} ms (run {r.get('rep')})"
    if s == "mp":
        return f"{r.get('case')} (run {r.get('rep')})"
    if s == "step":
        return r.get("cond")
    return f"run {r.get('rep')}"


def lost_pkts(run, role):
    q = (run.get("qdisc") or {}).get(role) or {}
    if q.get("dropped") is None:
        return "?"
    return max(q["dropped"] - (q.get("overflow") or 0), 0)


def ops_md(summary):
    md = ["", "## Operations under loss", "",
          "ib_read_bw and ib_send_bw 64 KiB, ib_atomic_bw (fetch-and-add), 1 QP, perftest -D/-f as the loss runs; "
          "ratio = completed operations / the provider's own lossless mean (lossless runs at the start, in the "
          "middle (full mode) and at the end of each tool); READ's data direction is responder -> requester "
          "(the responses), SEND's and the atomics' requester -> responder. loss % = netem's random drops on the data direction "
          "(metaroce / rxe), overflow = tbf queue drops (both directions); wire = bytes leaving the switch on the data direction, guest CPU = busy share of "
          "both vCPUs in the steady part (near 100 %: the CPU, not the link, limits; both perftest ends "
          "busy-poll); counters: metaroce's requester (A) / responder (B) retransmitted packets and the "
          "requester's loss detections, spurious retransmissions and window cuts. Targets (issue 50) on both "
          "loss placements.", ""]
    if "ops" in summary:
        md.append(md_table(["tool, config", "case", "metaroce ratio", "rxe ratio", "metaroce", "rxe", "target",
                            "result", "loss %", "overflow", "wire Mbit/s", "guest CPU %", "metaroce counters"],
                           ops_details(summary["ops"])))
        base = [f"{c['tool']}: " + ", ".join(
            f"{p} " + " / ".join(fmt(x, 0) for x in c["lossless_runs"].get(p, [])) for p in PROVS)
            for c in summary["ops"]]
        md += ["", "Lossless runs (in order, operations per second): " + "; ".join(base)]
    if "ops_lat" in summary:
        md += ["", "ib_read_lat (2 bytes) and ib_atomic_lat, pinned as the latency scenario: lossless unshaped, "
               "and at 1 % random loss on both directions with the loss runs' shaping; lowest run / median of runs, "
               "in microseconds.", ""]
        md.append(md_table(["tool", "case", "metaroce median", "rxe median", "metaroce p99", "rxe p99",
                            "target (median)", "result"], ops_lat_details(summary["ops_lat"])))
    return md


def cmd_render(args):
    path = args.results
    with open(path) as f:
        res = json.load(f)
    meta, runs = res.get("meta", {}), res.get("runs", [])
    outdir = os.path.dirname(os.path.abspath(path))
    by = lambda s: [r for r in runs if r.get("scen") == s]
    summary, rows = {}, []
    if by("engine"):
        summary["engine"] = {r["case"]: {k: r.get(k) for k in ("sender_ns_pkt", "receiver_ns_pkt", "tx_ns_pkt",
                                                               "ack_ns", "rx_ns_pkt", "both_ns_pkt", "mpps_core",
                                                               "checks")}
                             for r in by("engine")}
        rows += engine_rows(by("engine"))
    if by("loss"):
        summary["loss"] = summarize_loss(by("loss"))
        rows += loss_rows(summary["loss"])
    if by("ops"):
        summary["ops"] = summarize_ops(by("ops"))
        rows += ops_rows(summary["ops"])
    if by("ops_lat"):
        summary["ops_lat"] = summarize_ops_lat(by("ops_lat"))
        rows += ops_lat_rows(summary["ops_lat"])
    if by("eff"):
        summary["eff"] = summarize_eff(by("eff"))
        rows += eff_rows(summary["eff"])
    if by("lat"):
        summary["lat"] = summarize_lat(by("lat"))
        rows += lat_rows(summary["lat"])
    recov_mb = None
    if by("recov"):
        summary["recov"] = summarize_recov(by("recov"))
        recov_mb = by("recov")[0]["bytes"] // 1048576
        rows += recov_rows(summary["recov"], recov_mb)
    if by("mp"):
        summary["mp"] = summarize_mp(by("mp"))
        rows += mp_rows(summary["mp"])
    if by("incast"):
        summary["incast"] = summarize_incast(by("incast"), by("incast_ping"))
        rows += incast_rows(summary["incast"])
    if by("step"):
        summary["step"] = summarize_step(by("step"))
        rows += step_rows(summary["step"])
    if by("nvme"):
        summary["nvme"] = summarize_nvme(by("nvme"))
        rows += nvme_rows(summary["nvme"])
    known = {"engine", "loss", "ops", "ops_lat", "eff", "lat", "recov", "mp", "incast", "incast_ping", "prof", "perf",
             "step", "nvme"}
    other = sorted({r.get("scen") for r in runs} - known)
    targets = [r for r in rows if r[4] != "-"]
    summary["targets"] = {"total": len(targets), "pass": sum(1 for r in targets if "pass" in r[5]),
                          "miss": sum(1 for r in targets if "MISS" in r[5]),
                          "misses": [f"{r[0]}: {r[1]}" for r in targets if "MISS" in r[5]]}
    res["summary"] = summary
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")

    plots = make_plots(summary, by, outdir)

    md = ["# metaroce benchmarks (make bench)", ""]
    mp = meta.get("mrc_params") or "defaults"
    md.append(f"- run: {meta.get('host_started', '?')}, commit {meta.get('host_commit', '?')}, "
              f"{meta.get('host_seconds', '?')} s in total"
              + (" (**quick mode**)" if meta.get("quick") else "")
              + ("" if meta.get("complete", True) else " (**incomplete: the guest did not finish**)"))
    guest = meta.get("guest", True)
    if guest:
        md.append(f"- guest: kernel {meta.get('guest_kernel', '?')}, {meta.get('guest_cpus', '?')} vCPUs (QEMU TCG), "
                  f"TSC {meta.get('tsc_mhz', '?')} MHz, clocksource {meta.get('clocksource', 'hpet (not recorded)')}, "
                  f"perftest {meta.get('perftest', '?')}")
        md.append(f"- host: {meta.get('host_cpus', '?')} CPUs shared with other work; load average during the run "
                  f"mean {meta.get('host_load_mean', '?')}, max {meta.get('host_load_max', '?')} "
                  f"(start {meta.get('host_load_start', '?')}, end {meta.get('host_load_end', '?')}); "
                  "the guest needs about 2 of them, so anything above ~2 slows it down")
        md.append(f"- rdma_metaroce parameters: {mp}"
                  + (f" ({', '.join(f'{k}={v}' for k, v in sorted(meta.get('module_params', {}).items()))})"
                     if meta.get("module_params") else ""))
    if by("engine"):
        md.append(f"- engine scenario: natively on the host ({engine_cpu(by('engine'))}), "
                  f"{meta.get('host_cpus', '?')} CPUs, load average {meta.get('host_engine_load_start', '?')} "
                  "at its start; no guest" + (" ran meanwhile" if guest else " in this run"))
    if "loss" in summary or "eff" in summary:
        md.append(f"- goodput runs: perftest -D {meta.get('dur_s', '?')} -f {meta.get('margin_s', '?')}, goodput = "
                  f"iterations x 64 KiB / {meta.get('window_s', '?')} s; queue per shaped direction "
                  f"{meta.get('queue_pkts', '?')} full-size packets (tbf under netem)")
    if meta.get("kernel_warnings"):
        md.append("- **kernel warnings in the guest** (see results.json meta.kernel_warnings)")
    md.append("")
    md.append(f"Targets: {summary['targets']['pass']} of {summary['targets']['total']} met, "
              f"{summary['targets']['miss']} missed.")
    md.append("")
    md.append(md_table(["scenario", "case", "metaroce", "rxe", "target", "result"], rows))
    md.append("")
    if guest:
        md.append("Loss rows show goodput relative to the provider's own lossless goodput (mean of the lossless runs "
                  "of the configuration), with the goodput in Mbit/s; 1-p is the limit of perfect selective repeat. "
                  "Latency in microseconds from perftest's TSC cycles and the guest kernel's TSC frequency; "
                  "a run whose guest lost its CPUs to other work shows milliseconds, so the target is judged on "
                  "the least disturbed run of each provider (runs alternate between the providers).")
    if "loss" in summary:
        md += ["", "## Loss runs: what the wire dropped and what the transports did", "",
               "wire = bytes leaving the switch towards the receiver (headers and retransmissions included); "
               "guest CPU = busy share of both vCPUs in the steady part of the run (near 100 %: the CPU, not the "
               "link, limits). loss = netem's random drops on the data direction; overflow = tbf queue drops "
               "(both directions). "
               "metaroce: counters of the sender (A) and receiver (B); rxe: rxe0 (A) and rxe1 (B).", ""]
        md.append(md_table(["config", "case", "provider", "goodput Mbit/s", "wire Mbit/s", "guest CPU %",
                            "loss %", "overflow", "counters"],
                           details_loss(summary["loss"])))
        base = [f"{c['mtu']}/{c['rate_mbit']}: " + ", ".join(
            f"{p} " + " / ".join(fmt(x, 1) for x in c["lossless_runs"].get(p, [])) for p in PROVS)
            for c in summary["loss"]]
        md += ["", "Lossless runs (start / end, Mbit/s): " + "; ".join(base)]
    if by("engine"):
        md += engine_md(by("engine"), meta)
    if "ops" in summary or "ops_lat" in summary:
        md += ops_md(summary)
    if "recov" in summary:
        md += ["", "## Recovery runs", ""]
        rr = []
        for p, d in summary["recov"].items():
            for kind in ("baseline", "outage"):
                for m in d[kind]["per_run"]:
                    rr.append([p, kind, fmt(m.get("transfer_s"), 2), fmt(m.get("stall_ms"), 0),
                               fmt(m.get("outage_ms_actual"), 0), fmt(m.get("resume_after_up_ms"), 0),
                               m.get("dropped", "?"),
                               ("capped" if m.get("capped") else str(m.get("rc", "?")))
                               + (", outage not confirmed by tc" if m.get("tc_unconfirmed") else "")])
        md.append(md_table(["provider", "run", "transfer s", "longest stall ms", "outage ms (confirmed)",
                            "first delivery after outage ms", "packets dropped", "exit"], rr))
    if "mp" in summary:
        md += ["", "## Multipath runs", "",
               "Goodput = ib_write_bw iterations x 64 KiB / window (perftest -D, -f margin). The sampler in the "
               "receiving router reads every link's bytes (what the sender's router put onto it, before the loss "
               "filters) and the bytes delivered towards the receiver, every 50 ms. The event hits the link that "
               "carried the most bytes since the transfer started. Recovery: the end of the first "
               f"{MP_RATE_WIN_S * 1000:.0f} ms window entirely after the failure in which the delivered bytes "
               f"(headers and retransmissions included) reach {MP_RECOVER_LEVEL:.0%} of the aggregate link rate, "
               "from the failure. Exit 124: the run hit its time limit and was killed.", ""]
        mr = []
        for case in ("clean", "fail", "lossy"):
            for p, d in summary["mp"].get(case, {}).items():
                for k, m in enumerate(d["per_run"]):
                    mr.append([case, p, k + 1, fmt(m.get("goodput_mbps"), 1), fmt(m.get("deliv_before_mbps"), 1),
                               fmt(m.get("deliv_after_mbps"), 1),
                               " / ".join(fmt(100 * x if x is not None else None, 0) for x in m.get("link_share") or []),
                               (f"l{m['event_link']} at {m['event_t']:.2f} s"
                                + (" (not confirmed by tc)" if m.get("event_conf") is False else ""))
                               if m.get("event_link") else "-",
                               f"{fmt(m.get('recover_s'), 2)} / {fmt(m.get('recover_rel_s'), 2)}",
                               fmt(m.get("stall_after_s"), 2),
                               m.get("qp_errors"), "capped" if m.get("capped") else m.get("rc"),
                               fmt(100 * m["cpu_util"] if m.get("cpu_util") is not None else None, 0)])
        md.append(md_table(["case", "provider", "run", "goodput Mbit/s", "delivered before event Mbit/s",
                            "delivered from 1 s after event Mbit/s", "offered bytes per link %", "event",
                            "recovery s (absolute / own rate)", "longest stall after s", "QP errors", "exit", "guest CPU %"], mr))
    if "incast" in summary:
        inc = summary["incast"]
        bdp = inc.get("bdp_bytes")
        md += ["", "## Incast runs", "",
               f"Base RTT {fmt(inc.get('ping_min_ms'), 3)} ms (lowest of 20 pings through the idle port; the lowest "
               f"rtt_min_us of metaroce's senders in these runs: {fmt(inc.get('base_rtt_us'), 0)} us), link "
               f"{inc['rate_mbit']} Mbit/s"
               + (f" (htb token bucket {inc['burst_bytes'] / 1024:g} KiB)" if inc.get("burst_bytes") else "")
               + ": "
               f"BDP = {fmt(bdp / 1000 if bdp else None, 1)} kB, 2 x BDP = {fmt(2 * bdp / 1000 if bdp else None, 1)} kB "
               f"(from {inc.get('bdp_from') or 'n/a'}). N ib_write_bw pairs (64 KiB, 1 QP each) start together; "
               "goodput per flow = iterations x 64 KiB / window; queue = backlog of the bottleneck's fq_codel leaf "
               "sampled every 50 ms in the steady part; drops and CE marks over the whole run; wire = what the "
               "port sent in the steady part; guest CPU = busy share of both vCPUs (the clients busy-poll at nice "
               "10, so this is near 100 % whenever traffic runs). Each flow's goodput counts in its own perftest "
               "window (the run minus the margin at both ends); the pairs connect one after another, so the start "
               "spread (from each sender's bytes at the switch) should stay below the margin "
               f"({meta_margin(runs_of(inc))} s) for all windows to overlap; the second Jain index is over the bytes "
               "each sender put onto the switch while all flows ran (retransmissions included).", ""]
        md.append(md_table(["N", "variant", "flows", "goodput Mbit/s", "wire Mbit/s", "per flow Mbit/s", "Jain",
                            "Jain (sent bytes, all flows running)", "start spread / all running s",
                            "queue p50 kB", "queue p99 kB", "queue max kB", "drops", "CE marks", "guest CPU %"],
                           incast_details(inc)))
        if any(r.get("tool") == "verify" for r in by("incast")):
            md += ["", "These incast runs used mrc_verify WRITE streams (the default; "
                   "METAROCE_BENCH_INCAST_TOOL=perftest runs busy-polling ib_write_bw clients instead): "
                   "clients that sleep on completion events, started together once every QP is connected; "
                   "goodput per flow is mrc_verify's verified bytes over its whole run, not perftest "
                   "iterations over a window."]
        md += ["", "Goodput at 1 % random loss on an uncongested link (>= 0.95 of lossless in issue 7) is the "
               "loss scenario's \"1 % on data\" row, not repeated here."]
    if "step" in summary:
        md += ["", "## Collective step time (step)", "",
               "tests/tools/mrc_step: a ring all-reduce (reduce-scatter, then all-gather: 2 x 3 chunk transfers "
               "per rank and step, in slices, each an RDMA_WRITE_WITH_IMM into a staging buffer the receiver "
               "cleared with a CTS write) over hosts A -> B -> C -> D -> A, every hop across the ECMP fabric; "
               "every step's result checked on every rank (verified = steps checked). Step time = from the "
               "first rank's start after the barrier to the last rank's end. Loss: netem on every host's "
               "incoming router port (data, CTS and ACKs alike); drops = netem's. Failure: the link that "
               "carried the most bytes is blackholed both ways a quarter of the provider's lossless run in "
               "(time after step 0's start). Incast: 8 mrc_verify WRITE streams from B, C and D into A for the "
               "whole run (there are 3 other hosts, not 8); background = flows without an error.", ""]
        md.append(md_table(["condition", "provider", "status", "steps", "verified", "wrong elements",
                            "mean ms", "algbw Mbit/s", "netem drops", "link failed", "background", "counters",
                            "error"], step_details(by("step"))))
    if by("prof"):
        md += ["", "## Function profile (prof)", "",
               "function_graph tracer restricted to the provider's module and shared network and timer "
               "functions; a function's time includes its traced and untraced callees. Tracing slows every "
               "call it records, so compare the providers, not absolute times. Time in microseconds over "
               "both vCPUs; per iteration = time / perftest iterations; events lost to a full ring buffer "
               "are counted as overrun.", ""]
        for r in by("prof"):
            its = r.get("iters") or 0
            prof = r.get("profile") or {}
            md += [f"### {r.get('prov')}, {r.get('tool')} ({its or '?'} iterations, "
                   f"{prof.get('overrun', '?')} events overrun)", ""]
            md.append(md_table(["function", "hits", "time us", "us per hit", "hits per iteration",
                                "us per iteration"],
                               [[f, h, fmt(t, 0), fmt(a, 2), fmt(h / its, 2) if its else "n/a",
                                 fmt(t / its, 2) if its else "n/a"] for f, h, t, a in prof.get("top") or []]))
            md.append("")
    if by("perf"):
        md += ["", "## Sampled profile (perf)", "",
               "`perf record -a -e cpu-clock` over the whole client run, connection set-up included (both "
               "vCPUs, kernel and user); share = a symbol's samples over all samples, idle included; us per "
               "iteration = its samples x the sampling period (CPU time of both vCPUs together) / perftest's "
               "iterations. Every sample is an interrupt, so the run is slower than in the lat scenario (the "
               "run that checked this scenario: medians of 78-121 us against 37-64 us in the full bench "
               "of that day). "
               "User symbols without a name are perftest's own code.", ""]
        for r in by("perf"):
            its, tot, hz = r.get("iters") or 0, r.get("samples") or 0, r.get("hz") or 0
            med = r.get("median")
            mhz = r.get("tsc_mhz")
            lat = fmt(med / mhz, 1) if med and mhz else "?"
            md += [f"### {r.get('prov')}, {r.get('tool')} ({its or '?'} iterations, median {lat} us, "
                   f"{tot} samples at {hz} Hz)", ""]
            md.append(md_table(["symbol", "where", "samples", "share", "us per iteration"],
                               [[sym, "kernel" if w == "k" else "user", cnt,
                                 fmt(100.0 * cnt / tot, 1, " %") if tot else "n/a",
                                 fmt(cnt * 1e6 / hz / its, 2) if its and hz else "n/a"]
                                for sym, w, cnt in r.get("top") or []]))
            md.append("")
    retried = [r for r in runs if r.get("attempts", 1) > 1 or r.get("error")]
    if retried:
        md += ["", "## Failed attempts", "",
               "A run without a result is repeated once; the output of failed attempts is in vm/failed/.", ""]
        md.append(md_table(["scenario", "provider", "case", "attempts", "result", "error"], [
            [r.get("scen"), r.get("prov"), run_case(r), r.get("attempts", 1),
             "ok" if not r.get("error") or r.get("iters") else "failed",
             (r.get("error") or "").replace("|", "/")[:300]] for r in retried]))
    if other:
        md += ["", f"Records of other scenarios (not summarised here): {', '.join(other)}"]
    if plots:
        md += ["", "Plots: " + ", ".join(f"[{p}]({p})" for p in plots)]
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")


# --- plots -------------------------------------------------------------------
def make_plots(summary, by, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib missing (scripts/deps bench): no plots", file=sys.stderr)
        return []
    files = []
    colors = {"metaroce": "tab:blue", "rxe": "tab:red"}
    for c in summary.get("loss", []):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        xs = [0] + sorted({pt["loss_pct"] for pt in c["points"] if pt["dir"] != "none" and pt["model"] == "random"})
        xx = [i / 100 * max(xs) for i in range(0, 101)]
        ax.plot(xx, [1 - x / 100 for x in xx], color="gray", lw=1, ls=":", label="1 - p (selective repeat limit)")
        for prov in PROVS:
            for d, ls, mk in (("data", "-", "o"), ("both", "--", "s")):
                pts = [(0.0, 1.0)] + sorted((pt["loss_pct"], pt["prov"][prov]["ratio"]) for pt in c["points"]
                                            if pt["dir"] == d and pt["model"] == "random" and prov in pt["prov"]
                                            and pt["prov"][prov]["ratio"] is not None)
                if len(pts) > 1:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], ls=ls, marker=mk, color=colors[prov],
                            label=f"{prov}, loss on {'data direction' if d == 'data' else 'both directions'}")
            ge = [pt for pt in c["points"] if pt["model"] == "gemodel" and prov in pt["prov"]
                  and pt["prov"][prov]["ratio"] is not None]
            for pt in ge:
                ax.plot([pt["loss_pct"]], [pt["prov"][prov]["ratio"]], marker="*", ms=12, ls="none",
                        color=colors[prov], label=f"{prov}, bursty loss (GE) on data")
        tx = [p for p in LOSS_TARGETS if p <= max(xs)]
        ax.plot(tx, [LOSS_TARGETS[p] for p in tx], ls="none", marker="_", ms=18, mew=2, color="green",
                label="metaroce target")
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlim(0, max(xs) * 1.1 if xs else 10)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{x:g}" for x in xs])
        top = max([1.0] + [v["ratio"] for pt in c["points"] for v in pt["prov"].values() if v["ratio"] is not None])
        ax.set_ylim(0, min(max(1.1, top * 1.05), 2.0))
        ax.set_xlabel("random packet loss (%)")
        ax.set_ylabel("goodput / own lossless goodput")
        ax.set_title(f"ib_write_bw 64 KiB, 1 QP, MTU {c['mtu']}, {c['rate_mbit']} Mbit/s "
                     f"(lossless: metaroce {fmt(c['lossless_mbps'].get('metaroce'), 1)}, "
                     f"rxe {fmt(c['lossless_mbps'].get('rxe'), 1)} Mbit/s)", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
        name = f"loss_mtu{c['mtu']}.png"
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, name), dpi=110)
        plt.close(fig)
        files.append(name)
    if by("step"):
        f = plot_step(plt, by("step"), outdir, colors)
        if f:
            files.append(f)
    if "ops" in summary:
        f = plot_ops(plt, summary["ops"], outdir)
        if f:
            files.append(f)
    if "eff" in summary:
        e = summary["eff"]
        fig, axs = plt.subplots(1, 2, figsize=(7, 3.5))
        ps = [p for p in PROVS if p in e]
        axs[0].bar(ps, [e[p]["goodput_mbps"] or 0 for p in ps], color=[colors[p] for p in ps])
        axs[0].set_ylabel("goodput (Mbit/s)")
        axs[0].set_title("unshaped ib_write_bw", fontsize=9)
        axs[1].bar(ps, [e[p]["cpu_s_per_gb"] or 0 for p in ps], color=[colors[p] for p in ps])
        axs[1].set_ylabel("guest CPU-seconds per GB")
        axs[1].set_title("CPU per GB of goodput", fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "eff.png"), dpi=110)
        plt.close(fig)
        files.append("eff.png")
    if "lat" in summary:
        lat = summary["lat"]
        fig, ax = plt.subplots(figsize=(8, 3.5))
        labels, w = [], 0.2
        for i, tool in enumerate(lat):
            for j, prov in enumerate(PROVS):
                v = lat[tool].get(prov)
                if not v:
                    continue
                ax.bar(i + (j - 0.5) * w * 2 - w / 2, v["median_us_best"] or 0, w, color=colors[prov],
                       label=f"{prov} median (best run)" if i == 0 else None)
                ax.bar(i + (j - 0.5) * w * 2 + w / 2, v["p99_us_best"] or 0, w, color=colors[prov], alpha=0.45,
                       label=f"{prov} p99 (best run)" if i == 0 else None)
            labels.append(tool)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels)
        ax.set_yscale("log")
        for b in ax.patches:
            if b.get_height() > 0:
                ax.annotate(f"{b.get_height():.0f}", (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=7)
        ax.set_ylabel("latency (us, log scale)")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "lat.png"), dpi=110)
        plt.close(fig)
        files.append("lat.png")
    rec = [r for r in by("recov") if r.get("outage_ms")]
    if rec:
        fig, axs = plt.subplots(2, 1, figsize=(7, 6.5))
        for prov in PROVS:
            r = next((r for r in rec if r["prov"] == prov and r.get("samples")), None)
            if not r:
                continue
            s, ev = r["samples"], r.get("events") or {}
            t0 = ev.get("down", 0)
            for ax, bin_s in ((axs[0], 0.2), (axs[1], 0.0)):
                t, rate, j = [], [], 0
                for i in range(1, len(s)):
                    if s[i][0] - s[j][0] >= bin_s and s[i][0] > s[j][0]:
                        t.append((s[i][0] + s[j][0]) / 2 - t0)
                        rate.append((s[i][1] - s[j][1]) * 8 / (s[i][0] - s[j][0]) / 1e6)
                        j = i
                ax.plot(t, rate, color=colors[prov], lw=1, label=f"{prov} (run {r['rep']})")
                if "down" in ev and "up" in ev:
                    ax.axvspan(0, ev["up"] - t0, color=colors[prov], alpha=0.2)
        mb = rec[0].get("bytes", 0) // 1048576
        axs[0].set_title(f"{mb} MiB ib_write_bw at 100 Mbit/s, 50 ms outage on both directions (shaded)",
                         fontsize=9)
        axs[0].set_xlim(-1, None)
        axs[0].set_ylabel("Mbit/s (200 ms bins)")
        axs[1].set_xlim(-0.5, 1.5)
        axs[1].set_ylabel("Mbit/s (per sample, ~10 ms)")
        axs[1].set_xlabel("time from the start of the outage (s)")
        for ax in axs:
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "recov.png"), dpi=110)
        plt.close(fig)
        files.append("recov.png")
    if "mp" in summary:
        f = plot_mp(plt, summary["mp"], by("mp"), colors, outdir)
        if f:
            files.append(f)
    if "incast" in summary:
        f = plot_incast(plt, summary["incast"], by("incast"), outdir)
        if f:
            files.append(f)
    return files


def plot_ops(plt, ops, outdir):
    """ratio vs loss, one line per tool x provider, data and both directions"""
    tc = {"ib_read_bw": "tab:blue", "ib_atomic_bw": "tab:green", "ib_send_bw": "tab:purple"}
    pst = {"metaroce": ("-", "o"), "rxe": (":", "x")}
    xs = sorted({pt["loss_pct"] for c in ops for pt in c["points"] if pt["dir"] != "none"})
    if not xs:
        return None
    fig, axs = plt.subplots(1, 2, figsize=(10, 4.5), sharey=True)
    top = 1.0
    for ax, d in zip(axs, ("data", "both")):
        for c in ops:
            for prov in PROVS:
                pts = [(0.0, 1.0)] + sorted((pt["loss_pct"], pt["prov"][prov]["ratio"]) for pt in c["points"]
                                            if pt["dir"] == d and prov in pt["prov"]
                                            and pt["prov"][prov]["ratio"] is not None)
                if len(pts) < 2:
                    continue
                top = max([top] + [p[1] for p in pts])
                ls, mk = pst[prov]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], ls=ls, marker=mk, color=tc.get(c["tool"]),
                        label=f"{c['tool']}, {prov}")
            for p, t in OPS_TARGETS.get(c["tool"], {}).items():
                if p <= max(xs):
                    ax.plot([p], [t], ls="none", marker="_", ms=18, mew=2, color=tc.get(c["tool"]))
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlim(0, max(xs) * 1.1)
        ax.set_xticks([0] + xs)
        ax.set_xticklabels([f"{x:g}" for x in [0] + xs])
        ax.set_xlabel(f"random packet loss on {'the data direction' if d == 'data' else 'both directions'} (%)")
        ax.grid(True, alpha=0.3)
    axs[0].set_ylim(0, min(max(1.1, top * 1.05), 2.0))
    axs[0].set_ylabel("operations / own lossless operations")
    axs[1].legend(fontsize=7, loc="lower left")
    c = ops[0]
    fig.suptitle(f"READ, atomics and SEND under loss, 1 QP, MTU {c['mtu']}, {c['rate_mbit']} Mbit/s "
                 "(dashes: metaroce targets)", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "ops.png"), dpi=110)
    plt.close(fig)
    return "ops.png"


def plot_mp(plt, mp, runs, colors, outdir):
    fail = [r for r in runs if r.get("case") == "fail" and (r.get("event") or {}).get("t") is not None]
    fig, axs = plt.subplots(3, 1, figsize=(7.5, 9.5))
    agg = None
    for prov in PROVS:
        r = next((r for r in fail if r["prov"] == prov), None)
        if not r:
            continue
        agg = r["links"] * r["link_mbit"]
        deliv, links = mp_cols(r)
        tf = r["event"]["t"]
        t, rate = mp_rate_series(r, deliv, 0.1)
        axs[0].plot([x - tf for x in t], rate, color=colors[prov], lw=1.2,
                    label=f"{prov}: delivered (l{r['event']['link']} {r['event']['kind']} at 0)")
        if prov == "metaroce":
            for k, c in enumerate(links):
                t, rate = mp_rate_series(r, c, 0.2)
                axs[1].plot([x - tf for x in t], rate, lw=1, label=f"l{k + 1}" + (" (fails)" if k + 1 == r["event"]["link"] else ""))
    if agg:
        axs[0].axhline(agg, color="gray", ls=":", lw=1, label=f"aggregate {agg} Mbit/s")
        axs[0].axhline(MP_RECOVER_LEVEL * agg, color="green", ls="--", lw=1, label=f"{MP_RECOVER_LEVEL:.0%} of aggregate")
    for ax in axs[:2]:
        ax.axvline(0, color="black", lw=0.8)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    for ax in axs[:2]:
        ax.set_xlim(-3, None)
    axs[0].set_ylabel("Mbit/s (100 ms bins)")
    axs[0].set_title("one QP over 4 ECMP links: the busiest link fails (time from the failure)", fontsize=9)
    axs[1].set_ylabel("metaroce: offered per link\nMbit/s (200 ms bins)")
    axs[1].set_xlabel("time from the failure (s)")
    # per-link shares: clean and lossy, both providers
    ax = axs[2]
    bars, labels = [], []
    for case in ("clean", "lossy"):
        for prov in PROVS:
            v = mp.get(case, {}).get(prov)
            if v and v.get("link_share"):
                bars.append(v["link_share"][0])
                labels.append(f"{prov}\n{case}" + (f" (l{v['event_link'][0]} lossy)" if case == "lossy" else ""))
    if bars:
        nl = len(bars[0])
        w = 0.8 / nl
        for k in range(nl):
            ax.bar([i + (k - (nl - 1) / 2) * w for i in range(len(bars))],
                   [100 * (b[k] or 0) if k < len(b) else 0 for b in bars], w, label=f"l{k + 1}")
        ax.set_xticks(range(len(bars)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("share of offered bytes (%)")
        ax.axhline(100 / nl, color="gray", ls=":", lw=1)
        ax.legend(fontsize=7, ncol=nl)
        ax.set_title("bytes per link (first run; lossy: from 1 s after the loss began)", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "mp.png"), dpi=110)
    plt.close(fig)
    return "mp.png"


def plot_incast(plt, inc, runs, outdir):
    fig, axs = plt.subplots(2, 1, figsize=(7.5, 8))
    vc = {"full": "tab:blue", "nocc": "tab:orange", "nocred": "tab:green", "rxe": "tab:red"}
    nmax = max((r["n"] for r in runs), default=0)
    for r in runs:
        if r["n"] != nmax:
            continue
        cols = r.get("cols") or []
        s = [x for x in r.get("samples") or [] if len(x) == len(cols) + 1]
        if not s:
            continue
        c, b = cols.index("port_tx") + 1, cols.index("backlog_bytes") + 1
        act = [i for i in range(1, len(s)) if s[i][c] - s[i - 1][c] > 20000]
        t0 = s[act[0]][0] if act else 0
        axs[0].plot([x[0] - t0 for x in s], [x[b] / 1000 for x in s], lw=0.9, color=vc[r["variant"]],
                    label=VARIANT_NAME[r["variant"]])
    bdp = inc.get("bdp_bytes")
    if bdp:
        axs[0].axhline(2 * bdp / 1000, color="black", ls="--", lw=1, label="2 x BDP")
    axs[0].set_xlim(-1, None)
    axs[0].set_yscale("symlog", linthresh=10)
    axs[0].set_ylim(0, None)
    axs[0].set_xlabel("time from the first traffic (s)")
    axs[0].set_ylabel("bottleneck backlog (kB)")
    axs[0].set_title(f"{nmax} -> 1 incast, 100 Mbit/s port marking CE above {inc.get('ce_ms', 2):g} ms: queue over time", fontsize=9)
    axs[0].grid(True, alpha=0.3)
    axs[0].legend(fontsize=7)
    ns = sorted(inc["by"], key=int)
    w = 0.2
    for k, v in enumerate(VARIANTS):
        xs = [i + (k - 1.5) * w for i in range(len(ns))]
        ys = [(inc["by"][n].get(v) or {}).get("goodput_mbps") or 0 for n in ns]
        bars = axs[1].bar(xs, ys, w, color=vc[v], label=VARIANT_NAME[v])
        for bb, n in zip(bars, ns):
            j = (inc["by"][n].get(v) or {}).get("jain")
            if j is not None:
                axs[1].annotate(f"J {j:.2f}", (bb.get_x() + bb.get_width() / 2, bb.get_height()),
                                ha="center", va="bottom", fontsize=6)
    axs[1].axhline(inc["rate_mbit"] * INC_GOODPUT_TARGET, color="black", ls="--", lw=1, label="target (90 % of link)")
    axs[1].set_xticks(range(len(ns)))
    axs[1].set_xticklabels([f"{n} senders" for n in ns])
    axs[1].set_ylabel("aggregate goodput (Mbit/s)")
    axs[1].set_title("aggregate goodput and Jain's index (J) per N", fontsize=9)
    axs[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.12), ncol=2)
    axs[1].grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "incast.png"), dpi=110)
    plt.close(fig)
    return "incast.png"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("records", nargs="+")
    b.add_argument("-o", "--output", required=True)
    b.add_argument("--host-meta", nargs="*")
    r = sub.add_parser("render")
    r.add_argument("results")
    args = ap.parse_args()
    if args.cmd == "build":
        cmd_build(args)
    else:
        cmd_render(args)


if __name__ == "__main__":
    main()
