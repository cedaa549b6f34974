// SPDX-License-Identifier: GPL-2.0
/*
 * Cancel and drain: queued fragments dropped at once, posted ones drained;
 * cancel of a finished op and a second cancel change nothing; a drain that
 * cannot finish in time quarantines the op until the device is done; the
 * cancel-on-deadline policy; the quarantine limit. Uses the null peer (no
 * data moves), slow enough that an op is still in flight whenever the test
 * needs it to be: seconds per fragment, more on the debug kernel, and
 * drain budgets of a minute or more where the drain must end on its own.
 * Then over rxe: a cancel right after a 64 MiB submit drops the chunks not
 * yet posted (the op's first completion held back by a fault knob so that
 * it cannot finish first).
 */
#include <unistd.h>

#include "test.h"

#define MS	1000000ULL

/* A null peer's time per fragment: far longer than the test's own steps. */
static uint64_t slow_ms(void)
{
	return t_debug_kernel() ? 3000 : 2000;
}

/* A drain budget the slow null peer fits in with room to spare. */
static uint64_t long_drain_ms(void)
{
	return t_debug_kernel() ? 120000 : 60000;
}

static struct xferk *x;
static uint64_t mr;
static long long saved_delay_ms = -1;

static void restore_faults(void)
{
	t_fault_clear();
	if (saved_delay_ms >= 0)
		t_fault_set("delay_ms", saved_delay_ms);
}

static uint64_t null_remote(uint64_t delay_ns, uint64_t *conn)
{
	struct xferk_token tok;
	uint64_t exp, remote = 0;

	T_EXPECT(xferk_connect_null(x, delay_ns, conn) == 0 &&
		 xferk_export(x, *conn, mr, 0, 2 << 20, XFERK_ACCESS_REMOTE_WRITE,
			      &tok, &exp) == 0 &&
		 xferk_import(x, *conn, &tok, &remote) == 0, "null peer");
	return remote;
}

/*
 * 300 fragments on a slow peer: as many posted as the admission queue's
 * windows allow (the QP's 128 send slots when it is bypassed), the rest
 * queued. The cancel comes long before the posted ones complete; they
 * complete within the first half of the drain budget, on their own. The
 * fragments land in reverse order remotely, so none continues another:
 * one chunk each.
 */
static void cancel_queued_and_posted(void)
{
	static struct xferk_frag f[300];
	struct xferk_op_snapshot s;
	uint64_t conn, remote = null_remote(slow_ms() * MS, &conn), op, t0;
	long long posted = t_queue_stat("qp_window");
	int i, ret;

	if (t_queue_stat("op_window_chunks") < posted)
		posted = t_queue_stat("op_window_chunks");
	for (i = 0; i < 300; i++)
		f[i] = (struct xferk_frag) { .mr = mr, .offset = i * 4096ULL,
					     .len = 4096, .remote = remote,
					     .remote_offset = (299 - i) * 4096ULL,
					     .opcode = XFERK_OP_WRITE };
	T_EXPECT(xferk_submit(x, f, 300, XFERK_DEADLINE_NONE, 0, &op) == 0, "submit");
	t0 = xferk_now_ns();
	ret = xferk_cancel_drain(x, op, t0 + long_drain_ms() * MS, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED,
		 "cancel: %d %s", ret, xferk_state_name(s.state));
	T_EXPECT(s.first_error == -ECANCELED && s.buffer_reusable &&
		 s.physical_complete && s.cancel_requests == 1 &&
		 s.drain_attempts == 1, "snapshot: err %d", s.first_error);
	T_EXPECT(s.transferred_bytes == posted * 4096ULL &&
		 s.late_completions == posted && s.completed_fragments == 300,
		 "posted ones drained: %llu bytes, %u late, want %lld",
		 (unsigned long long)s.transferred_bytes, s.late_completions, posted);
	/* Twice: idempotent. */
	ret = xferk_cancel_drain(x, op, xferk_now_ns() + 1000 * MS, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED &&
		 s.cancel_requests == 2 && s.drain_attempts == 1, "second cancel");
	xferk_release(x, op);
	xferk_disconnect(x, conn);
}

static void cancel_finished_is_noop(uint64_t remote)
{
	struct xferk_frag f = { .mr = mr, .len = 100, .remote = remote,
				.opcode = XFERK_OP_WRITE };
	struct xferk_op_snapshot s;
	uint64_t op;

	T_EXPECT(t_run(x, &f, 1, &s) == XFERK_STATE_SUCCEEDED, "run");
	T_EXPECT(xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0 &&
		 xferk_wait(x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s) == 0,
		 "run 2");
	T_EXPECT(xferk_cancel_drain(x, op, 0, &s) == 0 &&
		 s.state == XFERK_STATE_SUCCEEDED && s.first_error == 0 &&
		 s.cancel_requests == 1, "cancel after success: %s",
		 xferk_state_name(s.state));
	xferk_release(x, op);
}

/*
 * The drain budget ends before the device is done: QUARANTINED, then
 * DRAINED. The null peer's fragment takes far longer than the drain: at
 * half the budget the drain takes the null peer down, whose teardown ends
 * the fragment after flush_timeout_ms (2 s here), long after the 200 ms
 * drain deadline.
 */
static void quarantine_then_drained(void)
{
	struct xferk_op_snapshot s;
	uint64_t conn, remote = null_remote(4 * slow_ms() * MS, &conn), op;
	struct xferk_frag f = { .mr = mr, .len = 8192, .remote = remote,
				.opcode = XFERK_OP_WRITE };
	long long qevents = t_stat("quarantine_events");
	int ret;

	T_EXPECT(xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0, "submit");
	ret = xferk_cancel_drain(x, op, xferk_now_ns() + 200 * MS, &s);
	T_EXPECT_ERR(ret, ETIMEDOUT);
	T_EXPECT(s.state == XFERK_STATE_QUARANTINED && !s.buffer_reusable &&
		 s.quarantined_bytes == 8192 && s.quarantine_events == 1,
		 "quarantined: %s reusable %u bytes %llu", xferk_state_name(s.state),
		 s.buffer_reusable, (unsigned long long)s.quarantined_bytes);
	T_EXPECT(t_stat("quarantine_events") == qevents + 1, "quarantine_events");
	T_EXPECT(t_file_has("/sys/kernel/debug/xferk/quarantine", " quarantined"),
		 "not in the quarantine registry");
	ret = xferk_wait(x, op, xferk_now_ns() + long_drain_ms() * MS,
			 XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED && s.buffer_reusable &&
		 s.first_error == -ECANCELED && s.late_completions == 1,
		 "later: %d %s err %d late %u", ret, xferk_state_name(s.state),
		 s.first_error, s.late_completions);
	xferk_release(x, op);
	xferk_disconnect(x, conn);
}

/*
 * The op's deadline passes long before its fragment is done: TIMED_OUT,
 * then the policy's background drain, whose budget outlasts the fragment:
 * DRAINED when the fragment completes. The deadline, fixed before the
 * submit, fires (its timer queues the drain) 2 s (4 s on the debug
 * kernel) before the fragment can complete: the null peer's delay starts
 * at the post.
 */
static void cancel_on_deadline_policy(void)
{
	struct xferk_submit_opts opts = {
		.flags = XFERK_SUBMIT_CANCEL_ON_DEADLINE,
		.drain_budget_ns = long_drain_ms() * MS,
	};
	struct xferk_op_snapshot s;
	uint64_t conn, remote, op;
	struct xferk_frag f = { .mr = mr, .len = 4096,
				.opcode = XFERK_OP_WRITE };
	int ret;

	remote = null_remote((t_scaled_ms(500) +
			      (t_debug_kernel() ? 4000 : 2000)) * MS, &conn);
	f.remote = remote;
	ret = xferk_submit_ex(x, &f, 1, xferk_now_ns() + t_scaled_ms(500) * MS,
			      &opts, &op);
	T_EXPECT(ret == 0, "submit: %d", ret);
	ret = xferk_wait(x, op, xferk_now_ns() + 2 * long_drain_ms() * MS,
			 XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED &&
		 s.first_error == -ETIMEDOUT && s.deadline_timeouts == 1 &&
		 s.cancel_requests == 1, "policy: %d %s err %d", ret,
		 xferk_state_name(s.state), s.first_error);
	xferk_release(x, op);
	opts.flags = 0;	/* a budget without the policy is invalid */
	T_EXPECT_ERR(xferk_submit_ex(x, &f, 1, XFERK_DEADLINE_NONE, &opts, &op), EINVAL);
	xferk_disconnect(x, conn);
}

/* At the quarantine limit new registrations fail with EDQUOT. */
static void quarantine_limit(const struct t_counters *base)
{
	const char *limit = "/sys/class/misc/xferk/quarantine_limit_bytes";
	uint8_t *b = t_map(1 << 16);
	uint64_t conn, exp, remote, m, op, m2;
	struct xferk_token tok;
	struct xferk_frag f;

	T_EXPECT(xferk_mr_reg(x, b, 1 << 16, XFERK_ACCESS_ALL, &m) == 0, "reg");
	T_EXPECT(xferk_connect_null(x, slow_ms() * MS, &conn) == 0 &&
		 xferk_export(x, conn, m, 0, 1 << 16, XFERK_ACCESS_REMOTE_WRITE,
			      &tok, &exp) == 0 &&
		 xferk_import(x, conn, &tok, &remote) == 0, "peer");
	f = (struct xferk_frag) { .mr = m, .len = 1 << 16, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT(xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0, "submit");
	T_EXPECT(t_write_file(limit, "4096") == 0, "set limit");
	T_EXPECT(xferk_unexport(x, exp) == 0 && xferk_mr_dereg(x, m) == 0, "dereg");
	T_EXPECT(t_stat("quarantined_pages") == base->quarantined_pages + 16,
		 "quarantined_pages %lld, was %lld", t_stat("quarantined_pages"),
		 base->quarantined_pages);
	T_EXPECT_ERR(xferk_mr_reg(x, b, 4096, XFERK_ACCESS_LOCAL_SRC, &m2), EDQUOT);
	T_EXPECT(xferk_wait(x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, NULL) == 0,
		 "wait");
	T_EXPECT(t_stat_wait("quarantined_pages", base->quarantined_pages,
			     t_scaled_ms(10000)) == base->quarantined_pages,
		 "quarantined_pages after: %lld", t_stat("quarantined_pages"));
	T_EXPECT(xferk_mr_reg(x, b, 4096, XFERK_ACCESS_LOCAL_SRC, &m2) == 0 &&
		 xferk_mr_dereg(x, m2) == 0, "reg after the quarantine emptied");
	T_EXPECT(t_write_file(limit, "0") == 0, "clear limit");
	xferk_release(x, op);
	xferk_disconnect(x, conn);
	munmap(b, 1 << 16);
}

/*
 * Over rxe: cancel 64 MiB while its first completion is held back
 * (t_submit_held()), so surely before the op could finish; queued chunks
 * never go out.
 */
static void cancel_rdma_posted(void)
{
	const uint64_t len = 64ULL << 20;
	const unsigned int hold_ms = t_debug_kernel() ? 5000 : 2000;
	uint64_t conn, src_mr, dst_mr, remote, op;
	uint8_t *src = t_map(len), *dst = t_map(len + 4096);
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	int ret;

	if (t_setup(x, src, len, dst, len + 4096, &conn, &src_mr, &dst_mr, &remote)) {
		T_EXPECT(0, "rdma setup");
		return;
	}
	f = (struct xferk_frag) { .mr = src_mr, .len = len, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT(t_submit_held(x, &f, 1, hold_ms, &op) == 0, "held op");
	/* Posted chunks complete on their own within half the budget. */
	ret = xferk_cancel_drain(x, op, xferk_now_ns() +
				 (t_debug_kernel() ? 60000 : 30000) * MS, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED && s.buffer_reusable &&
		 s.in_flight_bytes == 0 && s.transferred_bytes < len,
		 "rdma cancel: %d %s, %llu of %llu bytes", ret,
		 xferk_state_name(s.state), (unsigned long long)s.transferred_bytes,
		 (unsigned long long)len);
	T_EXPECT(t_fault_get("delay_completions") == 0, "delay knob not used");
	restore_faults();
	xferk_release(x, op);
	xferk_mr_dereg(x, src_mr);
	xferk_mr_dereg(x, dst_mr);
	munmap(src, len);
	munmap(dst, len + 4096);
}

int main(void)
{
	struct t_counters base;
	uint8_t *buf;
	uint64_t conn, fast;

	if (xferk_open(&x))
		return T_SKIP;
	saved_delay_ms = t_fault_get("delay_ms");
	atexit(restore_faults);
	t_settle(&base);
	/* The null peer's teardown ends its fragments after this. */
	if (t_param_scoped("flush_timeout_ms", 2000))
		return T_FAIL;
	buf = t_map(2 << 20);
	T_EXPECT(xferk_mr_reg(x, buf, 2 << 20, XFERK_ACCESS_ALL, &mr) == 0, "reg");
	fast = null_remote(0, &conn);
	cancel_queued_and_posted();
	cancel_finished_is_noop(fast);
	quarantine_then_drained();
	cancel_on_deadline_policy();
	quarantine_limit(&base);
	cancel_rdma_posted();
	xferk_close(x);
	T_EXPECT(t_stat_wait("pinned_pages", base.pinned_pages, t_scaled_ms(10000)) ==
		 base.pinned_pages, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), base.pinned_pages);
	return t_result();
}
