# SPDX-License-Identifier: BSD-2-Clause
"""torch_trace_report.py DIR REFERENCE_MBIT [--skip N] [--strip K] [--json]: where the link's
time goes in one traced run of bench/torch_trace.sh. DIR holds link.tsv (link_sample.py: each
node's bytes sent, every few ms) and phases.<rank> (torch_train.py --phases: per iteration the
monotonic stamps of its start and of the end of its forward pass, backward pass and step()).
Rank r runs on node r. REFERENCE_MBIT is 100 % link use: what a bulk transfer counts on the
same link (bench/link_bulk.py), since the counters miss the headers of segmentation bursts.

Per rank, over the iterations after the first N (the warm-up): the median forward and
backward pass, and its node's link use during that rank's forward passes, its backward passes
and the whole span; the share of the span the link ran under half the reference. Then a strip
of the last K iterations: one character per 20 ms (" .:-=+*#%@", tenths of the reference),
F and B where each rank's forward and backward passes begin.
"""
import argparse
import json
import os
import statistics
import sys

BIN_S = 0.02
SHADES = " .:-=+*#%@"


def read_rows(path):
    with open(path) as f:
        return [[float(x) for x in line.split()] for line in f
                if line.strip() and not line.startswith("#")]


def rates(samples, node):
    """(t0, t1, Mbit/s) between consecutive samples of one node's count."""
    out = []
    for a, b in zip(samples, samples[1:]):
        if b[0] > a[0]:
            out.append((a[0], b[0], (b[1 + node] - a[1 + node]) * 8 / (b[0] - a[0]) / 1e6))
    return out


def mean_rate(segs, t0, t1):
    """Mbit/s averaged over [t0, t1], each sample interval weighted by its overlap."""
    bits = span = 0.0
    for a, b, r in segs:
        o = min(b, t1) - max(a, t0)
        if o > 0:
            bits += r * o
            span += o
    return bits / span if span > 0 else None


def analyse(d, ref, skip):
    samples = read_rows(os.path.join(d, "link.tsv"))
    nodes = len(samples[0]) - 1 if samples else 0
    ranks = sorted(int(f.split(".")[1]) for f in os.listdir(d) if f.startswith("phases."))
    phases = {r: read_rows(os.path.join(d, "phases.%d" % r)) for r in ranks}
    out = {"reference_mbit": ref, "ranks": []}
    for r in ranks:
        if r >= nodes:
            sys.exit("torch_trace_report: rank %d has no node in link.tsv (%d columns)"
                     % (r, nodes))
        ph = [p for p in phases[r] if p[0] >= skip]
        if not ph:
            sys.exit("torch_trace_report: rank %d has no iteration after the first %d" % (r, skip))
        segs = rates(samples, r)
        fwd = [(p[1], p[2]) for p in ph]
        bwd = [(p[2], p[3]) for p in ph]

        def use(spans):
            got = [(mean_rate(segs, a, b), b - a) for a, b in spans]
            got = [(m, w) for m, w in got if m is not None]
            total = sum(w for _, w in got)
            return round(100 * sum(m * w for m, w in got) / total / ref, 1) if total else None

        t0, t1 = ph[0][1], ph[-1][4]
        inside = [(a, b, x) for a, b, x in segs if a >= t0 and b <= t1]
        low = sum(b - a for a, b, x in inside if x < ref / 2)
        out["ranks"].append({
            "rank": r, "iterations": len(ph),
            "forward_median_s": round(statistics.median(p[2] - p[1] for p in ph), 4),
            "backward_median_s": round(statistics.median(p[3] - p[2] for p in ph), 4),
            "step_median_s": round(statistics.median(p[4] - p[3] for p in ph), 4),
            "link_use_forward_pct": use(fwd), "link_use_backward_pct": use(bwd),
            "link_use_pct": use([(t0, t1)]),
            "link_under_half_pct": round(100 * low / (t1 - t0), 1) if t1 > t0 else None,
        })
    return samples, phases, out


def strip(samples, ph, ref, last):
    """Per rank its passes' starts, then its node's link, one character per BIN_S."""
    ranks = sorted(ph)
    t0 = min(ph[r][max(0, len(ph[r]) - last)][1] for r in ranks)
    t1 = max(ph[r][-1][4] for r in ranks)
    n = int((t1 - t0) / BIN_S) + 1
    lines = []
    for r in ranks:
        marks = [" "] * n
        for p in ph[r]:
            for t, c in ((p[1], "F"), (p[2], "B")):
                k = int((t - t0) / BIN_S)
                if 0 <= k < n:
                    marks[k] = c
        segs = rates(samples, r)
        shade = ""
        for k in range(n):
            m = mean_rate(segs, t0 + k * BIN_S, t0 + (k + 1) * BIN_S)
            shade += "?" if m is None else SHADES[max(0, min(9, int(10 * m / ref)))]
        lines += ["rank %d  %s" % (r, "".join(marks)), "node %d  %s" % (r, shade)]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("reference_mbit", type=float)
    ap.add_argument("--skip", type=int, default=2, help="warm-up iterations left out (2)")
    ap.add_argument("--strip", type=int, default=3, help="iterations in the strip (3)")
    ap.add_argument("--json", "-j", action="store_true")
    a = ap.parse_args()
    if a.reference_mbit <= 0:
        ap.error("the reference rate must be positive")
    samples, phases, out = analyse(a.dir, a.reference_mbit, a.skip)
    if a.json:
        print(json.dumps(out))
        return
    print("| rank | iterations | forward s | backward s | step() s | link use in forward | "
          "in backward | overall | link under half the reference |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in out["ranks"]:
        print("| %d | %d | %.3f | %.3f | %.3f | %s %% | %s %% | %s %% | %s %% of the time |" % (
            r["rank"], r["iterations"], r["forward_median_s"], r["backward_median_s"],
            r["step_median_s"], r["link_use_forward_pct"], r["link_use_backward_pct"],
            r["link_use_pct"], r["link_under_half_pct"]))
    print()
    print("\n".join(strip(samples, phases, a.reference_mbit, a.strip)))


if __name__ == "__main__":
    main()
