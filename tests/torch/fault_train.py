# SPDX-License-Identifier: BSD-2-Clause
"""A small CNN trained through mercury.torch for the fault tests (tests/integration/
test_*agent*.sh, test_*fault*.sh): records when each step ended and how many tags the worker
had made by then, so a test can compare iteration times before and after a fault and see
when tags stopped and resumed.

    python3 -m torch.distributed.run ... fault_train.py --out DIR --steps N
        [--ckpt-every K]   rank 0 saves model + optimizer to DIR/ckpt.pt every K steps, and
                           a (re)started job resumes from it (torch.distributed.run
                           --max_restarts): rank 0 loads it, the others get it by broadcast
        [--stop-at S]      end after step S (a reference that restarts from a checkpoint)
    python3 fault_train.py --reference --out DIR --steps N [--world W]: one process on the
        concatenated batches (DIR/reference.pt), what every worker must end with

Output: DIR/steps<R>.json [[step, end time (CLOCK_REALTIME s), fast-path tags, service
tags], ...], DIR/progress<R> (last step done), DIR/pid<R>, DIR/worker<R>.pt at the end.
"""
import argparse
import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
sys.path.insert(0, here)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from train_check import batch, make_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--per-worker", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--ckpt-every", type=int, default=0)
    ap.add_argument("--stop-at", type=int, default=0)
    ap.add_argument("--reference", action="store_true")
    ap.add_argument("--world", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(1)
    loss_fn = nn.CrossEntropyLoss()
    if a.reference:
        model = make_model()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for step in range(a.steps):
            x, y = batch(step, a.world, a.per_worker)
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        torch.save(model.state_dict(), os.path.join(a.out, "reference.pt"))
        return
    import mercury.torch as mt
    import torch.distributed as dist
    mt.init()
    r = mt.rank()
    model = make_model()
    base = torch.optim.SGD(model.parameters(), lr=0.01)
    opt = mt.DistributedOptimizer(base, model=model, mode="mercury", timeout=a.timeout)
    ckpt = os.path.join(a.out, "ckpt.pt")
    first = [0]
    if a.ckpt_every and os.path.exists(ckpt) and r == 0:
        ck = torch.load(ckpt)
        model.load_state_dict(ck["model"])
        base.load_state_dict(ck["opt"])
        first = [ck["step"]]
    if a.ckpt_every:
        dist.broadcast_object_list(first, src=0)
        mt.broadcast_optimizer_state(opt, root_rank=0)
    mt.broadcast_parameters(model.state_dict(), root_rank=0)
    with open(os.path.join(a.out, "pid%d" % r), "w") as f:
        f.write("%d\n" % os.getpid())
    steps = []
    last = a.stop_at or a.steps
    for step in range(first[0], last):
        x, y = batch(step, mt.size(), a.per_worker)
        x, y = x[r * a.per_worker:(r + 1) * a.per_worker], y[r * a.per_worker:(r + 1) * a.per_worker]
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        fast, service = opt.tag_counts
        steps.append([step, time.time(), fast, service])
        with open(os.path.join(a.out, "progress%d" % r), "w") as f:
            f.write("%d\n" % (step + 1))
        if a.ckpt_every and (step + 1) % a.ckpt_every == 0 and r == 0:
            sd = model.state_dict()  # applies the pending updates first
            tmp = ckpt + ".tmp"
            torch.save({"model": sd, "opt": opt.state_dict(), "step": step + 1}, tmp)
            os.replace(tmp, ckpt)
    torch.save(model.state_dict(), os.path.join(a.out, "worker%d.pt" % r))
    with open(os.path.join(a.out, "steps%d.json" % r), "w") as f:
        json.dump(steps, f)
    mt.shutdown()


if __name__ == "__main__":
    main()
