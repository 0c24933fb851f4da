# SPDX-License-Identifier: BSD-2-Clause
"""Python binding of libmercury-ps (include/mercury_ps.h): the worker side of Mercury's
reference parameter server. mercury.torch drives it; any framework can.

    from mercury.ps import ParameterServer
    ps = ParameterServer(rank, nodes, hosts, layer_params, mode="mercury")
    ps.push(layer, iteration, address)        # address of layer_params[layer] float32s
    ps.wait_pull(layer, iteration, address)   # blocks without the GIL; the sum lands there
    ps.close()

job and weight name the training job towards mercuryd (ids are per user: two jobs of one user
on a node need different ids; weight 1..1000, a job of weight w yields floor(log2(w_max / w))
bands to the heaviest job); job_band >= 0 (fifo, partition) tags every byte of the job at that
one band instead: per-job priority.

With external_servers=True every node's share is served by a `mercury-ps serve` process
(start_server() starts one for this node with the matching layout) instead of this one.

Buffers are passed by address (e.g. torch's tensor.data_ptr() of a contiguous float32 CPU
tensor) so nothing is copied in Python; every call into the library releases the GIL.
"""
import ctypes
import os
import shutil
import subprocess

from . import _load_library

MODES = {"fifo": 0, "partition": 1, "mercury": 2}
PLACEMENTS = {"hash": 0, "balanced": 1}
# rcvbuf's default (MERCURY_PS_RCVBUF_AUTO): the kernel's autotuning up to 2 nodes, 16384 up to
# 4, then 65536 / nodes, at least 8192 (docs/fabric.md)
RCVBUF_AUTO = -1

__all__ = ["ParameterServer", "PSError", "MODES", "PLACEMENTS", "start_server"]


_lib = _load_library("MERCURY_PS_LIB", "libmercury-ps.so", "libmercury-ps.so.1")


class _Options(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("rank", ctypes.c_int), ("nodes", ctypes.c_int),
                ("hosts", ctypes.POINTER(ctypes.c_char_p)),
                ("layer_params", ctypes.POINTER(ctypes.c_uint64)), ("nlayers", ctypes.c_int),
                ("mode", ctypes.c_int), ("conns", ctypes.c_int), ("bands", ctypes.c_int),
                ("part", ctypes.c_uint64), ("credit", ctypes.c_uint64),
                ("bound", ctypes.c_uint64), ("timeout_s", ctypes.c_double),
                ("timeline", ctypes.c_char_p), ("external_servers", ctypes.c_int),
                ("colocated_tcp", ctypes.c_int), ("placement", ctypes.c_int),
                ("job", ctypes.c_uint32), ("weight", ctypes.c_uint32),
                ("job_band", ctypes.c_int), ("rcvbuf", ctypes.c_int),
                ("dscp_queues", ctypes.c_int), ("pulls_alike", ctypes.c_int)]

MAX_WEIGHT = 1000  # include/mercury_wire.h MW_MAX_WEIGHT


_lib.mercury_ps_open.argtypes = [ctypes.POINTER(_Options), ctypes.POINTER(ctypes.c_void_p),
                                 ctypes.c_char_p, ctypes.c_size_t]
_lib.mercury_ps_push.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p]
_lib.mercury_ps_push_inplace.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                                         ctypes.c_void_p, ctypes.c_void_p]
_lib.mercury_ps_wait_pull.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                                      ctypes.c_void_p]
_lib.mercury_ps_pull_ready.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
_lib.mercury_ps_error.argtypes = [ctypes.c_void_p]
_lib.mercury_ps_error.restype = ctypes.c_char_p
_lib.mercury_ps_tagged.argtypes = [ctypes.c_void_p]
_lib.mercury_ps_tag_counts.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                       ctypes.POINTER(ctypes.c_uint64)]
_lib.mercury_ps_close.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]


def _check_choices(mode, placement, job=1, weight=1, job_band=-1):
    """The library's and `mercury-ps serve`'s options alike: a clear error, not a bad index."""
    for what, value, table in (("mode", mode, MODES), ("placement", placement, PLACEMENTS)):
        if value not in table:
            raise ValueError("%s must be one of %s" % (what, ", ".join(table)))
    for what, value, lo, hi in (("job", job, 1, 2**32 - 1), ("weight", weight, 1, MAX_WEIGHT),
                                ("job_band", job_band, -1, 13)):
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ValueError("%s must be an integer %d..%d, not %r" % (what, lo, hi, value))
    if job_band >= 0 and mode == "mercury":
        raise ValueError("job_band (per-job priority) is for mode fifo or partition; mercury "
                         "mode tags by layer")


def _check_pulls_below(pulls_below):
    """pulls_below: True (the default) tags each pull one layer group below its layer, so a
    layer's pushes go first; False ranks them alike (mercury-ps --pulls-alike)."""
    if not isinstance(pulls_below, bool):
        raise ValueError("pulls_below must be True or False, not %r" % (pulls_below,))


def _check_dscp_queues(dscp_queues):
    """dscp_queues: 0 (off) or the switch ports' strict-priority queues (2..16)."""
    if isinstance(dscp_queues, bool) or not isinstance(dscp_queues, int) or \
            not 0 <= dscp_queues <= 16:
        raise ValueError("dscp_queues must be an integer 0..16, not %r" % (dscp_queues,))


def _check_rcvbuf(rcvbuf):
    """rcvbuf: RCVBUF_AUTO (-1, by the node count), 0 (autotuning) or bytes up to 64 MiB."""
    if isinstance(rcvbuf, bool) or not isinstance(rcvbuf, int) or \
            not RCVBUF_AUTO <= rcvbuf <= 64 << 20:
        raise ValueError("rcvbuf %r: give -1 (by the node count), 0 (autotuning) or up to %d "
                         "bytes" % (rcvbuf, 64 << 20))


class PSError(OSError):
    """A failed parameter-server call, with the library's reason."""


class ParameterServer:
    """This process's node: a share of the model's tensors served here, and a worker."""

    def __init__(self, rank, nodes, hosts, layer_params, mode="mercury", conns=4, bands=8,
                 part=1000000, credit=4000000, bound=1000000, timeout=60.0, timeline=None,
                 external_servers=False, colocated_tcp=False, placement="hash", job=1,
                 weight=1, job_band=-1, rcvbuf=RCVBUF_AUTO, dscp_queues=0, pulls_below=True):
        _check_choices(mode, placement, job, weight, job_band)
        _check_rcvbuf(rcvbuf)
        _check_dscp_queues(dscp_queues)
        _check_pulls_below(pulls_below)
        if len(hosts) != nodes:
            raise ValueError("%d hosts for %d nodes" % (len(hosts), nodes))
        self.layer_params = list(layer_params)
        self._hosts = (ctypes.c_char_p * nodes)(*[h.encode() for h in hosts])
        self._params = (ctypes.c_uint64 * len(self.layer_params))(*self.layer_params)
        opts = _Options(ctypes.sizeof(_Options), rank, nodes, self._hosts, self._params,
                        len(self.layer_params), MODES[mode], conns, bands, part, credit, bound, float(timeout),
                        timeline.encode() if timeline else None, int(external_servers),
                        int(colocated_tcp), PLACEMENTS[placement], job, weight, job_band,
                        int(rcvbuf), int(dscp_queues), int(not pulls_below))
        self._ps = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        rc = _lib.mercury_ps_open(ctypes.byref(opts), ctypes.byref(self._ps), err, len(err))
        if rc < 0:
            raise PSError(-rc, "mercury-ps open: %s" % (err.value.decode() or os.strerror(-rc)))

    def _check(self, rc, what):
        if rc < 0:
            why = _lib.mercury_ps_error(self._ps) if self._ps else None
            raise PSError(-rc, "mercury-ps %s: %s" % (what, why.decode() if why else os.strerror(-rc)))

    def push(self, layer, iteration, address):
        """Queues layer's gradient (copied before this returns)."""
        self._check(_lib.mercury_ps_push(self._ps, layer, iteration, address),
                    "pushing layer %d's gradient of iteration %d" % (layer, iteration))

    def push_inplace(self, layer, iteration, address, out):
        """Queues layer's gradient without copying it: the memory at address is read where it
        is and the sum lands at out; neither may change until wait_pull(layer, iteration,
        out) has returned."""
        self._check(_lib.mercury_ps_push_inplace(self._ps, layer, iteration, address, out),
                    "pushing layer %d's gradient of iteration %d" % (layer, iteration))

    def wait_pull(self, layer, iteration, address):
        """Blocks until layer's sum over every worker for iteration is at address."""
        self._check(_lib.mercury_ps_wait_pull(self._ps, layer, iteration, address),
                    "waiting for layer %d's aggregate of iteration %d" % (layer, iteration))

    def pull_ready(self, layer, iteration):
        """True when wait_pull(layer, iteration, ...) would return at once (the sum is
        here, or the session failed and it would raise)."""
        rc = _lib.mercury_ps_pull_ready(self._ps, layer, iteration)
        self._check(rc, "asking for layer %d's aggregate of iteration %d" % (layer, iteration))
        return rc == 1

    @property
    def tagged(self):
        """True when mercury mode's tags reach mercuryd."""
        return bool(self._ps) and bool(_lib.mercury_ps_tagged(self._ps))

    def tag_counts(self):
        """(through mercuryd's fast path, through its service): tags made so far."""
        if not self._ps:
            return 0, 0
        fast, service = ctypes.c_uint64(), ctypes.c_uint64()
        _lib.mercury_ps_tag_counts(self._ps, ctypes.byref(fast), ctypes.byref(service))
        return fast.value, service.value

    def close(self):
        """Waits for every worker to finish (this node serves them), then frees."""
        if not self._ps:
            return
        err = ctypes.create_string_buffer(512)
        ps, self._ps = self._ps, ctypes.c_void_p()
        rc = _lib.mercury_ps_close(ps, err, len(err))
        if rc < 0:
            raise PSError(-rc, "mercury-ps close: %s" % (err.value.decode() or os.strerror(-rc)))


def _server_binary():
    """mercury-ps: $MERCURY_PS_BIN, then build/ of this checkout, then PATH."""
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.environ.get("MERCURY_PS_BIN", ""),
                 os.path.join(here, "..", "..", "build", "mercury-ps"),
                 shutil.which("mercury-ps") or ""):
        if path and os.access(path, os.X_OK):
            return path
    raise PSError(2, "mercury-ps not found: build it with make, install it, or set "
                  "MERCURY_PS_BIN")


def start_server(rank, nodes, hosts, layer_params, mode="mercury", conns=4, bands=8,
                 part=1000000, credit=4000000, bound=1000000, timeout=60.0, jobs=1,
                 placement="hash", job=1, weight=1, job_band=-1, rcvbuf=RCVBUF_AUTO,
                 dscp_queues=0, pulls_below=True):
    """Starts `mercury-ps serve` for node rank with the layout a ParameterServer of the same
    arguments (and external_servers=True) expects; it listens on hosts[rank] and exits after
    `jobs` jobs (0: until terminated), or when the thread that started it ends (call it from
    the main thread). Its errors go to this process's stderr. Returns the subprocess.Popen."""
    _check_choices(mode, placement, job, weight, job_band)
    _check_rcvbuf(rcvbuf)
    _check_dscp_queues(dscp_queues)
    _check_pulls_below(pulls_below)
    cmd = [_server_binary(), "serve", "--layers", ",".join(str(int(n)) for n in layer_params),
           "--mode", mode, "--nodes", str(nodes), "--rank", str(rank), "--hosts", ",".join(hosts),
           "--conns", str(conns), "--bands", str(bands), "--part", str(part), "--credit",
           str(credit), "--bound", str(bound), "--timeout", str(timeout), "--jobs", str(jobs),
           "--placement", placement, "--job", str(job), "--weight", str(weight),
           "--dscp-queues", str(dscp_queues), "--exit-with-parent"] + \
        (["--job-band", str(job_band)] if job_band >= 0 else []) + \
        (["--rcvbuf", str(int(rcvbuf))] if int(rcvbuf) >= 0 else []) + \
        ([] if pulls_below else ["--pulls-alike"])
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
