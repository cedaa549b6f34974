/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Page-backed dma-bufs for tests, from vgem (the kernel's virtual GEM
 * driver, as IGT's vgem helpers use it): a dumb buffer exported with PRIME
 * is a dma-buf, and the buffer's own CPU mapping (MAP_DUMB on the vgem
 * device) shows what the RDMA device wrote into it.
 *
 * The few DRM ioctls are declared here (stable uAPI of include/uapi/drm/
 * drm.h and drm_mode.h), so the tests need no libdrm.
 */
#ifndef XFERK_TEST_VGEM_H
#define XFERK_TEST_VGEM_H

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

struct t_drm_mode_create_dumb {
	uint32_t height, width, bpp, flags, handle, pitch;
	uint64_t size;
};

struct t_drm_mode_map_dumb {
	uint32_t handle, pad;
	uint64_t offset;
};

struct t_drm_prime_handle {
	uint32_t handle, flags;
	int32_t fd;
};

struct t_drm_gem_close {
	uint32_t handle, pad;
};

#define T_DRM_IOCTL_GEM_CLOSE		_IOW('d', 0x09, struct t_drm_gem_close)
#define T_DRM_IOCTL_PRIME_HANDLE_TO_FD	_IOWR('d', 0x2d, struct t_drm_prime_handle)
#define T_DRM_IOCTL_MODE_CREATE_DUMB	_IOWR('d', 0xB2, struct t_drm_mode_create_dumb)
#define T_DRM_IOCTL_MODE_MAP_DUMB	_IOWR('d', 0xB3, struct t_drm_mode_map_dumb)

/* A vgem buffer: its dma-buf and its CPU mapping. */
struct t_vgem_buf {
	int fd;			/* the dma-buf */
	uint8_t *map;		/* the buffer's own CPU mapping */
	size_t size;
};

/* Opens the vgem device (/sys/devices/platform/vgem/drm/cardN), or -1. */
static inline int t_vgem_open(void)
{
	const char *dir = "/sys/devices/platform/vgem/drm";
	char path[300];
	struct dirent *e;
	int fd = -1;
	DIR *d = opendir(dir);

	while (d && fd < 0 && (e = readdir(d)))
		if (!strncmp(e->d_name, "card", 4)) {
			snprintf(path, sizeof(path), "/dev/dri/%s", e->d_name);
			fd = open(path, O_RDWR | O_CLOEXEC);
		}
	if (d)
		closedir(d);
	return fd;
}

/*
 * A buffer of at least @size bytes (whole pages) on the vgem device @dev,
 * exported read-write or, with @read_only, read-only; 0 or -1.
 */
static inline int t_vgem_create(int dev, size_t size, int read_only,
				struct t_vgem_buf *b)
{
	struct t_drm_mode_create_dumb c = {
		.width = 4096, .bpp = 8,
		.height = (uint32_t)((size + 4095) / 4096),
	};
	struct t_drm_mode_map_dumb m = { 0 };
	struct t_drm_prime_handle p = { 0 };
	struct t_drm_gem_close g = { 0 };

	if (ioctl(dev, T_DRM_IOCTL_MODE_CREATE_DUMB, &c))
		return -1;
	m.handle = p.handle = g.handle = c.handle;
	p.flags = O_CLOEXEC | (read_only ? 0 : O_RDWR);
	b->map = MAP_FAILED;
	if (!ioctl(dev, T_DRM_IOCTL_MODE_MAP_DUMB, &m))
		b->map = mmap(NULL, c.size, PROT_READ | PROT_WRITE, MAP_SHARED,
			      dev, (off_t)m.offset);
	if (b->map == MAP_FAILED ||
	    ioctl(dev, T_DRM_IOCTL_PRIME_HANDLE_TO_FD, &p)) {
		ioctl(dev, T_DRM_IOCTL_GEM_CLOSE, &g);
		return -1;
	}
	/* The dma-buf and the mapping keep the buffer. */
	ioctl(dev, T_DRM_IOCTL_GEM_CLOSE, &g);
	b->fd = p.fd;
	b->size = c.size;
	return 0;
}

static inline void t_vgem_free(struct t_vgem_buf *b)
{
	if (b->fd >= 0)
		close(b->fd);
	munmap(b->map, b->size);
	b->fd = -1;
}

#endif /* XFERK_TEST_VGEM_H */
