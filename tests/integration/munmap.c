// SPDX-License-Identifier: GPL-2.0
/*
 * munmap of registered memory in the middle of a transfer, then its
 * deregistration and the release of the op, all while work requests are in
 * flight over soft-RoCE: no crash, no early unpin. The pinned pages keep the
 * data (the destination receives it) and count as quarantined until the op
 * is physically complete; then they are released.
 *
 * In the first case the op surely is in flight while the test looks: its
 * first completion is held back for seconds (fault knobs delay_completions
 * and delay_ms, armed while no other op is live on the host, so the op
 * itself uses them), and released once the test has looked.
 */
#include <unistd.h>

#include "test.h"

#define LEN	(16UL << 20)

static long long saved_delay_ms = -1;

static void restore_faults(void)
{
	t_fault_clear();
	if (saved_delay_ms >= 0)
		t_fault_set("delay_ms", saved_delay_ms);
}

int main(void)
{
	const unsigned int hold_ms = t_debug_kernel() ? 5000 : 2000;
	const unsigned int bound_ms = hold_ms + t_scaled_ms(60000);
	struct xferk_op_snapshot s;
	struct t_counters base;
	long long quarantined;
	struct xferk_frag f;
	struct t_loop l;
	uint64_t op;
	int ret;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	saved_delay_ms = t_fault_get("delay_ms");
	atexit(restore_faults);
	t_settle(&base);
	t_loop_open(&l, LEN, LEN + 4096);
	t_fill(l.src, LEN, 31);
	f = (struct xferk_frag) { .mr = l.src_mr, .len = LEN, .remote = l.remote,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_fault_set("delay_ms", hold_ms) == 0 &&
		 t_fault_set("delay_completions", 1) == 0, "delay knobs");
	ret = xferk_submit(l.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op);
	T_EXPECT(ret == 0, "submit: %d", ret);
	T_EXPECT(munmap(l.src, LEN) == 0, "munmap");
	T_EXPECT(t_stat("pinned_pages") >= base.pinned_pages + (long long)(LEN / 4096),
		 "unpinned by munmap");
	T_EXPECT(xferk_mr_dereg(l.x, l.src_mr) == 0, "dereg in flight");
	/*
	 * The counter first: the op is physically complete before its pages
	 * are released, so the other order could see both gone.
	 */
	quarantined = t_stat("quarantined_pages");
	ret = xferk_query(l.x, op, &s);
	T_EXPECT(ret == 0 && !s.physical_complete, "op not in flight: %d %s", ret,
		 xferk_state_name(s.state));
	T_EXPECT(quarantined >= base.quarantined_pages + (long long)(LEN / 4096),
		 "in-flight region not quarantined: %lld", quarantined);
	/* Released once held: a release before would not end the hold. */
	T_EXPECT(t_fault_taken("delay_completions", t_scaled_ms(30000)) == 0,
		 "no completion of the op was held");
	t_release_held();
	ret = xferk_wait(l.x, op, xferk_now_ns() + (uint64_t)bound_ms * 1000000,
			 XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED, "op: %d %s", ret,
		 xferk_state_name(s.state));
	T_EXPECT(t_fault_get("delay_completions") == 0, "delay knob not used");
	restore_faults();
	T_EXPECT(t_check(l.dst, LEN, 31) < 0, "data from the unmapped source differs");
	T_EXPECT(t_stat_wait("quarantined_pages", base.quarantined_pages,
			     t_scaled_ms(10000)) == base.quarantined_pages,
		 "quarantined_pages %lld, was %lld", t_stat("quarantined_pages"),
		 base.quarantined_pages);

	/* The same with the op released in flight: nobody waits for it. */
	l.src = t_map(LEN);
	T_EXPECT(xferk_mr_reg(l.x, l.src, LEN, XFERK_ACCESS_LOCAL_SRC,
			      &l.src_mr) == 0,
		 "reg");
	f.mr = l.src_mr;
	T_EXPECT(xferk_submit(l.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0 &&
		 xferk_release(l.x, op) == 0 && xferk_mr_dereg(l.x, l.src_mr) == 0 &&
		 munmap(l.src, LEN) == 0, "release, dereg, munmap in flight");
	T_EXPECT(t_stat_wait("quarantined_pages", base.quarantined_pages,
			     t_scaled_ms(60000)) == base.quarantined_pages,
		 "never drained: quarantined_pages %lld, was %lld",
		 t_stat("quarantined_pages"), base.quarantined_pages);
	xferk_close(l.x);
	T_EXPECT(t_stat_wait("pinned_pages", base.pinned_pages, t_scaled_ms(10000)) ==
		 base.pinned_pages, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), base.pinned_pages);
	return t_result();
}
