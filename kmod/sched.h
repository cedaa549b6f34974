/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The admission queue's scheduler model: admission, priority classes,
 * byte-charged weighted deficit round robin with aging, dispatch windows.
 * Verbs-, io_uring- and lock-free: the caller serializes every call on all
 * the queues that share a QP (kmod/queue.c uses xferk_queue_lock for all). KUnit drives it
 * directly (tests/kunit/sched_test.c).
 *
 * An item is one op. It is admitted whole or not at all, then dispatched
 * one work request ("chunk") at a time: the owner tells the model the
 * length and QP of the item's next chunk (@next_len, @next_qp) and the
 * model decides when it may go. Item states (struct xferk_sched_item.state):
 *
 *   QUEUED       admitted, nothing dispatched     on its class list (*)
 *   DISPATCHING  some chunks dispatched, not all  on its class list (*)
 *   SUBMITTED    every chunk dispatched           off the list
 *   DONE         nothing left in flight           off the list, unaccounted
 *
 * QUEUED and DISPATCHING ops are SUBMITTED in the op lifecycle until their
 * first chunk is posted; a cancel takes them off the list (their remaining
 * chunks never reach the device). (*) Or blocked on its next QP
 * (struct xferk_sched_qp.blocked) while that window is full.
 *
 * A dispatched chunk that waits for its session's next path (its path
 * died before or after it was posted) is parked (xferk_sched_park()): it
 * stops counting against the device window, so one stuck session cannot
 * stall the device's other sessions, and counts again once posted.
 */
#ifndef XFERK_SCHED_H
#define XFERK_SCHED_H

#include <linux/cache.h>	/* for dynamic_queue_limits.h */
#include <linux/dynamic_queue_limits.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/string.h>
#include <linux/types.h>
#include "../uapi/xferk.h"

struct xferk_sched;

enum xferk_qstate {
	XFERK_Q_QUEUED,
	XFERK_Q_DISPATCHING,
	XFERK_Q_SUBMITTED,
	XFERK_Q_DONE,
};

/* Why an admission was refused (struct xferk_sched_stats.rejects). */
enum xferk_reject {
	XFERK_REJECT_QUEUED_OPS,	/* the device's queue holds too many ops */
	XFERK_REJECT_QUEUED_BYTES,	/* ... or too many bytes */
	XFERK_REJECT_FILE_OPS,		/* the open file has too many ops admitted */
	XFERK_REJECT_FILE_BYTES,	/* ... or too many bytes */
	XFERK_REJECT_COUNT
};

#define XFERK_HIST_BUCKETS	32	/* log2 of microseconds: [2^i, 2^(i+1)) */

/**
 * struct xferk_sched_limits - tunables (sysfs: /sys/class/misc/xferk/queue)
 * @weight: DRR weight of each user class (the internal class is strict)
 * @quantum_bytes: bytes a class earns per round, times its weight
 * @aging_ns: an item that made no progress for this long goes next
 * @max_queued_ops: ops with undispatched chunks, user classes, per device
 * @max_queued_bytes: their undispatched bytes, per device
 * @file_max_ops: ops one open file may have admitted and not done
 * @file_max_bytes: their bytes
 * @internal_reserved_ops: queued ops beyond @max_queued_ops that only the
 *	internal class may use
 * @qp_window: chunks in flight per QP for user classes
 * @qp_window_bytes_min: bytes in flight per QP for user classes that the
 *	dynamic limit may not go below (struct xferk_sched_qp.bytes)
 * @qp_window_bytes_max: ... nor above
 * @internal_reserved_wrs: chunks per QP beyond @qp_window, internal only
 * @dev_window_bytes: bytes in flight per device
 * @op_window_bytes: default per-op window: bytes in flight
 * @op_window_chunks: default per-op window: chunks in flight
 * @lookahead: items of a class examined for an eligible one per pick
 */
struct xferk_sched_limits {
	u32 weight[XFERK_PRIO_COUNT];
	u32 quantum_bytes;
	u64 aging_ns;
	u32 max_queued_ops;
	u64 max_queued_bytes;
	u32 file_max_ops;
	u64 file_max_bytes;
	u32 internal_reserved_ops;
	u32 qp_window;
	u64 qp_window_bytes_min;
	u64 qp_window_bytes_max;
	u32 internal_reserved_wrs;
	u64 dev_window_bytes;
	u64 op_window_bytes;
	u32 op_window_chunks;
	u32 lookahead;
};

/* What one open file has admitted and not yet done, on every device. */
struct xferk_sched_account {
	u32 ops;
	u64 bytes;
};

/**
 * struct xferk_sched_qp - a session's dispatch window
 * @outstanding: chunks dispatched to it and not yet complete
 * @inflight_bytes: their bytes
 * @bytes: the kernel's dynamic queue limit (lib/dynamic_queue_limits.c)
 *	of @inflight_bytes: it grows when the QP ran dry after it had been
 *	over its limit, and shrinks when, for a second (the hold time), more
 *	was in flight than kept the QP busy, so that a chunk dispatched
 *	behind a full window waits behind the least that keeps the device
 *	busy. Every chunk counts; the limit holds for user classes only,
 *	within qp_window_bytes_min and _max
 * @unsettled: bytes completed since the last dispatch to it, reported to
 *	@bytes just before the next one: the completions between two
 *	dispatches are one batch, as a NIC's completions between two
 *	transmits are for the limit's algorithm
 * @nr_qps: the session's QPs; the window is theirs together (0 counts
 *	as 1)
 * @blocked: per user class, the items whose next chunk found the window
 *	full, in admission order; off their class lists, so that a full (or
 *	stuck) session costs the others no lookahead. Each completion or
 *	dispatch that leaves the window room puts each class's first one back
 *	into its class, in admission order (see unblock_heads())
 */
struct xferk_sched_qp {
	u32 outstanding;
	u64 inflight_bytes;
	struct dql bytes;
	u32 unsettled;
	u32 nr_qps;
	struct list_head blocked[XFERK_PRIO_INTERNAL];
};

static inline void xferk_sched_qp_init(struct xferk_sched_qp *qp)
{
	int i;

	qp->outstanding = 0;
	qp->inflight_bytes = 0;
	qp->unsettled = 0;
	memset(&qp->bytes, 0, sizeof(qp->bytes));	/* dql_init() leaves adj_limit */
	dql_init(&qp->bytes, HZ);
	qp->nr_qps = 1;
	for (i = 0; i < XFERK_PRIO_INTERNAL; i++)
		INIT_LIST_HEAD(&qp->blocked[i]);
}

/* Chunks @qp may have outstanding when each of its QPs takes @per_qp. */
static inline u32 xferk_sched_qp_window(const struct xferk_sched_qp *qp,
					u32 per_qp)
{
	return per_qp * max_t(u32, READ_ONCE(qp->nr_qps), 1);
}

/**
 * struct xferk_sched_item - one op in the queue
 * @node: while QUEUED or DISPATCHING: on its class's list, or on its
 *	next QP's @blocked list
 * @sched: the queue it was admitted to
 * @seq: start order (xferk_sched_start()), over every queue: a class
 *	list and a blocked list keep their items in it, so a session's
 *	items of one class go in the order they were started
 * @acct: the submitting file's account
 * @prio: XFERK_PRIO_*
 * @state: enum xferk_qstate
 * @bytes: all of the op's bytes
 * @undispatched_bytes: bytes not yet dispatched
 * @undispatched_chunks: chunks not yet dispatched
 * @inflight_bytes: bytes dispatched and not complete
 * @inflight_chunks: chunks dispatched and not complete
 * @window_bytes: most @inflight_bytes (one chunk may always go)
 * @window_chunks: most @inflight_chunks
 * @next_len: length of the next chunk (owner sets it)
 * @next_qp: QP of the next chunk (owner sets it)
 * @enqueued: admission time
 * @progress: last dispatch (or admission): the aging clock
 */
struct xferk_sched_item {
	struct list_head node;
	struct xferk_sched *sched;
	u64 seq;
	struct xferk_sched_account *acct;
	u8 prio;
	u8 state;
	u64 bytes;
	u64 undispatched_bytes;
	u32 undispatched_chunks;
	u64 inflight_bytes;
	u32 inflight_chunks;
	u64 window_bytes;
	u32 window_chunks;
	u64 next_len;
	struct xferk_sched_qp *next_qp;
	ktime_t enqueued;
	ktime_t progress;
};

/* Counters of one queue; shown in sysfs summed over devices. */
struct xferk_sched_stats {
	u64 enqueued;
	u64 dispatched;		/* chunks */
	u64 completed;		/* ops */
	u64 cancelled;		/* ops taken off the queue */
	u64 aged;		/* chunks dispatched by aging */
	u64 rejects[XFERK_REJECT_COUNT];
	u64 wait_hist[XFERK_HIST_BUCKETS];	/* admission to first dispatch */
	u64 xport_hist[XFERK_HIST_BUCKETS];	/* dispatch to completion */
};

struct xferk_sched_class {
	struct list_head items;
	s64 deficit;
	u32 ops;
	u64 bytes;
};

/**
 * struct xferk_sched - the queue of one device
 * @lim: tunables
 * @cls: per class: FIFO of items, DRR deficit, queued ops and bytes
 * @rr: the user class DRR serves now
 * @rr_paid: @rr got its quantum for this visit
 * @inflight_bytes: dispatched, not complete, not parked: what the device
 *	window counts
 * @inflight_chunks: dispatched, not complete (parked ones too)
 * @parked_bytes: dispatched, not complete, waiting for their session's
 *	next path (xferk_sched_park()): charged to their op's and their QP's
 *	window, not to the device's
 * @stats: counters
 */
struct xferk_sched {
	const struct xferk_sched_limits *lim;
	struct xferk_sched_class cls[XFERK_PRIO_COUNT];
	u32 rr;
	bool rr_paid;
	u64 inflight_bytes;
	u32 inflight_chunks;
	u64 parked_bytes;
	struct xferk_sched_stats stats;
};

void xferk_sched_init(struct xferk_sched *s, const struct xferk_sched_limits *lim);
int xferk_sched_admit(struct xferk_sched *s, struct xferk_sched_item *it,
		      struct xferk_sched_account *acct, ktime_t now);
void xferk_sched_start(struct xferk_sched *s, struct xferk_sched_item *it,
		       ktime_t now);
struct xferk_sched_item *xferk_sched_next(struct xferk_sched *s, ktime_t now);
bool xferk_sched_complete(struct xferk_sched *s, struct xferk_sched_item *it,
			  u64 len, struct xferk_sched_qp *qp, s64 xport_ns);
u32 xferk_sched_cancel(struct xferk_sched *s, struct xferk_sched_item *it);
void xferk_sched_park(struct xferk_sched *s, u64 len);
void xferk_sched_unpark(struct xferk_sched *s, u64 len);
bool xferk_sched_empty(const struct xferk_sched *s);
unsigned int xferk_hist_bucket(s64 ns);

#endif /* XFERK_SCHED_H */
