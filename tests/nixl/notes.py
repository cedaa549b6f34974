# SPDX-License-Identifier: GPL-2.0
"""What the NIXL tests share (imported from the directory of the script
that runs)."""
import time
import uuid

import numpy as np

from nixl._api import nixl_agent, nixl_agent_config

PEERS = "/sys/kernel/debug/xferk/peers"
IDLE = "/sys/module/xferk/parameters/session_idle_ms"


def sessions(host):
    """(side, QPs) of each live session end with @host (debugfs peers): a
    CONNECT to a host shares a session it opened to this one, too."""
    with open(PEERS) as f:
        rows = [line.split() for line in f]
    cols = rows[0]
    out = []
    for r in rows[1:]:
        row = dict(zip(cols, r))
        if (row.get("peer", "").rsplit(":", 1)[0] == host and
                row.get("state") not in ("down", "closed")):
            out.append((row["side"], int(row["qps"])))
    return out


def reap(host):
    """Ends the sessions with @host that no local object uses
    (session_idle_ms 100 for at most 30 s, then as it was). True when none
    is left."""
    with open(IDLE) as f:
        idle = f.read().strip()
    try:
        with open(IDLE, "w") as f:
            f.write("100")
        until = time.monotonic() + 30
        while sessions(host) and time.monotonic() < until:
            time.sleep(0.1)
    finally:
        with open(IDLE, "w") as f:
            f.write(idle)
    return not sessions(host)


def notes(target, init, seconds, enough=None, tail=0.5):
    """The messages @target delivers from agent @init within @seconds.
    With @enough, a predicate of the messages so far, only until it holds
    and then @tail seconds more, so that a copy coming after them is
    counted too."""
    got = []
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        got += target.get_new_notifs().get(init.name, [])
        if enough is not None and enough(got):
            enough = None
            until = min(until, time.monotonic() + tail)
        time.sleep(0.01)
    return got


def pair(agent, size, fill):
    """Two agents made by @agent() that loaded each other's metadata, the
    initiator's @size bytes of @fill and the target's @size zeroes
    registered: (init, target, src, dst)."""
    init, target = agent(), agent()
    src = np.full(size, fill, np.uint8)
    dst = np.zeros(size, np.uint8)
    init.register_memory([(src.ctypes.data, size, 0, "")], "DRAM")
    target.register_memory([(dst.ctypes.data, size, 0, "")], "DRAM")
    init.add_remote_agent(target.get_agent_metadata())
    target.add_remote_agent(init.get_agent_metadata())
    return init, target, src, dst


def backend_agent(params):
    """An agent with an XFERK backend of @params."""
    a = nixl_agent(str(uuid.uuid4()), nixl_agent_config(backends=[]))
    a.create_backend("XFERK", params)
    return a


def refused(params):
    """Whether an XFERK backend with @params fails to be created (said)."""
    label = " ".join(f"{k}={v}" for k, v in params.items())
    try:
        backend_agent(params)
    except Exception as e:  # noqa: BLE001 - NIXL raises its own kinds
        print(f"{label}: refused ({type(e).__name__})")
        return True
    print(f"{label}: the backend was created")
    return False
