#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A transfer through NIXL whose completion the device swallows (fault
swallow_completions) is released: the first release_xfer_handle fails
(NIXL_ERR_REPOST_ACTIVE: the op is quarantined after a 1 ms drain), the
second returns only once the op is physically complete: releasing its
handle then does not orphan it (the kernel's stats/ops_orphaned does not
move). stats/ops_live, which falls only when the kernel drops its last
reference a moment later, must then be back within a bound. Regression: the
second release returned success at once (NIXL's agent ignores the backend's
answer there) with the op still quarantined. The drain kills the op's path;
its teardown reclaims the swallowed work request after flush_timeout_ms,
1 s here (put back afterwards) rather than the default 5 s. Exit 0 pass,
1 fail.
"""
import sys
import time
import uuid

import numpy as np

from nixl._api import nixl_agent, nixl_agent_config

STATS = "/sys/class/misc/xferk/stats/"
FAULT = "/sys/kernel/debug/xferk/fault/swallow_completions"
FLUSH = "/sys/module/xferk/parameters/flush_timeout_ms"


def read_int(path):
    with open(path) as f:
        return int(f.read())


def agent():
    a = nixl_agent(str(uuid.uuid4()), nixl_agent_config(backends=[]))
    a.create_backend("XFERK", {"drain_budget_ms": "1"})
    return a


def main():
    init, target = agent(), agent()
    src = np.full(1 << 20, 7, np.uint8)
    dst = np.zeros(1 << 20, np.uint8)
    init.register_memory([(src.ctypes.data, src.nbytes, 0, "")], "DRAM")
    target.register_memory([(dst.ctypes.data, dst.nbytes, 0, "")], "DRAM")
    init.add_remote_agent(target.get_agent_metadata())
    target.add_remote_agent(init.get_agent_metadata())
    local = init.get_xfer_descs([(src.ctypes.data, 4096, 0)], "DRAM")
    remote = target.get_xfer_descs([(dst.ctypes.data, 4096, 0)], "DRAM")
    live = read_int(STATS + "ops_live")
    orphaned = read_int(STATS + "ops_orphaned")

    write(FAULT, 1)
    h = init.initialize_xfer("WRITE", local, remote, target.name)
    state = init.transfer(h)
    deadline = time.monotonic() + 60
    while read_int(FAULT) and time.monotonic() < deadline:
        time.sleep(0.01)
    if read_int(FAULT) or state != "PROC" or init.check_xfer_state(h) != "PROC":
        print(f"setup: completion not swallowed (transfer {state})")
        return 1
    try:
        init.release_xfer_handle(h)
        print("first release succeeded with the completion swallowed")
        return 1
    except Exception as e:  # NIXL_ERR_REPOST_ACTIVE
        print(f"first release refused: {type(e).__name__}")
    t0 = time.monotonic()
    init.release_xfer_handle(h)
    waited = time.monotonic() - t0
    now = read_int(STATS + "ops_orphaned")
    print(f"second release returned after {waited:.2f} s; ops_orphaned {orphaned} before, {now} after")
    if now != orphaned:
        print("the second release returned while the op was still live")
        return 1
    # The kernel's own references (the drain, the completion) go right after.
    deadline = time.monotonic() + 30
    while read_int(STATS + "ops_live") != live and time.monotonic() < deadline:
        time.sleep(0.01)
    if read_int(STATS + "ops_live") != live:
        print(f"ops_live {read_int(STATS + 'ops_live')}, was {live}: the op was not freed")
        return 1
    return 0


def write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


if __name__ == "__main__":
    flush_timeout_ms = read_int(FLUSH)
    write(FLUSH, 1000)
    try:
        rc = main()
    finally:
        write(FLUSH, flush_timeout_ms)
    sys.exit(rc)
