// SPDX-License-Identifier: Apache-2.0
// The CUDA driver, loaded at run time (xferk_cuda.h).
#include "xferk_cuda.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <dlfcn.h>
#include <unistd.h>

namespace {
constexpr int kSuccess = 0;
constexpr int kAttrDmaBufSupported = 124; /* CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED */
constexpr int kPtrContext = 1;            /* CU_POINTER_ATTRIBUTE_* */
constexpr int kPtrMemoryType = 2;
constexpr int kPtrDeviceOrdinal = 9;
constexpr int kPtrRangeStart = 11;
constexpr int kPtrRangeSize = 12;
constexpr unsigned int kMemoryTypeDevice = 2; /* CU_MEMORYTYPE_DEVICE */
constexpr int kHandleDmaBufFd = 1;            /* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD */
} // namespace

struct XferkCuda::Fns {
    int (*init)(unsigned int);
    int (*error_name)(int, const char **);
    int (*device_get)(int *, int);
    int (*device_attr)(int *, int, int);
    int (*pointer_attr)(void *, int, unsigned long long);
    int (*ctx_push)(void *);
    int (*ctx_pop)(void **);
    int (*range_handle)(void *, unsigned long long, size_t, int, unsigned long long);
    int (*ctx_get_device)(int *);                 /* optional */
    int (*device_pci_bus_id)(char *, int, int);   /* optional */
};

XferkCuda::XferkCuda() {
    const char *env = getenv("XFERK_LIBCUDA");
    path_ = env && *env ? env : "libcuda.so.1";
    // Never unloaded: the driver's threads may outlive this engine.
    dll_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!dll_) {
        why_ = "the CUDA driver library " + path_ + " cannot be loaded (" + dlerror() +
            "): GPU memory needs NVIDIA's driver (open kernel modules, CUDA 11.7 or later)";
        return;
    }
    fn_ = new Fns();
    struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"cuInit", (void **)&fn_->init},
        {"cuGetErrorName", (void **)&fn_->error_name},
        {"cuDeviceGet", (void **)&fn_->device_get},
        {"cuDeviceGetAttribute", (void **)&fn_->device_attr},
        {"cuPointerGetAttribute", (void **)&fn_->pointer_attr},
        {"cuCtxPushCurrent_v2", (void **)&fn_->ctx_push},
        {"cuCtxPopCurrent_v2", (void **)&fn_->ctx_pop},
        {"cuMemGetHandleForAddressRange", (void **)&fn_->range_handle},
    };
    for (auto &s : syms) {
        *s.slot = dlsym(dll_, s.name);
        if (!*s.slot) {
            why_ = path_ + " has no " + s.name +
                ": a CUDA driver with dma-buf export (11.7 or later) is needed";
            return;
        }
    }
    fn_->ctx_get_device = (int (*)(int *))dlsym(dll_, "cuCtxGetDevice");
    fn_->device_pci_bus_id = (int (*)(char *, int, int))dlsym(dll_, "cuDeviceGetPCIBusId");
    int res = fn_->init(0);
    if (res != kSuccess) {
        why_ = "cuInit: " + name(res) + " (" + path_ + ")";
        return;
    }
    loaded_ = true;
    usable_ = device_exports(0, why_);
}

// The library stays loaded (RTLD_NODELETE): dlclose() only drops the
// reference this engine took.
XferkCuda::~XferkCuda() {
    delete fn_;
    if (dll_) dlclose(dll_);
}

std::string
XferkCuda::name(int res) const {
    const char *s = nullptr;
    if (fn_->error_name(res, &s) != kSuccess || !s) return "CUresult " + std::to_string(res);
    return s;
}

std::string
XferkCuda::current_pci_bus_id() const {
    char bus_id[32] = "";
    int dev = 0;

    if (!loaded_ || !fn_->ctx_get_device || !fn_->device_pci_bus_id ||
        fn_->ctx_get_device(&dev) != kSuccess ||
        fn_->device_pci_bus_id(bus_id, sizeof(bus_id), dev) != kSuccess)
        return "";
    bus_id[sizeof(bus_id) - 1] = 0;
    /* sysfs names PCI devices in lower case. */
    for (char *c = bus_id; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    return bus_id;
}

bool
XferkCuda::device_exports(int ordinal, std::string &err) const {
    int dev = 0, v = 0;
    int res = fn_->device_get(&dev, ordinal);
    if (res == kSuccess) res = fn_->device_attr(&v, kAttrDmaBufSupported, dev);
    if (res != kSuccess) {
        err = "CUDA device " + std::to_string(ordinal) + ": " + name(res);
        return false;
    }
    if (!v)
        err = "CUDA device " + std::to_string(ordinal) +
            " cannot export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: "
            "NVIDIA's open kernel modules are needed)";
    return v;
}

int
XferkCuda::dmabuf_of(uintptr_t addr, size_t len, int &fd, uint64_t &offset,
                     std::string &err) const {
    unsigned int type = 0;
    int ordinal = 0;
    unsigned long long base = 0;
    size_t size = 0;
    void *ctx = nullptr;

    if (!loaded_) {
        err = why_;
        return -ENODEV;
    }
    if (fn_->pointer_attr(&type, kPtrMemoryType, addr) != kSuccess ||
        type != kMemoryTypeDevice ||
        fn_->pointer_attr(&ordinal, kPtrDeviceOrdinal, addr) != kSuccess ||
        fn_->pointer_attr(&base, kPtrRangeStart, addr) != kSuccess ||
        fn_->pointer_attr(&size, kPtrRangeSize, addr) != kSuccess ||
        fn_->pointer_attr(&ctx, kPtrContext, addr) != kSuccess) {
        err = "not CUDA device memory";
        return -EINVAL;
    }
    if (addr < base || addr - base > size || len > size - (addr - base)) {
        err = "not within one CUDA allocation";
        return -EINVAL;
    }
    if (!device_exports(ordinal, err)) return -EOPNOTSUPP;
    uintptr_t page = sysconf(_SC_PAGESIZE);
    uintptr_t start = addr & ~(page - 1);
    uintptr_t end = (addr + len + page - 1) & ~(page - 1);
    int res = fn_->ctx_push(ctx);
    if (res != kSuccess) {
        err = "cuCtxPushCurrent: " + name(res);
        return -EOPNOTSUPP;
    }
    int out = -1;
    res = fn_->range_handle(&out, start, end - start, kHandleDmaBufFd, 0);
    fn_->ctx_pop(nullptr);
    if (res != kSuccess) {
        err = "cuMemGetHandleForAddressRange: " + name(res);
        return -EOPNOTSUPP;
    }
    fd = out;
    offset = addr - start;
    return 0;
}
