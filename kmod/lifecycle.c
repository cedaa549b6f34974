// SPDX-License-Identifier: GPL-2.0
/*
 * The op state machine (see lifecycle.h and Documentation/lifecycle.md).
 *
 *   SUBMITTED -> IN_PROGRESS -> SUCCEEDED | FAILED
 *   SUBMITTED | IN_PROGRESS -> TIMED_OUT
 *   SUBMITTED | IN_PROGRESS | TIMED_OUT -> CANCEL_REQUESTED
 *   CANCEL_REQUESTED -> DRAINING | DRAINED
 *   DRAINING -> DRAINED | QUARANTINED
 *   QUARANTINED -> DRAINING | DRAINED
 *
 * SUCCEEDED, FAILED and DRAINED are final and imply that no work request
 * can touch the op's memory. SUBMITTED -> FAILED and -> SUCCEEDED happen
 * when every chunk became terminal without the op ever being posted
 * (e.g. the connection died first). A cancelled op that becomes physically
 * complete is DRAINED, whatever state of the drain it was in.
 */
#include <linux/bug.h>
#include <linux/kernel.h>
#include <kunit/visibility.h>

#include "lifecycle.h"

#define S(x)	BIT(XFERK_STATE_##x)

static const u16 xferk_transitions[XFERK_STATE_COUNT] = {
	[XFERK_STATE_SUBMITTED] = S(IN_PROGRESS) | S(SUCCEEDED) | S(FAILED) |
				  S(TIMED_OUT) | S(CANCEL_REQUESTED),
	[XFERK_STATE_IN_PROGRESS] = S(SUCCEEDED) | S(FAILED) | S(TIMED_OUT) |
				    S(CANCEL_REQUESTED),
	[XFERK_STATE_TIMED_OUT] = S(CANCEL_REQUESTED),
	[XFERK_STATE_CANCEL_REQUESTED] = S(DRAINING) | S(DRAINED),
	[XFERK_STATE_DRAINING] = S(DRAINED) | S(QUARANTINED),
	[XFERK_STATE_QUARANTINED] = S(DRAINING) | S(DRAINED),
};

static const char *const xferk_state_names[XFERK_STATE_COUNT] = {
	[XFERK_STATE_SUBMITTED] = "SUBMITTED",
	[XFERK_STATE_IN_PROGRESS] = "IN_PROGRESS",
	[XFERK_STATE_SUCCEEDED] = "SUCCEEDED",
	[XFERK_STATE_FAILED] = "FAILED",
	[XFERK_STATE_TIMED_OUT] = "TIMED_OUT",
	[XFERK_STATE_CANCEL_REQUESTED] = "CANCEL_REQUESTED",
	[XFERK_STATE_DRAINING] = "DRAINING",
	[XFERK_STATE_DRAINED] = "DRAINED",
	[XFERK_STATE_QUARANTINED] = "QUARANTINED",
};

bool xferk_state_transition_allowed(u32 from, u32 to)
{
	return from < XFERK_STATE_COUNT && to < XFERK_STATE_COUNT &&
	       (xferk_transitions[from] & BIT(to));
}
EXPORT_SYMBOL_IF_KUNIT(xferk_state_transition_allowed);

/* Settled: the op's logical outcome is decided (what a plain WAIT waits for). */
bool xferk_state_is_settled(u32 state)
{
	return state != XFERK_STATE_SUBMITTED &&
	       state != XFERK_STATE_IN_PROGRESS;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_state_is_settled);

const char *xferk_state_name(u32 state)
{
	return state < XFERK_STATE_COUNT ? xferk_state_names[state] : "?";
}
EXPORT_SYMBOL_IF_KUNIT(xferk_state_name);

/* The one place that changes an op's state. */
static unsigned int life_set_state(struct xferk_life *l, u32 to)
{
	if (WARN_ONCE(!xferk_state_transition_allowed(l->state, to),
		      "xferk: illegal transition %s -> %s\n",
		      xferk_state_name(l->state), xferk_state_name(to)))
		return 0;
	l->state = to;
	return XFERK_LIFE_WAKE;
}

static void life_fail(struct xferk_life *l, int error, u32 failure)
{
	if (!l->first_error) {
		l->first_error = error;
		l->failure = failure;
	}
}

/**
 * xferk_chunk_failure() - what a chunk's error says about its cause
 * @error: a chunk's negative errno
 *
 * Return: XFERK_FAILURE_PATH for the errors of a path's or session's
 * death, XFERK_FAILURE_CANCEL for a chunk dropped because its op was
 * cancelled, XFERK_FAILURE_OWN for the rest (its own work request failed).
 */
u32 xferk_chunk_failure(int error)
{
	switch (error) {
	case -ECONNRESET:
	case -ETIMEDOUT:
	case -ENOTCONN:
	case -ESTALE:
	case -EHOSTUNREACH:
	case -ECONNREFUSED:
	case -ENODEV:
	case -ESHUTDOWN:
	case -EPROTO:
	case -EPROTONOSUPPORT:
		return XFERK_FAILURE_PATH;
	case -ECANCELED:
		return XFERK_FAILURE_CANCEL;
	default:
		return XFERK_FAILURE_OWN;
	}
}
EXPORT_SYMBOL_IF_KUNIT(xferk_chunk_failure);

/**
 * xferk_life_error() - a chunk failed: its error becomes the op's first
 *	one if it has none (its terminal accounting follows in
 *	xferk_life_chunk_done())
 * @l: the op
 * @error: the chunk's negative errno
 *
 * So the op's first error is the failing chunk's own, not that of the
 * chunks its failure drops (ECANCELED).
 */
void xferk_life_error(struct xferk_life *l, int error)
{
	life_fail(l, error, xferk_chunk_failure(error));
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_error);

void xferk_life_init(struct xferk_life *l, u64 total_bytes, u32 total_frags,
		     u32 total_chunks, ktime_t now)
{
	*l = (struct xferk_life) {
		.state = XFERK_STATE_SUBMITTED,
		.total_bytes = total_bytes,
		.total_frags = total_frags,
		.total_chunks = total_chunks,
		.submit_time = now,
	};
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_init);

bool xferk_life_physical(const struct xferk_life *l)
{
	return l->terminal_chunks == l->total_chunks;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_physical);

/* Would the next terminal chunk make the op physically complete? */
bool xferk_life_last_chunk(const struct xferk_life *l)
{
	return l->terminal_chunks + 1 == l->total_chunks;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_last_chunk);

/**
 * xferk_life_posted() - a chunk was handed to the device
 * @l: the op
 * @bytes: the chunk's length
 *
 * Return: XFERK_LIFE_* bits.
 */
unsigned int xferk_life_posted(struct xferk_life *l, u64 bytes)
{
	l->in_flight_bytes += bytes;
	if (l->state == XFERK_STATE_SUBMITTED)
		return life_set_state(l, XFERK_STATE_IN_PROGRESS);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_posted);

/**
 * xferk_life_unposted() - a posted chunk came back without a result, to be
 *	posted again (its path died; it was not at fault)
 * @l: the op
 * @bytes: the chunk's length
 */
void xferk_life_unposted(struct xferk_life *l, u64 bytes)
{
	l->in_flight_bytes -= bytes;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_unposted);

/**
 * xferk_life_chunk_done() - a chunk became terminal
 * @l: the op
 * @bytes: the chunk's length
 * @posted: the chunk was posted (else it was dropped before posting)
 * @error: 0, or the chunk's failure as a negative errno
 * @frags_done: fragments whose last chunk this was
 * @now: current time; used only when the op becomes physically complete
 *	(callers read the clock only for xferk_life_last_chunk())
 *
 * A failure is recorded as the op's first error if it has none; the op
 * becomes FAILED (or SUCCEEDED) only once every chunk is terminal, because
 * those states promise that nothing touches the buffers any more. A
 * completion that arrives after a timeout or cancel decided the op's
 * outcome counts as late and changes nothing but the counters.
 *
 * Return: XFERK_LIFE_* bits; XFERK_LIFE_PHYSICAL exactly once per op.
 */
unsigned int xferk_life_chunk_done(struct xferk_life *l, u64 bytes,
				   bool posted, int error, u32 frags_done,
				   ktime_t now)
{
	unsigned int ret = 0;

	if (WARN_ON_ONCE(xferk_life_physical(l)))
		return 0;
	if (posted) {
		l->in_flight_bytes -= bytes;
		if (xferk_state_is_settled(l->state))
			l->late_completions++;
	}
	if (!error)
		l->transferred_bytes += bytes;
	else
		life_fail(l, error, xferk_chunk_failure(error));
	l->completed_frags += frags_done;
	l->terminal_chunks++;
	if (!xferk_life_physical(l))
		return 0;

	l->physical_time = now;
	ret = XFERK_LIFE_PHYSICAL | XFERK_LIFE_WAKE;
	if (!xferk_state_is_settled(l->state))
		ret |= life_set_state(l, l->first_error ? XFERK_STATE_FAILED :
					 XFERK_STATE_SUCCEEDED);
	else if (xferk_life_cancelling(l))
		ret |= life_set_state(l, XFERK_STATE_DRAINED);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_chunk_done);

/* A cancel was accepted and the op is not DRAINED yet. */
bool xferk_life_cancelling(const struct xferk_life *l)
{
	return l->state == XFERK_STATE_CANCEL_REQUESTED ||
	       l->state == XFERK_STATE_DRAINING ||
	       l->state == XFERK_STATE_QUARANTINED;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_cancelling);

/**
 * xferk_life_cancel() - the caller (or a policy) cancels the op
 * @l: the op
 *
 * A live or TIMED_OUT op becomes CANCEL_REQUESTED (first error ECANCELED
 * unless it had one); DRAINED at once if it is already physically
 * complete. An op that is final or already cancelling only counts the
 * request: cancel is idempotent.
 *
 * Return: XFERK_LIFE_* bits.
 */
unsigned int xferk_life_cancel(struct xferk_life *l)
{
	unsigned int ret;

	l->cancel_requests++;
	if (l->state != XFERK_STATE_SUBMITTED &&
	    l->state != XFERK_STATE_IN_PROGRESS &&
	    l->state != XFERK_STATE_TIMED_OUT)
		return 0;
	life_fail(l, -ECANCELED, XFERK_FAILURE_CANCEL);
	ret = life_set_state(l, XFERK_STATE_CANCEL_REQUESTED);
	if (xferk_life_physical(l))
		ret |= life_set_state(l, XFERK_STATE_DRAINED);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_cancel);

/**
 * xferk_life_drain_start() - a drain of a cancelled op begins
 * @l: the op, CANCEL_REQUESTED or QUARANTINED (a retry)
 *
 * Return: XFERK_LIFE_* bits; 0 if the op is not waiting for a drain.
 */
unsigned int xferk_life_drain_start(struct xferk_life *l)
{
	if (l->state != XFERK_STATE_CANCEL_REQUESTED &&
	    l->state != XFERK_STATE_QUARANTINED)
		return 0;
	l->drain_attempts++;
	return life_set_state(l, XFERK_STATE_DRAINING);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_drain_start);

/**
 * xferk_life_drain_expired() - a drain's deadline passed
 * @l: the op
 *
 * A DRAINING op whose work requests are still not all terminal is
 * QUARANTINED: its memory stays pinned, buffer_reusable stays false, and
 * it becomes DRAINED when the last one is (completion, flush, QP destroyed).
 *
 * Return: XFERK_LIFE_* bits.
 */
unsigned int xferk_life_drain_expired(struct xferk_life *l)
{
	if (l->state != XFERK_STATE_DRAINING || xferk_life_physical(l))
		return 0;
	l->quarantine_events++;
	return life_set_state(l, XFERK_STATE_QUARANTINED);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_drain_expired);

/**
 * xferk_life_deadline() - the op's deadline expired
 * @l: the op
 *
 * An op that is not physically complete by its deadline is TIMED_OUT: a
 * logical failure (first error ETIMEDOUT unless it already had one) whose
 * work requests are still tracked.
 *
 * Return: XFERK_LIFE_* bits.
 */
unsigned int xferk_life_deadline(struct xferk_life *l)
{
	if (xferk_state_is_settled(l->state) || xferk_life_physical(l))
		return 0;
	l->deadline_timeouts++;
	life_fail(l, -ETIMEDOUT, XFERK_FAILURE_DEADLINE);
	return life_set_state(l, XFERK_STATE_TIMED_OUT);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_deadline);

void xferk_life_snapshot(const struct xferk_life *l,
			 struct xferk_op_snapshot *snap)
{
	bool physical = xferk_life_physical(l);

	*snap = (struct xferk_op_snapshot) {
		.state = l->state,
		.first_error = l->first_error,
		.failure = l->failure,
		.total_bytes = l->total_bytes,
		.transferred_bytes = l->transferred_bytes,
		.in_flight_bytes = l->in_flight_bytes,
		.total_fragments = l->total_frags,
		.completed_fragments = l->completed_frags,
		.deadline_timeouts = l->deadline_timeouts,
		.cancel_requests = l->cancel_requests,
		.drain_attempts = l->drain_attempts,
		.quarantine_events = l->quarantine_events,
		.late_completions = l->late_completions,
		.quarantined_bytes = l->state == XFERK_STATE_QUARANTINED ?
				     l->in_flight_bytes : 0,
		.physical_complete = physical,
		.buffer_reusable = physical,
		.submit_to_physical_ns = physical ?
			ktime_to_ns(ktime_sub(l->physical_time, l->submit_time)) : 0,
	};
}
EXPORT_SYMBOL_IF_KUNIT(xferk_life_snapshot);

/**
 * xferk_deadline_from_user() - a uAPI deadline as ktime_t
 * @deadline_ns: absolute CLOCK_MONOTONIC ns, or XFERK_DEADLINE_NONE
 *
 * Values beyond KTIME_MAX (including XFERK_DEADLINE_NONE) mean "never".
 *
 * Return: the deadline; KTIME_MAX for never.
 */
ktime_t xferk_deadline_from_user(u64 deadline_ns)
{
	return deadline_ns > (u64)KTIME_MAX ? KTIME_MAX : (ktime_t)deadline_ns;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_deadline_from_user);

/**
 * xferk_drain_deadline() - when the drain that follows a deadline ends
 * @deadline: the op's deadline (KTIME_MAX: never)
 * @budget_ns: its drain budget as the user gave it, any value
 *
 * Return: @deadline plus @budget_ns; KTIME_MAX (drain until done) where
 * that lies beyond the clock's range, never a sum that wrapped.
 */
ktime_t xferk_drain_deadline(ktime_t deadline, u64 budget_ns)
{
	if (deadline == KTIME_MAX || budget_ns > (u64)(KTIME_MAX - deadline))
		return KTIME_MAX;
	return ktime_add_ns(deadline, budget_ns);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_drain_deadline);

bool xferk_deadline_passed(ktime_t deadline, ktime_t now)
{
	return deadline != KTIME_MAX && now >= deadline;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_deadline_passed);
