// SPDX-License-Identifier: GPL-2.0
/*
 * A work request that never reports (a swallowed completion, as in
 * Mooncake #3523) over soft-RoCE: cancel-and-drain forces the QP to the
 * error state and still has no completion at its deadline, so the op is
 * QUARANTINED with its pages pinned, also once its region is
 * deregistered. When the teardown destroys the QP the op becomes DRAINED:
 * late completion counted, first failure unchanged, pages released,
 * counters back to where they were.
 *
 * The knob is armed while no other op is live on the host (so this op
 * uses it). flush_timeout_ms is 3 s (5 s on the debug kernel): the drain
 * forces the QP to the error state half way to its 1 s deadline, and the
 * teardown destroys it 2.5 s (4.5 s) after that deadline, time enough to
 * look at the QUARANTINED op and its pages.
 */
#include <unistd.h>

#include "test.h"

#define MS		1000000ULL

static void restore(void)
{
	t_fault_clear();
	t_restore_params();
}

int main(void)
{
	long long pinned, late, quarantined;
	struct xferk_op_snapshot s = { .state = XFERK_STATE_COUNT };
	struct t_counters base;
	struct t_loop l;
	uint64_t op;
	int ret;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	atexit(restore);
	t_settle(&base);
	pinned = base.pinned_pages;
	late = t_stat("late_completions");
	/* Its one completion was swallowed: it is in flight for good. */
	T_EXPECT(t_swallowed_write(&l, &op) == 0 &&
		 xferk_query(l.x, op, &s) == 0 && s.state == XFERK_STATE_IN_PROGRESS,
		 "completion not swallowed: %s", xferk_state_name(s.state));
	ret = xferk_cancel_drain(l.x, op, xferk_now_ns() + 1000 * MS, &s);
	T_EXPECT_ERR(ret, ETIMEDOUT);
	T_EXPECT(s.state == XFERK_STATE_QUARANTINED && !s.buffer_reusable &&
		 !s.physical_complete && s.quarantined_bytes == 4096,
		 "state %s", xferk_state_name(s.state));
	/* Deregistered, but the quarantined op keeps the pages pinned. */
	quarantined = t_stat("pinned_pages");
	T_EXPECT(xferk_mr_dereg(l.x, l.src_mr) == 0, "dereg");
	T_EXPECT(t_stat("pinned_pages") == quarantined,
		 "pages unpinned while quarantined: %lld, were %lld",
		 t_stat("pinned_pages"), quarantined);

	/* The teardown destroys the QP after flush_timeout_ms. */
	ret = xferk_wait(l.x, op, xferk_now_ns() + 30000 * MS, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED && s.buffer_reusable,
		 "after QP destroy: %d %s", ret, xferk_state_name(s.state));
	T_EXPECT(s.first_error == -ECANCELED && s.late_completions == 1 &&
		 s.quarantine_events == 1, "err %d late %u", s.first_error,
		 s.late_completions);
	T_EXPECT(t_stat("late_completions") == late + 1, "late_completions stat");
	T_EXPECT(t_stat_wait("pinned_pages", quarantined - 256, t_scaled_ms(10000)) ==
		 quarantined - 256, "pinned_pages %lld after DRAINED, %lld before",
		 t_stat("pinned_pages"), quarantined);
	xferk_release(l.x, op);
	xferk_close(l.x);
	T_EXPECT(t_stat_wait("pinned_pages", pinned, t_scaled_ms(10000)) == pinned,
		 "pinned_pages %lld, was %lld", t_stat("pinned_pages"), pinned);
	restore();
	return t_result();
}
