#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Raw frames to a fence=request target's control listener
(libxferk/nixl/plugin/xferk_ctrl.h), as a peer that does not run the
plugin could send them: the listener's address, port and secret are read
from the target's agent metadata.
1. A 'W' whose nonce a 'C' named before (a 'W' sent again that arrives
   after its request's 'C') is refused with ESTALE, and opens nothing; the
   same 'W' with a fresh nonce gets ENOENT (its region key is unknown),
   so the refusal is the nonce's.
2. An agent name of 257 bytes is refused with EINVAL, in 'W' and in a
   token request ('E'); one of 256 bytes gets past that check (ENOENT).
3. A malformed 'C' (a tag count its frame does not carry) is EINVAL.
Exit 0 pass, 1 fail.
"""
import errno
import os
import re
import socket
import struct
import sys

from notes import backend_agent

STATS = "/sys/class/misc/xferk/stats/exports"
READ = 1 << 2  # XFERK_ACCESS_REMOTE_READ


def listener(metadata):
    """(ip, port, secret) of the XFERK backend's connection info in
    @metadata: "ip port secret-hex [rails]"."""
    m = re.search(rb"(\d+\.\d+\.\d+\.\d+) (\d+) ([0-9a-f]{32})", metadata)
    return m.group(1).decode(), int(m.group(2)), bytes.fromhex(m.group(3).decode())


def call(sock, frame):
    """Sends @frame, returns the reply frame."""
    sock.sendall(struct.pack(">I", len(frame)) + frame)
    head = b""
    while len(head) < 4:
        head += sock.recv(4 - len(head))
    (n,) = struct.unpack(">I", head)
    body = b""
    while len(body) < n:
        body += sock.recv(n - len(body))
    return body


def refusal(reply):
    """The errno of an 'X' reply, or None."""
    if len(reply) == 5 and reply[:1] == b"X":
        return -struct.unpack("<i", reply[1:])[0]
    return None


def named(kind, agent):
    return kind + struct.pack("<H", len(agent)) + agent


def window_frame(agent, nonce):
    """A 'W' of one window of one page of a region nobody registered."""
    return (named(b"W", agent) + struct.pack("<QII", nonce, 0, READ) +
            struct.pack("<I", 1) + os.urandom(16) + struct.pack("<I", 1) +
            struct.pack("<QQ", 0, 4096))


def main():
    bad = 0
    target = backend_agent({"fence": "request"})
    ip, port, secret = listener(target.get_agent_metadata())
    sock = socket.create_connection((ip, port), timeout=10)
    sock.sendall(struct.pack(">I", 17) + b"H" + secret)
    agent = b"raw-peer"
    exports = open(STATS).read()

    nonce = struct.unpack("<Q", os.urandom(8))[0]
    closed = call(sock, named(b"C", agent) + struct.pack("<QI", nonce, 0))
    late = refusal(call(sock, window_frame(agent, nonce)))
    fresh = refusal(call(sock, window_frame(agent, nonce ^ 1)))
    print(f"'C' of a nonce: {closed!r}; a 'W' of it then: {late and errno.errorcode[late]}; "
          f"of a fresh nonce: {fresh and errno.errorcode[fresh]}")
    bad |= closed != b"A" or late != errno.ESTALE or fresh != errno.ENOENT

    long_w = refusal(call(sock, window_frame(b"a" * 257, nonce ^ 2)))
    ok_w = refusal(call(sock, window_frame(b"a" * 256, nonce ^ 3)))
    long_e = refusal(call(sock, b"E" + os.urandom(16) + b"a" * 257))
    ok_e = refusal(call(sock, b"E" + os.urandom(16) + b"a" * 256))
    names = [x and errno.errorcode[x] for x in (long_w, ok_w, long_e, ok_e)]
    print(f"agent names of 257 / 256 bytes: 'W' {names[0]} / {names[1]}, "
          f"'E' {names[2]} / {names[3]}")
    bad |= (long_w, ok_w, long_e, ok_e) != (errno.EINVAL, errno.ENOENT, errno.EINVAL, errno.ENOENT)

    short = refusal(call(sock, named(b"C", agent) + struct.pack("<QI", nonce, 2) + b"\0" * 8))
    print(f"a 'C' short of its tags: {short and errno.errorcode[short]}")
    bad |= short != errno.EINVAL

    after = open(STATS).read()
    print(f"exports before {exports.strip()}, after {after.strip()}")
    bad |= after != exports
    sock.close()
    return int(bad)


if __name__ == "__main__":
    sys.exit(main())
