# SPDX-License-Identifier: BSD-2-Clause
"""Mercury for PyTorch: data-parallel training through Mercury's parameter server, with the
API of Horovod's and BytePS's DistributedOptimizer.

    import mercury.torch as mt
    mt.init()                    # RANK, WORLD_SIZE, MASTER_ADDR/PORT from torch.distributed.run
    opt = mt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                  named_parameters=model.named_parameters(), model=model)
    mt.broadcast_parameters(model.state_dict(), root_rank=0)
    for x, y in data:
        opt.zero_grad()
        loss_fn(model(x), y).backward()   # each layer's gradient is pushed as autograd makes it
        opt.step()                        # returns at once; updates land per layer (below)

With model= (Mercury's way): a layer is a module with parameters of its own, in the order the
first forward pass runs them. Each layer's gradient is pushed the moment autograd has produced
all of it (after backward_passes_per_step backward passes); the update of that layer is applied
by a forward pre-hook right before the layer's next forward pass, as soon as its aggregate has
arrived, so the next iteration's forward pass starts while later layers are still on the wire
(BytePS calls this crossing the global barrier). The layers after it whose aggregates are
already here are updated in the same call of the wrapped optimizer (opt.update_calls and
opt.layer_updates count both). An update uses the optimizer's settings (lr, ...) as they were
at its step(): an LR scheduler stepped after opt.step() acts as without Mercury.
Without model= (Horovod's way): step() waits for every aggregate and applies the update at
once; layers are the modules named in named_parameters (the part of a name before its last
dot), or single parameters.

op: mt.Average (the mean over workers, default) or mt.Sum; mt.Adasum is refused.
synchronize() has Horovod's meaning: after backward() it waits for this iteration's aggregates
and leaves them in each .grad (the mean or the sum), so that
    opt.synchronize(); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    with opt.skip_synchronize(): opt.step()
clips the aggregated gradients before the update (that step applies every layer's update at
once: the next forward pass no longer overlaps the communication). The same pattern serves
torch.cuda.amp.GradScaler (scaler.unscale_(opt) after synchronize(), scaler.step(opt) inside
skip_synchronize()). After step(), synchronize() applies the updates still pending: call it (or
opt.state_dict(); model.state_dict() does it through a state-dict hook) before reading the
parameters outside a forward pass. A forward pass, training or eval, applies them itself.
Between a layer's push and its update its .grad is None: the library owns the gradient
(zero_grad() is harmless then; between backward() and step() it is an error, as in Horovod).

CUDA: a model on a GPU needs no change. Each layer's gradient is copied into pinned host memory
on a side stream as autograd produces it (the copy waits for the gradient's kernels, not for
the whole backward pass), a staging thread pushes it once that copy's event has completed, and
the aggregate is copied back to the device on the current stream right before the update.
Gradients of any floating dtype (fp16, bf16) are aggregated in float32.

Each node's share of the tensors is served (mt.init(servers=...) or MERCURY_PS_SERVERS):
"in-process" (default) by the trainer itself, in libmercury-ps's threads; "process" by a
`mercury-ps serve` the trainer starts for its node with the model's layout, and waits for at
the end; "external" by a `mercury-ps serve` already listening at this rank's PS address
(started by a launcher or a service with the same layout: mt.profile_model writes it; and
`--placement balanced`, DistributedOptimizer's default placement=, MERCURY_PS_PLACEMENT).
Addresses are exchanged with torch.distributed.all_gather_object over gloo. Without mercuryd
the run goes on untagged after one warning. In-process, the trainer's own share never touches
a socket (colocated_tcp=True sends it over loopback TCP). opt.wait_s: seconds the trainer has
spent blocked on aggregates, i.e. the communication that showed through.
"""
import atexit
import contextlib
import os
import queue
import socket
import threading
import time
import warnings

import torch
import torch.distributed as dist

from .ps import ParameterServer, _check_choices, _check_pulls_below, start_server

__all__ = ["init", "shutdown", "rank", "size", "local_rank", "local_size",
           "DistributedOptimizer", "Average", "Sum", "Adasum", "Compression",
           "broadcast_parameters", "broadcast_optimizer_state", "broadcast_object",
           "allreduce", "profile_model"]

_state = {"rank": None, "size": None, "local_rank": 0, "hosts": None, "opts": [],
          "servers": "in-process"}
SERVERS = ("in-process", "process", "external")
# Whole tensors on the least loaded server (every PS mode alike). MXNet's key hash ("hash",
# the emulated cluster's rule) puts every convolution of torchvision's inception_v3 on the
# same servers as its neighbours' (conv and batch norm alternate): the bound of `mercury-ps
# ideal` on 4 nodes is 0.94 s a step against 0.76 balanced; on 2 nodes the two are equal.
DEFAULT_PLACEMENT = "balanced"

# Reduction ops, as Horovod names them.
Average, Sum, Adasum = 0, 1, 2
_OPS = {Average: "Average", Sum: "Sum", Adasum: "Adasum"}


class Compressor:
    """Horovod's compression interface: compress(tensor) -> (tensor, ctx),
    decompress(tensor, ctx) -> tensor."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class NoneCompressor(Compressor):
    """No compression: float32 on the wire."""


class FP16Compressor(Compressor):
    """Horovod's fp16 cast. Refused by DistributedOptimizer: libmercury-ps carries float32
    only (include/mercury_ps.h), so a cast in Python would not halve the bytes on the wire."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating_point:
            return tensor.type(torch.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor.type(ctx) if ctx is not None else tensor


class Compression:
    """Compression.none (the default) and Compression.fp16 (not supported here)."""
    none = NoneCompressor
    fp16 = FP16Compressor


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


def _gloo_group():
    """None (the default group) when it is gloo, else a gloo group of every rank (objects
    are exchanged over TCP, whatever backend the trainer chose for its own collectives)."""
    if dist.get_backend() == "gloo":
        return None
    if _state.get("gloo") is None:
        _state["gloo"] = dist.new_group(backend="gloo")
    return _state["gloo"]


def init(port=None, address=None, servers=None):
    """Joins the job: rank and size from the launcher's environment, the process group (gloo
    unless the trainer opened one already), and this process's PS address (MERCURY_PS_ADDR or
    the address that reaches MASTER_ADDR; port MERCURY_PS_PORT (29650) + LOCAL_RANK), where
    this node's share is served: by whom is `servers` (MERCURY_PS_SERVERS; see the module's
    doc). Every rank's address is exchanged with all_gather_object (public API)."""
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
    hosts = [None] * n
    dist.all_gather_object(hosts, "%s:%d" % (addr, p), group=_gloo_group())
    _state.update(rank=r, size=n, local_rank=lr, hosts=hosts, servers=servers)
    atexit.register(shutdown)


def rank():
    return _state["rank"]


def size():
    return _state["size"]


def local_rank():
    return _state["local_rank"]


def local_size():
    """Processes on this node (LOCAL_WORLD_SIZE, set by torch.distributed.run)."""
    return _env_int("LOCAL_WORLD_SIZE", 1)


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
    dist.broadcast_object_list(box, src=root_rank, group=_gloo_group())
    if dist.get_rank() != root_rank:
        optimizer.load_state_dict(box[0])


def broadcast_object(obj, root_rank=0):
    """root_rank's obj on every rank (any picklable object)."""
    box = [obj if dist.get_rank() == root_rank else None]
    dist.broadcast_object_list(box, src=root_rank, group=_gloo_group())
    return box[0]


def allreduce(tensor, op=Average):
    """A new tensor: the mean (op=Average) or sum (op=Sum) of tensor over every rank (for
    metrics; gradients go through DistributedOptimizer)."""
    if op not in (Average, Sum):
        raise ValueError("mercury.torch: allreduce supports op=Average and op=Sum")
    out = tensor.detach().clone()
    dist.all_reduce(out)
    if op == Average:
        out = out / size() if not out.dtype.is_floating_point else out.div_(size())
    return out


def _own_params(module):
    return [p for p in module.parameters(recurse=False) if p.requires_grad]


class DistributedOptimizer(torch.optim.Optimizer):
    """Wraps any torch.optim optimizer; see the module's doc. Arguments in Horovod's order
    and meaning: named_parameters (names; without model= they define the layers),
    compression (Compression.none only), backward_passes_per_step (gradients accumulate
    locally over that many backward passes before the push), op (Average or Sum).
    Keyword-only, Mercury's own: model (the module whose forward pre-hooks apply each layer's
    update: Mercury's overlap), mode (fifo, partition, mercury; MERCURY_PS_MODE), timeout,
    conns, bands (MERCURY_BANDS), part, credit, bound, placement (MERCURY_PS_PLACEMENT),
    timeline, colocated_tcp, job and weight (the job's id and weight towards mercuryd:
    two jobs of one user on a node need different ids; 1 and 1), rcvbuf (each data
    connection's receive buffer, a bound on its window against incast at switch ports:
    by default the kernel's autotuning at 2 nodes, 16384 bytes at 3-4, then 65536 / nodes,
    at least 8192; 0 = the kernel's autotuning; docs/fabric.md), dscp_queues (the switch
    ports' strict-priority DSCP queues, MERCURY_DSCP_QUEUES: every connection then carries
    the layers of one queue; 0 = off; docs/switch-dscp.md), pulls_below (True, the
    default: each pull one layer group below its layer, so a layer's pushes go first,
    docs/fabric.md; False ranks them alike). Any other keyword is a TypeError here."""

    def __init__(self, optimizer, named_parameters=None, compression=Compression.none,
                 backward_passes_per_step=1, op=Average, *, model=None, mode=None,
                 timeout=60.0, conns=None, bands=None, part=None, credit=None, bound=None,
                 placement=None, timeline=None, colocated_tcp=None, job=None, weight=None,
                 rcvbuf=None, dscp_queues=None, pulls_below=None):
        if _state["size"] is None:
            raise RuntimeError("mercury.torch: call mt.init() first")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError("mercury.torch: optimizer must be a torch.optim.Optimizer")
        if isinstance(named_parameters, torch.nn.Module):
            raise TypeError("mercury.torch: the second argument is named_parameters (as in "
                            "Horovod); pass the model as model=model")
        if op not in _OPS:
            raise ValueError("mercury.torch: op must be mt.Average or mt.Sum")
        if op == Adasum:
            raise NotImplementedError("mercury.torch: op=Adasum is not supported (a parameter "
                                      "server sums; use mt.Average or mt.Sum)")
        if compression is not Compression.none:
            raise NotImplementedError(
                "mercury.torch: only Compression.none: libmercury-ps carries float32 "
                "gradients only (include/mercury_ps.h), so Compression.fp16 could not halve "
                "the bytes on the wire")
        if int(backward_passes_per_step) < 1:
            raise ValueError("mercury.torch: backward_passes_per_step must be >= 1")
        # torch.optim.Optimizer's bookkeeping (hooks, profiling, LR schedulers' checks) on
        # throw-away groups; from then on param_groups and state are the wrapped optimizer's
        # (properties: its load_state_dict replaces them): an LR scheduler or
        # add_param_group on either acts on both.
        super().__init__(optimizer.param_groups, optimizer.defaults)
        self.__dict__.pop("_init_param_groups", None)
        self.__dict__.pop("_init_state", None)
        self._opt = optimizer
        self._model = model
        self._op = op
        self._bpps = int(backward_passes_per_step)
        self._mode = mode or os.environ.get("MERCURY_PS_MODE", "mercury")
        self._timeout = timeout
        self._ps_options = {k: v for k, v in (("conns", conns), ("bands", bands),
                                              ("part", part), ("credit", credit),
                                              ("bound", bound), ("timeline", timeline),
                                              ("colocated_tcp", colocated_tcp),
                                              ("job", job), ("weight", weight),
                                              ("rcvbuf", rcvbuf),
                                              ("dscp_queues", dscp_queues),
                                              ("pulls_below", pulls_below))
                            if v is not None}
        # Sockets follow the layer groups of mercuryd's band count: a socket spanning two
        # groups sends packets in two bands and reorders its own stream.
        if "bands" not in self._ps_options and os.environ.get("MERCURY_BANDS"):
            self._ps_options["bands"] = int(os.environ["MERCURY_BANDS"])
        # ... and, where the switch ports are strict priority on DSCP, the switch's queues
        if "dscp_queues" not in self._ps_options and os.environ.get("MERCURY_DSCP_QUEUES"):
            self._ps_options["dscp_queues"] = int(os.environ["MERCURY_DSCP_QUEUES"])
        self._ps_options["placement"] = placement or os.environ.get("MERCURY_PS_PLACEMENT",
                                                                    DEFAULT_PLACEMENT)
        # a bad mode, placement, job, weight or pulls_below fails here, not at the first step
        _check_choices(self._mode, self._ps_options["placement"],
                       1 if job is None else job, 1 if weight is None else weight)
        if pulls_below is not None:
            _check_pulls_below(pulls_below)
        self._ps = None
        self._server = None           # the `mercury-ps serve` started here (servers="process")
        self._iter = 0                # the iteration whose backward comes next
        self._order = []              # layers (modules, or name groups) in order
        self._layer_of = {}           # layer key -> layer index
        self._pending = {}            # layer -> iteration whose aggregate is owed
        self._got = {}                # layer -> {id(param): backward passes seen}
        self._pushed = set()          # layers pushed this iteration
        self._synced = []             # layers whose aggregate synchronize() put in .grad
        self._dirty = False           # a gradient arrived since the last step()
        self._should_sync = True      # False inside skip_synchronize()
        self._warned_unused = False
        self.wait_s = 0.0             # seconds blocked on aggregates so far (what shows through)
        self.layer_updates = 0        # layer updates applied so far ...
        self.update_calls = 0         # ... in this many calls of the wrapped optimizer
        self._groups_shape, self._groups_of = None, {}  # per layer: its params per group
        self._settings = {}  # iteration -> the groups' settings at its step()
        self._stager = None  # CUDA: the thread that pushes staged gradients
        opt_params = [p for g in optimizer.param_groups for p in g["params"]]
        opt_ids = {id(p) for p in opt_params}
        names = self._check_names(named_parameters, opt_params)
        self._owned = {}              # layer key -> its parameters (each parameter once)
        if model is not None:
            seen = set()
            for m in model.modules():
                ps = [p for p in _own_params(m) if id(p) not in seen]
                seen.update(id(p) for p in ps)
                if ps:
                    self._owned[m] = ps
                    m.register_forward_pre_hook(self._before_forward)
            if opt_ids != seen:
                raise ValueError("mercury.torch: the optimizer must own exactly the model's "
                                 "trainable parameters")
            # Updates pending when someone reads the model's state_dict are applied first
            # (public pre-hook from torch 2.0; on 1.13 the post-hook, private but stable
            # since 1.0: the dict's tensors share the parameters' storage, which every
            # torch.optim optimizer updates in place).
            if hasattr(model, "register_state_dict_pre_hook"):
                model.register_state_dict_pre_hook(lambda *_: self.synchronize())
            else:
                model._register_state_dict_hook(lambda *_: self.synchronize())
        else:
            # Horovod's way: layers are the modules of the names, in the order named.
            for p in opt_params:
                if not p.requires_grad:
                    continue
                name = names.get(id(p))
                key = name.rsplit(".", 1)[0] if name and "." in name else (name or id(p))
                self._owned.setdefault(("layer", key), []).append(p)
            for key in self._owned:
                self._layer_of[key] = len(self._order)
                self._order.append(key)
        for key, ps in self._owned.items():
            devs = {p.device for p in ps}
            if len(devs) != 1:
                raise ValueError("mercury.torch: a layer's parameters are on several devices "
                                 "(%s)" % ", ".join(sorted(str(d) for d in devs)))
        # AccumulateGrad nodes fire once a parameter's .grad is complete; without a
        # reference to them their hooks are dropped.
        self._accumulators = []
        for key, ps in self._owned.items():
            for p in ps:
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                acc.register_hook(self._grad_hook(key, p))
                self._accumulators.append(acc)
        _state["opts"].append(self)

    # The wrapped optimizer's, once it is there (Optimizer.__init__ fills throw-away ones).
    @property
    def param_groups(self):
        opt = self.__dict__.get("_opt")
        return opt.param_groups if opt is not None else \
            self.__dict__.setdefault("_init_param_groups", [])

    @param_groups.setter
    def param_groups(self, value):
        opt = self.__dict__.get("_opt")
        if opt is not None:
            opt.param_groups = value
        else:
            self.__dict__["_init_param_groups"] = value

    @property
    def state(self):
        opt = self.__dict__.get("_opt")
        return opt.state if opt is not None else self.__dict__.setdefault("_init_state", {})

    @state.setter
    def state(self, value):
        opt = self.__dict__.get("_opt")
        if opt is not None:
            opt.state = value
        else:
            self.__dict__["_init_state"] = value

    @staticmethod
    def _check_names(named_parameters, opt_params):
        """Horovod's checks: (name, parameter) pairs, names unique, every parameter of the
        optimizer named. Returns id(param) -> name."""
        if named_parameters is None:
            return {}
        pairs = list(named_parameters)
        if any(not isinstance(x, tuple) or len(x) != 2 for x in pairs):
            raise ValueError("mercury.torch: named_parameters must be (name, parameter) "
                             "pairs, e.g. model.named_parameters()")
        names = [n for n, _ in pairs]
        if len(set(names)) != len(names):
            raise ValueError("mercury.torch: parameter names in named_parameters must be "
                             "unique")
        by_id = {id(p): n for n, p in pairs}
        if any(id(p) not in by_id for p in opt_params):
            raise ValueError("mercury.torch: named_parameters was given, but some of the "
                             "optimizer's parameters are not named in it")
        return by_id

    # ---- what the user calls ----

    @property
    def placement(self):
        """Where whole tensors live: "balanced" (default) or "hash" (placement= or
        MERCURY_PS_PLACEMENT)."""
        return self._ps_options["placement"]

    def zero_grad(self, set_to_none=None):
        """The wrapped optimizer's zero_grad. Layers whose update is pending have no .grad
        (the library owns their gradient), so they are left alone. Between backward() and
        step()/synchronize() it is an error, as in Horovod."""
        if self._pushed and not self._synced:
            raise AssertionError("mercury.torch: zero_grad() after backward() and before "
                                 "step() or synchronize(): the gradients are already pushed")
        if self._synced:  # synchronize() without step() (GradScaler found an inf): dropped
            layers, self._synced = self._synced, []
            for layer in layers:
                self._reset_grads(layer)
            self._end_iteration()
        if set_to_none is None:
            self._opt.zero_grad()
        else:
            self._opt.zero_grad(set_to_none)

    def step(self, closure=None):
        """Ends this iteration: pushes what backward has not (layers without a gradient
        push zeros). With model=, updates are applied per layer later (the module's doc);
        without, now. After synchronize(), applies every layer's update now."""
        if closure is not None:
            raise ValueError("mercury.torch: step(closure) is not supported")
        if self._synced:
            if self._should_sync:
                warnings.warn("mercury.torch: step() after synchronize() outside "
                              "skip_synchronize(): use `with opt.skip_synchronize(): "
                              "opt.step()`")
            self._apply_synced()
            return None
        if not self._should_sync:
            raise RuntimeError("mercury.torch: step() inside skip_synchronize() needs "
                               "synchronize() first")
        if not self._order:
            return None
        if self._ps is None:
            self._open()
        for layer in range(len(self._order)):
            if layer not in self._pushed:
                if layer in self._pending:  # this forward pass skipped it: its update is owed
                    self._apply([layer])
                self._push_layer(layer, missing_ok=True)
        # Updates land later, but they belong to this step(): they use the settings (lr,
        # momentum, ...) as they are now, so an LR scheduler stepped after opt.step() acts
        # as it does without Mercury.
        self._settings[self._iter] = [{k: v for k, v in g.items() if k != "params"}
                                      for g in self.param_groups]
        self._end_iteration()
        live = set(self._pending.values())
        for it in [it for it in self._settings if it not in live]:
            del self._settings[it]
        if self._model is None:  # no forward pre-hooks: Horovod's step
            self.synchronize()
        return None

    def synchronize(self):
        """Horovod's synchronize: after backward(), waits for this iteration's aggregates
        and puts them in .grad (the update then comes from step() inside
        skip_synchronize()). Also applies every update still pending from earlier steps."""
        if self._ps is None:
            return
        for layer in sorted(self._pending):
            it = self._pending.get(layer)
            if it is not None and it < self._iter:
                self._apply(self._with_ready_followers(layer))
        if not self._dirty and not self._pushed:
            return
        for layer in range(len(self._order)):
            if layer not in self._pushed:
                self._push_layer(layer, missing_ok=True)
        for layer in range(len(self._order)):
            if self._pending.get(layer) == self._iter:
                del self._pending[layer]
                self._point_grads(self._owned[self._order[layer]], self._aggregate(layer, self._iter))
                self._synced.append(layer)

    @contextlib.contextmanager
    def skip_synchronize(self):
        """Horovod's: step() inside it does not synchronize again (call synchronize() first)."""
        self._should_sync = False
        try:
            yield
        finally:
            self._should_sync = True

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
            self._stop_stager()
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
            if self._pending.get(nxt) != it or not self._pull_ready(nxt, it):
                break
            batch.append(nxt)
        return batch

    def _grad_hook(self, key, param):
        def hook(*_):
            layer = self._layer_of.get(key)
            if layer is None:
                return
            if self._ps is None:
                self._open()
            self._dirty = True
            got = self._got.setdefault(layer, {})
            n = got.get(id(param), 0) + 1
            if n > self._bpps or layer in self._pushed:
                raise RuntimeError(
                    "mercury.torch: gradients computed more than backward_passes_per_step "
                    "(%d) times before step(): raise backward_passes_per_step to accumulate "
                    "them" % self._bpps)
            got[id(param)] = n
            if len(got) == len(self._owned[key]) and all(c == self._bpps for c in got.values()):
                self._push_layer(layer)
        return hook

    def _end_iteration(self):
        self._pushed.clear()
        self._got.clear()
        self._dirty = False
        self._iter += 1

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
        params = [self._owned[m] for m in self._order]
        self._cuda = [ps[0].is_cuda for ps in params]
        # Per layer, allocated once: the pulled sums, and (float32 CPU layers) the
        # gradients' home, which every .grad of the layer views between updates, so that
        # autograd accumulates in place and the push reads one flat array: no torch.cat and
        # no clone of every gradient each step (47 MB each for resnet18). CUDA layers: the
        # pinned host copy of the gradient, and the aggregate's device copy.
        pin = any(self._cuda)
        self._bufs = [torch.empty(n, dtype=torch.float32, pin_memory=pin) for n in sizes]
        self._grad_home = [torch.zeros(n, dtype=torch.float32)
                           if not c and all(p.dtype == torch.float32 for p in ps) else None
                           for n, c, ps in zip(sizes, self._cuda, params)]
        self._flat = [torch.empty(n, dtype=torch.float32, pin_memory=True) if c else None
                      for n, c in zip(sizes, self._cuda)]
        self._dev_bufs = [torch.empty(n, dtype=torch.float32, device=ps[0].device) if c
                          else None for n, c, ps in zip(sizes, self._cuda, params)]
        self._view_cache = {}
        if pin:
            self._start_stager()
        for layer, home in enumerate(self._grad_home):
            if home is not None and all(p.grad is None for p in params[layer]):
                self._point_grads(params[layer], self._views(layer, home))

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
        if missing_ok and not self._warned_unused and all(p.grad is None for p in params):
            self._warned_unused = True
            warnings.warn("mercury.torch: a layer got no gradient this iteration: zeros are "
                          "pushed for it")
        if self._cuda[layer]:
            self._stage(layer, params)
        else:
            if self._grads_at_home(layer, params):
                flat = self._grad_home[layer]
            else:  # first iteration, zero_grad(set_to_none=True), or not float32
                grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
                if self._flat[layer] is None:
                    self._flat[layer] = torch.empty_like(self._bufs[layer])
                flat = torch.cat([g.detach().reshape(-1).float() for g in grads],
                                 out=self._flat[layer])
            # In place: the flat gradient is not written again before this layer's update,
            # and the sum lands in the layer's pull buffer, read only after the wait.
            self._ps.push_inplace(layer, self._iter, flat.data_ptr(),
                                  self._bufs[layer].data_ptr())
        # Until the update the library owns the gradient: no .grad, so that no zero_grad()
        # or later backward pass writes what is being read.
        for p in params:
            p.grad = None
        self._pushed.add(layer)
        self._pending[layer] = self._iter

    # ---- CUDA staging ----

    def _stage(self, layer, params):
        """Copies the layer's gradients (any float dtype, on the device) into its pinned
        float32 host array on a side stream that first waits for the current stream (the
        kernels that made them), records an event, and hands (layer, event) to the staging
        thread, which pushes once the event has completed. The gradients stay alive for the
        side stream (record_stream)."""
        dev = params[0].device
        side = self._side
        host = self._flat[layer]
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            off = 0
            for p in params:
                n = p.numel()
                dst = host[off:off + n].view_as(p)
                if p.grad is None:
                    dst.zero_()
                else:
                    dst.copy_(p.grad.detach(), non_blocking=True)
                    p.grad.record_stream(side)
                off += n
            done = torch.cuda.Event()
            done.record(side)
        flag = threading.Event()
        self._pushed_flag[layer] = flag
        self._stage_q.put((layer, self._iter, done, flag))

    def _start_stager(self):
        devs = {self._owned[m][0].device for m, c in zip(self._order, self._cuda) if c}
        if len(devs) != 1:
            raise ValueError("mercury.torch: the model's CUDA parameters span several GPUs")
        self._side = torch.cuda.Stream(device=devs.pop())
        self._stage_q = queue.Queue()
        self._stage_err = None
        self._pushed_flag = {}
        self._stager = threading.Thread(target=self._stage_loop, name="mercury-stage",
                                        daemon=True)
        self._stager.start()

    def _stage_loop(self):
        while True:
            item = self._stage_q.get()
            if item is None:
                return
            layer, it, done, flag = item
            try:
                if self._stage_err is None:
                    done.synchronize()  # releases the GIL
                    self._ps.push_inplace(layer, it, self._flat[layer].data_ptr(),
                                          self._bufs[layer].data_ptr())
            except BaseException as e:  # handed to the main thread at its wait
                self._stage_err = e
            flag.set()

    def _stop_stager(self):
        if self._stager is not None:
            self._stage_q.put(None)
            self._stager.join()
            self._stager = None

    def _staged(self, layer):
        """Waits until the staging thread has pushed layer (CUDA layers)."""
        if self._cuda[layer]:
            self._pushed_flag[layer].wait()
            if self._stage_err is not None:
                raise self._stage_err

    def _pull_ready(self, layer, it):
        if self._cuda[layer] and not self._pushed_flag[layer].is_set():
            return False
        return self._ps.pull_ready(layer, it)

    # ---- updates ----

    def _aggregate(self, layer, it):
        """Waits for layer's aggregate of iteration it; returns per parameter its view (on
        the parameter's device, float32): the mean or the sum."""
        buf = self._bufs[layer]
        t0 = time.perf_counter()
        self._staged(layer)
        self._ps.wait_pull(layer, it, buf.data_ptr())
        self.wait_s += time.perf_counter() - t0
        if self._cuda[layer]:
            # On the current stream, before the update's kernels; the pinned array is not
            # written again before this layer's next push, which waits for later kernels.
            out = self._dev_bufs[layer]
            out.copy_(buf, non_blocking=True)
        else:
            out = buf
        if self._op == Average:
            out.div_(size())
        return self._views(layer, out)

    def _apply(self, layers):
        """Waits for the aggregates of layers (all pending for the same iteration) and
        applies their updates in one call of the wrapped optimizer, narrowed to them."""
        it = self._pending[layers[0]]
        for layer in layers:
            del self._pending[layer]
            self._point_grads(self._owned[self._order[layer]], self._aggregate(layer, it))
        self._update(layers, self._settings.get(it))

    def _apply_synced(self):
        """step() after synchronize(): every layer's update now, with the settings of now."""
        layers, self._synced = self._synced, []
        self._update(layers, None)
        self._end_iteration()

    def _update(self, layers, settings):
        narrowed = {}
        for layer in layers:
            for i, own in self._layer_groups(layer):
                narrowed.setdefault(i, []).extend(own)
        with torch.no_grad():
            self._with_groups(sorted(narrowed.items()), self._opt.step, settings)
        self.layer_updates += len(layers)
        self.update_calls += 1
        for layer in layers:
            self._reset_grads(layer)

    def _reset_grads(self, layer):
        params, home = self._owned[self._order[layer]], self._grad_home[layer]
        if home is None:
            for p in params:  # the next backward starts from nothing
                p.grad = None
        else:  # ... in the layer's home array
            home.zero_()
            self._point_grads(params, self._views(layer, home))

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
        groups = self.param_groups
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
        home) shaped like it: made once, since the arrays live as long as the session."""
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
