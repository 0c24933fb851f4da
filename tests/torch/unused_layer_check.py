# SPDX-License-Identifier: BSD-2-Clause
"""A layer the forward pass skips in some iterations (a conditional branch): through
mercury.torch, one worker (under torch.distributed.run, WORLD_SIZE=1; test_torch_train runs
it on 127.0.0.1), the parameters must end where plain PyTorch puts them with the same
optimizer, data and skips. Exit status 0 when they do; prints the largest difference."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402

STEPS = 7


class Branchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a, self.b, self.c = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)

    def forward(self, x, use_b):
        x = torch.relu(self.a(x))
        return self.c(torch.relu(self.b(x)) if use_b else x)


def train(opt_of, wrap=None):
    model = Branchy()
    base = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt = wrap(base, model) if wrap else base
    g = torch.Generator().manual_seed(1)
    for step in range(STEPS):
        x, y = torch.randn(8, 4, generator=g), torch.randint(0, 2, (8,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x, step % 3 != 1), y).backward()
        opt.step()
    return model.state_dict()  # mercury.torch: every pending update applied first


def main():
    torch.set_num_threads(1)
    want = train(None)
    import mercury.torch as mt
    import warnings
    mt.init()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "a layer got no gradient": expected here
        got = train(None, lambda base, model: mt.DistributedOptimizer(base, model=model, mode="fifo"))
    diff = max((got[k] - want[k]).abs().max().item() for k in want)
    print("unused layer: max abs difference from plain PyTorch %.3g" % diff)
    mt.shutdown()
    sys.exit(0 if diff <= 1e-6 else 1)


if __name__ == "__main__":
    main()
