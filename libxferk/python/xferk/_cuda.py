# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""GPU memory as dma-bufs: the CUDA driver API, loaded at run time.

Nothing here is needed to build or import the package. The driver library
is $XFERK_LIBCUDA (a path; the tests point it at a test double), else
``libcuda.so.1``; it is loaded on the first CUDA registration. What a
registration needs from it, as NVIDIA documents for dma-buf export (open
kernel modules, CUDA 11.7 or later):

- the pointer's allocation, device and context (``cuPointerGetAttribute``);
- the device's ``CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED``;
- a dma-buf fd for the page-aligned range around the memory
  (``cuMemGetHandleForAddressRange``), within the pointer's allocation.
"""
import ctypes
import errno as _errno
import mmap
import os
import threading

CUDA_SUCCESS = 0
CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124
CU_POINTER_ATTRIBUTE_CONTEXT = 1
CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11
CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12
CU_MEMORYTYPE_DEVICE = 2
CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1

_u64 = ctypes.c_uint64
_P = ctypes.POINTER
_PROTOS = {
    "cuInit": [ctypes.c_uint],
    "cuGetErrorName": [ctypes.c_int, _P(ctypes.c_char_p)],
    "cuDeviceGet": [_P(ctypes.c_int), ctypes.c_int],
    "cuDeviceGetAttribute": [_P(ctypes.c_int), ctypes.c_int, ctypes.c_int],
    "cuPointerGetAttribute": [ctypes.c_void_p, ctypes.c_int, _u64],
    "cuCtxPushCurrent_v2": [ctypes.c_void_p],
    "cuCtxPopCurrent_v2": [_P(ctypes.c_void_p)],
    "cuMemGetHandleForAddressRange": [ctypes.c_void_p, _u64, ctypes.c_size_t,
                                      ctypes.c_int, ctypes.c_ulonglong],
}


class CudaError(OSError):
    """The CUDA driver is missing, cannot export dma-bufs, or a call into
    it failed. ``errno`` is ENODEV (no usable driver), EOPNOTSUPP (no
    dma-buf export for this device or pointer), or EINVAL (not device
    memory); the message names what is missing."""


class _Driver:
    def __init__(self):
        self.path = os.environ.get("XFERK_LIBCUDA") or "libcuda.so.1"
        try:
            dll = ctypes.CDLL(self.path)
        except OSError as e:
            raise CudaError(_errno.ENODEV,
                            f"the CUDA driver library {self.path} cannot be "
                            f"loaded ({e}): GPU memory needs NVIDIA's driver "
                            "(open kernel modules, CUDA 11.7 or later)") from None
        for name, args in _PROTOS.items():
            try:
                fn = getattr(dll, name)
            except AttributeError:
                raise CudaError(_errno.ENODEV,
                                f"{self.path} has no {name}: a CUDA driver "
                                "with dma-buf export (11.7 or later) is "
                                "needed") from None
            fn.restype = ctypes.c_int
            fn.argtypes = args
            setattr(self, name, fn)
        self.check(self.cuInit(0), "cuInit", _errno.ENODEV)
        self.dmabuf_devices = {}

    def name(self, res):
        s = ctypes.c_char_p()
        if self.cuGetErrorName(res, ctypes.byref(s)) or not s.value:
            return f"CUresult {res}"
        return s.value.decode()

    def check(self, res, what, err=_errno.EINVAL):
        if res != CUDA_SUCCESS:
            raise CudaError(err, f"{what}: {self.name(res)} ({self.path})")

    def attr(self, ctype, attr, ptr):
        v = ctype()
        res = self.cuPointerGetAttribute(ctypes.byref(v), attr, ptr)
        if res != CUDA_SUCCESS:
            raise CudaError(_errno.EINVAL, f"{ptr:#x} is not CUDA device "
                            f"memory (cuPointerGetAttribute: {self.name(res)})")
        return v.value

    def device_exports_dmabuf(self, ordinal):
        ok = self.dmabuf_devices.get(ordinal)
        if ok is None:
            dev, v = ctypes.c_int(), ctypes.c_int()
            self.check(self.cuDeviceGet(ctypes.byref(dev), ordinal),
                       "cuDeviceGet")
            self.check(self.cuDeviceGetAttribute(
                ctypes.byref(v), CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
                dev.value), "cuDeviceGetAttribute")
            ok = self.dmabuf_devices[ordinal] = bool(v.value)
        return ok

    def dmabuf_of(self, ptr, nbytes):
        """(fd, offset): a new dma-buf fd for the page-aligned range around
        [ptr, ptr + nbytes), and where ptr is in it. The caller closes fd."""
        if self.attr(ctypes.c_uint, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                     ptr) != CU_MEMORYTYPE_DEVICE:
            raise CudaError(_errno.EINVAL, f"{ptr:#x} is not CUDA device "
                            "memory (managed and host memory are registered "
                            "as host memory)")
        ordinal = self.attr(ctypes.c_int, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                            ptr)
        if not self.device_exports_dmabuf(ordinal):
            raise CudaError(_errno.EOPNOTSUPP,
                            f"CUDA device {ordinal} cannot export dma-bufs "
                            "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: "
                            "NVIDIA's open kernel modules are needed)")
        base = self.attr(_u64, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr)
        size = self.attr(ctypes.c_size_t, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                         ptr)
        if ptr + nbytes > base + size:
            raise CudaError(_errno.EINVAL, f"[{ptr:#x}, +{nbytes}) is not "
                            "within one CUDA allocation")
        page = mmap.PAGESIZE
        start = ptr & ~(page - 1)
        end = (ptr + nbytes + page - 1) & ~(page - 1)
        ctx = ctypes.c_void_p(self.attr(ctypes.c_void_p,
                                        CU_POINTER_ATTRIBUTE_CONTEXT, ptr))
        fd = ctypes.c_int(-1)
        self.check(self.cuCtxPushCurrent_v2(ctx), "cuCtxPushCurrent")
        try:
            res = self.cuMemGetHandleForAddressRange(
                ctypes.byref(fd), start, end - start,
                CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0)
        finally:
            self.cuCtxPopCurrent_v2(None)
        self.check(res, "cuMemGetHandleForAddressRange", _errno.EOPNOTSUPP)
        return fd.value, ptr - start


_driver = None
_driver_lock = threading.Lock()


def driver():
    """The CUDA driver, loaded on first use; raises CudaError."""
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = _Driver()
        return _driver


# --- finding a CUDA buffer in an object -------------------------------------

_kDLCUDA = 2


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", _P(ctypes.c_int64)), ("strides", _P(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


def _contiguous(shape, strides, itemsize):
    """Whether strides (in bytes; None: C order) describe C order."""
    if strides is None:
        return True
    want = itemsize
    for dim, stride in reversed(list(zip(shape, strides))):
        if dim > 1 and stride != want:
            return False
        want *= dim
    return True


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _from_cai(obj):
    cai = obj.__cuda_array_interface__
    ptr, readonly = cai["data"]
    shape = tuple(cai["shape"])
    itemsize = int(cai["typestr"][2:])
    if not _contiguous(shape, cai.get("strides"), itemsize):
        raise TypeError("a CUDA array must be C-contiguous to be registered")
    return int(ptr or 0), _prod(shape) * itemsize, bool(readonly)


# A prototype of its own: setting argtypes on ctypes.pythonapi's would
# change them for every other user in the process.
_capsule_ptr = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object,
                                 ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _from_dlpack(obj):
    """(ptr, nbytes, capsule) of a DLPack producer's CUDA tensor. The
    capsule is kept unconsumed: it keeps the producer's memory, and its
    destructor frees the DLManagedTensor when the region lets it go."""
    cap = obj.__dlpack__()
    t = _DLTensor.from_address(_capsule_ptr(cap, b"dltensor"))
    if t.device.device_type != _kDLCUDA:
        raise TypeError("DLPack tensor is not on a CUDA device")
    shape = [t.shape[i] for i in range(t.ndim)]
    itemsize = (t.dtype.bits * t.dtype.lanes + 7) // 8
    strides = None
    if t.strides:
        strides = [t.strides[i] * itemsize for i in range(t.ndim)]
    if not _contiguous(shape, strides, itemsize):
        raise TypeError("a CUDA tensor must be C-contiguous to be registered")
    return (t.data or 0) + t.byte_offset, _prod(shape) * itemsize, cap


def cuda_buffer_of(obj):
    """(ptr, nbytes, keepalive, readonly) if obj is CUDA device memory,
    else None:
    a torch.Tensor on a CUDA device, an object with
    ``__cuda_array_interface__`` (CuPy, Numba, ...), or a DLPack producer
    whose ``__dlpack_device__()`` is a CUDA device."""
    dev = getattr(obj, "device", None)
    if getattr(dev, "type", None) == "cuda" and hasattr(obj, "data_ptr"):
        if not obj.is_contiguous():
            raise TypeError("a tensor must be contiguous to be registered")
        n = getattr(obj, "nbytes", None)
        if n is None:
            n = obj.element_size() * obj.numel()
        return int(obj.data_ptr()), int(n), obj, False
    if hasattr(obj, "__cuda_array_interface__"):
        ptr, n, readonly = _from_cai(obj)
        return ptr, n, obj, readonly
    dl_dev = getattr(obj, "__dlpack_device__", None)
    if dl_dev is not None and dl_dev()[0] == _kDLCUDA:
        ptr, n, cap = _from_dlpack(obj)
        return ptr, n, (obj, cap), False
    return None
