# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The object API over libxferk (see the package README for the rules).

Memory reuse, in one paragraph: the memory of an op may be reused or freed
only once a snapshot of the op says ``buffer_reusable`` (the op is
physically complete: ``SUCCEEDED``, ``FAILED``, ``DRAINED``, or
``TIMED_OUT`` with every work request terminal; never ``QUARANTINED``).
The kernel keeps the pages pinned until then whatever the process does, but
the Python object that owns them could be freed and its memory handed to
other objects. So this package keeps a reference to every registered
object for as long as an op may still touch it, and refuses (raises
:class:`QuarantinedError`, changes nothing) to deregister a region, release
an op or close a device while one of their ops is not ``buffer_reusable``.
"""
import asyncio
import ctypes
import errno as _errno
import enum
import os
import threading

from . import _cuda
from . import _lib as L
from ._lib import lib

try:
    import numpy as _np
except ImportError:  # numpy is optional
    _np = None


# --- enums ------------------------------------------------------------------

class State(enum.IntEnum):
    """enum xferk_op_state (Documentation/lifecycle.md)."""
    SUBMITTED = 0
    IN_PROGRESS = 1
    SUCCEEDED = 2
    FAILED = 3
    TIMED_OUT = 4
    CANCEL_REQUESTED = 5
    DRAINING = 6
    DRAINED = 7
    QUARANTINED = 8


class Feature(enum.IntFlag):
    INFO = L.FEAT_INFO
    DATAPATH = L.FEAT_DATAPATH
    NULL_PEER = L.FEAT_NULL_PEER
    CANCEL = L.FEAT_CANCEL
    URING = L.FEAT_URING
    QUEUE = L.FEAT_QUEUE
    SESSIONS = L.FEAT_SESSIONS
    WINDOWS = L.FEAT_WINDOWS
    GROUPS = L.FEAT_GROUPS
    NOTIFY = L.FEAT_NOTIFY
    RAILS = L.FEAT_RAILS
    QPS = L.FEAT_QPS
    DMABUF = L.FEAT_DMABUF
    POLL = L.FEAT_POLL
    WINDOW_EDGES = L.FEAT_WINDOW_EDGES


class Access(enum.IntFlag):
    LOCAL_SRC = L.ACCESS_LOCAL_SRC
    LOCAL_DST = L.ACCESS_LOCAL_DST
    REMOTE_READ = L.ACCESS_REMOTE_READ
    REMOTE_WRITE = L.ACCESS_REMOTE_WRITE
    ALL = L.ACCESS_ALL


class Failure(enum.IntEnum):
    NONE = L.FAILURE_NONE
    OWN = L.FAILURE_OWN
    PATH = L.FAILURE_PATH
    DEADLINE = L.FAILURE_DEADLINE
    CANCEL = L.FAILURE_CANCEL


class ConnState(enum.IntEnum):
    CONNECTING = L.CONN_STATE_CONNECTING
    UP = L.CONN_STATE_UP
    RECONNECTING = L.CONN_STATE_RECONNECTING
    DOWN = L.CONN_STATE_DOWN


class EventType(enum.IntEnum):
    DATA = L.EVENT_DATA
    NOTE = L.EVENT_NOTE
    ABORTED = L.EVENT_ABORTED


READ = L.OP_READ
WRITE = L.OP_WRITE


# --- errors -----------------------------------------------------------------

class XferkError(OSError):
    """A libxferk call failed: ``errno`` is the positive errno the library
    returned (negated). For calls on an op or a group, ``snapshot`` is the
    snapshot the call filled (or None) and ``state`` its state."""

    def __init__(self, err, what, snapshot=None):
        msg = f"{what}: {os.strerror(err)}"
        if snapshot is not None:
            msg += f" (state {snapshot.state_name})"
        super().__init__(err, msg)
        self.snapshot = snapshot
        self._what = what

    def __reduce__(self):  # picklable (multiprocessing), class kept
        return (type(self), (self.errno, self._what, self.snapshot))

    @property
    def state(self):
        return None if self.snapshot is None else self.snapshot.state

    @property
    def buffer_reusable(self):
        """True, False, or None when the error concerns no op."""
        s = self.snapshot
        return None if s is None else bool(s.buffer_reusable)


class WaitTimeout(XferkError, TimeoutError):
    """A wait reached its deadline (ETIMEDOUT) before the op or group showed
    what was waited for. Nothing was cancelled; ``snapshot`` says where it
    is."""


class TransferError(XferkError):
    """An op settled without succeeding: ``errno`` is its ``first_error``.
    ``snapshot.buffer_reusable`` says whether its memory may be reused."""


class QuarantinedError(XferkError):
    """Memory is not reusable: an op (or group) may still touch it.

    Raised when a cancel/abort leaves an op ``QUARANTINED`` at its drain
    deadline (errno ETIMEDOUT, as libxferk returns), when
    ``xferk_transfer_sync()`` returns ``XFERK_COMPLETION_UNKNOWN``, and
    when this package refuses to deregister a region, release an op or
    close a device whose op is not ``buffer_reusable`` (errno EBUSY; nothing
    was changed: the region stays registered, the pin stays)."""


def _check(ret, what, snapshot=None, cls=XferkError):
    if ret < 0:
        raise cls(-ret, what, snapshot)
    return ret


def now_ns():
    """CLOCK_MONOTONIC in ns, the clock of every deadline (xferk_now_ns())."""
    return lib().now_ns()


def state_name(state):
    return lib().state_name(int(state)).decode()


def _deadline(timeout=None, deadline_ns=None):
    """An absolute deadline from a relative timeout in seconds (None: none)."""
    if deadline_ns is not None:
        return int(deadline_ns)
    if timeout is None:
        return L.DEADLINE_NONE
    return now_ns() + max(0, int(timeout * 1e9))


# --- snapshots ----------------------------------------------------------------

class Snapshot:
    """An op as xferk_query()/xferk_wait()/xferk_cancel_drain() saw it
    (struct xferk_op_snapshot). ``buffer_reusable`` is the only thing that
    allows reusing or freeing the op's memory."""

    __slots__ = [f for f, _ in L.OpSnapshot._fields_ if f != "reserved"]

    def __init__(self, raw):
        for f in self.__slots__:
            setattr(self, f, getattr(raw, f))
        self.state = State(self.state)
        self.failure = Failure(self.failure) if self.failure < 5 else self.failure
        self.physical_complete = bool(self.physical_complete)
        self.buffer_reusable = bool(self.buffer_reusable)

    @property
    def state_name(self):
        return self.state.name

    @property
    def succeeded(self):
        return self.state == State.SUCCEEDED

    @property
    def settled(self):
        return self.state not in (State.SUBMITTED, State.IN_PROGRESS)

    def as_dict(self):
        return {f: getattr(self, f) for f in self.__slots__}

    def __repr__(self):
        return (f"<Snapshot {self.state.name} err={self.first_error} "
                f"{self.transferred_bytes}/{self.total_bytes} B "
                f"reusable={self.buffer_reusable}>")


class GroupSnapshot:
    """struct xferk_group_snapshot: the sum of every op that joined."""

    __slots__ = [f for f, _ in L.GroupSnapshot._fields_ if f != "reserved"]

    def __init__(self, raw):
        for f in self.__slots__:
            setattr(self, f, getattr(raw, f))
        self.ops_in_state = {State(i): self.ops_in_state[i]
                             for i in range(len(State))}
        self.aborted = bool(self.aborted)

    @property
    def buffer_reusable(self):
        """Every op of the group is physically complete."""
        return self.ops_physical == self.ops

    @property
    def state_name(self):  # for XferkError's message
        return f"{self.ops_physical}/{self.ops} ops physical"

    @property
    def state(self):
        return None

    def __repr__(self):
        return (f"<GroupSnapshot ops={self.ops} physical={self.ops_physical} "
                f"aborted={self.aborted} err={self.first_error}>")


# --- tokens -----------------------------------------------------------------

class Token(bytes):
    """An export token: 64 opaque bytes (a bearer capability: keep it
    secret). A ``bytes``: it pickles, goes through a multiprocessing pipe or
    a socket as is. ``str(token)`` / :meth:`parse` are the 128-hex-digit text
    form of xferk_token_format()/xferk_token_parse()."""

    def __new__(cls, data):
        data = bytes(data)
        if len(data) != L.TOKEN_SIZE:
            raise ValueError(f"a token is {L.TOKEN_SIZE} bytes, not {len(data)}")
        return super().__new__(cls, data)

    @classmethod
    def _from_c(cls, tok):
        return cls(bytes(tok.bytes))

    def _to_c(self):
        t = L.Token()
        ctypes.memmove(t.bytes, self, L.TOKEN_SIZE)
        return t

    def __str__(self):
        buf = ctypes.create_string_buffer(L.TOKEN_HEX_LEN)
        _check(lib().token_format(ctypes.byref(self._to_c()), buf,
                                  len(buf)), "xferk_token_format")
        return buf.value.decode()

    def __repr__(self):
        return f"Token('{str(self)[:16]}...')"

    @classmethod
    def parse(cls, text):
        t = L.Token()
        if isinstance(text, str):
            text = text.encode()
        _check(lib().token_parse(text.strip(), ctypes.byref(t)),
               "xferk_token_parse")
        return cls._from_c(t)

    def __reduce__(self):
        return (Token, (bytes(self),))


# --- memory -------------------------------------------------------------------

def _buffer_of(obj):
    """(address, nbytes, keepalive) of obj's memory, without copying."""
    if hasattr(obj, "data_ptr") and (hasattr(obj, "nbytes") or
                                     hasattr(obj, "element_size")):
        # torch.Tensor and friends (data_ptr() and nbytes, or
        # element_size() * numel()): CPU and contiguous only.
        dev = getattr(obj, "device", None)
        if dev is not None and getattr(dev, "type", "cpu") != "cpu":
            raise TypeError(f"only CPU memory can be registered, not {dev}")
        contig = getattr(obj, "is_contiguous", None)
        if contig is not None and not contig():
            raise TypeError("a tensor must be contiguous to be registered")
        n = getattr(obj, "nbytes", None)
        if n is None:  # torch before 1.13 has no Tensor.nbytes
            n = obj.element_size() * obj.numel()
        return int(obj.data_ptr()), int(n), obj
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError(f"{type(obj).__name__} exposes neither the buffer "
                        "protocol nor data_ptr()/nbytes") from None
    if mv.readonly:
        raise TypeError("the buffer is read-only: register a writable "
                        "buffer (or use Region.from_address())")
    if not mv.c_contiguous:
        raise TypeError("the buffer is not C-contiguous")
    n = mv.nbytes
    # A ctypes array over the buffer holds the buffer export: a bytearray
    # cannot be resized (and so not moved) while it is registered.
    arr = (ctypes.c_char * n).from_buffer(mv.cast("B")) if n else None
    addr = ctypes.addressof(arr) if n else 0
    return addr, n, (obj, mv, arr)


class _Handle:
    """Something with a handle on a Device, closed once."""
    _kind = "handle"

    def __init__(self, device, handle):
        self.device = device
        self.handle = handle
        self.closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _live(self):
        if self.closed:
            raise XferkError(_errno.EBADF, f"{self._kind} is closed")
        self.device._live()
        return self.device._x

    def __repr__(self):
        st = " closed" if self.closed else ""
        return f"<{type(self).__name__} {self.handle:#x}{st}>"


class Region(_Handle):
    """Registered (pinned) memory: xferk_mr_reg(); or a range of a dma-buf
    (``dmabuf`` True: xferk_mr_reg_dmabuf(), GPU memory among others).

    Holds a reference to the registered object for as long as the region is
    registered, and after that for as long as an op may still touch it:
    the object cannot be freed under a transfer. ``close()`` (and leaving a
    ``with`` block) deregisters it only if every op of this Device that
    uses it is ``buffer_reusable``; otherwise it raises
    :class:`QuarantinedError` and keeps the region registered and the
    object referenced (wait for the op with ``physical=True`` or cancel it,
    then close again). Deregistering revokes the region's exports at once
    (xferk_mr_dereg())."""
    _kind = "region"

    def __init__(self, device, addr, nbytes, access, keepalive,
                 dmabuf=None):
        """dmabuf: (fd, offset) of a dma-buf range to register instead of
        memory at addr (which then only names it: a device pointer)."""
        mr = ctypes.c_uint64()
        if dmabuf is None:
            _check(lib().mr_reg(device._live(), addr, nbytes, int(access),
                                ctypes.byref(mr)), "xferk_mr_reg")
        else:
            if lib().mr_reg_dmabuf is None:
                raise XferkError(_errno.EOPNOTSUPP, "xferk_mr_reg_dmabuf")
            _check(lib().mr_reg_dmabuf(device._live(), dmabuf[0], dmabuf[1],
                                       nbytes, int(access), ctypes.byref(mr)),
                   "xferk_mr_reg_dmabuf")
        super().__init__(device, mr.value)
        self.dmabuf = dmabuf is not None
        self.addr = addr
        self.nbytes = nbytes
        self.access = Access(int(access))
        self.obj = keepalive
        self.exports = []
        device._track_region(self)

    def __len__(self):
        return self.nbytes

    def _busy_ops(self):
        """This device's unreleased ops on this region that are not
        buffer_reusable (each queried)."""
        return [op for op in self.device._ops_using(self)
                if not op.buffer_reusable]

    def close(self):
        if self.closed:
            return
        busy = self._busy_ops()
        if busy:
            raise QuarantinedError(
                _errno.EBUSY,
                f"region {self.handle:#x}: op {busy[0].handle:#x} may still "
                "touch it (not buffer_reusable); it stays registered",
                busy[0]._last)
        if not self.device.closed:
            _check(lib().mr_dereg(self.device._x, self.handle),
                   "xferk_mr_dereg")
        self._forget()

    def _forget(self):
        self.closed = True
        for e in self.exports:
            e.closed = True
        self.device._untrack_region(self)
        if self.device._taints(self):
            _IMMORTAL.append(self.obj)  # an orphaned op may still touch it
        self.obj = None

    def export(self, conn, offset=0, length=None, access=None):
        """xferk_export(): expose [offset, offset+length) to conn's peer."""
        return Export(self, conn, offset, length, access)

    def window(self, conn, blocks, access=None):
        """xferk_window_open_gen(): blocks ((offset, len) pairs, page
        aligned; or an Nx2 uint64 numpy array) as one remote range."""
        return Window(self, conn, blocks, access)


_IMMORTAL = []  # objects an op released without completion may still touch


class Export(_Handle):
    """An export of part of a region: ``token`` goes to the peer.
    ``close()`` revokes at once (xferk_unexport()); ``close_safely()`` asks
    the peer first (xferk_window_close()) and returns (how, ack_ns)."""
    _kind = "export"

    def __init__(self, region, conn, offset=0, length=None, access=None,
                 _handle=None, _token=None):
        if _handle is None:
            length = region.nbytes - offset if length is None else length
            if access is None:
                access = region.access & (Access.REMOTE_READ |
                                          Access.REMOTE_WRITE)
            tok, h = L.Token(), ctypes.c_uint64()
            _check(lib().export(region._live(), conn.handle, region.handle,
                                offset, length, int(access), ctypes.byref(tok),
                                ctypes.byref(h)), "xferk_export")
            _handle, _token = h.value, Token._from_c(tok)
        super().__init__(region.device, _handle)
        self.region = region
        self.token = _token
        self.offset = offset
        self.length = length
        region.exports.append(self)

    def close(self):
        if self.closed:
            return
        if not self.device.closed:
            _check(lib().unexport(self.device._x, self.handle),
                   "xferk_unexport")
        self.closed = True

    def close_safely(self, timeout=5.0, deadline_ns=None):
        """Revoke cooperatively: when this returns no remote access through
        the key can happen any more. Returns (CLOSE_COOPERATIVE or
        CLOSE_FORCED, ack_ns)."""
        x = self._live()
        fn = lib().window_close
        if fn is None:
            raise XferkError(_errno.EOPNOTSUPP, "xferk_window_close")
        how, ack = ctypes.c_uint32(), ctypes.c_uint64()
        self.closed = True  # the handle is gone whatever the result
        _check(fn(x, self.handle, _deadline(timeout, deadline_ns),
                  ctypes.byref(how), ctypes.byref(ack)), "xferk_window_close")
        return how.value, ack.value


class Window(Export):
    """A window (XFERK_FEAT_WINDOWS): blocks of a region, page-aligned where
    two meet (XFERK_FEAT_WINDOW_EDGES), seen by the peer as one range of
    ``length`` bytes. An export handle."""
    _kind = "window"

    def __init__(self, region, conn, blocks, access=None):
        if access is None:
            access = region.access & (Access.REMOTE_READ | Access.REMOTE_WRITE)
        if _np is not None and isinstance(blocks, _np.ndarray):
            arr = _np.ascontiguousarray(blocks, dtype=_np.uint64).reshape(-1, 2)
            n, ptr, keep = len(arr), arr.ctypes.data, arr
        else:
            blocks = list(blocks)
            keep = (L.Block * max(1, len(blocks)))(*blocks)
            n, ptr = len(blocks), ctypes.addressof(keep)
        tok, h, ln, gen = L.Token(), ctypes.c_uint64(), ctypes.c_uint64(), \
            ctypes.c_uint64()
        x = region._live()
        if lib().window_open_gen is not None:
            ret = lib().window_open_gen(x, conn.handle, region.handle, ptr, n,
                                        int(access), ctypes.byref(tok),
                                        ctypes.byref(h), ctypes.byref(ln),
                                        ctypes.byref(gen))
        elif lib().window_open is not None:
            ret = lib().window_open(x, conn.handle, region.handle, ptr, n,
                                    int(access), ctypes.byref(tok),
                                    ctypes.byref(h), ctypes.byref(ln))
        else:
            ret = -_errno.EOPNOTSUPP
        del keep
        _check(ret, "xferk_window_open")
        super().__init__(region, conn, 0, ln.value, access, h.value,
                         Token._from_c(tok))
        self.generation = gen.value


class Connection(_Handle):
    """A handle to the host-wide connection to a peer's xferk listener
    (xferk_connect()); there is no listen/accept in the C API: the module
    listens on its listen_port for every process. ``close()``:
    xferk_disconnect()."""
    _kind = "connection"

    def close(self):
        if self.closed:
            return
        if not self.device.closed:
            _check(lib().disconnect(self.device._x, self.handle),
                   "xferk_disconnect")
        self.closed = True

    def info(self):
        """xferk_conn_query() as a dict; ``state`` is a ConnState."""
        fn = lib().conn_query
        if fn is None:
            raise XferkError(_errno.EOPNOTSUPP, "xferk_conn_query")
        ci = L.ConnInfo()
        _check(fn(self._live(), self.handle, ctypes.byref(ci)),
               "xferk_conn_query")
        d = {f: getattr(ci, f) for f, _ in L.ConnInfo._fields_
             if not f.startswith("reserved")}
        d["state"] = ConnState(d["state"])
        return d

    def export(self, region, offset=0, length=None, access=None):
        return Export(region, self, offset, length, access)

    def import_token(self, token):
        """xferk_import(): a remote handle for fragments."""
        return Import(self, Token(token))


class Import(_Handle):
    """A remote range (xferk_import()); ``close()``: xferk_unimport()."""
    _kind = "import"

    def __init__(self, conn, token):
        r = ctypes.c_uint64()
        _check(lib().import_(conn._live(), conn.handle,
                             ctypes.byref(token._to_c()), ctypes.byref(r)),
               "xferk_import")
        super().__init__(conn.device, r.value)
        self.connection = conn
        self.token = token

    def close(self):
        if self.closed:
            return
        if not self.device.closed:
            _check(lib().unimport(self.device._x, self.handle),
                   "xferk_unimport")
        self.closed = True

    def add_rail(self, conn, token):
        """xferk_import_rail(): the same bytes through another session
        (``conn``, over another RDMA device) become one more rail of this
        handle; its transfers are striped over the rails."""
        fn = lib().import_rail
        if fn is None:
            raise XferkError(_errno.EOPNOTSUPP, "xferk_import_rail")
        _check(fn(self._live(), conn.handle,
                  ctypes.byref(Token(token)._to_c()), self.handle),
               "xferk_import_rail")

    def notify(self, tag):
        """xferk_notify(): an XFERK_EVENT_NOTE with tag for the exporter."""
        fn = lib().notify
        if fn is None:
            raise XferkError(_errno.EOPNOTSUPP, "xferk_notify")
        _check(fn(self._live(), self.handle, tag), "xferk_notify")


# --- fragments ------------------------------------------------------------------

if _np is not None:
    FRAG_DTYPE = _np.dtype([("mr", "<u8"), ("offset", "<u8"), ("len", "<u8"),
                            ("remote", "<u8"), ("remote_offset", "<u8"),
                            ("opcode", "<u4"), ("reserved", "<u4")])
    assert FRAG_DTYPE.itemsize == ctypes.sizeof(L.Frag)
else:
    FRAG_DTYPE = None

# Field names a structured fragment array may use for its three columns.
_COLS = (("local_off", "offset", "local_offset"),
         ("remote_off", "remote_offset"),
         ("len", "length", "nbytes"))


def _field(arr, names):
    for n in names:
        if n in arr.dtype.names:
            return arr[n]
    raise ValueError(f"fragment array has no field {names[0]!r} "
                     f"(fields: {arr.dtype.names})")


def _remote_handle(remote):
    """An Import's handle (EBADF once it is closed), or a raw handle."""
    if isinstance(remote, int):
        return remote
    if remote.closed:
        raise XferkError(_errno.EBADF, f"{remote._kind} is closed")
    return remote.handle


def _frags(region, remote, frags, opcode):
    """(pointer, count, keepalive) of a struct xferk_frag array built from
    (local_off, remote_off, len) triples of one region and one remote.

    A numpy array (Nx3 unsigned, or a structured array with fields
    local_off/remote_off/len) is converted with whole-array operations, no
    Python object per fragment; otherwise an iterable of 3-tuples."""
    region._live()
    mr = region.handle
    rh = _remote_handle(remote)
    if _np is not None and isinstance(frags, _np.ndarray):
        if frags.dtype.names:
            cols = [_field(frags, n) for n in _COLS]
        else:
            if frags.ndim != 2 or frags.shape[1] != 3:
                raise ValueError("a fragment array is Nx3 (local_off, "
                                 "remote_off, len) or structured")
            if frags.dtype.kind not in "ui":
                raise TypeError("fragment offsets and lengths are integers")
            cols = [frags[:, 0], frags[:, 1], frags[:, 2]]
        for c in cols:
            if c.dtype.kind == "i" and c.size and c.min() < 0:
                raise ValueError("negative fragment offset or length")
        out = _np.zeros(len(cols[0]), dtype=FRAG_DTYPE)
        out["mr"] = mr
        out["offset"] = cols[0]
        out["remote_offset"] = cols[1]
        out["len"] = cols[2]
        out["remote"] = rh
        out["opcode"] = opcode
        return out.ctypes.data, len(out), out
    items = list(frags)
    arr = (L.Frag * max(1, len(items)))()
    for i, (lo, ro, ln) in enumerate(items):
        arr[i] = L.Frag(mr, lo, ln, rh, ro, opcode, 0)
    return ctypes.addressof(arr), len(items), arr


def _general_frags(frags, device):
    """Fragments of several regions/remotes: tuples (region, local_off,
    len, remote, remote_off, opcode). Returns (ptr, n, keep, regions)."""
    items = list(frags)
    arr = (L.Frag * max(1, len(items)))()
    regions = []
    for i, (reg, lo, ln, rem, ro, opc) in enumerate(items):
        if not isinstance(reg, Region) or reg.device is not device:
            raise TypeError("a fragment's first item is a Region of this "
                            "Device")
        if reg not in regions:
            regions.append(reg)
        reg._live()
        arr[i] = L.Frag(reg.handle, lo, ln, _remote_handle(rem), ro, int(opc),
                        0)
    return ctypes.addressof(arr), len(items), arr, regions


# --- ops ----------------------------------------------------------------------

class Op:
    """One submitted batch (xferk_submit_group()).

    ``wait()`` / ``query()`` / ``cancel()`` return a :class:`Snapshot`.
    The op's local memory may be reused only once a snapshot says
    ``buffer_reusable``: that is once the op is physically complete, which
    ``wait(physical=True)`` waits for; a successful ``cancel()`` returns
    such a snapshot, a cancel that left the op QUARANTINED raises
    :class:`QuarantinedError`.

    ``release()`` drops the handle, and refuses (QuarantinedError) while
    the op is not buffer_reusable: the kernel would keep the op and its
    pins (libxferk allows it), but Python could never again learn when the
    memory is reusable. ``release(orphan=True)`` does it anyway, as
    xferk_release() does: the objects of the op's regions are then kept
    alive until the process exits.

    As a context manager: on leaving, an op that is not physically complete
    is cancelled and drained (``drain_timeout``, default 5 s), then
    released; if it stays QUARANTINED, QuarantinedError is raised and the
    op stays tracked by its Device."""

    drain_timeout = 5.0

    def __init__(self, device, handle, regions, user_data):
        self.device = device
        self.handle = handle
        self.regions = regions
        self.user_data = user_data
        self.released = False
        self._last = None
        self._reusable = False

    def __repr__(self):
        st = self._last.state.name if self._last else "?"
        return f"<Op {self.handle:#x} {st}{' released' if self.released else ''}>"

    def _x(self):
        if self.released:
            raise XferkError(_errno.EBADF, "op was released")
        return self.device._live()

    def _note(self, raw):
        s = Snapshot(raw)
        self._last = s
        if s.buffer_reusable:
            self._reusable = True  # physical completion is final
        return s

    def query(self):
        """xferk_query(): the op's snapshot now."""
        raw = L.OpSnapshot()
        _check(lib().query(self._x(), self.handle, ctypes.byref(raw)),
               "xferk_query")
        return self._note(raw)

    snapshot = query

    @property
    def state(self):
        return self.query().state

    @property
    def buffer_reusable(self):
        """Whether the op's memory may be reused now (queries the kernel
        unless a snapshot already said so; physical completion is final)."""
        if self._reusable:
            return True
        if self.released:
            return False
        return self.query().buffer_reusable

    def wait(self, timeout=None, *, deadline_ns=None, physical=False):
        """xferk_wait(): until the op is settled (``physical``: until its
        memory is reusable) or the deadline; never cancels. Raises
        WaitTimeout (errno ETIMEDOUT, with the snapshot) at the deadline."""
        raw = L.OpSnapshot()
        ret = lib().wait(self._x(), self.handle, _deadline(timeout, deadline_ns),
                         L.WAIT_PHYSICAL if physical else 0, ctypes.byref(raw))
        s = self._note(raw) if ret in (0, -_errno.ETIMEDOUT) else None
        _check(ret, "xferk_wait", s,
               WaitTimeout if ret == -_errno.ETIMEDOUT else XferkError)
        return s

    def result(self, timeout=None, *, deadline_ns=None):
        """Waits until physically complete and returns the snapshot if the
        op SUCCEEDED; raises TransferError (errno: first_error) otherwise."""
        return self._succeeded(self.wait(timeout, deadline_ns=deadline_ns,
                                         physical=True))

    def _succeeded(self, s):
        if not s.succeeded:
            raise TransferError(-s.first_error or _errno.EIO,
                                f"op {self.handle:#x}", s)
        return s

    async def wait_async(self, timeout=None, *, physical=False):
        """wait() for asyncio (XFERK_FEAT_POLL): the Device's fd joins the
        running loop, which sleeps until the kernel says something happened
        (Device.readable()). Never cancels; raises WaitTimeout (with the
        snapshot) after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        end = None if timeout is None else loop.time() + timeout
        while True:
            # Armed before the query: a wakeup after it is not missed.
            woken = self.device._next_wakeup(loop)
            try:
                s = self.query()
                if s.buffer_reusable if physical else s.settled:
                    return s
                left = None if end is None else max(0.0, end - loop.time())
                done, _ = await asyncio.wait({woken}, timeout=left)
                if not done:
                    raise WaitTimeout(_errno.ETIMEDOUT, "wait_async",
                                      self.query())
            finally:
                self.device._forget_wakeup(loop, woken)

    async def result_async(self, timeout=None):
        """result() for asyncio (wait_async(physical=True))."""
        return self._succeeded(await self.wait_async(timeout, physical=True))

    def cancel(self, drain_timeout=None, *, drain_deadline_ns=None):
        """xferk_cancel_drain(): returns the snapshot when the op is
        buffer_reusable (DRAINED, or final already); raises QuarantinedError
        (errno ETIMEDOUT, with the snapshot) when it is QUARANTINED at the
        drain deadline: keep the memory alive and unused."""
        if drain_deadline_ns is None and drain_timeout is None:
            drain_timeout = self.drain_timeout
        raw = L.OpSnapshot()
        ret = lib().cancel_drain(self._x(), self.handle,
                                 _deadline(drain_timeout, drain_deadline_ns),
                                 ctypes.byref(raw))
        s = self._note(raw) if ret in (0, -_errno.ETIMEDOUT) else None
        _check(ret, "xferk_cancel_drain", s,
               QuarantinedError if ret == -_errno.ETIMEDOUT else XferkError)
        return s

    def release(self, *, orphan=False):
        """xferk_release(): drops the handle (never cancels)."""
        if self.released:
            return
        x = self.device._live()
        if not self.buffer_reusable:
            if not orphan:
                raise QuarantinedError(
                    _errno.EBUSY, f"op {self.handle:#x} is not "
                    "buffer_reusable: wait(physical=True) or cancel() first, "
                    "or release(orphan=True)", self._last)
            self.device._orphan(self)
        _check(lib().release(x, self.handle), "xferk_release")
        self.released = True
        self.device._untrack_op(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.released or self.device.closed:
            return
        if not self.buffer_reusable:
            self.cancel()
        self.release()


class Group(_Handle):
    """A request group (XFERK_FEAT_GROUPS): ops join at submit
    (``submit(..., group=g)``); ``abort()`` cancels and drains them all."""
    _kind = "group"

    def __init__(self, device, tag=0):
        fn = lib().group_create
        if fn is None:
            raise XferkError(_errno.EOPNOTSUPP, "xferk_group_create")
        h, gen = ctypes.c_uint64(), ctypes.c_uint64()
        _check(fn(device._live(), tag, ctypes.byref(h), ctypes.byref(gen)),
               "xferk_group_create")
        super().__init__(device, h.value)
        self.tag = tag
        self.generation = gen.value

    def query(self):
        raw = L.GroupSnapshot()
        _check(lib().group_query(self._live(), self.handle, ctypes.byref(raw)),
               "xferk_group_query")
        return GroupSnapshot(raw)

    def wait(self, timeout=None, *, deadline_ns=None, physical=False):
        raw = L.GroupSnapshot()
        ret = lib().group_wait(self._live(), self.handle,
                               _deadline(timeout, deadline_ns),
                               L.WAIT_PHYSICAL if physical else 0,
                               ctypes.byref(raw))
        s = GroupSnapshot(raw) if ret in (0, -_errno.ETIMEDOUT) else None
        _check(ret, "xferk_group_wait", s,
               WaitTimeout if ret == -_errno.ETIMEDOUT else XferkError)
        return s

    def abort(self, drain_timeout=5.0, *, drain_deadline_ns=None):
        """xferk_group_abort(): returns the snapshot when every op of the
        group is physically complete; QuarantinedError (ETIMEDOUT) when some
        are QUARANTINED at the drain deadline."""
        raw = L.GroupSnapshot()
        ret = lib().group_abort(self._live(), self.handle,
                                _deadline(drain_timeout, drain_deadline_ns),
                                ctypes.byref(raw))
        s = GroupSnapshot(raw) if ret in (0, -_errno.ETIMEDOUT) else None
        _check(ret, "xferk_group_abort", s,
               QuarantinedError if ret == -_errno.ETIMEDOUT else XferkError)
        return s

    def close(self):
        """xferk_group_release(): the group's ops are not affected."""
        if self.closed:
            return
        if not self.device.closed:
            _check(lib().group_release(self.device._x, self.handle),
                   "xferk_group_release")
        self.closed = True

    release = close


class EventRecord(tuple):
    """(export, tag, bytes, type, flags) of struct xferk_event (export: its
    export_handle)."""
    __slots__ = ()
    export = property(lambda s: s[0])
    tag = property(lambda s: s[1])
    bytes = property(lambda s: s[2])
    type = property(lambda s: s[3])
    flags = property(lambda s: s[4])

    @property
    def incomplete(self):
        return bool(self.flags & L.EVENT_INCOMPLETE)

    def __repr__(self):
        return (f"Event(export={self.export:#x}, tag={self.tag}, "
                f"bytes={self.bytes}, type={self.type.name}, "
                f"flags={self.flags})")


# --- the device ----------------------------------------------------------------

class Device:
    """An open /dev/xferk (xferk_open()).

    Keeps every Region it registered and every unreleased Op alive. Like
    ``struct xferk``, a Device is meant for one thread at a time; the GIL
    is released during each library call (ctypes CDLL), so other threads
    (with their own Device) run while one waits.

    ``close()`` (and leaving a ``with`` block): ops that are not physically
    complete are cancelled and drained first (``drain_timeout``); if one
    stays QUARANTINED, QuarantinedError is raised and the device stays
    open with everything registered. Otherwise xferk_close(): the kernel
    drops every handle."""

    def __init__(self):
        x = ctypes.c_void_p()
        _check(lib().open(ctypes.byref(x)), "xferk_open")
        self._x = x.value
        self.closed = False
        self._lock = threading.Lock()
        self._regions = {}
        self._ops = {}
        self._orphans = []  # regions an orphaned op may still touch
        self._waiters = {}  # asyncio loop: futures of its next wakeup
        self.abi_version = lib().abi_version(self._x)
        self.features = Feature(lib().features(self._x))

    # bookkeeping
    def _live(self):
        if self.closed:
            raise XferkError(_errno.EBADF, "device is closed")
        return self._x

    def _track_region(self, r):
        with self._lock:
            self._regions[r.handle] = r

    def _untrack_region(self, r):
        with self._lock:
            self._regions.pop(r.handle, None)

    def _untrack_op(self, op):
        with self._lock:
            self._ops.pop(op.handle, None)

    def _ops_using(self, region):
        with self._lock:
            return [op for op in self._ops.values() if region in op.regions]

    def _orphan(self, op):
        with self._lock:
            self._orphans.extend(op.regions)

    def _taints(self, region):
        return any(r is region for r in self._orphans)

    @property
    def fd(self):
        return lib().fd(self._live())

    def wakeups(self):
        """xferk_wakeups() (XFERK_FEAT_POLL): how many times since the last
        call an op of this device woke its waiters (first work request
        posted, settled, timed out, cancelled, quarantined, physically
        complete) or an event was queued
        for it. ``fd`` is readable while that is not 0."""
        fn = lib().wakeups
        if fn is None:
            raise XferkError(_errno.EOPNOTSUPP, "xferk_wakeups")
        n = ctypes.c_uint64()
        _check(fn(self._live(), ctypes.byref(n)), "xferk_wakeups")
        return n.value

    async def readable(self):
        """For asyncio: sleeps until ``fd`` is readable (something happened
        since the last wakeups()), then takes and returns the count. What
        happened is for the caller to query (its ops, events()). A Device
        serves one event loop at a time, from that loop's thread."""
        loop = asyncio.get_running_loop()
        fut = self._next_wakeup(loop)
        try:
            return await fut
        finally:
            self._forget_wakeup(loop, fut)

    def _next_wakeup(self, loop):
        """A future of @loop that the next readability of ``fd`` resolves
        with the wakeups it takes. One loop at a time: the count is the
        file's, and a reader of another loop would take it."""
        if not self.has(Feature.POLL):
            raise XferkError(_errno.EOPNOTSUPP, "poll of /dev/xferk")
        waiters = self._waiters.get(loop)
        if waiters is None:
            if self._waiters:
                raise XferkError(_errno.EBUSY, "the Device is awaited in "
                                 "another event loop")
            loop.add_reader(self.fd, self._on_readable, loop)
            waiters = self._waiters[loop] = []
        fut = loop.create_future()
        waiters.append(fut)
        return fut

    def _on_readable(self, loop):
        waiters = self._waiters.pop(loop, [])
        loop.remove_reader(lib().fd(self._x))
        try:
            n, err = self.wakeups(), None
        except XferkError as e:
            n, err = None, e
        for f in waiters:
            if f.done():
                continue
            if err is None:
                f.set_result(n)
            else:
                f.set_exception(err)

    def _forget_wakeup(self, loop, fut):
        """@fut, of _next_wakeup(), is no longer awaited (done or not)."""
        fut.cancel()
        waiters = self._waiters.get(loop)
        if waiters is None:
            return
        if fut in waiters:
            waiters.remove(fut)
        if not waiters:
            del self._waiters[loop]
            loop.remove_reader(lib().fd(self._x))

    def info(self):
        """abi_version, features (Feature flags), fd, and the library path."""
        return {"abi_version": self.abi_version, "features": self.features,
                "fd": self.fd, "library": lib().path}

    def has(self, feature):
        return bool(self.features & feature)

    # regions
    def register(self, obj, access=Access.ALL):
        """xferk_mr_reg() of obj's memory: a writable, C-contiguous buffer
        (bytearray, mmap, numpy array, array.array, ctypes array, ...) or an
        object with data_ptr() and nbytes (a CPU torch.Tensor). Access
        defaults to all four XFERK_ACCESS_* bits.

        CUDA device memory (a CUDA torch.Tensor, an object with
        ``__cuda_array_interface__``, a DLPack producer on a CUDA device;
        C-contiguous) is registered as a dma-buf region: the CUDA driver,
        loaded at run time, exports the page-aligned range around it as a
        dma-buf (see Documentation/gpu.md). Without a driver that can, this
        raises CudaError naming what is missing. The region references obj
        as it does a host buffer."""
        cuda = _cuda.cuda_buffer_of(obj)
        if cuda is None:
            addr, n, keep = _buffer_of(obj)
            return Region(self, addr, n, access, keep)
        ptr, n, keep, readonly = cuda
        if readonly and access & (Access.LOCAL_DST | Access.REMOTE_WRITE):
            raise TypeError("the CUDA array is read-only: register it with "
                            "LOCAL_SRC and REMOTE_READ only")
        fd, offset = _cuda.driver().dmabuf_of(ptr, n)
        try:
            return Region(self, ptr, n, access, keep, dmabuf=(fd, offset))
        finally:
            os.close(fd)  # the region holds the dma-buf itself

    def register_dmabuf(self, fd, offset, nbytes, access=Access.ALL,
                        keepalive=None):
        """xferk_mr_reg_dmabuf(): [offset, offset + nbytes) of the dma-buf
        fd (the caller may close fd afterwards); keepalive is referenced
        like a registered object."""
        return Region(self, 0, nbytes, access, keepalive,
                      dmabuf=(fd, offset))

    def register_address(self, addr, nbytes, access=Access.ALL, keepalive=None):
        """xferk_mr_reg() of a raw address: the caller keeps the memory
        valid; keepalive is referenced like a registered object."""
        return Region(self, addr, nbytes, access, keepalive)

    # connections
    def connect(self, ip, port=0, timeout=None, timeout_ms=None, qps=0):
        """xferk_connect_qps() to ip (IPv4 or IPv6 text); port 0: the
        module's listen_port; timeout in seconds (None: the library's 5 s);
        qps: RC QPs per path of a new session (0: the module's
        qps_per_session)."""
        if timeout_ms is None:
            timeout_ms = 0 if timeout is None else max(1, int(timeout * 1000))
        h = ctypes.c_uint64()
        if lib().connect_qps is None:
            if qps:
                raise XferkError(_errno.EOPNOTSUPP, "xferk_connect_qps")
            ret = lib().connect(self._live(), ip.encode(), port, timeout_ms,
                                ctypes.byref(h))
        else:
            ret = lib().connect_qps(self._live(), ip.encode(), port,
                                    timeout_ms, qps, ctypes.byref(h))
        _check(ret, f"xferk_connect {ip}")
        return Connection(self, h.value)

    def connect_null(self, delay_ns=0):
        """xferk_connect_null(): a scripted peer (CAP_SYS_ADMIN)."""
        h = ctypes.c_uint64()
        _check(lib().connect_null(self._live(), delay_ns, ctypes.byref(h)),
               "xferk_connect_null")
        return Connection(self, h.value)

    def group(self, tag=0):
        return Group(self, tag)

    # ops
    def _submit(self, ptr, n, keep, regions, timeout, deadline_ns, user_data,
                flags, drain_budget, priority, window_bytes, window_chunks,
                group, notify_tag):
        opts = L.SubmitOpts(flags=flags, user_data=user_data,
                            priority=priority, window_bytes=window_bytes,
                            window_chunks=window_chunks,
                            drain_budget_ns=int((drain_budget or 0) * 1e9))
        if drain_budget is not None:
            opts.flags |= L.SUBMIT_CANCEL_ON_DEADLINE
        if notify_tag:
            opts.flags |= L.SUBMIT_NOTIFY
        h = ctypes.c_uint64()
        dl = _deadline(timeout, deadline_ns)
        gh = group.handle if group is not None else 0
        x = self._live()
        if lib().submit_group is not None:
            ret = lib().submit_group(x, ptr, n, dl, ctypes.byref(opts), gh,
                                     notify_tag, ctypes.byref(h))
        elif gh or notify_tag:
            ret = -_errno.EOPNOTSUPP
        else:
            ret = lib().submit_ex(x, ptr, n, dl, ctypes.byref(opts),
                                  ctypes.byref(h))
        del keep
        _check(ret, "xferk_submit")
        op = Op(self, h.value, regions, user_data)
        with self._lock:
            self._ops[op.handle] = op
        return op

    def submit(self, frags, timeout=None, *, deadline_ns=None, user_data=0,
               flags=0, drain_budget=None, priority=0, window_bytes=0,
               window_chunks=0, group=None, notify_tag=0):
        """Start an op of fragments (region, local_off, len, remote,
        remote_off, opcode) under one deadline (timeout in s, or absolute
        deadline_ns; None: none). drain_budget (s): cancel and drain by
        itself that long after the deadline (XFERK_SUBMIT_CANCEL_ON_DEADLINE).
        notify_tag: XFERK_SUBMIT_NOTIFY with that tag."""
        ptr, n, keep, regions = _general_frags(frags, self)
        return self._submit(ptr, n, keep, regions, timeout, deadline_ns,
                            user_data, flags, drain_budget, priority,
                            window_bytes, window_chunks, group, notify_tag)

    def write(self, region, remote, frags, timeout=None, **kw):
        """RDMA WRITE region -> remote. frags: (local_off, remote_off, len)
        triples, an Nx3 uint64 numpy array, or a structured array."""
        ptr, n, keep = _frags(region, remote, frags, L.OP_WRITE)
        return self._submit(ptr, n, keep, [region], timeout,
                            kw.pop("deadline_ns", None), **_kw(kw))

    def read(self, region, remote, frags, timeout=None, **kw):
        """RDMA READ remote -> region; frags as for write()."""
        ptr, n, keep = _frags(region, remote, frags, L.OP_READ)
        return self._submit(ptr, n, keep, [region], timeout,
                            kw.pop("deadline_ns", None), **_kw(kw))

    def transfer(self, frags, timeout=None, drain_budget=1.0, *,
                 deadline_ns=None):
        """xferk_transfer_sync() of general fragments: returns the snapshot
        on success; raises TransferError when it failed and nothing touches
        the memory any more, QuarantinedError when fragments may still be
        in flight (XFERK_COMPLETION_UNKNOWN: the regions' objects are then
        kept alive until the process exits)."""
        ptr, n, keep, regions = _general_frags(frags, self)
        raw = L.OpSnapshot()
        ret = lib().transfer_sync(self._live(), ptr, n,
                                  _deadline(timeout, deadline_ns),
                                  int(drain_budget * 1e9), ctypes.byref(raw))
        del keep
        s = Snapshot(raw)
        if ret == L.COMPLETION_UNKNOWN:
            with self._lock:
                self._orphans.extend(regions)
            raise QuarantinedError(_errno.ETIMEDOUT, "xferk_transfer_sync", s)
        if ret < 0:
            raise TransferError(-ret, "xferk_transfer_sync",
                                s if s.total_bytes else None)
        return s

    # events
    def events(self, max_events=64, timeout=0.0, *, deadline_ns=None):
        """xferk_events(): (list of EventRecord, dropped). timeout 0: do not
        wait; None: until one arrives. An empty list when none arrived."""
        fn = lib().events
        if fn is None:
            raise XferkError(_errno.EOPNOTSUPP, "xferk_events")
        buf = (L.Event * max(1, max_events))()
        nr, dropped = ctypes.c_uint32(), ctypes.c_uint64()
        dl = 0 if (timeout == 0 and deadline_ns is None) else \
            _deadline(timeout, deadline_ns)
        ret = fn(self._live(), buf, max_events, dl, ctypes.byref(nr),
                 ctypes.byref(dropped))
        if ret == -_errno.ETIMEDOUT:
            return [], dropped.value
        _check(ret, "xferk_events")
        out = []
        for e in buf[:nr.value]:
            t = EventType(e.type) if e.type in (1, 2, 3) else e.type
            out.append(EventRecord((e.export_handle, e.tag, e.bytes, t, e.flags)))
        return out, dropped.value

    # closing
    def close(self, drain_timeout=5.0):
        if self.closed:
            return
        with self._lock:
            ops = list(self._ops.values())
        stuck = None
        for op in ops:
            if op.buffer_reusable:
                continue
            try:
                op.cancel(drain_timeout)
            except QuarantinedError as e:
                stuck = stuck or e
        if stuck is not None:
            raise QuarantinedError(_errno.EBUSY, "device not closed: an op "
                                   "is QUARANTINED", stuck.snapshot)
        self._close()

    def _close(self):
        for loop, waiters in self._waiters.items():
            loop.remove_reader(lib().fd(self._x))
            for f in waiters:
                if not f.done():
                    f.set_exception(XferkError(_errno.EBADF, "device is closed"))
        self._waiters.clear()
        lib().close(self._x)
        self.closed = True
        for r in list(self._regions.values()):
            r._forget()
        for op in list(self._ops.values()):
            op.released = True
        self._ops.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # Unreachable with ops that may be in flight: closing the file makes
        # the kernel drain them in the background and keep their pages
        # pinned until then; their objects must outlive that, so keep them.
        if getattr(self, "closed", True):
            return
        try:
            for op in list(self._ops.values()):
                if not op.buffer_reusable:
                    self._orphans.extend(op.regions)
            self._close()
        except Exception:
            pass

    def __repr__(self):
        st = "closed" if self.closed else f"abi {self.abi_version}"
        return f"<xferk.Device {st}>"


def _kw(kw):
    allowed = {"user_data": 0, "flags": 0, "drain_budget": None,
               "priority": 0, "window_bytes": 0, "window_chunks": 0,
               "group": None, "notify_tag": 0}
    bad = set(kw) - set(allowed)
    if bad:
        raise TypeError(f"unexpected keyword arguments {sorted(bad)}")
    allowed.update(kw)
    return allowed


def open():  # noqa: A001 - mirrors xferk_open()
    """A new Device (xferk_open())."""
    return Device()
