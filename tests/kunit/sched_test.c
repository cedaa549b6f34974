// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite "xferk_sched": the admission queue's scheduler model
 * (kmod/sched.c): all-or-nothing admission by reason, byte-fair shares
 * for given weights, the aging bound, windows never exceeded, reserved
 * internal credits, cancel of queued items, full sessions skipped without
 * lookahead, parked chunks out of the device window, and the QPs' bytes in
 * flight within their dynamic limit.
 */
#include <kunit/test.h>
#include <linux/prandom.h>

#include "../../kmod/sched.h"

#define KIB	1024ULL
#define MSEC	1000000LL

static const struct xferk_sched_limits base_limits = {
	.weight = { [XFERK_PRIO_NORMAL] = 2, [XFERK_PRIO_CRITICAL] = 4,
		    [XFERK_PRIO_BULK] = 1 },
	.quantum_bytes = 4096,
	.aging_ns = 1000000 * MSEC,	/* effectively off */
	.max_queued_ops = 1 << 20,
	.max_queued_bytes = 1ULL << 40,
	.file_max_ops = 1 << 20,
	.file_max_bytes = 1ULL << 40,
	.internal_reserved_ops = 0,
	.qp_window = 1 << 20,
	.qp_window_bytes_min = 1ULL << 40,	/* no byte limit: see sched_qp_bytes */
	.qp_window_bytes_max = 1ULL << 40,
	.internal_reserved_wrs = 0,
	.dev_window_bytes = 1ULL << 40,
	.op_window_bytes = 1ULL << 40,
	.op_window_chunks = 1 << 20,
	.lookahead = 32,
};

struct env {
	struct xferk_sched_limits lim;
	struct xferk_sched s;
	struct xferk_sched_account acct;
	struct xferk_sched_qp qp;
};

static struct env *env_new(struct kunit *test)
{
	struct env *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, e);
	e->lim = base_limits;
	xferk_sched_init(&e->s, &e->lim);
	xferk_sched_qp_init(&e->qp);
	return e;
}

/* Another session's window; off the stack (struct dql is cacheline aligned). */
static struct xferk_sched_qp *qp_new(struct kunit *test)
{
	struct xferk_sched_qp *qp = kunit_kzalloc(test, sizeof(*qp), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, qp);
	xferk_sched_qp_init(qp);
	return qp;
}

/* An item of @chunks chunks of @len bytes in class @prio, on e->qp. */
static struct xferk_sched_item *item(struct kunit *test, struct env *e,
				     u8 prio, u32 chunks, u64 len)
{
	struct xferk_sched_item *it = kunit_kzalloc(test, sizeof(*it), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, it);
	INIT_LIST_HEAD(&it->node);
	it->prio = prio;
	it->bytes = chunks * len;
	it->undispatched_chunks = chunks;
	it->next_len = len;
	it->next_qp = &e->qp;
	it->window_bytes = e->lim.op_window_bytes;
	it->window_chunks = e->lim.op_window_chunks;
	return it;
}

/* Admits and starts (puts on its class list), as queue.c does. */
static int admit(struct env *e, struct xferk_sched_item *it, ktime_t now)
{
	int ret = xferk_sched_admit(&e->s, it, &e->acct, now);

	if (!ret)
		xferk_sched_start(&e->s, it, now);
	return ret;
}

static void sched_admit_all_or_nothing(struct kunit *test)
{
	struct env *e = env_new(test);
	struct xferk_sched_item *a, *b, *c;

	e->lim.max_queued_ops = 2;
	e->lim.max_queued_bytes = 100 * KIB;
	e->lim.file_max_bytes = 80 * KIB;
	a = item(test, e, XFERK_PRIO_NORMAL, 4, 8 * KIB);
	b = item(test, e, XFERK_PRIO_BULK, 4, 8 * KIB);
	KUNIT_ASSERT_EQ(test, admit(e, a, 0), 0);

	/* Too many bytes for the queue: refused, nothing charged. */
	c = item(test, e, XFERK_PRIO_NORMAL, 1, 80 * KIB);
	KUNIT_EXPECT_EQ(test, admit(e, c, 0), -EBUSY);
	KUNIT_EXPECT_EQ(test, e->s.stats.rejects[XFERK_REJECT_QUEUED_BYTES], 1ULL);
	KUNIT_EXPECT_EQ(test, e->acct.ops, 1U);
	KUNIT_EXPECT_EQ(test, e->acct.bytes, 32 * KIB);
	KUNIT_EXPECT_EQ(test, e->s.cls[XFERK_PRIO_NORMAL].ops, 1U);
	KUNIT_EXPECT_EQ(test, e->s.cls[XFERK_PRIO_NORMAL].bytes, 32 * KIB);

	KUNIT_ASSERT_EQ(test, admit(e, b, 0), 0);
	c = item(test, e, XFERK_PRIO_CRITICAL, 1, 4 * KIB);
	KUNIT_EXPECT_EQ(test, admit(e, c, 0), -EBUSY);
	KUNIT_EXPECT_EQ(test, e->s.stats.rejects[XFERK_REJECT_QUEUED_OPS], 1ULL);

	/* The file's own limits count what it has admitted and not done. */
	e->lim.max_queued_ops = 10;
	e->lim.file_max_ops = 2;
	KUNIT_EXPECT_EQ(test, admit(e, c, 0), -EBUSY);
	KUNIT_EXPECT_EQ(test, e->s.stats.rejects[XFERK_REJECT_FILE_OPS], 1ULL);
	e->lim.file_max_ops = 10;
	c = item(test, e, XFERK_PRIO_CRITICAL, 1, 32 * KIB);
	KUNIT_EXPECT_EQ(test, admit(e, c, 0), -EBUSY);
	KUNIT_EXPECT_EQ(test, e->s.stats.rejects[XFERK_REJECT_FILE_BYTES], 1ULL);
	KUNIT_EXPECT_EQ(test, e->acct.ops, 2U);
	KUNIT_EXPECT_EQ(test, e->s.stats.enqueued, 2ULL);
}

/* Dispatches and completes at once, @n times; bytes per class. */
static void run_busy(struct env *e, u32 n, u64 *bytes)
{
	struct xferk_sched_item *it;
	u32 i;

	for (i = 0; i < n; i++) {
		it = xferk_sched_next(&e->s, 0);
		if (!it)
			break;
		bytes[it->prio] += it->next_len;
		xferk_sched_complete(&e->s, it, it->next_len, it->next_qp, 0);
	}
}

/*
 * Every class always backlogged, with different chunk sizes: each gets
 * weight / sum of weights of the bytes, within 5 %.
 */
static void sched_byte_fair_shares(struct kunit *test)
{
	static const u64 chunk[XFERK_PRIO_INTERNAL] = {
		[XFERK_PRIO_NORMAL] = 64 * KIB,
		[XFERK_PRIO_CRITICAL] = 4 * KIB,
		[XFERK_PRIO_BULK] = 16 * KIB,
	};
	u64 bytes[XFERK_PRIO_COUNT] = {}, total = 0;
	struct env *e = env_new(test);
	int p;

	for (p = 0; p < XFERK_PRIO_INTERNAL; p++)
		KUNIT_ASSERT_EQ(test, admit(e, item(test, e, p, 1 << 20, chunk[p]), 0), 0);
	run_busy(e, 20000, bytes);
	for (p = 0; p < XFERK_PRIO_INTERNAL; p++)
		total += bytes[p];
	for (p = 0; p < XFERK_PRIO_INTERNAL; p++) {
		u64 want = div_u64(total * e->lim.weight[p], 7);

		KUNIT_EXPECT_LE_MSG(test, abs((s64)(bytes[p] - want)),
				    (s64)div_u64(want, 20),
				    "class %d: %llu bytes of %llu, want %llu",
				    p, bytes[p], total, want);
	}
}

/*
 * Critical work with a thousand times bulk's weight is always backlogged:
 * without aging bulk would wait a thousand critical chunks per round. With
 * aging_ns = 10 ms and one pick every 100 us, a bulk chunk goes at least
 * every 10 ms + one pick.
 */
static void sched_aging_bound(struct kunit *test)
{
	struct env *e = env_new(test);
	s64 step = MSEC / 10, last_bulk = 0, max_gap = 0, t;
	struct xferk_sched_item *it, *crit, *bulk_item;
	u32 bulk = 0;

	e->lim.weight[XFERK_PRIO_CRITICAL] = 1000;
	e->lim.weight[XFERK_PRIO_BULK] = 1;
	e->lim.quantum_bytes = 64 * KIB;
	e->lim.aging_ns = 10 * MSEC;
	crit = item(test, e, XFERK_PRIO_CRITICAL, 1 << 20, 64 * KIB);
	bulk_item = item(test, e, XFERK_PRIO_BULK, 1 << 20, 64 * KIB);
	KUNIT_ASSERT_EQ(test, admit(e, crit, 0), 0);
	KUNIT_ASSERT_EQ(test, admit(e, bulk_item, 0), 0);
	for (t = step; t <= 1000 * MSEC; t += step) {
		it = xferk_sched_next(&e->s, t);
		KUNIT_ASSERT_NOT_NULL(test, it);
		if (it->prio == XFERK_PRIO_BULK) {
			max_gap = max(max_gap, t - last_bulk);
			last_bulk = t;
			bulk++;
		}
		xferk_sched_complete(&e->s, it, it->next_len, it->next_qp, 0);
	}
	KUNIT_EXPECT_LE(test, max_gap, 10 * MSEC + step);
	KUNIT_EXPECT_GE(test, bulk, 90U);	/* ~1000 ms / 10.1 ms */
	KUNIT_EXPECT_GT(test, e->s.stats.aged, 0ULL);

	/* Aging does not hand bulk the device: critical keeps most of it. */
	KUNIT_EXPECT_LE(test, bulk, 200U);
}

/*
 * Random items on three sessions, windows and completion order: no op, QP
 * or device window is ever exceeded (beyond the one chunk an empty window
 * always admits), and with a short lookahead, while items block on full
 * sessions and come back, something is always eligible or in flight.
 */
static void sched_windows_never_exceeded(struct kunit *test)
{
	const u32 nr_items = 64, max_inflight = 256, nr_qps = 3;
	struct xferk_sched_item **inflight, **items;
	struct env *e = env_new(test);
	struct xferk_sched_qp *qps;
	struct rnd_state rnd;
	u32 n = 0, i, done = 0, dispatched = 0;

	inflight = kunit_kcalloc(test, max_inflight, sizeof(*inflight), GFP_KERNEL);
	items = kunit_kcalloc(test, nr_items, sizeof(*items), GFP_KERNEL);
	qps = kunit_kcalloc(test, nr_qps, sizeof(*qps), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, inflight);
	KUNIT_ASSERT_NOT_NULL(test, items);
	KUNIT_ASSERT_NOT_NULL(test, qps);
	prandom_seed_state(&rnd, 42);
	e->lim.qp_window = 8;
	e->lim.qp_window_bytes_min = 0;
	e->lim.qp_window_bytes_max = 192 * KIB;
	e->lim.dev_window_bytes = 256 * KIB;
	e->lim.lookahead = 4;
	for (i = 0; i < nr_qps; i++)
		xferk_sched_qp_init(&qps[i]);
	for (i = 0; i < nr_items; i++) {
		items[i] = item(test, e, prandom_u32_state(&rnd) % XFERK_PRIO_INTERNAL,
				1 + prandom_u32_state(&rnd) % 16,
				4 * KIB << (prandom_u32_state(&rnd) % 5));
		items[i]->window_chunks = 1 + prandom_u32_state(&rnd) % 4;
		items[i]->window_bytes = 16 * KIB << (prandom_u32_state(&rnd) % 4);
		items[i]->next_qp = &qps[prandom_u32_state(&rnd) % nr_qps];
		KUNIT_ASSERT_EQ(test, admit(e, items[i], 0), 0);
	}
	while (done < nr_items) {
		struct xferk_sched_item *it = xferk_sched_next(&e->s, 0);

		if (it) {
			dispatched++;
			KUNIT_ASSERT_LT(test, n, max_inflight);
			inflight[n++] = it;
			KUNIT_EXPECT_TRUE(test, it->inflight_chunks == 1 ||
					  (it->inflight_chunks <= it->window_chunks &&
					   it->inflight_bytes <= it->window_bytes));
			KUNIT_EXPECT_LE(test, it->next_qp->outstanding, e->lim.qp_window);
			/* Below the byte bound before this chunk. */
			KUNIT_EXPECT_LT(test, it->next_qp->inflight_bytes - it->next_len,
					e->lim.qp_window_bytes_max);
			KUNIT_EXPECT_TRUE(test, e->s.inflight_chunks == 1 ||
					  e->s.inflight_bytes <= e->lim.dev_window_bytes);
			if (prandom_u32_state(&rnd) % 3)
				continue;
		}
		KUNIT_ASSERT_GT(test, n, 0U);	/* nothing eligible, nothing in flight */
		i = prandom_u32_state(&rnd) % n;
		it = inflight[i];
		inflight[i] = inflight[--n];
		/* All chunks of an item have the same length here. */
		done += xferk_sched_complete(&e->s, it, it->next_len, it->next_qp, 0);
	}
	KUNIT_EXPECT_TRUE(test, xferk_sched_empty(&e->s));
	KUNIT_EXPECT_EQ(test, e->acct.ops, 0U);
	KUNIT_EXPECT_EQ(test, e->acct.bytes, 0ULL);
	KUNIT_EXPECT_EQ(test, (u64)dispatched, e->s.stats.dispatched);
}

/* The internal class's reserved credits are out of user traffic's reach. */
static void sched_internal_reserved(struct kunit *test)
{
	struct env *e = env_new(test);
	struct xferk_sched_item *user, *user2, *internal;
	u32 i;

	e->lim.max_queued_ops = 1;
	e->lim.internal_reserved_ops = 1;
	e->lim.qp_window = 2;
	e->lim.internal_reserved_wrs = 1;
	user = item(test, e, XFERK_PRIO_CRITICAL, 8, 4 * KIB);
	user2 = item(test, e, XFERK_PRIO_CRITICAL, 8, 4 * KIB);
	internal = item(test, e, XFERK_PRIO_INTERNAL, 8, 4 * KIB);
	KUNIT_ASSERT_EQ(test, admit(e, user, 0), 0);
	KUNIT_EXPECT_EQ(test, admit(e, user2, 0), -EBUSY);
	KUNIT_ASSERT_EQ(test, admit(e, internal, 0), 0);

	/* Internal goes first, and only it may use the reserved slot. */
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), internal);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	KUNIT_EXPECT_EQ(test, e->qp.outstanding, 3U);
	xferk_sched_complete(&e->s, internal, 4 * KIB, &e->qp, 0);
	xferk_sched_complete(&e->s, internal, 4 * KIB, &e->qp, 0);
	/* Two free slots below the user window, one of them reserved: */
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), internal);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), internal);
	xferk_sched_cancel(&e->s, internal);
	for (i = 0; i < 3; i++)
		xferk_sched_complete(&e->s, internal, 4 * KIB, &e->qp, 0);
	KUNIT_EXPECT_EQ(test, internal->state, (u8)XFERK_Q_DONE);
	/* User traffic fills its window and stops there. */
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), user);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), user);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	KUNIT_EXPECT_EQ(test, e->qp.outstanding, 2U);
}

/*
 * A session of several QPs has a window per QP: qp_window (and the
 * internal reserve) times nr_qps; 0 QPs counts as one.
 */
static void sched_window_per_qp(struct kunit *test)
{
	struct env *e = env_new(test);
	struct xferk_sched_item *user, *internal;
	u32 i;

	e->lim.qp_window = 2;
	e->lim.internal_reserved_wrs = 1;
	e->qp.nr_qps = 3;
	user = item(test, e, XFERK_PRIO_NORMAL, 16, 4 * KIB);
	internal = item(test, e, XFERK_PRIO_INTERNAL, 16, 4 * KIB);
	KUNIT_ASSERT_EQ(test, admit(e, user, 0), 0);
	for (i = 0; i < 6; i++)
		KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), user);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	KUNIT_ASSERT_EQ(test, admit(e, internal, 0), 0);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), internal);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	KUNIT_EXPECT_EQ(test, e->qp.outstanding, 9U);

	KUNIT_EXPECT_EQ(test, xferk_sched_qp_window(&e->qp, 8), 24U);
	e->qp.nr_qps = 0;
	KUNIT_EXPECT_EQ(test, xferk_sched_qp_window(&e->qp, 8), 8U);
	e->qp.nr_qps = 3;
	xferk_sched_cancel(&e->s, user);
	xferk_sched_cancel(&e->s, internal);
	for (i = 0; i < 6; i++)
		xferk_sched_complete(&e->s, user, 4 * KIB, &e->qp, 0);
	for (i = 0; i < 3; i++)
		xferk_sched_complete(&e->s, internal, 4 * KIB, &e->qp, 0);
	KUNIT_EXPECT_EQ(test, e->qp.outstanding, 0U);
}

/* Dispatches @e->qp's user chunks until none may go; returns how many. */
static u32 fill_qp(struct kunit *test, struct env *e,
		   struct xferk_sched_item *it)
{
	u32 n = 0;

	while (xferk_sched_next(&e->s, 0) == it)
		n++;
	KUNIT_EXPECT_EQ(test, e->qp.inflight_bytes, (u64)it->inflight_bytes);
	return n;
}

/* Completes every chunk @it has in flight, one at a time. */
static void complete_inflight(struct env *e, struct xferk_sched_item *it)
{
	while (it->inflight_chunks)
		xferk_sched_complete(&e->s, it, it->next_len, it->next_qp, 0);
}

/*
 * A QP's user bytes in flight follow the dynamic queue limit: one chunk
 * at first, more only once the QP ran dry over its limit, never more than
 * one chunk beyond qp_window_bytes_max (times the session's QPs); below
 * qp_window_bytes_min the limit is not asked; the internal class is not
 * held by it; a critical chunk that waited for bytes goes first once a
 * completion makes room.
 */
static void sched_qp_bytes(struct kunit *test)
{
	struct xferk_sched_item *bulk, *crit, *internal;
	struct env *e = env_new(test);
	struct xferk_sched_qp *qp2;
	u32 n, prev = 1, rounds;

	e->lim.qp_window = 64;
	e->lim.qp_window_bytes_min = 0;
	e->lim.qp_window_bytes_max = 1024 * KIB;
	bulk = item(test, e, XFERK_PRIO_BULK, 1000, 128 * KIB);
	KUNIT_ASSERT_EQ(test, admit(e, bulk, 0), 0);
	KUNIT_EXPECT_EQ(test, fill_qp(test, e, bulk), 1U);

	internal = item(test, e, XFERK_PRIO_INTERNAL, 1, 128 * KIB);
	KUNIT_ASSERT_EQ(test, admit(e, internal, 0), 0);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), internal);
	xferk_sched_complete(&e->s, internal, 128 * KIB, &e->qp, 0);

	/* Ran dry each round with chunks waiting: the limit grows to max. */
	for (rounds = 0; rounds < 10; rounds++) {
		complete_inflight(e, bulk);
		n = fill_qp(test, e, bulk);
		KUNIT_EXPECT_GE(test, n, prev);
		KUNIT_EXPECT_LE(test, n, 8U);
		prev = n;
	}
	KUNIT_EXPECT_EQ(test, prev, 8U);

	/* The critical chunk waits for a completion, then goes first. */
	crit = item(test, e, XFERK_PRIO_CRITICAL, 1, 64 * KIB);
	KUNIT_ASSERT_EQ(test, admit(e, crit, 0), 0);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	xferk_sched_complete(&e->s, bulk, 128 * KIB, &e->qp, 0);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), crit);
	xferk_sched_complete(&e->s, crit, 64 * KIB, &e->qp, 0);
	complete_inflight(e, bulk);
	KUNIT_EXPECT_EQ(test, e->qp.inflight_bytes, 0ULL);

	/* Three QPs: three times the bytes. */
	e->qp.nr_qps = 3;
	e->lim.qp_window_bytes_max = 256 * KIB;
	KUNIT_EXPECT_EQ(test, fill_qp(test, e, bulk), 6U);
	complete_inflight(e, bulk);

	/* A new QP: below the minimum, the limit is not asked. */
	qp2 = qp_new(test);
	bulk->next_qp = qp2;
	e->lim.qp_window_bytes_min = 512 * KIB;
	e->lim.qp_window_bytes_max = 1024 * KIB;
	n = 0;
	while (xferk_sched_next(&e->s, 0) == bulk)
		n++;
	KUNIT_EXPECT_EQ(test, n, 4U);
	KUNIT_EXPECT_EQ(test, qp2->inflight_bytes, 512 * KIB);
	complete_inflight(e, bulk);
	xferk_sched_cancel(&e->s, bulk);
	KUNIT_EXPECT_TRUE(test, xferk_sched_empty(&e->s));
}

/* Cancel takes queued items off the queue; in-flight chunks stay charged. */
static void sched_cancel_queued(struct kunit *test)
{
	struct env *e = env_new(test);
	struct xferk_sched_item *a, *b;

	a = item(test, e, XFERK_PRIO_NORMAL, 4, 8 * KIB);
	b = item(test, e, XFERK_PRIO_NORMAL, 4, 8 * KIB);
	KUNIT_ASSERT_EQ(test, admit(e, a, 0), 0);
	KUNIT_ASSERT_EQ(test, admit(e, b, 0), 0);
	KUNIT_ASSERT_PTR_EQ(test, xferk_sched_next(&e->s, 0), a);
	KUNIT_EXPECT_EQ(test, a->state, (u8)XFERK_Q_DISPATCHING);

	KUNIT_EXPECT_EQ(test, xferk_sched_cancel(&e->s, a), 3U);
	KUNIT_EXPECT_EQ(test, a->state, (u8)XFERK_Q_SUBMITTED);
	KUNIT_EXPECT_EQ(test, xferk_sched_cancel(&e->s, b), 4U);
	KUNIT_EXPECT_EQ(test, b->state, (u8)XFERK_Q_DONE);
	KUNIT_EXPECT_EQ(test, xferk_sched_cancel(&e->s, b), 0U);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	KUNIT_EXPECT_EQ(test, e->s.cls[XFERK_PRIO_NORMAL].ops, 0U);
	KUNIT_EXPECT_EQ(test, e->s.cls[XFERK_PRIO_NORMAL].bytes, 0ULL);
	KUNIT_EXPECT_EQ(test, e->acct.ops, 1U);
	KUNIT_EXPECT_FALSE(test, xferk_sched_empty(&e->s));

	KUNIT_EXPECT_TRUE(test, xferk_sched_complete(&e->s, a, 8 * KIB, &e->qp, 0));
	KUNIT_EXPECT_EQ(test, a->state, (u8)XFERK_Q_DONE);
	KUNIT_EXPECT_EQ(test, e->acct.ops, 0U);
	KUNIT_EXPECT_EQ(test, e->acct.bytes, 0ULL);
	KUNIT_EXPECT_TRUE(test, xferk_sched_empty(&e->s));
	KUNIT_EXPECT_EQ(test, e->s.stats.cancelled, 2ULL);
}

/*
 * A session whose window is full (or that is stuck reconnecting) does not
 * hide the items behind its own, however many it has queued: they wait on
 * its QP, uncounted by the lookahead, and come back in order as its
 * window frees, one at a time, also when the first to come back is
 * cancelled.
 */
static void sched_full_session_skipped(struct kunit *test)
{
	struct xferk_sched_item *stuck[40], *other, *it;
	struct env *e = env_new(test);
	struct xferk_sched_qp *qp2;
	u32 i;

	e->lim.qp_window = 2;
	qp2 = qp_new(test);
	for (i = 0; i < ARRAY_SIZE(stuck); i++) {
		stuck[i] = item(test, e, XFERK_PRIO_NORMAL, 4, 4 * KIB);
		KUNIT_ASSERT_EQ(test, admit(e, stuck[i], 0), 0);
	}
	other = item(test, e, XFERK_PRIO_NORMAL, 4, 4 * KIB);
	other->next_qp = qp2;
	KUNIT_ASSERT_EQ(test, admit(e, other, 0), 0);

	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), stuck[0]);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), stuck[0]);
	/* e->qp is full: the 40 behind it must not hide @other (lookahead 32). */
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), other);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), other);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));

	/* One slot frees: the first blocked one (stuck[0]) takes it. */
	xferk_sched_complete(&e->s, stuck[0], 4 * KIB, &e->qp, 0);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), stuck[0]);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));

	/* The one that came back is cancelled: the next one comes back. */
	xferk_sched_cancel(&e->s, stuck[0]);
	xferk_sched_complete(&e->s, stuck[0], 4 * KIB, &e->qp, 0);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), stuck[1]);
	xferk_sched_complete(&e->s, stuck[0], 4 * KIB, &e->qp, 0);
	it = xferk_sched_next(&e->s, 0);
	KUNIT_EXPECT_TRUE(test, it == stuck[1] || it == stuck[2]);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	KUNIT_EXPECT_EQ(test, e->qp.outstanding, 2U);

	for (i = 0; i < ARRAY_SIZE(stuck); i++)
		xferk_sched_cancel(&e->s, stuck[i]);
	xferk_sched_cancel(&e->s, other);
	KUNIT_EXPECT_TRUE(test, list_empty(&e->qp.blocked[XFERK_PRIO_NORMAL]));
	KUNIT_EXPECT_EQ(test, e->s.cls[XFERK_PRIO_NORMAL].ops, 0U);
}

/*
 * Several slots free at once (a batch of completions): the items blocked
 * on the session come back, and go, in the order they were admitted
 * (regression: each came back at the head of its class, so they went in
 * reverse, and notifications arrived out of submit order).
 */
static void sched_blocked_keep_order(struct kunit *test)
{
	struct xferk_sched_item *it[10];
	struct env *e = env_new(test);
	u32 i;

	e->lim.qp_window = 4;
	for (i = 0; i < ARRAY_SIZE(it); i++) {
		it[i] = item(test, e, XFERK_PRIO_NORMAL, 1, 4 * KIB);
		KUNIT_ASSERT_EQ(test, admit(e, it[i], 0), 0);
	}
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), it[i]);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	for (i = 0; i < 3; i++)
		xferk_sched_complete(&e->s, it[i], 4 * KIB, &e->qp, 0);
	for (i = 4; i < 7; i++)
		KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), it[i]);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	for (i = 3; i < 7; i++)
		xferk_sched_complete(&e->s, it[i], 4 * KIB, &e->qp, 0);
	for (i = 7; i < 10; i++)
		KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), it[i]);
}

/*
 * An item whose own window is full is passed over, not blocked on its
 * next QP: a slot that frees there goes to an item that can use it (when
 * the first blocked one could not go, the others waited on a QP with
 * room for as long as its own chunks took, elsewhere).
 */
static void sched_room_goes_to_who_can_use_it(struct kunit *test)
{
	struct env *e = env_new(test);
	struct xferk_sched_item *f, *p, *b;
	struct xferk_sched_qp *dead;

	dead = qp_new(test);
	e->lim.qp_window = 2;
	f = item(test, e, XFERK_PRIO_NORMAL, 2, 4 * KIB);
	p = item(test, e, XFERK_PRIO_NORMAL, 4, 4 * KIB);
	p->window_chunks = 1;
	p->next_qp = dead;
	b = item(test, e, XFERK_PRIO_NORMAL, 1, 4 * KIB);
	KUNIT_ASSERT_EQ(test, admit(e, f, 0), 0);
	KUNIT_ASSERT_EQ(test, admit(e, p, 0), 0);
	KUNIT_ASSERT_EQ(test, admit(e, b, 0), 0);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), f);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), f);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), p);
	p->next_qp = &e->qp;	/* its next chunk is for the full QP */
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));

	xferk_sched_complete(&e->s, f, 4 * KIB, &e->qp, 0);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), b);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	xferk_sched_complete(&e->s, p, 4 * KIB, dead, 0);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));	/* Y is full */
	xferk_sched_complete(&e->s, f, 4 * KIB, &e->qp, 0);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), p);
}

/*
 * Parked chunks (their session waits for a path) leave the device window
 * to the others, and count again once they are posted.
 */
static void sched_parked_free_device_window(struct kunit *test)
{
	struct env *e = env_new(test);
	struct xferk_sched_item *a, *b;
	struct xferk_sched_qp *qp2;

	qp2 = qp_new(test);
	e->lim.dev_window_bytes = 8 * KIB;
	a = item(test, e, XFERK_PRIO_NORMAL, 2, 4 * KIB);
	b = item(test, e, XFERK_PRIO_NORMAL, 4, 4 * KIB);
	b->next_qp = qp2;
	KUNIT_ASSERT_EQ(test, admit(e, a, 0), 0);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), a);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), a);
	KUNIT_ASSERT_EQ(test, admit(e, b, 0), 0);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));

	xferk_sched_park(&e->s, 4 * KIB);
	xferk_sched_park(&e->s, 4 * KIB);
	KUNIT_EXPECT_EQ(test, e->s.parked_bytes, 8 * KIB);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), b);
	KUNIT_EXPECT_PTR_EQ(test, xferk_sched_next(&e->s, 0), b);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	KUNIT_EXPECT_EQ(test, e->qp.outstanding, 2U);	/* still a's QP's */

	/* Posted again: over the window until enough completes. */
	xferk_sched_unpark(&e->s, 4 * KIB);
	xferk_sched_unpark(&e->s, 4 * KIB);
	KUNIT_EXPECT_EQ(test, e->s.inflight_bytes, 16 * KIB);
	KUNIT_EXPECT_EQ(test, e->s.parked_bytes, 0ULL);
	xferk_sched_complete(&e->s, b, 4 * KIB, qp2, 0);
	KUNIT_EXPECT_NULL(test, xferk_sched_next(&e->s, 0));
	xferk_sched_complete(&e->s, a, 4 * KIB, &e->qp, 0);
	xferk_sched_complete(&e->s, a, 4 * KIB, &e->qp, 0);
	KUNIT_EXPECT_NOT_NULL(test, xferk_sched_next(&e->s, 0));
}

static void sched_hist_buckets(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, xferk_hist_bucket(-5), 0U);
	KUNIT_EXPECT_EQ(test, xferk_hist_bucket(999), 0U);
	KUNIT_EXPECT_EQ(test, xferk_hist_bucket(1000), 0U);
	KUNIT_EXPECT_EQ(test, xferk_hist_bucket(2000), 1U);
	KUNIT_EXPECT_EQ(test, xferk_hist_bucket(1000 * MSEC), 19U);	/* 2^19 us */
	KUNIT_EXPECT_EQ(test, xferk_hist_bucket(S64_MAX), XFERK_HIST_BUCKETS - 1);
}

static struct kunit_case xferk_sched_cases[] = {
	KUNIT_CASE(sched_admit_all_or_nothing),
	KUNIT_CASE(sched_byte_fair_shares),
	KUNIT_CASE(sched_aging_bound),
	KUNIT_CASE(sched_windows_never_exceeded),
	KUNIT_CASE(sched_internal_reserved),
	KUNIT_CASE(sched_window_per_qp),
	KUNIT_CASE(sched_qp_bytes),
	KUNIT_CASE(sched_cancel_queued),
	KUNIT_CASE(sched_full_session_skipped),
	KUNIT_CASE(sched_room_goes_to_who_can_use_it),
	KUNIT_CASE(sched_blocked_keep_order),
	KUNIT_CASE(sched_parked_free_device_window),
	KUNIT_CASE(sched_hist_buckets),
	{}
};

static struct kunit_suite xferk_sched_suite = {
	.name = "xferk_sched",
	.test_cases = xferk_sched_cases,
};

kunit_test_suite(xferk_sched_suite);
