// SPDX-License-Identifier: GPL-2.0
/*
 * Request groups over soft-RoCE (loopback):
 * 1. 100 ops of one group (1 MiB each; 64 KiB on the debug kernel)
 *    submitted and aborted at once: GROUP_ABORT returns 0, and by then
 *    every op is physically complete (each op's own snapshot says so);
 *    the group's snapshot sums its ops'; a submit naming the group fails
 *    with ESHUTDOWN and publishes nothing; the target of the export the
 *    ops wrote to gets one ABORTED event with the group's tag, after the
 *    drain, and a second abort sends none.
 * 2. A group with an op whose completion never comes (the fault knob
 *    swallow_completions): GROUP_WAIT says it is not settled (ETIMEDOUT);
 *    GROUP_ABORT with a drain deadline before the QP's teardown returns
 *    ETIMEDOUT with that op QUARANTINED in the group's snapshot; once the
 *    teardown destroyed the QP, GROUP_WAIT with XFERK_WAIT_PHYSICAL
 *    returns 0, and only then is the ABORTED event sent.
 * 3. GROUP_ABORT and GROUP_WAIT through io_uring: one CQE for the group.
 * 4. Bad input, each with its documented errno; max_groups_per_file.
 * 5. An abort while another thread submits into the group: every submit
 *    either joined (and its op is physically complete once the abort
 *    returns) or failed with ESHUTDOWN; the group counts exactly the ones
 *    that joined.
 *
 * 6. A join makes the ABORTED notification of each new target and charges
 *    it as a work request: with a budget of one, a one-work-request op
 *    that brings a new target fails with EBUSY; without the group it goes.
 *
 * Regression (6): an abort made them, past every limit.
 * Regression (5): an abort could list an op whose submit had joined the
 * group but not yet finished publishing it, and complete it under the
 * submit (the abort now closes and lists under the file's lock).
 */
#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "test.h"
#include "xferk_uring.h"

#define MS		1000000ULL
#define OPS		100
#define RW		(XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE)

static struct t_loop l;
static uint64_t win;		/* an export of all of l.dst */
static uint64_t win_rm;		/* its import */

static void restore(void)
{
	t_fault_clear();
	t_restore_params();
}

/*
 * The events with @type and @tag for the export that arrive within @ms,
 * counted until there are @want of them (then at once) or the time is up.
 */
static int events_of(uint32_t type, uint64_t tag, int want, unsigned int ms)
{
	struct xferk_event ev[64];
	uint64_t until = xferk_now_ns() + ms * MS;
	uint32_t nr, i;
	int n = 0;

	while (n < want && !xferk_events(l.x, ev, 64, until, &nr, NULL))
		for (i = 0; i < nr; i++)
			n += ev[i].type == type && ev[i].tag == tag &&
			     ev[i].export_handle == win;
	return n;
}

static int submit(uint64_t group, uint64_t off, uint64_t len, uint64_t *op)
{
	struct xferk_frag f = {
		.mr = l.src_mr, .offset = off, .len = len, .remote = win_rm,
		.remote_offset = off, .opcode = XFERK_OP_WRITE,
	};

	return xferk_submit_group(l.x, &f, 1, XFERK_DEADLINE_NONE, NULL,
				  group, 0, op);
}

/* Each op's own snapshot, summed as the group's is; all physical? */
static int ops_sum(const uint64_t *ops, int n, struct xferk_group_snapshot *sum)
{
	struct xferk_op_snapshot s;
	int i, physical = 1;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < n; i++) {
		if (xferk_query(l.x, ops[i], &s))
			return -1;
		physical &= s.buffer_reusable && s.physical_complete;
		sum->ops++;
		sum->total_bytes += s.total_bytes;
		sum->transferred_bytes += s.transferred_bytes;
		sum->ops_in_state[s.state]++;
	}
	return physical;
}

static void abort_in_flight(void)
{
	uint64_t len = t_debug_kernel() ? 64 << 10 : 1 << 20;
	struct xferk_group_snapshot g, sum, before;
	long long exports = t_stat("exports");
	uint64_t group, gen = 0, ops[OPS], op = 0;
	int i, ret, physical;

	ret = xferk_group_create(l.x, 0xabc, &group, &gen);
	T_EXPECT(ret == 0 && gen, "group_create: %d gen %llx", ret,
		 (unsigned long long)gen);
	for (i = 0; i < OPS; i++) {
		ret = submit(group, (uint64_t)i * len, len, &ops[i]);
		if (ret) {
			T_EXPECT(0, "submit %d: %s", i, strerror(-ret));
			return;
		}
	}
	xferk_group_query(l.x, group, &before);
	ret = xferk_group_abort(l.x, group, xferk_now_ns() +
				t_scaled_ms(20000) * MS, &g);
	physical = ops_sum(ops, OPS, &sum);
	printf("group abort: %u of %d ops not settled at the abort\n",
	       OPS - before.ops_in_state[XFERK_STATE_SUCCEEDED] -
	       before.ops_in_state[XFERK_STATE_FAILED],
	       OPS);
	T_EXPECT(ret == 0, "group_abort: %s", strerror(-ret));
	T_EXPECT(physical == 1, "an op is not physically complete after the abort");
	T_EXPECT(g.ops == OPS && g.ops_physical == OPS && g.aborted &&
		 g.generation == gen && g.tag == 0xabc,
		 "snapshot: ops %u physical %u aborted %u", g.ops,
		 g.ops_physical, g.aborted);
	T_EXPECT(g.total_bytes == sum.total_bytes &&
		 g.total_bytes == OPS * len &&
		 g.transferred_bytes == sum.transferred_bytes &&
		 g.in_flight_bytes == 0 && g.quarantined_bytes == 0,
		 "sums: total %llu/%llu transferred %llu/%llu in flight %llu",
		 (unsigned long long)g.total_bytes,
		 (unsigned long long)sum.total_bytes,
		 (unsigned long long)g.transferred_bytes,
		 (unsigned long long)sum.transferred_bytes,
		 (unsigned long long)g.in_flight_bytes);
	for (i = 0; i < XFERK_STATE_COUNT; i++)
		T_EXPECT(g.ops_in_state[i] == sum.ops_in_state[i],
			 "state %s: %u in the group, %u summed",
			 xferk_state_name(i), g.ops_in_state[i],
			 sum.ops_in_state[i]);

	ret = submit(group, 0, 4096, &op);
	T_EXPECT_ERR(ret, ESHUTDOWN);
	T_EXPECT(op == 0, "a refused submit published an op");
	T_EXPECT(events_of(XFERK_EVENT_ABORTED, 0xabc, 1, t_scaled_ms(5000)) == 1,
		 "no ABORTED event");
	/* A second abort drains nothing new and sends nothing new. */
	T_EXPECT(xferk_group_abort(l.x, group, xferk_now_ns() + 1000 * MS,
				   NULL) == 0, "second abort");
	T_EXPECT(events_of(XFERK_EVENT_ABORTED, 0xabc, 2, 500) == 0,
		 "a second ABORTED event");
	for (i = 0; i < OPS; i++)
		xferk_release(l.x, ops[i]);
	/* Released ops still count in the group's sums. */
	T_EXPECT(xferk_group_query(l.x, group, &g) == 0 && g.ops == OPS &&
		 g.total_bytes == OPS * len, "sums after release: ops %u",
		 g.ops);
	T_EXPECT(xferk_group_release(l.x, group) == 0, "release");
	T_EXPECT(t_stat("exports") == exports, "exports changed");
}

/* An op that never completes by itself: QUARANTINED, then physical. */
static void abort_quarantined(void)
{
	struct xferk_group_snapshot g;
	uint64_t group, ops[2];
	int ret, i;

	if (t_quiet()) {
		T_EXPECT(0, "other ops are live");
		return;
	}
	T_EXPECT(t_param_scoped("flush_timeout_ms",
				t_debug_kernel() ? 5000 : 3000) == 0, "flush timeout");
	T_EXPECT(xferk_group_create(l.x, 0xdef, &group, NULL) == 0, "create");
	T_EXPECT(t_swallow(1) == 0, "fault");
	for (i = 0; i < 2; i++)
		T_EXPECT(submit(group, (uint64_t)i * 4096, 4096, &ops[i]) == 0,
			 "submit");
	T_EXPECT(t_fault_taken("swallow_completions", t_scaled_ms(10000)) == 0,
		 "completion not swallowed");
	ret = xferk_group_wait(l.x, group, xferk_now_ns() + 200 * MS, 0, &g);
	T_EXPECT_ERR(ret, ETIMEDOUT);
	T_EXPECT(g.ops == 2 && g.ops_physical == 1, "before: %u ops, %u physical",
		 g.ops, g.ops_physical);
	/* The drain kills the path half way; its teardown comes later. */
	ret = xferk_group_abort(l.x, group, xferk_now_ns() + 1000 * MS, &g);
	T_EXPECT_ERR(ret, ETIMEDOUT);
	T_EXPECT(g.ops_in_state[XFERK_STATE_QUARANTINED] == 1 &&
		 g.ops_physical == 1 && g.quarantined_bytes == 4096,
		 "after the abort: quarantined %u physical %u bytes %llu",
		 g.ops_in_state[XFERK_STATE_QUARANTINED], g.ops_physical,
		 (unsigned long long)g.quarantined_bytes);
	T_EXPECT(events_of(XFERK_EVENT_ABORTED, 0xdef, 1, 200) == 0,
		 "ABORTED before the drain ended");
	ret = xferk_group_wait(l.x, group,
			       xferk_now_ns() + t_scaled_ms(30000) * MS,
			       XFERK_WAIT_PHYSICAL, &g);
	T_EXPECT(ret == 0 && g.ops_physical == 2 &&
		 g.ops_in_state[XFERK_STATE_DRAINED] == 1,
		 "wait physical: %s, physical %u drained %u", strerror(-ret),
		 g.ops_physical, g.ops_in_state[XFERK_STATE_DRAINED]);
	T_EXPECT(events_of(XFERK_EVENT_ABORTED, 0xdef, 1, t_scaled_ms(20000)) == 1,
		 "no ABORTED event after the drain");
	for (i = 0; i < 2; i++)
		xferk_release(l.x, ops[i]);
	xferk_group_release(l.x, group);
	t_fault_clear();
}

/* Through io_uring: one CQE for the whole group. */
static void ring_abort(void)
{
	struct xferk_ioc_group a = { .size = sizeof(a) }, w = { .size = sizeof(w) };
	struct io_uring ring;
	uint64_t group, ops[8], ud;
	int i, res = 1, n = 0;

	T_EXPECT(xferk_group_create(l.x, 0x51, &group, NULL) == 0, "create");
	for (i = 0; i < 8; i++)
		T_EXPECT(submit(group, (uint64_t)i << 16, 1 << 16, &ops[i]) == 0,
			 "submit");
	t_ring(&ring, 8, 0, 0);
	a.group = group;
	/* Through the ring: within XFERK_URING_MAX_PARK_NS (60 s). */
	a.deadline_ns = xferk_now_ns() + 50000 * MS;
	io_uring_prep_xferk_group_abort(t_sqe(&ring), xferk_fd(l.x), &a);
	T_EXPECT(io_uring_submit(&ring) == 1, "ring submit");
	T_EXPECT(t_cqe(&ring, 60000, &res, &ud) == 0 && res == 0,
		 "abort CQE: %d", res);
	T_EXPECT(a.snap.ops == 8 && a.snap.ops_physical == 8 && a.snap.aborted,
		 "ring abort snapshot: %u ops %u physical", a.snap.ops,
		 a.snap.ops_physical);
	w.group = group;
	w.flags = XFERK_WAIT_PHYSICAL;
	w.deadline_ns = xferk_now_ns() + 1000 * MS;
	io_uring_prep_xferk_group_wait(t_sqe(&ring), xferk_fd(l.x), &w);
	T_EXPECT(io_uring_submit(&ring) == 1, "ring submit");
	T_EXPECT(t_cqe(&ring, t_scaled_ms(10000), &res, &ud) == 0 && res == 0,
		 "wait CQE: %d", res);
	while (t_cqe(&ring, 100, &res, &ud) == 0)
		n++;
	T_EXPECT(n == 0, "%d more CQEs", n);
	io_uring_queue_exit(&ring);
	for (i = 0; i < 8; i++)
		xferk_release(l.x, ops[i]);
	xferk_group_release(l.x, group);
	T_EXPECT(events_of(XFERK_EVENT_ABORTED, 0x51, 1, t_scaled_ms(5000)) == 1,
		 "no ABORTED event");
}

struct racer {
	uint64_t group;
	unsigned int delay_us;
	int ret;
};

static void *abort_later(void *arg)
{
	struct racer *r = arg;

	usleep(r->delay_us);
	r->ret = xferk_group_abort(l.x, r->group, xferk_now_ns() +
				   t_scaled_ms(20000) * MS, NULL);
	return NULL;
}

static void abort_while_submitting(void)
{
	unsigned int iter, iters = t_debug_kernel() ? 10 : 50;
	struct xferk_group_snapshot g;
	struct xferk_op_snapshot s;
	struct racer r;
	uint64_t ops[64], op;
	pthread_t t;
	int i, n, ret;

	for (iter = 0; iter < iters; iter++) {
		r = (struct racer) { .delay_us = (iter * 397) % 3000 };
		if (xferk_group_create(l.x, iter, &r.group, NULL)) {
			T_EXPECT(0, "create");
			return;
		}
		T_EXPECT(pthread_create(&t, NULL, abort_later, &r) == 0, "thread");
		for (n = 0, ret = 0; n < 64 && !ret; ) {
			ret = submit(r.group, (uint64_t)n * 4096, 4096, &op);
			if (!ret)
				ops[n++] = op;
		}
		pthread_join(t, NULL);
		T_EXPECT(ret == 0 || ret == -ESHUTDOWN, "submit: %s", strerror(-ret));
		T_EXPECT(r.ret == 0, "abort: %s", strerror(-r.ret));
		/* Whatever joined before the abort closed it is physical now. */
		for (i = 0; i < n; i++) {
			T_EXPECT(xferk_query(l.x, ops[i], &s) == 0 && s.buffer_reusable,
				 "op %d not physically complete after the abort", i);
			xferk_release(l.x, ops[i]);
		}
		T_EXPECT_ERR(submit(r.group, 0, 4096, &op), ESHUTDOWN);
		T_EXPECT(xferk_group_query(l.x, r.group, &g) == 0 && g.ops == (uint32_t)n &&
			 g.ops_physical == (uint32_t)n,
			 "group counts %u ops (%u physical), %d joined", g.ops,
			 g.ops_physical, n);
		xferk_group_release(l.x, r.group);
	}
}

static void notes_charged(void)
{
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	struct t_loop o;
	uint64_t group, op = 0;

	t_loop_open(&o, 4096, 4096);	/* a file of its own: nothing charged */
	T_EXPECT(t_param_scoped("max_chunks_per_file", 1) == 0, "limit");
	f = (struct xferk_frag) { .mr = o.src_mr, .len = 4096, .remote = o.remote,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT(xferk_group_create(o.x, 0, &group, NULL) == 0, "create");
	T_EXPECT_ERR(xferk_submit_group(o.x, &f, 1, XFERK_DEADLINE_NONE, NULL,
					group, 0, &op), EBUSY);
	T_EXPECT(op == 0, "a refused submit published an op");
	T_EXPECT(xferk_submit(o.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0 &&
		 xferk_wait(o.x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL,
			    &s) == 0 && s.state == XFERK_STATE_SUCCEEDED,
		 "the same op without the group");
	t_restore_params();
	xferk_close(o.x);
}

static int group_raw(unsigned long cmd, struct xferk_ioc_group *a)
{
	return ioctl(xferk_fd(l.x), cmd, a) ? -errno : 0;
}

static void bad_input(void)
{
	struct xferk_ioc_group_create c = { .size = sizeof(c) };
	struct xferk_ioc_group a;
	uint64_t group, g2, op = 0;
	int ret, i;

	T_EXPECT(xferk_group_create(l.x, 0, &group, NULL) == 0, "create");
	c.flags = 1;
	T_EXPECT_ERR(ioctl(xferk_fd(l.x), XFERK_IOC_GROUP_CREATE, &c) ? -errno : 0,
		     EINVAL);
	c.flags = 0;
	c.reserved[1] = 1;
	T_EXPECT_ERR(ioctl(xferk_fd(l.x), XFERK_IOC_GROUP_CREATE, &c) ? -errno : 0,
		     EINVAL);
#define CHECK(cmd, err, change)						\
	do {								\
		a = (struct xferk_ioc_group) { .size = sizeof(a),	\
					       .group = group };	\
		change;							\
		T_EXPECT_ERR(group_raw(cmd, &a), err);			\
	} while (0)
	CHECK(XFERK_IOC_GROUP_ABORT, EINVAL, a.flags = 1);
	CHECK(XFERK_IOC_GROUP_WAIT, EINVAL, a.flags = 2);
	CHECK(XFERK_IOC_GROUP_QUERY, EINVAL, a.deadline_ns = 1);
	CHECK(XFERK_IOC_GROUP_QUERY, EINVAL, a.group = 0);
	CHECK(XFERK_IOC_GROUP_QUERY, EINVAL, a.group = l.conn);
	CHECK(XFERK_IOC_GROUP_ABORT, EINVAL, a.group = l.src_mr);
#undef CHECK
	/* A submit naming something that is not a group publishes nothing. */
	ret = submit(l.conn, 0, 4096, &op);
	T_EXPECT_ERR(ret, EINVAL);
	T_EXPECT(xferk_group_release(l.x, group) == 0, "release");
	ret = submit(group, 0, 4096, &op);
	T_EXPECT_ERR(ret, ESTALE);
	T_EXPECT(op == 0, "a refused submit published an op");
	T_EXPECT_ERR(xferk_group_release(l.x, group), ESTALE);
	T_EXPECT_ERR(xferk_group_query(l.x, group, &a.snap), ESTALE);

	/* Too many groups in one file. */
	T_EXPECT(t_param_scoped("max_groups_per_file", 4) == 0, "limit");
	for (i = 0; i < 4; i++)
		T_EXPECT(xferk_group_create(l.x, 0, &g2, NULL) == 0, "create %d", i);
	T_EXPECT_ERR(xferk_group_create(l.x, 0, &g2, NULL), EMFILE);
	T_EXPECT(xferk_group_release(l.x, g2) == 0, "release");
	T_EXPECT(xferk_group_create(l.x, 0, &g2, NULL) == 0, "create after release");
	t_restore_params();
}

int main(void)
{
	struct xferk_token tok;
	int ret;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	atexit(restore);
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_loop_open(&l, OPS << 20, OPS << 20);
	/* The ops write into an export, whose target learns of the abort. */
	ret = xferk_export(l.x, l.conn, l.dst_mr, 0, OPS << 20, RW, &tok, &win);
	if (!ret)
		ret = xferk_import(l.x, l.conn, &tok, &win_rm);
	if (ret) {
		fprintf(stderr, "window: %s\n", strerror(-ret));
		return T_FAIL;
	}
	abort_in_flight();
	ring_abort();
	abort_while_submitting();
	bad_input();
	notes_charged();
	abort_quarantined();
	return t_result();
}
