/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUDA driver, loaded at run time (no build dependency): a dma-buf fd
 * for a range of CUDA device memory, which VRAM_SEG registrations hand to
 * xferk_mr_reg_dmabuf(). The library is $XFERK_LIBCUDA (a path; the tests
 * name a test double) or libcuda.so.1. The same steps as the Python
 * package's (libxferk/python/xferk/_cuda.py): the pointer's memory type,
 * device, allocation and context; the device's
 * CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED; cuMemGetHandleForAddressRange()
 * of the page-aligned range around the memory, within its allocation.
 */
#ifndef XFERK_CUDA_H
#define XFERK_CUDA_H

#include <cstddef>
#include <cstdint>
#include <string>

class XferkCuda {
public:
    /* Loads the driver; usable() says whether it could, why() why not. */
    XferkCuda();
    ~XferkCuda();
    XferkCuda(const XferkCuda &) = delete;
    XferkCuda &
    operator=(const XferkCuda &) = delete;

    /* The driver is loaded and device 0 exports dma-bufs. */
    bool
    usable() const {
        return usable_;
    }

    /* The driver library loaded and initialized (cuInit). */
    bool
    loaded() const {
        return loaded_;
    }

    /* What is missing when !usable(). */
    const std::string &
    why() const {
        return why_;
    }

    /*
     * The PCI bus id ("0000:65:00.0", lower case) of the device of the
     * calling thread's current CUDA context, or "" (none, or no driver).
     */
    std::string
    current_pci_bus_id() const;

    /*
     * A new dma-buf fd (the caller closes it) for the page-aligned range
     * around [addr, addr + len) of device memory, and addr's offset in it.
     * Return: 0, or -ENODEV (no driver), -EOPNOTSUPP (the device exports no
     * dma-bufs, or the driver refused), -EINVAL (not device memory, or not
     * within one allocation); *err says which.
     */
    int
    dmabuf_of(uintptr_t addr, size_t len, int &fd, uint64_t &offset, std::string &err) const;

private:
    struct Fns;
    void *dll_ = nullptr;
    Fns *fn_ = nullptr;
    bool loaded_ = false; /* cuInit succeeded */
    bool usable_ = false;
    std::string why_;
    std::string path_;

    std::string
    name(int res) const;
    bool
    device_exports(int ordinal, std::string &err) const;
};

#endif
