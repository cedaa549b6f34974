// SPDX-License-Identifier: GPL-2.0
/* The version and features from the ioctl match sysfs and the header. */
#include <fcntl.h>
#include <unistd.h>

#include "libxferk.h"
#include "test.h"

static unsigned long long read_sysfs(const char *name)
{
	char path[128];
	unsigned long long v = ~0ULL;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/xferk/%s", name);
	f = fopen(path, "r");
	if (!f)
		return v;
	if (fscanf(f, "%lli", &v) != 1)
		v = ~0ULL;
	fclose(f);
	return v;
}

int main(void)
{
	struct xferk *x;
	int ret = xferk_open(&x);

	if (ret == -ENOENT) {
		fprintf(stderr, "no %s: module not loaded\n", XFERK_DEVICE_PATH);
		return T_SKIP;
	}
	T_EXPECT(ret == 0, "xferk_open: %s", strerror(-ret));
	if (ret)
		return T_FAIL;
	T_EXPECT(xferk_abi_version(x) == XFERK_ABI_VERSION, "abi %u",
		 xferk_abi_version(x));
	T_EXPECT(xferk_features(x) & XFERK_FEAT_INFO, "features %#llx",
		 (unsigned long long)xferk_features(x));
	T_EXPECT(read_sysfs("abi_version") == xferk_abi_version(x),
		 "sysfs abi_version %llu", read_sysfs("abi_version"));
	T_EXPECT(read_sysfs("features") == xferk_features(x),
		 "sysfs features %#llx", read_sysfs("features"));
	T_EXPECT(access("/sys/kernel/debug/xferk/config", R_OK) == 0,
		 "debugfs config: %s", strerror(errno));
	xferk_close(x);
	return t_result();
}
