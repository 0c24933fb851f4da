# SPDX-License-Identifier: BSD-2-Clause
"""compare.py DIR TOL [--resumed]: the workers' final parameters (and rank 0's mid-run
checkpoint) against the single-process reference, within TOL (max absolute difference); the
loss falls. --resumed: a run that started from the reference's mid-run checkpoint (no
checkpoint of its own, too few steps to judge the loss)."""
import json
import sys

import torch

d, tol = sys.argv[1], float(sys.argv[2])
resumed = "--resumed" in sys.argv[3:]
ok = True
pairs = [("worker0.pt", "reference.pt"), ("worker1.pt", "reference.pt")]
if not resumed:
    pairs.append(("worker_ckpt.pt", "reference_ckpt.pt"))
for got, want in pairs:
    a, b = torch.load("%s/%s" % (d, got)), torch.load("%s/%s" % (d, want))
    diff = max((a[k] - b[k]).abs().max().item() for k in b)
    print("%s vs %s: max abs difference %.3g (tolerance %g)" % (got, want, diff, tol))
    ok &= diff <= tol
loss = json.load(open("%s/worker0.json" % d))["loss"]
first, last = sum(loss[:3]) / 3, sum(loss[-3:]) / 3
print("worker 0 loss: first 3 steps %.3f, last 3 %.3f" % (first, last))
ok &= resumed or last < 0.8 * first
sys.exit(0 if ok else 1)
