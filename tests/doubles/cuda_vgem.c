// SPDX-License-Identifier: GPL-2.0
/*
 * A TEST DOUBLE of the CUDA driver (libcuda.so.1), for hosts without a GPU:
 * libcuda-vgem-double.so. Its "device memory" is vgem buffers
 * (tests/integration/vgem.h), and a "device pointer" is the address of a
 * buffer's CPU mapping, so a test writes and checks "GPU memory" directly.
 * It implements only what xferk's Python package and NIXL backend call
 * to obtain a dma-buf for a device pointer, and the allocation calls the
 * tests use:
 *
 *   cuInit, cuGetErrorName, cuDeviceGet, cuDeviceGetAttribute (only
 *   CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: 1, or 0 with
 *   XFERK_CUDA_DOUBLE_NO_DMABUF=1 set), cuPointerGetAttribute (memory
 *   type, context, device ordinal, range start and size), cuCtxPushCurrent,
 *   cuCtxPopCurrent (nothing to do), cuMemGetHandleForAddressRange (a new
 *   fd of the allocation's dma-buf: only for a range that starts at an
 *   allocation's start and ends within its buffer, where the real driver
 *   takes any page-aligned range of one allocation), cuMemAlloc, cuMemFree.
 *
 * Never a substitute for a GPU in what it claims: the dma-bufs are system
 * memory with struct pages, which a real GPU's are not.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../integration/vgem.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;

#define CUDA_SUCCESS			0
#define CUDA_ERROR_INVALID_VALUE	1
#define CUDA_ERROR_OUT_OF_MEMORY	2
#define CUDA_ERROR_NOT_INITIALIZED	3
#define CUDA_ERROR_NO_DEVICE		100
#define CUDA_ERROR_INVALID_DEVICE	101
#define CUDA_ERROR_NOT_SUPPORTED	801

#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED	124
#define CU_POINTER_ATTRIBUTE_CONTEXT		1
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE	2
#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL	9
#define CU_POINTER_ATTRIBUTE_RANGE_START_ADDR	11
#define CU_POINTER_ATTRIBUTE_RANGE_SIZE		12
#define CU_MEMORYTYPE_DEVICE			2
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD	1

#define MAX_ALLOCS	256

/* One allocation: a vgem buffer, its mapping the device pointer. */
static struct t_vgem_buf allocs[MAX_ALLOCS];
static size_t alloc_len[MAX_ALLOCS];	/* as asked; 0: the slot is free */
static int vgem = -1;
static int initialized;
static int context = 1;			/* what CU_POINTER_ATTRIBUTE_CONTEXT names */

CUresult cuInit(unsigned int flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (vgem < 0)
		vgem = t_vgem_open();
	if (vgem < 0)
		return CUDA_ERROR_NO_DEVICE;
	initialized = 1;
	return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult err, const char **name)
{
	switch (err) {
	case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
	case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
	case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case CUDA_ERROR_NOT_INITIALIZED: *name = "CUDA_ERROR_NOT_INITIALIZED"; break;
	case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; break;
	case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
	case CUDA_ERROR_NOT_SUPPORTED: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal)
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = 0;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attr, CUdevice dev)
{
	const char *no = getenv("XFERK_CUDA_DOUBLE_NO_DMABUF");

	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev)
		return CUDA_ERROR_INVALID_DEVICE;
	if (attr != CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
		return CUDA_ERROR_INVALID_VALUE;
	*value = !(no && !strcmp(no, "1"));
	return CUDA_SUCCESS;
}

/* The allocation that holds @p, or -1. */
static int alloc_of(CUdeviceptr p)
{
	int i;

	for (i = 0; i < MAX_ALLOCS; i++)
		if (alloc_len[i] && p >= (uintptr_t)allocs[i].map &&
		    p < (uintptr_t)allocs[i].map + alloc_len[i])
			return i;
	return -1;
}

CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	int i = alloc_of(p);

	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (i < 0)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(void **)data = &context;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = 0;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = (uintptr_t)allocs[i].map;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = alloc_len[i];
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(void *ctx)
{
	return ctx == &context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuCtxPopCurrent_v2(void **ctx)
{
	if (ctx)
		*ctx = &context;
	return CUDA_SUCCESS;
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p,
				       size_t size, int type,
				       unsigned long long flags)
{
	int i = alloc_of(p), fd;

	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags || i < 0 ||
	    !size || (p | size) % 4096)
		return CUDA_ERROR_INVALID_VALUE;
	/* The double hands out whole buffers: a range from their start. */
	if (p != (uintptr_t)allocs[i].map || size > allocs[i].size)
		return CUDA_ERROR_NOT_SUPPORTED;
	fd = fcntl(allocs[i].fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*(int *)handle = fd;
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
	int i;

	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!size)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < MAX_ALLOCS && alloc_len[i]; i++)
		;
	if (i == MAX_ALLOCS || t_vgem_create(vgem, size, 0, &allocs[i]))
		return CUDA_ERROR_OUT_OF_MEMORY;
	alloc_len[i] = size;
	*p = (uintptr_t)allocs[i].map;
	return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	int i = alloc_of(p);

	if (i < 0 || p != (uintptr_t)allocs[i].map)
		return CUDA_ERROR_INVALID_VALUE;
	t_vgem_free(&allocs[i]);
	alloc_len[i] = 0;
	return CUDA_SUCCESS;
}
