// SPDX-License-Identifier: GPL-2.0
/*
 * A session that waits for its next path does not stall its device's
 * other sessions: two sessions on rxe0 (to 10.99.0.2 and to the test
 * peer), all ops in one class. On loopback a CONNECT to the test peer may
 * find the accepting end of a session to 10.99.0.2 (its peer is this
 * host): the host's sessions to the test peer are ended first, B connects
 * before A, and B must be an initiating end, so A and B are two sessions.
 *
 * Session A's path dies under its first op (fault qp_error) and every new
 * path is refused (fault connect_version): A reconnects for as long as the
 * test wants. Then A gets NR_STUCK more ops without a deadline, and B one
 * op with a deadline, queued behind all of A's. With dev_window_bytes as
 * small as one op, B's op must succeed within its deadline:
 *  - A's chunks that wait for its next path are parked: they leave the
 *    device window (queue/parked_bytes shows them), which they filled
 *    (before, B waited until A's session came back or gave up);
 *  - A's items beyond its QP window wait on its QP, not in the class
 *    list, so the scheduler's lookahead (32 items) still reaches B's (it
 *    gave up before it).
 * Then A's paths are let through: A's session comes back, its parked
 * chunks are posted again and every one of its ops succeeds with its
 * bytes in place, and nothing stays parked.
 */
#include "test.h"

#define ADDR_A		"10.99.0.2"
#define OP_LEN		16384
#define NR_STUCK	40	/* more than the lookahead of 32 */
#define RW		(XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE)
#define QUEUE		"/sys/class/misc/xferk/queue/"
#define FAULT_VERSION	"/sys/kernel/debug/xferk/fault/connect_version"

static long long saved_dev_window = -1;

static void restore(void)
{
	char v[32];

	t_fault_clear();
	t_write_file(FAULT_VERSION, "0");
	if (saved_dev_window >= 0) {
		snprintf(v, sizeof(v), "%lld", saved_dev_window);
		t_write_file(QUEUE "dev_window_bytes", v);
	}
}

/* A connection to @addr with an import of all of @dst_mr; 0 or an error. */
static int session(struct xferk *x, const char *addr, uint64_t dst_mr,
		   uint64_t *conn, uint64_t *remote)
{
	struct xferk_token tok;
	uint64_t exp;
	int ret;

	ret = xferk_connect(x, addr, 0, t_connect_ms(), conn);
	if (!ret)
		ret = xferk_export(x, *conn, dst_mr, 0, (NR_STUCK + 1) * OP_LEN,
				   RW, &tok, &exp);
	if (!ret)
		ret = xferk_import(x, *conn, &tok, remote);
	return ret;
}

static int conn_state(struct xferk *x, uint64_t conn)
{
	struct xferk_conn_info info;

	return xferk_conn_query(x, conn, &info) ? -1 : (int)info.state;
}

/* Waits (at most @ms) for @conn to be in @state; 0 or -1. */
static int wait_state(struct xferk *x, uint64_t conn, int state,
		      unsigned int ms)
{
	uint64_t until = t_now_ms() + ms;

	while (conn_state(x, conn) != state) {
		if (t_now_ms() > until)
			return -1;
		usleep(20000);
	}
	return 0;
}

static int submit(struct xferk *x, uint64_t src_mr, uint64_t remote,
		  unsigned int i, uint64_t deadline, uint64_t *op)
{
	struct xferk_frag f = {
		.mr = src_mr, .offset = (uint64_t)i * OP_LEN, .len = OP_LEN,
		.remote = remote, .remote_offset = (uint64_t)i * OP_LEN,
		.opcode = XFERK_OP_WRITE,
	};

	return xferk_submit(x, &f, 1, deadline, 0, op);
}

int main(void)
{
	const size_t len = (NR_STUCK + 1) * OP_LEN;
	uint64_t conn_a, conn_b, remote_a, remote_b, src_mr, dst_a_mr, dst_b_mr;
	uint64_t ops[NR_STUCK + 1], op_b, deadline;
	uint8_t *src = t_map(len), *dst_a = t_map(len), *dst_b = t_map(len);
	long long reposted = t_stat("chunks_reposted");
	struct xferk_conn_info info;
	struct xferk_op_snapshot s;
	struct xferk *x;
	unsigned int i, ok = 0;
	int ret;

	atexit(restore);
	if (xferk_open(&x))
		return T_SKIP;
	T_EXPECT(t_end_session() == 0, "the sessions to the peer did not end");
	T_EXPECT(t_param_scoped("reconnect_ms", 120000) == 0, "reconnect_ms: %s",
		 strerror(errno));
	ret = xferk_mr_reg(x, src, len, XFERK_ACCESS_LOCAL_SRC, &src_mr);
	if (!ret)
		ret = xferk_mr_reg(x, dst_a, len, RW, &dst_a_mr);
	if (!ret)
		ret = xferk_mr_reg(x, dst_b, len, RW, &dst_b_mr);
	if (!ret)
		ret = session(x, t_peer(), dst_b_mr, &conn_b, &remote_b);
	if (!ret)
		ret = xferk_conn_query(x, conn_b, &info);
	if (!ret)
		ret = session(x, ADDR_A, dst_a_mr, &conn_a, &remote_a);
	T_EXPECT(ret == 0, "setup: %s", strerror(-ret));
	if (ret)
		return t_result();
	T_EXPECT(info.initiator == 1, "B is an accepting end: maybe A's");
	t_fill(src, len, 7);

	saved_dev_window = t_queue_stat("dev_window_bytes");
	T_EXPECT(t_write_file(QUEUE "dev_window_bytes", "16384") == 0,
		 "dev_window_bytes: %s", strerror(errno));

	/* A's path dies under its first op; its new paths are refused. */
	T_EXPECT(t_fault_set("connect_version", 1) == 0, "connect_version");
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_fault_set("qp_error", 1) == 0, "qp_error: %s", strerror(errno));
	T_EXPECT(submit(x, src_mr, remote_a, 0, XFERK_DEADLINE_NONE, &ops[0]) == 0,
		 "submit A 0");
	T_EXPECT(t_fault_taken("qp_error", t_scaled_ms(5000)) == 0,
		 "A's post did not take the knob");
	T_EXPECT(t_stat_wait("chunks_reposted", reposted + 1,
			     t_scaled_ms(10000)) > reposted,
		 "A's flushed work request was not queued again");
	T_EXPECT(wait_state(x, conn_a, XFERK_CONN_STATE_RECONNECTING,
			    t_scaled_ms(5000)) == 0,
		 "A is not reconnecting: state %d", conn_state(x, conn_a));
	T_EXPECT(conn_state(x, conn_b) == XFERK_CONN_STATE_UP,
		 "B is not up: %d", conn_state(x, conn_b));

	for (i = 1; i <= NR_STUCK; i++)
		T_EXPECT(submit(x, src_mr, remote_a, i, XFERK_DEADLINE_NONE,
				&ops[i]) == 0, "submit A %u", i);
	T_EXPECT(t_queue_stat("parked_bytes") >= OP_LEN,
		 "nothing parked: %lld", t_queue_stat("parked_bytes"));

	/* B, behind all of A's ops, goes while A waits for a path. */
	deadline = xferk_now_ns() + t_scaled_ms(5000) * 1000000ULL;
	T_EXPECT(submit(x, src_mr, remote_b, 0, deadline, &op_b) == 0, "submit B");
	ret = xferk_wait(x, op_b, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED &&
		 t_check(dst_b, OP_LEN, 7) < 0,
		 "B's op behind a reconnecting session: %d %s (first_error %d)",
		 ret, xferk_state_name(s.state), s.first_error);
	xferk_release(x, op_b);
	T_EXPECT(conn_state(x, conn_a) == XFERK_CONN_STATE_RECONNECTING,
		 "A came back too early: %d", conn_state(x, conn_a));

	/* A comes back: everything it had queued or parked arrives. */
	t_fault_set("connect_version", 0);
	for (i = 0; i <= NR_STUCK; i++) {
		ret = xferk_wait(x, ops[i], xferk_now_ns() +
				 t_scaled_ms(60000) * 1000000ULL,
				 XFERK_WAIT_PHYSICAL, &s);
		ok += ret == 0 && s.state == XFERK_STATE_SUCCEEDED;
		xferk_release(x, ops[i]);
	}
	T_EXPECT(ok == NR_STUCK + 1, "%u of A's %u ops succeeded", ok,
		 NR_STUCK + 1);
	T_EXPECT(memcmp(src, dst_a, len) == 0, "A's bytes are not in place");
	T_EXPECT(t_queue_stat("parked_bytes") == 0, "still parked: %lld",
		 t_queue_stat("parked_bytes"));
	xferk_close(x);
	return t_result();
}
