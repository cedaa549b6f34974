#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The XFERK backend's parameters: qps above 8 fails the backend's
creation; with qps 2 a transfer moves its bytes, and the session the
engine opened has 2 QPs per path (debugfs peers). A session with the
address that exists is shared as it is, so those earlier tests left are
reaped first (session_idle_ms, for a moment); if one stays, the QPs are
not judged, which is printed. The engines run in a child process, and
their sessions are reaped once it exited: a later test sharing a session
of 2 QPs would see DATA events out of submit order. Exit 0 pass, 1 fail.
"""
import os
import subprocess
import sys

import numpy as np

from notes import PEERS, backend_agent, reap, refused, sessions

def transfer(judge):
    """With qps 2: a WRITE moves its bytes, and (@judge) the session the
    engine opened has 2 QPs. Run in a child process, whose exit closes
    the engines' files: their sessions are then unused. 0 or 1."""
    host = os.environ["NIXL_XFERK_IP_ADDR"]
    init, target = backend_agent({"qps": "2"}), backend_agent({"qps": "2"})
    src = np.arange(1 << 20, dtype=np.uint32).view(np.uint8)[: 1 << 20].copy()
    dst = np.zeros(1 << 20, np.uint8)
    init.register_memory([(src.ctypes.data, src.nbytes, 0, "")], "DRAM")
    target.register_memory([(dst.ctypes.data, dst.nbytes, 0, "")], "DRAM")
    init.add_remote_agent(target.get_agent_metadata())
    target.add_remote_agent(init.get_agent_metadata())
    h = init.initialize_xfer("WRITE", init.get_xfer_descs([(src.ctypes.data, src.nbytes, 0)], "DRAM"),
                             target.get_xfer_descs([(dst.ctypes.data, dst.nbytes, 0)], "DRAM"),
                             target.name)
    state = init.transfer(h)
    while state == "PROC":
        state = init.check_xfer_state(h)
    init.release_xfer_handle(h)
    ok = state == "DONE" and np.array_equal(src, dst)
    print(f"qps 2: WRITE {state}, data {'verified' if ok else 'WRONG'}")
    bad = not ok
    if judge:
        now = sessions(host)
        print(f"sessions with {host} now (side, qps): {now}")
        if not any(side == "active" and qps == 2 for side, qps in now):
            print("no session the engine opened has 2 QPs; debugfs peers:")
            with open(PEERS) as f:
                print(f.read())
            bad = True
    return int(bad)


def main():
    bad = int(not refused({"qps": "9"}))

    host = os.environ["NIXL_XFERK_IP_ADDR"]
    judge = reap(host)
    if not judge:
        print(f"a session with {host} stayed ({sessions(host)}): its QPs are not judged")
    sys.stdout.flush()
    bad |= subprocess.run([sys.executable, __file__, "--transfer", str(int(judge))]).returncode != 0
    # Its sessions of 2 QPs go with it: later tests expect the module's
    # default on a shared session (one QP keeps DATA events in order).
    if not reap(host):
        print(f"sessions with {host} stayed after the engines went: {sessions(host)}")
        bad = 1
    return bad


if __name__ == "__main__":
    if sys.argv[1:2] == ["--transfer"]:
        sys.exit(transfer(sys.argv[2] == "1"))
    sys.exit(main())
