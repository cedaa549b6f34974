#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A torch CUDA tensor registered through the xferk Python package (a
dma-buf from the real CUDA driver), moved over a loopback session through
the RDMA NIC at $XFERK_GPU_PEER: GPU -> host, host -> GPU, GPU -> GPU, 64
MiB each, verified with torch on the GPU. Run by tests/gpu/run.sh."""
import os
import sys

import torch

import xferk

N = 64 << 20
PAGE = 4096


def main():
    peer = os.environ["XFERK_GPU_PEER"]
    rw = xferk.Access.REMOTE_READ | xferk.Access.REMOTE_WRITE
    with xferk.Device() as dev:
        if not dev.has(xferk.Feature.DMABUF):
            print("the module has no XFERK_FEAT_DMABUF")
            return 1
        conn = dev.connect(peer, timeout=10)
        gpu = torch.randint(0, 256, (N,), dtype=torch.uint8, device="cuda")
        gpu2 = torch.zeros(N, dtype=torch.uint8, device="cuda")
        host = torch.zeros(N + PAGE, dtype=torch.uint8)
        torch.cuda.synchronize()
        src = dev.register(gpu, xferk.Access.LOCAL_SRC | xferk.Access.LOCAL_DST)
        print(f"GPU region: dmabuf={src.dmabuf} addr={src.addr:#x} {src.nbytes} bytes")
        h = dev.register(host, rw)
        remote = conn.import_token(h.export(conn).token)
        dev.write(src, remote, [(0, 0, N)]).result()
        ok = torch.equal(host[:N].cuda(), gpu)
        print(f"GPU -> host: {'verified' if ok else 'WRONG'}")
        bad = not ok
        host[:N] = 7
        dev.read(src, remote, [(0, 0, N)]).result()
        torch.cuda.synchronize()
        ok = bool((gpu == 7).all())
        print(f"host -> GPU: {'verified' if ok else 'WRONG'}")
        bad |= not ok
        # GPU to GPU: the second tensor exported (at most what the NIC
        # fast-registers in one MR: try 2 MiB).
        n2 = 2 << 20
        gpu.copy_(torch.arange(N, device="cuda").to(torch.uint8))
        torch.cuda.synchronize()  # the NIC reads it: the copy must be done
        dst = dev.register(gpu2, rw)
        try:
            remote2 = conn.import_token(dst.export(conn, 0, n2).token)
        except xferk.XferkError as e:
            print(f"GPU -> GPU: export of a GPU region refused: {e}")
            return 1
        dev.write(src, remote2, [(0, 0, n2)]).result()
        torch.cuda.synchronize()
        ok = torch.equal(gpu2[:n2], gpu[:n2])
        print(f"GPU -> GPU: {'verified' if ok else 'WRONG'}")
        bad |= not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
