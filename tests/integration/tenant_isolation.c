// SPDX-License-Identifier: GPL-2.0
/*
 * One tenant's abuse costs the others latency, never a failure. Process A
 * writes and verifies 1 MiB at a time, continuously, over the host's
 * shared connection, while process B on the same connection loops:
 *
 *   - a 4 MiB WRITE cancelled at once with a drain deadline of now: the
 *     cancel's escalation flushes the path while B's work requests are
 *     posted (and A's with them);
 *   - an import of a forged token (one byte of its MAC changed);
 *   - a CONNECT with a 1 ms timeout to a port nobody listens on.
 *
 * A sees no failure and every byte verified: its flushed work requests are
 * posted again on the session's next path. B's calls end with documented
 * results: the cancel returns 0 (DRAINED, or the op had finished) or
 * ETIMEDOUT (QUARANTINED, then DRAINED), the import EACCES, the connect
 * ETIMEDOUT, ECONNREFUSED or EHOSTUNREACH. The counters show what
 * happened: at least one path death by cancel, and the re-posts of A's
 * work requests that were in flight then (printed: whether A had any
 * posted at that moment is up to the scheduler). escalation_interval_ms
 * is 0 here, so every one of B's cancels may kill the path.
 *
 * On one host the two write to their own loopback exports. With
 * XFERK_TENANT_TOKEN=PATH (tests/twohost/80_tenant.sh) both import the
 * token in PATH, an export of at least 5 MiB on the peer host: A writes
 * its first MiB and reads it back to verify, B writes the 4 MiB after it.
 *
 * Regression: a cancel's escalation took the shared connection down for
 * every process; A's ops failed with ECONNRESET and its import was dead
 * for good.
 */
#include <sys/wait.h>

#include "test.h"

#define A_LEN	(1 << 20)
#define B_LEN	(4 << 20)

/* The peer's token for a two-host run, or NULL on one host. */
static const char *remote_token;

/* Imports the peer's token (XFERK_TENANT_TOKEN); @tok keeps it. */
static int import_remote(struct t_loop *l, struct xferk_token *tok)
{
	int ret = t_read_token(remote_token, tok);

	if (!ret)
		ret = xferk_import(l->x, l->conn, tok, &l->remote);
	return ret;
}

/*
 * @l with @len-byte buffers: the loopback setup, or a connection to the
 * peer, local regions and its token imported. Exits T_SKIP without
 * /dev/xferk, T_FAIL if the setup fails.
 */
static void tenant_open(struct t_loop *l, size_t len, struct xferk_token *tok)
{
	int ret;

	if (!remote_token) {
		t_loop_open(l, len, len + 4096);
		return;
	}
	l->src = t_map(len);
	l->dst = t_map(len);
	l->src_len = l->dst_len = len;
	if (xferk_open(&l->x))
		exit(T_SKIP);
	ret = xferk_connect(l->x, t_peer(), 0, t_connect_ms(), &l->conn);
	if (!ret)
		ret = xferk_mr_reg(l->x, l->src, len, XFERK_ACCESS_LOCAL_SRC,
				   &l->src_mr);
	if (!ret)
		ret = xferk_mr_reg(l->x, l->dst, len, XFERK_ACCESS_LOCAL_DST,
				   &l->dst_mr);
	if (!ret)
		ret = import_remote(l, tok);
	if (ret) {
		fprintf(stderr, "setup: %s\n", strerror(-ret));
		exit(T_FAIL);
	}
}

/* One op: bounded, so a lost op fails instead of hanging the test. */
static int run_bounded(struct t_loop *l, const struct xferk_frag *f,
		       struct xferk_op_snapshot *s)
{
	uint64_t op;
	int ret;

	ret = xferk_submit(l->x, f, 1,
			   xferk_now_ns() + t_scaled_ms(60000) * 1000000ULL, 0,
			   &op);
	if (ret)
		return ret;
	ret = xferk_wait(l->x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, s);
	xferk_release(l->x, op);
	return ret ? ret : (int)s->state;
}

/* A's round: WRITE pattern @seed, verified; true if it all succeeded. */
static bool tenant_a_round(struct t_loop *l, unsigned int seed)
{
	struct xferk_frag f = { .mr = l->src_mr, .len = A_LEN,
				.remote = l->remote, .opcode = XFERK_OP_WRITE };
	struct xferk_op_snapshot s = { 0 };
	int ret;

	t_fill(l->src, A_LEN, seed);
	ret = run_bounded(l, &f, &s);
	if (ret == XFERK_STATE_SUCCEEDED && remote_token) {
		/* Read it back from the peer. */
		memset(l->dst, 0, A_LEN);
		f = (struct xferk_frag) { .mr = l->dst_mr, .len = A_LEN,
					  .remote = l->remote,
					  .opcode = XFERK_OP_READ };
		ret = run_bounded(l, &f, &s);
	}
	if (ret == XFERK_STATE_SUCCEEDED && t_check(l->dst, A_LEN, seed) < 0)
		return true;
	fprintf(stderr, "A: round %u: %d %s first_error %d failure %u\n", seed,
		ret, xferk_state_name(s.state), s.first_error, s.failure);
	return false;
}

/* B: the abuse, @iters times. Exit status: t_result(). */
static int tenant_b(unsigned int iters)
{
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	struct t_loop l;
	uint64_t op, exp, forged, conn;
	unsigned int i;
	int ret;

	tenant_open(&l, B_LEN, &tok);
	if (!remote_token) {
		ret = xferk_export(l.x, l.conn, l.dst_mr, 0, 4096,
				   XFERK_ACCESS_REMOTE_READ, &tok, &exp);
		T_EXPECT(ret == 0, "B: export: %s", strerror(-ret));
	}
	for (i = 0; i < iters; i++) {
		struct xferk_frag f = { .mr = l.src_mr, .len = B_LEN,
					.remote = l.remote,
					.remote_offset = remote_token ? A_LEN : 0,
					.opcode = XFERK_OP_WRITE };

		ret = xferk_submit(l.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op);
		T_EXPECT(ret == 0, "B: submit: %s", strerror(-ret));
		if (ret)
			break;
		/* Cancel while work requests are posted: the escalation. */
		while (!xferk_query(l.x, op, &s) && !s.in_flight_bytes &&
		       !s.physical_complete)
			usleep(1000);
		ret = xferk_cancel_drain(l.x, op, xferk_now_ns(), &s);
		T_EXPECT(ret == 0 || ret == -ETIMEDOUT,
			 "B: cancel: %s", strerror(-ret));
		ret = xferk_wait(l.x, op, XFERK_DEADLINE_NONE,
				 XFERK_WAIT_PHYSICAL, &s);
		T_EXPECT(ret == 0 && (s.state == XFERK_STATE_DRAINED ||
				      s.state == XFERK_STATE_SUCCEEDED),
			 "B: the cancelled op: %d %s", ret,
			 xferk_state_name(s.state));
		xferk_release(l.x, op);

		tok.bytes[XFERK_TOKEN_SIZE - 1 - i % 8] ^= 0x5a;
		ret = xferk_import(l.x, l.conn, &tok, &forged);
		T_EXPECT(ret == -EACCES, "B: forged token: %s", strerror(-ret));
		tok.bytes[XFERK_TOKEN_SIZE - 1 - i % 8] ^= 0x5a;

		ret = xferk_connect(l.x, t_peer(), 1, 1, &conn);
		T_EXPECT(ret == -ETIMEDOUT || ret == -ECONNREFUSED ||
			 ret == -EHOSTUNREACH,
			 "B: 1 ms connect: %s", strerror(-ret));
		if (!ret)
			xferk_disconnect(l.x, conn);
		/* Spread over A's ops rather than all at once. */
		usleep(100000);
	}
	xferk_close(l.x);
	return t_result();
}

int main(void)
{
	long long deaths = t_stat("path_deaths_cancel");
	long long reposted = t_stat("chunks_reposted");
	long long reconnects = t_stat("reconnects");
	unsigned int iters = t_debug_kernel() ? 3 : 12, ops = 0, failed = 0;
	struct xferk_token tok;
	struct t_loop l;
	int status, ret;
	pid_t b;

	remote_token = getenv("XFERK_TENANT_TOKEN");
	/* Every one of B's cancels may kill the path (no rate limit). */
	T_EXPECT(t_param_scoped("escalation_interval_ms", 0) == 0,
		 "escalation_interval_ms: %s", strerror(errno));
	tenant_open(&l, A_LEN, &tok);
	b = fork();
	if (b < 0)
		return T_FAIL;
	if (!b) {
		xferk_close(l.x);
		ret = tenant_b(iters);
		/* Not exit(): the parent restores the parameters it set. */
		fflush(NULL);
		_exit(ret);
	}
	while (waitpid(b, &status, WNOHANG) == 0) {
		failed += !tenant_a_round(&l, ops + 10);
		ops++;
	}
	printf("A: %u ops of %d bytes, %u failed; path_deaths_cancel +%lld, chunks_reposted +%lld, reconnects +%lld\n",
	       ops, A_LEN, failed, t_stat("path_deaths_cancel") - deaths,
	       t_stat("chunks_reposted") - reposted,
	       t_stat("reconnects") - reconnects);
	printf("metric tenant_a_ops %u\nmetric tenant_a_failed %u\n"
	       "metric tenant_path_deaths_cancel %lld\n"
	       "metric tenant_chunks_reposted %lld\n", ops, failed,
	       t_stat("path_deaths_cancel") - deaths,
	       t_stat("chunks_reposted") - reposted);
	T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == T_PASS,
		 "B: status %d", status);
	T_EXPECT(ops > 0 && !failed, "A: %u of %u ops failed", failed, ops);
	T_EXPECT(t_stat("path_deaths_cancel") > deaths,
		 "no cancel killed a path: the test did not test");
	xferk_close(l.x);
	return t_result();
}
