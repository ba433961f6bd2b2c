#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Byte counters, CPU and one qdisc's marking leaf, sampled at an interval.

    sampler.py IVAL_US STOPFILE QDEV|'' FILE...

Run inside the namespace to sample (bench_samp_start in lib.sh does so).
Every IVAL_US until STOPFILE exists it prints one line

    S <EPOCHREALTIME> v1 .. vn cpu_busy cpu_idle [backlog_bytes
      backlog_pkts sent_bytes dropped ce_mark]

where v1..vn are the FILEs' values (counters under /sys/class/net/) and
cpu_busy / cpu_idle the jiffies of /proc/stat's "cpu" line; with QDEV,
the stats of the fq_codel leaf under QDEV's root (through one long-lived
`tc -s -batch`), "x" where they could not be read. The first line is
"R <EPOCHREALTIME>".

It replaces a bash loop that read tc's answers a byte at a time and ran
as SCHED_FIFO: in the emulated guest that loop took enough CPU from the
switch's softirq work to cut the shaped port's rate by a sixth.  This one
reads in blocks and runs at normal priority.
"""

import os
import re
import select
import subprocess
import sys
import time

SENT = re.compile(rb"Sent (\d+) bytes \d+ pkt \(dropped (\d+)")
BACKLOG = re.compile(rb"backlog (\d+)b (\d+)p")
CE = re.compile(rb"ce_mark (\d+)")


def now():
    t = time.time_ns()
    return "%d.%06d" % (t // 1000000000, (t // 1000) % 1000000)


class Tc:
    """One `tc -s -batch -`: ask for QDEV's qdiscs, then lo's as an end mark."""

    def __init__(self, dev):
        self.dev = dev
        self.p = subprocess.Popen(["tc", "-s", "-batch", "-"],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, bufsize=0)

    def leaf(self):
        q = b"qdisc show dev %s\nqdisc show dev lo\n" % self.dev.encode()
        try:
            self.p.stdin.write(q)
        except OSError:
            return None
        buf = b""
        end = time.monotonic() + 1.0
        fd = self.p.stdout.fileno()
        # lo's answer ("qdisc noqueue ...") ends ours
        while b"qdisc noqueue" not in buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            buf += chunk
        text = buf.split(b"qdisc noqueue", 1)[0]
        # the stats of the fq_codel qdisc: from its header to the next one
        parts = re.split(rb"(?m)^qdisc ", text)
        for part in parts:
            if not part.startswith(b"fq_codel"):
                continue
            s, b, c = SENT.search(part), BACKLOG.search(part), CE.search(part)
            if not (s and b):
                return None
            # tc leaves ce_mark out while it is 0
            return [b.group(1), b.group(2), s.group(1), s.group(2),
                    c.group(1) if c else b"0"]
        return None


def cpu():
    with open("/proc/stat", "rb") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    # user nice system idle iowait irq softirq steal
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return busy, v[3] + v[4]


def main():
    ival = int(sys.argv[1]) / 1e6
    stop, qdev, files = sys.argv[2], sys.argv[3], sys.argv[4:]
    tc = Tc(qdev) if qdev else None
    out = sys.stdout
    out.write("R %s\n" % now())
    out.flush()
    nxt = time.monotonic()
    while not os.path.exists(stop):
        line = ["S", now()]
        for p in files:
            with open(p, "rb") as f:
                line.append(f.read().strip().decode())
        busy, idle = cpu()
        line += [str(busy), str(idle)]
        if tc:
            q = tc.leaf()
            line += [x.decode() for x in q] if q else ["x"] * 5
        out.write(" ".join(line) + "\n")
        out.flush()
        nxt += ival
        delay = nxt - time.monotonic()
        if delay < 0.001:
            delay = 0.001
            nxt = time.monotonic() + delay
        time.sleep(delay)
    if tc:
        tc.p.stdin.close()
        tc.p.wait()


if __name__ == "__main__":
    main()
