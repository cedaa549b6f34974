// SPDX-License-Identifier: GPL-2.0
/*
 * Rails over two soft-RoCE devices: a remote handle imported through a
 * session on rxe0 and, with xferk_import_rail(), through one on a second
 * device (rxe1 on dummy1, which this test adds and removes).
 *
 *  - bad rails fail with their documented errno and change nothing;
 *  - a WRITE and a READ are striped: both devices carry packets (their
 *    own hw counters), every byte is right;
 *  - a QP window two devices' queues share: a striped op (queued on
 *    rxe0's device) holds the window of the rxe1 session's QP (qp_window
 *    1, its one work request's completion held back), a plain op on that
 *    session waits in rxe1's queue; when the window frees, that queue is
 *    kicked too and the plain op goes (it stalled before); and the other
 *    way round (the striped op waits in rxe0's queue);
 *  - a rail's path dies under an op (fault qp_error) and its new paths
 *    are refused (fault connect_version): its flushed work request and
 *    every later one cut for it move to the other rail instead of waiting
 *    for the session's next path, and the op succeeds with every byte
 *    while that session is still reconnecting; the flushed ones moved
 *    only once the peer's end of the dead path was torn down (the fence):
 *    that end misses the disconnect (fault ignore_disconnects) and no
 *    keepalive ends its path, yet once the op is done only the other
 *    session's two ends are up (regression: the work requests moved at
 *    once, while packets of their first attempt could still land at the
 *    peer's end of the dead path, after the op's DATA event);
 *  - rxe1 is removed mid-op: the op still succeeds with every byte, the
 *    work requests cut for rxe1 moved to rxe0 (chunks_rerouted), and the
 *    next op on the handle uses the rail that is left.
 *
 * The op is surely in flight when rxe1 goes: the first completion any of
 * its work requests gets is held back (fault knobs delay_completions and
 * delay_ms, armed while no other op is live), and while it is held the
 * op's window keeps work requests of both rails undispatched. It is
 * released once the removal has taken rxe1's session down.
 */
#include <spawn.h>
#include <sys/ioctl.h>

#include "test.h"

extern char **environ;

#define ADDR1	"10.99.1.1"
#define SLACK	4096	/* see RXE_MAP_SLACK in two_process.c */
#define RW	(XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE)
#define FAULT_VERSION	"/sys/kernel/debug/xferk/fault/connect_version"

static long long saved_delay_ms = -1;
static long long saved_qp_window = -1;

static int qp_window_set(long long v)
{
	char val[32];

	snprintf(val, sizeof(val), "%lld", v);
	return t_write_file("/sys/class/misc/xferk/queue/qp_window", val);
}

static void cleanup(void)
{
	int ret;

	t_fault_clear();
	t_write_file(FAULT_VERSION, "0");
	if (saved_delay_ms >= 0)
		t_fault_set("delay_ms", saved_delay_ms);
	if (saved_qp_window >= 0)
		qp_window_set(saved_qp_window);
	/* Either may be gone already. */
	ret = system("rdma link delete rxe1 2>/dev/null; ip link del dummy1 2>/dev/null");

	(void)ret;
}

static int add_device(void)
{
	int ret = system("ip link add dummy1 type dummy && "
			 "ip addr add " ADDR1 "/24 dev dummy1 && "
			 "ip link set dummy1 up && "
			 "rdma link add rxe1 type rxe netdev dummy1");

	T_EXPECT(ret == 0, "adding rxe1: %d", ret);
	return ret;
}

/* Packets @dev sent so far (its soft-RoCE hw counter), or -1. */
static long long sent_pkts(const char *dev)
{
	char path[128];

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/sent_pkts", dev);
	return t_read_number(path);
}

/* Both ends of the sessions to each address are up again (30 s scaled). */
static int sessions_up(void)
{
	uint64_t until = t_now_ms() + t_scaled_ms(30000);
	char addr0[64];

	snprintf(addr0, sizeof(addr0), "%s:", t_peer());
	while (t_peers_matching(" up ", addr0) < 2 ||
	       t_peers_matching(" up ", ADDR1 ":") < 2) {
		if (t_now_ms() > until)
			return -1;
		usleep(20000);
	}
	return 0;
}

/* Session ends (of both sessions, both sides) that are up now. */
static int ends_up(void)
{
	char addr0[64];

	snprintf(addr0, sizeof(addr0), "%s:", t_peer());
	return t_peers_matching(" up ", addr0) +
	       t_peers_matching(" up ", ADDR1 ":");
}

static int reconnecting(struct xferk *x, uint64_t conn)
{
	struct xferk_conn_info info;

	return !xferk_conn_query(x, conn, &info) &&
	       info.state == XFERK_CONN_STATE_RECONNECTING;
}

/* One of the two sessions is (or soon is: 10 s scaled) reconnecting. */
static int one_reconnecting(struct xferk *x, uint64_t c0, uint64_t c1)
{
	uint64_t until = t_now_ms() + t_scaled_ms(10000);

	while (reconnecting(x, c0) + reconnecting(x, c1) != 1) {
		if (t_now_ms() > until)
			return -1;
		usleep(20000);
	}
	return 0;
}

/*
 * Op @held holds the QP window of rxe1's session (qp_window 1) while its
 * one completion is held back; op @waiting, queued on the other device,
 * needs the same window and must go once it frees.
 */
static void window_handover(struct xferk *x, const struct xferk_frag *held,
			    const struct xferk_frag *waiting, const char *what)
{
	const unsigned int hold_ms = t_debug_kernel() ? 5000 : 2000;
	struct xferk_op_snapshot s;
	uint64_t op1, op2;
	int ret;

	T_EXPECT(t_submit_held(x, held, 1, hold_ms, &op1) == 0, "%s: held op",
		 what);
	T_EXPECT(xferk_submit(x, waiting, 1, xferk_now_ns() +
			      t_scaled_ms(30000) * 1000000ULL, 0, &op2) == 0,
		 "%s: waiting op", what);
	/* Queued behind the held window: the window may free now. */
	t_release_held();
	ret = xferk_wait(x, op2, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED,
		 "%s: the op behind the shared window: %d %s", what, ret,
		 xferk_state_name(s.state));
	ret = xferk_wait(x, op1, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED,
		 "%s: the held op: %s", what, xferk_state_name(s.state));
	xferk_release(x, op1);
	xferk_release(x, op2);
}

/*
 * A QP window two devices' queues share, both ways: a striped op's only
 * work request goes through rxe1's session (a fresh handle's rotation
 * starts at its second rail) while the op is queued on rxe0's device; a
 * plain op on that session is queued on rxe1's.
 */
static void shared_window(struct xferk *x, uint64_t c0, uint64_t c1,
			  uint64_t src_mr, const struct xferk_token *tok0,
			  const struct xferk_token *tok1)
{
	uint64_t striped[2], plain;
	struct xferk_frag fs, fp;
	int i;

	for (i = 0; i < 2; i++)
		if (xferk_import(x, c0, tok0, &striped[i]) ||
		    xferk_import_rail(x, c1, tok1, striped[i])) {
			T_EXPECT(0, "striped imports");
			return;
		}
	if (xferk_import(x, c1, tok1, &plain)) {
		T_EXPECT(0, "plain import");
		return;
	}
	saved_qp_window = t_queue_stat("qp_window");
	T_EXPECT(qp_window_set(1) == 0, "qp_window");
	fs = (struct xferk_frag) { .mr = src_mr, .len = 1 << 20,
				   .remote = striped[0], .opcode = XFERK_OP_WRITE };
	fp = fs;
	fp.remote = plain;
	fp.remote_offset = 1 << 20;
	window_handover(x, &fs, &fp, "striped first");
	fs.remote = striped[1];
	window_handover(x, &fp, &fs, "plain first");
	T_EXPECT(qp_window_set(saved_qp_window) == 0, "qp_window back");
	for (i = 0; i < 2; i++)
		xferk_unimport(x, striped[i]);
	xferk_unimport(x, plain);
}

static int run(struct xferk *x, uint64_t mr, uint64_t remote, uint64_t len,
	       uint32_t opcode)
{
	struct xferk_frag f = { .mr = mr, .len = len, .remote = remote,
				.opcode = opcode };
	struct xferk_op_snapshot s;

	return t_run(x, &f, 1, &s);
}

/*
 * A token of an export its peer revoked, added as a rail of a handle that
 * is not a remote: the bad rail handle's EINVAL, not the token's ESTALE,
 * as IMPORT checks the handles before it lists the import (regression:
 * it listed the import first).
 */
static void stale_rail(struct xferk *x, uint64_t c1, uint64_t dst_mr)
{
	uint64_t until = t_now_ms() + t_scaled_ms(10000), exp, rm;
	struct xferk_token tok;
	uint32_t how;
	int ret;

	if (xferk_export(x, c1, dst_mr, 0, 4096, RW, &tok, &exp)) {
		T_EXPECT(0, "export to revoke");
		return;
	}
	T_EXPECT(xferk_window_close(x, exp, 0, &how, NULL) == 0, "close");
	/* The revoke reaches the importing end in the background. */
	while ((ret = xferk_import(x, c1, &tok, &rm)) == 0) {
		xferk_unimport(x, rm);
		if (t_now_ms() > until)
			break;
		usleep(10000);
	}
	T_EXPECT_ERR(ret, ESTALE);
	T_EXPECT_ERR(xferk_import_rail(x, c1, &tok, dst_mr), EINVAL);
}

static void bad_rails(struct xferk *x, uint64_t c0, uint64_t c1, uint64_t dst_mr,
		      uint64_t remote, const struct xferk_token *tok0,
		      const struct xferk_token *tok1)
{
	struct xferk_ioc_import a = { .size = sizeof(a), .conn = c1,
				      .rail_of = remote };
	struct xferk_token short_tok;
	uint64_t exp;

	T_EXPECT_ERR(xferk_import_rail(x, c1, tok1, 0), EINVAL);
	memcpy(a.token, tok1->bytes, sizeof(a.token));
	T_EXPECT_ERR(ioctl(xferk_fd(x), XFERK_IOC_IMPORT, &a) ? -errno : 0,
		     EINVAL);	/* rail_of without the flag */
	T_EXPECT_ERR(xferk_import_rail(x, c0, tok0, remote), EEXIST);
	T_EXPECT_ERR(xferk_import_rail(x, c1, tok1, dst_mr), EINVAL);	/* kind */
	if (xferk_export(x, c1, dst_mr, 0, 4096, RW, &short_tok, &exp) == 0) {
		T_EXPECT_ERR(xferk_import_rail(x, c1, &short_tok, remote), EINVAL);
		xferk_unexport(x, exp);
	} else {
		T_EXPECT(0, "short export");
	}
	stale_rail(x, c1, dst_mr);
}

/*
 * Removes rxe1 (`rdma link delete`, spawned) while @x's op is held in
 * flight. The removal waits for the teardown of rxe1's session, which
 * waits for that held completion when it is one of rxe1's: once the
 * removal has taken the session down (nothing is posted on it any more;
 * its teardown reroutes or flushes its work requests), the hold is
 * released rather than waited out. 0 if the removal succeeded.
 */
static int remove_rxe1_in_flight(struct xferk *x, uint64_t c1)
{
	char *argv[] = { "rdma", "link", "delete", "rxe1", NULL };
	uint64_t until = t_now_ms() + t_scaled_ms(30000);
	struct xferk_conn_info info;
	int status;
	pid_t pid;

	if (posix_spawnp(&pid, "rdma", NULL, NULL, argv, environ))
		return -1;
	while (t_now_ms() < until && !xferk_conn_query(x, c1, &info) &&
	       info.state != XFERK_CONN_STATE_DOWN)
		usleep(20000);
	t_release_held();
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

int main(void)
{
	const uint64_t len = (t_debug_kernel() ? 16ULL : 64ULL) << 20;
	const unsigned int hold_ms = t_debug_kernel() ? 20000 : 10000;
	uint64_t c0, c1, src_mr, dst_mr, exp0, exp1, remote, op;
	long long pkts0, pkts1, rerouted, confirmed;
	struct xferk_token tok0, tok1;
	struct xferk_op_snapshot s;
	struct xferk_conn_info info;
	struct xferk_frag f;
	uint8_t *src, *dst;
	struct xferk *x;
	int ret;

	if (xferk_open(&x))
		return T_SKIP;
	if (!(xferk_features(x) & XFERK_FEAT_RAILS)) {
		printf("the module has no rails\n");
		return T_SKIP;
	}
	saved_delay_ms = t_fault_get("delay_ms");
	atexit(cleanup);
	/*
	 * The sessions' ends are told apart by address (ends_up()): a session
	 * an earlier test left, shared by the CONNECT below, can have an end
	 * with another of rxe0's addresses (regression: "1 session ends up").
	 */
	if (t_end_session()) {
		T_EXPECT(0, "the sessions to the peer did not end");
		return T_FAIL;
	}
	/* A teardown waits for the held completion, not destroying the QP. */
	if (t_param_scoped("flush_timeout_ms", 2 * hold_ms) || add_device())
		return T_FAIL;
	src = t_map(len);
	dst = t_map(len + SLACK);
	ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), &c0);
	if (!ret)
		ret = xferk_connect(x, ADDR1, 0, t_connect_ms(), &c1);
	if (!ret)
		ret = xferk_mr_reg(x, src, len, XFERK_ACCESS_LOCAL_SRC |
				   XFERK_ACCESS_LOCAL_DST, &src_mr);
	if (!ret)
		ret = xferk_mr_reg(x, dst, len + SLACK, RW, &dst_mr);
	if (!ret)
		ret = xferk_export(x, c0, dst_mr, 0, len + SLACK, RW, &tok0, &exp0);
	if (!ret)
		ret = xferk_export(x, c1, dst_mr, 0, len + SLACK, RW, &tok1, &exp1);
	if (!ret)
		ret = xferk_import(x, c0, &tok0, &remote);
	if (ret) {
		T_EXPECT(0, "setup: %s", strerror(-ret));
		return T_FAIL;
	}
	bad_rails(x, c0, c1, dst_mr, remote, &tok0, &tok1);
	T_EXPECT(xferk_import_rail(x, c1, &tok1, remote) == 0, "rail");
	T_EXPECT_ERR(xferk_import_rail(x, c1, &tok1, remote), EEXIST);

	/* Striped both ways: each device carries a good share. */
	pkts0 = sent_pkts("rxe0");
	pkts1 = sent_pkts("rxe1");
	t_fill(src, len, 1);
	T_EXPECT(run(x, src_mr, remote, len, XFERK_OP_WRITE) ==
		 XFERK_STATE_SUCCEEDED && t_check(dst, len, 1) < 0, "striped write");
	memset(src, 0, len);
	T_EXPECT(run(x, src_mr, remote, len, XFERK_OP_READ) ==
		 XFERK_STATE_SUCCEEDED && t_check(src, len, 1) < 0, "striped read");
	pkts0 = sent_pkts("rxe0") - pkts0;
	pkts1 = sent_pkts("rxe1") - pkts1;
	/* Either device's share of 2 * len bytes, in packets of <= 4 KiB. */
	T_EXPECT(pkts0 >= (long long)(len / 4096 / 2) &&
		 pkts1 >= (long long)(len / 4096 / 2),
		 "packets sent: rxe0 %lld, rxe1 %lld", pkts0, pkts1);

	shared_window(x, c0, c1, src_mr, &tok0, &tok1);

	/*
	 * A rail's path dies and stays dead: the op does not wait for it
	 * (reconnect_ms is far longer than the op).
	 */
	rerouted = t_stat("chunks_rerouted");
	confirmed = t_stat("fences_confirmed");
	t_fill(src, len, 4);
	T_EXPECT(t_param_scoped("reconnect_ms", 600000) == 0 &&
		 t_param_scoped("keepalive_ms", 0) == 0, "parameters");
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_write_file(FAULT_VERSION, "1") == 0 &&
		 t_fault_set("ignore_disconnects", 64) == 0 &&
		 t_fault_set("qp_error", 1) == 0, "fault knobs");
	f = (struct xferk_frag) { .mr = src_mr, .len = len, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	ret = xferk_submit(x, &f, 1, xferk_now_ns() +
			   t_scaled_ms(60000) * 1000000ULL, 0, &op);
	if (!ret)
		ret = xferk_wait(x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED &&
		 t_check(dst, len, 4) < 0, "write across a path's death: %d %s",
		 ret, xferk_state_name(s.state));
	xferk_release(x, op);
	T_EXPECT(t_fault_get("qp_error") == 0, "qp_error not used");
	T_EXPECT(ends_up() == 2, "%d session ends up once the op is done, "
		 "not 2: the peer's end of the dead path was not fenced",
		 ends_up());
	T_EXPECT(t_stat("chunks_rerouted") > rerouted,
		 "chunks_rerouted %lld, was %lld after a path's death",
		 t_stat("chunks_rerouted"), rerouted);
	T_EXPECT(t_stat("fences_confirmed") > confirmed,
		 "fences_confirmed %lld, was %lld", t_stat("fences_confirmed"),
		 confirmed);
	T_EXPECT(one_reconnecting(x, c0, c1) == 0, "no session waits for a path");
	T_EXPECT(t_fault_set("ignore_disconnects", 0) == 0 &&
		 t_write_file(FAULT_VERSION, "0") == 0, "fault knobs back");
	T_EXPECT(sessions_up() == 0, "the session did not come back");

	/* rxe1 goes away while the op is held in flight. */
	rerouted = t_stat("chunks_rerouted");
	t_fill(src, len, 2);
	memset(dst, 0, len);
	f = (struct xferk_frag) { .mr = src_mr, .len = len, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT(t_submit_held(x, &f, 1, hold_ms, &op) == 0, "held op");
	T_EXPECT(remove_rxe1_in_flight(x, c1) == 0, "removing rxe1");
	ret = xferk_wait(x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED &&
		 s.transferred_bytes == len && t_check(dst, len, 2) < 0,
		 "op across the removal: %d %s, %llu of %llu bytes, error %d", ret,
		 xferk_state_name(s.state), (unsigned long long)s.transferred_bytes,
		 (unsigned long long)len, s.first_error);
	xferk_release(x, op);
	T_EXPECT(t_stat("chunks_rerouted") > rerouted,
		 "chunks_rerouted %lld, was %lld", t_stat("chunks_rerouted"),
		 rerouted);
	T_EXPECT(xferk_conn_query(x, c1, &info) == 0 &&
		 info.state == XFERK_CONN_STATE_DOWN, "rxe1's session: state %u",
		 info.state);

	/* The handle goes on over the rail that is left. */
	t_fill(src, len, 3);
	T_EXPECT(run(x, src_mr, remote, len, XFERK_OP_WRITE) ==
		 XFERK_STATE_SUCCEEDED && t_check(dst, len, 3) < 0,
		 "write after the removal");
	xferk_close(x);
	return t_result();
}
