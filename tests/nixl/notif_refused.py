#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A notification the target cannot take fails, never vanishes.

The target holds at most 64 MiB of notifications nobody took. The
initiator sends it messages of 1,000,000 bytes (genNotif) until one is
refused: that must happen within 80 of them, and the call must fail.
Then a 1 MiB WRITE with a notification of as many bytes: the target
refuses its message, so the transfer must end in an error, not DONE. The target then takes
what it holds: exactly the messages that were accepted, none of the
refused ones. Last, the same WRITE with a notification is DONE and its
notification delivered once. Regression: a message that could not be
taken was logged and dropped while genNotif and the transfer reported
success. Exit 0 pass, 1 fail.
"""
import sys
import time
import uuid

import numpy as np

from nixl._api import nixl_agent, nixl_agent_config
from notes import notes, pair

BIG = 1_000_000
LEN = 1 << 20


def agent():
    return nixl_agent(str(uuid.uuid4()), nixl_agent_config(backends=["XFERK"]))


def write(init, target, src, dst, msg):
    """The WRITE's end: DONE, or the error NIXL raised or returned."""
    h = init.initialize_xfer("WRITE", init.get_xfer_descs([(src.ctypes.data, LEN, 0)], "DRAM"),
                             target.get_xfer_descs([(dst.ctypes.data, LEN, 0)], "DRAM"),
                             target.name, msg)
    try:
        state = init.transfer(h)
        until = time.monotonic() + 120
        while state == "PROC" and time.monotonic() < until:
            state = init.check_xfer_state(h)
    except Exception as e:
        state = type(e).__name__
    init.release_xfer_handle(h)
    return state


def main():
    init, target, src, dst = pair(agent, LEN, 5)

    sent = refused = 0
    while sent < 80 and not refused:
        try:
            init.send_notif(target.name, bytes([sent % 256]) * BIG)
            sent += 1
        except Exception as e:
            refused = 1
            print(f"message {sent + 1} refused ({type(e).__name__})")
    print(f"{sent} messages of {BIG} bytes taken before one was refused")
    state = write(init, target, src, dst, b"r" * BIG)
    print(f"WRITE with a notification the target cannot hold: {state}")
    held = notes(target, init, 3)
    sizes = sorted({len(m) for m in held})
    print(f"the target then delivered {len(held)} messages (sizes {sizes})")
    state2 = write(init, target, src, dst, b"taken")
    later = notes(target, init, 3)
    print(f"the same WRITE with room: {state2}, notifications {later}")
    ok = (refused and state not in ("DONE", "PROC") and len(held) == sent and
          sizes == [BIG] and state2 == "DONE" and later == [b"taken"] and
          np.all(dst == 5))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
