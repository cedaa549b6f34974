// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/* libxferk: thin, explicit wrappers around the /dev/xferk uAPI. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "libxferk.h"

struct xferk {
	int fd;
	uint32_t abi_version;
	uint64_t features;
};

#define XFERK_EXPORT __attribute__((visibility("default")))

/* Runs one command; the struct's size field must already be set. */
static int xferk_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

XFERK_EXPORT int xferk_open(struct xferk **xp)
{
	struct xferk_ioc_info info = { .size = sizeof(info) };
	struct xferk *x;
	int ret;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->fd = open(XFERK_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (x->fd < 0) {
		ret = -errno;
		free(x);
		return ret;
	}
	ret = xferk_ioctl(x->fd, XFERK_IOC_INFO, &info);
	if (ret) {
		xferk_close(x);
		return ret;
	}
	x->abi_version = info.abi_version;
	x->features = info.features;
	*xp = x;
	return 0;
}

XFERK_EXPORT void xferk_close(struct xferk *x)
{
	if (!x)
		return;
	close(x->fd);
	free(x);
}

XFERK_EXPORT int xferk_fd(const struct xferk *x)
{
	return x->fd;
}

XFERK_EXPORT uint32_t xferk_abi_version(const struct xferk *x)
{
	return x->abi_version;
}

XFERK_EXPORT uint64_t xferk_features(const struct xferk *x)
{
	return x->features;
}
