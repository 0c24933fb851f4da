# SPDX-License-Identifier: BSD-2-Clause
"""One trainer of the real-training benchmark (bench/torch_bench.sh), launched by
torch.distributed.run: a torchvision model on synthetic data, trained through mercury.torch
(fifo, partition, mercury) or through PyTorch's DistributedDataParallel over gloo (ddp).
Writes OUT/rank<r>.json: the measured seconds per iteration after the warm-up.

    --profile PATH   instead: profile the model alone (mercury-ps .prof) and exit
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torchvision  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from link_bulk import tx_bytes  # noqa: E402


def build(name):
    if name == "inception_v3":
        return torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
    return getattr(torchvision.models, name)(weights=None)


def _thread_stat(path):
    """(name, user seconds, system seconds) from a thread's stat file."""
    with open(path) as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    tick = os.sysconf("SC_CLK_TCK")
    return st[st.index("(") + 1:st.rindex(")")], int(fields[11]) / tick, int(fields[12]) / tick


def _threads():
    """Per thread of this process: {tid: (name, CPU seconds, context switches)}."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            name, user, system = _thread_stat("/proc/self/task/%s/stat" % tid)
            with open("/proc/self/task/%s/status" % tid) as f:
                switches = sum(int(line.split()[1]) for line in f if "ctxt_switches" in line)
        except OSError:  # the thread ended meanwhile
            continue
        out[tid] = (name, user + system, switches)
    return out


def _cpu_by_name(before, after, iters):
    """Per thread name, CPU seconds per iteration between two _threads() samples."""
    by = {}
    for tid, (name, sec, _) in after.items():
        by[name] = by.get(name, 0.0) + (sec - before.get(tid, (name, 0.0, 0))[1]) / iters
    return {k: round(v, 4) for k, v in sorted(by.items(), key=lambda kv: -kv[1]) if v > 0}


def _main_system_s():
    """The calling thread's system time, seconds. With tick accounting and no
    CONFIG_IRQ_TIME_ACCOUNTING (this VM) it also holds the softirqs, the network stack's
    among them, that ran on its core while it was the current thread."""
    return _thread_stat("/proc/thread-self/stat")[2]


def _main_sched():
    """The calling thread's (voluntary switches, involuntary switches, migrations between
    cores): each wake-up after a wait, and more so on the other core, starts with cold
    caches, which shows as slower compute."""
    keys = ("nr_voluntary_switches", "nr_involuntary_switches", "se.nr_migrations")
    got = {}
    try:
        with open("/proc/thread-self/sched") as f:  # CONFIG_SCHED_DEBUG
            for line in f:
                k, _, v = line.partition(":")
                if k.strip() in keys:
                    got[k.strip()] = int(float(v))
    except OSError:
        return None
    return tuple(got.get(k, 0) for k in keys)


def _waited(opt):
    return getattr(opt, "wait_s", 0.0)


def _cpu_split():
    """(the CPU rank 0's main thread gets alone, the CPUs for everything else) for
    --pin-main: the first CPU this process may use, and the rest."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        sys.exit("torch_train: --pin-main needs at least 2 CPUs (this process may use %d)"
                 % len(allowed))
    return allowed[0], set(allowed[1:])


def _pin_threads(cpus):
    """Every thread of this process onto cpus (a thread that ended meanwhile is skipped);
    processes and threads started after inherit it from their parent thread."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:
            continue


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--image", type=int, default=224)
    ap.add_argument("--mode", default="mercury", choices=["fifo", "partition", "mercury", "ddp"])
    ap.add_argument("--bucket-mb", type=float, default=25)
    ap.add_argument("--part", type=int, default=1000000)
    ap.add_argument("--credit", type=int, default=4000000)
    ap.add_argument("--colocated-tcp", action="store_true",
                    help="mercury.torch: own server's share over loopback TCP, not memory")
    ap.add_argument("--conns", type=int, default=0,
                    help="mercury: connections per worker-server pair (0: mercury.torch's)")
    ap.add_argument("--rcvbuf", type=int, default=-1,
                    help="mercury: each data connection's receive buffer (-1: mercury.torch's "
                    "default by the node count, autotuning at 2 nodes; 0: the kernel's "
                    "autotuning)")
    ap.add_argument("--placement", default="", choices=["", "hash", "balanced"],
                    help="PS modes: where whole tensors live (mercury-ps --placement; "
                    "default: mercury.torch's)")
    ap.add_argument("--pulls-alike", action="store_true",
                    help="mercury: a layer's pulls ranked as its pushes (pulls_below=False), "
                    "not one group below")
    ap.add_argument("--pin-main", action="store_true",
                    help="isolate the compute: rank 0's main thread alone on the first CPU "
                    "after the warm-up; every other thread and process of both ranks (the "
                    "PS threads, mercury-ps serve, the other trainer) on the others")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--out", default=".")
    ap.add_argument("--profile", default="")
    ap.add_argument("--timeline", default="", help="PS events of this rank (TSV) into this dir")
    ap.add_argument("--phases", default="",
                    help="per iteration, monotonic stamps of its start and of the end of its "
                    "forward pass, backward pass and step() into this dir (phases.<rank>)")
    ap.add_argument("--iface", default=os.environ.get("GLOO_SOCKET_IFNAME", ""),
                    help="the node's link: its bytes sent in the window are recorded "
                    "(default: $GLOO_SOCKET_IFNAME)")
    a = ap.parse_args()
    if a.iters < 1 or a.warmup < 0:
        ap.error("--iters must be at least 1 and --warmup at least 0")
    torch.set_num_threads(1)
    if a.pin_main:
        main_cpu, rest = _cpu_split()
        _pin_threads(rest)  # before any PS thread or server exists: they inherit it
    torch.manual_seed(0)
    model = build(a.model)
    x = torch.randn(a.batch, 3, a.image, a.image)
    y = torch.randint(0, 1000, (a.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    if a.profile:
        import mercury.torch as mt
        mt.profile_model(model, x, lambda out: loss_fn(out, y), a.profile, name=a.model)
        return
    base = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if a.mode == "ddp":
        dist.init_process_group("gloo")
        net = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=a.bucket_mb)
        opt, sync = base, (lambda: None)
        r = dist.get_rank()
    else:
        import mercury.torch as mt
        mt.init()
        tl = os.path.join(a.timeline, "tl.%s" % os.environ.get("RANK", "0")) if a.timeline else None
        extra = {"conns": a.conns} if a.conns else {}
        if a.placement:
            extra["placement"] = a.placement
        if a.colocated_tcp:
            extra["colocated_tcp"] = True
        if a.rcvbuf >= 0:
            extra["rcvbuf"] = a.rcvbuf
        if a.pulls_alike:
            extra["pulls_below"] = False
        opt = mt.DistributedOptimizer(base, model=model, mode=a.mode, part=a.part, credit=a.credit,
                                      timeline=tl, **extra)
        mt.broadcast_parameters(model.state_dict(), root_rank=0)
        net, sync, r = model, opt.synchronize, mt.rank()
    # The window runs from a drained state to a drained state in every mode: mercury.torch's
    # step() returns with the iteration's communication still on the wire, DDP's only after
    # it, so a window opened at a mercury step() would hold one iteration's communication
    # more than it counts (at 100 Mbit/s 3.4 s of tail over 8 iterations). Both windows hold
    # exactly `iters` iterations of compute and communication, pipeline fill and drain
    # included; the step-to-step median inside it is the steady-state period.
    # Per iteration, where the main thread is: the forward pass (in mercury.torch it also
    # waits for aggregates and applies updates), backward (in DDP it also waits for its
    # all-reduce), step.
    stamps, forward_s, backward_s, compute_s, phases = [], [], [], [], []
    for i in range(a.warmup + a.iters):
        if i == a.warmup:
            sync()
            if a.pin_main and os.environ.get("RANK", "0") == "0":
                _pin_threads(rest)  # threads started since, then the main thread alone
                os.sched_setaffinity(0, {main_cpu})
            t0, cpu0, wait0 = time.perf_counter(), time.process_time(), _waited(opt)
            main0, sys0, sched0 = time.thread_time(), _main_system_s(), _main_sched()
            threads0 = _threads()
            tx0 = tx_bytes(a.iface)
        ts, ws = time.perf_counter(), _waited(opt)
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        tf = time.perf_counter()
        loss.backward()
        tb = time.perf_counter()
        opt.step()
        stamps.append(time.perf_counter())
        if a.phases:  # the same instants on the clock other processes see (CLOCK_MONOTONIC)
            now, mono = time.perf_counter(), time.monotonic()
            phases.append((i, mono - (now - ts), mono - (now - tf), mono - (now - tb), mono))
        if i >= a.warmup:
            forward_s.append(tf - ts)
            backward_s.append(tb - tf)
            compute_s.append(tb - ts - (_waited(opt) - ws))
    sync()  # every pending update applied: the last iteration's communication counts
    window = time.perf_counter() - t0
    per_iter = window / a.iters
    tx1 = tx_bytes(a.iface)
    cpu_per_iter = (time.process_time() - cpu0) / a.iters  # PS threads included
    main_per_iter = (time.thread_time() - main0) / a.iters  # autograd, hooks, optimizer
    main_sys_per_iter = (_main_system_s() - sys0) / a.iters
    sched1 = _main_sched()
    main_sched = (None if sched0 is None or sched1 is None else
                  dict(zip(("voluntary", "involuntary", "migrations"),
                           ((b - b0) / a.iters for b0, b in zip(sched0, sched1)))))
    # where that CPU goes: the trainer's main thread, libmercury-ps's (mps-*), gloo's, ...
    threads1 = _threads()
    cpu_by_thread = _cpu_by_name(threads0, threads1, a.iters)
    switches = (sum(t[2] for t in threads1.values()) -
                sum(t[2] for t in threads0.values())) / a.iters
    steps = [b - b0 for b0, b in zip(stamps[a.warmup:], stamps[a.warmup + 1:])]
    res = {"rank": r, "mode": a.mode, "model": a.model, "batch": a.batch, "image": a.image,
           "iter_s": per_iter, "cpu_s_per_iter": cpu_per_iter, "iters": a.iters,
           "cpu_by_thread": cpu_by_thread, "main_thread_cpu_s_per_iter": main_per_iter,
           "main_thread_system_s_per_iter": main_sys_per_iter,
           "main_thread_sched_per_iter": main_sched,
           "switches_per_iter": switches,
           # mercury.torch: blocked on aggregates (communication showing through); the rest
           # of an iteration is compute and the CPU the PS and the network stack take from it
           "wait_s_per_iter": ((_waited(opt) - wait0) / a.iters if a.mode != "ddp" else None),
           "step_median_s": statistics.median(steps) if steps else None,
           "forward_median_s": statistics.median(forward_s),
           "backward_median_s": statistics.median(backward_s),
           # mercury.torch: the main thread's forward and backward passes less the time it
           # was blocked on aggregates: the compute this run had, on this machine's shared
           # cores (DDP's backward holds its all-reduce and cannot be split)
           "compute_median_s": (statistics.median(compute_s) if a.mode != "ddp" else None),
           # what left the node's link in the window, Mbit/s (both roles of a PS node)
           "egress_mbit": (None if tx0 is None or tx1 is None
                           else (tx1 - tx0) * 8 / window / 1e6),
           "warmup": a.warmup,
           "bucket_mb": a.bucket_mb if a.mode == "ddp" else None,
           "part": a.part if a.mode == "partition" else None,
           "credit": a.credit if a.mode == "partition" else None,
           "conns": a.conns or None,
           "pin_main": a.pin_main,
           "placement": opt.placement if a.mode != "ddp" else None,
           "update_calls": opt.update_calls if a.mode != "ddp" else None,
           "layer_updates": opt.layer_updates if a.mode != "ddp" else None,
           "colocated_tcp": a.colocated_tcp if a.mode != "ddp" else None,
           "tagged": bool(getattr(opt, "tagged", False)),
           "tag_counts": list(getattr(opt, "tag_counts", (0, 0)))}
    if a.phases:
        with open(os.path.join(a.phases, "phases.%d" % r), "w") as f:
            f.write("# iter\tstart\tforward_end\tbackward_end\tstep_end (CLOCK_MONOTONIC s)\n")
            f.writelines("%d\t%.6f\t%.6f\t%.6f\t%.6f\n" % p for p in phases)
    with open(os.path.join(a.out, "rank%d.json" % r), "w") as f:
        json.dump(res, f)
    if a.mode == "ddp":
        dist.destroy_process_group()
    else:
        mt.shutdown()


if __name__ == "__main__":
    main()
