#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Tables of cluster/tune.sh (Markdown on stdout): per model and case the partition grid,
then fifo, mercury and the best partition cells re-run in turn (medians, spreads), the
tuning cost, and the start-up cost sweep when it ran.
Usage: tune_report.py OUT_DIR"""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]
CASES = {"mxnet": "MXNet placement", "bal": "compute scaled to comm = compute",
         "split": "every array split over all servers",
         "balanced": "balanced placement (whole arrays on the least loaded server)"}


def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def ok_runs(rows, label):
    return [r["iter_s"] for r in rows if r.get("label") == label and r.get("ok") and r.get("iter_s")]


def med(xs):
    return statistics.median(xs) if xs else None


def span(xs):
    return f"{min(xs):.3f}-{max(xs):.3f}" if len(xs) > 1 else ""


def size(p):
    p = int(p)
    return f"{p / 1e6:g}M" if p >= 1000000 else f"{p / 1e3:g}K"


def cell_name(pc):
    p, c = pc.split(":")
    return f"({size(p)},{size(c)})"


summary = []
for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
    model, case = os.path.basename(path)[: -len(".jsonl")].split(".", 1)
    if case not in CASES:
        continue
    rows = load(path)
    ideal = next((r.get("iter_s") for r in rows if r.get("label") == "ideal"), None)
    grid = {r["label"][5:]: r for r in rows if r.get("label", "").startswith("grid:")}
    cost = next((r["wall_s"] for r in rows if r.get("label") == "grid-cost"), None)
    print(f"### {model}, {CASES[case]}\n")
    ps = sorted({int(k.split(":")[0]) for k in grid})
    ratios = sorted({int(k.split(":")[1]) // int(k.split(":")[0]) for k in grid})
    best = min((r["iter_s"] for r in grid.values() if r.get("ok")), default=None)
    print("Partition grid, one run per cell (s/iter; C = credit, parameters from push to pull; "
          "bold: fastest):\n")
    print("| P | " + " | ".join(f"C = {q} P" for q in ratios) + " |")
    print("|---|" + "---|" * len(ratios))
    for p in ps:
        cells = []
        for q in ratios:
            r = grid.get(f"{p}:{p * q}")
            if not r:
                cells.append("")
            elif not r.get("ok"):
                cells.append("failed")
            else:
                t = f"{r['iter_s']:.3f}"
                cells.append(f"**{t}**" if r["iter_s"] == best else t)
        print(f"| {size(p)} | " + " | ".join(cells) + " |")
    print()
    fifo, merc = ok_runs(rows, "fifo"), ok_runs(rows, "mercury")
    tops = sorted({r["label"] for r in rows if r.get("label", "").startswith("top:")})
    final = [(cell_name(t[4:]), ok_runs(rows, t)) for t in tops]
    final = [(n, xs) for n, xs in final if xs]
    final.sort(key=lambda x: med(x[1]))
    print("Re-run in turn (fifo, mercury, the grid's fastest cells), medians:\n")
    print("| mode | runs | median s | spread | speedup over fifo | time / mercury's |")
    print("|---|---|---|---|---|---|")
    mf, mm = med(fifo), med(merc)
    for name, xs in [("fifo", fifo), ("mercury", merc)] + [(f"partition {n}", xs) for n, xs in final]:
        m = med(xs)
        if m is None:
            continue
        vs_f = f"{mf / m:.2f}x" if mf else ""
        vs_m = f"{m / mm:.3f}" if mm and not name.startswith("mercury") else ""
        print(f"| {name} | {len(xs)} | {m:.3f} | {span(xs)} | {vs_f} | {vs_m} |")
    if ideal and mf and mm:
        place = CASES[case if case in ("split", "balanced") else "mxnet"]  # bal: MXNet's, scaled
        print(f"| ideal (computed, {place}) | | {ideal:.3f} | | {mf / ideal:.2f}x | "
              f"{ideal / mm:.3f} |")
    for r in rows:  # the bound under a partition cell's own placement
        if r.get("label", "").startswith("ideal:") and mf and mm:
            print(f"| ideal under partition {cell_name(r['label'][6:])}'s placement | | "
                  f"{r['iter_s']:.3f} | | {mf / r['iter_s']:.2f}x | {r['iter_s'] / mm:.3f} |")
    ngrid = len(grid)
    emul = sum(r["iter_s"] * (r.get("iters", 8) + 1) for r in grid.values() if r.get("ok") and r.get("iter_s"))
    print(f"\nTuning cost: {ngrid} grid runs + {len(tops)} x {len(final[0][1]) if final else 0} "
          f"re-runs, {cost or 0} s of wall time for the grid; mercury: none.\n")
    if final and mm and mf:
        bp = med(final[0][1])
        summary.append((model, CASES[case], mf, final[0][0], bp, mm, ideal, ngrid, cost))

if summary:
    print("### Summary\n")
    print("| model | case | fifo s | best partition (P,C) s | mercury s | ideal s | "
          "best partition vs fifo | mercury vs best partition | grid runs (wall s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model, case, mf, name, bp, mm, ideal, n, cost in summary:
        word = "tie" if abs(bp / mm - 1) < 0.02 else f"{bp / mm:.2f}x"  # the project's 2 % rule
        print(f"| {model} | {case} | {mf:.3f} | {name} {bp:.3f} | {mm:.3f} | "
              f"{ideal:.3f} | {mf / bp:.2f}x | {word} | {n} ({cost}) |")
    print("\n(mercury vs best partition: best partition's median / mercury's, above 1 when mercury is faster; "
          "'tie' when they differ by under 2 %.)\n")

for path in sorted(glob.glob(os.path.join(out, "*.opcost.jsonl"))):
    model = os.path.basename(path).split(".")[0]
    rows = load(path)
    costs = sorted({float(r["label"].rsplit("@", 1)[1]) for r in rows if "@" in r.get("label", "")})
    modes = sorted({r["label"].rsplit("@", 1)[0] for r in rows if "@" in r.get("label", "")},
                   key=lambda m: ["fifo", "mercury"].index(m) if m in ("fifo", "mercury") else 2)
    print(f"### {model}: start-up cost per push op (us of the real run), medians s/iter\n")
    print("| mode | " + " | ".join(f"{c:g} us" for c in costs) + " |")
    print("|---|" + "---|" * len(costs))
    for m in modes:
        cells = []
        for c in costs:
            xs = [r["iter_s"] for r in rows if r.get("ok") and r.get("iter_s") and
                  r["label"].rsplit("@", 1) == [m, f"{c:g}"]]
            cells.append(f"{med(xs):.3f}" + (f" ({span(xs)})" if len(xs) > 1 else "") if xs else "")
        name = f"partition {cell_name(m.split(':', 1)[1])}" if m.startswith("partition:") else m
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()

for path in sorted(glob.glob(os.path.join(out, "*.varying.jsonl"))):
    model = os.path.basename(path).split(".")[0]
    rows = load(path)
    ideal = {r["rate"]: r["iter_s"] for r in rows if r.get("label") == "ideal"}
    phases = {(r["of"], r["rep"]): r["changes"] for r in rows if r.get("label") == "phases"}
    per = {}  # (mode, rate) -> iteration times wholly inside one phase of that rate
    whole = {}
    for r in rows:
        if r.get("label") in ("ideal", "phases") or not r.get("ok") or not r.get("iter_ends"):
            continue
        ch = phases.get((r["label"], r.get("rep", 0)))
        if not ch:
            continue
        whole.setdefault(r["label"], []).append(r["iter_s"])
        ends = r["iter_ends"]
        for a, b in zip(ends[1:], ends[2:]):  # measured iterations (after the warm-up)
            for (t0, rate), nxt in zip(ch, ch[1:] + [[float("inf"), None]]):
                if t0 <= a and b <= nxt[0]:
                    per.setdefault((r["label"], rate), []).append(b - a)
    rates = sorted(ideal, reverse=True)
    print(f"### {model}: the link's rate changes during the run, per-phase medians s/iter "
          "(iterations wholly inside a phase; n)\n")
    print("| mode | " + " | ".join(f"{r:g} Mbit/s" for r in rates) + " | whole run |")
    print("|---|" + "---|" * (len(rates) + 1))
    for m in sorted(whole, key=lambda m: ["fifo", "mercury"].index(m) if m in ("fifo", "mercury") else 2):
        cells = []
        for rate in rates:
            xs = per.get((m, rate), [])
            cells.append(f"{med(xs):.3f} ({len(xs)})" if xs else "—")
        name = f"partition {cell_name(m.split(':', 1)[1])}, tuned at the fixed rate" \
            if m.startswith("partition:") else m
        print(f"| {name} | " + " | ".join(cells) + f" | {med(whole[m]):.3f} |")
    print("| ideal (computed at each rate) | " + " | ".join(f"{ideal[r]:.3f}" for r in rates) + " | |")
    print()
