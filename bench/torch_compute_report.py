# SPDX-License-Identifier: BSD-2-Clause
"""The table of bench/torch_compute.sh: per layout (shared cores, or rank 0's main thread
pinned alone) and mode, the medians of rank 0's compute, its main thread's CPU an
iteration and the iteration; then mercury over fifo paired by round, with a two-sided
sign test on how many rounds mercury's was the larger.

    torch_compute_report.py RUNS.jsonl
"""
import json
import math
import statistics
import sys

FIELDS = (("compute_median_s", "compute s"), ("main_thread_cpu_s_per_iter", "main-thread CPU s"),
          ("iter_s", "iteration s"))


def sign_test(larger, n):
    """Two-sided p of `larger` of n paired differences on one side, ties dropped."""
    if n == 0:
        return 1.0
    k = min(larger, n - larger)
    p = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * p)


def report(runs):
    layouts = sorted({r["layout"] for r in runs}, key=["shared", "pinned"].index)
    lines = ["| layout | mode | " + " | ".join(h for _, h in FIELDS) + " | runs |",
             "|---|---|" + "---|" * len(FIELDS) + "---|"]
    pairs = []
    for layout in layouts:
        by_mode = {}
        for mode in ("fifo", "mercury"):
            rs = [r for r in runs if r["layout"] == layout and r["mode"] == mode]
            by_mode[mode] = {r["round"]: r for r in rs}
            if rs:
                med = [statistics.median(r[f] for r in rs) for f, _ in FIELDS]
                lines.append("| %s | %s | %s | %d |" % (layout, mode,
                             " | ".join("%.3f" % v for v in med), len(rs)))
        rounds = sorted(set(by_mode["fifo"]) & set(by_mode["mercury"]))
        for f, h in FIELDS[:2]:
            ratios = [by_mode["mercury"][k][f] / by_mode["fifo"][k][f] for k in rounds]
            if not ratios:
                continue
            larger = sum(1 for x in ratios if x > 1)
            n = sum(1 for x in ratios if x != 1)
            pairs.append("%s, %s: mercury / fifo %.3f (median of %d rounds; %.3f-%.3f), "
                         "mercury's larger in %d of %d (sign test p = %.3f)"
                         % (layout, h, statistics.median(ratios), len(ratios), min(ratios),
                            max(ratios), larger, n, sign_test(larger, n)))
    return "\n".join(lines + [""] + pairs)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torch_compute_report.py RUNS.jsonl")
    with open(sys.argv[1]) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    if not runs:
        sys.exit("torch_compute_report: no runs in %s" % sys.argv[1])
    print(report(runs))


if __name__ == "__main__":
    main()
