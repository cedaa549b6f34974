#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Abort a transfer through NIXL (release_xfer_handle while it is in
flight), reuse its buffer at once as the next request would, and count the
bytes a late RDMA access changes afterwards.

  abort_reuse.py BACKEND [--size BYTES] [--iterations N]

READ: the initiator's destination is reused (filled with a canary) right
after the release returned; WRITE: the target's buffer is. A release that
fails (xferk: the op is quarantined) is not a license to reuse: the buffer
is reused only once a later release succeeds (xferk's second release waits
until the memory is reusable). Prints one JSON line; exits 1
when a completed transfer is wrong, when no abort hit a transfer in flight
(the experiment proved nothing), or, with --expect-clean, when any byte was
corrupted.
"""
import argparse
import json
import statistics
import sys
import time
import uuid

import numpy as np

from nixl._api import nixl_agent, nixl_agent_config

CANARY = 0xC5
CHUNK = 4096  # one descriptor: more than a send queue holds in all
SETTLE_S = 0.3


def agent(backend):
    return nixl_agent(str(uuid.uuid4()), nixl_agent_config(backends=[backend]))


def descs(a, arr, n):
    base = arr.ctypes.data
    return a.get_xfer_descs([(base + i * CHUNK, CHUNK, 0) for i in range(n)], "DRAM")


def release(a, h):
    """Releases @h; returns (ms it took, refused releases before it)."""
    refused = 0
    t0 = time.monotonic()
    while True:
        try:
            a.release_xfer_handle(h)
            return (time.monotonic() - t0) * 1e3, refused
        except Exception:  # the backend could not abort it (yet)
            refused += 1
            time.sleep(0.05)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("backend")
    p.add_argument("--size", type=int, default=8 << 20)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--expect-clean", action="store_true")
    args = p.parse_args()
    n = args.size // CHUNK
    init, target = agent(args.backend), agent(args.backend)
    local = np.zeros(n * CHUNK, np.uint8)
    remote = np.zeros(n * CHUNK, np.uint8)
    init.register_memory([(local.ctypes.data, local.nbytes, 0, "")], "DRAM")
    target.register_memory([(remote.ctypes.data, remote.nbytes, 0, "")], "DRAM")
    init.add_remote_agent(target.get_agent_metadata())
    target.add_remote_agent(init.get_agent_metadata())
    ldesc, rdesc = descs(init, local, n), descs(target, remote, n)

    # A transfer that is not aborted moves every byte.
    remote[:] = np.arange(remote.nbytes, dtype=np.uint64).astype(np.uint8)
    h = init.initialize_xfer("READ", ldesc, rdesc, target.name)
    t0 = time.monotonic()
    state = init.transfer(h)
    while state == "PROC" and time.monotonic() - t0 < 120:
        state = init.check_xfer_state(h)
    full_read_ms = (time.monotonic() - t0) * 1e3
    init.release_xfer_handle(h)
    if state != "DONE" or not np.array_equal(local, remote):
        print(f"{args.backend}: a complete READ left wrong data (state {state})")
        return 1

    result = {"backend": args.backend, "bytes": n * CHUNK, "iterations": args.iterations,
              "full_read_ms": round(full_read_ms, 2)}
    for op in ("READ", "WRITE"):
        reused = local if op == "READ" else remote
        in_flight = refused = corrupted = dirty = 0
        states = {}  # "transfer()/check_xfer_state()" -> iterations
        release_ms = []
        for it in range(args.iterations):
            # Never the canary.
            local[:] = (it % 100) + 1
            remote[:] = (it % 100) + 2
            h = init.initialize_xfer(op, ldesc, rdesc, target.name)
            posted = init.transfer(h)
            checked = init.check_xfer_state(h) if posted == "PROC" else "-"
            states[f"{posted}/{checked}"] = states.get(f"{posted}/{checked}", 0) + 1
            in_flight += checked == "PROC"
            ms, r = release(init, h)
            release_ms.append(ms)
            refused += r
            # The next request's data, written the moment the buffer was
            # handed back; anything else there later is a late access.
            reused[:] = CANARY
            time.sleep(SETTLE_S)
            bad = int(np.count_nonzero(reused != CANARY))
            corrupted += bad
            dirty += bad > 0
        result[op] = {"aborted_in_flight": in_flight, "release_refused": refused,
                      "corrupted_bytes": corrupted, "corrupted_iterations": dirty,
                      "release_ms_median": round(statistics.median(release_ms), 2),
                      "release_ms_max": round(max(release_ms), 2), "states": states}
    print(json.dumps(result))
    if not any(result[op]["aborted_in_flight"] for op in ("READ", "WRITE")):
        print(f"{args.backend}: no abort hit a transfer in flight; use a larger --size")
        return 1
    if args.expect_clean and any(result[op]["corrupted_bytes"] for op in ("READ", "WRITE")):
        print(f"{args.backend}: a late RDMA access changed a buffer after its release")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
