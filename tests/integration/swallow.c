// SPDX-License-Identifier: GPL-2.0
/*
 * A work request that never reports (a swallowed completion, as in
 * Mooncake #3523) over soft-RoCE: cancel-and-drain forces the QP to the
 * error state and still has no completion at its deadline, so the op is
 * QUARANTINED with its pages pinned. When the teardown destroys the QP the
 * op becomes DRAINED: late completion counted, first failure unchanged,
 * pages released, counters back to zero.
 */
#include <unistd.h>

#include "test.h"

#define MS		1000000ULL
#define FAULT		"/sys/kernel/debug/xferk/fault/"
#define FLUSH_TIMEOUT	"/sys/module/xferk/parameters/flush_timeout_ms"

int main(void)
{
	long long pinned = t_stat("pinned_pages"), late = t_stat("late_completions");
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	struct t_loop l;
	uint64_t op;
	int ret;

	t_loop_open(&l, 1 << 20, 1 << 20);
	T_EXPECT(t_write_file(FLUSH_TIMEOUT, "1000") == 0, "flush timeout");
	T_EXPECT(t_write_file(FAULT "swallow_completions", "1") == 0, "fault");

	f = (struct xferk_frag) { .mr = l.src_mr, .len = 4096, .remote = l.remote,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT(xferk_submit(l.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0, "submit");
	ret = xferk_cancel_drain(l.x, op, xferk_now_ns() + 1000 * MS, &s);
	T_EXPECT_ERR(ret, ETIMEDOUT);
	T_EXPECT(s.state == XFERK_STATE_QUARANTINED && !s.buffer_reusable &&
		 !s.physical_complete && s.quarantined_bytes == 4096,
		 "state %s", xferk_state_name(s.state));
	T_EXPECT(t_stat("pinned_pages") > pinned, "pages unpinned while quarantined");

	/* The teardown destroys the QP after flush_timeout_ms. */
	ret = xferk_wait(l.x, op, xferk_now_ns() + 30000 * MS, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED && s.buffer_reusable,
		 "after QP destroy: %d %s", ret, xferk_state_name(s.state));
	T_EXPECT(s.first_error == -ECANCELED && s.late_completions == 1 &&
		 s.quarantine_events == 1, "err %d late %u", s.first_error,
		 s.late_completions);
	T_EXPECT(t_stat("late_completions") == late + 1, "late_completions stat");
	xferk_release(l.x, op);
	xferk_close(l.x);
	T_EXPECT(t_stat("pinned_pages") == pinned, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), pinned);
	T_EXPECT(t_write_file(FLUSH_TIMEOUT, "5000") == 0, "restore flush timeout");
	return t_result();
}
