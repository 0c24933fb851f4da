"""Mercury for PyTorch: data-parallel training through Mercury's parameter server.

    import mercury.torch as mt
    mt.init()                    # RANK, WORLD_SIZE, MASTER_ADDR/PORT from torch.distributed.run
    opt = mt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                  model)
    mt.broadcast_parameters(model.state_dict(), root_rank=0)
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(x), y).backward()   # each layer's gradient is pushed as autograd makes it
        opt.step()                        # returns at once; updates land per layer (below)

A layer is a module with parameters of its own, in the order the first forward pass runs
them. Each layer's gradient is pushed the moment autograd has produced all of it; the
update of that layer is applied right before the layer's next forward pass, as soon as its
aggregate (the mean over workers) has arrived, so the next iteration's forward pass starts
while later layers are still on the wire (BytePS calls this crossing the global barrier).
The layers after it whose aggregates are already here are updated in the same call of the
wrapped optimizer (opt.update_calls and opt.layer_updates count both).
An update uses the optimizer's settings (lr, ...) as they were at its step(): an LR scheduler
of the wrapped optimizer, stepped after opt.step(), acts as without Mercury.
Updates still pending are applied before anything reads the parameters outside a forward
pass: opt.synchronize() (also called by opt.state_dict(), model.state_dict(), model.eval()
and at exit). Gradients seen between backward() and step() are this worker's own, not the
mean: clip or inspect them only after synchronize(). A pushed gradient is read in place
until its layer's update: opt.zero_grad() and model.zero_grad() leave those layers alone
(the update resets them); do not write .grad yourself between step() and the next forward.

Each node's share of the tensors is served (mt.init(servers=...) or MERCURY_PS_SERVERS):
"in-process" (default) by the trainer itself, in libmercury-ps's threads; "process" by a
`mercury-ps serve` the trainer starts for its node with the model's layout, and waits for at
the end; "external" by a `mercury-ps serve` already listening at this rank's PS address
(started by a launcher or a service with the same layout: mt.profile_model writes it; and
`--placement balanced`, DistributedOptimizer's default placement=, MERCURY_PS_PLACEMENT).
Addresses are exchanged through torch.distributed's store. Without mercuryd the run goes on
untagged after one warning. In-process, the trainer's own share never touches a socket
(libmercury-ps hands it over in memory; colocated_tcp=True sends it over loopback TCP).
opt.wait_s: seconds the trainer has spent blocked on aggregates, i.e. the communication
that showed through.
"""
import atexit
import os
import socket
import time
import warnings

import torch
import torch.distributed as dist

from .ps import ParameterServer, start_server

__all__ = ["init", "shutdown", "rank", "size", "local_rank", "DistributedOptimizer",
           "broadcast_parameters", "broadcast_optimizer_state", "profile_model"]

_state = {"rank": None, "size": None, "local_rank": 0, "hosts": None, "opts": [],
          "servers": "in-process"}
SERVERS = ("in-process", "process", "external")
# Whole tensors on the least loaded server (every PS mode alike). MXNet's key hash ("hash",
# the emulated cluster's rule) puts every convolution of torchvision's inception_v3 on the
# same servers as its neighbours' (conv and batch norm alternate): the bound of `mercury-ps
# ideal` on 4 nodes is 0.94 s a step against 0.76 balanced; on 2 nodes the two are equal.
DEFAULT_PLACEMENT = "balanced"


def _env_int(name, default=None):
    v = os.environ.get(name)
    if v is None:
        if default is None:
            raise RuntimeError("mercury.torch: %s is not set: launch with "
                               "`python3 -m torch.distributed.run` or set it" % name)
        return default
    return int(v)


def _own_address(master_addr, master_port):
    """The address peers reach this process at: the one it reaches the master from."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect((master_addr, master_port))
        return s.getsockname()[0]
    finally:
        s.close()


def init(port=None, address=None, servers=None):
    """Joins the job: rank and size from the launcher's environment, the process group
    (gloo, over the launcher's store: used for the address exchange and broadcasts), and this
    process's PS address (MERCURY_PS_ADDR or the address that reaches MASTER_ADDR; port
    MERCURY_PS_PORT (29650) + LOCAL_RANK), where this node's share is served: by whom is
    `servers` (MERCURY_PS_SERVERS; see the module's doc)."""
    servers = servers or os.environ.get("MERCURY_PS_SERVERS", "in-process")
    if servers not in SERVERS:
        raise ValueError("mercury.torch: servers must be one of %s, not %r"
                         % (", ".join(SERVERS), servers))
    r, n = _env_int("RANK"), _env_int("WORLD_SIZE")
    lr = _env_int("LOCAL_RANK", 0)
    if not dist.is_initialized():
        dist.init_process_group("gloo")
    master = os.environ.get("MASTER_ADDR", "127.0.0.1")
    addr = address or os.environ.get("MERCURY_PS_ADDR") or \
        _own_address(master, int(os.environ.get("MASTER_PORT", "29500")))
    p = port or int(os.environ.get("MERCURY_PS_PORT", "29650")) + lr
    store = dist.distributed_c10d._get_default_store()
    store.set("mercury_ps/%d" % r, "%s:%d" % (addr, p))
    hosts = [store.get("mercury_ps/%d" % i).decode() for i in range(n)]
    _state.update(rank=r, size=n, local_rank=lr, hosts=hosts, servers=servers)
    atexit.register(shutdown)


def rank():
    return _state["rank"]


def size():
    return _state["size"]


def local_rank():
    return _state["local_rank"]


def shutdown():
    """Applies every pending update and closes every optimizer's PS session (waits for the
    other workers: this process serves them until they are done)."""
    while _state["opts"]:
        _state["opts"].pop().close()


def broadcast_parameters(params, root_rank=0):
    """Every rank gets root_rank's values: a state_dict() or an iterable of (name, tensor)."""
    items = params.items() if hasattr(params, "items") else params
    for _, t in sorted(items, key=lambda kv: kv[0]):
        if torch.is_tensor(t):
            dist.broadcast(t.data if t.requires_grad else t, src=root_rank)


def broadcast_optimizer_state(optimizer, root_rank=0):
    """Every rank's optimizer gets root_rank's state and settings (momentum buffers, Adam's
    moments and step counts, each group's lr, ...): after rank 0 alone has loaded a
    checkpoint, with broadcast_parameters for the model. optimizer: a DistributedOptimizer
    (its pending updates are applied first) or the torch.optim optimizer it wraps."""
    if isinstance(optimizer, DistributedOptimizer):
        optimizer.synchronize()
        optimizer = optimizer._opt
    box = [optimizer.state_dict() if dist.get_rank() == root_rank else None]
    dist.broadcast_object_list(box, src=root_rank)
    if dist.get_rank() != root_rank:
        optimizer.load_state_dict(box[0])


def _own_params(module):
    return [p for p in module.parameters(recurse=False) if p.requires_grad]


class DistributedOptimizer:
    """Wraps any torch.optim optimizer of model's parameters; see the module's doc."""

    def __init__(self, optimizer, model, mode=None, timeout=60.0, **ps_options):
        if _state["size"] is None:
            raise RuntimeError("mercury.torch: call mt.init() first")
        self._opt = optimizer
        self._model = model
        self._mode = mode or os.environ.get("MERCURY_PS_MODE", "mercury")
        self._timeout = timeout
        self._ps_options = dict(ps_options)
        # Sockets follow the layer groups of mercuryd's band count: a socket spanning two
        # groups sends packets in two bands and reorders its own stream.
        if "bands" not in self._ps_options and os.environ.get("MERCURY_BANDS"):
            self._ps_options["bands"] = int(os.environ["MERCURY_BANDS"])
        if "placement" not in self._ps_options:
            self._ps_options["placement"] = os.environ.get("MERCURY_PS_PLACEMENT",
                                                           DEFAULT_PLACEMENT)
        self._ps = None
        self._server = None           # the `mercury-ps serve` started here (servers="process")
        self._iter = 0                # the iteration whose backward comes next
        self._order = []              # modules in first-forward order: the layers
        self._layer_of = {}           # module -> layer index
        self._pending = {}            # layer -> iteration whose aggregate is owed
        self._got = {}                # layer -> parameters with a gradient this iteration
        self._pushed = set()          # layers pushed this iteration
        self._warned_unused = False
        self.wait_s = 0.0             # seconds blocked on aggregates so far (what shows through)
        self.layer_updates = 0        # layer updates applied so far ...
        self.update_calls = 0         # ... in this many calls of the wrapped optimizer
        self._groups_shape, self._groups_of = None, {}  # per layer: its params per group
        self._settings = {}  # iteration -> the groups' settings at its step()
        seen = set()
        self._owned = {}              # module -> its parameters (each parameter once)
        for m in model.modules():
            ps = [p for p in _own_params(m) if id(p) not in seen]
            seen.update(id(p) for p in ps)
            if ps:
                self._owned[m] = ps
                m.register_forward_pre_hook(self._before_forward)
        opt_ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
        if opt_ids != seen:
            raise ValueError("mercury.torch: the optimizer must own exactly the model's "
                             "trainable parameters")
        # AccumulateGrad nodes fire once a parameter's .grad is complete; without a
        # reference to them their hooks are dropped.
        self._accumulators = []
        for m, ps in self._owned.items():
            for p in ps:
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                acc.register_hook(self._grad_hook(m, p))
                self._accumulators.append(acc)
        self._wrap_model()
        _state["opts"].append(self)

    # ---- what the user calls ----

    @property
    def placement(self):
        """Where whole tensors live: "balanced" (default) or "hash" (placement= or
        MERCURY_PS_PLACEMENT)."""
        return self._ps_options["placement"]

    @property
    def param_groups(self):
        return self._opt.param_groups

    @property
    def state(self):
        return self._opt.state

    def zero_grad(self, set_to_none=False):
        """Zeroes the gradients of layers whose update has been applied. A layer still
        waiting for its aggregate keeps its pushed gradient, which the library reads in
        place; its update resets it (to zeros) before the layer's next forward pass."""
        if not self._pending:
            self._opt.zero_grad(set_to_none)
            return
        pending = {id(p) for layer in self._pending for p in self._owned[self._order[layer]]}
        self._with_params(lambda p: id(p) not in pending,
                          lambda: self._opt.zero_grad(set_to_none))

    def step(self, closure=None):
        """Ends this iteration's backward pass; updates are applied per layer later."""
        if closure is not None:
            raise ValueError("mercury.torch: step(closure) is not supported")
        if not self._order:
            return None
        if self._ps is None:
            self._open()
        for layer in range(len(self._order)):
            if layer not in self._pushed:
                if layer in self._pending:  # this forward pass skipped it: its update is owed
                    self._apply([layer])
                self._push_layer(layer, missing_ok=True)
        self._pushed.clear()
        self._got.clear()
        # Updates land later, but they belong to this step(): they use the settings (lr,
        # momentum, ...) as they are now, so an LR scheduler stepped after opt.step() acts
        # as it does without Mercury.
        self._settings[self._iter] = [{k: v for k, v in g.items() if k != "params"}
                                      for g in self._opt.param_groups]
        live = set(self._pending.values())
        for it in [it for it in self._settings if it not in live]:
            del self._settings[it]
        self._iter += 1
        return None

    def synchronize(self):
        """Applies every pending update (waits for those aggregates)."""
        for layer in sorted(self._pending):
            if layer in self._pending:
                self._apply(self._with_ready_followers(layer))

    def state_dict(self):
        self.synchronize()
        return self._opt.state_dict()

    def load_state_dict(self, sd):
        self.synchronize()
        self._opt.load_state_dict(sd)

    @property
    def tagged(self):
        return self._ps is not None and self._ps.tagged

    @property
    def tag_counts(self):
        """(through mercuryd's fast path, through its service): this worker's tags so far."""
        return self._ps.tag_counts() if self._ps is not None else (0, 0)

    def close(self):
        if self._ps is None:
            return
        try:
            self.synchronize()
        finally:
            ps, self._ps = self._ps, None
            try:
                ps.close()
            finally:
                self._stop_server()
                if self in _state["opts"]:
                    _state["opts"].remove(self)

    def _stop_server(self, timeout=30.0):
        """Our `mercury-ps serve` ends by itself once every worker is done; after a failure
        it may still wait for workers that will never come."""
        srv, self._server = self._server, None
        if srv is None:
            return
        try:
            rc = srv.wait(timeout=timeout)
        except Exception:
            srv.terminate()
            rc = srv.wait()
        if rc != 0:
            warnings.warn("mercury.torch: this node's mercury-ps serve exited with status %d"
                          % rc)

    # ---- hooks ----

    def _wrap_model(self):
        model, opt = self._model, self
        state_dict, train = model.state_dict, model.train

        def synced_state_dict(*a, **k):
            opt.synchronize()
            return state_dict(*a, **k)

        def synced_train(mode=True):
            if not mode:
                opt.synchronize()
            return train(mode)

        def pending_safe_zero_grad(set_to_none=False):
            opt.zero_grad(set_to_none)  # the model's parameters are exactly the optimizer's

        model.state_dict = synced_state_dict
        model.train = synced_train
        model.zero_grad = pending_safe_zero_grad

    def _before_forward(self, module, inputs):
        layer = self._layer_of.get(module)
        if layer is None:
            if self._ps is not None:
                return None  # a module the first forward pass did not run: not a layer
            layer = self._layer_of[module] = len(self._order)
            self._order.append(module)
        if layer in self._pending:
            self._apply(self._with_ready_followers(layer))
        return None

    def _with_ready_followers(self, layer):
        """layer, then the layers after it of the same pending iteration whose aggregates are
        already here: their updates go in one optimizer call (per call, torch.optim's step
        costs tens of microseconds before it touches a parameter; inception_v3 has 189
        layers). Stops at the first that is not here: its own pre-hook will wait for it."""
        it, batch = self._pending[layer], [layer]
        for nxt in range(layer + 1, len(self._order)):
            if self._pending.get(nxt) != it or not self._ps.pull_ready(nxt, it):
                break
            batch.append(nxt)
        return batch

    def _grad_hook(self, module, param):
        def hook(*_):
            layer = self._layer_of.get(module)
            if layer is None:
                return
            if self._ps is None:
                self._open()
            got = self._got.setdefault(layer, set())
            got.add(id(param))
            if len(got) == len(self._owned[module]):
                self._push_layer(layer)
        return hook

    # ---- the parameter server ----

    def _open(self):
        sizes = [sum(p.numel() for p in self._owned[m]) for m in self._order]
        apart = _state["servers"] != "in-process"
        if _state["servers"] == "process":
            self._server = start_server(rank(), size(), _state["hosts"], sizes,
                                        mode=self._mode, timeout=self._timeout,
                                        **{k: v for k, v in self._ps_options.items()
                                           if k not in ("timeline", "colocated_tcp")})
        try:
            self._ps = ParameterServer(rank(), size(), _state["hosts"], sizes, mode=self._mode,
                                       timeout=self._timeout, external_servers=apart,
                                       **self._ps_options)
        except Exception:
            if self._server is not None:
                self._server.terminate()
            self._stop_server()
            raise
        # Without mercuryd, libmercury-ps has said so once on stderr; training goes on.
        # Per layer, allocated once: the pulled sums, and (float32 layers) the gradients'
        # home, which every .grad of the layer views between updates, so that autograd
        # accumulates in place and the push reads one flat array: no torch.cat and no clone
        # of every gradient each step (47 MB each for resnet18).
        self._bufs = [torch.empty(n, dtype=torch.float32) for n in sizes]
        self._grad_home = [torch.zeros(n, dtype=torch.float32)
                           if all(p.dtype == torch.float32 for p in self._owned[m]) else None
                           for n, m in zip(sizes, self._order)]
        self._flat = [None] * len(sizes)  # gather buffer, for grads that live elsewhere
        self._view_cache = {}

    def _grads_at_home(self, layer, params):
        """Whether the layer's .grad are the views of its home array, in order."""
        home = self._grad_home[layer]
        if home is None:
            return False
        at = home.data_ptr()
        for p in params:
            if p.grad is None or p.grad.data_ptr() != at or not p.grad.is_contiguous():
                return False
            at += p.numel() * 4
        return True

    def _push_layer(self, layer, missing_ok=False):
        params = self._owned[self._order[layer]]
        if missing_ok and not self._warned_unused:
            self._warned_unused = True
            warnings.warn("mercury.torch: a layer got no gradient this iteration: zeros are "
                          "pushed for it")
        if self._grads_at_home(layer, params):
            flat = self._grad_home[layer]
        else:  # first iteration, zero_grad(set_to_none=True), or not float32
            grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
            if self._flat[layer] is None:
                self._flat[layer] = torch.empty_like(self._bufs[layer])
            flat = torch.cat([g.detach().reshape(-1).float() for g in grads],
                             out=self._flat[layer])
        # In place: the flat gradient is not written again before this layer's update, and
        # the sum lands in the layer's pull buffer, read by _apply only after the wait.
        self._ps.push_inplace(layer, self._iter, flat.data_ptr(), self._bufs[layer].data_ptr())
        self._pushed.add(layer)
        self._pending[layer] = self._iter

    def _apply(self, layers):
        """Waits for the aggregates of layers (all pending for the same iteration) and
        applies their updates in one call of the wrapped optimizer, narrowed to them."""
        it = self._pending[layers[0]]
        narrowed = {}
        for layer in layers:
            del self._pending[layer]
            buf = self._bufs[layer]
            t0 = time.perf_counter()
            self._ps.wait_pull(layer, it, buf.data_ptr())
            self.wait_s += time.perf_counter() - t0
            buf.div_(size())
            self._point_grads(self._owned[self._order[layer]], self._views(layer, buf))
            for i, own in self._layer_groups(layer):
                narrowed.setdefault(i, []).extend(own)
        with torch.no_grad():
            self._with_groups(sorted(narrowed.items()), self._opt.step, self._settings.get(it))
        self.layer_updates += len(layers)
        self.update_calls += 1
        for layer in layers:
            params, home = self._owned[self._order[layer]], self._grad_home[layer]
            if home is None:
                for p in params:  # the next backward starts from nothing
                    p.grad = None
            else:  # ... in the layer's home array
                home.zero_()
                self._point_grads(params, self._views(layer, home))

    def _with_params(self, keep, call):
        """Runs call() with the wrapped optimizer's groups narrowed to the parameters p
        for which keep(p) holds (each group's settings kept)."""
        self._with_groups([(i, [p for p in g["params"] if keep(p)])
                           for i, g in enumerate(self._opt.param_groups)], call)

    def _with_groups(self, narrowed, call, settings=None):
        """Runs call() with the optimizer's groups narrowed to [(group index, params)], with
        the settings (lr, momentum, ...) of `settings` (a list per group) where given, else
        as the groups have them now."""
        groups = self._opt.param_groups
        sub = []
        for i, own in narrowed:
            if own:
                d = dict(settings[i] if settings and i < len(settings) else groups[i])
                d["params"] = own
                sub.append(d)
        self._opt.param_groups = sub
        try:
            return call()
        finally:
            self._opt.param_groups = groups

    def _layer_groups(self, layer):
        """The layer's parameters per optimizer group, found once per group layout: a scan
        of every parameter for every layer costs ~25 us a layer at 200 layers."""
        groups = self._opt.param_groups
        shape = tuple((id(g["params"]), len(g["params"])) for g in groups)
        if self._groups_shape != shape:
            self._groups_shape, self._groups_of = shape, {}
        narrowed = self._groups_of.get(layer)
        if narrowed is None:
            ids = {id(p) for p in self._owned[self._order[layer]]}
            narrowed = [(i, [p for p in g["params"] if id(p) in ids])
                        for i, g in enumerate(groups)]
            self._groups_of[layer] = narrowed
        return narrowed

    def _views(self, layer, flat):
        """Per parameter of the layer, its slice of flat (the layer's pull buffer or gradient
        home) shaped like it: made once, since both arrays live as long as the session."""
        key = (layer, flat.data_ptr())
        views = self._view_cache.get(key)
        if views is None:
            views, off = [], 0
            for p in self._owned[self._order[layer]]:
                views.append(flat[off:off + p.numel()].view_as(p))
                off += p.numel()
            self._view_cache[key] = views
        return views

    @staticmethod
    def _point_grads(params, views):
        """Each parameter's .grad becomes its view (no copy for float32)."""
        for p, g in zip(params, views):
            p.grad = g if p.dtype == torch.float32 else g.to(p.dtype)


def profile_model(model, inputs, loss_fn, path, name="model", steps=5):
    """Writes a mercury-ps profile (models/*.prof) of model as this machine runs it: per
    layer (module with parameters, forward order) its parameter count and median forward
    and backward time, so that `mercury-ps ideal` gives the bound of a real run. A layer's
    forward time runs from its start to the next layer's start (the parameterless modules
    between them included); its backward time from the previous gradient ready to its own."""
    order, t_fwd, t_grad = [], {}, {}
    handles = []

    def pre(m, _):
        if m not in t_fwd:
            order.append(m)
        t_fwd[m] = time.perf_counter()

    def grad_done(m):
        def hook(g):
            t_grad[m] = time.perf_counter()
        return hook

    owned = {m: _own_params(m) for m in model.modules() if _own_params(m)}
    for m, ps in owned.items():
        handles.append(m.register_forward_pre_hook(pre))
        for p in ps:
            handles.append(p.register_hook(grad_done(m)))
    fwd = {m: [] for m in owned}
    bwd = {m: [] for m in owned}
    for _ in range(steps + 1):  # the first is a warm-up
        model.zero_grad()
        loss = loss_fn(model(inputs))
        t_loss = time.perf_counter()
        loss.backward()
        for i, m in enumerate(order):
            nxt = t_fwd[order[i + 1]] if i + 1 < len(order) else t_loss
            fwd[m].append(nxt - t_fwd[m])
            prev = t_grad[order[i + 1]] if i + 1 < len(order) else t_loss
            bwd[m].append(max(0.0, t_grad[m] - prev))
    for h in handles:
        h.remove()

    def med(v):
        v = sorted(v[1:])
        return v[len(v) // 2]

    with open(path, "w") as f:
        f.write("# measured by mercury.torch.profile_model: median of %d steps, %d thread(s)\n"
                % (steps, torch.get_num_threads()))
        f.write("model %s\n" % name)
        for i, m in enumerate(order):
            n = sum(p.numel() for p in owned[m])
            f.write("layer %s%d %d %.6f %.6f\n" % (type(m).__name__.lower(), i, n,
                                                   med(fwd[m]), med(bwd[m])))
    return path
