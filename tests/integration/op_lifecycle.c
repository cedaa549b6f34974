// SPDX-License-Identifier: GPL-2.0
/*
 * Op lifecycle through the scripted null peer (no data moved): success
 * snapshot, deadline expiry while work requests are in flight (TIMED_OUT,
 * not reusable, later physically complete with late completions and the
 * first failure unchanged), deadlines already past, zero and far in the
 * future, release and deregistration of an op in flight (pages stay pinned
 * until it completes), 4096 fragments. The ops that must still be in
 * flight while the test looks run on a null peer that takes seconds per
 * fragment (more on the debug kernel), far longer than the looking.
 */
#include <unistd.h>

#include "test.h"

#define MS	1000000ULL

/* The slow null peer's time per fragment. */
static uint64_t slow_ns(void)
{
	return (t_debug_kernel() ? 5000 : 2000) * MS;
}

static struct xferk *x;
static uint8_t *buf;
static uint64_t mr;

static uint64_t null_remote(uint64_t delay_ns, uint64_t *conn)
{
	struct xferk_token tok;
	uint64_t exp, remote = 0;
	int ret;

	ret = xferk_connect_null(x, delay_ns, conn);
	T_EXPECT(ret == 0, "null peer: %s", strerror(-ret));
	ret = xferk_export(x, *conn, mr, 0, 1 << 20,
			   XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE,
			   &tok, &exp);
	T_EXPECT(ret == 0, "export: %s", strerror(-ret));
	ret = xferk_import(x, *conn, &tok, &remote);
	T_EXPECT(ret == 0, "import: %s", strerror(-ret));
	return remote;
}

static struct xferk_frag frag(uint64_t remote, uint64_t off, uint64_t len)
{
	return (struct xferk_frag) {
		.mr = mr, .offset = off, .len = len, .remote = remote,
		.remote_offset = off, .opcode = XFERK_OP_WRITE,
	};
}

static void success(uint64_t remote)
{
	struct xferk_frag f[3] = { frag(remote, 0, 100), frag(remote, 4096, 300000),
				   frag(remote, 400000, 1) };
	struct xferk_op_snapshot s;
	uint64_t op;
	int ret;

	ret = xferk_submit(x, f, 3, xferk_now_ns() + 10000 * MS, 42, &op);
	T_EXPECT(ret == 0, "submit: %s", strerror(-ret));
	ret = xferk_wait(x, op, XFERK_DEADLINE_NONE, 0, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED,
		 "wait %d state %s", ret, xferk_state_name(s.state));
	T_EXPECT(s.total_bytes == 300101 && s.transferred_bytes == 300101 &&
		 s.in_flight_bytes == 0, "bytes %llu/%llu",
		 (unsigned long long)s.transferred_bytes,
		 (unsigned long long)s.total_bytes);
	T_EXPECT(s.total_fragments == 3 && s.completed_fragments == 3,
		 "fragments %u/%u", s.completed_fragments, s.total_fragments);
	T_EXPECT(s.physical_complete && s.buffer_reusable && !s.first_error &&
		 s.submit_to_physical_ns > 0 && s.user_data == 42 &&
		 !s.deadline_timeouts && !s.late_completions, "snapshot fields");
	T_EXPECT(xferk_query(x, op, &s) == 0 && s.state == XFERK_STATE_SUCCEEDED,
		 "query");
	T_EXPECT(xferk_release(x, op) == 0, "release");
	T_EXPECT_ERR(xferk_query(x, op, &s), ESTALE);
}

static void timeout_then_late_completion(uint64_t remote)
{
	struct xferk_frag f[2] = { frag(remote, 0, 4096), frag(remote, 8192, 4096) };
	struct xferk_op_snapshot s;
	long long timed_out = t_stat("ops_timed_out");
	uint64_t op;
	int ret;

	ret = xferk_submit(x, f, 2, xferk_now_ns() + t_scaled_ms(200) * MS, 0,
			   &op);
	T_EXPECT(ret == 0, "submit: %s", strerror(-ret));
	ret = xferk_wait(x, op, XFERK_DEADLINE_NONE, 0, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_TIMED_OUT,
		 "wait %d state %s", ret, xferk_state_name(s.state));
	T_EXPECT(s.first_error == -ETIMEDOUT && s.deadline_timeouts == 1,
		 "first_error %d", s.first_error);
	T_EXPECT(!s.physical_complete && !s.buffer_reusable &&
		 s.in_flight_bytes == 8192, "in flight %llu, reusable %u",
		 (unsigned long long)s.in_flight_bytes, s.buffer_reusable);

	ret = xferk_wait(x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.physical_complete && s.buffer_reusable,
		 "physical wait %d", ret);
	T_EXPECT(s.state == XFERK_STATE_TIMED_OUT && s.first_error == -ETIMEDOUT,
		 "late success changed the outcome: %s %d",
		 xferk_state_name(s.state), s.first_error);
	T_EXPECT(s.late_completions == 2 && s.transferred_bytes == 8192,
		 "late %u", s.late_completions);
	T_EXPECT(t_stat("ops_timed_out") == timed_out + 1, "ops_timed_out");
	xferk_release(x, op);
}

/*
 * A drain budget beyond the clock's range means "drain until done": the
 * deadline passes, the op drains until the slow peer completes its chunk
 * and ends DRAINED, never QUARANTINED (a deadline plus budget that wrapped
 * ended the drain at once). Submitted here, checked by
 * unbounded_drain_check() while other steps wait on the slow peer too;
 * returns once the deadline fired (ops_timed_out counted it), 0 if the
 * submit failed.
 */
static uint64_t unbounded_drain_submit(uint64_t remote)
{
	struct xferk_submit_opts o = {
		.flags = XFERK_SUBMIT_CANCEL_ON_DEADLINE,
		.drain_budget_ns = UINT64_MAX,
	};
	struct xferk_frag f = frag(remote, 0, 4096);
	long long timed_out = t_stat("ops_timed_out");
	struct xferk_op_snapshot s = { 0 };
	uint64_t op;
	int ret;

	ret = xferk_submit_ex(x, &f, 1, xferk_now_ns() + 100 * MS, &o, &op);
	T_EXPECT(ret == 0, "submit: %s", strerror(-ret));
	if (ret)
		return 0;
	/* The timer counts it after the op's own count: both are in then. */
	T_EXPECT(t_stat_wait("ops_timed_out", timed_out + 1,
			     t_scaled_ms(10000)) == timed_out + 1,
		 "ops_timed_out %lld, was %lld", t_stat("ops_timed_out"),
		 timed_out);
	T_EXPECT(xferk_query(x, op, &s) == 0 && s.deadline_timeouts == 1,
		 "the op's deadline did not fire");
	return op;
}

static void unbounded_drain_check(uint64_t op)
{
	struct xferk_op_snapshot s;
	int ret;

	if (!op)
		return;
	ret = xferk_wait(x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED &&
		 !s.quarantine_events && s.buffer_reusable,
		 "unbounded drain budget: %d %s, %u quarantine events", ret,
		 xferk_state_name(s.state), s.quarantine_events);
	xferk_release(x, op);
}

static void deadlines(uint64_t remote)
{
	struct xferk_frag f = frag(remote, 0, 10);
	struct xferk_op_snapshot s;
	long long submitted = t_stat("ops_submitted");
	uint64_t op;

	T_EXPECT_ERR(xferk_submit(x, &f, 1, 0, 0, &op), ETIMEDOUT);
	T_EXPECT_ERR(xferk_submit(x, &f, 1, xferk_now_ns() - 1, 0, &op), ETIMEDOUT);
	T_EXPECT(t_stat("ops_submitted") == submitted, "expired submit published");
	T_EXPECT(xferk_submit(x, &f, 1, xferk_now_ns() + 3600000 * MS, 0, &op) == 0 &&
		 xferk_wait(x, op, XFERK_DEADLINE_NONE, 0, &s) == 0 &&
		 s.state == XFERK_STATE_SUCCEEDED, "far deadline");
	xferk_release(x, op);
	T_EXPECT(xferk_submit(x, &f, 1, (uint64_t)INT64_MAX + 5, 0, &op) == 0 &&
		 xferk_wait(x, op, XFERK_DEADLINE_NONE, 0, &s) == 0 &&
		 s.state == XFERK_STATE_SUCCEEDED, "deadline beyond KTIME_MAX");
	xferk_release(x, op);
}

/* A region released and deregistered with its op in flight. */
struct released {
	long long pinned;	/* pinned_pages before it was registered */
	uint64_t conn, remote;
	uint8_t *buf;
};

/*
 * Released and deregistered mid-flight: the pages go only at completion,
 * slow_ns() after the submit; released_check() waits for that while other
 * steps run.
 */
static void release_in_flight(const struct t_counters *base,
			      struct released *r)
{
	long long orphaned = t_stat("ops_orphaned");
	uint64_t exp, m, op;
	struct xferk_token tok;
	struct xferk_frag f;

	r->pinned = t_stat("pinned_pages");
	r->buf = t_map(1 << 20);
	T_EXPECT(xferk_mr_reg(x, r->buf, 1 << 20, XFERK_ACCESS_LOCAL_SRC |
			      XFERK_ACCESS_REMOTE_WRITE, &m) == 0, "reg");
	T_EXPECT(t_stat("pinned_pages") == r->pinned + 256, "pinned %lld",
		 t_stat("pinned_pages"));
	T_EXPECT(xferk_connect_null(x, slow_ns(), &r->conn) == 0, "null");
	T_EXPECT(xferk_export(x, r->conn, m, 0, 1 << 20,
			      XFERK_ACCESS_REMOTE_WRITE, &tok, &exp) == 0,
		 "export");
	T_EXPECT(xferk_import(x, r->conn, &tok, &r->remote) == 0, "import");
	f = (struct xferk_frag) { .mr = m, .len = 1 << 20, .remote = r->remote,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT(xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0, "submit");
	T_EXPECT(xferk_release(x, op) == 0, "release");
	T_EXPECT(xferk_unexport(x, exp) == 0 && xferk_mr_dereg(x, m) == 0, "dereg");
	T_EXPECT(t_stat("ops_orphaned") == orphaned + 1, "orphaned");
	T_EXPECT(t_stat("pinned_pages") == r->pinned + 256,
		 "pages unpinned while in flight: %lld", t_stat("pinned_pages"));
	T_EXPECT(t_stat("quarantined_pages") == base->quarantined_pages + 256,
		 "quarantined_pages %lld, was %lld", t_stat("quarantined_pages"),
		 base->quarantined_pages);
}

static void released_check(const struct t_counters *base,
			   const struct released *r)
{
	unsigned int bound_ms = slow_ns() / MS + t_scaled_ms(30000);

	T_EXPECT(t_stat_wait("pinned_pages", r->pinned, bound_ms) == r->pinned,
		 "pages still pinned: %lld", t_stat("pinned_pages"));
	T_EXPECT(t_stat_wait("quarantined_pages", base->quarantined_pages,
			     bound_ms) == base->quarantined_pages,
		 "quarantined_pages %lld", t_stat("quarantined_pages"));
	xferk_unimport(x, r->remote);
	xferk_disconnect(x, r->conn);
	munmap(r->buf, 1 << 20);
}

static void max_fragments(uint64_t remote)
{
	static struct xferk_frag f[XFERK_MAX_FRAGS];
	struct xferk_op_snapshot s;
	int i, ret;

	for (i = 0; i < XFERK_MAX_FRAGS; i++)
		f[i] = frag(remote, (uint64_t)i * 256, 256);
	ret = t_run(x, f, XFERK_MAX_FRAGS, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED &&
		 s.completed_fragments == XFERK_MAX_FRAGS,
		 "4096 fragments: %d %u", ret, s.completed_fragments);
}

int main(void)
{
	uint64_t conn_fast, conn_slow, fast, slow, unbounded;
	struct released released;
	struct t_counters base;
	int ret;

	if (xferk_open(&x))
		return T_SKIP;
	t_settle(&base);
	buf = t_map(1 << 20);
	ret = xferk_mr_reg(x, buf, 1 << 20, XFERK_ACCESS_ALL, &mr);
	T_EXPECT(ret == 0, "reg: %s", strerror(-ret));
	fast = null_remote(0, &conn_fast);
	slow = null_remote(slow_ns(), &conn_slow);
	if (t_failures)
		return T_FAIL;
	success(fast);
	/* The three waits on the slow peer overlap. */
	release_in_flight(&base, &released);
	unbounded = unbounded_drain_submit(slow);
	timeout_then_late_completion(slow);
	unbounded_drain_check(unbounded);
	deadlines(fast);
	max_fragments(fast);
	released_check(&base, &released);
	xferk_close(x);
	T_EXPECT(t_stat_wait("pinned_pages", base.pinned_pages, t_scaled_ms(10000)) ==
		 base.pinned_pages, "pinned_pages %lld after close, was %lld",
		 t_stat("pinned_pages"), base.pinned_pages);
	return t_result();
}
