// SPDX-License-Identifier: GPL-2.0
/*
 * xferk-status: what the loaded module reports, from the ioctl, sysfs and
 * debugfs, in one place.
 */
#include <stdio.h>
#include <string.h>

#include "libxferk.h"

#define SYSFS_DIR	"/sys/class/misc/xferk"
#define DEBUGFS_DIR	"/sys/kernel/debug/xferk"

static void print_file(const char *label, const char *path)
{
	char line[256];
	FILE *f = fopen(path, "r");

	if (!f) {
		printf("%-14s (unavailable: %s)\n", label, path);
		return;
	}
	while (fgets(line, sizeof(line), f))
		printf("%-14s %s", label, line);
	fclose(f);
}

int main(void)
{
	struct xferk *x;
	int ret = xferk_open(&x);

	if (ret) {
		fprintf(stderr, "xferk-status: open %s: %s\n", XFERK_DEVICE_PATH,
			strerror(-ret));
		return 1;
	}
	printf("%-14s %u\n", "ioctl abi", xferk_abi_version(x));
	printf("%-14s 0x%llx\n", "ioctl features",
	       (unsigned long long)xferk_features(x));
	print_file("sysfs abi", SYSFS_DIR "/abi_version");
	print_file("sysfs features", SYSFS_DIR "/features");
	print_file("debugfs", DEBUGFS_DIR "/config");
	xferk_close(x);
	return 0;
}
