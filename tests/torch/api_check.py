# SPDX-License-Identifier: BSD-2-Clause
"""The Horovod/BytePS-style API of mercury.torch, 2 ranks against one process trained on the
concatenated batches (each rank computes that reference itself), run under
torch.distributed.run on loopback (tests/integration/test_torch_api.sh):

    python3 -m torch.distributed.run --nproc_per_node 2 ... api_check.py [SCENARIO...]

Every scenario starts the ranks apart (rank r adds r to every parameter) and makes them
equal with broadcast_parameters; the parameters after STEPS steps must equal the
reference's within TOL, and the reference must have moved (and clipped, where it clips).
Exit status 0 when every scenario passes; one line per scenario.
MERCURY_TEST_DEVICE=cuda (tests/gpu/run.sh) runs the model, data and reference on GPU
LOCAL_RANK % device_count (2 ranks may share one GPU), with two more scenarios: amp (autocast
fp16 and GradScaler through synchronize()/skip_synchronize()) and half (an fp16 model: its
fp16 gradients aggregated in float32)."""
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

STEPS, B, TOL, CLIP = 5, 8, 1e-5, 0.05
DEV = torch.device(os.environ.get("MERCURY_TEST_DEVICE", "cpu"))
# fp16 arithmetic: the reference's batch of 16 and two ranks' batches of 8 round apart
TOL_OF = {"amp": 2e-3, "half": 5e-3}


def make_model(dtype=torch.float32):
    torch.manual_seed(7)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 4)).to(DEV, dtype)


def make_opt(name, params_of):
    if name == "adam":  # two groups, their own lr
        first, rest = params_of[:2], params_of[2:]
        opt = torch.optim.Adam([{"params": first, "lr": 2e-2}, {"params": rest}], lr=1e-2)
    else:
        opt = torch.optim.SGD(params_of, lr=0.1, momentum=0.9)
    return opt


def micro(step, k, world):
    """Micro-batch k of a step's global batch (world * bpps micro-batches of B)."""
    g = torch.Generator().manual_seed(1000 * step + k)
    x = torch.randn(B, 8, generator=g)
    y = (x[:, :4].sum(1) > 0).long() + 2 * (x[:, 4:].sum(1) > 0).long()
    return x.to(DEV), y.to(DEV)


def grad_scaler(amp):
    """torch.amp.GradScaler("cuda") where it exists (torch.cuda.amp's is deprecated there)."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", init_scale=1024.0, enabled=amp)
    return torch.cuda.amp.GradScaler(init_scale=1024.0, enabled=amp)


def loss_of(model, x, y, amp):
    if amp:
        with torch.autocast(DEV.type, dtype=torch.float16):
            return nn.functional.cross_entropy(model(x), y)
    return nn.functional.cross_entropy(model(x.to(next(model.parameters()).dtype)), y)


def reference(world, optname, op, bpps, clip, amp=False, half=False):
    """One process on the concatenated batches; returns (state_dict, moved, clipped)."""
    model = make_model(torch.float16 if half else torch.float32)
    scaler = grad_scaler(amp)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    opt = make_opt(optname, list(model.parameters()))
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    clipped = False
    for step in range(STEPS):
        xs, ys = zip(*[micro(step, k, world) for k in range(world * bpps)])
        x, y = torch.cat(xs), torch.cat(ys)
        opt.zero_grad()
        loss = loss_of(model, x, y, amp)
        scaler.scale(loss * (world if op == "sum" else 1)).backward()
        scaler.unscale_(opt)
        if clip:
            clipped |= nn.utils.clip_grad_norm_(model.parameters(), CLIP).item() > CLIP
        scaler.step(opt)
        scaler.update()
        sched.step()
    sd = model.state_dict()
    moved = max((sd[k] - start[k]).abs().max().item() for k in sd)
    return sd, moved, clipped


def distributed(mt, optname, op, bpps, clip, horovod_style, amp=False, half=False):
    r, world = mt.rank(), mt.size()
    model = make_model(torch.float16 if half else torch.float32)
    scaler = grad_scaler(amp)
    with torch.no_grad():  # ranks start apart
        for p in model.parameters():
            p.add_(float(r))
    base = make_opt(optname, list(model.parameters()))
    kw = {} if horovod_style else {"model": model}
    opt = mt.DistributedOptimizer(base, named_parameters=model.named_parameters(),
                                  backward_passes_per_step=bpps,
                                  op=mt.Sum if op == "sum" else mt.Average, mode="fifo", **kw)
    assert isinstance(opt, torch.optim.Optimizer)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)  # on the wrapper
    mt.broadcast_parameters(model.state_dict(), root_rank=0)
    for step in range(STEPS):
        opt.zero_grad()
        for k in range(bpps):
            x, y = micro(step, r * bpps + k, world)
            scaler.scale(loss_of(model, x, y, amp) / bpps).backward()
        if clip or amp:  # Horovod's pattern: the aggregated gradients, then the update
            opt.synchronize()
            scaler.unscale_(opt)
            if clip:
                nn.utils.clip_grad_norm_(model.parameters(), CLIP)
            with opt.skip_synchronize():
                scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        sched.step()
        if DEV.type == "cuda":  # the CUDA path, not a CPU copy of the model
            assert opt._cuda and all(opt._cuda) and opt._stager is not None
    sd = model.state_dict()  # pending updates applied first (the state-dict hook)
    opt.close()
    return sd


def errors(mt):
    """Each wrong construction fails at once, with the reason."""
    model = make_model()
    base = torch.optim.SGD(model.parameters(), lr=0.1)
    bad = [("unknown keyword", TypeError, dict(model=model, bucket_cap_mb=25)),
           ("op=Adasum", NotImplementedError, dict(model=model, op=mt.Adasum)),
           ("Compression.fp16", NotImplementedError,
            dict(model=model, compression=mt.Compression.fp16)),
           ("model as second argument", TypeError, dict(named_parameters=model)),
           ("a parameter not named", ValueError,
            dict(named_parameters=list(model.named_parameters())[1:])),
           ("pulls_below not a bool", ValueError, dict(model=model, pulls_below=1))]
    ok = True
    for what, exc, kw in bad:
        try:
            mt.DistributedOptimizer(base, **kw)
            print("FAIL errors: %s accepted" % what)
            ok = False
        except exc as e:
            print("ok errors: %s -> %s: %s" % (what, exc.__name__, e))
    # zero_grad between backward and step: Horovod's error (the gradients are being sent)
    opt = mt.DistributedOptimizer(base, model=model, mode="fifo")
    x, y = micro(0, mt.rank(), mt.size())
    nn.functional.cross_entropy(model(x), y).backward()
    try:
        opt.zero_grad()
        print("FAIL errors: zero_grad between backward and step accepted")
        ok = False
    except AssertionError:
        print("ok errors: zero_grad between backward and step -> AssertionError")
    opt.step()
    opt.close()
    return ok


SCENARIOS = {
    "avg-sgd": ("sgd", "avg", 1, False, False),
    "sum-sgd": ("sgd", "sum", 1, False, False),
    "avg-adam": ("adam", "avg", 1, False, False),
    "sum-adam": ("adam", "sum", 1, False, False),
    "clip": ("sgd", "avg", 1, True, False),
    "bpps2": ("sgd", "avg", 2, False, False),
    "horovod-style": ("adam", "avg", 1, False, True),
}
CUDA_ONLY = {"amp": ("sgd", "avg", 1, False, False), "half": ("sgd", "avg", 1, False, False)}


def main():
    # torch 1.13's launcher tees stdout only (--redirects 1): errors go there too
    sys.stdout.reconfigure(line_buffering=True)
    os.dup2(sys.stdout.fileno(), 2)
    torch.set_num_threads(1)
    global DEV
    if DEV.type == "cuda":
        DEV = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) %
                           torch.cuda.device_count())
        torch.cuda.set_device(DEV)
        SCENARIOS.update(CUDA_ONLY)
    import mercury.torch as mt
    mt.init()
    names = sys.argv[1:] or list(SCENARIOS) + ["errors"]
    ok = True
    for name in names:
        if name == "errors":
            ok &= errors(mt)
            continue
        optname, op, bpps, clip, hvd = SCENARIOS[name]
        amp, half = name == "amp", name == "half"
        want, moved, clipped = reference(mt.size(), optname, op, bpps, clip, amp, half)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning expected on these paths
            got = distributed(mt, optname, op, bpps, clip, hvd, amp, half)
        diff = max((got[k] - want[k]).abs().max().item() for k in want)
        tol = TOL_OF.get(name, TOL)
        # the check discriminates: rank 0's batches alone (no aggregation) end far away,
        # and so, with SGD, does the other op (Adam and clipping are nearly scale-free)
        alone, _, _ = reference(1, optname, op, bpps, clip, amp, half)
        apart = max((alone[k] - want[k]).abs().max().item() for k in want)
        other, _, _ = reference(mt.size(), optname, "avg" if op == "sum" else "sum", bpps, clip,
                                amp, half)
        op_apart = max((other[k] - want[k]).abs().max().item() for k in want)
        good = (diff <= tol and moved > 1e-3 and apart > 4 * tol and (clipped or not clip)
                and (op_apart > 4 * tol or optname != "sgd" or clip or amp))
        print("%s %s rank %d: max abs difference %.3g (tolerance %g); the reference moved "
              "%.3g, one rank's batches alone end %.3g away, the other op %.3g%s"
              % ("ok" if good else "FAIL", name, mt.rank(), diff, tol, moved, apart, op_apart,
                 ", clipped" if clipped else ""))
        ok &= good
    mt.shutdown()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
