#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A notification waits for the data of every op of its transfer.

A WRITE of 8192 descriptors (two xferk ops, one group) with a notification,
one of whose work request completions the device swallows (fault
swallow_completions): that op is never physically complete until the
release aborts the group, while the other op finishes and its DATA event
reaches the target. For 3 s the target must deliver nothing (a target
that delivered at the first DATA event, or counted them without waiting
for all, would deliver it here). The release then aborts the transfer,
which failed: the target must never deliver the message. Last, the same
WRITE again with no fault must be delivered, exactly once: zero
notifications above were not the setup's failure. Exit 0 pass, 1 fail.
"""
import sys
import time
import uuid

import numpy as np

from nixl._api import nixl_agent, nixl_agent_config
from notes import notes

FAULT = "/sys/kernel/debug/xferk/fault/swallow_completions"
N, SIZE = 8192, 256


def agent():
    return nixl_agent(str(uuid.uuid4()), nixl_agent_config(backends=["XFERK"]))


def read_int(path):
    with open(path) as f:
        return int(f.read())


def main():
    init, target = agent(), agent()
    src = np.full(N * SIZE, 3, np.uint8)
    dst = np.zeros(N * SIZE, np.uint8)
    init.register_memory([(src.ctypes.data, src.nbytes, 0, "")], "DRAM")
    target.register_memory([(dst.ctypes.data, dst.nbytes, 0, "")], "DRAM")
    init.add_remote_agent(target.get_agent_metadata())
    target.add_remote_agent(init.get_agent_metadata())
    d = np.zeros((N, 3), np.uint64)
    d[:, 1] = SIZE
    d[:, 0] = src.ctypes.data + np.arange(N, dtype=np.uint64) * SIZE
    local = init.get_xfer_descs(d, "DRAM")
    # Shuffled remote offsets: no two descriptors merge into one fragment.
    d[:, 0] = dst.ctypes.data + np.random.default_rng(2).permutation(N).astype(np.uint64) * SIZE
    remote = target.get_xfer_descs(d, "DRAM")

    with open(FAULT, "w") as f:
        f.write("1")
    h = init.initialize_xfer("WRITE", local, remote, target.name, b"held")
    state = init.transfer(h)
    until = time.monotonic() + 60
    while read_int(FAULT) and time.monotonic() < until:
        time.sleep(0.01)
    if read_int(FAULT) or state != "PROC":
        print(f"setup: no completion swallowed (transfer {state})")
        return 1
    early = notes(target, init, 3)
    print(f"with one op held: {len(early)} notifications delivered, "
          f"transfer {init.check_xfer_state(h)}")
    try:  # the first release of a transfer in flight is refused
        init.release_xfer_handle(h)
    except Exception:
        init.release_xfer_handle(h)  # waits until its memory is reusable
    late = notes(target, init, 2)
    print(f"after the release: {len(late)} notifications delivered")

    h = init.initialize_xfer("WRITE", local, remote, target.name, b"clean")
    state = init.transfer(h)
    until = time.monotonic() + 120
    while state == "PROC" and time.monotonic() < until:
        state = init.check_xfer_state(h)
    init.release_xfer_handle(h)
    clean = notes(target, init, 3)
    print(f"the same WRITE without the fault: {state}, notifications {clean}")
    ok = state == "DONE" and clean == [b"clean"] and np.all(dst == 3)
    return 1 if early or late or not ok else 0


if __name__ == "__main__":
    sys.exit(main())
