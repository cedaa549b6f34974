// SPDX-License-Identifier: GPL-2.0
/*
 * An export whose fast registration is held up just before it takes the
 * posting lock (fault delay_registrations, delay_ms 4 s, 12 s on the debug
 * kernel), while its session's path dies (fault qp_error, on the post of a
 * WRITE from a second file: the export holds its own file's lock) and is
 * replaced. Before the export goes on, the completion of another WRITE is
 * held in the session's CQ work (fault delay_completions) until 1.5 s after
 * the export wakes, and with it every completion behind it: the export's
 * own registration's too. The export must wait for that completion (well
 * within its own 5 s bound, so no path is killed for it): EXPORT returns
 * 0 once the CQ work goes on, the session made no new path meanwhile, and
 * a WRITE through its token lands. Both WRITEs succeed.
 *
 * Regression: the registration reset its completion before it waited for
 * the posting lock, and the dead path's teardown completed it; on the new
 * path the export posted its registration, found the completion done and
 * returned ENOTCONN at once with the session up, and deregistered the MR
 * and unmapped its pages with the registration work request still queued.
 */
#include <pthread.h>
#include <unistd.h>

#include "test.h"

#define LEN	(1 << 20)
#define EXP_LEN	(64 * 1024)
#define MS	1000000ULL

static struct t_loop l, l2;
static struct xferk_token tok;
static uint64_t exp_handle;
static int export_ret = 1;
static long long delay_saved = -1;

/* Sets export_ret (1 until then) to the EXPORT's result. */
static void *export_thread(void *arg)
{
	int ret = xferk_export(l.x, l.conn, l.dst_mr, 0, EXP_LEN,
			       XFERK_ACCESS_REMOTE_WRITE, &tok, &exp_handle);

	(void)arg;
	__atomic_store_n(&export_ret, ret, __ATOMIC_SEQ_CST);
	return NULL;
}

/* The session's path was replaced (both loopback ends reconnect). */
static bool reconnected(long long before)
{
	uint64_t until = t_now_ms() + t_scaled_ms(10000);

	while (t_stat("reconnects") <= before && t_now_ms() < until)
		usleep(50000);
	return t_stat("reconnects") > before;
}

static void restore(void)
{
	t_fault_clear();
	if (delay_saved >= 0)
		t_fault_set("delay_ms", delay_saved);
}

int main(void)
{
	const unsigned int hold_ms = t_debug_kernel() ? 12000 : 4000;
	long long reconnects, replaced;
	uint64_t woken_ms, now;
	struct xferk_op_snapshot s;
	struct xferk_conn_info info;
	uint64_t remote, op2;
	struct xferk_frag f;
	pthread_t t;
	int ret;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	delay_saved = t_fault_get("delay_ms");
	atexit(restore);
	t_loop_open(&l, LEN, LEN);
	/* The same session: the loopback peer's, shared by both files. */
	t_loop_open(&l2, LEN, LEN);
	reconnects = t_stat("reconnects");
	if (t_param_scoped("flush_timeout_ms", 1000) || t_quiet() ||
	    t_fault_set("delay_ms", hold_ms) ||
	    t_fault_set("delay_registrations", 1) ||
	    pthread_create(&t, NULL, export_thread, NULL)) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return T_FAIL;
	}
	T_EXPECT(t_fault_taken("delay_registrations", t_scaled_ms(10000)) == 0,
		 "the export's registration was not held");
	/* It sleeps from before now: it is awake by then. */
	woken_ms = t_now_ms() + hold_ms;

	/* Its post moves the QP to the error state: the path is replaced. */
	T_EXPECT(t_fault_set("qp_error", 1) == 0, "qp_error");
	t_fill(l2.src, EXP_LEN, 1);
	f = (struct xferk_frag) { .mr = l2.src_mr, .len = EXP_LEN,
				  .remote = l2.remote, .opcode = XFERK_OP_WRITE };
	ret = t_run(l2.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(l2.dst, EXP_LEN, 1) < 0,
		 "the WRITE across the path's death: %d (%s)", ret,
		 ret < 0 ? strerror(-ret) : xferk_state_name(ret));
	T_EXPECT(t_fault_get("qp_error") == 0, "qp_error not used");
	T_EXPECT(reconnected(reconnects), "the path was not replaced");
	/* Not through l's file: the export holds its lock. */
	T_EXPECT(xferk_conn_query(l2.x, l2.conn, &info) == 0 &&
		 info.state == XFERK_CONN_STATE_UP, "session state %u",
		 info.state);

	replaced = t_stat("reconnects");

	/* The CQ work sleeps in this WRITE's completion till 1.5 s after. */
	now = t_now_ms();
	T_EXPECT(now + 500 < woken_ms, "the path took too long to come back");
	T_EXPECT(t_fault_set("delay_ms", woken_ms - now + 1500) == 0 &&
		 t_fault_set("delay_completions", 1) == 0, "delay knobs");
	t_fill(l2.src, EXP_LEN, 2);
	ret = xferk_submit(l2.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op2);
	T_EXPECT(ret == 0, "second WRITE: %s", strerror(-ret));
	T_EXPECT(t_fault_taken("delay_completions", t_scaled_ms(10000)) == 0,
		 "no completion was held");
	ret = __atomic_load_n(&export_ret, __ATOMIC_SEQ_CST);
	T_EXPECT(ret == 1,
		 "the export returned (%d) before the CQ work was held: raise delay_ms",
		 ret);

	/* The export goes on over the new path, and waits for its own. */
	pthread_join(t, NULL);
	T_EXPECT(export_ret == 0, "EXPORT after the path was replaced: %s",
		 strerror(-export_ret));
	T_EXPECT(t_stat("reconnects") == replaced,
		 "the session made a new path while the export waited");
	ret = xferk_wait(l2.x, op2, xferk_now_ns() + t_scaled_ms(30000) * MS,
			 XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED &&
		 t_check(l2.dst, EXP_LEN, 2) < 0, "second WRITE: %d %s", ret,
		 xferk_state_name(s.state));
	xferk_release(l2.x, op2);
	if (!export_ret) {
		ret = xferk_import(l.x, l.conn, &tok, &remote);
		T_EXPECT(ret == 0, "import: %s", strerror(-ret));
		t_fill(l.src, EXP_LEN, 3);
		f = (struct xferk_frag) { .mr = l.src_mr, .len = EXP_LEN,
					  .remote = remote,
					  .opcode = XFERK_OP_WRITE };
		ret = ret ? ret : t_run(l.x, &f, 1, &s);
		T_EXPECT(ret == XFERK_STATE_SUCCEEDED &&
			 t_check(l.dst, EXP_LEN, 3) < 0,
			 "WRITE through the export: %d (%s)", ret,
			 ret < 0 ? strerror(-ret) : xferk_state_name(ret));
		xferk_unexport(l.x, exp_handle);
	}
	xferk_close(l.x);
	xferk_close(l2.x);
	restore();
	return t_result();
}
