#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Projection: simulated iteration times of the five models on 16 to 512 nodes at 10, 25 and
100 GbE, full-duplex fabric, modes fifo / partition / mercury (FIFO switch ports) /
mercury+DSCP (strict-priority switch ports) / ideal. A model's projection, not a measurement:
sim/README.md lists what the flow model leaves out."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fabric_sim as fs  # noqa: E402

MODES = [("fifo", "fifo", "fifo"), ("partition", "partition", "fifo"),
         ("mercury", "mercury", "fifo"), ("mercury+dscp", "mercury", "prio"),
         ("ideal", "ideal", "fifo")]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default="vgg16 resnet50 alexnet inception3 bert_base")
    ap.add_argument("--nodes", default="16 64 256 512")
    ap.add_argument("--rates", default="10gbit 25gbit 100gbit")
    ap.add_argument("--modes", default=" ".join(m[0] for m in MODES))
    ap.add_argument("--iters", type=int, default=3, help="measured iterations after 1 warm-up")
    ap.add_argument("--part", type=int, default=1000000, help="partition: ByteScheduler's P")
    ap.add_argument("--credit", type=int, default=4000000, help="partition: credit C")
    ap.add_argument("-j", "--json", action="store_true", help="one JSON line per cell")
    a = ap.parse_args(argv)
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
                    kw = {} if mode == "ideal" else dict(iters=a.iters, part=a.part,
                                                         credit=a.credit)
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
