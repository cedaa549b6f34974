// SPDX-License-Identifier: GPL-2.0
/*
 * Bad ioctl input gets the errno Documentation/uapi.md promises, and a good
 * call afterwards still works: unknown numbers, short, oversized and
 * newer-than-kernel structs, non-zero flags and reserved fields, bad
 * pointers.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "xferk.h"
#include "test.h"

static int fd;

static int call(unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/* The info struct followed by room for a newer caller's extra fields. */
struct info_grown {
	struct xferk_ioc_info info;
	uint64_t newer[8];
};

static void good_info(const char *when)
{
	struct xferk_ioc_info info = { .size = sizeof(info) };

	T_EXPECT(call(XFERK_IOC_INFO, &info) == 0 &&
		 info.abi_version == XFERK_ABI_VERSION,
		 "INFO after %s: abi %u", when, info.abi_version);
}

int main(void)
{
	struct info_grown g;
	struct xferk_ioc_info info;
	static char big[XFERK_ARG_MAX_SIZE + 8];

	fd = open(XFERK_DEVICE_PATH, O_RDWR);
	if (fd < 0)
		return errno == ENOENT ? T_SKIP : T_FAIL;

	/* Unknown command numbers, magic and direction. */
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	T_EXPECT_ERR(call(_IOWR(XFERK_IOC_MAGIC, 0x7f, struct xferk_ioc_info), &info),
		     ENOTTY);
	T_EXPECT_ERR(call(_IOWR('x', 0, struct xferk_ioc_info), &info), ENOTTY);
	T_EXPECT_ERR(call(_IOR(XFERK_IOC_MAGIC, 0, struct xferk_ioc_info), &info),
		     ENOTTY);
	good_info("unknown commands");

	/* Short structs and a size no kernel accepts. */
	info.size = 0;
	T_EXPECT_ERR(call(XFERK_IOC_INFO, &info), EINVAL);
	info.size = sizeof(info) - 8;
	T_EXPECT_ERR(call(XFERK_IOC_INFO, &info), EINVAL);
	memset(big, 0, sizeof(big));
	*(uint32_t *)big = XFERK_ARG_MAX_SIZE + 8;
	T_EXPECT_ERR(call(XFERK_IOC_INFO, big), E2BIG);

	/* A newer caller: zero extra fields are fine, non-zero ones are not. */
	memset(&g, 0, sizeof(g));
	g.info.size = sizeof(g);
	T_EXPECT(call(XFERK_IOC_INFO, &g) == 0, "grown struct rejected");
	T_EXPECT(g.info.abi_version == XFERK_ABI_VERSION, "grown abi %u",
		 g.info.abi_version);
	memset(&g, 0, sizeof(g));
	g.info.size = sizeof(g);
	g.newer[7] = 1;
	T_EXPECT_ERR(call(XFERK_IOC_INFO, &g), E2BIG);
	T_EXPECT(g.info.abi_version == 0, "rejected call wrote output");

	/* The largest size with a zero tail is accepted. */
	*(uint32_t *)big = XFERK_ARG_MAX_SIZE;
	T_EXPECT(call(XFERK_IOC_INFO, big) == 0, "max-size struct rejected");

	/* Flags and reserved fields. */
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	info.flags = 1;
	T_EXPECT_ERR(call(XFERK_IOC_INFO, &info), EINVAL);
	info.flags = 0;
	info.reserved0 = 1;
	T_EXPECT_ERR(call(XFERK_IOC_INFO, &info), EINVAL);
	info.reserved0 = 0;
	info.reserved[3] = 1;
	T_EXPECT_ERR(call(XFERK_IOC_INFO, &info), EINVAL);

	/* Bad pointers. */
	T_EXPECT_ERR(call(XFERK_IOC_INFO, NULL), EFAULT);
	T_EXPECT_ERR(call(XFERK_IOC_INFO, (void *)(uintptr_t)-4096), EFAULT);

	good_info("bad input");
	close(fd);
	return t_result();
}
