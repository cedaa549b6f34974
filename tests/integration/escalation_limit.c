// SPDX-License-Identifier: GPL-2.0
/*
 * A file's cancels kill a path at most once per escalation_interval_ms
 * (here 60 s). Each op's one completion is swallowed (fault knob), so its
 * work request stays posted until a path's teardown reclaims it:
 *
 * 1. The first cancel escalates: the path dies (stats/path_deaths_cancel),
 *    the session reconnects, and the op is DRAINED once the teardown
 *    reclaimed its work request (after flush_timeout_ms).
 * 2. The second cancel, within the interval, does not: no path dies,
 *    stats/escalations_limited counts it, and the op is QUARANTINED at its
 *    drain deadline with its pages pinned.
 * 3. With the interval at 0, cancelling that op again escalates: the path
 *    dies and the op becomes DRAINED.
 * 4. Two files on one new session (the interval 60 s again): the first
 *    file's cancel kills the path; the second file's, within the interval,
 *    does not, though that file never escalated: a session's path dies by
 *    cancel once per interval, whoever cancels (escalations_limited counts
 *    it, its op is QUARANTINED); with the interval at 0 it does.
 *
 * Regression (4): the limit was per open file only, so N files (or N
 * tenants) killed a shared path N times per interval.
 *
 * The knob is armed while no other op is live on the host (so this test's
 * ops take it). Each part starts on a new session, whose path no earlier
 * cancel (of this test or another) has killed.
 *
 * Each cancel drains for 200 ms. One that escalates kills the path at half
 * that budget at the earliest, and the path's teardown reclaims the work
 * request flush_timeout_ms after the kill: 2.5 s (4.5 s on the debug
 * kernel) after the drain deadline at the earliest, so the op is surely
 * QUARANTINED at that deadline.
 */
#include "test.h"

#define MS	1000000ULL
#define DRAIN_MS	200

/* The kill at DRAIN_MS / 2 plus this is 2.5 s (4.5 s) past the deadline. */
static long long flush_timeout_ms(void)
{
	return DRAIN_MS / 2 + (t_debug_kernel() ? 4500 : 2500);
}

static void restore(void)
{
	t_fault_clear();
	t_restore_params();
}

/* An op whose completion is swallowed: posted for good. */
static uint64_t stuck_op(struct t_loop *l)
{
	struct xferk_frag f = { .mr = l->src_mr, .len = 4096,
				.remote = l->remote, .opcode = XFERK_OP_WRITE };
	struct xferk_op_snapshot s = { .state = XFERK_STATE_COUNT };
	uint64_t op = 0;

	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_swallow(1) == 0, "fault");
	T_EXPECT(xferk_submit(l->x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0,
		 "submit");
	T_EXPECT(t_fault_taken("swallow_completions", t_scaled_ms(10000)) == 0 &&
		 xferk_query(l->x, op, &s) == 0 &&
		 s.state == XFERK_STATE_IN_PROGRESS,
		 "completion not swallowed: %s", xferk_state_name(s.state));
	return op;
}

/* Cancels @op with a DRAIN_MS drain, then waits until it is reusable. */
static void cancel_and_drain(struct t_loop *l, uint64_t op, bool expect_drain)
{
	struct xferk_op_snapshot s;
	int ret;

	ret = xferk_cancel_drain(l->x, op, xferk_now_ns() + DRAIN_MS * MS, &s);
	T_EXPECT_ERR(ret, ETIMEDOUT);
	T_EXPECT(s.state == XFERK_STATE_QUARANTINED && !s.buffer_reusable,
		 "after the drain deadline: %s", xferk_state_name(s.state));
	if (!expect_drain)
		return;
	ret = xferk_wait(l->x, op, xferk_now_ns() + t_scaled_ms(30000) * MS,
			 XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED && s.buffer_reusable,
		 "after the path's teardown: %d %s", ret,
		 xferk_state_name(s.state));
}

/* Until the connection has a path again. */
static void wait_up(struct t_loop *l)
{
	uint64_t until = t_now_ms() + t_scaled_ms(30000);
	struct xferk_conn_info i = { 0 };

	while (t_now_ms() < until &&
	       (xferk_conn_query(l->x, l->conn, &i) ||
		i.state != XFERK_CONN_STATE_UP))
		usleep(50000);
	T_EXPECT(i.state == XFERK_CONN_STATE_UP, "the session is %u", i.state);
}

/* 4: the second file's cancel finds the session's path killed already. */
static void two_files(void)
{
	long long deaths, limited;
	struct t_loop a, b;
	uint64_t opa, opb;

	/* A new session: its path was never killed by a cancel. */
	T_EXPECT(t_end_session() == 0, "could not end the session");
	T_EXPECT(t_param_scoped("flush_timeout_ms", flush_timeout_ms()) == 0,
		 "flush timeout");
	T_EXPECT(t_param_scoped("escalation_interval_ms", 60000) == 0,
		 "escalation_interval_ms: %s", strerror(errno));
	t_loop_open(&a, 1 << 20, 1 << 20);
	t_loop_open(&b, 1 << 20, 1 << 20);
	deaths = t_stat("path_deaths_cancel");
	limited = t_stat("escalations_limited");

	opa = stuck_op(&a);
	cancel_and_drain(&a, opa, true);
	T_EXPECT(t_stat("path_deaths_cancel") == deaths + 1,
		 "first file: path_deaths_cancel %lld, was %lld",
		 t_stat("path_deaths_cancel"), deaths);
	xferk_release(a.x, opa);
	wait_up(&b);

	opb = stuck_op(&b);
	cancel_and_drain(&b, opb, false);
	T_EXPECT(t_stat("path_deaths_cancel") == deaths + 1 &&
		 t_stat("escalations_limited") == limited + 1,
		 "second file: path_deaths_cancel %lld (was %lld), escalations_limited %lld (was %lld)",
		 t_stat("path_deaths_cancel"), deaths,
		 t_stat("escalations_limited"), limited);

	T_EXPECT(t_set_param("escalation_interval_ms", 0) == 0, "interval 0");
	cancel_and_drain(&b, opb, true);
	T_EXPECT(t_stat("path_deaths_cancel") == deaths + 2,
		 "second file, interval 0: path_deaths_cancel %lld, was %lld",
		 t_stat("path_deaths_cancel"), deaths);
	xferk_release(b.x, opb);
	xferk_close(a.x);
	xferk_close(b.x);
}

int main(void)
{
	long long deaths, limited;
	struct xferk_op_snapshot s;
	struct t_loop l;
	uint64_t op1, op2;

	atexit(restore);
	/*
	 * A new session: a cancel of an earlier test may have killed the
	 * shared session's path less than the interval ago, which would
	 * limit this test's first cancel.
	 */
	T_EXPECT(t_end_session() == 0, "could not end the session");
	t_loop_open(&l, 1 << 20, 1 << 20);
	T_EXPECT(t_param_scoped("flush_timeout_ms", flush_timeout_ms()) == 0,
		 "flush timeout");
	T_EXPECT(t_param_scoped("escalation_interval_ms", 60000) == 0,
		 "escalation_interval_ms: %s", strerror(errno));
	deaths = t_stat("path_deaths_cancel");
	limited = t_stat("escalations_limited");

	op1 = stuck_op(&l);
	cancel_and_drain(&l, op1, true);
	T_EXPECT(t_stat("path_deaths_cancel") == deaths + 1,
		 "first cancel: path_deaths_cancel %lld, was %lld",
		 t_stat("path_deaths_cancel"), deaths);
	xferk_release(l.x, op1);
	wait_up(&l);

	op2 = stuck_op(&l);
	cancel_and_drain(&l, op2, false);
	T_EXPECT(t_stat("path_deaths_cancel") == deaths + 1 &&
		 t_stat("escalations_limited") == limited + 1,
		 "second cancel: path_deaths_cancel %lld (was %lld), escalations_limited %lld (was %lld)",
		 t_stat("path_deaths_cancel"), deaths,
		 t_stat("escalations_limited"), limited);
	T_EXPECT(xferk_query(l.x, op2, &s) == 0 &&
		 s.state == XFERK_STATE_QUARANTINED && !s.physical_complete,
		 "the limited op: %s", xferk_state_name(s.state));

	T_EXPECT(t_set_param("escalation_interval_ms", 0) == 0, "interval 0");
	cancel_and_drain(&l, op2, true);
	T_EXPECT(t_stat("path_deaths_cancel") == deaths + 2,
		 "third cancel: path_deaths_cancel %lld, was %lld",
		 t_stat("path_deaths_cancel"), deaths);
	xferk_release(l.x, op2);
	xferk_close(l.x);
	two_files();
	restore();
	return t_result();
}
