#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Turns cluster/bench.sh's results.jsonl into the comparison tables (Markdown on stdout).
A cell run several times (bench.sh --repeat) is read as the median of its successful runs;
fifo's and mercury's spread (min-max) is shown beside it.
Usage: report.py OUT_DIR STEAL_MAX (runs with more host CPU steal than that are named)."""
import json
import statistics
import sys

rows = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl") if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["model"], {}).setdefault(r["label"], []).append(r)
models = [m for m in ["vgg16", "resnet50", "alexnet", "inception3", "bert_base", "tiny"] if m in by]


def runs(d, label):
    """The successful runs of a cell."""
    return [r for r in d.get(label, []) if r.get("ok") and r.get("iter_s")]


def it(d, label):
    ok = runs(d, label)
    return statistics.median(r["iter_s"] for r in ok) if ok else None


def med(d, label, key):
    """Median of a per-run figure over a cell's successful runs ('—' when none has it)."""
    vals = [r[key] for r in runs(d, label) if r.get(key) is not None]
    return round(statistics.median(vals), 4) if vals else "—"


def spread(d, label):
    ok = runs(d, label)
    if len(ok) < 2:
        return ""
    t = [r["iter_s"] for r in ok]
    return f" ({min(t):.3f}-{max(t):.3f})"


def shares(d, tag, idl):
    """Share of the ideal gain in each repetition, fifo and mercury of the same turn."""
    fifo = {r.get("rep", 0): r["iter_s"] for r in runs(d, "fifo" + tag)}
    merc = {r.get("rep", 0): r["iter_s"] for r in runs(d, "mercury" + tag)}
    out = []
    for rep in sorted(set(fifo) & set(merc)):
        if idl and fifo[rep] / idl > 1:
            out.append((fifo[rep] / merc[rep] - 1) / (fifo[rep] / idl - 1))
    return "/".join(f"{x:.0%}" for x in out) if len(out) > 1 else ""


def f(x, fmt="{:.3f}"):
    return fmt.format(x) if x is not None else "—"


meta = next((r for r in rows if r.get("mode") == "fifo"), {})
print(f"Emulated cluster: {meta.get('nodes')} nodes, {meta.get('rate_mbit')} Mbit/s egress each "
      f"(10 GbE / {10000 / meta.get('rate_mbit', 400):.0f}), shaper {meta.get('shaper')}, "
      f"congestion control {meta.get('congestion_control')}; times are emulated seconds per "
      f"iteration (divide by the time scale for real 10 GbE seconds). Link util is e0's bytes "
      f"sent (/proc/net/dev) over the rate: those count a TSO burst's headers once, so a full "
      f"link reads about 0.96 at MTU 1500 (bulk TCP at 400 Mbit/s: 383).\n")
for tag, title in [("", "MXNet placement (arrays > 1M parameters sliced over all servers)"),
                   ("-split", "every array split over all servers"),
                   ("-bal", "MXNet placement, compute scaled to comm/compute = 1 (B_eq = 10 Gbit/s x comm/compute)")]:
    present = [m for m in models if it(by[m], "fifo" + tag)]
    if not present:
        continue
    print(f"### {title}\n")
    print("partition is ByteScheduler at its defaults, untuned; the tuned baseline is "
          "cluster/tune.sh's (cluster/RESULTS.md). "
          "Medians over the runs of each cell (runs: how many of fifo and of mercury succeeded); "
          "fifo and mercury show their spread (min-max) when run more than once, and the share "
          "of the ideal gain is also given per repetition (fifo and mercury run in turn).\n")
    print("| model | runs | fifo s | partition s (P=1M,C=4M, untuned) | mercury s | ideal s "
          "| mercury speedup | ideal speedup | share of ideal gain | per repetition | mercury/ideal "
          "| vs partition | retrans % fifo / mercury | link util fifo / mercury "
          "| host CPU fifo / mercury | tagged |")
    print("|" + "---|" * 16)
    for m in present:
        d = by[m]
        fi, me, pa = it(d, "fifo" + tag), it(d, "mercury" + tag), it(d, "partition" + tag)
        idl = it(d, "ideal" + tag)
        sp = fi / me if fi and me else None
        isp = fi / idl if fi and idl else None
        share = (sp - 1) / (isp - 1) if sp and isp and isp > 1 else None
        lf, lm = "fifo" + tag, "mercury" + tag
        n = min(len(runs(d, lf)), len(runs(d, lm)))
        print(f"| {m} | {n} | {f(fi)}{spread(d, lf)} | {f(pa)} | {f(me)}{spread(d, lm)} "
              f"| {f(idl)} | {f(sp, '{:.2f}x')} "
              f"| {f(isp, '{:.2f}x')} | {f(share, '{:.0%}')} | {shares(d, tag, idl)} | {f(me / idl if me and idl else None, '{:.3f}')} "
              f"| {f(pa / me if pa and me else None, '{:.2f}x')} "
              f"| {med(d, lf, 'retrans_pct')} / {med(d, lm, 'retrans_pct')} "
              f"| {med(d, lf, 'link_util')} / {med(d, lm, 'link_util')} "
              f"| {med(d, lf, 'host_cpu_busy')} / {med(d, lm, 'host_cpu_busy')} "
              f"| {all(r.get('tagged') for r in runs(d, lm)) if runs(d, lm) else '—'} |")
    print()
STEAL_SUSPECT = float(sys.argv[2])
stolen = [r for r in rows if (r.get("host_steal") or 0) > STEAL_SUSPECT]
if stolen:
    print(f"Runs during which the hypervisor took more than {STEAL_SUSPECT:.0%} of this VM's CPU "
          "time (steal; their times are suspect, rerun them): " +
          "; ".join(f"{r['label']} {r['model']} {r['host_steal']:.0%}" for r in stolen) + "\n")
split = [r for r in rows if r.get("mode") == "mercury" and (r.get("split_sockets") or 0) > 0]
if split:
    print("Mercury runs with sockets whose packets went to more than one band (they reorder their "
          "own stream; cluster/RESULTS.md): " +
          "; ".join(f"{r['label']} {r['model']} {r['split_sockets']}" for r in split) + "\n")
rerun = [r for r in rows if (r.get("runs") or 1) > 1]
if rerun:
    print("Runs taken again because of steal (each keeps its last try): " +
          "; ".join(f"{r['label']} {r['model']} x{r['runs']}" for r in rerun) + "\n")
bad = [r for r in rows if r.get("ok") is False]
if bad:
    print("Failed runs: " + "; ".join(f"{r['label']} {r['model']}: {r.get('errors')}" for r in bad))
