#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Projection: simulated iteration times of the five models on 16 to 512 nodes at 10, 25 and
100 GbE, full-duplex fabric, modes fifo / partition / mercury (FIFO switch ports) /
mercury+DSCP (strict-priority switch ports) / ideal. A model's projection, not a measurement:
sim/README.md lists what the flow model leaves out.

partition is ByteScheduler tuned per cell, as cluster/tune.sh tunes it on the emulated
cluster: every (P, C) of --grid is simulated and the fastest is the cell's figure (its P and C
and every grid point's time are in the -j line). ByteScheduler's defaults (1M, 4M) are up to
13x slower than tuned at 16-64 nodes (VGG16, 64 nodes, 10 GbE): with C one partition, every
worker pushes the same partition to its one server at once, and the other servers idle."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabric_sim as fs  # noqa: E402

# Small partitions sit whole on one server each, so with a credit of C / P partitions only
# that many servers work at once: past 16 nodes the small P need the whole model in flight.
GRID = ("125000:2000000 125000:all 1000000:16000000 1000000:all 4000000:16000000 "
        "4000000:all")

MODES = [("fifo", "fifo", "fifo"), ("partition", "partition", "fifo"),
         ("mercury", "mercury", "fifo"), ("mercury+dscp", "mercury", "prio"),
         ("ideal", "ideal", "fifo")]


def parse_grid(text):
    """'P:C ...' -> [(P, C or None)], None = the whole model."""
    grid = []
    for cell in text.split():
        p, sep, c = cell.partition(":")
        try:
            pc = (int(p), None if c == "all" else int(c))
        except ValueError:
            pc = None
        if not sep or pc is None or pc[0] <= 0 or (pc[1] is not None and pc[1] <= 0):
            raise ValueError(f"bad --grid cell '{cell}': want P:C, e.g. 1000000:4000000 or "
                             "4000000:all")
        grid.append(pc)
    if not grid:
        raise ValueError("--grid is empty")
    return grid


def tuned_partition(layers, nodes, rate, grid, iters):
    """The fastest (P, C) of the grid: (s, P, C, {"P:C": s})."""
    total = sum(p for _, p, _, _ in layers)
    best, tried = None, {}
    for p, c in grid:
        credit = total if c is None else c
        t, _ = fs.simulate(layers, nodes, rate, "partition", "fifo", iters=iters, part=p,
                           credit=credit)
        tried[f"{p}:{'all' if c is None else c}"] = t
        if best is None or t < best[0]:
            best = (t, p, credit)
    return best + (tried,)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default="vgg16 resnet50 alexnet inception3 bert_base")
    ap.add_argument("--nodes", default="16 64 256 512")
    ap.add_argument("--rates", default="10gbit 25gbit 100gbit")
    ap.add_argument("--modes", default=" ".join(m[0] for m in MODES))
    ap.add_argument("--iters", type=int, default=3, help="measured iterations after 1 warm-up")
    ap.add_argument("--grid", default=GRID,
                    help="partition: the (P, C) cells tried per projected cell, P:C in "
                    "parameters, C 'all' = the whole model in flight (default: %(default)s)")
    ap.add_argument("-j", "--json", action="store_true", help="one JSON line per cell")
    a = ap.parse_args(argv)
    try:
        grid = parse_grid(a.grid)
    except ValueError as e:
        ap.error(str(e))
    modes = [m for m in MODES if m[0] in a.modes.split()]
    t0 = time.process_time()
    rows = []
    if not a.json:
        print("| model | nodes | rate | " + " | ".join(m[0] + " s" for m in modes)
              + " | mercury / fifo | mercury+dscp / ideal |")
        print("|---|---|---|" + "---|" * len(modes) + "---|---|")
    for model in a.models.split():
        _, layers = fs.load_profile(fs.profile_path(model))
        for n in (int(x) for x in a.nodes.split()):
            for rate in a.rates.split():
                r = fs.parse_rate(rate)
                cell = {}
                for name, mode, fabric in modes:
                    c0 = time.process_time()
                    if mode == "partition":
                        t, p, c, tried = tuned_partition(layers, n, r, grid, a.iters)
                        info = {"part": p, "credit": c, "grid": tried}
                    else:
                        kw = {} if mode == "ideal" else dict(iters=a.iters)
                        t, info = fs.simulate(layers, n, r, mode, fabric, **kw)
                    cell[name] = t
                    if a.json:
                        print(json.dumps({"model": model, "nodes": n, "rate": rate,
                                          "mode": name, "fabric": fabric, "iter_s": t,
                                          "cpu_s": round(time.process_time() - c0, 2),
                                          **info}), flush=True)
                rows.append((model, n, rate, cell))
                if not a.json:
                    ratio = lambda x, y: f"{cell[x] / cell[y]:.3f}" \
                        if x in cell and y in cell else "-"
                    print(f"| {model} | {n} | {rate} | "
                          + " | ".join(f"{cell[m[0]]:.4f}" for m in modes)
                          + f" | {ratio('mercury', 'fifo')} | {ratio('mercury+dscp', 'ideal')} |",
                          flush=True)
    print(f"# {len(rows) * len(modes)} cells in {time.process_time() - t0:.1f} s of CPU",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
