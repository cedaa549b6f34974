// SPDX-License-Identifier: GPL-2.0
/*
 * A region is DMA-mapped at submit, not by its first post (soft-RoCE,
 * loopback): a new 64 MiB region (16 MiB on the debug kernel) is the
 * source of a 4 KiB WRITE and the destination of a 4 KiB READ on a
 * session that is up; both succeed with the right bytes, and
 * stats/dma_maps_in_post does not grow.
 *
 * Regression: a region's first post mapped every page of it under the
 * posting session's lock, often in completion work, stalling every
 * tenant's posts and completions on that session and its receive
 * reposts, long enough on a large region for the peer's messages to run
 * out of receiver-not-ready retries and kill the path.
 */
#include "test.h"

int main(void)
{
	size_t len = (t_debug_kernel() ? 16UL : 64UL) << 20;
	long long in_post;
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	struct t_loop l;
	uint64_t big_mr;
	uint8_t *big;
	int ret;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	t_loop_open(&l, 4096, 4096);
	T_EXPECT(t_quiet() == 0, "other ops are live");
	in_post = t_stat("dma_maps_in_post");
	T_EXPECT(in_post >= 0, "no stats/dma_maps_in_post");
	big = t_map(len);
	t_fill(big + len - 4096, 4096, 7);
	ret = xferk_mr_reg(l.x, big, len, XFERK_ACCESS_LOCAL_SRC |
			   XFERK_ACCESS_LOCAL_DST, &big_mr);
	T_EXPECT(ret == 0, "register %zu MiB: %s", len >> 20, strerror(-ret));
	if (ret)
		return t_result();

	f = (struct xferk_frag) { .mr = big_mr, .offset = len - 4096,
				  .len = 4096, .remote = l.remote,
				  .opcode = XFERK_OP_WRITE };
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "write: %s",
		 ret < 0 ? strerror(-ret) : xferk_state_name(ret));
	T_EXPECT(t_check(l.dst, 4096, 7) < 0, "written bytes wrong");

	memset(big, 0, 4096);
	f = (struct xferk_frag) { .mr = big_mr, .len = 4096,
				  .remote = l.remote, .opcode = XFERK_OP_READ };
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "read: %s",
		 ret < 0 ? strerror(-ret) : xferk_state_name(ret));
	T_EXPECT(t_check(big, 4096, 7) < 0, "read bytes wrong");

	T_EXPECT(t_stat("dma_maps_in_post") == in_post,
		 "%lld maps made by a post", t_stat("dma_maps_in_post") - in_post);
	xferk_close(l.x);
	return t_result();
}
