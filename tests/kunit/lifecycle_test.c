// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite "xferk_lifecycle": the op state machine, first-failure
 * immutability, exactly-once physical completion under every order of
 * racing events, and deadline arithmetic (kmod/lifecycle.c).
 */
#include <kunit/test.h>

#include "../../kmod/lifecycle.h"

#define ST(x)	XFERK_STATE_##x

struct transition_case {
	u32 from, to;
};

/* Every legal transition; all other (from, to) pairs must be refused. */
static const struct transition_case legal[] = {
	{ ST(SUBMITTED), ST(IN_PROGRESS) },
	{ ST(SUBMITTED), ST(SUCCEEDED) },
	{ ST(SUBMITTED), ST(FAILED) },
	{ ST(SUBMITTED), ST(TIMED_OUT) },
	{ ST(SUBMITTED), ST(CANCEL_REQUESTED) },
	{ ST(IN_PROGRESS), ST(SUCCEEDED) },
	{ ST(IN_PROGRESS), ST(FAILED) },
	{ ST(IN_PROGRESS), ST(TIMED_OUT) },
	{ ST(IN_PROGRESS), ST(CANCEL_REQUESTED) },
	{ ST(TIMED_OUT), ST(CANCEL_REQUESTED) },
	{ ST(CANCEL_REQUESTED), ST(DRAINING) },
	{ ST(CANCEL_REQUESTED), ST(DRAINED) },
	{ ST(DRAINING), ST(DRAINED) },
	{ ST(DRAINING), ST(QUARANTINED) },
	{ ST(QUARANTINED), ST(DRAINING) },
	{ ST(QUARANTINED), ST(DRAINED) },
};

static void life_transition_table(struct kunit *test)
{
	u32 from, to;
	int i;

	for (from = 0; from <= XFERK_STATE_COUNT; from++) {
		for (to = 0; to <= XFERK_STATE_COUNT; to++) {
			bool want = false;

			for (i = 0; i < ARRAY_SIZE(legal); i++)
				if (legal[i].from == from && legal[i].to == to)
					want = true;
			KUNIT_EXPECT_EQ_MSG(test,
					    xferk_state_transition_allowed(from, to),
					    want, "%s -> %s", xferk_state_name(from),
					    xferk_state_name(to));
		}
	}
}

static void life_success(struct kunit *test)
{
	struct xferk_life l;
	struct xferk_op_snapshot s;
	unsigned int r;

	xferk_life_init(&l, 300, 2, 3, 1000);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(SUBMITTED));
	KUNIT_EXPECT_EQ(test, xferk_life_posted(&l, 100), XFERK_LIFE_WAKE);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(IN_PROGRESS));
	KUNIT_EXPECT_EQ(test, xferk_life_posted(&l, 100), 0U);
	KUNIT_EXPECT_EQ(test, xferk_life_posted(&l, 100), 0U);
	KUNIT_EXPECT_EQ(test, l.in_flight_bytes, 300ULL);
	KUNIT_EXPECT_EQ(test, xferk_life_chunk_done(&l, 100, true, 0, true, 1100), 0U);
	KUNIT_EXPECT_EQ(test, xferk_life_chunk_done(&l, 100, true, 0, false, 1200), 0U);
	r = xferk_life_chunk_done(&l, 100, true, 0, true, 1500);
	KUNIT_EXPECT_EQ(test, r, XFERK_LIFE_WAKE | XFERK_LIFE_PHYSICAL);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(SUCCEEDED));

	xferk_life_snapshot(&l, &s);
	KUNIT_EXPECT_EQ(test, s.transferred_bytes, 300ULL);
	KUNIT_EXPECT_EQ(test, s.in_flight_bytes, 0ULL);
	KUNIT_EXPECT_EQ(test, s.completed_fragments, 2U);
	KUNIT_EXPECT_EQ(test, s.physical_complete, 1U);
	KUNIT_EXPECT_EQ(test, s.buffer_reusable, 1U);
	KUNIT_EXPECT_EQ(test, s.submit_to_physical_ns, 500ULL);
	KUNIT_EXPECT_EQ(test, s.first_error, 0);
	/* A deadline after success changes nothing. */
	KUNIT_EXPECT_EQ(test, xferk_life_deadline(&l), 0U);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(SUCCEEDED));
}

/* One chunk may carry the ends of several fragments (a run of them). */
static void life_chunk_ends_fragments(struct kunit *test)
{
	struct xferk_op_snapshot s;
	struct xferk_life l;

	xferk_life_init(&l, 300, 5, 2, 0);
	xferk_life_posted(&l, 200);
	xferk_life_posted(&l, 100);
	KUNIT_EXPECT_EQ(test, xferk_life_chunk_done(&l, 200, true, 0, 2, 1), 0U);
	xferk_life_snapshot(&l, &s);
	KUNIT_EXPECT_EQ(test, s.completed_fragments, 2U);
	KUNIT_EXPECT_EQ(test, xferk_life_chunk_done(&l, 100, true, 0, 3, 2),
			XFERK_LIFE_WAKE | XFERK_LIFE_PHYSICAL);
	xferk_life_snapshot(&l, &s);
	KUNIT_EXPECT_EQ(test, s.completed_fragments, 5U);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(SUCCEEDED));
}

/* FAILED only once everything is terminal; the first error sticks. */
static void life_failure_waits_for_physical(struct kunit *test)
{
	struct xferk_life l;

	xferk_life_init(&l, 300, 3, 3, 0);
	xferk_life_posted(&l, 100);
	xferk_life_posted(&l, 100);
	KUNIT_EXPECT_EQ(test, xferk_life_chunk_done(&l, 100, true, -EREMOTEIO,
						    true, 1), 0U);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(IN_PROGRESS));
	KUNIT_EXPECT_EQ(test, l.first_error, -EREMOTEIO);
	KUNIT_EXPECT_FALSE(test, xferk_life_physical(&l));
	KUNIT_EXPECT_FALSE(test, xferk_life_last_chunk(&l));
	/* A flushed chunk reports another error: the first one stays. */
	xferk_life_chunk_done(&l, 100, true, -ECANCELED, true, 2);
	KUNIT_EXPECT_EQ(test, l.first_error, -EREMOTEIO);
	/* Only the last chunk's time is read (the physical time). */
	KUNIT_EXPECT_TRUE(test, xferk_life_last_chunk(&l));
	/* The third chunk was never posted and is dropped. */
	KUNIT_EXPECT_EQ(test, xferk_life_chunk_done(&l, 100, false, -ECANCELED,
						    true, 3),
			XFERK_LIFE_WAKE | XFERK_LIFE_PHYSICAL);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(FAILED));
	KUNIT_EXPECT_EQ(test, l.first_error, -EREMOTEIO);
	KUNIT_EXPECT_EQ(test, l.transferred_bytes, 0ULL);
	KUNIT_EXPECT_EQ(test, l.late_completions, 0U);
}

/* A late success never turns TIMED_OUT into success. */
static void life_timeout_then_late_success(struct kunit *test)
{
	struct xferk_life l;
	struct xferk_op_snapshot s;

	xferk_life_init(&l, 200, 1, 2, 0);
	xferk_life_posted(&l, 100);
	xferk_life_posted(&l, 100);
	KUNIT_EXPECT_EQ(test, xferk_life_deadline(&l), XFERK_LIFE_WAKE);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(TIMED_OUT));
	KUNIT_EXPECT_EQ(test, l.first_error, -ETIMEDOUT);
	KUNIT_EXPECT_EQ(test, xferk_life_deadline(&l), 0U);
	KUNIT_EXPECT_EQ(test, l.deadline_timeouts, 1U);
	xferk_life_snapshot(&l, &s);
	KUNIT_EXPECT_EQ(test, s.buffer_reusable, 0U);
	KUNIT_EXPECT_EQ(test, s.in_flight_bytes, 200ULL);

	xferk_life_chunk_done(&l, 100, true, 0, false, 5);
	KUNIT_EXPECT_EQ(test, xferk_life_chunk_done(&l, 100, true, 0, true, 9),
			XFERK_LIFE_WAKE | XFERK_LIFE_PHYSICAL);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(TIMED_OUT));
	KUNIT_EXPECT_EQ(test, l.first_error, -ETIMEDOUT);
	KUNIT_EXPECT_EQ(test, l.late_completions, 2U);
	xferk_life_snapshot(&l, &s);
	KUNIT_EXPECT_EQ(test, s.physical_complete, 1U);
	KUNIT_EXPECT_EQ(test, s.transferred_bytes, 200ULL);
}

/* An error recorded before the deadline stays the first failure. */
static void life_error_then_deadline(struct kunit *test)
{
	struct xferk_life l;

	xferk_life_init(&l, 200, 2, 2, 0);
	xferk_life_posted(&l, 100);
	xferk_life_posted(&l, 100);
	xferk_life_chunk_done(&l, 100, true, -EREMOTEIO, true, 1);
	KUNIT_EXPECT_EQ(test, xferk_life_deadline(&l), XFERK_LIFE_WAKE);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(TIMED_OUT));
	KUNIT_EXPECT_EQ(test, l.first_error, -EREMOTEIO);
}

/*
 * A chunk its path's death flushed goes back unposted and is posted again:
 * the bytes in flight follow, nothing is recorded as a failure, and the op
 * succeeds once the second post completes.
 */
static void life_repost(struct kunit *test)
{
	struct xferk_life l;
	struct xferk_op_snapshot s;

	xferk_life_init(&l, 200, 1, 2, 0);
	xferk_life_posted(&l, 100);
	xferk_life_posted(&l, 100);
	xferk_life_unposted(&l, 100);
	KUNIT_EXPECT_EQ(test, l.in_flight_bytes, 100ULL);
	KUNIT_EXPECT_EQ(test, l.first_error, 0);
	KUNIT_EXPECT_EQ(test, xferk_life_posted(&l, 100), 0U);
	KUNIT_EXPECT_EQ(test, l.in_flight_bytes, 200ULL);
	xferk_life_chunk_done(&l, 100, true, 0, false, 1);
	KUNIT_EXPECT_EQ(test, xferk_life_chunk_done(&l, 100, true, 0, true, 2),
			XFERK_LIFE_WAKE | XFERK_LIFE_PHYSICAL);
	xferk_life_snapshot(&l, &s);
	KUNIT_EXPECT_EQ(test, s.state, (u32)ST(SUCCEEDED));
	KUNIT_EXPECT_EQ(test, s.failure, (u32)XFERK_FAILURE_NONE);
	KUNIT_EXPECT_EQ(test, s.in_flight_bytes, 0ULL);
	KUNIT_EXPECT_EQ(test, s.transferred_bytes, 200ULL);
}

/* The snapshot's failure names where the first error came from. */
static void life_failure_cause(struct kunit *test)
{
	static const struct {
		int error;
		u32 failure;
	} chunk[] = {
		{ -EACCES, XFERK_FAILURE_OWN },
		{ -EREMOTEIO, XFERK_FAILURE_OWN },
		{ -EIO, XFERK_FAILURE_OWN },
		{ -ENOMEM, XFERK_FAILURE_OWN },
		{ -ECONNRESET, XFERK_FAILURE_PATH },
		{ -ETIMEDOUT, XFERK_FAILURE_PATH },
		{ -ENOTCONN, XFERK_FAILURE_PATH },
		{ -ESTALE, XFERK_FAILURE_PATH },
		{ -ENODEV, XFERK_FAILURE_PATH },
		{ -ECANCELED, XFERK_FAILURE_CANCEL },
	};
	struct xferk_op_snapshot s;
	struct xferk_life l;
	int i;

	for (i = 0; i < ARRAY_SIZE(chunk); i++) {
		xferk_life_init(&l, 100, 1, 1, 0);
		xferk_life_posted(&l, 100);
		xferk_life_chunk_done(&l, 100, true, chunk[i].error, true, 1);
		xferk_life_snapshot(&l, &s);
		KUNIT_EXPECT_EQ_MSG(test, s.failure, chunk[i].failure,
				    "error %d", chunk[i].error);
		KUNIT_EXPECT_EQ(test, s.first_error, chunk[i].error);
	}
	/* The deadline's ETIMEDOUT is not a path's; later errors change nothing. */
	xferk_life_init(&l, 100, 1, 1, 0);
	xferk_life_posted(&l, 100);
	xferk_life_deadline(&l);
	xferk_life_chunk_done(&l, 100, true, -ECONNRESET, true, 1);
	xferk_life_snapshot(&l, &s);
	KUNIT_EXPECT_EQ(test, s.failure, (u32)XFERK_FAILURE_DEADLINE);
	KUNIT_EXPECT_EQ(test, s.first_error, -ETIMEDOUT);
	xferk_life_init(&l, 100, 1, 1, 0);
	xferk_life_cancel(&l);
	xferk_life_snapshot(&l, &s);
	KUNIT_EXPECT_EQ(test, s.failure, (u32)XFERK_FAILURE_CANCEL);
	/* A failing chunk's error is first, before the chunks it drops. */
	xferk_life_init(&l, 200, 2, 2, 0);
	xferk_life_posted(&l, 100);
	xferk_life_error(&l, -EACCES);
	xferk_life_chunk_done(&l, 100, false, -ECANCELED, true, 1);
	xferk_life_chunk_done(&l, 100, true, -EACCES, true, 2);
	xferk_life_snapshot(&l, &s);
	KUNIT_EXPECT_EQ(test, s.first_error, -EACCES);
	KUNIT_EXPECT_EQ(test, s.failure, (u32)XFERK_FAILURE_OWN);
	KUNIT_EXPECT_EQ(test, s.state, (u32)ST(FAILED));
}

/*
 * Three racing events (deadline, chunk A, chunk B) in all six orders:
 * physical completion is reported exactly once, and the outcome is
 * TIMED_OUT iff the deadline came before the last chunk.
 */
static void life_exactly_once_all_orders(struct kunit *test)
{
	static const u8 orders[6][3] = {
		{ 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
		{ 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 },
	};
	int o, i;

	for (o = 0; o < ARRAY_SIZE(orders); o++) {
		struct xferk_life l;
		int physical = 0, chunks = 0;
		bool deadline_first = false;

		xferk_life_init(&l, 2, 2, 2, 0);
		xferk_life_posted(&l, 1);
		xferk_life_posted(&l, 1);
		for (i = 0; i < 3; i++) {
			unsigned int r;

			if (orders[o][i] == 0) {
				r = xferk_life_deadline(&l);
				deadline_first = chunks < 2;
			} else {
				r = xferk_life_chunk_done(&l, 1, true, 0, true, i);
				chunks++;
			}
			physical += !!(r & XFERK_LIFE_PHYSICAL);
		}
		KUNIT_EXPECT_EQ_MSG(test, physical, 1, "order %d", o);
		KUNIT_EXPECT_EQ_MSG(test, l.state,
				    deadline_first ? (u32)ST(TIMED_OUT) :
						     (u32)ST(SUCCEEDED),
				    "order %d", o);
		KUNIT_EXPECT_EQ_MSG(test, l.deadline_timeouts, deadline_first ? 1U : 0U,
				    "order %d", o);
	}
}

static void life_cancel_and_drain(struct kunit *test)
{
	struct xferk_life l;
	struct xferk_op_snapshot s;

	xferk_life_init(&l, 200, 1, 2, 0);
	xferk_life_posted(&l, 100);
	KUNIT_EXPECT_EQ(test, xferk_life_cancel(&l), XFERK_LIFE_WAKE);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(CANCEL_REQUESTED));
	KUNIT_EXPECT_EQ(test, l.first_error, -ECANCELED);
	/* Twice: counted, nothing else. */
	KUNIT_EXPECT_EQ(test, xferk_life_cancel(&l), 0U);
	KUNIT_EXPECT_EQ(test, l.cancel_requests, 2U);
	KUNIT_EXPECT_EQ(test, xferk_life_drain_start(&l), XFERK_LIFE_WAKE);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(DRAINING));
	/* The unposted chunk is dropped, the posted one does not come. */
	xferk_life_chunk_done(&l, 100, false, -ECANCELED, false, 1);
	KUNIT_EXPECT_EQ(test, xferk_life_drain_expired(&l), XFERK_LIFE_WAKE);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(QUARANTINED));
	xferk_life_snapshot(&l, &s);
	KUNIT_EXPECT_EQ(test, s.quarantined_bytes, 100ULL);
	KUNIT_EXPECT_EQ(test, s.buffer_reusable, 0U);
	KUNIT_EXPECT_EQ(test, s.quarantine_events, 1U);
	/* A retry drains again; the late completion finishes it. */
	KUNIT_EXPECT_EQ(test, xferk_life_drain_start(&l), XFERK_LIFE_WAKE);
	KUNIT_EXPECT_EQ(test, l.drain_attempts, 2U);
	xferk_life_drain_expired(&l);
	KUNIT_EXPECT_EQ(test, xferk_life_chunk_done(&l, 100, true, 0, true, 2),
			XFERK_LIFE_WAKE | XFERK_LIFE_PHYSICAL);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(DRAINED));
	KUNIT_EXPECT_EQ(test, l.first_error, -ECANCELED);
	KUNIT_EXPECT_EQ(test, l.late_completions, 1U);
	xferk_life_snapshot(&l, &s);
	KUNIT_EXPECT_EQ(test, s.buffer_reusable, 1U);
	KUNIT_EXPECT_EQ(test, s.quarantined_bytes, 0ULL);
	/* Draining a DRAINED op or cancelling it again does nothing. */
	KUNIT_EXPECT_EQ(test, xferk_life_drain_start(&l), 0U);
	KUNIT_EXPECT_EQ(test, xferk_life_cancel(&l), 0U);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(DRAINED));
}

static void life_cancel_final_is_noop(struct kunit *test)
{
	struct xferk_life l;

	xferk_life_init(&l, 1, 1, 1, 0);
	xferk_life_posted(&l, 1);
	xferk_life_chunk_done(&l, 1, true, 0, true, 1);
	KUNIT_EXPECT_EQ(test, xferk_life_cancel(&l), 0U);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(SUCCEEDED));
	KUNIT_EXPECT_EQ(test, l.first_error, 0);
	KUNIT_EXPECT_EQ(test, l.cancel_requests, 1U);
}

/* Cancel after a timeout keeps ETIMEDOUT; physically complete: DRAINED. */
static void life_cancel_after_timeout(struct kunit *test)
{
	struct xferk_life l;

	xferk_life_init(&l, 1, 1, 1, 0);
	xferk_life_posted(&l, 1);
	xferk_life_deadline(&l);
	xferk_life_chunk_done(&l, 1, true, 0, true, 1);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(TIMED_OUT));
	KUNIT_EXPECT_EQ(test, xferk_life_cancel(&l), XFERK_LIFE_WAKE);
	KUNIT_EXPECT_EQ(test, l.state, (u32)ST(DRAINED));
	KUNIT_EXPECT_EQ(test, l.first_error, -ETIMEDOUT);
}

/*
 * Four racing events (cancel, deadline, chunk A, chunk B) in all 24
 * orders: physical completion exactly once; DRAINED iff the cancel came
 * while the op was not final; else TIMED_OUT iff the deadline came before
 * the last chunk; the first failure is the first of cancel and deadline.
 */
static void life_exactly_once_with_cancel(struct kunit *test)
{
	int perm[4] = { 0, 1, 2, 3 }, n, i, j;

	for (n = 0; n < 24; n++) {
		struct xferk_life l;
		int physical = 0, chunks = 0, first_err = 0;
		bool cancel_live = false, deadline_live = false;
		int k = n, avail[4] = { 0, 1, 2, 3 }, left = 4;

		/* The n-th permutation (factorial number system). */
		for (i = 0; i < 4; i++) {
			int f = 1, idx;

			for (j = 1; j < left; j++)
				f *= j;
			idx = k / f;
			k %= f;
			perm[i] = avail[idx];
			for (j = idx; j < left - 1; j++)
				avail[j] = avail[j + 1];
			left--;
		}
		xferk_life_init(&l, 2, 2, 2, 0);
		xferk_life_posted(&l, 1);
		xferk_life_posted(&l, 1);
		for (i = 0; i < 4; i++) {
			unsigned int r = 0;

			switch (perm[i]) {
			case 0:
				if (chunks < 2) {
					cancel_live = true;
					first_err = first_err ?: -ECANCELED;
				} else if (deadline_live) {
					cancel_live = true;	/* TIMED_OUT -> DRAINED */
				}
				r = xferk_life_cancel(&l);
				if (l.state == ST(CANCEL_REQUESTED))
					r |= xferk_life_drain_start(&l);
				break;
			case 1:
				if (chunks < 2 && !cancel_live) {
					deadline_live = true;
					first_err = first_err ?: -ETIMEDOUT;
				}
				r = xferk_life_deadline(&l);
				break;
			default:
				r = xferk_life_chunk_done(&l, 1, true, 0, true, i);
				chunks++;
				break;
			}
			physical += !!(r & XFERK_LIFE_PHYSICAL);
		}
		KUNIT_EXPECT_EQ_MSG(test, physical, 1, "perm %d%d%d%d", perm[0],
				    perm[1], perm[2], perm[3]);
		KUNIT_EXPECT_EQ_MSG(test, l.state,
				    cancel_live ? (u32)ST(DRAINED) :
				    deadline_live ? (u32)ST(TIMED_OUT) :
						    (u32)ST(SUCCEEDED),
				    "perm %d%d%d%d", perm[0], perm[1], perm[2],
				    perm[3]);
		KUNIT_EXPECT_EQ_MSG(test, l.first_error, first_err,
				    "perm %d%d%d%d", perm[0], perm[1], perm[2],
				    perm[3]);
	}
}

static void life_deadline_math(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, xferk_deadline_from_user(0), (ktime_t)0);
	KUNIT_EXPECT_EQ(test, xferk_deadline_from_user(XFERK_DEADLINE_NONE), KTIME_MAX);
	KUNIT_EXPECT_EQ(test, xferk_deadline_from_user((u64)KTIME_MAX + 1), KTIME_MAX);
	KUNIT_EXPECT_EQ(test, xferk_deadline_from_user(12345), (ktime_t)12345);
	/* Zero and past deadlines have passed; "now" counts as passed. */
	KUNIT_EXPECT_TRUE(test, xferk_deadline_passed(0, 1));
	KUNIT_EXPECT_TRUE(test, xferk_deadline_passed(100, 100));
	KUNIT_EXPECT_FALSE(test, xferk_deadline_passed(101, 100));
	/* Never is never, even at the end of time. */
	KUNIT_EXPECT_FALSE(test, xferk_deadline_passed(KTIME_MAX, KTIME_MAX));
}

static struct kunit_case lifecycle_cases[] = {
	KUNIT_CASE(life_transition_table),
	KUNIT_CASE(life_success),
	KUNIT_CASE(life_chunk_ends_fragments),
	KUNIT_CASE(life_failure_waits_for_physical),
	KUNIT_CASE(life_timeout_then_late_success),
	KUNIT_CASE(life_error_then_deadline),
	KUNIT_CASE(life_exactly_once_all_orders),
	KUNIT_CASE(life_cancel_and_drain),
	KUNIT_CASE(life_cancel_final_is_noop),
	KUNIT_CASE(life_cancel_after_timeout),
	KUNIT_CASE(life_exactly_once_with_cancel),
	KUNIT_CASE(life_deadline_math),
	KUNIT_CASE(life_repost),
	KUNIT_CASE(life_failure_cause),
	{}
};

static struct kunit_suite lifecycle_suite = {
	.name = "xferk_lifecycle",
	.test_cases = lifecycle_cases,
};

kunit_test_suite(lifecycle_suite);
