# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""xferk: Python bindings for libxferk (/dev/xferk), over ctypes.

    import xferk
    with xferk.Device() as dev:
        print(dev.info())

The library is found through $XFERK_LIB (a path), else
ctypes.util.find_library("xferk"), else "libxferk.so.0". It is loaded with
ctypes.CDLL, which releases the GIL during every call.

An op's memory may be reused or freed only once a snapshot of the op says
buffer_reusable (it is physically complete); see README.md.
"""
from ._api import (  # noqa: F401
    READ, WRITE, Access, ConnState, Connection, Device, EventRecord,
    EventType, Export, Failure, Feature, FRAG_DTYPE, Group, GroupSnapshot,
    Import, Op, QuarantinedError, Region, Snapshot, State, Token,
    TransferError, WaitTimeout, Window, XferkError, now_ns, open, state_name,
)
from ._cuda import CudaError  # noqa: F401
from ._lib import (  # noqa: F401
    CLOSE_COOPERATIVE, CLOSE_FORCED, DEADLINE_NONE, MAX_FRAGS, PRIO_BULK,
    PRIO_CRITICAL, PRIO_NORMAL, TOKEN_SIZE, lib,
)

# Not "open": a star import must not shadow the builtin.
__all__ = [n for n in dir() if not n.startswith("_") and n != "open"]
__version__ = "0.2.0"
