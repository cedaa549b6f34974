#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The target lets go of a peer with that peer's WRITE still in flight,
and reuses the buffer at once, as a prefill engine does with its blocks
after an abort: it calls remove_remote_agent(initiator), NIXL's
invalidateRemoteMD, which makes the backend close every export that agent
asked for (Documentation/nixl.md, "Fenced targets").

A 16 MiB WRITE whose first completion is held back HOLD_S (fault knobs
delay_completions and delay_ms): most of its work requests wait in the
queue. Then, on the target: remove_remote_agent(initiator), and the whole
buffer filled with a canary. Checks: the call returned while the WRITE was
still in flight (it waits for no op of the peer's); the WRITE ends in an
error, not DONE; the canary is intact once it ended (without the revoke
the queued work requests land on it). Last, the initiator loads the
target's metadata again (new exports) and a new WRITE is DONE and right.
Exit 0 pass, 1 fail.
"""
import sys
import time
import uuid

import numpy as np

from nixl._api import nixl_agent, nixl_agent_config
from notes import pair

FAULTS = "/sys/kernel/debug/xferk/fault/"
SIZE = 16 << 20
HOLD_S = 10
CANARY = 0xC5


def agent():
    return nixl_agent(str(uuid.uuid4()), nixl_agent_config(backends=["XFERK"]))


def knob(name, value=None):
    with open(FAULTS + name, "r" if value is None else "w") as f:
        if value is None:
            return int(f.read())
        f.write(str(value))
        return value


def state_of(a, h):
    """check_xfer_state(), with "ERR" for the error it raises."""
    try:
        return a.check_xfer_state(h)
    except Exception:
        return "ERR"


def settle(a, h, seconds):
    """@h's state once it is not in progress (or after @seconds)."""
    until = time.monotonic() + seconds
    state = state_of(a, h)
    while state == "PROC" and time.monotonic() < until:
        time.sleep(0.05)
        state = state_of(a, h)
    return state


def write(init, target, src, dst):
    local = init.get_xfer_descs([(src.ctypes.data, SIZE, 0)], "DRAM")
    remote = target.get_xfer_descs([(dst.ctypes.data, SIZE, 0)], "DRAM")
    h = init.initialize_xfer("WRITE", local, remote, target.name)
    return h, init.transfer(h)


def main():
    bad = 0
    init, target, src, dst = pair(agent, SIZE, 1)

    delay_ms = knob("delay_ms")
    try:
        knob("delay_ms", HOLD_S * 1000)
        knob("delay_completions", 1)
        h, state = write(init, target, src, dst)
        until = time.monotonic() + 30
        while knob("delay_completions") and time.monotonic() < until:
            time.sleep(0.01)
        if knob("delay_completions") or state != "PROC":
            print(f"setup: no completion of the WRITE was held (transfer {state})")
            return 1
        t0 = time.monotonic()
        target.remove_remote_agent(init.name)
        took = time.monotonic() - t0
        dst[:] = CANARY
        during = state_of(init, h)
        print(f"remove_remote_agent took {took:.2f} s; the WRITE was then {during}")
        bad |= during != "PROC"
        state = settle(init, h, 60 + HOLD_S)
        init.release_xfer_handle(h)
    finally:
        knob("delay_completions", 0)
        knob("delay_ms", delay_ms)
    changed = int(np.count_nonzero(dst != CANARY))
    print(f"the WRITE ended {state}; {changed} bytes of the reused buffer changed")
    bad |= state != "ERR" or changed != 0

    # NIXL may have forgotten the target already (a transfer that ended
    # NIXL_ERR_REMOTE_DISCONNECT makes it do so).
    try:
        init.remove_remote_agent(target.name)
    except Exception:
        pass
    init.add_remote_agent(target.get_agent_metadata())
    src[:] = 2
    h, state = write(init, target, src, dst)
    state = settle(init, h, 60)
    init.release_xfer_handle(h)
    ok = state == "DONE" and np.all(dst == 2)
    print(f"a new WRITE once the initiator loaded the target's metadata again: {state}, "
          f"data {'verified' if ok else 'WRONG'}")
    return int(bad or not ok)


if __name__ == "__main__":
    sys.exit(main())
