#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Markdown table of sim/project.py -j lines (stdin or files): per model, node count and link,
each mode's simulated iteration time (ByteScheduler's with the (P, C) its grid picked),
mercury against fifo and against tuned ByteScheduler, and mercury + DSCP's share of the ideal
gain over fifo (a dash where fifo is within 1 % of the ideal: nothing to gain)."""
import collections
import fileinput
import json

ORDER = ["vgg16", "resnet50", "alexnet", "inception3", "bert_base"]


def short(params):
    """125000 -> 125K, 4000000 -> 4M (parameters); 'all' (the whole model) as it is."""
    if params == "all":
        return params
    params = int(params)
    return f"{params // 10**6}M" if params % 10**6 == 0 else f"{params // 1000}K"


def main():
    cells = collections.defaultdict(dict)
    for line in fileinput.input():
        if not line.strip():
            continue
        r = json.loads(line)
        cells[(r["model"], r["nodes"], r["rate"])][r["mode"]] = r

    def key(kv):
        model, nodes, rate = kv[0]
        return ORDER.index(model) if model in ORDER else len(ORDER), model, nodes, \
            float(rate.rstrip("gbit"))

    print("| model | nodes | link | fifo s | ByteScheduler tuned s (P, C) | mercury s | "
          "mercury + DSCP s | ideal s | mercury vs fifo | mercury vs ByteScheduler | "
          "mercury + DSCP: share of the ideal gain |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (model, nodes, rate), d in sorted(cells.items(), key=key):
        t = {m: r["iter_s"] for m, r in d.items()}

        def cell(m):
            return f"{t[m]:.3f}" if m in t else "—"

        def ratio(a, b):
            return f"{t[b] / t[a]:.2f}x" if a in t and b in t else "—"

        bs = cell("partition")
        grid = d.get("partition", {}).get("grid")
        if grid:  # the fastest cell, as its P:C key ("4000000:all")
            p, c = min(grid, key=grid.get).split(":")
            bs += f" ({short(p)}, {short(c)})"
        share = "—"
        if all(m in t for m in ("fifo", "mercury+dscp", "ideal")) and \
                t["fifo"] > 1.01 * t["ideal"]:
            share = f"{(t['fifo'] - t['mercury+dscp']) / (t['fifo'] - t['ideal']):.0%}"
        print(f"| {model} | {nodes} | {rate.replace('gbit', ' GbE')} | {cell('fifo')} | {bs} | "
              f"{cell('mercury')} | {cell('mercury+dscp')} | {cell('ideal')} | "
              f"{ratio('mercury', 'fifo')} | {ratio('mercury', 'partition')} | {share} |")


if __name__ == "__main__":
    main()
