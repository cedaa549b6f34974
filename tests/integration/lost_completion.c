// SPDX-License-Identifier: GPL-2.0
/*
 * A lost completion replaces the path at once, and the op whose work
 * request lost it ends (posted again on the next path) without anyone
 * cancelling it:
 *  1. by order: op A's completion is swallowed (fault knob), then op B is
 *     posted on the same session and completes; on an RC send queue that
 *     means A's completion is lost (or a keepalive probe after A tells);
 *  2. by age: A alone, no keepalive probes, lost_completion_ms 5 s (its
 *     least).
 * Either way stats/path_deaths_lost counts it, A succeeds with its data in
 * place, and its pages return within the documented bound (the detection,
 * flush_timeout_ms, 200 ms here, a reconnect), asserted here with room to
 * spare.
 *
 * Regression (issue 27, defect 9): such an op stayed QUARANTINED until
 * something unrelated killed the path; a cancel's escalation was rate
 * limited, so pages were held for tens of seconds.
 */
#include "test.h"

#define LEN	4096

static void restore(void)
{
	t_fault_clear();
	t_restore_params();
}

/* Submits a WRITE of @off; 0 or -errno. */
static int submit(struct t_loop *l, size_t off, uint64_t *op)
{
	struct xferk_frag f = { .mr = l->src_mr, .offset = off, .len = LEN,
				.remote = l->remote, .remote_offset = off,
				.opcode = XFERK_OP_WRITE };

	return xferk_submit(l->x, &f, 1, XFERK_DEADLINE_NONE, 0, op);
}

/* Op A's completion swallowed, B after it if @with_b; A must end. */
static void lost_case(struct t_loop *l, bool with_b, uint64_t seed)
{
	long long deaths = t_stat("path_deaths_lost");
	struct xferk_op_snapshot s = { .state = XFERK_STATE_COUNT };
	uint64_t a, b, bound = t_scaled_ms(30000);
	int ret;

	t_fill(l->src, 2 * LEN, seed);
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_fault_set("swallow_completions", 1) == 0, "fault knob");
	T_EXPECT(submit(l, 0, &a) == 0, "submit A");
	T_EXPECT(t_fault_taken("swallow_completions", t_scaled_ms(10000)) == 0,
		 "A's completion not swallowed");
	if (with_b) {
		T_EXPECT(submit(l, LEN, &b) == 0, "submit B");
		ret = xferk_wait(l->x, b, xferk_now_ns() + bound * 1000000ULL,
				 XFERK_WAIT_PHYSICAL, &s);
		T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED,
			 "B: %d %s", ret, xferk_state_name(s.state));
		xferk_release(l->x, b);
	}
	ret = xferk_wait(l->x, a, xferk_now_ns() + bound * 1000000ULL,
			 XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED,
		 "A did not end within %llu ms: %d %s",
		 (unsigned long long)bound, ret, xferk_state_name(s.state));
	xferk_release(l->x, a);
	T_EXPECT(t_check(l->dst, 2 * LEN, seed) < 0 || !with_b,
		 "A's and B's bytes at the target");
	T_EXPECT(t_check(l->dst, LEN, seed) < 0, "A's bytes at the target");
	T_EXPECT(t_stat("path_deaths_lost") > deaths,
		 "path_deaths_lost %lld, was %lld", t_stat("path_deaths_lost"),
		 deaths);
}

int main(void)
{
	struct t_loop l;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	if (t_param("lost_completion_ms") < 0)
		return T_FAIL;
	atexit(restore);
	/*
	 * Each case waits out a flush of the swallowed work request: the
	 * teardown's drain has handled every completion the device made, so
	 * the wait is for that one alone, which never comes.
	 */
	T_EXPECT(t_param_scoped("flush_timeout_ms", 200) == 0, "flush timeout");
	t_loop_open(&l, 2 * LEN, 2 * LEN);

	lost_case(&l, true, 1);

	/* By age: nothing else on the QP, no probe. */
	T_EXPECT(t_param_scoped("keepalive_ms", 0) == 0 &&
		 t_param_scoped("lost_completion_ms", 5000) == 0, "params");
	lost_case(&l, false, 2);

	xferk_close(l.x);
	return t_result();
}
