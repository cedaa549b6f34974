#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Disaggregated serving in two processes, with the xferk package.

The decode process registers a KV buffer (64 MiB by default, 4 MiB when
XFERK_KERNEL=debug), exports it to the peer host and sends the token to the
prefill process over a pipe. The prefill process imports the token and
writes a pattern into the buffer with RDMA WRITE, then says so over the
pipe; the decode process verifies every byte. Exit code 0 when it matches,
1 otherwise.

    prefill_decode.py [--size BYTES] [--peer ADDR]

The peer is the address of an xferk host (default $XFERK_TEST_PEER or
10.99.0.1: the VM harness's soft-RoCE address, where both processes share
the host's loopback connection).
"""
import argparse
import multiprocessing as mp
import os
import sys
import time

import xferk

PAGE = 4096
# Linux 6.1's rxe reads past its page map when an access ends exactly at the
# end of an MR of a multiple of 256 pages: export one page more than written.
SLACK = PAGE


def pattern(n, seed=2024):
    """n bytes, each page different (its number in its first 8 bytes)."""
    block = bytes((i * 131 + seed) & 0xff for i in range(PAGE))
    out = bytearray(block) * (n // PAGE + 1)
    for page in range(n // PAGE + 1):
        out[page * PAGE:page * PAGE + 8] = (page + seed).to_bytes(8, "little")
    del out[n:]
    return out


def decode(size, peer, pipe):
    import mmap
    buf = mmap.mmap(-1, size + SLACK)
    with xferk.Device() as dev:
        conn = dev.connect(peer, timeout=60)
        with dev.register(buf, xferk.Access.REMOTE_WRITE) as kv:
            exp = kv.export(conn, 0, size + SLACK, xferk.Access.REMOTE_WRITE)
            pipe.send(exp.token)          # a Token is bytes: it pickles
            if not pipe.poll(600):
                print("decode: no word from prefill", file=sys.stderr)
                return 1
            msg = pipe.recv()
            if msg != ("done", size):
                print(f"decode: prefill said {msg!r}", file=sys.stderr)
                return 1
            # The prefill's op is SUCCEEDED: its RDMA WRITEs were placed.
            exp.close()
            want = pattern(size)
            if buf[:size] != want:
                bad = next(i for i in range(size) if buf[i] != want[i])
                print(f"decode: byte {bad} differs", file=sys.stderr)
                return 1
    print(f"decode: verified {size} bytes written by the prefill process")
    return 0


def prefill(size, peer, pipe):
    import mmap
    if not pipe.poll(600):
        return 1
    token = pipe.recv()
    src = mmap.mmap(-1, size + SLACK)
    src[:size] = pattern(size)
    with xferk.Device() as dev:
        conn = dev.connect(peer, timeout=60)
        with dev.register(src, xferk.Access.LOCAL_SRC) as region, \
                conn.import_token(token) as remote:
            chunk = 4 << 20
            frags = [(off, off, min(chunk, size - off))
                     for off in range(0, size, chunk)]
            t0 = time.monotonic()
            with dev.write(region, remote, frags, timeout=300) as op:
                try:
                    snap = op.result()
                except xferk.XferkError as e:
                    print(f"prefill: {e}", file=sys.stderr)
                    pipe.send(("failed", e.errno))
                    return 1
            dt = time.monotonic() - t0
    pipe.send(("done", snap.transferred_bytes))
    print(f"prefill: wrote {snap.transferred_bytes} bytes in {len(frags)} "
          f"fragments, {snap.transferred_bytes / dt / 1e6:.1f} MB/s")
    return 0


def _run(fn, *args):
    try:
        rc = fn(*args)
    except Exception as e:  # noqa: BLE001 - report, exit 1
        print(f"{fn.__name__}: {e!r}", file=sys.stderr)
        rc = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


def main():
    debug = os.environ.get("XFERK_KERNEL") == "debug"
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int,
                    default=(4 << 20) if debug else (64 << 20))
    ap.add_argument("--peer", default=os.environ.get("XFERK_TEST_PEER",
                                                     "10.99.0.1"))
    a = ap.parse_args()
    if a.size <= 0 or a.size % PAGE:
        ap.error("--size is a positive multiple of 4096")
    ctx = mp.get_context("fork")
    d_end, p_end = ctx.Pipe()
    procs = [ctx.Process(target=_run, args=(decode, a.size, a.peer, d_end)),
             ctx.Process(target=_run, args=(prefill, a.size, a.peer, p_end))]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    rcs = [p.exitcode for p in procs]
    ok = rcs == [0, 0]
    print(f"prefill_decode: {'PASS' if ok else 'FAIL'} (decode {rcs[0]}, "
          f"prefill {rcs[1]})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
