#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Tables of cluster/fabric.sh's results.jsonl (Markdown on stdout): per model and fabric, each
mode's median iteration time over its runs (spread in brackets), retransmissions,
retransmission timeouts (with the retransmissions the sender held back because the original
still waited in its own qdisc: a timer on local queueing, not a loss) and Mercury's share of
the ideal gain over fifo.
Usage: fabric_report.py RESULTS.jsonl"""
import json
import statistics
import sys

MODES = ["fifo", "partition", "mercury", "mercury-dscp"]


def load(path):
    """{(tag, model): {mode: [runs]}}; labels are MODE-nTAG (fabric.sh's cells)."""
    cells = {}
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        for mode in ["mercury-dscp", "partition", "mercury", "fifo", "ideal"]:
            if r["label"].startswith(mode + "-n"):
                tag = r["label"][len(mode) + 2:]
                cells.setdefault((tag, r["model"]), {}).setdefault(mode, []).append(r)
                break
    return cells


def med(runs, key="iter_s"):
    v = [r[key] for r in runs if r.get("ok", True) and r.get(key) is not None]
    return statistics.median(v) if v else None


def cell_text(runs):
    t = med(runs)
    if t is None:
        return "—"
    v = sorted(r["iter_s"] for r in runs if r.get("ok") and r.get("iter_s"))
    spread = f" ({v[0]:.3f}-{v[-1]:.3f})" if len(v) > 1 else ""
    return f"{t:.3f}{spread}"


def verdict(a, b, name_a, name_b):
    """a and b median times: a tie within 2 %, else who is faster."""
    if a is None or b is None:
        return "—"
    if abs(a / b - 1) <= 0.02:
        return f"tie ({(b / a - 1) * 100:+.1f} %)"
    return f"{b / a:.2f}x" if a < b else f"{b / a:.2f}x ({name_b} faster)"


def share(fifo, t, ideal):
    if None in (fifo, t, ideal) or fifo <= ideal:
        return "—"
    return f"{(fifo - t) / (fifo - ideal):.0%}"


def main():
    cells = load(sys.argv[1])
    print("| nodes, fabric | model | fifo s | partition (tuned) s | mercury s | mercury + DSCP ports s "
          "| ideal s | mercury vs fifo | share of ideal gain: mercury / + DSCP "
          "| mercury vs partition | mercury + DSCP vs partition | retrans % fifo / mercury / + DSCP "
          "| timeouts [retransmissions held: original still queued in the sender] fifo / mercury / + DSCP, all runs |")
    print("|" + "---|" * 13)
    for (tag, model), d in sorted(cells.items()):
        fabric = next((r.get("fabric") for m in MODES for r in d.get(m, [])), "")
        nodes = next((r.get("nodes") for m in MODES for r in d.get(m, [])), "?")
        t = {m: med(d.get(m, [])) for m in MODES}
        ideal = med(d.get("ideal", []))
        rt = " / ".join(f"{med(d.get(m, []), 'retrans_pct') or 0:.2f}" for m in
                        ["fifo", "mercury", "mercury-dscp"])
        def total(m, key):
            runs = d.get(m, [])
            if not runs or all(key not in r for r in runs):
                return "—"
            return str(sum(r.get(key, 0) for r in runs))
        to = " / ".join(f"{total(m, 'timeouts')} [{total(m, 'rtx_still_queued')}]" for m in
                        ["fifo", "mercury", "mercury-dscp"])
        print(f"| {nodes}, {fabric} | {model} | {cell_text(d.get('fifo', []))} "
              f"| {cell_text(d.get('partition', []))} | {cell_text(d.get('mercury', []))} "
              f"| {cell_text(d.get('mercury-dscp', []))} | {f'{ideal:.3f}' if ideal else '—'} "
              f"| {verdict(t['mercury'], t['fifo'], 'mercury', 'fifo')} "
              f"| {share(t['fifo'], t['mercury'], ideal)} / {share(t['fifo'], t['mercury-dscp'], ideal)} "
              f"| {verdict(t['mercury'], t['partition'], 'mercury', 'partition')} "
              f"| {verdict(t['mercury-dscp'], t['partition'], 'mercury', 'partition')} "
              f"| {rt} | {to} (runs: {len(d.get('fifo', []))}) |")


if __name__ == "__main__":
    main()
