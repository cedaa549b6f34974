# SPDX-License-Identifier: GPL-2.0
"""CUDA device memory as dma-buf regions, through a TEST DOUBLE of the CUDA
driver: $XFERK_CUDA_DOUBLE (tests/doubles/cuda_vgem.c, which python.sh
names) hands out vgem dma-bufs for "device pointers" that are the buffers'
CPU mappings. This proves the package's side (finding the memory in an
object, asking the driver for a dma-buf, registering it, keeping the
object, the errors), not any GPU: tests/gpu/ does that on a host with one.
Skipped without the double or without vgem."""
import ctypes
import errno
import os

import pytest

import xferk
from xferk import _cuda
from conftest import CONNECT_TIMEOUT, PEER, SLACK, mapping

DOUBLE = os.environ.get("XFERK_CUDA_DOUBLE", "")
STATS = "/sys/class/misc/xferk/stats/"


def stat(name):
    with open(STATS + name) as f:
        return int(f.read())


class Double:
    """The double's allocator (cuMemAlloc/cuMemFree), for the tests."""

    def __init__(self):
        self.dll = ctypes.CDLL(DOUBLE)
        self.dll.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64),
                                           ctypes.c_size_t]
        self.dll.cuMemFree_v2.argtypes = [ctypes.c_uint64]
        if self.dll.cuInit(0):
            pytest.skip("the CUDA double found no vgem device")
        self.ptrs = []

    def alloc(self, n):
        p = ctypes.c_uint64()
        assert self.dll.cuMemAlloc_v2(ctypes.byref(p), n) == 0
        self.ptrs.append(p.value)
        return p.value


@pytest.fixture
def cuda(monkeypatch):
    if not DOUBLE or not os.path.exists(DOUBLE):
        pytest.skip("no CUDA test double ($XFERK_CUDA_DOUBLE)")
    monkeypatch.setenv("XFERK_LIBCUDA", DOUBLE)
    monkeypatch.setattr(_cuda, "_driver", None)
    return Double()


class CudaArray:
    """What CuPy or Numba hand out: __cuda_array_interface__ (v3)."""

    def __init__(self, ptr, n, readonly=False, strides=None, shape=None):
        self.__cuda_array_interface__ = {
            "shape": shape or (n,), "typestr": "|u1", "data": (ptr, readonly),
            "strides": strides, "version": 3}


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _cuda._DLTensor),
                ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DLPackArray:
    """A DLPack producer of a 1-D uint8 CUDA tensor (kDLCUDA, device 0)."""

    def __init__(self, ptr, n):
        self.shape = (ctypes.c_int64 * 1)(n)
        self.mt = DLManagedTensor()
        t = self.mt.dl_tensor
        t.data = ptr
        t.device.device_type, t.device.device_id = 2, 0
        t.ndim = 1
        t.dtype.code, t.dtype.bits, t.dtype.lanes = 1, 8, 1
        t.shape = self.shape

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        return _capsule_new(ctypes.addressof(self.mt), b"dltensor", None)


def host_target(dev, conn, n):
    buf = mapping(n + SLACK)
    r = dev.register(buf, xferk.Access.REMOTE_READ | xferk.Access.REMOTE_WRITE)
    return buf, r, conn.import_token(r.export(conn).token)


def test_cuda_array_both_ways(dev, cuda):
    n = 1 << 20
    ptr = cuda.alloc(n + SLACK)
    conn = dev.connect(PEER, timeout=CONNECT_TIMEOUT)
    before = stat("dmabuf_regions")
    # At 100 bytes into the allocation: the dma-buf starts at its page.
    arr = CudaArray(ptr + 100, n)
    src = dev.register(arr, xferk.Access.LOCAL_SRC | xferk.Access.LOCAL_DST)
    assert src.dmabuf and src.addr == ptr + 100 and src.nbytes == n
    assert src.obj is arr and stat("dmabuf_regions") == before + 1
    data = bytes((i * 7 + 3) & 0xff for i in range(256)) * (n // 256)
    ctypes.memmove(ptr + 100, data, n)
    hbuf, _, remote = host_target(dev, conn, n)
    dev.write(src, remote, [(0, 0, n)]).result()
    assert hbuf[:n] == data and hbuf[n] == 0
    hbuf[:n] = bytes(reversed(data))
    ctypes.memset(ptr, 0, n + 200)
    dev.read(src, remote, [(0, 0, n)]).result()
    assert ctypes.string_at(ptr + 100, n) == bytes(reversed(data))
    assert ctypes.string_at(ptr, 100) == bytes(100)
    assert ctypes.string_at(ptr + 100 + n, 100) == bytes(100)
    src.close()
    assert src.obj is None and stat("dmabuf_regions") == before


def test_dlpack_producer(dev, cuda):
    n = 64 << 10
    ptr = cuda.alloc(n + SLACK)
    conn = dev.connect(PEER, timeout=CONNECT_TIMEOUT)
    arr = DLPackArray(ptr, n)
    with dev.register(arr, xferk.Access.LOCAL_SRC) as src:
        assert src.dmabuf and src.addr == ptr and src.nbytes == n
        ctypes.memset(ptr, 0x5a, n)
        hbuf, _, remote = host_target(dev, conn, n)
        dev.write(src, remote, [(0, 0, n)]).result()
        assert hbuf[:n] == b"\x5a" * n


def test_read_only_cuda_array(dev, cuda):
    ptr = cuda.alloc(8192)
    with pytest.raises(TypeError):
        dev.register(CudaArray(ptr, 4096, readonly=True))
    with dev.register(CudaArray(ptr, 4096, readonly=True),
                      xferk.Access.LOCAL_SRC) as r:
        assert r.dmabuf


def test_not_contiguous(dev, cuda):
    ptr = cuda.alloc(8192)
    with pytest.raises(TypeError):
        dev.register(CudaArray(ptr, 0, shape=(16, 16), strides=(32, 1)))


def test_device_without_dmabuf_export(dev, cuda, monkeypatch):
    monkeypatch.setenv("XFERK_CUDA_DOUBLE_NO_DMABUF", "1")
    ptr = cuda.alloc(8192)
    before = stat("dmabuf_regions")
    with pytest.raises(xferk.CudaError) as e:
        dev.register(CudaArray(ptr, 4096))
    assert e.value.errno == errno.EOPNOTSUPP
    assert "DMA_BUF_SUPPORTED" in str(e.value)
    assert stat("dmabuf_regions") == before


def test_no_cuda_driver(dev, monkeypatch):
    monkeypatch.setenv("XFERK_LIBCUDA", "/nonexistent/libcuda.so.1")
    monkeypatch.setattr(_cuda, "_driver", None)
    with pytest.raises(xferk.CudaError) as e:
        dev.register(CudaArray(0x10000, 4096))
    assert e.value.errno == errno.ENODEV
    assert "/nonexistent/libcuda.so.1" in str(e.value)


def test_not_device_memory(dev, cuda):
    host = mapping(8192)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(host))
    with pytest.raises(xferk.CudaError) as e:
        dev.register(CudaArray(addr, 4096))
    assert e.value.errno == errno.EINVAL


def test_register_dmabuf_fd(dev, cuda):
    n = 16 << 10
    ptr = cuda.alloc(n)
    fd, off = _cuda.driver().dmabuf_of(ptr, n)
    try:
        with dev.register_dmabuf(fd, off, n, xferk.Access.LOCAL_SRC) as r:
            assert r.dmabuf and r.nbytes == n
        with pytest.raises(xferk.XferkError) as e:
            dev.register_dmabuf(fd, 0, 2 * n)
        assert e.value.errno == errno.ERANGE
    finally:
        os.close(fd)
