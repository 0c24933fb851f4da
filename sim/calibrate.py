#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Simulated against emulated: reads the emulated cluster's summary lines (cluster/collect.py,
one JSON per run; `mercury-ps ideal` lines too) and prints, per cell, the median emulated
iteration time, the simulated one and the error in %.

A cell is (model, mode, nodes, rate, shrink, time scale, split_all, part, credit, fabric).
The fabric of a line is its "fabric" field when it has one (egress | fifo | prio, or
"egress-only", "full", "dscp"), a true "dscp" field makes it prio, else --fabric.
Exit status 1 with --check when a cell is off by more than --target %.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabric_sim as fs  # noqa: E402

FABRICS = {"egress": "egress", "egress-only": "egress", "egress_only": "egress",
           "fifo": "fifo", "full": "fifo", "full-duplex": "fifo", "full_duplex": "fifo",
           "prio": "prio", "dscp": "prio", "strict": "prio"}


def fabric_of(text, default_fabric):
    """A line's fabric: a short name, or cluster/lib.sh's description ("full duplex, FIFO
    ports of ...", "full duplex, 8 strict-priority DSCP queues ...", "egress-only ...")."""
    text = str(text)
    if text in FABRICS:
        return FABRICS[text]
    if "DSCP" in text:
        return "prio"
    if text.startswith("egress"):
        return "egress"
    if text.startswith("full duplex"):
        return "fifo"
    return default_fabric


def cell_of(r, default_fabric):
    fab = fabric_of(r.get("fabric", default_fabric), default_fabric)
    if r.get("dscp"):
        fab = "prio"
    mode = r["mode"]
    part = r.get("part") if mode == "partition" else None
    credit = r.get("credit") if mode == "partition" else None
    rate = r.get("rate_mbit")
    rate_Bps = int(rate * 1e6 / 8) if rate is not None else int(r["rate_Bps"])
    return (r["model"], mode, int(r["nodes"]), rate_Bps, int(r.get("shrink") or 1),
            float(r.get("time_scale") or 1.0), bool(r.get("split_all")), part, credit, fab)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="JSONL files (cluster/collect.py lines)")
    ap.add_argument("--fabric", default="fifo", choices=["egress", "fifo", "prio"],
                    help="fabric of lines that do not name one (default fifo: full duplex)")
    ap.add_argument("--target", type=float, default=5.0, help="error target, %% (5)")
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("--check", action="store_true", help="exit 1 if a cell misses the target")
    ap.add_argument("-j", "--json", action="store_true", help="one JSON line per cell")
    a = ap.parse_args(argv)
    cells, order = {}, []
    for path in a.results:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                r = json.loads(line)
                if not r.get("ok", True) or r.get("iter_s") is None:
                    continue
                if r.get("mode") not in ("fifo", "partition", "mercury", "ideal"):
                    continue
                c = cell_of(r, a.fabric)
                if c not in cells:
                    cells[c] = []
                    order.append(c)
                cells[c].append(float(r["iter_s"]))
    profiles = {}
    worst, miss = 0.0, 0
    if not a.json:
        print("| model | mode | fabric | nodes | Mbit/s | P,C | runs | emulated s | simulated s "
              "| error % |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for c in order:
        model, mode, n, rate, k, ts, split, part, credit, fab = c
        if model not in profiles:
            profiles[model] = fs.load_profile(fs.profile_path(model))[1]
        kw = dict(split_all=split)
        if mode != "ideal":
            kw.update(iters=a.iters, part=part or 1000000 // k, credit=credit or 4000000 // k)
        sim, _ = fs.simulate(profiles[model], n, rate, mode, fab, k, ts, **kw)
        emu = statistics.median(cells[c])
        err = 100.0 * (sim - emu) / emu
        worst = max(worst, abs(err))
        miss += abs(err) > a.target
        pc = f"{part * k},{credit * k}" if part else "-"
        if a.json:
            print(json.dumps({"model": model, "mode": mode, "fabric": fab, "nodes": n,
                              "rate_Bps": rate, "shrink": k, "time_scale": ts,
                              "split_all": split, "part": part, "credit": credit,
                              "runs": len(cells[c]), "emulated_s": emu, "simulated_s": sim,
                              "error_pct": round(err, 2)}))
        else:
            print(f"| {model} | {mode} | {fab} | {n} | {rate * 8 / 1e6:g} | {pc} | "
                  f"{len(cells[c])} | {emu:.3f} | {sim:.3f} | {err:+.1f}"
                  f"{' **' if abs(err) > a.target else ''} |")
    print(f"# {len(order)} cells, {len(order) - miss} within {a.target:g} %, "
          f"largest error {worst:.1f} %", file=sys.stderr)
    return 1 if a.check and miss else 0


if __name__ == "__main__":
    sys.exit(main())
