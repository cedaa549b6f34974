#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The XFERK backend over IPv6, its control listener on a port of the
caller's choosing (backend parameters ip_addr and ctrl_port).

Two engines at ADDR (an IPv6 address of rxe0's network device, argv[1];
one spelled with leading zeros) move a WRITE and its notification, and a
READ back; the listener of the engine given ctrl_port is bound to ADDR
and that port (/proc/net/tcp6). Creation fails for an ip_addr that is
not an address or is "::", a ctrl_port out of range, and a ctrl_port
another engine listens on. Exit 0 pass, 1 fail.
"""
import ipaddress
import sys
import time

import numpy as np

from notes import backend_agent, notes, refused

PORT = 18600
SIZE = 1 << 20


def listening(addr, port):
    """Is a TCP socket listening on [addr]:port (/proc/net/tcp6)?"""
    want = ipaddress.IPv6Address(addr).packed
    with open("/proc/net/tcp6") as f:
        rows = [line.split() for line in f][1:]
    for r in rows:
        local, state = r[1], r[3]
        hexaddr, hexport = local.split(":")
        # Four 32-bit words, each in the host's (little-endian) order.
        raw = b"".join(bytes.fromhex(hexaddr[i:i + 8])[::-1] for i in range(0, 32, 8))
        if state == "0A" and raw == want and int(hexport, 16) == port:
            return True
    return False


def wait(init, h, seconds=60):
    state = init.transfer(h)
    until = time.monotonic() + seconds
    while state == "PROC" and time.monotonic() < until:
        state = init.check_xfer_state(h)
    init.release_xfer_handle(h)
    return state


def main(addr):
    bad = 0
    long_form = ipaddress.IPv6Address(addr).exploded
    target = backend_agent({"ip_addr": addr, "ctrl_port": str(PORT)})
    init = backend_agent({"ip_addr": long_form})
    if not listening(addr, PORT):
        print(f"no listener on [{addr}]:{PORT}")
        bad = 1
    bad |= not refused({"ip_addr": addr, "ctrl_port": str(PORT)})
    bad |= not refused({"ip_addr": addr, "ctrl_port": "65536"})
    bad |= not refused({"ip_addr": "fd99::1::2"})
    bad |= not refused({"ip_addr": "::"})

    src = np.arange(SIZE, dtype=np.uint32).view(np.uint8)[:SIZE].copy()
    dst = np.zeros(SIZE, np.uint8)
    init.register_memory([(src.ctypes.data, src.nbytes, 0, "")], "DRAM")
    target.register_memory([(dst.ctypes.data, dst.nbytes, 0, "")], "DRAM")
    init.add_remote_agent(target.get_agent_metadata())
    target.add_remote_agent(init.get_agent_metadata())
    local = init.get_xfer_descs([(src.ctypes.data, SIZE, 0)], "DRAM")
    remote = target.get_xfer_descs([(dst.ctypes.data, SIZE, 0)], "DRAM")

    state = wait(init, init.initialize_xfer("WRITE", local, remote, target.name, b"over v6"))
    got = notes(target, init, 3)
    ok = state == "DONE" and np.array_equal(src, dst) and got == [b"over v6"]
    print(f"WRITE over {addr}: {state}, data {'verified' if ok else 'WRONG'}, "
          f"notifications {got}")
    bad |= not ok

    dst[:] = 7
    state = wait(init, init.initialize_xfer("READ", local, remote, target.name))
    ok = state == "DONE" and np.all(src == 7)
    print(f"READ over {addr}: {state}, data {'verified' if ok else 'WRONG'}")
    bad |= not ok
    return int(bad)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
