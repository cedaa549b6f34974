// SPDX-License-Identifier: GPL-2.0
/*
 * munmap of registered memory in the middle of a transfer: no crash, no
 * early unpin. The pinned pages keep the data; they are released only when
 * the op is physically complete and the region is deregistered.
 */
#include "test.h"

#define LEN	(16UL << 20)

int main(void)
{
	uint64_t conn, src_mr, dst_mr, remote, op;
	long long pinned = t_stat("pinned_pages");
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	struct xferk *x;
	uint8_t *src, *dst;
	int ret;

	if (xferk_open(&x))
		return T_SKIP;
	src = t_map(LEN);
	dst = t_map(LEN + 4096);
	t_fill(src, LEN, 31);
	if (t_setup(x, src, LEN, dst, LEN + 4096, &conn, &src_mr, &dst_mr, &remote))
		return T_FAIL;
	f = (struct xferk_frag) { .mr = src_mr, .len = LEN, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	ret = xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op);
	T_EXPECT(ret == 0, "submit: %d", ret);
	T_EXPECT(munmap(src, LEN) == 0, "munmap");
	T_EXPECT(t_stat("pinned_pages") >= pinned + (long long)(LEN / 4096),
		 "unpinned by munmap");
	ret = xferk_wait(x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED, "op: %d %s", ret,
		 xferk_state_name(s.state));
	T_EXPECT(t_check(dst, LEN, 31) < 0, "data from the unmapped source differs");
	T_EXPECT(xferk_mr_dereg(x, src_mr) == 0, "dereg after munmap");
	xferk_release(x, op);
	xferk_close(x);
	T_EXPECT(t_stat("pinned_pages") == pinned, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), pinned);
	return t_result();
}
