# SPDX-License-Identifier: BSD-2-Clause
"""Python binding of libmercury (ctypes over libmercury.so).

    import mercury
    with mercury.Client() as m:
        m.job_declare(job=1, n_layers=50)
        m.send_tensor(sock, data, job=1, layer=3, direction=mercury.PUSH, iteration=7)

Errors raise mercury.MercuryError (an OSError with the daemon's reason).
"""
import ctypes
import os

PUSH = 0
PULL = 1
MAX_BATCH = 32

__all__ = ["Client", "MercuryError", "PUSH", "PULL", "MAX_BATCH"]


def _load_library(env, filename, soname):
    """ctypes handle of a Mercury library: $env, then build/<filename> of this checkout, then
    the installed soname through the dynamic loader."""
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.environ.get(env, ""), os.path.join(here, "..", "..", "build", filename)):
        if path and os.path.exists(path):
            return ctypes.CDLL(path, use_errno=True)
    try:
        return ctypes.CDLL(soname, use_errno=True)
    except OSError:
        raise ImportError("%s not found: build it with make, install it, or set %s"
                          % (filename, env)) from None


_lib = _load_library("MERCURY_LIB", "libmercury.so", "libmercury.so.1")


class _Tensor(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint64), ("layer", ctypes.c_uint32),
                ("dir", ctypes.c_uint32), ("iteration", ctypes.c_uint64)]


class _Stats(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint64 * 16), ("packets", ctypes.c_uint64 * 16)]


_lib.mercury_strerror.restype = ctypes.c_char_p
_lib.mercury_strerror.argtypes = [ctypes.c_int]
_lib.mercury_connect.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
_lib.mercury_disconnect.argtypes = [ctypes.c_void_p]
_lib.mercury_job_declare.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]
for _f in (_lib.mercury_iteration_begin, _lib.mercury_iteration_end):
    _f.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64]
_lib.mercury_register_socket.argtypes = [ctypes.c_void_p, ctypes.c_int]
_lib.mercury_tag_next.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32,
                                  ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
_lib.mercury_tag_batch.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                   ctypes.POINTER(_Tensor), ctypes.c_uint]
_lib.mercury_tag_range.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint32,
                                   ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64]
_lib.mercury_socket_stats.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(_Stats)]
_lib.mercury_send_tensor.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint64]
_lib.mercury_send_tensor.restype = ctypes.c_ssize_t
_lib.mercury_set_reconnect_timeout.argtypes = [ctypes.c_void_p, ctypes.c_int]
_lib.mercury_daemon_connected.argtypes = [ctypes.c_void_p]
_lib.mercury_use_fastpath.argtypes = [ctypes.c_void_p, ctypes.c_int]
_lib.mercury_fastpath_active.argtypes = [ctypes.c_void_p]
_lib.mercury_tag_counts.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                    ctypes.POINTER(ctypes.c_uint64)]


class MercuryError(OSError):
    """A negative return of libmercury, with mercury_strerror()'s message."""

    def __init__(self, rc, what):
        super().__init__(-rc, "%s: %s" % (what, _lib.mercury_strerror(rc).decode()))


def _check(rc, what):
    if rc < 0:
        raise MercuryError(rc, what)
    return rc


def _fd(sock):
    return sock if isinstance(sock, int) else sock.fileno()


def _buffer(data):
    """(object to keep alive, address, length) of data's bytes, without a copy where the
    buffer allows it (read-only buffers other than bytes are copied once)."""
    if isinstance(data, bytes):
        return data, ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p), len(data)
    view = memoryview(data).cast("B")
    if view.readonly:
        copy = bytes(view)
        return copy, ctypes.cast(ctypes.c_char_p(copy), ctypes.c_void_p), len(copy)
    arr = (ctypes.c_char * len(view)).from_buffer(view)
    return (view, arr), ctypes.cast(arr, ctypes.c_void_p), len(view)


class Client:
    """One connection to mercuryd; use one per thread for parallel requests."""

    def __init__(self, path=None):
        self._c = ctypes.c_void_p()
        _check(_lib.mercury_connect(path.encode() if path else None, ctypes.byref(self._c)),
               "connect to mercuryd")

    def close(self):
        if self._c:
            _lib.mercury_disconnect(self._c)
            self._c = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def set_reconnect_timeout(self, ms):
        """How long after the daemon's loss a call other than a tag or an iteration event
        waits for a restarted one (0: fail at once). Tags never wait: while the daemon is
        gone they raise at once (errno ECONNREFUSED or ENOENT) and the bytes go untagged."""
        _lib.mercury_set_reconnect_timeout(self._c, ms)

    def daemon_connected(self):
        """False while mercuryd is gone (the client looks for it every 100 ms)."""
        return bool(_lib.mercury_daemon_connected(self._c))

    def use_fastpath(self, on=True):
        """Whether tags may go through the kernel's tag fast path (default: yes)."""
        _lib.mercury_use_fastpath(self._c, 1 if on else 0)

    def fastpath_active(self):
        """True while tags go through the fast path (False: through the daemon)."""
        return bool(_lib.mercury_fastpath_active(self._c))

    def tag_counts(self):
        """(through the fast path, through the daemon): tags this client has made so far."""
        fast, service = ctypes.c_uint64(), ctypes.c_uint64()
        _lib.mercury_tag_counts(self._c, ctypes.byref(fast), ctypes.byref(service))
        return fast.value, service.value

    def job_declare(self, job, n_layers, weight=1):
        _check(_lib.mercury_job_declare(self._c, job, n_layers, weight), "job_declare")

    def iteration_begin(self, job, iteration):
        _check(_lib.mercury_iteration_begin(self._c, job, iteration), "iteration_begin")

    def iteration_end(self, job, iteration):
        _check(_lib.mercury_iteration_end(self._c, job, iteration), "iteration_end")

    def register_socket(self, sock):
        _check(_lib.mercury_register_socket(self._c, _fd(sock)), "register_socket")

    def tag_next(self, sock, job, layer, direction, iteration, length):
        _check(_lib.mercury_tag_next(self._c, _fd(sock), job, layer, direction, iteration, length),
               "tag_next")

    def tag_batch(self, sock, job, tensors):
        """tensors: list of (length, layer, direction, iteration), written back to back."""
        if not 0 < len(tensors) <= MAX_BATCH:
            raise ValueError("a batch holds 1 to %d tensors" % MAX_BATCH)
        arr = (_Tensor * len(tensors))(*[_Tensor(*t) for t in tensors])
        _check(_lib.mercury_tag_batch(self._c, _fd(sock), job, arr, len(tensors)), "tag_batch")

    def tag_range(self, sock, job, layer, direction, iteration, offset, length):
        _check(_lib.mercury_tag_range(self._c, _fd(sock), job, layer, direction, iteration,
                                      offset, length), "tag_range")

    def send_tensor(self, sock, data, job, layer, direction, iteration):
        """Tags the bytes of data (bytes or any contiguous buffer: bytearray, memoryview,
        numpy array), then sends all of them, in one call into libmercury that runs without
        the GIL and does not copy data. Returns the byte count."""
        keep, ptr, size = _buffer(data)
        n = _lib.mercury_send_tensor(self._c, _fd(sock), ptr, size, job, layer, direction,
                                     iteration)
        del keep
        return _check(n, "send_tensor")

    def socket_stats(self, sock):
        """{band: bytes} of what the classifier put in each band for this socket."""
        st = _Stats()
        _check(_lib.mercury_socket_stats(self._c, _fd(sock), ctypes.byref(st)), "socket_stats")
        return {b: st.bytes[b] for b in range(16) if st.bytes[b]}
