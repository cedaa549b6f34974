// SPDX-License-Identifier: GPL-2.0
/*
 * munmap of registered memory in the middle of a transfer, then its
 * deregistration and the release of the op, all while work requests are in
 * flight over soft-RoCE: no crash, no early unpin. The pinned pages keep the
 * data (the destination receives it) and count as quarantined until the op
 * is physically complete; then they are released.
 */
#include <unistd.h>

#include "test.h"

#define LEN	(16UL << 20)

int main(void)
{
	long long pinned = t_stat("pinned_pages");
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	struct t_loop l;
	uint64_t op;
	int ret;

	t_loop_open(&l, LEN, LEN + 4096);
	t_fill(l.src, LEN, 31);
	f = (struct xferk_frag) { .mr = l.src_mr, .len = LEN, .remote = l.remote,
				  .opcode = XFERK_OP_WRITE };
	ret = xferk_submit(l.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op);
	T_EXPECT(ret == 0, "submit: %d", ret);
	T_EXPECT(munmap(l.src, LEN) == 0, "munmap");
	T_EXPECT(t_stat("pinned_pages") >= pinned + (long long)(LEN / 4096),
		 "unpinned by munmap");
	T_EXPECT(xferk_mr_dereg(l.x, l.src_mr) == 0, "dereg in flight");
	ret = xferk_query(l.x, op, &s);
	T_EXPECT(ret == 0 && (s.physical_complete ||
			      t_stat("quarantined_pages") >= (long long)(LEN / 4096)),
		 "in-flight region not quarantined: %lld",
		 t_stat("quarantined_pages"));
	ret = xferk_wait(l.x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED, "op: %d %s", ret,
		 xferk_state_name(s.state));
	T_EXPECT(t_check(l.dst, LEN, 31) < 0, "data from the unmapped source differs");
	T_EXPECT(t_stat("quarantined_pages") == 0, "quarantined_pages %lld",
		 t_stat("quarantined_pages"));

	/* The same with the op released in flight: nobody waits for it. */
	l.src = t_map(LEN);
	T_EXPECT(xferk_mr_reg(l.x, l.src, LEN, XFERK_ACCESS_LOCAL_SRC,
			      &l.src_mr) == 0,
		 "reg");
	f.mr = l.src_mr;
	T_EXPECT(xferk_submit(l.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0 &&
		 xferk_release(l.x, op) == 0 && xferk_mr_dereg(l.x, l.src_mr) == 0 &&
		 munmap(l.src, LEN) == 0, "release, dereg, munmap in flight");
	for (int i = 0; i < 600 && t_stat("quarantined_pages"); i++)
		usleep(100000);
	T_EXPECT(t_stat("quarantined_pages") == 0, "never drained");
	xferk_close(l.x);
	T_EXPECT(t_stat("pinned_pages") == pinned, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), pinned);
	return t_result();
}
