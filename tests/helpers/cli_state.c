// SPDX-License-Identifier: GPL-2.0
/*
 * Known state for tests/integration/cli.sh to read back with xferk(8):
 *
 *   cli_state NOPS PEER
 *
 * connects to PEER (an address of the host's own soft-RoCE: one RDMA
 * connection) and to a null peer whose chunks take ten minutes; submits
 * NOPS one-page WRITEs to the null peer, which do not complete while it
 * runs (as many posted as the admission queue's windows allow, the rest
 * queued); deregisters their source region, which stays pinned as
 * "deregistered-in-use" in the quarantine while the ops use it. Prints
 * "ready" and holds all of it until its stdin reaches end of file; then
 * exits, and closing /dev/xferk lets the kernel cancel and free it all.
 * Needs CAP_SYS_ADMIN (the null peer). Exit 0, or 1 if a step failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "libxferk.h"
#include "test_env.h"

#define PAGE		4096
#define NULL_DELAY_NS	(600 * 1000000000ULL)

static int fail(const char *what, int err)
{
	fprintf(stderr, "cli_state: %s: %s\n", what, strerror(-err));
	return 1;
}

int main(int argc, char **argv)
{
	uint64_t rconn, conn, src, dst, exp, remote, op;
	struct xferk_token tok;
	struct xferk_frag f;
	struct xferk *x;
	int nops, i, ret;
	uint8_t *buf;
	char c;

	nops = argc == 3 ? atoi(argv[1]) : 0;
	if (nops < 1 || nops > 1024) {
		fprintf(stderr, "usage: cli_state NOPS(1-1024) PEER\n");
		return 2;
	}
	buf = mmap(NULL, 2UL * nops * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return fail("mmap", -errno);
	memset(buf, 1, 2UL * nops * PAGE);
	ret = xferk_open(&x);
	if (ret)
		return fail("open", ret);
	ret = xferk_connect(x, argv[2], 0, t_connect_ms(), &rconn);
	if (ret)
		return fail("connect", ret);
	ret = xferk_connect_null(x, NULL_DELAY_NS, &conn);
	if (ret)
		return fail("null peer", ret);
	ret = xferk_mr_reg(x, buf, (uint64_t)nops * PAGE, XFERK_ACCESS_ALL, &src);
	if (!ret)
		ret = xferk_mr_reg(x, buf + (size_t)nops * PAGE,
				   (uint64_t)nops * PAGE, XFERK_ACCESS_ALL, &dst);
	if (!ret)
		ret = xferk_export(x, conn, dst, 0, (uint64_t)nops * PAGE,
				   XFERK_ACCESS_REMOTE_WRITE, &tok, &exp);
	if (!ret)
		ret = xferk_import(x, conn, &tok, &remote);
	if (ret)
		return fail("regions", ret);
	for (i = 0; i < nops; i++) {
		f = (struct xferk_frag) { .mr = src, .offset = i * PAGE,
					  .len = PAGE, .remote = remote,
					  .remote_offset = i * PAGE,
					  .opcode = XFERK_OP_WRITE };
		ret = xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op);
		if (ret)
			return fail("submit", ret);
	}
	ret = xferk_mr_dereg(x, src);
	if (ret)
		return fail("dereg", ret);
	printf("ready\n");
	fflush(stdout);
	while (read(STDIN_FILENO, &c, 1) > 0)
		;
	xferk_close(x);
	return 0;
}
