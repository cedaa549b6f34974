// SPDX-License-Identifier: GPL-2.0
/*
 * The shared library exports its API under the version node of
 * libxferk.map and nothing else; linked against libxferk.so.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

static const struct {
	const char *name, *version;
} api[] = {
	{ "xferk_open", "XFERK_0.1" }, { "xferk_close", "XFERK_0.1" },
	{ "xferk_fd", "XFERK_0.1" }, { "xferk_abi_version", "XFERK_0.1" },
	{ "xferk_features", "XFERK_0.1" }, { "xferk_mr_reg", "XFERK_0.1" },
	{ "xferk_mr_dereg", "XFERK_0.1" }, { "xferk_connect", "XFERK_0.1" },
	{ "xferk_connect_null", "XFERK_0.1" }, { "xferk_disconnect", "XFERK_0.1" },
	{ "xferk_export", "XFERK_0.1" }, { "xferk_unexport", "XFERK_0.1" },
	{ "xferk_import", "XFERK_0.1" }, { "xferk_unimport", "XFERK_0.1" },
	{ "xferk_token_format", "XFERK_0.1" }, { "xferk_token_parse", "XFERK_0.1" },
	{ "xferk_submit", "XFERK_0.1" }, { "xferk_wait", "XFERK_0.1" },
	{ "xferk_query", "XFERK_0.1" }, { "xferk_release", "XFERK_0.1" },
	{ "xferk_now_ns", "XFERK_0.1" }, { "xferk_state_name", "XFERK_0.1" },
	{ "xferk_submit_ex", "XFERK_0.1" }, { "xferk_cancel_drain", "XFERK_0.1" },
	{ "xferk_transfer_sync", "XFERK_0.1" },
	{ "xferk_conn_query", "XFERK_0.2" },
	{ "xferk_window_open", "XFERK_0.3" }, { "xferk_window_close", "XFERK_0.3" },
	{ "xferk_group_create", "XFERK_0.4" }, { "xferk_group_abort", "XFERK_0.4" },
	{ "xferk_group_wait", "XFERK_0.4" }, { "xferk_group_query", "XFERK_0.4" },
	{ "xferk_group_release", "XFERK_0.4" }, { "xferk_submit_group", "XFERK_0.4" },
	{ "xferk_notify", "XFERK_0.4" }, { "xferk_events", "XFERK_0.4" },
	{ "xferk_window_open_gen", "XFERK_0.4" },
	{ "xferk_import_rail", "XFERK_0.5" }, { "xferk_connect_qps", "XFERK_0.6" },
	{ "xferk_mr_reg_dmabuf", "XFERK_0.7" },
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
		if (!dlvsym(h, api[i].name, api[i].version)) {
			fprintf(stderr, "FAIL %s@%s missing\n", api[i].name,
				api[i].version);
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
