#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The XFERK backend's devices and rails, with a second soft-RoCE device
(rxe1 on dummy1, 10.99.1.1/24, which tests/integration/nixl_rails.sh adds):

- bad parameters fail the backend's creation: a device that does not
  exist, ip_addr with devices, two devices on one subnet, rails 9;
- devices "rxe0,rxe1": a 32 MiB WRITE and a READ back move every byte,
  and both devices carry a share of the packets (their hw_counters);
- rails 1 with the same devices: rxe1 carries (nearly) none of them;
- both again with the target fenced per request (fence=request): the
  request's windows get a rail each through rxe1 as regions do, and once
  the requests are released the target has no window left, on either
  device;
- no parameter and no NIXL_XFERK_IP_ADDR: the engine picks the devices
  itself (xferk_topo.h: here neither has a NUMA node, so both) and
  stripes over both;
- fenced, with the target's rail address unreachable (the sessions the
  earlier transfers left with it reaped, then dummy1 down once the
  metadata is loaded): three WRITEs are DONE and right, rxe1 carries no
  packet, and the engine tried to connect to the rail's address once, not
  once per request (regression: each request waited for a connect to the
  unreachable address again, up to 5 s).

Each transfer runs in a child process, whose exit closes the engines'
files. Exit 0 pass, 1 fail.
"""
import json
import os
import subprocess
import sys
import time
import uuid

import numpy as np

from nixl._api import nixl_agent, nixl_agent_config
from notes import reap, sessions

LEN = 32 << 20
RAIL = "10.99.1.1"  # rxe1's address


def sent_pkts(dev):
    with open(f"/sys/class/infiniband/{dev}/ports/1/hw_counters/sent_pkts") as f:
        return int(f.read())


def exports():
    with open("/sys/class/misc/xferk/stats/exports") as f:
        return int(f.read())


def agent(params):
    a = nixl_agent(str(uuid.uuid4()), nixl_agent_config(backends=[]))
    a.create_backend("XFERK", params)
    return a


def xfer(init, target, op, local, remote):
    h = init.initialize_xfer(op, init.get_xfer_descs([(local.ctypes.data, LEN, 0)], "DRAM"),
                             target.get_xfer_descs([(remote.ctypes.data, LEN, 0)], "DRAM"),
                             target.name)
    state = init.transfer(h)
    while state == "PROC":
        state = init.check_xfer_state(h)
    init.release_xfer_handle(h)
    return state


def transfer(params, want_rxe1):
    """A WRITE and a READ back of LEN bytes between two engines made with
    @params: every byte right, and rxe1's share of the packets sent
    (sent_pkts) at least a quarter (@want_rxe1) or below 1 %. 0 or 1."""
    init, target = agent(params), agent(params)
    src = np.random.default_rng(7).integers(0, 256, LEN, dtype=np.uint8)
    dst = np.zeros(LEN, np.uint8)
    back = np.zeros(LEN, np.uint8)
    init.register_memory([(src.ctypes.data, LEN, 0, ""), (back.ctypes.data, LEN, 0, "")], "DRAM")
    target.register_memory([(dst.ctypes.data, LEN, 0, "")], "DRAM")
    init.add_remote_agent(target.get_agent_metadata())
    target.add_remote_agent(init.get_agent_metadata())
    made = exports()
    before = {d: sent_pkts(d) for d in ("rxe0", "rxe1")}
    w = xfer(init, target, "WRITE", src, dst)
    r = xfer(init, target, "READ", back, dst)
    sent = {d: sent_pkts(d) - before[d] for d in before}
    # A release leaves the windows' close to the engines' worker threads.
    until = time.monotonic() + 10
    while exports() != made and time.monotonic() < until:
        time.sleep(0.01)
    left = exports() - made
    ok = w == "DONE" and r == "DONE" and np.array_equal(src, dst) and np.array_equal(src, back)
    share = sent["rxe1"] / max(1, sent["rxe0"] + sent["rxe1"])
    print(f"{params}: WRITE {w}, READ {r}, data {'verified' if ok else 'WRONG'}; "
          f"packets sent: rxe0 {sent['rxe0']}, rxe1 {sent['rxe1']} ({share:.0%})")
    if want_rxe1 and share < 0.25:
        print("  rxe1 carried less than a quarter: no rail")
        ok = False
    if not want_rxe1 and share >= 0.01:
        print("  rxe1 carried 1 % or more with rails 1")
        ok = False
    if left:
        print(f"  {left} exports or windows left after the releases")
        ok = False
    return int(not ok)


def unreachable():
    """Fenced requests while the target's rail address cannot be reached:
    every byte right, and one connect attempt to it in the log (stderr,
    which the caller counts). 0 or 1."""
    params = {"devices": "rxe0,rxe1", "fence": "request"}
    init, target = agent(params), agent(params)
    src = np.random.default_rng(8).integers(0, 256, LEN, dtype=np.uint8)
    dst = np.zeros(LEN, np.uint8)
    init.register_memory([(src.ctypes.data, LEN, 0, "")], "DRAM")
    target.register_memory([(dst.ctypes.data, LEN, 0, "")], "DRAM")
    init.add_remote_agent(target.get_agent_metadata())
    target.add_remote_agent(init.get_agent_metadata())
    subprocess.run(["ip", "link", "set", "dummy1", "down"], check=True)
    try:
        before = sent_pkts("rxe1")
        states = []
        for _ in range(3):
            dst[:] = 0
            states.append(xfer(init, target, "WRITE", src, dst))
            states[-1] += "" if np.array_equal(src, dst) else " WRONG"
        rxe1 = sent_pkts("rxe1") - before
    finally:
        subprocess.run(["ip", "link", "set", "dummy1", "up"], check=True)
    print(f"rail address down, fenced: WRITEs {states}; rxe1 sent {rxe1} packets")
    return int(states != ["DONE"] * 3 or rxe1 != 0)


def refused(params):
    try:
        agent(params)
    except Exception as e:
        print(f"{params}: refused ({type(e).__name__})")
        return 0
    print(f"{params}: the backend was created")
    return 1


def child(params, want_rxe1, env=None):
    sys.stdout.flush()
    return subprocess.run([sys.executable, __file__, "--transfer", json.dumps(params), str(want_rxe1)],
                          env=env).returncode != 0


def main():
    bad = 0
    for params in ({"devices": "nosuch0"}, {"devices": "rxe0", "ip_addr": "10.99.0.1"},
                   {"devices": "rxe0,10.99.0.1"}, {"devices": "rxe0,rxe1", "rails": "9"}):
        bad |= refused(params)
    bad |= child({"devices": "rxe0,rxe1"}, 1)
    bad |= child({"devices": "rxe0,rxe1", "rails": "1"}, 0)
    bad |= child({"devices": "rxe0,rxe1", "fence": "request"}, 1)
    bad |= child({"devices": "rxe0,rxe1", "fence": "request", "rails": "1"}, 0)
    env = dict(os.environ)
    env.pop("NIXL_XFERK_IP_ADDR", None)
    bad |= child({}, 1, env)
    # The sessions with the rail's address the transfers above left would
    # be shared: the engine would then not connect at all.
    if not reap(RAIL):
        print(f"a session with {RAIL} stayed ({sessions(RAIL)})")
        return 1
    sys.stdout.flush()
    run = subprocess.run([sys.executable, __file__, "--unreachable"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    print(run.stdout, end="")
    tries = run.stdout.count(f"XFERK: connect to {RAIL}")
    print(f"connect attempts to the unreachable rail address: {tries}")
    bad |= run.returncode != 0 or tries != 1
    return bad


if __name__ == "__main__":
    if sys.argv[1:2] == ["--unreachable"]:
        sys.exit(unreachable())
    if sys.argv[1:2] == ["--transfer"]:
        sys.exit(transfer(json.loads(sys.argv[2]), sys.argv[3] == "1"))
    sys.exit(main())
