#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""make bench: results table and plots.

  report.py build RECORDS.jsonl -o results.json [--host-meta K=V ...]
      collect the guest's records (tests/bench/bench.sh) into results.json
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
import statistics
import sys

PROVS = ("metaroce", "rxe")
# scenario 1 targets: metaroce goodput / its lossless goodput, data-direction loss
LOSS_TARGETS = {0.1: 0.99, 1.0: 0.97, 5.0: 0.90, 10.0: 0.85}


# --- build -------------------------------------------------------------------
def cmd_build(args):
    meta, runs, times, end = {}, [], {}, {}
    with open(args.records) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except ValueError as e:
                print(f"report: {args.records}:{n}: bad record skipped ({e})", file=sys.stderr)
                continue
            t = r.pop("type", None)
            if t == "meta":
                meta.update(r)
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
    meta["complete"] = bool(end)
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
def summarize_lat(runs):
    out = {}
    for tool in ("ib_write_lat", "ib_send_lat"):
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


# --- render ------------------------------------------------------------------
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
    if s == "recov":
        return f"outage {r.get('outage_ms')} ms (run {r.get('rep')})"
    return f"run {r.get('rep')}"


def lost_pkts(run, role):
    q = (run.get("qdisc") or {}).get(role) or {}
    if q.get("dropped") is None:
        return "?"
    return max(q["dropped"] - (q.get("overflow") or 0), 0)


def cmd_render(args):
    path = args.results
    with open(path) as f:
        res = json.load(f)
    meta, runs = res.get("meta", {}), res.get("runs", [])
    outdir = os.path.dirname(os.path.abspath(path))
    by = lambda s: [r for r in runs if r.get("scen") == s]
    summary, rows = {}, []
    if by("loss"):
        summary["loss"] = summarize_loss(by("loss"))
        rows += loss_rows(summary["loss"])
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
    known = {"loss", "eff", "lat", "recov"}
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
    md.append(f"- guest: kernel {meta.get('guest_kernel', '?')}, {meta.get('guest_cpus', '?')} vCPUs (QEMU TCG), "
              f"TSC {meta.get('tsc_mhz', '?')} MHz, perftest {meta.get('perftest', '?')}")
    md.append(f"- host: {meta.get('host_cpus', '?')} CPUs shared with other work; load average during the run "
              f"mean {meta.get('host_load_mean', '?')}, max {meta.get('host_load_max', '?')} "
              f"(start {meta.get('host_load_start', '?')}, end {meta.get('host_load_end', '?')}); "
              "the guest needs about 2 of them, so anything above ~2 slows it down")
    md.append(f"- rdma_metaroce parameters: {mp}"
              + (f" ({', '.join(f'{k}={v}' for k, v in sorted(meta.get('module_params', {}).items()))})"
                 if meta.get("module_params") else ""))
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
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("records")
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
