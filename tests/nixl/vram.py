#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""VRAM_SEG through the xferk backend, against a TEST DOUBLE of the CUDA
driver ($XFERK_CUDA_DOUBLE, tests/doubles/cuda_vgem.c: its "device memory"
is vgem dma-bufs and a device pointer is the buffer's CPU mapping). This
proves the backend's side (the driver loaded at run time, a dma-buf per
VRAM registration, VRAM and DRAM in every combination as either end), not
a GPU. Without $XFERK_CUDA_DOUBLE it uses torch CUDA tensors and the real
driver (tests/gpu/run.sh, on a host with a GPU).

  vram.py            transfers; exits 1 on any wrong byte or error
  vram.py --no-dmabuf    the double's device exports no dma-bufs: the
                     backend offers no VRAM_SEG and a VRAM registration
                     fails; exits 1 otherwise
"""
import ctypes
import os
import sys
import time
import uuid

# Without $XFERK_CUDA_DOUBLE: a real GPU through torch (tests/gpu/run.sh).
DOUBLE = os.environ.get("XFERK_CUDA_DOUBLE")
if DOUBLE:
    os.environ["XFERK_LIBCUDA"] = DOUBLE  # what the backend loads

import numpy as np  # noqa: E402
from nixl._api import nixl_agent, nixl_agent_config  # noqa: E402

N = 1 << 20  # a remote VRAM region is one fast registration: 512 pages on rxe
PIECES = 4
_keep = []


class GpuView:
    """A torch CUDA tensor with the numpy-like slicing vram.py uses."""

    def __init__(self, t):
        self.t = t
        self.size = t.numel()

    def __getitem__(self, k):
        return self.t[k].cpu().numpy()

    def __setitem__(self, k, v):
        import torch
        self.t[k] = torch.as_tensor(np.asarray(v, np.uint8)).to(self.t.device)
        torch.cuda.synchronize()

    def any(self):
        return bool(self.t.any())


def vram(n):
    """(an array view, the device address) of n bytes of device memory."""
    if not DOUBLE:
        import torch
        t = torch.zeros(n, dtype=torch.uint8, device="cuda")
        _keep.append(t)
        return GpuView(t), t.data_ptr()
    cu = ctypes.CDLL(DOUBLE)
    cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    p = ctypes.c_uint64()
    if cu.cuInit(0) or cu.cuMemAlloc_v2(ctypes.byref(p), n):
        sys.exit("the CUDA double could not allocate (is vgem loaded?)")
    return np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(p.value)), p.value


def agent():
    return nixl_agent(str(uuid.uuid4()), nixl_agent_config(backends=["XFERK"]))


def has_vram(a):
    return any("VRAM" in str(m) for m in a.get_backend_mem_types("XFERK"))


def no_dmabuf():
    a = agent()
    if has_vram(a):
        print("VRAM_SEG offered by a driver whose device exports no dma-bufs")
        return 1
    arr, addr = vram(N)
    try:
        a.register_memory([(addr, N, 0, "")], "VRAM")
    except Exception as e:  # NIXL has no backend for it
        print(f"VRAM registration refused: {type(e).__name__}: {e}")
        return 0
    print("a VRAM registration succeeded without dma-buf export")
    return 1


def main():
    init, target = agent(), agent()
    if not (has_vram(init) and has_vram(target)):
        print("the backend offers no VRAM_SEG with the CUDA double")
        return 1
    bufs = {}
    for who, a in (("init", init), ("target", target)):
        v, vaddr = vram(N + 4096)
        d = np.zeros(N + 4096, np.uint8)
        a.register_memory([(vaddr, N + 4096, 0, "")], "VRAM")
        a.register_memory([(d.ctypes.data, d.nbytes, 0, "")], "DRAM")
        bufs[who] = {"VRAM": (v, vaddr), "DRAM": (d, d.ctypes.data)}
    init.add_remote_agent(target.get_agent_metadata())
    target.add_remote_agent(init.get_agent_metadata())
    piece = N // PIECES
    bad = 0
    seed = 0
    for lkind in ("VRAM", "DRAM"):
        for rkind in ("VRAM", "DRAM"):
            for op in ("WRITE", "READ"):
                seed += 1
                (larr, laddr), (rarr, raddr) = bufs["init"][lkind], bufs["target"][rkind]
                # Local pieces in order, remote pieces reversed.
                ldesc = init.get_xfer_descs(
                    [(laddr + i * piece, piece, 0) for i in range(PIECES)], lkind)
                rdesc = target.get_xfer_descs(
                    [(raddr + (PIECES - 1 - i) * piece, piece, 0) for i in range(PIECES)],
                    rkind)
                src, dst = (larr, rarr) if op == "WRITE" else (rarr, larr)
                src[:] = (np.arange(src.size, dtype=np.uint64) * 7 + seed).astype(np.uint8)
                dst[:] = 0
                h = init.initialize_xfer(op, ldesc, rdesc, target.name)
                state = init.transfer(h)
                until = time.monotonic() + 120
                while state == "PROC" and time.monotonic() < until:
                    state = init.check_xfer_state(h)
                init.release_xfer_handle(h)
                lv, rv = (src, dst) if op == "WRITE" else (dst, src)
                ok = state == "DONE" and all(
                    np.array_equal(lv[i * piece:(i + 1) * piece],
                                   rv[(PIECES - 1 - i) * piece:(PIECES - i) * piece])
                    for i in range(PIECES)) and not np.asarray(dst[N:]).any()
                print(f"{op:5} local {lkind} <-> remote {rkind}: {state}, "
                      f"{'verified' if ok else 'WRONG'}")
                bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(no_dmabuf() if "--no-dmabuf" in sys.argv else main())
