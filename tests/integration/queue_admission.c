// SPDX-License-Identifier: GPL-2.0
/*
 * The admission queue's control plane, on the null peer (no RDMA behaviour
 * is claimed here). With qp_window 1, one op holds the connection's window
 * while the rest of the test runs: its one chunk's completion is held back
 * by the fault knobs delay_completions/delay_ms (a null peer with no delay
 * of its own; no other op is live on the host, so the knob is this op's),
 * and the test checks that it was still in flight at the end.
 *  - a queued op is SUBMITTED, never IN_PROGRESS; cancelling it drops it
 *    without posting (DRAINED, nothing dispatched);
 *  - a submit beyond a hard limit (queued ops, queued bytes, the file's ops
 *    and bytes) fails with EBUSY, counted by reason, and publishes nothing;
 *  - an op whose deadline passes while queued is TIMED_OUT and leaves the
 *    queue without being posted;
 *  - bad priorities and bad tunables are EINVAL and change nothing; an op
 *    whose fragments use two devices (null peer and rxe) is EXDEV;
 *  - with queue_bypass the queue is not used.
 */
#include <sys/ioctl.h>
#include <unistd.h>

#include "test.h"

#define MS	1000000ULL
#define Q	"/sys/class/misc/xferk/queue/"
#define BYPASS	"/sys/module/xferk/parameters/queue_bypass"

static long long saved_delay_ms = -1;

static void restore_faults(void)
{
	t_fault_clear();
	if (saved_delay_ms >= 0)
		t_fault_set("delay_ms", saved_delay_ms);
}

static int q_set(const char *name, long long v)
{
	char path[128], val[32];

	snprintf(path, sizeof(path), Q "%s", name);
	snprintf(val, sizeof(val), "%lld", v);
	return t_write_file(path, val);
}

static int submit(struct xferk *x, struct xferk_frag *f, uint32_t n,
		  uint32_t prio, uint64_t deadline, uint64_t *op)
{
	struct xferk_ioc_submit s = {
		.size = sizeof(s), .frags = (uintptr_t)f, .nr_frags = n,
		.frag_size = sizeof(*f), .deadline_ns = deadline,
		.priority = prio,
	};
	int ret = ioctl(xferk_fd(x), XFERK_IOC_SUBMIT, &s);

	*op = s.op;
	return ret ? -errno : 0;
}

static uint32_t state_of(struct xferk *x, uint64_t op)
{
	struct xferk_op_snapshot s;

	return xferk_query(x, op, &s) ? 99 : s.state;
}

int main(void)
{
	/* How long the slow op holds the window: far longer than the checks. */
	const unsigned int hold_ms = t_debug_kernel() ? 8000 : 3000;
	const unsigned int bound_ms = hold_ms + t_scaled_ms(30000);
	long long submitted, rejects, dispatched, cancelled;
	long long qp_window, max_ops, max_bytes, file_ops, bytes_min, bytes_max;
	uint64_t conn, mr, emr, exp, remote, slow, op[8], extra, rconn, rremote;
	struct xferk_token tok;
	struct xferk_op_snapshot s;
	struct xferk_frag f[16];
	struct xferk *x;
	uint8_t *buf;
	int i, ret;

	if (xferk_open(&x))
		return T_SKIP;
	if (!(xferk_features(x) & XFERK_FEAT_QUEUE) || t_queue_stat("qp_window") < 0)
		return T_FAIL;
	saved_delay_ms = t_fault_get("delay_ms");
	if (saved_delay_ms < 0) {
		fprintf(stderr, "no fault knob delay_ms\n");
		return T_FAIL;
	}
	atexit(restore_faults);
	buf = t_map(1 << 20);
	/* Chunks complete at once, unless a fault knob holds one back. */
	if (xferk_connect_null(x, 0, &conn) ||
	    xferk_mr_reg(x, buf, 1 << 19, XFERK_ACCESS_ALL, &mr) ||
	    xferk_mr_reg(x, buf + (1 << 19), 1 << 19, XFERK_ACCESS_ALL, &emr) ||
	    xferk_export(x, conn, emr, 0, 1 << 19, XFERK_ACCESS_REMOTE_READ |
			 XFERK_ACCESS_REMOTE_WRITE, &tok, &exp) ||
	    xferk_import(x, conn, &tok, &remote))
		return T_FAIL;
	for (i = 0; i < 16; i++)
		f[i] = (struct xferk_frag) { .mr = mr, .offset = i * 4096,
					     .len = 4096, .remote = remote,
					     .remote_offset = i * 4096,
					     .opcode = XFERK_OP_WRITE };
	qp_window = t_queue_stat("qp_window");
	max_ops = t_queue_stat("max_queued_ops");
	max_bytes = t_queue_stat("max_queued_bytes");
	file_ops = t_queue_stat("file_max_ops");
	T_EXPECT(q_set("qp_window", 1) == 0 && q_set("max_queued_ops", 3) == 0 &&
		 q_set("max_queued_bytes", 12 * 4096) == 0, "tunables");

	/*
	 * One op occupies the QP window; the next ones wait in the queue. Its
	 * chunk's completion sleeps hold_ms in the completion worker, the
	 * chunk still posted. No other op is live, so the knob is its own.
	 */
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_fault_set("delay_ms", hold_ms) == 0 &&
		 t_fault_set("delay_completions", 1) == 0, "delay knobs");
	T_EXPECT(submit(x, f, 1, XFERK_PRIO_BULK, XFERK_DEADLINE_NONE, &slow) == 0,
		 "slow op");
	T_EXPECT(t_fault_taken("delay_completions", t_scaled_ms(10000)) == 0 &&
		 state_of(x, slow) == XFERK_STATE_IN_PROGRESS,
		 "slow op not held in flight: %s",
		 xferk_state_name(state_of(x, slow)));
	dispatched = t_queue_stat("dispatched");
	for (i = 0; i < 3; i++)
		T_EXPECT(submit(x, &f[1 + i], 1, XFERK_PRIO_NORMAL,
				XFERK_DEADLINE_NONE, &op[i]) == 0, "queued op %d", i);
	T_EXPECT(state_of(x, op[0]) == XFERK_STATE_SUBMITTED,
		 "queued op is %s", xferk_state_name(state_of(x, op[0])));
	T_EXPECT(t_queue_stat("depth_normal") == 3, "depth_normal %lld",
		 t_queue_stat("depth_normal"));
	T_EXPECT(t_file_has("/sys/kernel/debug/xferk/queue", "queued"),
		 "debugfs queue lists the queued ops");

	/* Full: refused whole, counted, nothing published. */
	submitted = t_stat("ops_submitted");
	rejects = t_queue_stat("rejects_queued_ops");
	T_EXPECT_ERR(submit(x, &f[4], 1, XFERK_PRIO_CRITICAL,
			    XFERK_DEADLINE_NONE, &extra), EBUSY);
	T_EXPECT(t_queue_stat("rejects_queued_ops") == rejects + 1, "rejects_queued_ops");
	T_EXPECT(t_stat("ops_submitted") == submitted, "a refused op was published");

	/* Cancel of a queued op: DRAINED without touching the device. */
	cancelled = t_queue_stat("cancelled");
	ret = xferk_cancel_drain(x, op[2], xferk_now_ns() + 1000 * MS, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED && s.buffer_reusable &&
		 s.transferred_bytes == 0, "cancel: %d %s", ret,
		 xferk_state_name(s.state));
	T_EXPECT(t_queue_stat("cancelled") == cancelled + 1, "cancelled counter");
	T_EXPECT(t_queue_stat("depth_normal") == 2, "depth after cancel");
	xferk_release(x, op[2]);

	/* Bytes: 11 fragments would exceed 12 pages queued: all or nothing. */
	rejects = t_queue_stat("rejects_queued_bytes");
	T_EXPECT_ERR(submit(x, &f[4], 11, XFERK_PRIO_NORMAL,
			    XFERK_DEADLINE_NONE, &extra), EBUSY);
	T_EXPECT(t_queue_stat("rejects_queued_bytes") == rejects + 1, "rejects_queued_bytes");

	/* The file's own limits. */
	T_EXPECT(q_set("max_queued_ops", 100) == 0 && q_set("file_max_ops", 3) == 0,
		 "file_max_ops");
	rejects = t_queue_stat("rejects_file_ops");
	T_EXPECT_ERR(submit(x, &f[4], 1, XFERK_PRIO_NORMAL,
			    XFERK_DEADLINE_NONE, &extra), EBUSY);
	T_EXPECT(t_queue_stat("rejects_file_ops") == rejects + 1, "rejects_file_ops");
	T_EXPECT(q_set("file_max_ops", file_ops) == 0, "file_max_ops");

	/* A deadline that passes in the queue: TIMED_OUT, never posted. */
	T_EXPECT(submit(x, &f[5], 1, XFERK_PRIO_BULK, xferk_now_ns() +
			t_scaled_ms(500) * MS, &op[3]) == 0, "short deadline");
	ret = xferk_wait(x, op[3], xferk_now_ns() + (uint64_t)bound_ms * MS,
			 XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_TIMED_OUT &&
		 s.transferred_bytes == 0 && s.buffer_reusable,
		 "queued past its deadline: %d %s", ret, xferk_state_name(s.state));
	xferk_release(x, op[3]);
	/* Everything above ran while the slow op held the window. */
	T_EXPECT(state_of(x, slow) == XFERK_STATE_IN_PROGRESS,
		 "slow op finished early (%s): the checks above ran with the window free",
		 xferk_state_name(state_of(x, slow)));
	t_release_held();

	/* The rest completes in order; only 3 ops ever reached the device. */
	for (i = 0; i < 2; i++) {
		ret = xferk_wait(x, op[i], xferk_now_ns() + (uint64_t)bound_ms * MS,
				 XFERK_WAIT_PHYSICAL, &s);
		T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED, "op %d: %s",
			 i, xferk_state_name(s.state));
		xferk_release(x, op[i]);
	}
	T_EXPECT(xferk_wait(x, slow, xferk_now_ns() + (uint64_t)bound_ms * MS, 0,
			    &s) == 0 &&
		 s.state == XFERK_STATE_SUCCEEDED, "slow op");
	xferk_release(x, slow);
	T_EXPECT(t_queue_stat("dispatched") - dispatched == 2, "dispatched %lld",
		 t_queue_stat("dispatched") - dispatched);
	T_EXPECT(t_fault_get("delay_completions") == 0, "delay knob left armed");
	restore_faults();

	/* Bad input changes nothing. */
	bytes_min = t_queue_stat("qp_window_bytes_min");
	bytes_max = t_queue_stat("qp_window_bytes_max");
	T_EXPECT_ERR(submit(x, f, 1, XFERK_PRIO_COUNT, XFERK_DEADLINE_NONE,
			    &extra), EINVAL);
	T_EXPECT(q_set("qp_window", 0) && q_set("qp_window", 129) &&
		 q_set("weight_bulk", 0) && q_set("aging_ms", 0) &&
		 t_write_file(Q "quantum_bytes", "lots") &&
		 q_set("internal_reserved_wrs", 128) &&
		 q_set("qp_window_bytes_max", 4095) &&
		 q_set("qp_window_bytes_min", (1LL << 40) + 1), "bad tunables accepted");
	T_EXPECT(t_queue_stat("qp_window") == 1 && t_queue_stat("internal_reserved_wrs") == 4 &&
		 t_queue_stat("qp_window_bytes_min") == bytes_min &&
		 t_queue_stat("qp_window_bytes_max") == bytes_max,
		 "a refused write changed a tunable");
	T_EXPECT(submit(x, f, 1, XFERK_PRIO_INTERNAL, XFERK_DEADLINE_NONE,
			&extra) == 0, "internal class (CAP_SYS_ADMIN)");
	T_EXPECT(xferk_wait(x, extra, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL,
			    &s) == 0 && s.state == XFERK_STATE_SUCCEEDED, "internal op");
	xferk_release(x, extra);

	/* One op is one queue item: its fragments must share a device. */
	T_EXPECT(xferk_connect(x, t_peer(), 0, t_connect_ms(), &rconn) == 0 &&
		 xferk_export(x, rconn, emr, 0, 1 << 19, XFERK_ACCESS_REMOTE_WRITE,
			      &tok, &exp) == 0 &&
		 xferk_import(x, rconn, &tok, &rremote) == 0, "rxe peer");
	f[1].remote = rremote;
	submitted = t_stat("ops_submitted");
	T_EXPECT_ERR(submit(x, f, 2, XFERK_PRIO_NORMAL, XFERK_DEADLINE_NONE,
			    &extra), EXDEV);
	T_EXPECT(t_stat("ops_submitted") == submitted, "EXDEV published an op");
	f[1].remote = remote;

	/* Bypass: straight to the connection. */
	submitted = t_queue_stat("enqueued");
	T_EXPECT(t_write_file(BYPASS, "1") == 0, "bypass on");
	T_EXPECT(t_run(x, f, 1, &s) == XFERK_STATE_SUCCEEDED, "bypassed op");
	T_EXPECT(t_queue_stat("enqueued") == submitted, "bypass used the queue");
	T_EXPECT(t_write_file(BYPASS, "0") == 0, "bypass off");

	T_EXPECT(q_set("qp_window", qp_window) == 0 &&
		 q_set("max_queued_ops", max_ops) == 0 &&
		 q_set("max_queued_bytes", max_bytes) == 0, "restore");
	T_EXPECT(t_queue_stat("depth_normal") == 0 && t_queue_stat("depth_bulk") == 0 &&
		 t_queue_stat("inflight_chunks") == 0, "queue not empty");
	xferk_close(x);
	return t_result();
}
