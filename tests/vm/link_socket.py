#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Runs a two-VM guest's qemu on a UDP socket with room for bursts.

  link_socket.py LOCAL_PORT REMOTE_PORT QEMU ARGS...

Makes a UDP socket on 127.0.0.1:LOCAL_PORT, connected to REMOTE_PORT (the
other VM's), with a receive buffer of 16 MiB, and execs QEMU ARGS with it
as fd 3 (the caller passes -netdev dgram,local.type=fd,local.str=3).

Why: qemu's own UDP netdev keeps the kernel's default buffer (about
200 KiB). A burst of soft-RoCE packets (an RDMA READ's responses: up to
16 outstanding READs of 128 KiB) overflows it while the receiving guest is
busy, and the host drops datagrams (Udp RcvbufErrors): about 4 % of the
link's packets. The link is an Ethernet cable between two hosts, not a
lossy one; the loss made READs wait on retransmissions. Loss on purpose
is tc netem's (tests/twohost/60_netem.sh).

SO_RCVBUFFORCE needs CAP_NET_ADMIN; without it SO_RCVBUF gives what
net.core.rmem_max allows.
"""
import os
import socket
import sys

RCVBUF = 16 << 20
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: link_socket.py LOCAL_PORT REMOTE_PORT QEMU ARGS...")
    local, remote = int(sys.argv[1]), int(sys.argv[2])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF)
    except PermissionError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    # The kernel reports twice what was set (its bookkeeping overhead).
    got = s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 2
    if got < RCVBUF:
        print(f"link_socket.py: receive buffer {got} bytes, not {RCVBUF} "
              "(no CAP_NET_ADMIN, net.core.rmem_max): the link may drop bursts",
              file=sys.stderr)
    s.bind(("127.0.0.1", local))
    s.connect(("127.0.0.1", remote))
    os.dup2(s.fileno(), 3)
    os.set_inheritable(3, True)
    os.execvp(sys.argv[3], sys.argv[3:])


if __name__ == "__main__":
    main()
