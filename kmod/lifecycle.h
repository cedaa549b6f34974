/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The op lifecycle: one state machine, changed only by life_set_state()
 * in lifecycle.c, driven by the events below. Verbs- and io_uring-free:
 * KUnit drives it directly. Documentation/lifecycle.md has the diagram.
 *
 * Units: an op has fragments (what the caller asked for) and chunks (one
 * work request each; a fragment has one or more). A chunk is "terminal"
 * when its completion was seen or when it was dropped before posting.
 *
 * Locking: the caller serializes all calls on one struct xferk_life
 * (struct xferk_op.lock).
 */
#ifndef XFERK_LIFECYCLE_H
#define XFERK_LIFECYCLE_H

#include <linux/ktime.h>
#include <linux/types.h>
#include "../uapi/xferk.h"

/**
 * struct xferk_life - lifecycle and accounting of one op
 * @state: enum xferk_op_state
 * @first_error: first failure, negative errno; immutable once set
 * @failure: XFERK_FAILURE_* of @first_error
 * @total_bytes: sum of fragment lengths
 * @transferred_bytes: bytes of chunks that completed successfully
 * @in_flight_bytes: bytes of posted, not yet terminal chunks
 * @total_frags: fragments
 * @completed_frags: fragments whose chunks are all terminal
 * @total_chunks: chunks
 * @terminal_chunks: chunks that are terminal
 * @deadline_timeouts: see struct xferk_op_snapshot
 * @cancel_requests: see struct xferk_op_snapshot
 * @drain_attempts: see struct xferk_op_snapshot
 * @quarantine_events: see struct xferk_op_snapshot
 * @late_completions: see struct xferk_op_snapshot
 * @submit_time: when the op was submitted
 * @physical_time: when the last chunk became terminal, 0 before
 */
struct xferk_life {
	u32 state;
	int first_error;
	u32 failure;
	u64 total_bytes;
	u64 transferred_bytes;
	u64 in_flight_bytes;
	u32 total_frags;
	u32 completed_frags;
	u32 total_chunks;
	u32 terminal_chunks;
	u32 deadline_timeouts;
	u32 cancel_requests;
	u32 drain_attempts;
	u32 quarantine_events;
	u32 late_completions;
	ktime_t submit_time;
	ktime_t physical_time;
};

/*
 * What an event asks of the caller, as bits:
 * XFERK_LIFE_WAKE      the logical state changed: wake waiters
 * XFERK_LIFE_PHYSICAL  the op just became physically complete: release
 *                      what its work requests held (exactly once per op)
 */
#define XFERK_LIFE_WAKE		BIT(0)
#define XFERK_LIFE_PHYSICAL	BIT(1)

bool xferk_state_transition_allowed(u32 from, u32 to);
bool xferk_state_is_settled(u32 state);
u32 xferk_chunk_failure(int error);
void xferk_life_error(struct xferk_life *l, int error);
const char *xferk_state_name(u32 state);

void xferk_life_init(struct xferk_life *l, u64 total_bytes, u32 total_frags,
		     u32 total_chunks, ktime_t now);
unsigned int xferk_life_posted(struct xferk_life *l, u64 bytes);
void xferk_life_unposted(struct xferk_life *l, u64 bytes);
unsigned int xferk_life_chunk_done(struct xferk_life *l, u64 bytes,
				   bool posted, int error, u32 frags_done,
				   ktime_t now);
unsigned int xferk_life_deadline(struct xferk_life *l);
bool xferk_life_cancelling(const struct xferk_life *l);
unsigned int xferk_life_cancel(struct xferk_life *l);
unsigned int xferk_life_drain_start(struct xferk_life *l);
unsigned int xferk_life_drain_expired(struct xferk_life *l);
bool xferk_life_physical(const struct xferk_life *l);
bool xferk_life_last_chunk(const struct xferk_life *l);
void xferk_life_snapshot(const struct xferk_life *l,
			 struct xferk_op_snapshot *snap);

/* Deadlines: absolute CLOCK_MONOTONIC ns from the uAPI as ktime_t. */
ktime_t xferk_deadline_from_user(u64 deadline_ns);
ktime_t xferk_drain_deadline(ktime_t deadline, u64 budget_ns);
bool xferk_deadline_passed(ktime_t deadline, ktime_t now);

#endif /* XFERK_LIFECYCLE_H */
