// SPDX-License-Identifier: GPL-2.0
/*
 * A path whose QP left the ready-to-send state is dead at once, and the
 * session replaces it: the fault knob qp_error moves the QP to the error
 * state right before a post, as a peer's access error does to its QP.
 *
 * 1. reconnect_ms on (the default): the flushed work request was not at
 *    fault; it is posted again on the session's next path and the op
 *    SUCCEEDS with its data in place. The session keeps its handles: the
 *    same connection, export and import carry a second transfer. The
 *    counters show a QP path death, a reconnect and a re-posted chunk
 *    (sysfs), and CONN_QUERY on the connection handle the path's death,
 *    the reconnect and the next path generation (the work requests were
 *    posted by the loopback's other end, which imported the token).
 * 2. A flushed work request queued for the next path, whose op is
 *    cancelled before that path comes (the fault knob connect_version
 *    makes every attempt fail): the op is DRAINED with nothing in flight
 *    (its bytes were counted out once); then the session reconnects.
 * 3. reconnect_ms 0: a path's death ends the session. The op fails with
 *    ECONNRESET and failure PATH (the path died; not its own fault), the
 *    connection is down at once (never "up" with a dead QP; CONN_QUERY says
 *    DOWN, ECONNRESET), and the next CONNECT gets a new connection on which
 *    a new export, import and transfer succeed.
 *
 * The knob is armed while no other op is live on the host: the post it
 * takes is this test's.
 *
 * Regressions: a re-queued chunk dropped before its next post was counted
 * out of the op's bytes in flight twice (the fuzzer saw 2^64 - 3776);
 * flush completions were not fatal and there was no QP event
 * handler, so the connection stayed "up" and every later op on it failed
 * with ECANCELED; then a dead QP ended the session for every user of it,
 * and every op on it failed.
 */
#include "test.h"

#define FAULT	"/sys/kernel/debug/xferk/fault/qp_error"
#define LEN	8192

/* Connections debugfs shows up although their QP died. */
static int up_but_dead(void)
{
	char line[512], state[16], dead[16];
	int n = 0;
	FILE *f = fopen("/sys/kernel/debug/xferk/peers", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += sscanf(line, "%*s %*s %*s %15s %*s %*s %*s %*s %15s",
			    state, dead) == 2 &&
		     !strcmp(state, "up") && !strcmp(dead, "1");
	fclose(f);
	return n;
}

static int write_once(struct t_loop *l, struct xferk_op_snapshot *s, int seed)
{
	struct xferk_frag f = { .mr = l->src_mr, .len = LEN, .remote = l->remote,
				.opcode = XFERK_OP_WRITE };

	t_fill(l->src, LEN, seed);
	memset(l->dst, 0, LEN);
	return t_run(l->x, &f, 1, s);
}

/* The op on a QP the knob kills; its state. */
static int write_on_dead_qp(struct t_loop *l, struct xferk_op_snapshot *s,
			    int seed)
{
	int ret;

	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_write_file(FAULT, "1") == 0, "fault: %s", strerror(errno));
	ret = write_once(l, s, seed);
	T_EXPECT(t_fault_get("qp_error") == 0, "the op's post did not take the knob");
	t_write_file(FAULT, "0");
	return ret;
}

static void restore(void)
{
	t_fault_clear();
	t_write_file("/sys/kernel/debug/xferk/fault/connect_version", "0");
}

static void path_replaced(void)
{
	long long deaths = t_stat("path_deaths_qp");
	long long reconnects = t_stat("reconnects");
	long long reposted = t_stat("chunks_reposted");
	struct xferk_conn_info before, after;
	struct xferk_op_snapshot s;
	struct t_loop l;
	int ret;

	/*
	 * A session of its own, initiated here: a CONNECT to the peer may
	 * otherwise find the accepting end of another test's session to the
	 * host's second address (seen after kill_storm).
	 */
	T_EXPECT(t_end_session() == 0, "the sessions to the peer did not end");
	t_loop_open(&l, LEN, LEN + 4096);
	ret = write_once(&l, &s, 3);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "warm-up: %d", ret);
	ret = xferk_conn_query(l.x, l.conn, &before);
	T_EXPECT(ret == 0 && before.state == XFERK_CONN_STATE_UP &&
		 before.path_gen >= 1 && before.initiator == 1,
		 "conn query: %d state %u path_gen %u", ret, before.state,
		 before.path_gen);

	ret = write_on_dead_qp(&l, &s, 4);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && s.first_error == 0 &&
		 t_check(l.dst, LEN, 4) < 0,
		 "op across a path death: state %d first_error %d", ret,
		 s.first_error);
	T_EXPECT(t_stat("path_deaths_qp") > deaths, "path_deaths_qp %lld, was %lld",
		 t_stat("path_deaths_qp"), deaths);
	T_EXPECT(t_stat("reconnects") > reconnects, "reconnects %lld, was %lld",
		 t_stat("reconnects"), reconnects);
	T_EXPECT(t_stat("chunks_reposted") > reposted,
		 "chunks_reposted %lld, was %lld", t_stat("chunks_reposted"),
		 reposted);

	ret = xferk_conn_query(l.x, l.conn, &after);
	T_EXPECT(ret == 0 && after.state == XFERK_CONN_STATE_UP &&
		 after.path_gen == before.path_gen + 1 &&
		 after.path_deaths == before.path_deaths + 1 &&
		 after.reconnects == before.reconnects + 1 &&
		 after.error == -ECONNRESET,
		 "conn query after: %d state %u path_gen %u/%u deaths %llu reconnects %llu error %d",
		 ret, after.state, after.path_gen, before.path_gen,
		 (unsigned long long)after.path_deaths,
		 (unsigned long long)after.reconnects, after.error);

	/* The same handles on the session's new path. */
	ret = write_once(&l, &s, 5);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(l.dst, LEN, 5) < 0,
		 "the same import after the reconnect: %d", ret);
	xferk_close(l.x);
}

#define FAULT_VERSION	"/sys/kernel/debug/xferk/fault/connect_version"

static void repost_then_cancel(void)
{
	long long reposted = t_stat("chunks_reposted");
	struct xferk_frag f;
	struct xferk_op_snapshot s;
	struct xferk_conn_info i = { 0 };
	struct t_loop l;
	uint64_t op, until;
	int ret;

	t_loop_open(&l, LEN, LEN + 4096);
	f = (struct xferk_frag) { .mr = l.src_mr, .len = LEN,
				  .remote = l.remote, .opcode = XFERK_OP_WRITE };
	T_EXPECT(t_write_file(FAULT_VERSION, "1") == 0, "connect_version");
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_write_file(FAULT, "1") == 0, "fault: %s", strerror(errno));
	T_EXPECT(xferk_submit(l.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0,
		 "submit");
	T_EXPECT(t_stat_wait("chunks_reposted", reposted + 1,
			     t_scaled_ms(10000)) > reposted,
		 "the flushed work request was not queued again");
	ret = xferk_cancel_drain(l.x, op, xferk_now_ns() + 2000000000ULL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED &&
		 s.in_flight_bytes == 0 && s.physical_complete &&
		 s.transferred_bytes == 0,
		 "cancelled while queued again: %d %s in flight %llu",
		 ret, xferk_state_name(s.state),
		 (unsigned long long)s.in_flight_bytes);
	xferk_release(l.x, op);
	t_write_file(FAULT_VERSION, "0");
	t_write_file(FAULT, "0");
	until = t_now_ms() + t_scaled_ms(30000);
	while (t_now_ms() < until &&
	       (xferk_conn_query(l.x, l.conn, &i) ||
		i.state != XFERK_CONN_STATE_UP))
		usleep(50000);
	ret = write_once(&l, &s, 9);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(l.dst, LEN, 9) < 0,
		 "after the reconnect: %d", ret);
	xferk_close(l.x);
}

static void session_ends(void)
{
	long long errors = t_stat("qp_errors");
	struct xferk_conn_info info;
	struct xferk_op_snapshot s;
	struct t_loop l;
	uint64_t until;
	int ret;

	T_EXPECT(t_param_scoped("reconnect_ms", 0) == 0, "reconnect_ms: %s",
		 strerror(errno));
	t_loop_open(&l, LEN, LEN + 4096);
	ret = write_once(&l, &s, 6);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "warm-up: %d", ret);
	ret = write_on_dead_qp(&l, &s, 7);
	T_EXPECT(ret == XFERK_STATE_FAILED && s.first_error == -ECONNRESET &&
		 s.failure == XFERK_FAILURE_PATH,
		 "op on the failed QP: state %d first_error %d failure %u", ret,
		 s.first_error, s.failure);
	/* The connection is down at once, not when the peer says so. */
	until = t_now_ms() + t_scaled_ms(5000);
	while (up_but_dead() && t_now_ms() < until)
		usleep(50000);
	T_EXPECT(up_but_dead() == 0, "a connection with a dead QP is still up");
	ret = xferk_conn_query(l.x, l.conn, &info);
	T_EXPECT(ret == 0 && info.state == XFERK_CONN_STATE_DOWN &&
		 info.error == -ECONNRESET,
		 "conn query: %d state %u error %d", ret, info.state, info.error);
	T_EXPECT(t_stat("qp_errors") > errors, "qp_errors %lld, was %lld",
		 t_stat("qp_errors"), errors);

	/* A fresh connection: the same calls now work. */
	xferk_close(l.x);
	ret = t_loop_connect(&l);
	T_EXPECT(ret == 0, "setup on a new connection: %s", strerror(-ret));
	if (!ret) {
		ret = write_once(&l, &s, 8);
		T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(l.dst, LEN, 8) < 0,
			 "transfer on the new connection: %d", ret);
		xferk_close(l.x);
	}
}

int main(void)
{
	atexit(restore);
	path_replaced();
	repost_then_cancel();
	session_ends();
	return t_result();
}
