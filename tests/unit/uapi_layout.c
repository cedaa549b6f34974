// SPDX-License-Identifier: GPL-2.0
/*
 * The uAPI header as userspace compiles it: the same offsets the KUnit
 * suite xferk_uapi checks in the kernel, so both sides agree on layout.
 */
#include <stddef.h>
#include <stdio.h>

#include "xferk.h"

struct layout_case {
	const char *field;
	size_t offset;
	size_t expected;
};

int main(void)
{
	static const struct layout_case cases[] = {
		{ "size", offsetof(struct xferk_ioc_info, size), 0 },
		{ "flags", offsetof(struct xferk_ioc_info, flags), 4 },
		{ "abi_version", offsetof(struct xferk_ioc_info, abi_version), 8 },
		{ "reserved0", offsetof(struct xferk_ioc_info, reserved0), 12 },
		{ "features", offsetof(struct xferk_ioc_info, features), 16 },
		{ "reserved", offsetof(struct xferk_ioc_info, reserved), 24 },
		{ "sizeof", sizeof(struct xferk_ioc_info), 56 },
	};
	int fail = 0;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].offset != cases[i].expected) {
			fprintf(stderr, "FAIL %s at %zu, want %zu\n", cases[i].field,
				cases[i].offset, cases[i].expected);
			fail = 1;
		}
	}
	return fail;
}
