# SPDX-License-Identifier: BSD-2-Clause
"""Trains a small CNN on a learnable synthetic task, either as one worker of a
mercury.torch job (under torch.distributed.run) or alone on the concatenated batches (the
reference), and saves the final parameters and the loss curve.

    python3 -m torch.distributed.run --nproc_per_node 2 ... train_check.py --out DIR --mode M
    python3 train_check.py --reference --world 2 --out DIR
    ... train_check.py --out DIR --resume: rank 0 alone loads the reference's mid-run
        checkpoint (model, optimizer, scheduler), the others start from other parameters and
        an empty optimizer; broadcast_parameters and broadcast_optimizer_state make them
        equal, and training from there must end where the reference does.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


def make_model(hidden=64):
    torch.manual_seed(1234)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 8 * 8, hidden), nn.ReLU(), nn.Linear(hidden, 4))


def batch(step, world, per_worker):
    """The global batch of a step: 4 classes, each a fixed random pattern plus noise."""
    g = torch.Generator().manual_seed(99)
    protos = torch.randn(4, 3, 32, 32, generator=g)
    g.manual_seed(1000 + step)
    n = world * per_worker
    y = torch.randint(0, 4, (n,), generator=g)
    x = protos[y] + 0.8 * torch.randn(n, 3, 32, 32, generator=g)
    return x, y


def make_opt(name, model):
    """The optimizer and an LR scheduler the loop steps after every opt.step(): updates that
    land in the next forward pass must still use the lr of their own step. Adam with two
    parameter groups (convolutions, the rest), each with its own lr."""
    if name == "adam":
        convs = [p for m in model.modules() if isinstance(m, nn.Conv2d) for p in m.parameters()]
        rest = [p for p in model.parameters() if all(p is not c for c in convs)]
        opt = torch.optim.Adam([{"params": convs, "lr": 2e-3}, {"params": rest}], lr=1e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return opt, torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.7)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", default="mercury")
    ap.add_argument("--opt", default="sgd")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--per-worker", type=int, default=16)
    ap.add_argument("--checkpoint-at", type=int, default=6)
    ap.add_argument("--part", type=int, default=1000000)
    ap.add_argument("--credit", type=int, default=4000000)
    ap.add_argument("--reference", action="store_true")
    ap.add_argument("--hidden-on", default="", help="RANK:N: that rank builds another model")
    ap.add_argument("--no-broadcast", action="store_true")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--resume", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    rank_env = int(os.environ.get("RANK", "0"))
    hidden = 64
    if a.hidden_on and int(a.hidden_on.split(":")[0]) == rank_env:
        hidden = int(a.hidden_on.split(":")[1])
    model = make_model(hidden)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    if a.reference:
        opt, sched = make_opt(a.opt, model)
        for step in range(a.steps):
            x, y = batch(step, a.world, a.per_worker)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
            if step + 1 == a.checkpoint_at:
                torch.save(model.state_dict(), os.path.join(a.out, "reference_ckpt.pt"))
                torch.save({"opt": opt.state_dict(), "sched": sched.state_dict()},
                           os.path.join(a.out, "reference_opt_ckpt.pt"))
        torch.save(model.state_dict(), os.path.join(a.out, "reference.pt"))
        json.dump(losses, open(os.path.join(a.out, "reference_loss.json"), "w"))
        return
    import mercury.torch as mt
    import torch.distributed as dist
    mt.init()
    base, sched = make_opt(a.opt, model)  # torch's schedulers take the wrapped optimizer
    opt = mt.DistributedOptimizer(base, model=model, mode=a.mode,
                                  part=a.part, credit=a.credit, timeout=a.timeout)
    r = mt.rank()
    first = 0
    if a.resume:  # as users resume: the checkpoint is read on rank 0 only
        first = a.checkpoint_at
        box = [None]
        if r == 0:
            model.load_state_dict(torch.load(os.path.join(a.out, "reference_ckpt.pt")))
            ck = torch.load(os.path.join(a.out, "reference_opt_ckpt.pt"))
            base.load_state_dict(ck["opt"])
            box = [ck["sched"]]
        else:
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(1.0)
        dist.broadcast_object_list(box, src=0)  # the scheduler is the user's own object
        sched.load_state_dict(box[0])
        mt.broadcast_optimizer_state(opt, root_rank=0)
    if not a.no_broadcast:
        mt.broadcast_parameters(model.state_dict(), root_rank=0)
    with open(os.path.join(a.out, "pid%d" % r), "w") as f:
        f.write("%d\n" % os.getpid())
    for step in range(first, a.steps):
        x, y = batch(step, mt.size(), a.per_worker)
        x, y = x[r * a.per_worker:(r + 1) * a.per_worker], y[r * a.per_worker:(r + 1) * a.per_worker]
        # Both ways users zero gradients; neither may touch a gradient still being pushed.
        (opt.zero_grad if step % 2 == 0 else model.zero_grad)()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        with open(os.path.join(a.out, "progress%d" % r), "w") as f:
            f.write("%d\n" % (step + 1))
        if step + 1 == a.checkpoint_at and r == 0 and not a.resume:  # mid-run: pending updates applied first
            torch.save(model.state_dict(), os.path.join(a.out, "worker_ckpt.pt"))
    sd = model.state_dict()
    torch.save(sd, os.path.join(a.out, "worker%d.pt" % r))
    json.dump({"loss": losses, "tagged": opt.tagged, "tag_counts": opt.tag_counts,
               "layer_updates": opt.layer_updates, "update_calls": opt.update_calls},
              open(os.path.join(a.out, "worker%d.json" % r), "w"))
    mt.shutdown()


if __name__ == "__main__":
    main()
