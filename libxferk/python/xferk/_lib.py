# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The ctypes layer: loads libxferk.so.0, declares its structs and prototypes.

Everything here mirrors ``uapi/xferk.h`` and ``libxferk/libxferk.h``
one to one; the object API is in ``xferk._api``.

The library is loaded with :class:`ctypes.CDLL`, never ``PyDLL``: ctypes
releases the GIL around every call into a ``CDLL``, so a thread blocked in
``xferk_wait()``, ``xferk_cancel_drain()``, ``xferk_connect()`` or
``xferk_events()`` does not stop the other Python threads.
"""
import ctypes
import ctypes.util
import keyword
import os

SONAME = "libxferk.so.0"

# --- constants of uapi/xferk.h -------------------------------------------

ABI_VERSION = 12
TOKEN_SIZE = 64
TOKEN_HEX_LEN = 2 * TOKEN_SIZE + 1
DEADLINE_NONE = (1 << 64) - 1

FEAT_INFO = 1 << 0
FEAT_DATAPATH = 1 << 1
FEAT_NULL_PEER = 1 << 2
FEAT_CANCEL = 1 << 3
FEAT_URING = 1 << 4
FEAT_QUEUE = 1 << 5
FEAT_SESSIONS = 1 << 6
FEAT_WINDOWS = 1 << 7
FEAT_GROUPS = 1 << 8
FEAT_NOTIFY = 1 << 9
FEAT_RAILS = 1 << 10
FEAT_QPS = 1 << 11
FEAT_DMABUF = 1 << 12
FEAT_POLL = 1 << 13
FEAT_WINDOW_EDGES = 1 << 14

ACCESS_LOCAL_SRC = 1 << 0
ACCESS_LOCAL_DST = 1 << 1
ACCESS_REMOTE_READ = 1 << 2
ACCESS_REMOTE_WRITE = 1 << 3
ACCESS_ALL = 0xF

CONNECT_MAX_TIMEOUT_MS = 60000
WINDOW_MAX_BLOCKS = 16384
CLOSE_COOPERATIVE = 1
CLOSE_FORCED = 2

OP_READ = 0
OP_WRITE = 1
MAX_FRAGS = 4096
MAX_OP_BYTES = 4 << 30
MAX_OP_WRS = 65536

SUBMIT_CANCEL_ON_DEADLINE = 1 << 0
SUBMIT_AUTO_RELEASE = 1 << 1
SUBMIT_NOTIFY = 1 << 2

PRIO_NORMAL = 0
PRIO_CRITICAL = 1
PRIO_BULK = 2
PRIO_INTERNAL = 3

WAIT_PHYSICAL = 1 << 0

FAILURE_NONE = 0
FAILURE_OWN = 1
FAILURE_PATH = 2
FAILURE_DEADLINE = 3
FAILURE_CANCEL = 4

GROUP_MAX_TARGETS = 64
EVENT_DATA = 1
EVENT_NOTE = 2
EVENT_ABORTED = 3
EVENT_INCOMPLETE = 1 << 0
EVENTS_MAX = 1024

CONN_STATE_CONNECTING = 0
CONN_STATE_UP = 1
CONN_STATE_RECONNECTING = 2
CONN_STATE_DOWN = 3

# xferk_transfer_sync(): fragments may still be in flight.
COMPLETION_UNKNOWN = 1

u8, u32, s32, u64 = ctypes.c_uint8, ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64


class Token(ctypes.Structure):
    _fields_ = [("bytes", u8 * TOKEN_SIZE)]


class Frag(ctypes.Structure):
    """struct xferk_frag (48 bytes)."""
    _fields_ = [("mr", u64), ("offset", u64), ("len", u64), ("remote", u64),
                ("remote_offset", u64), ("opcode", u32), ("reserved", u32)]


class Block(ctypes.Structure):
    _fields_ = [("offset", u64), ("len", u64)]


class OpSnapshot(ctypes.Structure):
    _fields_ = [("state", u32), ("first_error", s32),
                ("total_bytes", u64), ("transferred_bytes", u64),
                ("in_flight_bytes", u64), ("quarantined_bytes", u64),
                ("total_fragments", u32), ("completed_fragments", u32),
                ("deadline_timeouts", u32), ("cancel_requests", u32),
                ("drain_attempts", u32), ("quarantine_events", u32),
                ("late_completions", u32), ("physical_complete", u32),
                ("buffer_reusable", u32), ("failure", u32),
                ("submit_to_physical_ns", u64), ("user_data", u64),
                ("reserved", u64 * 2)]


class GroupSnapshot(ctypes.Structure):
    _fields_ = [("ops", u32), ("ops_physical", u32),
                ("ops_in_state", u32 * 16), ("aborted", u32),
                ("first_error", s32), ("total_bytes", u64),
                ("transferred_bytes", u64), ("in_flight_bytes", u64),
                ("quarantined_bytes", u64), ("late_completions", u32),
                ("quarantine_events", u32), ("generation", u64),
                ("tag", u64), ("reserved", u64 * 2)]


class Event(ctypes.Structure):
    _fields_ = [("export_handle", u64), ("tag", u64), ("bytes", u64),
                ("type", u32), ("flags", u32)]


class ConnInfo(ctypes.Structure):
    _fields_ = [("state", u32), ("error", s32), ("path_gen", u32),
                ("outstanding", u32), ("path_deaths", u64),
                ("reconnects", u64), ("reposted", u64), ("initiator", u32),
                ("nr_qps", u32), ("reserved", u64 * 2)]


class SubmitOpts(ctypes.Structure):
    """struct xferk_submit_opts (libxferk.h); natural alignment as in C."""
    _fields_ = [("flags", u32), ("drain_budget_ns", u64), ("user_data", u64),
                ("priority", u32), ("window_bytes", u64),
                ("window_chunks", u32)]


assert ctypes.sizeof(Frag) == 48
assert ctypes.sizeof(OpSnapshot) == 112
assert ctypes.sizeof(Event) == 32
assert ctypes.sizeof(SubmitOpts) == 48

# --- the library ------------------------------------------------------------


def _find():
    path = os.environ.get("XFERK_LIB")
    if path:
        return path
    return ctypes.util.find_library("xferk") or SONAME


_P = ctypes.POINTER
_c_int = ctypes.c_int
_vp = ctypes.c_void_p

# name: (restype, argtypes); XFERK_0.1 .. XFERK_0.8 of libxferk.map.
_PROTOS = {
    "xferk_open": (_c_int, [_P(_vp)]),
    "xferk_close": (None, [_vp]),
    "xferk_fd": (_c_int, [_vp]),
    "xferk_abi_version": (u32, [_vp]),
    "xferk_features": (u64, [_vp]),
    "xferk_mr_reg": (_c_int, [_vp, _vp, u64, u32, _P(u64)]),
    "xferk_mr_dereg": (_c_int, [_vp, u64]),
    "xferk_connect": (_c_int, [_vp, ctypes.c_char_p, ctypes.c_uint16,
                               ctypes.c_uint, _P(u64)]),
    "xferk_connect_null": (_c_int, [_vp, u64, _P(u64)]),
    "xferk_disconnect": (_c_int, [_vp, u64]),
    "xferk_export": (_c_int, [_vp, u64, u64, u64, u64, u32, _P(Token),
                              _P(u64)]),
    "xferk_unexport": (_c_int, [_vp, u64]),
    "xferk_import": (_c_int, [_vp, u64, _P(Token), _P(u64)]),
    "xferk_unimport": (_c_int, [_vp, u64]),
    "xferk_token_format": (_c_int, [_P(Token), ctypes.c_char_p,
                                    ctypes.c_size_t]),
    "xferk_token_parse": (_c_int, [ctypes.c_char_p, _P(Token)]),
    "xferk_submit": (_c_int, [_vp, _vp, u32, u64, u64, _P(u64)]),
    "xferk_submit_ex": (_c_int, [_vp, _vp, u32, u64, _P(SubmitOpts),
                                 _P(u64)]),
    "xferk_cancel_drain": (_c_int, [_vp, u64, u64, _P(OpSnapshot)]),
    "xferk_transfer_sync": (_c_int, [_vp, _vp, u32, u64, u64,
                                     _P(OpSnapshot)]),
    "xferk_wait": (_c_int, [_vp, u64, u64, u32, _P(OpSnapshot)]),
    "xferk_query": (_c_int, [_vp, u64, _P(OpSnapshot)]),
    "xferk_release": (_c_int, [_vp, u64]),
    "xferk_now_ns": (u64, []),
    "xferk_state_name": (ctypes.c_char_p, [u32]),
    # XFERK_0.2
    "xferk_conn_query": (_c_int, [_vp, u64, _P(ConnInfo)]),
    # XFERK_0.3
    "xferk_window_open": (_c_int, [_vp, u64, u64, _vp, u32, u32, _P(Token),
                                   _P(u64), _P(u64)]),
    "xferk_window_close": (_c_int, [_vp, u64, u64, _P(u32), _P(u64)]),
    # XFERK_0.4
    "xferk_window_open_gen": (_c_int, [_vp, u64, u64, _vp, u32, u32,
                                       _P(Token), _P(u64), _P(u64), _P(u64)]),
    "xferk_group_create": (_c_int, [_vp, u64, _P(u64), _P(u64)]),
    "xferk_group_abort": (_c_int, [_vp, u64, u64, _P(GroupSnapshot)]),
    "xferk_group_wait": (_c_int, [_vp, u64, u64, u32, _P(GroupSnapshot)]),
    "xferk_group_query": (_c_int, [_vp, u64, _P(GroupSnapshot)]),
    "xferk_group_release": (_c_int, [_vp, u64]),
    "xferk_submit_group": (_c_int, [_vp, _vp, u32, u64, _P(SubmitOpts), u64,
                                    u64, _P(u64)]),
    "xferk_notify": (_c_int, [_vp, u64, u64]),
    "xferk_events": (_c_int, [_vp, _vp, u32, u64, _P(u32), _P(u64)]),
    # XFERK_0.5
    "xferk_import_rail": (_c_int, [_vp, u64, _P(Token), u64]),
    # XFERK_0.6
    "xferk_connect_qps": (_c_int, [_vp, ctypes.c_char_p, ctypes.c_uint16,
                                   ctypes.c_uint, ctypes.c_uint, _P(u64)]),
    # XFERK_0.7
    "xferk_mr_reg_dmabuf": (_c_int, [_vp, _c_int, u64, u64, u32, _P(u64)]),
    # XFERK_0.8
    "xferk_wakeups": (_c_int, [_vp, _P(u64)]),
}


class _Lib:
    """The loaded library; a function the library lacks (an older
    libxferk.so.0 without XFERK_0.4, say) is None."""

    def __init__(self):
        self.path = _find()
        # CDLL (not PyDLL): the GIL is released for the duration of each call.
        self.dll = ctypes.CDLL(self.path)
        for name, (res, args) in _PROTOS.items():
            attr = name[6:] + ("_" if keyword.iskeyword(name[6:]) else "")
            try:
                fn = getattr(self.dll, name)
            except AttributeError:
                setattr(self, attr, None)
                continue
            fn.restype = res
            fn.argtypes = args
            setattr(self, attr, fn)


_lib = None


def lib():
    """The library, loaded on first use (so that importing xferk never
    fails on a host without libxferk)."""
    global _lib
    if _lib is None:
        _lib = _Lib()
    return _lib
