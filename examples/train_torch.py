# SPDX-License-Identifier: BSD-2-Clause
"""Data-parallel training of a torchvision model through Mercury (mercury.torch).

One process per node, launched by PyTorch's own launcher, e.g. two nodes:

    # on node 0 (10.0.0.1) and node 1, with mercuryd attached and serving on each:
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 -m torch.distributed.run --nnodes 2 \\
        --node_rank 0 --nproc_per_node 1 --master_addr 10.0.0.1 --master_port 29500 \\
        --redirects 1 --tee 1 --log_dir /tmp/mt-logs examples/train_torch.py --steps 20

(Debian's torch 1.13 on Python 3.11 cannot parse the launcher's default --redirects.)
Synthetic data; the loss printed by rank 0 should fall. On a machine with CUDA the model and
data go to GPU LOCAL_RANK (modulo the GPUs there) (--device cpu to keep them on the CPU); --clip N clips the
averaged gradients to global norm N before every update.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
import torchvision  # noqa: E402

import mercury.torch as mt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--mode", default="mercury", choices=["fifo", "partition", "mercury"])
    ap.add_argument("--checkpoint", default="", help="save rank 0's state_dict here at the end")
    ap.add_argument("--clip", type=float, default=0.0,
                    help="clip the averaged gradients to this global norm (Horovod's pattern)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)

    mt.init()
    dev = torch.device(a.device)
    if dev.type == "cuda":
        dev = torch.device("cuda", mt.local_rank() % torch.cuda.device_count())
        torch.cuda.set_device(dev)
    model = getattr(torchvision.models, a.model)(weights=None, num_classes=10).to(dev)
    opt = mt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                                  named_parameters=model.named_parameters(), model=model,
                                  mode=a.mode)
    mt.broadcast_parameters(model.state_dict(), root_rank=0)

    g = torch.Generator().manual_seed(1 + mt.rank())
    protos = torch.randn(10, 3, a.image, a.image, generator=torch.Generator().manual_seed(7))
    protos = protos.to(dev)
    loss_fn = torch.nn.CrossEntropyLoss()
    for step in range(a.steps):
        y = torch.randint(0, 10, (a.batch,), generator=g)
        x = protos[y.to(dev)] + 0.5 * torch.randn(a.batch, 3, a.image, a.image, generator=g).to(dev)
        opt.zero_grad()
        loss = loss_fn(model(x), y.to(dev))
        loss.backward()
        if a.clip:  # the averaged gradients, clipped before the update (no overlap this step)
            opt.synchronize()
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
            with opt.skip_synchronize():
                opt.step()
        else:
            opt.step()
        if mt.rank() == 0:
            print("step %d loss %.3f" % (step, loss.item()), flush=True)
    # through mercuryd's fast path and through its service; both 0 untagged (fifo, partition,
    # or no mercuryd)
    print("rank %d tagged %s tags %d %d" % ((mt.rank(), opt.tagged) + tuple(opt.tag_counts)),
          flush=True)
    if a.checkpoint and mt.rank() == 0:
        torch.save(model.state_dict(), a.checkpoint)  # pending updates are applied first
    mt.shutdown()


if __name__ == "__main__":
    main()
