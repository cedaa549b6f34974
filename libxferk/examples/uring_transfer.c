// SPDX-License-Identifier: MIT
/*
 * uring_transfer: move KV blocks with xferk through an io_uring ring.
 *
 *   uring_transfer [PEER_IP] [BLOCKS]
 *
 * Connects to the xferk listener at PEER_IP (default 10.99.0.1: itself,
 * over loopback), exports a "decode" buffer, imports it as a "prefill"
 * process would, and writes BLOCKS 16 KiB blocks (default 256) with one
 * SUBMIT per block, all in flight at once. Each CQE says whether its
 * block's buffer may be reused. Exit 0 if every block arrived intact.
 *
 * Build: cc uring_transfer.c $(pkg-config --cflags --libs xferk) -luring
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <liburing.h>

#include "libxferk.h"
#include "xferk_uring.h"

#define BLOCK	(16UL << 10)

static int fail(const char *what, int err)
{
	fprintf(stderr, "%s: %s\n", what, strerror(-err));
	return 1;
}

int main(int argc, char **argv)
{
	const char *peer = argc > 1 ? argv[1] : "10.99.0.1";
	unsigned int blocks = argc > 2 ? atoi(argv[2]) : 256, i, ok = 0;
	size_t len = blocks * BLOCK;
	uint64_t conn, src_mr, dst_mr, export, remote;
	struct xferk_ioc_submit *subs;
	struct xferk_frag *frags;
	struct xferk_token token;
	struct io_uring ring;
	uint8_t *src, *dst;
	struct xferk *x;
	int ret;

	if (!blocks)
		return fail("blocks", -EINVAL);
	ret = xferk_open(&x);
	if (ret)
		return fail(XFERK_DEVICE_PATH, ret);
	if (!(xferk_features(x) & XFERK_FEAT_URING))
		return fail("io_uring commands", -EOPNOTSUPP);
	/* One extra page at the end: see Documentation/testing.md (rxe). */
	src = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, len + 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	subs = calloc(blocks, sizeof(*subs));
	frags = calloc(blocks, sizeof(*frags));
	if (src == MAP_FAILED || dst == MAP_FAILED || !subs || !frags)
		return fail("memory", -ENOMEM);
	for (i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 7 + i / BLOCK);

	/* The decode side: a buffer the peer may write, and its token. */
	ret = xferk_connect(x, peer, 0, 5000, &conn);
	if (!ret)
		ret = xferk_mr_reg(x, dst, len + 4096, XFERK_ACCESS_REMOTE_WRITE, &dst_mr);
	if (!ret)
		ret = xferk_export(x, conn, dst_mr, 0, len + 4096,
				   XFERK_ACCESS_REMOTE_WRITE, &token, &export);
	/* The prefill side: its KV blocks, and the imported token. */
	if (!ret)
		ret = xferk_mr_reg(x, src, len, XFERK_ACCESS_LOCAL_SRC, &src_mr);
	if (!ret)
		ret = xferk_import(x, conn, &token, &remote);
	if (!ret)
		ret = io_uring_queue_init(blocks, &ring, 0);
	if (ret)
		return fail("setup", ret);

	for (i = 0; i < blocks; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		frags[i] = (struct xferk_frag) {
			.mr = src_mr, .offset = i * BLOCK, .len = BLOCK,
			.remote = remote, .remote_offset = i * BLOCK,
			.opcode = XFERK_OP_WRITE,
		};
		subs[i] = (struct xferk_ioc_submit) {
			.size = sizeof(subs[i]), .flags = XFERK_SUBMIT_AUTO_RELEASE,
			.frags = (uintptr_t)&frags[i], .nr_frags = 1,
			.frag_size = sizeof(frags[i]),
			.deadline_ns = xferk_now_ns() + 30000000000ULL,
			.drain_budget_ns = 1000000000ULL,
		};
		io_uring_prep_xferk_submit(sqe, xferk_fd(x), &subs[i]);
		io_uring_sqe_set_data64(sqe, i);
	}
	ret = io_uring_submit(&ring);
	if (ret != (int)blocks)
		return fail("io_uring_submit", ret < 0 ? ret : -EIO);

	for (i = 0; i < blocks; i++) {
		struct io_uring_cqe *cqe;

		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret)
			return fail("io_uring_wait_cqe", ret);
		if (xferk_cqe_succeeded(cqe))
			ok++;
		else if (cqe->res < 0)
			fprintf(stderr, "block %llu: %s\n",
				(unsigned long long)cqe->user_data, strerror(-cqe->res));
		else
			fprintf(stderr, "block %llu: %s, buffer %s\n",
				(unsigned long long)cqe->user_data,
				xferk_state_name(cqe->res),
				xferk_cqe_buffer_reusable(cqe) ? "reusable" : "NOT reusable");
		io_uring_cqe_seen(&ring, cqe);
	}
	if (memcmp(src, dst, len))
		ok = 0;
	printf("%u of %u blocks of %lu KiB written and verified\n", ok, blocks,
	       BLOCK >> 10);
	io_uring_queue_exit(&ring);
	xferk_close(x);
	return ok == blocks ? 0 : 1;
}
