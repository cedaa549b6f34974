// SPDX-License-Identifier: GPL-2.0
/*
 * The shared library exports its API under the version node of
 * libxferk.map and nothing else; linked against libxferk.so.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

static const char *const api[] = {
	"xferk_open", "xferk_close", "xferk_fd", "xferk_abi_version",
	"xferk_features", "xferk_mr_reg", "xferk_mr_dereg", "xferk_connect",
	"xferk_connect_null", "xferk_disconnect", "xferk_export",
	"xferk_unexport", "xferk_import", "xferk_unimport",
	"xferk_token_format", "xferk_token_parse", "xferk_submit", "xferk_wait",
	"xferk_query", "xferk_release", "xferk_now_ns", "xferk_state_name",
	"xferk_submit_ex", "xferk_cancel_drain", "xferk_transfer_sync",
};

int main(int argc, char **argv)
{
	void *h = dlopen(argc > 1 ? argv[1] : "libxferk.so.0", RTLD_NOW);
	int fail = 0;
	size_t i;

	if (!h) {
		fprintf(stderr, "FAIL dlopen: %s\n", dlerror());
		return 1;
	}
	for (i = 0; i < sizeof(api) / sizeof(api[0]); i++) {
		if (!dlvsym(h, api[i], "XFERK_0.1")) {
			fprintf(stderr, "FAIL %s@XFERK_0.1 missing\n", api[i]);
			fail = 1;
		}
	}
	if (dlsym(h, "xferk_ioctl")) {
		fprintf(stderr, "FAIL internal xferk_ioctl is exported\n");
		fail = 1;
	}
	dlclose(h);
	return fail;
}
