// SPDX-License-Identifier: GPL-2.0
/*
 * Ops: submit, completion, deadline, wait, query.
 *
 * An op owns an array of chunks, one work request each. At submit every
 * fragment is checked against its region and remote range before anything
 * is published (all or nothing); then the op gets its handle and its
 * chunks go to their connections' queues.
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
 * under it.
 */
#include <linux/hrtimer.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "conn.h"
#include "export.h"
#include "frag.h"
#include "front.h"
#include "handle.h"
#include "lifecycle.h"
#include "limits.h"
#include "notify.h"
#include "op.h"
#include "queue.h"
#include "rail.h"
#include "region.h"
#include "stats.h"
#include "transport.h"
#include "xferk.h"
#include "trace.h"

DEFINE_SPINLOCK(xferk_ops_lock);	/* xferk_ops */
LIST_HEAD(xferk_ops);
static struct workqueue_struct *xferk_op_wq;

unsigned int xferk_exit_drain_ms = 5000;
module_param_named(exit_drain_ms, xferk_exit_drain_ms, uint, 0644);
MODULE_PARM_DESC(exit_drain_ms,
		 "Drain budget for ops of a closed file or exited process (default 5000)");

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
	if (op->qdev)
		xferk_qdev_put(op->qdev);
	xferk_qacct_put(op->qacct);
	spin_lock(&xferk_ops_lock);
	list_del(&op->node);
	spin_unlock(&xferk_ops_lock);
	kvfree(op->conns);
	kfree(op);
	atomic64_dec(&xferk_stats.ops_live);
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

/* Drops what the chunks hold, and the chunks: the op is physical. */
static void op_free_chunks(struct xferk_op *op)
{
	struct xferk_chunk *chunks = op->chunks;
	u32 i;

	for (i = 0; i < op->nr_chunks; i++) {
		xferk_region_put(chunks[i].region);
		xferk_remote_put(chunks[i].remote);
	}
	WRITE_ONCE(op->chunks, NULL);
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
		wake_up_all(&op->wq);
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
			       ch->len, error);
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
	what = xferk_life_chunk_done(&op->life, ch->len, ch->sent, error,
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

/**
 * xferk_chunk_complete() - a chunk became terminal
 * @ch: the chunk; completed or never posted
 * @error: 0 or a negative errno
 *
 * Called once per chunk, from process context.
 */
void xferk_chunk_complete(struct xferk_chunk *ch, int error)
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

/**
 * xferk_chunks_succeeded() - posted chunks completed without error
 * @chs: the chunks (of any ops)
 * @n: how many
 *
 * As xferk_chunk_complete(ch, 0) for each, the queue's part for all of
 * them first, in one batch (xferk_queue_chunks_succeeded()): every chunk
 * keeps its op physically alive until it is counted. From process context.
 */
void xferk_chunks_succeeded(struct xferk_chunk **chs, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		chunk_end_begin(chs[i], 0);
	xferk_queue_chunks_succeeded(chs, n);
	for (i = 0; i < n; i++)
		chunk_end_count(chs[i], 0);
}

/* A chunk was handed to the device. Called under its connection's lock. */
void xferk_chunk_posted(struct xferk_chunk *ch)
{
	struct xferk_op *op = ch->op;
	unsigned long flags;
	unsigned int what;

	ch->sent = true;
	trace_xferk_chunk_post(op->id, xferk_chunk_remote(ch)->conn->id, ch->len,
			       0);
	spin_lock_irqsave(&op->lock, flags);
	what = xferk_life_posted(&op->life, ch->len);
	spin_unlock_irqrestore(&op->lock, flags);
	if (what & XFERK_LIFE_WAKE)
		wake_up_all(&op->wq);
}

/*
 * A posted chunk is queued to be posted again (its path died): its bytes
 * are no longer in flight, until it is. Called by the chunk's holder:
 * under its connection's lock, or with the chunk off every list.
 */
void xferk_chunk_unposted(struct xferk_chunk *ch)
{
	struct xferk_op *op = ch->op;
	unsigned long flags;

	ch->sent = false;
	spin_lock_irqsave(&op->lock, flags);
	xferk_life_unposted(&op->life, ch->len);
	spin_unlock_irqrestore(&op->lock, flags);
}

/* A chunk of an op whose outcome is decided is dropped instead of posted. */
bool xferk_chunk_cancelled(struct xferk_chunk *ch)
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

static void op_drain_work(struct work_struct *work);

static void op_cancel_on_conns(struct xferk_op *op, bool force);

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

static bool ops_physical(struct xferk_op **ops, u32 nr)
{
	u32 k;

	for (k = 0; k < nr; k++)
		if (!xferk_op_physical(ops[k]))
			return false;
	return true;
}

/**
 * op_drain_async() - cancel and drain an op in the background
 * @op: the op
 * @drain_deadline: absolute bound of the drain
 *
 * Any context (the deadline hrtimer calls it). The same steps as
 * xferk_op_cancel_drain(), driven by op->drain_timer instead of a sleeping
 * thread, so a drain costs a timer however long its budget. A request
 * while one runs is folded into it, with the earlier of the two deadlines:
 * a step waiting for a later time is then due at once.
 */
static void op_drain_async(struct xferk_op *op, ktime_t drain_deadline)
{
	unsigned long flags;
	bool sooner = false;

	spin_lock_irqsave(&op->lock, flags);
	if (!test_and_set_bit(XFERK_OP_CANCEL_QUEUED, &op->flags)) {
		op->drain_deadline = drain_deadline;
		op->drain_step = XFERK_DRAIN_BEGIN;
		kref_get(&op->ref);
		queue_work(xferk_op_wq, &op->cancel_work);
	} else if (drain_deadline < op->drain_deadline) {
		op->drain_deadline = drain_deadline;
		sooner = true;
	}
	spin_unlock_irqrestore(&op->lock, flags);
	if (sooner && hrtimer_try_to_cancel(&op->drain_timer) == 1)
		queue_work(xferk_op_wq, &op->cancel_work);
}

static ktime_t op_drain_deadline(struct xferk_op *op)
{
	unsigned long flags;
	ktime_t until;

	spin_lock_irqsave(&op->lock, flags);
	until = op->drain_deadline;
	spin_unlock_irqrestore(&op->lock, flags);
	return until;
}

/*
 * The background drain's next step is due at @when, computed from the
 * deadline @until. Whoever stops the armed timer queues the step instead
 * of it: the timer itself, a physical completion that makes waiting
 * pointless (here, or in op_apply()), or an earlier deadline (here, or in
 * op_drain_async()).
 */
static void op_drain_arm(struct xferk_op *op, ktime_t when, ktime_t until)
{
	hrtimer_start(&op->drain_timer, when, HRTIMER_MODE_ABS);
	if ((xferk_op_physical(op) || op_drain_deadline(op) < until) &&
	    hrtimer_try_to_cancel(&op->drain_timer) == 1)
		queue_work(xferk_op_wq, &op->cancel_work);
}

static enum hrtimer_restart op_drain_timer_fired(struct hrtimer *t)
{
	struct xferk_op *op = container_of(t, struct xferk_op, drain_timer);

	queue_work(xferk_op_wq, &op->cancel_work);
	return HRTIMER_NORESTART;
}

/* Starts a cancel: counters, states, waiters. */
static void op_drain_begin(struct xferk_op *op)
{
	unsigned long flags;
	unsigned int what, drain;
	u32 state;

	spin_lock_irqsave(&op->lock, flags);
	what = xferk_life_cancel(&op->life);
	drain = xferk_life_drain_start(&op->life);
	state = op->life.state;
	spin_unlock_irqrestore(&op->lock, flags);
	trace_xferk_op_cancel(op->id, state);
	if ((what | drain) & XFERK_LIFE_WAKE)
		wake_up_all(&op->wq);
	if (drain)
		atomic64_inc(&xferk_stats.drains);
	atomic64_inc(&xferk_stats.cancel_requests);
}

/* The drain deadline passed: QUARANTINED unless physically complete. */
static void op_drain_expire(struct xferk_op *op)
{
	unsigned long flags;
	unsigned int what;

	spin_lock_irqsave(&op->lock, flags);
	what = xferk_life_drain_expired(&op->life);
	spin_unlock_irqrestore(&op->lock, flags);
	if (what) {
		trace_xferk_op_quarantine(op->id, XFERK_STATE_QUARANTINED);
		atomic64_inc(&xferk_stats.drain_timeouts);
		atomic64_inc(&xferk_stats.quarantine_events);
		wake_up_all(&op->wq);
		if (op->settled)
			op->settled(op, XFERK_STATE_QUARANTINED);
	}
}

/* One step of the background drain; holds its reference until the last. */
static void op_drain_work(struct work_struct *work)
{
	struct xferk_op *op = container_of(work, struct xferk_op, cancel_work);
	ktime_t now = ktime_get(), until = op_drain_deadline(op);

	switch (op->drain_step) {
	case XFERK_DRAIN_BEGIN:
		op_drain_begin(op);
		if (xferk_op_physical(op))
			break;
		op_cancel_on_conns(op, false);
		op->drain_step = XFERK_DRAIN_FORCE;
		op_drain_arm(op, ktime_add(now, ktime_sub(until, now) / 2), until);
		return;
	case XFERK_DRAIN_FORCE:
		if (xferk_op_physical(op))
			break;
		op_cancel_on_conns(op, true);
		op->drain_step = XFERK_DRAIN_EXPIRE;
		op_drain_arm(op, until, until);
		return;
	case XFERK_DRAIN_EXPIRE:
		op_drain_expire(op);
		break;
	}
	clear_bit(XFERK_OP_CANCEL_QUEUED, &op->flags);
	xferk_op_put(op);
}

/*
 * After the deadline: the op's chunks that are not posted leave the queue
 * and their connections unposted (a session that is replacing its path
 * holds them until it has one).
 */
static void op_expire_work(struct work_struct *work)
{
	struct xferk_op *op = container_of(work, struct xferk_op, expire_work);
	u32 i;

	xferk_queue_drop(op);
	for (i = 0; i < op->nr_conns; i++)
		xferk_conn_drop_op(op->conns[i], op);
	xferk_op_put(op);
}

static enum hrtimer_restart op_deadline_fired(struct hrtimer *t)
{
	struct xferk_op *op = container_of(t, struct xferk_op, timer);
	unsigned long flags;
	unsigned int what;

	spin_lock_irqsave(&op->lock, flags);
	what = xferk_life_deadline(&op->life);
	spin_unlock_irqrestore(&op->lock, flags);
	/*
	 * Never XFERK_LIFE_PHYSICAL: waking and queueing work is all that may
	 * happen in hardirq. The timer runs while the op lives: op_apply()
	 * and op_release() cancel it.
	 */
	if (what & XFERK_LIFE_WAKE) {
		trace_xferk_op_deadline(op->id, XFERK_STATE_TIMED_OUT);
		atomic64_inc(&xferk_stats.ops_timed_out);
		wake_up_all(&op->wq);
		kref_get(&op->ref);
		queue_work(xferk_op_wq, &op->expire_work);
		if (op->submit_flags & XFERK_SUBMIT_CANCEL_ON_DEADLINE)
			op_drain_async(op,
				       xferk_drain_deadline(op->deadline,
							    op->drain_budget_ns));
	}
	return HRTIMER_NORESTART;
}

/*
 * Copies the caller's fragment array, following the struct rules: in one
 * copy when its entries have this kernel's size, else one by one.
 */
static int copy_frags(struct xferk_frag *frags,
		      const struct xferk_ioc_submit *a)
{
	u32 i;
	int ret;

	if (a->frag_size == sizeof(*frags))
		return copy_from_user(frags, u64_to_user_ptr(a->frags),
				      (size_t)a->nr_frags * sizeof(*frags)) ?
		       -EFAULT : 0;
	for (i = 0; i < a->nr_frags; i++) {
		ret = copy_struct_from_user(&frags[i], sizeof(*frags),
					    u64_to_user_ptr(a->frags +
							    (u64)i * a->frag_size),
					    a->frag_size);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The object of @kind that @handle names: @prev, the object of the
 * fragment before, when that fragment named it by the same handle (the
 * file's lock, held across the check of all fragments, keeps the table
 * as it is); else a lookup.
 */
static struct xferk_hobj *frag_handle(struct xferk_file *xf, u64 handle,
				      u8 kind, u64 prev_handle,
				      struct xferk_hobj *prev)
{
	if (prev && handle == prev_handle)
		return prev;
	return xferk_handle_lookup(&xf->handles, handle, kind);
}

/*
 * Checks fragment @i against its handles into @regions[@i] and
 * @remotes[@i] (fragments 0 to @i - 1 are checked); takes no references.
 */
static int check_frag(struct xferk_file *xf, const struct xferk_frag *frags,
		      u32 i, struct xferk_region **regions,
		      struct xferk_remote **remotes)
{
	const struct xferk_frag *f = &frags[i];
	struct xferk_hobj *ho;
	struct xferk_region *r;
	struct xferk_remote *rm;
	int ret;

	if (f->reserved || f->opcode > XFERK_OP_WRITE)
		return -EINVAL;
	ho = frag_handle(xf, f->mr, XFERK_H_REGION, i ? frags[i - 1].mr : 0,
			 i ? &regions[i - 1]->hobj : NULL);
	if (IS_ERR(ho))
		return PTR_ERR(ho);
	r = container_of(ho, struct xferk_region, hobj);
	ho = frag_handle(xf, f->remote, XFERK_H_REMOTE,
			 i ? frags[i - 1].remote : 0,
			 i ? &remotes[i - 1]->hobj : NULL);
	if (IS_ERR(ho))
		return PTR_ERR(ho);
	rm = container_of(ho, struct xferk_remote, hobj);
	/* Its exporter revoked it (its chunks would fail unposted). */
	if (READ_ONCE(rm->error) == -ESTALE)
		return -ESTALE;
	ret = xferk_range_check(f->offset, f->len, r->len);
	if (!ret)
		ret = xferk_range_check(f->remote_offset, f->len, rm->len);
	if (ret)
		return ret;
	if (f->opcode == XFERK_OP_WRITE ?
	    !(r->access & XFERK_ACCESS_LOCAL_SRC) ||
	    !(rm->access & XFERK_ACCESS_REMOTE_WRITE) :
	    !(r->access & XFERK_ACCESS_LOCAL_DST) ||
	    !(rm->access & XFERK_ACCESS_REMOTE_READ))
		return -EACCES;
	regions[i] = r;
	remotes[i] = rm;
	return 0;
}

/*
 * Does fragment @i (> 0) continue fragment @i - 1, so that one chunk may
 * carry bytes of both? Same region, remote and opcode, and the bytes
 * follow each other on both sides.
 */
static bool frag_continues(const struct xferk_frag *frags,
			   struct xferk_region **regions,
			   struct xferk_remote **remotes, u32 i)
{
	const struct xferk_frag *p = &frags[i - 1], *f = &frags[i];

	return regions[i] == regions[i - 1] && remotes[i] == remotes[i - 1] &&
	       f->opcode == p->opcode && f->offset == p->offset + p->len &&
	       f->remote_offset == p->remote_offset + p->len;
}

/* The end of the run of fragments from @i on that continue each other. */
static u32 frag_run_end(const struct xferk_frag *frags,
			struct xferk_region **regions,
			struct xferk_remote **remotes, u32 nr, u32 i)
{
	for (i++; i < nr && frag_continues(frags, regions, remotes, i); i++)
		;
	return i;
}

/*
 * Cuts the run frags[0..@nr) (fragments that continue each other, on @r
 * and @rm) into chunks as one range: a chunk may end inside a fragment or
 * carry the ends of several (@frags_done).
 */
static void op_fill_run(struct xferk_op *op, u32 *next,
			const struct xferk_frag *frags, u32 nr,
			struct xferk_region *r, struct xferk_remote *rm)
{
	u64 done = 0, run_len = 0, frag_end = frags[0].len, max_bytes;
	u32 f = 0, i, max_pages;

	xferk_remote_limits(rm, &max_pages, &max_bytes);
	for (i = 0; i < nr; i++)
		run_len += frags[i].len;
	while (done < run_len) {
		struct xferk_chunk *ch = &op->chunks[(*next)++];
		u64 len = xferk_chunk_len(r->addr + frags[0].offset + done,
					  run_len - done, max_pages, max_bytes);

		INIT_LIST_HEAD(&ch->node);
		ch->op = op;
		ch->region = r;
		ch->remote = rm;
		xferk_region_get(r);
		xferk_remote_get(rm);
		ch->rail = xferk_remote_pick_rail(rm);
		ch->offset = frags[0].offset + done;
		ch->len = len;
		ch->remote_addr = xferk_chunk_remote(ch)->iova +
				  frags[0].remote_offset + done;
		ch->opcode = frags[0].opcode;
		done += len;
		for (; f < nr && frag_end <= done; f++) {
			ch->frags_done++;
			if (f + 1 < nr)
				frag_end += frags[f + 1].len;
		}
	}
}

/*
 * The distinct connections of @nr remotes and their rails, with a
 * reference each, into @op->conns (sized for the rails of each run of
 * fragments on one remote). Return: 0 or -ENOMEM.
 */
static int op_collect_conns(struct xferk_op *op, struct xferk_remote **remotes,
			    u32 nr)
{
	u32 i, j, k, n = 0;

	for (i = 0; i < nr; i++)
		if (!i || remotes[i] != remotes[i - 1])
			n += xferk_remote_nr_rails(remotes[i]);
	op->conns = kvmalloc_array(n, sizeof(*op->conns), XFERK_GFP_USER);
	if (!op->conns)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		if (i && remotes[i] == remotes[i - 1])
			continue;
		for (k = 0; k < xferk_remote_nr_rails(remotes[i]); k++) {
			struct xferk_conn *c =
				xferk_remote_rail_conn(remotes[i], k);

			for (j = 0; j < op->nr_conns && op->conns[j] != c; j++)
				;
			if (j < op->nr_conns)
				continue;
			xferk_conn_get(c);
			op->conns[op->nr_conns++] = c;
		}
	}
	return 0;
}

/*
 * Makes the DMA maps of the op's regions for the devices of the sessions
 * (rails included) their fragments go to, before the op is visible and
 * outside every session's lock: a large region's first post would
 * otherwise map all of its pages under the posting session's lock,
 * stalling every tenant's posts and completions there. Best effort: a
 * map that could not be made now is made by the post.
 */
static void op_map_regions(struct xferk_region **regions,
			   struct xferk_remote **remotes, u32 nr)
{
	struct xferk_conn *c;
	u32 i, k;

	for (i = 0; i < nr; i++) {
		if (i && regions[i] == regions[i - 1] &&
		    remotes[i] == remotes[i - 1])
			continue;
		for (k = 0; k < xferk_remote_nr_rails(remotes[i]); k++) {
			c = xferk_remote_rail_conn(remotes[i], k);
			if (c->transport->map_region)
				c->transport->map_region(c, regions[i]);
		}
	}
}

/*
 * Around the admission queue: every chunk to its connection now, in
 * batches. The caller's reference keeps the op; a batch's chunks may be
 * complete once it was queued, the ones after it cannot.
 */
static void op_queue_direct(struct xferk_op *op)
{
	struct xferk_chunk *batch[XFERK_POST_BATCH];
	u32 i, n = 0;

	for (i = 0; i < op->nr_chunks; i++) {
		batch[n++] = &op->chunks[i];
		if (n == ARRAY_SIZE(batch) || i + 1 == op->nr_chunks) {
			xferk_chunks_queue(batch, n);
			n = 0;
		}
	}
}

/**
 * xferk_op_submit() - validate a batch, publish it as an op and start it
 * @xf: the submitting file
 * @a: the submit argument (kernel copy); @a->op is set on success
 * @settle: the command to complete when the op settles, or NULL
 *
 * All or nothing: on error nothing was published. Every bound is checked
 * before the chunks are allocated, and the work is bounded by them.
 *
 * Return: 0, or a negative errno.
 */
int xferk_op_submit(struct xferk_file *xf, struct xferk_ioc_submit *a,
		    const struct xferk_op_settle *settle)
{
	struct xferk_region **regions = NULL;
	struct xferk_remote **remotes = NULL;
	struct xferk_notify *notify = NULL;
	struct xferk_group *group = NULL;
	struct xferk_frag *frags;
	struct xferk_op *op;
	u64 total_bytes = 0, nr_chunks = 0;
	u32 i, j, end, next = 0;
	ktime_t deadline;
	int ret;

	if ((a->flags & ~XFERK_SUBMIT_FLAGS) || a->reserved || a->reserved2 ||
	    (!(a->flags & XFERK_SUBMIT_CANCEL_ON_DEADLINE) && a->drain_budget_ns) ||
	    (!(a->flags & XFERK_SUBMIT_NOTIFY) && a->notify_tag) ||
	    a->priority >= XFERK_PRIO_COUNT)
		return -EINVAL;
	if (a->priority == XFERK_PRIO_INTERNAL && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (!a->nr_frags)
		return -EINVAL;
	if (a->nr_frags > XFERK_MAX_FRAGS)
		return -E2BIG;
	ret = xferk_arg_size_check(a->frag_size, sizeof(struct xferk_frag));
	if (ret)
		return ret;
	deadline = xferk_deadline_from_user(a->deadline_ns);
	if (xferk_deadline_passed(deadline, ktime_get()))
		return -ETIMEDOUT;
	if (!xferk_handle_room_limited(xf, XFERK_H_OP))
		return -EMFILE;

	frags = kvmalloc_array(a->nr_frags, sizeof(*frags), XFERK_GFP_USER);
	regions = kvmalloc_array(a->nr_frags, sizeof(*regions),
				 XFERK_GFP_USER);
	remotes = kvmalloc_array(a->nr_frags, sizeof(*remotes),
				 XFERK_GFP_USER);
	op = kzalloc(sizeof(*op), XFERK_GFP_USER);
	if (!frags || !regions || !remotes || !op) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = copy_frags(frags, a);
	if (ret)
		goto out_free;

	/* Validate everything before publishing anything. */
	mutex_lock(&xf->lock);
	for (i = 0; i < a->nr_frags; i++) {
		ret = check_frag(xf, frags, i, regions, remotes);
		if (ret)
			goto out_unlock;
		/* Each length is within its region: no sum can wrap. */
		total_bytes += frags[i].len;
		if (total_bytes > XFERK_MAX_OP_BYTES) {
			ret = -E2BIG;
			goto out_unlock;
		}
		if (frags[i].opcode == XFERK_OP_READ)
			op->read_bytes += frags[i].len;
	}
	/* Runs of fragments that continue each other are cut as one range. */
	for (i = 0; i < a->nr_frags; i = end) {
		u64 run_len = 0, max_bytes;
		u32 max_pages;

		end = frag_run_end(frags, regions, remotes, a->nr_frags, i);
		for (j = i; j < end; j++)
			run_len += frags[j].len;
		xferk_remote_limits(remotes[i], &max_pages, &max_bytes);
		nr_chunks += xferk_chunk_count(regions[i]->addr + frags[i].offset,
					       run_len, max_pages, max_bytes,
					       XFERK_MAX_OP_WRS - nr_chunks);
		if (nr_chunks > XFERK_MAX_OP_WRS) {
			ret = -E2BIG;
			goto out_unlock;
		}
	}
	if (a->group) {
		struct xferk_hobj *ho = xferk_handle_lookup(&xf->handles,
							    a->group,
							    XFERK_H_GROUP);

		if (IS_ERR(ho)) {
			ret = PTR_ERR(ho);
			goto out_unlock;
		}
		group = container_of(ho, struct xferk_group, hobj);
	}
	/* Its notification goes to the target of its last fragment. */
	if (a->flags & XFERK_SUBMIT_NOTIFY) {
		notify = xferk_notify_alloc(remotes[a->nr_frags - 1], xf->qacct,
					    XFERK_EVENT_DATA, a->notify_tag);
		if (IS_ERR(notify)) {
			ret = PTR_ERR(notify);
			notify = NULL;
			goto out_unlock;
		}
	}
	op->qacct = xf->qacct;
	op->nr_chunks = nr_chunks;
	xferk_life_init(&op->life, total_bytes, a->nr_frags, nr_chunks,
			ktime_get());
	/* The limits first: the file's chunk budget and the queue. */
	ret = xferk_charge(&op->qacct->chunks, nr_chunks,
			   READ_ONCE(xferk_max_chunks_per_file), -EBUSY);
	if (ret)
		goto out_unlock;
	ret = xferk_queue_admit(op, xf->qacct, a, remotes);
	if (ret)
		goto out_uncharge;
	op->chunks = kvcalloc(nr_chunks, sizeof(*op->chunks), XFERK_GFP_USER);
	if (!op->chunks || op_collect_conns(op, remotes, a->nr_frags)) {
		ret = -ENOMEM;
		goto out_unadmit;
	}
	op_map_regions(regions, remotes, a->nr_frags);
	kref_init(&op->ref);
	spin_lock_init(&op->lock);
	init_waitqueue_head(&op->wq);
	INIT_WORK(&op->cancel_work, op_drain_work);
	hrtimer_init(&op->drain_timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	op->drain_timer.function = op_drain_timer_fired;
	INIT_WORK(&op->expire_work, op_expire_work);
	hrtimer_init(&op->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	op->timer.function = op_deadline_fired;
	op->owner = task_tgid_nr(current);
	op->user_data = a->user_data;
	op->submit_flags = a->flags;
	op->drain_budget_ns = a->drain_budget_ns;
	op->deadline = deadline;
	for (i = 0; i < a->nr_frags; i = end) {
		end = frag_run_end(frags, regions, remotes, a->nr_frags, i);
		op_fill_run(op, &next, &frags[i], end - i, regions[i],
			    remotes[i]);
	}
	ret = xferk_handle_add_limited(xf, &op->hobj, XFERK_H_OP);
	if (ret)
		goto out_unfill;
	/* Last: joining cannot be undone once an abort may see the op. */
	if (group) {
		ret = xferk_group_join(group, op, remotes, a->nr_frags,
				       xf->qacct);
		if (ret) {
			xferk_handle_remove_obj(&xf->handles, op->hobj.handle,
						&op->hobj);
			goto out_unfill;
		}
	}
	op->notify = notify;
	notify = NULL;
	a->op = op->hobj.handle;
	op->id = a->op;
	trace_xferk_op_submit(op->id, total_bytes, nr_chunks, a->priority,
			      a->group);
	/*
	 * Visible once the lock is dropped: another thread may cancel or
	 * release it then. So it is complete before: the physical reference,
	 * the timer, the parked command; and this function's own reference
	 * keeps it until it is started.
	 */
	kref_get(&xf->qacct->ref);
	kref_get(&op->ref);	/* physical reference */
	kref_get(&op->ref);	/* until started, below */
	if (settle) {
		op->settled = settle->settled;
		settle->park(op, settle->cmd, a->op);
	}
	spin_lock(&xferk_ops_lock);
	list_add_tail(&op->node, &xferk_ops);
	spin_unlock(&xferk_ops_lock);
	atomic64_inc(&xferk_stats.ops_submitted);
	atomic64_inc(&xferk_stats.ops_live);
	mutex_unlock(&xf->lock);

	if (deadline != KTIME_MAX)
		hrtimer_start(&op->timer, deadline, HRTIMER_MODE_ABS);
	if (op->qdev)
		xferk_queue_start(op);
	else
		op_queue_direct(op);
	xferk_op_put(op);
	op = NULL;
	ret = 0;
	goto out_free;

out_unfill:
	for (i = 0; i < nr_chunks; i++) {
		xferk_region_put(op->chunks[i].region);
		xferk_remote_put(op->chunks[i].remote);
	}
out_unadmit:
	xferk_queue_unadmit(op);
out_uncharge:
	atomic_long_sub(nr_chunks, &op->qacct->chunks);
out_unlock:
	mutex_unlock(&xf->lock);
	if (notify)
		xferk_notify_free(notify);
	if (op) {
		for (i = 0; i < op->nr_conns; i++)
			xferk_conn_put(op->conns[i]);
		kvfree(op->conns);
		kvfree(op->chunks);
	}
out_free:
	kfree(op);
	kvfree(remotes);
	kvfree(regions);
	kvfree(frags);
	return ret;
}

int xferk_ioctl_submit(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	if (arg->submit.flags & XFERK_SUBMIT_AUTO_RELEASE)
		return -EINVAL;		/* there is no completion to release at */
	return xferk_op_submit(xf, &arg->submit, NULL);
}

/* Looks up an op and takes a reference, so the file lock can be dropped. */
static struct xferk_op *op_get(struct xferk_file *xf, u64 handle)
{
	struct xferk_hobj *ho;
	struct xferk_op *op;

	mutex_lock(&xf->lock);
	ho = xferk_handle_lookup(&xf->handles, handle, XFERK_H_OP);
	if (IS_ERR(ho)) {
		mutex_unlock(&xf->lock);
		return ERR_CAST(ho);
	}
	op = container_of(ho, struct xferk_op, hobj);
	kref_get(&op->ref);
	mutex_unlock(&xf->lock);
	return op;
}

void xferk_op_snapshot(struct xferk_op *op, struct xferk_op_snapshot *snap)
{
	unsigned long flags;

	spin_lock_irqsave(&op->lock, flags);
	xferk_life_snapshot(&op->life, snap);
	spin_unlock_irqrestore(&op->lock, flags);
	snap->user_data = op->user_data;
}

static bool op_wait_done(struct xferk_op *op, bool physical)
{
	unsigned long flags;
	bool settled;

	if (physical)
		return xferk_op_physical(op);
	spin_lock_irqsave(&op->lock, flags);
	settled = xferk_state_is_settled(op->life.state);
	spin_unlock_irqrestore(&op->lock, flags);
	return settled;
}

/*
 * Waits until the op is settled (or physically complete) or the absolute
 * @deadline passes, never later: the wait itself runs on an hrtimer.
 * A signal restarts the call with the same absolute deadline. The result
 * follows the snapshot it returns: 0 exactly when that snapshot shows
 * what was waited for.
 */
int xferk_ioctl_wait(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_wait *a = &arg->wait;
	bool physical = a->flags & XFERK_WAIT_PHYSICAL;
	struct xferk_op *op;
	ktime_t deadline;
	int ret;

	if (a->flags & ~XFERK_WAIT_PHYSICAL)
		return -EINVAL;
	op = op_get(xf, a->op);
	if (IS_ERR(op))
		return PTR_ERR(op);
	deadline = xferk_deadline_from_user(a->deadline_ns);
	if (deadline == KTIME_MAX) {
		ret = wait_event_interruptible(op->wq, op_wait_done(op, physical));
	} else {
		ktime_t left = ktime_sub(deadline, ktime_get());

		ret = wait_event_interruptible_hrtimeout(op->wq,
							 op_wait_done(op, physical),
							 left > 0 ? left : 0);
	}
	xferk_op_snapshot(op, &a->snap);
	xferk_op_put(op);
	if (physical ? a->snap.buffer_reusable :
	    xferk_state_is_settled(a->snap.state))
		return 0;
	/* The snapshot goes back with -ETIMEDOUT too (see the ioctl table). */
	return ret == -ERESTARTSYS ? ret : -ETIMEDOUT;
}

int xferk_ioctl_query(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_query *a = &arg->query;
	struct xferk_op *op;

	if (a->flags)
		return -EINVAL;
	op = op_get(xf, a->op);
	if (IS_ERR(op))
		return PTR_ERR(op);
	xferk_op_snapshot(op, &a->snap);
	xferk_op_put(op);
	return 0;
}

/*
 * On each connection the ops use: drop their unposted chunks, or (@force)
 * kill the paths that still have some of them posted, if their file may
 * (escalation_interval_ms; one decision per cancel, also for a group's:
 * its ops are all of one file) and the session's path was not killed by a
 * cancel within that interval.
 */
static void ops_cancel_on_conns(struct xferk_op **ops, u32 nr, bool force)
{
	struct xferk_conn *c;
	bool posted = false;
	u32 i, k;

	if (!force) {
		for (k = 0; k < nr; k++) {
			xferk_queue_drop(ops[k]);
			for (i = 0; i < ops[k]->nr_conns; i++)
				xferk_conn_drop_op(ops[k]->conns[i], ops[k]);
		}
		return;
	}
	for (k = 0; k < nr; k++)
		for (i = 0; i < ops[k]->nr_conns; i++)
			posted |= xferk_conn_op_posted(ops[k]->conns[i], ops[k]);
	if (!posted || !xferk_escalation_allowed(&ops[0]->qacct->last_escalation))
		return;
	/*
	 * Killing the path flushes them; other ops' are posted again. Each
	 * session's path once per interval, whoever cancels.
	 */
	for (k = 0; k < nr; k++) {
		for (i = 0; i < ops[k]->nr_conns; i++) {
			c = ops[k]->conns[i];
			if (!test_bit(XFERK_CONN_F_QP_DEAD, &c->flags) &&
			    xferk_conn_op_posted(c, ops[k]) &&
			    xferk_escalation_allowed(&c->last_escalation))
				xferk_conn_qp_dead(c, -ECONNRESET,
						   XFERK_PATH_CANCEL);
		}
	}
}

static void op_cancel_on_conns(struct xferk_op *op, bool force)
{
	ops_cancel_on_conns(&op, 1, force);
}

/*
 * Sleeps until every op is physically complete or @until. Return: 0 if
 * they are, -ETIME if not, -ERESTARTSYS on a signal (kernel threads get
 * none).
 */
static int ops_wait_physical(struct xferk_op **ops, u32 nr, ktime_t until)
{
	int ret = 0;
	u32 k;

	for (k = 0; k < nr && ret != -ERESTARTSYS; k++) {
		ktime_t left = ktime_sub(until, ktime_get());

		if (left > 0)
			ret = wait_event_interruptible_hrtimeout(ops[k]->wq,
								 xferk_op_physical(ops[k]),
								 left);
	}
	if (ret == -ERESTARTSYS)
		return ret;
	return ops_physical(ops, nr) ? 0 : -ETIME;
}

/**
 * xferk_ops_cancel_drain() - cancel ops and drain them, bounded
 * @ops: the ops (the caller holds a reference on each), all of one file
 * @nr: how many
 * @drain_deadline: absolute bound
 *
 * Unposted chunks are dropped at once. Posted ones get the first half of
 * the remaining budget to complete by themselves; then every connection
 * that still has one of them posted is forced into the error state (the
 * device flushes its work requests; other ops on it fail too). An op that
 * is still not physically complete at @drain_deadline is QUARANTINED and
 * becomes DRAINED when its last work request is terminal. The caller
 * sleeps through it; op_drain_work() does the same steps on timers for
 * one op.
 *
 * A signal ends the caller's wait, never the drain: the rest of it goes
 * on in the background, to the same deadline.
 *
 * Return: 0 if every op is physically complete (DRAINED, or it was final
 * already), -ETIMEDOUT if one is QUARANTINED, -ERESTARTSYS if the caller
 * was interrupted.
 */
int xferk_ops_cancel_drain(struct xferk_op **ops, u32 nr,
			   ktime_t drain_deadline)
{
	ktime_t now = ktime_get();
	int ret;
	u32 k;

	for (k = 0; k < nr; k++)
		op_drain_begin(ops[k]);
	if (ops_physical(ops, nr))
		return 0;
	ops_cancel_on_conns(ops, nr, false);
	ret = ops_wait_physical(ops, nr,
				ktime_add(now, ktime_sub(drain_deadline, now) / 2));
	if (ret == -ETIME) {
		ops_cancel_on_conns(ops, nr, true);
		ret = ops_wait_physical(ops, nr, drain_deadline);
	}
	if (ret == -ERESTARTSYS)
		for (k = 0; k < nr; k++)
			if (!xferk_op_physical(ops[k]))
				op_drain_async(ops[k], drain_deadline);
	if (ret != -ETIME)
		return ret;
	for (k = 0; k < nr; k++)
		op_drain_expire(ops[k]);
	return ops_physical(ops, nr) ? 0 : -ETIMEDOUT;
}

/*
 * Closing file or exiting process: cancel and drain what is still in
 * flight, in the background, within exit_drain_ms (and, for a parked
 * io_uring submit, within its own bound).
 */
void xferk_op_orphan(struct xferk_op *op)
{
	ktime_t until = ktime_add_ms(ktime_get(), READ_ONCE(xferk_exit_drain_ms));

	if (xferk_op_physical(op))
		return;
	op->orphaned = true;
	if (op->ucmd)
		until = min_t(ktime_t, until,
			      xferk_drain_deadline(op->deadline,
						   op->drain_budget_ns));
	op_drain_async(op, until);
}

/*
 * CANCEL returns 0 exactly when the snapshot it returns has
 * buffer_reusable set, and -ETIMEDOUT (QUARANTINED) otherwise, or a signal.
 */
int xferk_ioctl_cancel(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_cancel *a = &arg->cancel;
	struct xferk_op *op;
	ktime_t until;
	int ret;

	if (a->flags)
		return -EINVAL;
	op = op_get(xf, a->op);
	if (IS_ERR(op))
		return PTR_ERR(op);
	until = xferk_deadline_from_user(a->drain_deadline_ns);
	/* A parked io_uring submit ends by its own bound (see uapi). */
	if (op->ucmd)
		until = min_t(ktime_t, until,
			      xferk_drain_deadline(op->deadline,
						   op->drain_budget_ns));
	ret = xferk_ops_cancel_drain(&op, 1, until);
	xferk_op_snapshot(op, &a->snap);
	xferk_op_put(op);
	if (a->snap.buffer_reusable)
		return 0;
	return ret == -ERESTARTSYS ? ret : -ETIMEDOUT;
}

int xferk_op_module_init(void)
{
	xferk_op_wq = alloc_workqueue("xferk_op", WQ_UNBOUND, 0);
	return xferk_op_wq ? 0 : -ENOMEM;
}

void xferk_op_module_exit(void)
{
	destroy_workqueue(xferk_op_wq);
}
