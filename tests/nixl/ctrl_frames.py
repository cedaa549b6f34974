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
4. Another peer host (a connection from 127.0.0.2: to the listener, a
   host of its own) sends 'C' frames of 65,536 fresh nonces, as many as the
   target remembers: the first host's 'W' of its closed nonce is still
   ESTALE (regression: the oldest nonce went first, whichever host's it
   was, so one host's 'C' frames pushed out another's).
Exit 0 pass, 1 fail.
"""
import errno
import os
import re
import socket
import struct
import sys
import time

from notes import backend_agent

STATS = "/sys/class/misc/xferk/stats/exports"
READ = 1 << 2  # XFERK_ACCESS_REMOTE_READ
CLOSED_NONCES = 65536  # kClosedNonces in xferk_backend.cpp: all hosts' together


def listener(metadata):
    """(ip, port, secret) of the XFERK backend's connection info in
    @metadata: "ip port secret-hex [rails]"."""
    m = re.search(rb"(\d+\.\d+\.\d+\.\d+) (\d+) ([0-9a-f]{32})", metadata)
    return m.group(1).decode(), int(m.group(2)), bytes.fromhex(m.group(3).decode())


def call(sock, frame):
    """Sends @frame, returns the reply frame."""
    sock.sendall(struct.pack(">I", len(frame)) + frame)
    return read_frame(sock)


def read_frame(sock):
    """The next frame's body."""
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


def connect(ip, port, secret, source=None):
    """A control connection, past the hello, from @source if given."""
    sock = socket.create_connection((ip, port), timeout=10,
                                    source_address=(source, 0) if source else None)
    sock.sendall(struct.pack(">I", 17) + b"H" + secret)
    return sock


def flood_closes(sock, agent, count):
    """'C' frames of @count fresh nonces, in batches of 1,024 (the replies
    of one fit in the socket's buffers); True if each got 'A'."""
    first = struct.unpack("<Q", os.urandom(8))[0]
    ok = True
    for start in range(0, count, 1024):
        frames = b""
        batch = range(start, min(start + 1024, count))
        for i in batch:
            body = named(b"C", agent) + struct.pack("<QI", (first + i) % 2**64, 0)
            frames += struct.pack(">I", len(body)) + body
        sock.sendall(frames)
        want = struct.pack(">I", 1) + b"A"
        replies = b""
        while len(replies) < len(batch) * len(want):
            got = sock.recv(65536)
            if not got:
                return False
            replies += got
        ok &= replies == want * len(batch)
    return ok


def main():
    bad = 0
    target = backend_agent({"fence": "request"})
    ip, port, secret = listener(target.get_agent_metadata())
    sock = connect(ip, port, secret)
    agent = b"raw-peer"
    exports = open(STATS).read()

    nonce = struct.unpack("<Q", os.urandom(8))[0]
    closed = call(sock, named(b"C", agent) + struct.pack("<QI", nonce, 0))
    closed_at = time.monotonic()
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

    other = "127.0.0.2"
    flooder = connect(ip, port, secret, other)
    flooded = flood_closes(flooder, b"other-host", CLOSED_NONCES)
    flooder.close()
    kept = refusal(call(sock, window_frame(agent, nonce)))
    took = time.monotonic() - closed_at
    print(f"after {CLOSED_NONCES} 'C' frames from {other}, {took:.1f} s after its 'C' "
          f"(each answered 'A': {flooded}), a 'W' of the first host's closed nonce: "
          f"{kept and errno.errorcode[kept]}")
    # The target forgets a nonce after 60 s whatever the other host does.
    if took > 50:
        print("the 'C' frames took too long for the nonce to be still remembered")
    bad |= not flooded or took > 50 or kept != errno.ESTALE

    after = open(STATS).read()
    print(f"exports before {exports.strip()}, after {after.strip()}")
    bad |= after != exports
    sock.close()
    return int(bad)


if __name__ == "__main__":
    sys.exit(main())
