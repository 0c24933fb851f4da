#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""How busy each switch port was in the runs of cluster/port_trace.sh.

    port_trace_report.py DIR

DIR holds results.jsonl (the ideal bound's line and one line a run, with its measured
window and the cluster's forward-pass ends, iter_ends) and per mode a folder with ports.json
(ports, their rates) and ports.tsv (bench/link_sample.py: CLOCK_MONOTONIC seconds, then each
port's bytes sent so far). Per mode: the iteration time against the ideal's; each port's use
over the measured window (bytes sent / its rate: a TCP segmentation burst counts its headers
once, so a port sending without pause reads a little under 100 %) and the share of the
window's samples in which it sent less than half its rate; for the uplink's ends (two racks)
and the busiest port towards a node, their use in each tenth of an iteration (from one
forward-pass end to the next).
"""
import bisect
import json
import os
import sys


def read_samples(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            rows.append([float(x) for x in line.split()])
    return rows


class Counter:
    """One port's cumulative bytes, linearly interpolated between samples."""

    def __init__(self, ts, cs):
        self.ts, self.cs = ts, cs

    def at(self, t):
        i = bisect.bisect_left(self.ts, t)
        if i <= 0:
            return self.cs[0]
        if i >= len(self.ts):
            return self.cs[-1]
        t0, t1 = self.ts[i - 1], self.ts[i]
        c0, c1 = self.cs[i - 1], self.cs[i]
        return c0 + (c1 - c0) * (t - t0) / (t1 - t0) if t1 > t0 else c1

    def use(self, a, b, rate_Bps):
        return (self.at(b) - self.at(a)) / (rate_Bps * (b - a)) if b > a else 0.0


def pct(x):
    return "%.0f %%" % (100 * x)


def mode_report(d, run, ideal):
    meta = json.load(open(os.path.join(d, "ports.json")))
    rows = read_samples(os.path.join(d, "ports.tsv"))
    if len(rows) < 3 or not run.get("window") or len(run.get("iter_ends") or []) < 2:
        print("(no samples or no measured window)\n")
        return
    ts = [r[0] for r in rows]
    ports = meta["ports"]
    rates = [m * 1e6 / 8 for m in meta["rate_mbit"]]
    counters = {p: Counter(ts, [r[1 + k] for r in rows]) for k, p in enumerate(ports)}
    a, b = run["window"]
    ends = [t for t in run["iter_ends"] if a - 1e-6 <= t <= b + 1e-6]
    print("%s s an iteration (ideal %s s, %.0f %% of it); %d samples over %.1f s; %s "
          "retransmitted, %d timeouts.\n"
          % (fmt(run.get("iter_s")), fmt(ideal), 100 * ideal / run["iter_s"] if ideal and run.get("iter_s") else 0,
             sum(1 for t in ts if a <= t <= b), b - a, fmt(run.get("retrans_pct"), "%.2f %%"),
             run.get("timeouts") or 0))
    use = {p: counters[p].use(a, b, r) for p, r in zip(ports, rates)}
    print("| port | rate Mbit/s | use over the window | samples under half its rate |")
    print("|---|---|---|---|")
    low = {}
    for p, r, m in zip(ports, rates, meta["rate_mbit"]):
        c, under, n = counters[p], 0, 0
        for t0, t1 in zip(ts, ts[1:]):
            if t0 >= a and t1 <= b:
                n += 1
                under += c.use(t0, t1, r) < 0.5
        low[p] = under / n if n else 0.0
        print("| %s | %g | %s | %s |" % (p, m, pct(use[p]), pct(low[p])))
    print()
    # the uplink's two ends (two racks), and the busiest port towards a node
    top = [p for p in ports if p.startswith("u")]
    top += sorted((p for p in ports if p not in top), key=lambda p: -use[p])[:1]
    if len(ends) >= 2:
        print("Use in each tenth of an iteration (from a forward-pass end to the next; %d "
              "iterations):\n" % (len(ends) - 1))
        print("| port | " + " | ".join("%d" % k for k in range(1, 11)) + " |")
        print("|---|" + "---|" * 10)
        for p in top:
            r = rates[ports.index(p)]
            cells = []
            for k in range(10):
                got = [counters[p].use(e0 + (e1 - e0) * k / 10, e0 + (e1 - e0) * (k + 1) / 10, r)
                       for e0, e1 in zip(ends, ends[1:])]
                cells.append(pct(sum(got) / len(got)))
            print("| %s | %s |" % (p, " | ".join(cells)))
        print()


def fmt(x, f="%.3f"):
    return f % x if isinstance(x, (int, float)) else "-"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: port_trace_report.py DIR")
    d = sys.argv[1]
    rows = [json.loads(x) for x in open(os.path.join(d, "results.jsonl")) if x.strip()]
    ideal = next((r for r in rows if r.get("label") == "ideal"), {})
    runs = [r for r in rows if r.get("label") != "ideal"]
    print("# Switch ports, %s, %s nodes: %s\n" % (ideal.get("model", "?"), ideal.get("nodes", "?"),
                                                 ideal.get("fabric", "?")))
    for run in runs:
        print("## %s\n" % run["label"])
        mode_report(os.path.join(d, run["label"]), run, ideal.get("iter_s"))


if __name__ == "__main__":
    main()
