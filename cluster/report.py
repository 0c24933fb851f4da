#!/usr/bin/env python3
"""Turns cluster/bench.sh's results.jsonl into the comparison tables (Markdown on stdout).
Usage: report.py OUT_DIR STEAL_MAX (runs with more host CPU steal than that are named)."""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl") if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["model"], {})[r["label"]] = r
models = [m for m in ["vgg16", "resnet50", "alexnet", "inception3", "bert_base", "tiny"] if m in by]


def it(d, label):
    r = d.get(label)
    return r["iter_s"] if r and r.get("ok") and r.get("iter_s") else None


def f(x, fmt="{:.3f}"):
    return fmt.format(x) if x is not None else "—"


meta = next((r for r in rows if r.get("mode") == "fifo"), {})
print(f"Emulated cluster: {meta.get('nodes')} nodes, {meta.get('rate_mbit')} Mbit/s egress each "
      f"(10 GbE / {10000 / meta.get('rate_mbit', 400):.0f}), shaper {meta.get('shaper')}, "
      f"congestion control {meta.get('congestion_control')}; times are emulated seconds per "
      f"iteration (divide by the time scale for real 10 GbE seconds).\n")
for tag, title in [("", "MXNet placement (arrays > 1M parameters sliced over all servers)"),
                   ("-split", "every array split over all servers"),
                   ("-bal", "MXNet placement, compute scaled to comm/compute = 1 (B_eq = 10 Gbit/s x comm/compute)")]:
    present = [m for m in models if it(by[m], "fifo" + tag)]
    if not present:
        continue
    print(f"### {title}\n")
    print("| model | fifo s | partition s (P=1M,C=4M) | best partition s (P,C) | mercury s | ideal s "
          "| mercury speedup | ideal speedup | share of ideal gain | mercury/ideal "
          "| vs partition | vs best partition | retrans % fifo / mercury | link util fifo / mercury "
          "| host CPU fifo / mercury | tagged |")
    print("|" + "---|" * 16)
    for m in present:
        d = by[m]
        fi, me, pa = it(d, "fifo" + tag), it(d, "mercury" + tag), it(d, "partition" + tag)
        idl = d.get("ideal" + tag, {}).get("iter_s")
        cands = [(it(d, k), k) for k in d if (k == "partition" + tag or
                 (k.startswith("grid" + tag + "-") and k.count("-") == (3 if tag else 2)))]
        cands = [(t, k) for t, k in cands if t]
        best, bk = min(cands) if cands else (None, "")
        bpc = ""
        if bk:
            r = d[bk]
            bpc = f" ({r['part'] * r['shrink'] / 1e6:g}M,{r['credit'] * r['shrink'] / 1e6:g}M)"
        sp = fi / me if fi and me else None
        isp = fi / idl if fi and idl else None
        share = (sp - 1) / (isp - 1) if sp and isp and isp > 1 else None
        rf, rm = d.get("fifo" + tag, {}), d.get("mercury" + tag, {})
        print(f"| {m} | {f(fi)} | {f(pa)} | {f(best)}{bpc} | {f(me)} | {f(idl)} | {f(sp, '{:.2f}x')} "
              f"| {f(isp, '{:.2f}x')} | {f(share, '{:.0%}')} | {f(me / idl if me and idl else None, '{:.3f}')} "
              f"| {f(pa / me if pa and me else None, '{:.2f}x')} | {f(best / me if best and me else None, '{:.2f}x')} "
              f"| {rf.get('retrans_pct', '—')} / {rm.get('retrans_pct', '—')} "
              f"| {rf.get('link_util', '—')} / {rm.get('link_util', '—')} "
              f"| {rf.get('host_cpu_busy', '—')} / {rm.get('host_cpu_busy', '—')} | {rm.get('tagged', '—')} |")
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
    print("Cells run again because of steal (the table keeps the last run): " +
          "; ".join(f"{r['label']} {r['model']} x{r['runs']}" for r in rerun) + "\n")
bad = [r for r in rows if r.get("ok") is False]
if bad:
    print("Failed runs: " + "; ".join(f"{r['label']} {r['model']}: {r.get('errors')}" for r in bad))
