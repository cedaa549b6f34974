// SPDX-License-Identifier: GPL-2.0
/*
 * Ops: their life, their chunks' ends and their physical end.
 *
 * An op owns an array of chunks, one work request each. op_submit.c
 * checks, cuts and publishes it, op_cancel.c runs its deadline and its
 * drains, op_ioctl.c (front layer) has its commands. Here: a chunk that
 * becomes terminal counts in its op (op_chunk_complete(),
 * op_chunks_succeeded(): the sessions layer calls them through struct
 * xferk_chunk_events), the op that becomes physically complete ends
 * (op_apply()), and the op goes with its last reference (op_release()).
 *
 * References: the op's handle holds one, and "not yet physically complete"
 * holds one; each chunk holds a region and a remote reference, and the op
 * one on each distinct connection it uses. When the last chunk becomes
 * terminal (xferk_life_chunk_done() says so exactly once), the chunks'
 * references are dropped, which unpins pages whose regions are gone, the
 * chunks are freed, and then the physical reference goes. The connection
 * references go with the op: a drain may still be walking them. An op
 * whose handle was released before it was physically complete is owned by
 * the kernel until then.
 *
 * Memory: everything an op holds is charged to the submitter's memory
 * cgroup, an op is bounded (XFERK_MAX_OP_BYTES, XFERK_MAX_OP_WRS), and the
 * chunks of a file's unfinished ops are bounded by max_chunks_per_file.
 *
 * Locking: op->lock (irq-safe: the deadline hrtimer takes it) guards
 * op->life and op->drain_deadline; nothing but queue_work() is called
 * under it. A chunk's end of an op with a notification takes the
 * notification session's lock (a mutex) before op->lock
 * (chunk_end_count()). Chunks end in process context, without their
 * sessions' or the queue's locks, and op_apply() calls the op's settle
 * callback without any of these (struct xferk_op_settle).
 */
#include <linux/hrtimer.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "conn.h"
#include "export.h"
#include "lifecycle.h"
#include "notify.h"
#include "op.h"
#include "op_internal.h"
#include "queue.h"
#include "ready.h"
#include "region.h"
#include "stats.h"
#include "trace.h"

DEFINE_SPINLOCK(xferk_ops_lock);	/* xferk_ops */
LIST_HEAD(xferk_ops);
struct workqueue_struct *xferk_op_wq;

static void op_release(struct kref *ref)
{
	struct xferk_op *op = container_of(ref, struct xferk_op, ref);
	u32 i;

	/* No drain is active (it holds a reference), so its timer is idle. */
	hrtimer_cancel(&op->timer);
	trace_xferk_op_release(op->id, op->life.state);
	if (op->group)
		xferk_group_op_gone(op);
	for (i = 0; i < op->nr_conns; i++)
		xferk_conn_put(op->conns[i]);
	if (op->q.qdev)
		xferk_qdev_put(op->q.qdev);
	xferk_qacct_put(op->qacct);
	xferk_ready_put(op->ready);
	spin_lock(&xferk_ops_lock);
	list_del(&op->node);
	spin_unlock(&xferk_ops_lock);
	kvfree(op->conns);
	kfree(op);
	atomic64_dec(&xferk_stats.ops_live);
}

/*
 * Counts the wakeup for the op's file's poll(2), then wakes the op's
 * waiters: one that returns then reads the count with this one in it.
 * Any context, hardirq included.
 */
void op_wake(struct xferk_op *op)
{
	xferk_ready_bump(op->ready);
	wake_up_all(&op->wq);
}

void xferk_op_put(struct xferk_op *op)
{
	kref_put(&op->ref, op_release);
}

static void op_count_outcome(struct xferk_op *op, u32 state)
{
	switch (state) {
	case XFERK_STATE_SUCCEEDED:
		atomic64_inc(&xferk_stats.ops_succeeded);
		atomic64_add(op->read_bytes, &xferk_stats.bytes_read);
		atomic64_add(op->life.total_bytes - op->read_bytes,
			     &xferk_stats.bytes_written);
		break;
	case XFERK_STATE_FAILED:
		atomic64_inc(&xferk_stats.ops_failed);
		break;
	}
}

/* Drops what each of the op's filled chunks holds: its region and remote. */
void op_put_chunks(struct xferk_op *op)
{
	u32 i;

	for (i = 0; i < op->nr_chunks; i++) {
		xferk_region_put(op->chunks[i].wr.region);
		xferk_remote_put(op->chunks[i].remote);
	}
}

/* Drops what the chunks hold, and the chunks: the op is physical. */
static void op_free_chunks(struct xferk_op *op)
{
	struct xferk_chunk *chunks = op->chunks;

	op_put_chunks(op);
	WRITE_ONCE(op->chunks, NULL);
	op->q.chunks = NULL;
	kvfree(chunks);
	atomic_long_sub(op->nr_chunks, &op->qacct->chunks);
}

/*
 * The op is physically complete: nothing of it can touch memory any more.
 * That is visible (op->life, under op->lock) before this runs; here the
 * chunks' pages are released, then waiters wake, then the physical
 * reference goes. So whoever sees a page count drop (pinned_pages) and
 * then looks at the op sees it physically complete, and a waiter that
 * wakes for physical completion sees the pages released. @state is the
 * op's state when that was decided (under op->lock: a lockless read could
 * see a cancel's passing CANCEL_REQUESTED).
 */
static void op_apply(struct xferk_op *op, unsigned int what, u32 state)
{
	if (what & XFERK_LIFE_PHYSICAL) {
		trace_xferk_op_physical(op->id, state);
		hrtimer_cancel(&op->timer);
		/* A background drain waiting for its next step ends now. */
		if (hrtimer_try_to_cancel(&op->drain_timer) == 1)
			queue_work(xferk_op_wq, &op->cancel_work);
		op_count_outcome(op, state);
		if (op->orphaned)
			atomic64_inc(&xferk_stats.ops_drained_after_exit);
		op_free_chunks(op);
		if (op->group)
			xferk_group_op_physical(op->group);
	}
	if (what & XFERK_LIFE_WAKE)
		op_wake(op);
	if (what & XFERK_LIFE_PHYSICAL) {
		if (op->settled)
			op->settled(op, state);
		xferk_op_put(op);
	}
}

/* A chunk's end begins: traced, and its op kept by a reference. */
static void chunk_end_begin(struct xferk_chunk *ch, int error)
{
	trace_xferk_chunk_done(ch->op->id, xferk_chunk_remote(ch)->conn->id,
			       ch->wr.len, error);
	kref_get(&ch->op->ref);
}

/*
 * The session of the op's notification, while it has one not yet queued
 * (NULL otherwise). The op's connections keep that session alive.
 */
static struct xferk_conn *op_notify_conn(struct xferk_op *op)
{
	struct xferk_conn *c = NULL;
	unsigned long flags;

	spin_lock_irqsave(&op->lock, flags);
	if (op->notify)
		c = op->notify->conn;
	spin_unlock_irqrestore(&op->lock, flags);
	return c;
}

/*
 * The op became physically complete (op->lock held): its notification,
 * if it asked for one and has not sent it, is taken to be queued, with
 * what the op transferred. Every write it made was acknowledged by the
 * target's device.
 */
static struct xferk_notify *op_take_notify(struct xferk_op *op, u32 state)
{
	struct xferk_notify *n = op->notify;

	lockdep_assert_held(&op->lock);
	if (!n)
		return NULL;
	op->notify = NULL;
	n->bytes = op->life.transferred_bytes;
	if (state != XFERK_STATE_SUCCEEDED)
		n->flags |= XFERK_EVENT_INCOMPLETE;
	return n;
}

/*
 * A chunk's end, after the queue's part: the chunk counts terminal in its
 * op, which acts on what that changes; then the reference of
 * chunk_end_begin() goes. The last chunk frees every chunk of the op, @ch
 * included: only that reference keeps the op meanwhile (another chunk's
 * completion may free the chunks and drop the physical reference).
 *
 * An op with a notification changes under its notification session's
 * lock, and the chunk that makes it physically complete numbers the
 * notification in that same hold: whatever anyone does once they see the
 * op physically complete (WAIT, QUERY, another op, a NOTE) comes after
 * its DATA event in the session's order.
 */
static void chunk_end_count(struct xferk_chunk *ch, int error)
{
	struct xferk_op *op = ch->op;
	struct xferk_conn *nc = op_notify_conn(op);
	struct xferk_notify *n = NULL;
	unsigned long flags;
	unsigned int what;
	u32 late, state;
	bool queued;

	if (nc)
		mutex_lock(&nc->lock);
	spin_lock_irqsave(&op->lock, flags);
	late = op->life.late_completions;
	/* The clock only for the last chunk: the op's physical time. */
	what = xferk_life_chunk_done(&op->life, ch->wr.len, ch->sent, error,
				     ch->frags_done,
				     xferk_life_last_chunk(&op->life) ?
				     ktime_get() : 0);
	late = op->life.late_completions - late;
	state = op->life.state;
	if (nc && (what & XFERK_LIFE_PHYSICAL))
		n = op_take_notify(op, state);
	spin_unlock_irqrestore(&op->lock, flags);
	if (nc) {
		queued = !n || xferk_notify_queue_locked(n);
		mutex_unlock(&nc->lock);
		if (!queued)
			xferk_notify_free(n);
	}
	if (late)
		atomic64_inc(&xferk_stats.late_completions);
	op_apply(op, what, state);
	xferk_op_put(op);
}

/*
 * A chunk became terminal (completed or never posted) with @error, 0 or a
 * negative errno: once per chunk, from process context.
 */
static void op_chunk_complete(struct xferk_chunk *ch, int error)
{
	struct xferk_op *op = ch->op;
	unsigned long flags;

	chunk_end_begin(ch, error);
	/*
	 * Its error is the op's first before the queue drops the op's other
	 * chunks (with ECANCELED); then the queue, while this chunk still
	 * keeps the op physically alive.
	 */
	if (error) {
		spin_lock_irqsave(&op->lock, flags);
		xferk_life_error(&op->life, error);
		spin_unlock_irqrestore(&op->lock, flags);
	}
	if (ch->dispatched)
		xferk_queue_chunk_done(ch, error);
	chunk_end_count(ch, error);
}

/*
 * Posted chunks @chs (of any ops) completed without error: as
 * op_chunk_complete(ch, 0) for each, the queue's part for all of them
 * first, in one batch (xferk_queue_chunks_succeeded()): every chunk keeps
 * its op physically alive until it is counted. From process context.
 */
static void op_chunks_succeeded(struct xferk_chunk **chs, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		chunk_end_begin(chs[i], 0);
	xferk_queue_chunks_succeeded(chs, n);
	for (i = 0; i < n; i++)
		chunk_end_count(chs[i], 0);
}

/* A chunk was handed to the device. Called under its connection's lock. */
static void op_chunk_posted(struct xferk_chunk *ch)
{
	struct xferk_op *op = ch->op;
	unsigned long flags;
	unsigned int what;

	ch->sent = true;
	trace_xferk_chunk_post(op->id, xferk_chunk_remote(ch)->conn->id, ch->wr.len,
			       0);
	spin_lock_irqsave(&op->lock, flags);
	what = xferk_life_posted(&op->life, ch->wr.len);
	spin_unlock_irqrestore(&op->lock, flags);
	if (what & XFERK_LIFE_WAKE)
		op_wake(op);
}

/*
 * A posted chunk is queued to be posted again (its path died): its bytes
 * are no longer in flight, until it is. Called by the chunk's holder:
 * under its connection's lock, or with the chunk off every list.
 */
static void op_chunk_unposted(struct xferk_chunk *ch)
{
	struct xferk_op *op = ch->op;
	unsigned long flags;

	ch->sent = false;
	spin_lock_irqsave(&op->lock, flags);
	xferk_life_unposted(&op->life, ch->wr.len);
	spin_unlock_irqrestore(&op->lock, flags);
}

/* A chunk of an op whose outcome is decided is dropped instead of posted. */
static bool op_chunk_cancelled(struct xferk_chunk *ch)
{
	struct xferk_op *op = ch->op;
	unsigned long flags;
	bool cancelled;

	spin_lock_irqsave(&op->lock, flags);
	cancelled = op->life.first_error ||
		    xferk_state_is_settled(op->life.state);
	spin_unlock_irqrestore(&op->lock, flags);
	return cancelled;
}

/* Nothing of the op can touch memory any more. Any context. */
bool xferk_op_physical(struct xferk_op *op)
{
	unsigned long flags;
	bool done;

	spin_lock_irqsave(&op->lock, flags);
	done = xferk_life_physical(&op->life);
	spin_unlock_irqrestore(&op->lock, flags);
	return done;
}

void xferk_op_snapshot(struct xferk_op *op, struct xferk_op_snapshot *snap)
{
	unsigned long flags;

	spin_lock_irqsave(&op->lock, flags);
	xferk_life_snapshot(&op->life, snap);
	spin_unlock_irqrestore(&op->lock, flags);
	snap->user_data = op->user_data;
}

/* Does @ch's op hold session @c (it may only use the sessions it holds)? */
static bool op_chunk_holds(const struct xferk_chunk *ch,
			   const struct xferk_conn *c)
{
	u32 i;

	for (i = 0; i < ch->op->nr_conns; i++)
		if (ch->op->conns[i] == c)
			return true;
	return false;
}

static struct xferk_qentry *op_chunk_queue_entry(const struct xferk_chunk *ch)
{
	return &ch->op->q;
}

static const struct xferk_chunk_events op_chunk_events = {
	.complete = op_chunk_complete,
	.succeeded = op_chunks_succeeded,
	.posted = op_chunk_posted,
	.unposted = op_chunk_unposted,
	.cancelled = op_chunk_cancelled,
	.holds = op_chunk_holds,
	.queue_entry = op_chunk_queue_entry,
};

int xferk_op_module_init(void)
{
	xferk_chunk_set_events(&op_chunk_events);
	xferk_op_wq = alloc_workqueue("xferk_op", WQ_UNBOUND, 0);
	return xferk_op_wq ? 0 : -ENOMEM;
}

void xferk_op_module_exit(void)
{
	destroy_workqueue(xferk_op_wq);
}
