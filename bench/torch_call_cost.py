#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""What mercury.torch costs per layer on the training path, with no network in the way: one
process (WORLD_SIZE=1, its server in its own threads), a model of LAYERS tiny Linear layers so
that compute is negligible, fifo mode. Backward with the integration's gradient hooks (each
layer's gradient gathered and pushed as autograd makes it) against plain backward, and the
forward pass with its per-layer updates (wait for the aggregate, narrowed optimizer step)
against a plain forward pass plus one whole optimizer step: the differences per layer are the
integration's start-up cost of one push op and of one update, the real-run point on the axis
of `mercury-ps --op-cost` (cluster/tune.sh --op-costs). Medians of ROUNDS.

Run under torch's launcher (it sets the environment mt.init reads); --standalone needs a
resolvable "localhost", this form does not:
  GLOO_SOCKET_IFNAME=lo python3 -m torch.distributed.run --nnodes 1 --nproc_per_node 1 \
      --master_addr 127.0.0.1 --master_port 29561 --redirects 1 --tee 1 --log_dir DIR \
      bench/torch_call_cost.py
(Debian's torch 1.13 on Python 3.11 cannot parse the launcher's default --redirects.)
Prints one JSON line.
"""
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import mercury.torch as mt  # noqa: E402

LAYERS = int(os.environ.get("LAYERS", "200"))
ROUNDS = int(os.environ.get("ROUNDS", "40"))
WIDTH = 16


def model_and_data():
    torch.manual_seed(0)
    layers = [torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS)]
    return torch.nn.Sequential(*layers), torch.randn(4, WIDTH)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    torch.set_num_threads(1)
    mt.init()
    # Plain PyTorch: forward, backward, one whole optimizer step.
    model, x = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    fwd0, bwd0, step0 = [], [], []
    for _ in range(ROUNDS):
        opt.zero_grad()
        out = []
        fwd0.append(timed(lambda: out.append(model(x).sum())))
        bwd0.append(timed(lambda: out[0].backward()))
        step0.append(timed(opt.step))
    # Through mercury.torch: the same model and steps.
    model, x = model_and_data()
    opt = mt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01), model=model,
                                  mode="fifo")
    fwd1, bwd1 = [], []
    for i in range(ROUNDS + 2):
        opt.zero_grad()
        out = []
        f = timed(lambda: out.append(model(x).sum()))  # applies the previous updates
        b = timed(lambda: out[0].backward())            # pushes every layer
        opt.step()
        if i >= 2:  # the first passes open the server and record the layers
            fwd1.append(f)
            bwd1.append(b)
    opt.synchronize()
    m = statistics.median
    push_us = (m(bwd1) - m(bwd0)) / LAYERS * 1e6
    update_us = (m(fwd1) - m(fwd0) - m(step0)) / LAYERS * 1e6
    print(json.dumps({
        "layers": LAYERS, "rounds": ROUNDS,
        "plain_backward_s": round(m(bwd0), 6), "hooked_backward_s": round(m(bwd1), 6),
        "plain_forward_s": round(m(fwd0), 6), "plain_step_s": round(m(step0), 6),
        "forward_with_updates_s": round(m(fwd1), 6),
        "push_us_per_layer": round(push_us, 1), "update_us_per_layer": round(update_us, 1),
    }))
    mt.shutdown()


if __name__ == "__main__":
    main()
