// SPDX-License-Identifier: GPL-2.0
/*
 * The admission queue's scheduler model (see sched.h).
 *
 * Pick order, each pick dispatching one chunk:
 *  1. the internal class, strictly first (it has reserved credits);
 *  2. aging: the user item that made no progress for the longest time,
 *     if that exceeds aging_ns;
 *  3. byte-charged deficit round robin over the user classes: a class
 *     earns quantum_bytes * weight per visit and spends a chunk's length
 *     per dispatch; an empty class forgets its deficit.
 * An item is eligible when its next chunk fits its op window, its QP's
 * window (chunks, and for user classes bytes: the least that keeps the QP
 * busy, learned by the kernel's dynamic queue limits, so that a critical
 * chunk waits behind no more bulk than that) and the device window (a lone
 * chunk always fits an empty window).
 * A user item that finds its QP's window full waits on that QP's blocked
 * list instead of its class list, and one whose op window is full is
 * passed over: only items that wait for the device window count against
 * the lookahead, so a full or stuck session never hides the items behind
 * its own.
 * Aged dispatches are charged to their class too, so aging cannot raise a
 * class's long-run share.
 */
#include <linux/kernel.h>
#include <linux/log2.h>
#include <kunit/visibility.h>

#include "sched.h"

#define USER_CLASSES	XFERK_PRIO_INTERNAL	/* classes 0 .. INTERNAL - 1 */

/*
 * Items one pick looks at, at most, counted or not: items passed over for
 * their own full op window are bounded by the chunks in flight, which
 * parking no longer bounds by the device window.
 */
#define SCAN_MAX	4096

/* The last started item's struct xferk_sched_item.seq (the caller's lock). */
static u64 admitted_seq;

void xferk_sched_init(struct xferk_sched *s, const struct xferk_sched_limits *lim)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->lim = lim;
	for (i = 0; i < XFERK_PRIO_COUNT; i++)
		INIT_LIST_HEAD(&s->cls[i].items);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_sched_init);

/* Histogram bucket of a duration: log2 of microseconds, clamped. */
unsigned int xferk_hist_bucket(s64 ns)
{
	u64 us = ns > 0 ? (u64)ns / NSEC_PER_USEC : 0;

	return us ? min_t(unsigned int, ilog2(us), XFERK_HIST_BUCKETS - 1) : 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_hist_bucket);

/* Ops and undispatched bytes of the user classes. */
static void user_queued(const struct xferk_sched *s, u32 *ops, u64 *bytes)
{
	int i;

	*ops = 0;
	*bytes = 0;
	for (i = 0; i < USER_CLASSES; i++) {
		*ops += s->cls[i].ops;
		*bytes += s->cls[i].bytes;
	}
}

/* Which hard limit admitting @it would break, or -1. */
static int admit_check(const struct xferk_sched *s,
		       const struct xferk_sched_item *it,
		       const struct xferk_sched_account *acct)
{
	const struct xferk_sched_limits *lim = s->lim;
	u64 bytes;
	u32 ops;

	user_queued(s, &ops, &bytes);
	if (it->prio == XFERK_PRIO_INTERNAL) {
		if (ops + s->cls[XFERK_PRIO_INTERNAL].ops + 1 >
		    lim->max_queued_ops + lim->internal_reserved_ops)
			return XFERK_REJECT_QUEUED_OPS;
	} else {
		if (ops + 1 > lim->max_queued_ops)
			return XFERK_REJECT_QUEUED_OPS;
		if (bytes + it->bytes > lim->max_queued_bytes)
			return XFERK_REJECT_QUEUED_BYTES;
	}
	if (acct->ops + 1 > lim->file_max_ops)
		return XFERK_REJECT_FILE_OPS;
	if (acct->bytes + it->bytes > lim->file_max_bytes)
		return XFERK_REJECT_FILE_BYTES;
	return -1;
}

/**
 * xferk_sched_admit() - admit an item, whole or not at all
 * @s: the queue
 * @it: the item: @prio, @bytes, @undispatched_*, @window_*, @next_* set
 * @acct: the submitting file's account
 * @now: the time
 *
 * The item is charged to the limits at once, but waits for
 * xferk_sched_start() before it can be dispatched (its owner may still be
 * publishing it).
 *
 * Return: 0 (the item is QUEUED) or -EBUSY, counted by reason, with
 * nothing changed.
 */
int xferk_sched_admit(struct xferk_sched *s, struct xferk_sched_item *it,
		      struct xferk_sched_account *acct, ktime_t now)
{
	struct xferk_sched_class *c = &s->cls[it->prio];
	int reason = admit_check(s, it, acct);

	if (reason >= 0) {
		s->stats.rejects[reason]++;
		return -EBUSY;
	}
	INIT_LIST_HEAD(&it->node);
	it->sched = s;
	it->acct = acct;
	it->state = XFERK_Q_QUEUED;
	it->undispatched_bytes = it->bytes;
	it->inflight_bytes = 0;
	it->inflight_chunks = 0;
	it->enqueued = now;
	it->progress = now;
	c->ops++;
	c->bytes += it->bytes;
	acct->ops++;
	acct->bytes += it->bytes;
	s->stats.enqueued++;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_sched_admit);

/**
 * xferk_sched_start() - let an admitted item be dispatched
 * @s: the queue
 * @it: the item, admitted; nothing happens if it was cancelled meanwhile
 * @now: the time: its queue wait starts here
 */
void xferk_sched_start(struct xferk_sched *s, struct xferk_sched_item *it,
		       ktime_t now)
{
	if (it->state != XFERK_Q_QUEUED)
		return;
	it->enqueued = now;
	it->progress = now;
	it->seq = ++admitted_seq;
	list_add_tail(&it->node, &s->cls[it->prio].items);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_sched_start);

/* Chunks a QP may have outstanding for items of class @prio. */
static u32 qp_window(const struct xferk_sched *s, u8 prio)
{
	u32 per_qp = s->lim->qp_window;

	if (prio == XFERK_PRIO_INTERNAL)
		per_qp += s->lim->internal_reserved_wrs;
	return per_qp;
}

/*
 * The byte window of @qp's QPs together: @per_qp times its QPs, in the
 * range the dynamic limit's counters take.
 */
static u32 qp_bytes(const struct xferk_sched_qp *qp, u64 per_qp)
{
	return min_t(u64, per_qp * max_t(u32, READ_ONCE(qp->nr_qps), 1),
		     DQL_MAX_LIMIT);
}

/*
 * Does @it's next chunk find its QP's byte window full? A user chunk goes
 * while the QP has less than qp_window_bytes_min in flight, and otherwise
 * while the dynamic limit has room and the QP has less than
 * qp_window_bytes_max: each bound may be passed by one chunk, whatever
 * its size, so a large chunk is not passed over by smaller ones. A QP
 * with nothing in flight takes any chunk.
 */
static bool qp_bytes_full(const struct xferk_sched *s,
			  const struct xferk_sched_item *it)
{
	const struct xferk_sched_qp *qp = it->next_qp;

	if (it->prio == XFERK_PRIO_INTERNAL || !qp->inflight_bytes)
		return false;
	if (qp->inflight_bytes >= qp_bytes(qp, s->lim->qp_window_bytes_max))
		return true;
	return qp->inflight_bytes >= qp_bytes(qp, s->lim->qp_window_bytes_min) &&
	       (s64)dql_avail(&qp->bytes) + qp->unsettled < 0;
}

static bool qp_full(const struct xferk_sched *s,
		    const struct xferk_sched_item *it)
{
	return it->next_qp->outstanding >=
	       xferk_sched_qp_window(it->next_qp, qp_window(s, it->prio)) ||
	       qp_bytes_full(s, it);
}

/*
 * A chunk's length as the dynamic limit counts it: chunks are at most
 * XFERK_CHUNK_MAX_BYTES, far below DQL_MAX_OBJECT, which dql_queued()
 * would BUG on; clamped the same way at dispatch and completion.
 */
static unsigned int dql_len(u64 len)
{
	return min_t(u64, len, DQL_MAX_OBJECT);
}

/*
 * Reports @qp's completions since its last dispatch to its limit, as one
 * batch, within the tunables as they are now. Nothing is queued to @qp
 * between its completions and this, so the limit comes out as it would
 * have at the last of them (only the clock its shrinking waits on has
 * moved on).
 */
static void qp_settle(const struct xferk_sched *s, struct xferk_sched_qp *qp)
{
	unsigned int queued = qp->bytes.num_queued - qp->bytes.num_completed;

	if (!qp->unsettled)
		return;
	/* dql_completed() BUGs on more than was queued: never from here. */
	if (WARN_ON_ONCE(qp->unsettled > queued))
		qp->unsettled = queued;
	qp->bytes.max_limit = qp_bytes(qp, s->lim->qp_window_bytes_max);
	qp->bytes.min_limit = min_t(u32, qp->bytes.max_limit,
				    qp_bytes(qp, s->lim->qp_window_bytes_min));
	dql_completed(&qp->bytes, qp->unsettled);
	qp->unsettled = 0;
}

/* @it's own window does not take its next chunk (an empty one always does). */
static bool op_window_full(const struct xferk_sched_item *it)
{
	return it->inflight_chunks &&
	       (it->inflight_chunks >= it->window_chunks ||
		it->inflight_bytes + it->next_len > it->window_bytes);
}

/* @it's next chunk fits the device window (an empty one takes any). */
static bool dev_window_fits(const struct xferk_sched *s,
			    const struct xferk_sched_item *it)
{
	return !s->inflight_bytes ||
	       s->inflight_bytes + it->next_len <= s->lim->dev_window_bytes;
}

static bool eligible(const struct xferk_sched *s,
		     const struct xferk_sched_item *it)
{
	return !op_window_full(it) && !qp_full(s, it) &&
	       dev_window_fits(s, it);
}

/*
 * Moves @it into @items (a class or blocked list) in admission order:
 * after the last older item. Usually at once: a list's items are in that
 * order, an item that comes back from a blocked list is among the oldest,
 * and one that is blocked is usually the youngest there, or the oldest.
 */
static void insert_by_seq(struct xferk_sched_item *it, struct list_head *items)
{
	struct xferk_sched_item *pos;

	pos = list_last_entry(items, struct xferk_sched_item, node);
	if (list_empty(items) || pos->seq < it->seq) {
		list_move_tail(&it->node, items);
		return;
	}
	list_for_each_entry(pos, items, node)
		if (pos->seq > it->seq)
			break;
	list_move_tail(&it->node, &pos->node);	/* before @pos */
}

/*
 * The first item of each class blocked on @qp goes back to its class, in
 * admission order (where it was), if the QP's window has room for a user chunk.
 * Called wherever that room can appear (a chunk completes, one was
 * dispatched, an item leaves), so while the window has room, an item of
 * each class blocked on @qp is on its class list: none waits for a
 * completion that is not coming, and the classes' shares hold.
 */
static void unblock_heads(struct xferk_sched_qp *qp)
{
	struct xferk_sched_item *it;
	int i;

	for (i = 0; i < USER_CLASSES; i++) {
		it = list_first_entry_or_null(&qp->blocked[i],
					      struct xferk_sched_item, node);
		if (it && !qp_full(it->sched, it))
			insert_by_seq(it, &it->sched->cls[i].items);
	}
}

/* @it waits on its next QP's blocked list, in admission order. */
static void block(struct xferk_sched_item *it)
{
	insert_by_seq(it, &it->next_qp->blocked[it->prio]);
}

/*
 * The first eligible item of class @prio, within the lookahead. On the
 * way, user items are not counted when they wait for themselves: their op
 * window is full (they have that many chunks in flight, so there are at
 * most as many such items as the QP windows let chunks be in flight), or
 * their QP's window is full (they move to its blocked list). So a user
 * item is blocked only while its own window has room, which stays so
 * until it is dispatched again: one that comes back goes, unless the
 * device window is full (which frees for everyone), and then passes the
 * room on (dispatch()).
 */
static struct xferk_sched_item *first_eligible(struct xferk_sched *s, int prio)
{
	struct xferk_sched_item *it, *tmp;
	u32 seen = 0, scanned = 0;

	list_for_each_entry_safe(it, tmp, &s->cls[prio].items, node) {
		if (++scanned > SCAN_MAX)
			break;
		if (prio == XFERK_PRIO_INTERNAL) {
			if (eligible(s, it))
				return it;
		} else if (op_window_full(it)) {
			continue;
		} else if (qp_full(s, it)) {
			block(it);
			continue;
		} else if (dev_window_fits(s, it)) {
			return it;
		}
		if (++seen >= s->lim->lookahead)
			break;
	}
	return NULL;
}

/* The user item waiting longest since its last progress, if aged. */
static struct xferk_sched_item *aged_item(struct xferk_sched *s, ktime_t now)
{
	struct xferk_sched_item *best = NULL, *it;
	int i;

	for (i = 0; i < USER_CLASSES; i++) {
		it = first_eligible(s, i);
		if (it && ktime_sub(now, it->progress) > (s64)s->lim->aging_ns &&
		    (!best || ktime_before(it->progress, best->progress)))
			best = it;
	}
	return best;
}

/* Charges one chunk of @it as dispatched. */
static void dispatch(struct xferk_sched *s, struct xferk_sched_item *it,
		     ktime_t now)
{
	struct xferk_sched_class *c = &s->cls[it->prio];
	u64 len = it->next_len;

	if (it->state == XFERK_Q_QUEUED) {
		s->stats.wait_hist[xferk_hist_bucket(ktime_sub(now, it->enqueued))]++;
		it->state = XFERK_Q_DISPATCHING;
	}
	it->undispatched_bytes -= len;
	it->undispatched_chunks--;
	it->inflight_bytes += len;
	it->inflight_chunks++;
	it->next_qp->outstanding++;
	it->next_qp->inflight_bytes += len;
	qp_settle(s, it->next_qp);
	dql_queued(&it->next_qp->bytes, dql_len(len));
	it->progress = now;
	c->bytes -= len;
	s->inflight_bytes += len;
	s->inflight_chunks++;
	s->stats.dispatched++;
	if (!it->undispatched_chunks) {
		list_del_init(&it->node);
		c->ops--;
		it->state = XFERK_Q_SUBMITTED;
	}
	unblock_heads(it->next_qp);
}

/**
 * xferk_sched_next() - pick the next chunk to dispatch
 * @s: the queue
 * @now: the time
 *
 * Return: the item whose next chunk (@next_len, @next_qp) was just charged
 * as dispatched, or NULL if nothing may go now. The caller hands that
 * chunk to the device and, if the item has more, sets its next chunk.
 */
struct xferk_sched_item *xferk_sched_next(struct xferk_sched *s, ktime_t now)
{
	struct xferk_sched_item *it;
	u32 idle = 0;

	it = first_eligible(s, XFERK_PRIO_INTERNAL);
	if (it)
		goto out;
	it = aged_item(s, now);
	if (it) {
		struct xferk_sched_class *c = &s->cls[it->prio];

		/* Owed, but not more than one quantum: DRR catches up fast. */
		c->deficit = max(c->deficit - (s64)it->next_len,
				 -(s64)s->lim->quantum_bytes * s->lim->weight[it->prio]);
		s->stats.aged++;
		goto out;
	}
	/* Ends: every visit either pays a quantum or finds nothing. */
	while (idle < USER_CLASSES) {
		struct xferk_sched_class *c = &s->cls[s->rr];
		s64 quantum = (s64)s->lim->quantum_bytes * s->lim->weight[s->rr];

		it = first_eligible(s, s->rr);
		if (it && !s->rr_paid && quantum) {
			c->deficit = min(c->deficit + quantum, quantum + (s64)it->next_len);
			s->rr_paid = true;
		}
		if (it && c->deficit >= (s64)it->next_len) {
			c->deficit -= it->next_len;
			goto out;
		}
		if (list_empty(&c->items))
			c->deficit = 0;
		idle = it && quantum ? 0 : idle + 1;
		s->rr = (s->rr + 1) % USER_CLASSES;
		s->rr_paid = false;
	}
	return NULL;
out:
	dispatch(s, it, now);
	return it;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_sched_next);

/**
 * xferk_sched_complete() - a dispatched chunk is terminal
 * @s: the queue
 * @it: its item
 * @len: its length
 * @qp: its QP
 * @xport_ns: dispatch to completion, for the histogram
 *
 * Return: true if the item is DONE: nothing of it is queued or in flight,
 * and its account was released.
 */
bool xferk_sched_complete(struct xferk_sched *s, struct xferk_sched_item *it,
			  u64 len, struct xferk_sched_qp *qp, s64 xport_ns)
{
	it->inflight_bytes -= len;
	it->inflight_chunks--;
	qp->outstanding--;
	qp->inflight_bytes -= len;
	qp->unsettled += dql_len(len);
	unblock_heads(qp);
	s->inflight_bytes -= len;
	s->inflight_chunks--;
	s->stats.xport_hist[xferk_hist_bucket(xport_ns)]++;
	if (it->undispatched_chunks || it->inflight_chunks)
		return false;
	it->state = XFERK_Q_DONE;
	it->acct->ops--;
	it->acct->bytes -= it->bytes;
	s->stats.completed++;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_sched_complete);

/**
 * xferk_sched_cancel() - take an item off the queue
 * @s: the queue
 * @it: the item
 *
 * Its undispatched chunks will never be dispatched; the caller completes
 * them without posting. Chunks in flight stay charged until they complete.
 *
 * Return: the number of undispatched chunks dropped.
 */
u32 xferk_sched_cancel(struct xferk_sched *s, struct xferk_sched_item *it)
{
	struct xferk_sched_class *c = &s->cls[it->prio];
	u32 dropped = it->undispatched_chunks;

	if (it->state != XFERK_Q_QUEUED && it->state != XFERK_Q_DISPATCHING)
		return 0;
	list_del_init(&it->node);
	if (it->next_qp)
		unblock_heads(it->next_qp);
	c->ops--;
	c->bytes -= it->undispatched_bytes;
	it->undispatched_bytes = 0;
	it->undispatched_chunks = 0;
	s->stats.cancelled++;
	if (it->inflight_chunks) {
		it->state = XFERK_Q_SUBMITTED;
	} else {
		it->state = XFERK_Q_DONE;
		it->acct->ops--;
		it->acct->bytes -= it->bytes;
	}
	return dropped;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_sched_cancel);

/* Nothing queued (on a class list or blocked) and nothing in flight. */
bool xferk_sched_empty(const struct xferk_sched *s)
{
	int i;

	for (i = 0; i < XFERK_PRIO_COUNT; i++)
		if (s->cls[i].ops)
			return false;
	return !s->inflight_chunks;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_sched_empty);

/**
 * xferk_sched_park() - a dispatched chunk waits for its session's next path
 * @s: the queue it was dispatched from
 * @len: its length
 *
 * It leaves the device window (others may use it while the session
 * reconnects) and stays charged to its op's and its QP's window, which
 * bound what one session can park. The caller tracks which chunks are
 * parked and unparks each once, before it completes.
 */
void xferk_sched_park(struct xferk_sched *s, u64 len)
{
	s->inflight_bytes -= len;
	s->parked_bytes += len;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_sched_park);

/**
 * xferk_sched_unpark() - a parked chunk is posted again, or completes
 * @s: the queue
 * @len: its length
 *
 * It counts against the device window again, even beyond it: a session
 * that comes back re-posts what it had in flight without waiting for the
 * others, so the window may be exceeded by what its QP window allows.
 */
void xferk_sched_unpark(struct xferk_sched *s, u64 len)
{
	s->parked_bytes -= len;
	s->inflight_bytes += len;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_sched_unpark);
