// SPDX-License-Identifier: GPL-2.0
/*
 * An earlier drain deadline folded into a background drain that waits for
 * its own: the op is QUARANTINED at the earlier deadline, not at once.
 *
 * An op whose one completion is swallowed times out (at D) with the
 * cancel-on-deadline policy and a drain budget of 8 s. Its background
 * drain kills the op's path half way (stats path_deaths_cancel) and then
 * waits for its deadline, D + 8 s. Its file is closed then: the exit
 * drain (exit_drain_ms 1.5 s) folds in a deadline about 2.5 s before
 * that one. quarantine_events must not rise within half a second of the
 * close, and must rise by one after that but at least a second before
 * D + 8 s: at the folded deadline, not the op's own. flush_timeout_ms
 * (4 s) keeps the dead path's QP, and with it the op in flight, until
 * D + 8 s or later: 2.5 s beyond the folded deadline of a close right
 * after the path's death, and still over 1 s beyond it for a close up to
 * 1.5 s later (one later than that fails the check against D + 8 s
 * anyway); then pages and ops_live come back. The debug kernel doubles
 * every time.
 *
 * Regression: the fold ran the waiting step at once, so the op was
 * QUARANTINED the moment its file closed, seconds before its deadline.
 */
#include <unistd.h>

#include "test.h"

#define MS	1000000ULL

static void restore(void)
{
	t_fault_clear();
	t_restore_params();
}

int main(void)
{
	const unsigned int k = t_debug_kernel() ? 2 : 1;
	struct xferk_submit_opts o = {
		.flags = XFERK_SUBMIT_CANCEL_ON_DEADLINE,
		.drain_budget_ns = 8000ULL * k * MS,
	};
	long long deaths, quarantines;
	uint64_t own_deadline_ms;
	struct t_counters base;
	struct xferk_frag f;
	struct t_loop l;
	uint64_t op;
	int ret;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	atexit(restore);
	t_settle(&base);
	t_loop_open(&l, 1 << 20, 1 << 20);
	if (t_param_scoped("flush_timeout_ms", 4000 * k) ||
	    t_param_scoped("exit_drain_ms", 1500 * k) ||
	    t_param_scoped("escalation_interval_ms", 0) || t_quiet() ||
	    t_swallow(1)) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return T_FAIL;
	}
	deaths = t_stat("path_deaths_cancel");
	quarantines = t_stat("quarantine_events");
	f = (struct xferk_frag) { .mr = l.src_mr, .len = 4096,
				  .remote = l.remote, .opcode = XFERK_OP_WRITE };
	own_deadline_ms = t_now_ms() + 200 + 8000 * k;
	ret = xferk_submit_ex(l.x, &f, 1, xferk_now_ns() + 200 * MS, &o, &op);
	T_EXPECT(ret == 0, "submit: %s", strerror(-ret));
	T_EXPECT(t_fault_taken("swallow_completions", t_scaled_ms(10000)) == 0,
		 "completion not swallowed");
	/* Half way through the budget the drain kills the path, then waits. */
	T_EXPECT(t_stat_wait("path_deaths_cancel", deaths + 1,
			     t_scaled_ms(10000) * k) == deaths + 1,
		 "the drain killed no path: path_deaths_cancel %lld, was %lld",
		 t_stat("path_deaths_cancel"), deaths);
	if (t_failures)
		return T_FAIL;

	xferk_close(l.x);
	usleep(500000 * k);
	T_EXPECT(t_stat("quarantine_events") == quarantines,
		 "QUARANTINED %u ms after the close, before the exit drain's deadline",
		 500 * k);
	T_EXPECT(t_stat_wait("quarantine_events", quarantines + 1,
			     t_scaled_ms(10000) * k) == quarantines + 1,
		 "not QUARANTINED at the exit drain's deadline: quarantine_events %lld, was %lld",
		 t_stat("quarantine_events"), quarantines);
	/* The folded deadline's doing, not the op's own deadline's. */
	T_EXPECT(t_now_ms() + 1000 * k < own_deadline_ms,
		 "QUARANTINED only %lld ms before the op's own drain deadline",
		 (long long)own_deadline_ms - (long long)t_now_ms());

	/* The QP goes after flush_timeout_ms: the op is physically complete. */
	T_EXPECT(t_stat_wait("pinned_pages", base.pinned_pages,
			     t_scaled_ms(30000) * k) == base.pinned_pages,
		 "pinned_pages %lld, was %lld", t_stat("pinned_pages"),
		 base.pinned_pages);
	T_EXPECT(t_stat_wait("ops_live", base.ops_live, t_scaled_ms(10000)) ==
		 base.ops_live, "ops_live %lld, was %lld", t_stat("ops_live"),
		 base.ops_live);
	restore();
	return t_result();
}
