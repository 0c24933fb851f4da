#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Markdown table of sim/project.py -j lines (stdin or files): per model, node count and link,
each mode's simulated iteration time, mercury against fifo and mercury + DSCP's share of the
ideal gain over fifo (a dash where fifo is within 1 % of the ideal: nothing to gain)."""
import collections
import fileinput
import json
rows = [json.loads(l) for l in fileinput.input() if l.strip()]
cells=collections.defaultdict(dict)
for r in rows:
    key=(r['model'], r['nodes'], r['rate'])
    m=r['mode'] + ('+dscp' if r['mode']=='mercury' and r['fabric']=='prio' else '')
    cells[key][m]=r['iter_s']
order=['vgg16','resnet50','alexnet','inception3','bert_base']
print("| model | nodes | link | fifo s | ByteScheduler (1M,4M) s | mercury s | mercury + DSCP s | ideal s | mercury vs fifo | mercury + DSCP: share of the ideal gain |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (model,n,rate),d in sorted(cells.items(), key=lambda kv:(order.index(kv[0][0]), kv[0][1], int(kv[0][2].rstrip('gbit')))):
    f=lambda m: f"{d[m]:.3f}" if m in d else "—"
    vs = f"{d['fifo']/d['mercury']:.2f}x" if 'fifo' in d and 'mercury' in d else "—"
    sh = f"{(d['fifo']-d['mercury+dscp'])/(d['fifo']-d['ideal']):.0%}" if all(k in d for k in ('fifo','mercury+dscp','ideal')) and d['fifo'] > 1.01 * d['ideal'] else "—"
    print(f"| {model} | {n} | {rate.replace('gbit',' GbE')} | {f('fifo')} | {f('partition')} | {f('mercury')} | {f('mercury+dscp')} | {f('ideal')} | {vs} | {sh} |")
