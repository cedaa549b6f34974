#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""fence=request: a target whose XFERK backend has fence=request gives a
peer no export of its regions, only windows over the blocks of a request
of the peer's, open from the peer's prepXfer to its release
(Documentation/nixl.md, "Per-request windows").

The target's region starts and ends mid-page (100 bytes into an array),
as malloc()ed memory does. Checks, with the count of exports in sysfs:
1. loading the target's metadata makes no export of it;
2. a request of the region's first 1000 bytes, 10 KiB in its middle and
   its last 500 bytes: a WRITE with a notification lands exactly there
   (no other byte of the array changes) and its notification arrives; a
   READ brings the bytes back; while the request lives the target has
   windows, and once it is released (and the engine's worker thread asked
   the target) none;
3. a request of 600 blocks of 4 KiB, every other page, and one of 2 MiB:
   more windows than one can map (256 pages each), a WRITE right;
   40 WRITEs with a notification, each released the moment it is DONE:
   all 40 notifications arrive, once each;
4. remove_remote_agent(initiator) on the target while a request is
   prepared closes its windows; posting the request then fails, and the
   target's bytes stay as they were;
5. a target with max_windows_per_peer=2: two requests of a window each
   are prepared, a third is refused (opening no window) while they
   live, and prepared once one of them is released; its WRITE lands;
6. fence=bogus, and max_windows_per_peer above 65535 or not a number,
   fail the backend's creation.
Exit 0 pass, 1 fail.
"""
import sys
import time

import numpy as np

from notes import backend_agent, notes, refused

STATS = "/sys/class/misc/xferk/stats/"
EDGE = 100
SIZE = 8 << 20


def stat(name):
    with open(STATS + name) as f:
        return int(f.read())


def run(init, h, seconds=60, msg=b"fenced"):
    """@h posted with notification @msg and waited for: its final state,
    "ERR" for an error."""
    try:
        state = init.transfer(h, msg)
        until = time.monotonic() + seconds
        while state == "PROC" and time.monotonic() < until:
            time.sleep(0.001)
            state = init.check_xfer_state(h)
        return state
    except Exception:
        return "ERR"


def windows_left(p, want=0, seconds=10):
    """The target's windows once @want are left, or after @seconds: a
    release leaves the close to the engines' worker threads."""
    until = time.monotonic() + seconds
    while stat("exports") != p.before + want and time.monotonic() < until:
        time.sleep(0.01)
    return stat("exports") - p.before


class Pair:
    def __init__(self, params=None):
        self.init = backend_agent({})
        self.target = backend_agent({"fence": "request", **(params or {})})
        self.arr = np.zeros(SIZE + 2 * EDGE, np.uint8)
        self.dst = self.arr[EDGE:EDGE + SIZE]
        self.src = np.random.default_rng(7).integers(0, 256, SIZE, np.uint8)
        self.init.register_memory([(self.src.ctypes.data, SIZE, 0, "")], "DRAM")
        self.target.register_memory([(self.dst.ctypes.data, SIZE, 0, "")], "DRAM")
        self.target.add_remote_agent(self.init.get_agent_metadata())
        self.before = stat("exports")
        self.init.add_remote_agent(self.target.get_agent_metadata())

    def handle(self, op, blocks):
        """A request of @blocks (offset, length) of the region, from the
        same offsets of the source."""
        local = self.init.get_xfer_descs(
            [(self.src.ctypes.data + o, n, 0) for o, n in blocks], "DRAM")
        remote = self.target.get_xfer_descs(
            [(self.dst.ctypes.data + o, n, 0) for o, n in blocks], "DRAM")
        return self.init.initialize_xfer(op, local, remote, self.target.name, b"fenced")

    def landed(self, blocks):
        """Whether the blocks hold the source's bytes and every other byte
        of the array is still 0."""
        want = np.zeros_like(self.arr)
        for o, n in blocks:
            want[EDGE + o:EDGE + o + n] = self.src[o:o + n]
        return np.array_equal(self.arr, want)


def edges(p):
    bad = 0
    blocks = [(0, 1000), (SIZE // 2 + 123, 10 << 10), (SIZE - 500, 500)]
    h = p.handle("WRITE", blocks)
    during = stat("exports") - p.before
    state = run(p.init, h)
    got = notes(p.target, p.init, 30, bool) if state == "DONE" else []
    ok = state == "DONE" and p.landed(blocks)
    print(f"edges: WRITE {state}, data {'exact' if ok else 'WRONG'}, "
          f"notifications {got}, {during} windows while prepared")
    bad |= not ok or got != [b"fenced"] or during < 1
    p.init.release_xfer_handle(h)
    after = windows_left(p)
    print(f"edges: {after} windows once the release's close was served")
    bad |= after != 0

    p.src[:] = 0
    h = p.handle("READ", blocks)
    state = run(p.init, h)
    p.init.release_xfer_handle(h)
    ok = state == "DONE" and all(
        np.array_equal(p.src[o:o + n], p.dst[o:o + n]) for o, n in blocks)
    print(f"edges: READ back {state}, data {'verified' if ok else 'WRONG'}")
    return bad | (not ok)


def many(p):
    blocks = [(2 * i * 4096, 4096) for i in range(600)] + [(6 << 20, 2 << 20)]
    p.arr[:] = 0
    h = p.handle("WRITE", blocks)
    during = stat("exports") - p.before
    state = run(p.init, h)
    ok = state == "DONE" and p.landed(blocks)
    p.init.release_xfer_handle(h)
    after = windows_left(p)
    print(f"many: 601 descriptors, {during} windows while prepared, WRITE {state}, "
          f"data {'exact' if ok else 'WRONG'}, {after} windows after the release")
    return int(not ok or during < 5 or after != 0)


def quick(p):
    """Requests released the moment they are DONE, before the target took
    their notifications: each notification arrives all the same (the
    target waits for its data events before it closes the windows)."""
    want = [f"quick {i}".encode() for i in range(40)]
    states = []
    for msg in want:
        h = p.handle("WRITE", [(12288, 64 << 10)])
        states.append(run(p.init, h, msg=msg))
        p.init.release_xfer_handle(h)
    # The earlier steps' notifications that nobody took come too.
    def ours(msgs):
        return [m for m in msgs if m.startswith(b"quick ")]

    got = ours(notes(p.target, p.init, 30, lambda msgs: len(ours(msgs)) >= len(want)))
    print(f"quick: {states.count('DONE')} of {len(want)} WRITEs DONE and released at once; "
          f"{len(got)} of their notifications arrived, {len(set(got) & set(want))} different")
    return int(states.count("DONE") != len(want) or sorted(got) != sorted(want))


def fenced(p):
    blocks = [(4096, 64 << 10)]
    p.arr[:] = 0
    h = p.handle("WRITE", blocks)
    during = stat("exports") - p.before
    p.target.remove_remote_agent(p.init.name)
    after = stat("exports") - p.before
    state = run(p.init, h, 30)
    changed = int(np.count_nonzero(p.arr))
    print(f"fenced: {during} windows while prepared, {after} once the target removed "
          f"the initiator; the WRITE then {state}, {changed} bytes changed")
    try:
        p.init.release_xfer_handle(h)
    except Exception:
        pass
    return int(during < 1 or after != 0 or state == "DONE" or changed != 0)


def capped():
    """max_windows_per_peer=2: the third window waits for a release."""
    p = Pair({"max_windows_per_peer": "2"})
    held = [p.handle("WRITE", [(i << 20, 4096)]) for i in range(2)]
    during = stat("exports") - p.before
    try:
        third = p.handle("WRITE", [(2 << 20, 4096)])
        refused_third = False
    except Exception:  # noqa: BLE001 - NIXL raises its own kinds
        third = None
        refused_third = True
    after_refusal = stat("exports") - p.before
    p.init.release_xfer_handle(held.pop())
    left = windows_left(p, 1)
    if third is None:
        third = p.handle("WRITE", [(2 << 20, 4096)])
    state = run(p.init, third)
    ok = state == "DONE" and p.landed([(2 << 20, 4096)])
    print(f"capped: {during} windows for two requests, a third "
          f"{'refused' if refused_third else 'PREPARED'} ({after_refusal} windows then); "
          f"after a release {left}, the third's WRITE {state}, data {'exact' if ok else 'WRONG'}")
    for h in held + [third]:
        p.init.release_xfer_handle(h)
    return int(during != 2 or not refused_third or after_refusal != 2 or left != 1 or not ok)


def main():
    bad = int(not refused({"fence": "bogus"}))
    bad |= int(not refused({"fence": "request", "max_windows_per_peer": "65536"}))
    bad |= int(not refused({"fence": "request", "max_windows_per_peer": "two"}))

    p = Pair()
    made = stat("exports") - p.before
    print(f"loading a fence=request target's metadata made {made} exports")
    bad |= made != 0
    bad |= edges(p)
    bad |= many(p)
    bad |= quick(p)
    bad |= fenced(p)
    bad |= capped()
    return int(bad)


if __name__ == "__main__":
    sys.exit(main())
