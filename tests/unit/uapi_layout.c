// SPDX-License-Identifier: GPL-2.0
/*
 * The uAPI header as userspace compiles it: the same offsets the KUnit
 * suite xferk_uapi checks in the kernel, so both sides agree on layout.
 */
#include <stddef.h>
#include <stdio.h>

#include "xferk.h"
#include "../kunit/uapi_layout.h"

int main(void)
{
	const struct layout_case *cases = xferk_layout_cases;
	int fail = 0;
	size_t i;

	for (i = 0; i < sizeof(xferk_layout_cases) / sizeof(cases[0]); i++) {
		if (cases[i].actual != cases[i].expected) {
			fprintf(stderr, "FAIL %s is %zu, want %zu\n", cases[i].what,
				cases[i].actual, cases[i].expected);
			fail = 1;
		}
	}
	printf("%zu layout facts checked\n", i);
	return fail;
}
