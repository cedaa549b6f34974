#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""NIXL requests of more descriptors than one xferk op takes (4096), as
vLLM builds them (regions x blocks): the backend splits a request into
ops of at most 4096 fragments (in one xferk group) and reports it done
only once every op is.

  many_descs.py COUNT...

For each COUNT: a WRITE of COUNT descriptors of 256 bytes, the remote ones
in a shuffled order (no two continue each other, so none merge), with a
notification; the target's notification must arrive, and only once every
byte has landed; then a READ of them back. Then a request of the largest
COUNT is released right after it was posted and its destination reused at
once with a canary: no byte may change afterwards. Prints one line per
COUNT with the time each direction took. Exits 1 on any wrong byte, a
missing or early notification, or a changed canary.
"""
import sys
import time
import uuid

import numpy as np

from nixl._api import nixl_agent, nixl_agent_config

SIZE = 256
CANARY = 0xC5


def agent():
    return nixl_agent(str(uuid.uuid4()), nixl_agent_config(backends=["XFERK"]))


def descs(a, base, offsets):
    d = np.zeros((len(offsets), 3), np.uint64)
    d[:, 0] = base + offsets
    d[:, 1] = SIZE
    return a.get_xfer_descs(d, "DRAM")


def wait(a, h, limit=300):
    state = a.transfer(h)
    until = time.monotonic() + limit
    while state == "PROC" and time.monotonic() < until:
        state = a.check_xfer_state(h)
    return state


def release(a, h):
    """Releases @h; a first refusal (not reusable yet) is retried."""
    for _ in range(1000):
        try:
            a.release_xfer_handle(h)
            return
        except Exception:
            time.sleep(0.05)
    raise RuntimeError("release_xfer_handle kept failing")


def main():
    counts = [int(c) for c in sys.argv[1:]] or [8192]
    n_max = max(counts)
    init, target = agent(), agent()
    local = np.zeros(n_max * SIZE, np.uint8)
    remote = np.zeros(n_max * SIZE, np.uint8)
    init.register_memory([(local.ctypes.data, local.nbytes, 0, "")], "DRAM")
    target.register_memory([(remote.ctypes.data, remote.nbytes, 0, "")], "DRAM")
    init.add_remote_agent(target.get_agent_metadata())
    target.add_remote_agent(init.get_agent_metadata())
    rng = np.random.default_rng(1)
    bad = 0
    for n in counts:
        lofs = np.arange(n, dtype=np.uint64) * SIZE
        rofs = rng.permutation(n).astype(np.uint64) * SIZE
        ldesc = descs(init, local.ctypes.data, lofs)
        rdesc = descs(target, remote.ctypes.data, rofs)
        # Each row its own: a pattern, and the row's index in its first
        # four bytes, so a descriptor that lands in another's place shows.
        rows = local[: n * SIZE].reshape(n, SIZE)
        rows[:] = (np.arange(SIZE, dtype=np.uint32) * 13 + n).astype(np.uint8)
        rows[:, :4] = np.arange(n, dtype="<u4").view(np.uint8).reshape(n, 4)
        remote[:] = 0
        msg = f"done {n}".encode()
        want = local[: n * SIZE].reshape(n, SIZE).copy()
        t0 = time.monotonic()
        h = init.initialize_xfer("WRITE", ldesc, rdesc, target.name, msg)
        # The target polls for the notification while the transfer runs:
        # when it arrives, every byte must be there already.
        state = init.transfer(h)
        notified = early = False
        until = time.monotonic() + 300
        while (state == "PROC" or not notified) and time.monotonic() < until:
            if state == "PROC":
                state = init.check_xfer_state(h)
            if not notified and msg in target.get_new_notifs().get(init.name, []):
                notified = True
                early = not np.array_equal(remote.reshape(n_max, SIZE)[rofs // SIZE], want)
        write_s = time.monotonic() - t0
        release(init, h)
        got = remote.reshape(n_max, SIZE)[rofs // SIZE]
        ok_data = state == "DONE" and np.array_equal(got, want)
        ok_note = notified and not early
        local[:] = 0
        t0 = time.monotonic()
        h = init.initialize_xfer("READ", ldesc, rdesc, target.name)
        rstate = wait(init, h)
        read_s = time.monotonic() - t0
        release(init, h)
        ok_read = rstate == "DONE" and np.array_equal(local[: n * SIZE].reshape(n, SIZE), got)
        note = "after the data" if ok_note else "BEFORE THE DATA" if early else "MISSING"
        print(f"{n:7d} descriptors: WRITE {state} {write_s:.2f} s, notification "
              f"{note}, READ {rstate} {read_s:.2f} s"
              f"{'' if ok_data and ok_read else ' WRONG DATA'}")
        bad += not (ok_data and ok_note and ok_read)

    # Released in flight, the destination reused at once.
    lofs = np.arange(n_max, dtype=np.uint64) * SIZE
    rofs = rng.permutation(n_max).astype(np.uint64) * SIZE
    ldesc = descs(init, local.ctypes.data, lofs)
    rdesc = descs(target, remote.ctypes.data, rofs)
    local[:] = 1
    h = init.initialize_xfer("READ", ldesc, rdesc, target.name)
    remote[:] = 2
    posted = init.transfer(h)
    release(init, h)
    local[:] = CANARY
    time.sleep(0.3)
    changed = int(np.count_nonzero(local != CANARY))
    print(f"release right after posting ({posted}): {changed} canary bytes changed later")
    bad += changed != 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
