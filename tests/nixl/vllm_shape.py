#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A vLLM-shaped workload through NIXL's Python API between two hosts.

  vllm_shape.py target|initiator BACKEND DIR [--reqs N] [--block BYTES]
                [--aborts N] [--target-aborts N] [--bound SECONDS]
                [--expect-clean]

Both sides register the KV cache of a 32-layer model: 64 regions (K and V
of each layer), each of (REQS + 1) x 128 blocks of BLOCK bytes, every
region its own buffer. A request names 128 blocks of every region: 8,192
descriptors. The initiator (decode, as vLLM's NixlConnector) holds its
request's blocks contiguous; the target's (prefill) are scattered by a
fixed permutation.

The target fills its regions with one pattern, publishes its metadata and
addresses in DIR and serves until the initiator leaves initiator.done
there and every notification is in. The initiator, with REQS requests in
flight at a time:
- READs them with a notification each (vLLM's direction) and checks every
  byte it read;
- WRITEs its own pattern into them with a notification each (SGLang's
  direction); the target checks every byte of a request the moment its
  notification arrives: a notification before its data is a failure;
- aborts: WRITEs a byte other than the canary into the blocks of one more
  request, then READs it and releases the handle right after posting (a
  refused release is retried: only a release that succeeded hands the
  blocks back), fills its blocks with a canary at once, as the next
  request would, and counts the bytes that change in the next 0.3 s;
- target aborts: WRITEs that request's blocks again, with a byte that is
  not the canary; the moment it is posted the target gives up on the
  request as a prefill engine does after its abort timeout: it lets go of
  the initiator (remove_remote_agent(), what Documentation/nixl.md asks of
  an engine before it frees blocks), fills its blocks of the request with
  the canary at once, and once the WRITE ended counts the bytes that
  changed 0.3 s later; the initiator then loads the target's metadata
  again.
Each side prints one JSON line. Exit 1 on a wrong byte, a missing or early
notification, a step that did not end within its bound, or (with
--expect-clean) a byte a late access changed, or no abort (of either
kind) that hit a transfer in flight.
"""
import argparse
import json
import os
import sys
import time
import uuid

import numpy as np

from nixl._api import nixl_agent, nixl_agent_config

REGIONS = 64
REQ_BLOCKS = 128
CANARY = 0xC5
FILL = 0x11  # what the target's blocks of the aborted request hold
LATE = 0x22  # what the initiator writes in the target aborts
SETTLE_S = 0.3
BOUND_S = 120  # --bound


def pattern(salt, region, nbytes):
    """The bytes a side writes into @region (a function both sides know)."""
    x = np.arange(nbytes, dtype=np.uint32) * np.uint32(2654435761)
    return ((x + np.uint32(region * 40503 + salt)) >> np.uint32(13)).astype(np.uint8)


class Shape:
    def __init__(self, args):
        self.block = args.block
        self.reqs = args.reqs
        # One request more than are moved at once: the aborts' own.
        self.blocks = (args.reqs + 1) * REQ_BLOCKS
        self.region_bytes = self.blocks * self.block
        # The target's blocks of request i: perm[i * 128:(i + 1) * 128].
        self.perm = np.random.default_rng(7).permutation(self.blocks)

    def local_blocks(self, i):
        return np.arange(i * REQ_BLOCKS, (i + 1) * REQ_BLOCKS)

    def local_view(self, regions, r, i):
        """Request @i's blocks of region @r on the initiator, writable (a
        slice: indexing by an array would give a copy)."""
        return regions[r].reshape(self.blocks, self.block)[i * REQ_BLOCKS:(i + 1) * REQ_BLOCKS]

    def remote_blocks(self, i):
        return self.perm[i * REQ_BLOCKS:(i + 1) * REQ_BLOCKS]

    def descs(self, agent, bases, blocks):
        """8,192 descriptors: @blocks of every region, region by region."""
        d = np.zeros((REGIONS * len(blocks), 3), np.uint64)
        offs = blocks.astype(np.uint64) * np.uint64(self.block)
        for r, base in enumerate(bases):
            d[r * len(blocks):(r + 1) * len(blocks), 0] = np.uint64(base) + offs
        d[:, 1] = self.block
        return agent.get_xfer_descs(d, "DRAM")

    def view(self, regions, r, blocks):
        """A copy of @blocks of region @r."""
        return regions[r].reshape(self.blocks, self.block)[blocks]


def make_agent(name, backend, shape):
    a = nixl_agent(name, nixl_agent_config(backends=[backend]))
    regions = [np.zeros(shape.region_bytes, np.uint8) for _ in range(REGIONS)]
    a.register_memory([(x.ctypes.data, x.nbytes, 0, "") for x in regions], "DRAM")
    return a, regions


def publish(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.rename(path + ".tmp", path)


def abort_file(directory, k, what):
    """The file in which a side says @what of target abort @k."""
    return os.path.join(directory, f"tabort-{k}.{what}")


def wait_file(path):
    until = time.monotonic() + BOUND_S
    while not os.path.exists(path):
        if time.monotonic() > until:
            raise SystemExit(f"{path} did not appear within {BOUND_S} s")
        time.sleep(0.1)
    with open(path, "rb") as f:
        return f.read()


def landed(shape, regions, written, i):
    """Whether the target's blocks of request @i hold what the initiator
    wrote (@written: its regions' pattern, as blocks)."""
    return all(np.array_equal(shape.view(regions, r, shape.remote_blocks(i)),
                              written[r][shape.local_blocks(i)]) for r in range(REGIONS))


def target(args, shape):
    a, regions = make_agent("prefill-" + uuid.uuid4().hex[:8], args.backend, shape)
    for r in range(REGIONS):
        regions[r][:] = pattern(1, r, shape.region_bytes)
    publish(os.path.join(args.dir, "target.md"), a.get_agent_metadata())
    publish(os.path.join(args.dir, "target.json"), json.dumps(
        {"name": a.name, "bases": [x.ctypes.data for x in regions]}).encode())
    written = [pattern(2, r, shape.region_bytes).reshape(shape.blocks, shape.block)
               for r in range(REGIONS)]
    want = {f"read {i}" for i in range(shape.reqs)} | {f"write {i}" for i in range(shape.reqs)}
    seen, early, dup = set(), [], []
    aborts = TargetAborts(args, shape, a, regions)
    done = os.path.join(args.dir, "initiator.done")
    # Serves until the initiator is done and every notification is in
    # (one may arrive after its transfer reported done): at most 30 s
    # after the initiator is done, and four steps' bound in all.
    until = time.monotonic() + 4 * BOUND_S
    grace = None
    while time.monotonic() < until and (seen != want or grace is None):
        if grace is None and os.path.exists(done):
            grace = time.monotonic() + 30
            until = min(until, grace)
        aborts.step()
        for msgs in a.get_new_notifs().values():
            for m in msgs:
                m = m.decode()
                if m in seen or m not in want:
                    dup.append(m)
                    continue
                seen.add(m)
                if m.startswith("write ") and not landed(shape, regions, written,
                                                         int(m.split()[1])):
                    early.append(m)
        time.sleep(0.01)
    missing = sorted(want - seen)
    print(json.dumps({"side": "target", "backend": args.backend, "notifications": len(seen),
                      "missing": missing, "before_data": early, "unexpected": dup,
                      "target_aborts": aborts.result()}))
    unclean = args.expect_clean and aborts.corrupted
    return 1 if missing or early or dup or aborts.k < args.target_aborts or unclean else 0


class TargetAborts:
    """The target's side of the target aborts (the initiator's is
    target_aborts()), one step per call: once the initiator's metadata is
    in DIR it loads it; on tabort-K.posted it lets go of the initiator,
    fills its blocks of the aborted request with the canary and says
    tabort-K.revoked; on tabort-K.ended it counts, SETTLE_S later, the bytes
    that changed, loads the initiator's metadata again (for the next
    abort) and says tabort-K.counted."""

    def __init__(self, args, shape, agent, regions):
        self.dir, self.shape, self.a, self.regions = args.dir, shape, agent, regions
        self.k = 0
        self.peer = None  # the initiator's name once its metadata is loaded
        self.revoked = False  # tabort-K.revoked said
        self.revoke_s = 0.0  # the longest remove_remote_agent()
        self.corrupted = 0

    def path(self, what):
        return abort_file(self.dir, self.k, what)

    def blocks(self, r):
        return self.shape.view(self.regions, r, self.shape.remote_blocks(self.shape.reqs))

    def load(self):
        with open(os.path.join(self.dir, "initiator.md"), "rb") as f:
            peer = self.a.add_remote_agent(f.read())
        self.peer = peer.decode() if isinstance(peer, bytes) else peer

    def step(self):
        if self.peer is None:
            if os.path.exists(os.path.join(self.dir, "initiator.md")):
                self.load()
        elif not self.revoked and os.path.exists(self.path("posted")):
            t0 = time.monotonic()
            self.a.remove_remote_agent(self.peer)
            self.revoke_s = max(self.revoke_s, time.monotonic() - t0)
            mine = self.shape.remote_blocks(self.shape.reqs)
            for r in range(REGIONS):
                self.regions[r].reshape(self.shape.blocks, self.shape.block)[mine] = CANARY
            self.revoked = True
            publish(self.path("revoked"), b"")
        elif self.revoked and os.path.exists(self.path("ended")):
            time.sleep(SETTLE_S)
            self.corrupted += sum(int(np.count_nonzero(self.blocks(r) != CANARY))
                                  for r in range(REGIONS))
            self.load()
            publish(self.path("counted"), b"")
            self.revoked = False
            self.k += 1

    def result(self):
        return {"iterations": self.k, "corrupted_bytes": self.corrupted,
                "longest_remove_s": round(self.revoke_s, 3)}


def post_all(a, handles):
    """Posts @handles; returns what each post said (a state, or the name
    of the exception NIXL raised)."""
    states = []
    for h in handles:
        try:
            states.append(a.transfer(h))
        except Exception as e:  # noqa: BLE001 - NIXL raises its own kinds
            states.append(type(e).__name__)
    return states


def wait_all(a, handles, states):
    """Polls the posted @handles (@states: what their posts said) until
    none is in progress, within BOUND_S; returns their states."""
    until = time.monotonic() + BOUND_S
    while "PROC" in states and time.monotonic() < until:
        for i, h in enumerate(handles):
            if states[i] == "PROC":
                try:
                    states[i] = a.check_xfer_state(h)
                except Exception as e:  # noqa: BLE001
                    states[i] = type(e).__name__
        time.sleep(0.01)
    return states


def move_all(a, shape, ldescs, rdescs, peer, op, posted=None):
    """Posts requests 0 .. REQS - 1 as @op, each with the notification
    "read I" or "write I", calls @posted() once they are posted, waits for
    each to end and releases it; returns their states."""
    handles = [a.initialize_xfer(op, ldescs[i], rdescs[i], peer, f"{op.lower()} {i}".encode())
               for i in range(shape.reqs)]
    states = post_all(a, handles)
    if posted:
        posted()
    states = wait_all(a, handles, states)
    for h in handles:
        release(a, h)
    return states


def release(a, h):
    """Releases @h, retrying a refusal; returns the refusals."""
    refused = 0
    until = time.monotonic() + BOUND_S
    while True:
        try:
            a.release_xfer_handle(h)
            return refused
        except Exception:  # not reusable yet
            refused += 1
            if time.monotonic() > until:
                raise
            time.sleep(0.05)


def load(a, md):
    """The name of the agent whose metadata @md @a loads."""
    peer = a.add_remote_agent(md)
    return peer.decode() if isinstance(peer, bytes) else peer


def state_now(a, h):
    """check_xfer_state(), or the name of the exception it raised."""
    try:
        return a.check_xfer_state(h)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__


def target_aborts(args, shape, a, regions, ldescs, rdescs, peer, md):
    """The initiator's side of the target aborts (TargetAborts): WRITEs
    the aborted request's blocks, says so, and once the target let go of
    it notes whether the WRITE was still in flight; once it ended, says so,
    and once the target counted, loads the target's metadata again (NIXL
    may have forgotten the target already: a transfer that ends
    NIXL_ERR_REMOTE_DISCONNECT makes it). Returns (peer, what to report)."""
    x = shape.reqs
    in_flight, ended = 0, []
    for k in range(args.target_aborts):
        for r in range(REGIONS):
            shape.local_view(regions, r, x)[:] = LATE
        h = a.initialize_xfer("WRITE", ldescs[x], rdescs[x], peer)
        posted = post_all(a, [h])
        publish(abort_file(args.dir, k, "posted"), b"")
        wait_file(abort_file(args.dir, k, "revoked"))
        # Hit in flight: posted, and still in progress when the target let
        # go or ended by it (the target's remove_remote_agent() may wait
        # until this side's kernel stopped the WRITE).
        during = state_now(a, h) if posted == ["PROC"] else posted[0]
        states = wait_all(a, [h], list(posted))
        in_flight += posted == ["PROC"] and (during == "PROC" or states != ["DONE"])
        ended += states
        release(a, h)
        publish(abort_file(args.dir, k, "ended"), b"")
        wait_file(abort_file(args.dir, k, "counted"))
        try:
            a.remove_remote_agent(peer)
        except Exception:  # noqa: BLE001 - forgotten already
            pass
        peer = load(a, md)
    return peer, {"iterations": args.target_aborts, "in_flight": in_flight, "ended": ended}


def initiator(args, shape):
    md = wait_file(os.path.join(args.dir, "target.md"))
    info = json.loads(wait_file(os.path.join(args.dir, "target.json")))
    a, regions = make_agent("decode-" + uuid.uuid4().hex[:8], args.backend, shape)
    publish(os.path.join(args.dir, "initiator.md"), a.get_agent_metadata())
    peer = load(a, md)
    local_bases = [x.ctypes.data for x in regions]
    ldescs = [shape.descs(a, local_bases, shape.local_blocks(i)) for i in range(shape.reqs + 1)]
    rdescs = [shape.descs(a, info["bases"], shape.remote_blocks(i))
              for i in range(shape.reqs + 1)]
    target_pattern = [pattern(1, r, shape.region_bytes).reshape(shape.blocks, shape.block)
                      for r in range(REGIONS)]
    result = {"side": "initiator", "backend": args.backend, "requests": shape.reqs,
              "descriptors_per_request": REGIONS * REQ_BLOCKS, "block": shape.block}
    bad = 0

    # READ with notifications, every request in flight at once.
    t0 = time.monotonic()
    states = move_all(a, shape, ldescs, rdescs, peer, "READ")
    result["read_s"] = round(time.monotonic() - t0, 3)
    wrong = sum(not np.array_equal(shape.local_view(regions, r, i),
                                   target_pattern[r][shape.remote_blocks(i)])
                for i in range(shape.reqs) for r in range(REGIONS))
    result["read_states"], result["read_wrong_regions"] = states, wrong
    bad += wrong or any(s != "DONE" for s in states)

    # WRITE with notifications: the target checks each on arrival.
    for r in range(REGIONS):
        regions[r][:] = pattern(2, r, shape.region_bytes)
    t0 = time.monotonic()
    states = move_all(a, shape, ldescs, rdescs, peer, "WRITE")
    result["write_s"] = round(time.monotonic() - t0, 3)
    result["write_states"] = states
    bad += any(s != "DONE" for s in states)

    # Aborts: a request of blocks of their own (the target checks the
    # others' data as their notifications come) released right after
    # posting, its blocks reused. Its blocks on the target first get a byte
    # that is not the canary, so that every byte a late READ brings shows.
    x = shape.reqs
    for r in range(REGIONS):
        shape.local_view(regions, r, x)[:] = FILL
    h = a.initialize_xfer("WRITE", ldescs[x], rdescs[x], peer)
    if wait_all(a, [h], post_all(a, [h])) != ["DONE"]:
        bad += 1
    release(a, h)
    in_flight = refused = corrupted = 0
    for _ in range(args.aborts):
        h = a.initialize_xfer("READ", ldescs[x], rdescs[x], peer)
        posted = a.transfer(h)
        in_flight += posted == "PROC" and a.check_xfer_state(h) == "PROC"
        refused += release(a, h)
        for r in range(REGIONS):
            shape.local_view(regions, r, x)[:] = CANARY
        time.sleep(SETTLE_S)
        corrupted += sum(int(np.count_nonzero(shape.local_view(regions, r, x) != CANARY))
                         for r in range(REGIONS))
    result["aborts"] = {"iterations": args.aborts, "in_flight": in_flight,
                        "release_refused": refused, "corrupted_bytes": corrupted}
    if args.expect_clean:
        bad += corrupted > 0 or in_flight == 0

    # Target aborts: the target counts the bytes that changed.
    peer, result["target_aborts"] = target_aborts(args, shape, a, regions, ldescs, rdescs,
                                                  peer, md)
    if args.expect_clean:
        bad += result["target_aborts"]["in_flight"] == 0
    print(json.dumps(result))
    a.deregister_memory(a.get_reg_descs(
        [(x.ctypes.data, x.nbytes, 0, "") for x in regions], "DRAM"))
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["target", "initiator"])
    p.add_argument("backend")
    p.add_argument("dir")
    p.add_argument("--reqs", type=int, default=4)
    p.add_argument("--block", type=int, default=256)
    p.add_argument("--aborts", type=int, default=5)
    p.add_argument("--target-aborts", type=int, default=3)
    p.add_argument("--expect-clean", action="store_true")
    p.add_argument("--bound", type=float, default=BOUND_S,
                   help="seconds any one step may take")
    args = p.parse_args()
    globals()["BOUND_S"] = args.bound
    shape = Shape(args)
    if args.role == "target":
        return target(args, shape)
    try:
        return initiator(args, shape)
    finally:
        # The target serves until then.
        publish(os.path.join(args.dir, "initiator.done"), b"")


if __name__ == "__main__":
    sys.exit(main())
