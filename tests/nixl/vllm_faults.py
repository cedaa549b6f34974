#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Faults under the vLLM-shaped workload of vllm_shape.py, between two
hosts through NIXL's Python API; the host script (tests/twohost/98_nixl_faults.sh)
makes the faults when the initiator says its requests are in flight.

  vllm_faults.py target BACKEND DIR GEN
  vllm_faults.py initiator BACKEND DIR

The target serves generation GEN: it publishes its metadata as
target.GEN.md and target.GEN.json, records every notification (checking a
WRITE's blocks the moment its notification arrives) until DIR/initiator.done
appears (with the initiator's outcomes) and the notification of each
WRITE that succeeded is in, and then writes them to target.GEN.result.

The initiator:
1. loads generation 1, posts four READs with a notification each and
   leaves posted.1, on which that target kills itself (SIGKILL). At least
   one READ must be hit; every request must end (NIXL_ERR or DONE, never
   stay in progress) and be released;
2. drops the dead agent, loads generation 2 (a new process on the same
   host) and READs four requests with notifications: all DONE, every byte
   right;
3. posts four WRITEs with a notification each and leaves posted.2: the
   host takes the target's link down for 8 s (past the retry window: the
   path dies and is replaced, which this host's xferk counts). Each
   request ends; generation 2 must have delivered the notification of
   each WRITE that succeeded exactly once, of a failed one at most once,
   and never before its data.
The calls of the data path and the loading and dropping of a remote
agent (BOUNDS) are timed: none may take longer than its bound.
Prints one JSON line; exits 1 on any of the above.
"""
import json
import os
import signal
import sys
import time

import numpy as np

import vllm_shape
from vllm_shape import REGIONS, Shape, landed, make_agent, move_all, pattern, publish, wait_file

# The longest a call of the data path, or loading or dropping a remote
# agent, may take, in seconds (Documentation/nixl.md, "How long a call can
# block", with room for a loaded host): postXfer may
# connect (5 s) and send the notification (10 s); checkXfer and getNotifs
# only ask the kernel; a release waits for the ops to be reusable (drain
# budget, lost completion, flush: about 35 s).
BOUNDS = {"transfer": 20, "check_xfer_state": 5, "get_new_notifs": 5,
          "release_xfer_handle": 40, "add_remote_agent": 20, "remove_remote_agent": 20}
STEP_S = 120


class Timed:
    """Calls an agent's methods, keeping the longest time of each."""

    def __init__(self, agent):
        self.agent = agent
        self.longest = {}

    def __getattr__(self, name):
        method = getattr(self.agent, name)
        if name not in BOUNDS:
            return method

        def call(*args):
            t0 = time.monotonic()
            try:
                return method(*args)
            finally:
                took = time.monotonic() - t0
                self.longest[name] = max(self.longest.get(name, 0), took)
        return call

    def over_bound(self):
        return {k: round(v, 2) for k, v in self.longest.items() if v > BOUNDS[k]}


class Args:
    reqs = 4
    block = 256


def target(backend, d, gen):
    shape = Shape(Args)
    a, regions = make_agent(f"prefill{gen}-{os.getpid()}", backend, shape)
    a = Timed(a)
    for r in range(REGIONS):
        regions[r][:] = pattern(1, r, shape.region_bytes)
    publish(os.path.join(d, f"target.{gen}.md"), a.get_agent_metadata())
    publish(os.path.join(d, f"target.{gen}.json"), json.dumps(
        {"name": a.name, "bases": [x.ctypes.data for x in regions]}).encode())
    written = [pattern(2, r, shape.region_bytes).reshape(shape.blocks, shape.block)
               for r in range(REGIONS)]
    seen, early = {}, []
    done = os.path.join(d, "initiator.done")
    owed, settle = None, None
    until = time.monotonic() + 3 * STEP_S
    while time.monotonic() < until and (settle is None or time.monotonic() < settle):
        # Generation 1 dies (SIGKILL) the moment the initiator's READs are
        # posted: sooner than the host could kill it.
        if gen == 1 and os.path.exists(os.path.join(d, "posted.1")):
            os.kill(os.getpid(), signal.SIGKILL)
        for msgs in a.get_new_notifs().values():
            for m in msgs:
                m = m.decode()
                seen[m] = seen.get(m, 0) + 1
                if m.startswith("write ") and not landed(shape, regions, written,
                                                         int(m.split()[1])):
                    early.append(m)
        # The initiator is done: the notification of each WRITE it saw
        # succeed may still be on its way (it follows the data); once they
        # are all in, one more second, in which a duplicate would show.
        if owed is None and os.path.exists(done):
            with open(done, "rb") as f:
                states = json.loads(f.read() or b"{}").get("link_down", [])
            owed = {f"write {i}" for i, st in enumerate(states) if st == "DONE"}
            until = min(until, time.monotonic() + 30)
        if owed is not None and settle is None and owed <= seen.keys():
            settle = time.monotonic() + 1
        time.sleep(0.01)
    result = {"side": "target", "generation": gen, "notifications": seen,
              "before_data": early, "over_bound": a.over_bound()}
    print(json.dumps(result))
    publish(os.path.join(d, f"target.{gen}.result"), json.dumps(result).encode())
    return 0


def load(a, d, gen):
    md = wait_file(os.path.join(d, f"target.{gen}.md"))
    info = json.loads(wait_file(os.path.join(d, f"target.{gen}.json")))
    peer = a.add_remote_agent(md)
    return peer.decode() if isinstance(peer, bytes) else peer, info["bases"]


def run(a, shape, ldescs, rdescs, peer, op, d, mark=None):
    """vllm_shape.move_all(), leaving @mark in @d once the requests are
    posted, if given."""
    posted = (lambda: publish(os.path.join(d, mark), b"")) if mark else None
    return move_all(a, shape, ldescs, rdescs, peer, op, posted)


def reconnects():
    """This host's xferk sessions that replaced a dead path, so far."""
    with open("/sys/class/misc/xferk/stats/reconnects") as f:
        return int(f.read())


def initiator(backend, d):
    shape = Shape(Args)
    a, regions = make_agent(f"decode-{os.getpid()}", backend, shape)
    a = Timed(a)
    local = [x.ctypes.data for x in regions]
    ldescs = [shape.descs(a, local, shape.local_blocks(i)) for i in range(shape.reqs)]
    result = {"side": "initiator", "backend": backend}
    bad = []

    # 1. The target's process is killed under four READs.
    peer, bases = load(a, d, 1)
    rdescs = [shape.descs(a, bases, shape.remote_blocks(i)) for i in range(shape.reqs)]
    states = run(a, shape, ldescs, rdescs, peer, "READ", d, "posted.1")
    result["killed_target"] = states
    if "PROC" in states:
        bad.append("a request stayed in progress after its target was killed")
    if states == ["DONE"] * shape.reqs:
        bad.append("every READ was done before the kill: it tested nothing")
    a.remove_remote_agent(peer)

    # 2. Its successor serves every byte.
    peer, bases = load(a, d, 2)
    rdescs = [shape.descs(a, bases, shape.remote_blocks(i)) for i in range(shape.reqs)]
    states = run(a, shape, ldescs, rdescs, peer, "READ", d)
    result["new_target"] = states
    want = [pattern(1, r, shape.region_bytes).reshape(shape.blocks, shape.block)
            for r in range(REGIONS)]
    wrong = sum(not np.array_equal(shape.local_view(regions, r, i), want[r][shape.remote_blocks(i)])
                for i in range(shape.reqs) for r in range(REGIONS))
    if states != ["DONE"] * shape.reqs or wrong:
        bad.append(f"READs from the new target: {states}, {wrong} regions wrong")

    # 3. The target's link goes down for 8 s under four WRITEs.
    for r in range(REGIONS):
        regions[r][:] = pattern(2, r, shape.region_bytes)
    before = reconnects()
    states = run(a, shape, ldescs, rdescs, peer, "WRITE", d, "posted.2")
    result["link_down"] = states
    if "PROC" in states:
        bad.append("a request stayed in progress across the outage")
    # The outage hit the WRITEs: the path died under them and the session
    # replaced it. WRITEs that all succeeded did so on the new path, so it
    # is counted by now (later, an idle session's keepalive would find the
    # outage too); one that failed may have ended before the reconnect.
    if states != ["DONE"] * shape.reqs:
        until = time.monotonic() + 30
        while reconnects() == before and time.monotonic() < until:
            time.sleep(0.1)
    result["reconnects"] = reconnects() - before
    if not result["reconnects"]:
        bad.append("no session reconnected under the WRITEs: the outage missed them")
    publish(os.path.join(d, "initiator.done"), json.dumps(result).encode())
    seen = json.loads(wait_file(os.path.join(d, "target.2.result")))
    for i, s in enumerate(states):
        n = seen["notifications"].get(f"write {i}", 0)
        if (s == "DONE" and n != 1) or n > 1:
            bad.append(f"write {i} ended {s}, its notification was delivered {n} times")
    if seen["before_data"]:
        bad.append(f"notifications before their data: {seen['before_data']}")
    result["over_bound"] = a.over_bound()
    result["longest_s"] = {k: round(v, 2) for k, v in a.longest.items()}
    if result["over_bound"] or seen["over_bound"]:
        bad.append(f"calls past their bound: {result['over_bound']} {seen['over_bound']}")
    result["failures"] = bad
    print(json.dumps(result))
    return 1 if bad else 0


def main():
    vllm_shape.BOUND_S = STEP_S
    role, backend, d = sys.argv[1:4]
    if role == "target":
        return target(backend, d, int(sys.argv[4]))
    try:
        return initiator(backend, d)
    finally:
        # The target serves until then (an initiator that failed early
        # leaves it without outcomes).
        if not os.path.exists(os.path.join(d, "initiator.done")):
            publish(os.path.join(d, "initiator.done"), b"")


if __name__ == "__main__":
    sys.exit(main())
