// SPDX-License-Identifier: GPL-2.0
/*
 * Ops: deadline, cancel, drain, quarantine, and the exit drain.
 *
 * At its deadline (op->timer) an op times out: its unposted chunks leave
 * the queue and their connections (op_expire_work()), and with the
 * cancel-on-deadline policy it is drained in the background. Every cancel
 * drains the same way, xferk_ops_cancel_drain() sleeping through it and
 * op_drain_work() doing the same steps on op->drain_timer: unposted chunks
 * are dropped, posted ones get the first half of the budget, then the
 * paths still posting them are killed, and an op that is not physically
 * complete at the drain deadline is QUARANTINED until it is. The ops of a
 * closed file or of an exiting process drain in the background, within
 * exit_drain_ms (xferk_op_orphan()).
 *
 * Locking: op->lock (irq-safe) guards op->life and op->drain_deadline;
 * the hrtimers' callbacks (hardirq) do no more than take it, wake waiters
 * and queue work. The background drain's steps run one at a time on
 * xferk_op_wq and hold a reference while XFERK_OP_CANCEL_QUEUED is set;
 * whoever stops its armed drain_timer queues the step instead. The
 * sessions' and the queue's locks are taken by what is called here
 * (xferk_conn_drop_op(), xferk_queue_drop(), ...), never under op->lock.
 */
#include <linux/hrtimer.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/workqueue.h>

#include "conn.h"
#include "lifecycle.h"
#include "op.h"
#include "op_internal.h"
#include "queue.h"
#include "stats.h"
#include "trace.h"

unsigned int xferk_exit_drain_ms = 5000;
module_param_named(exit_drain_ms, xferk_exit_drain_ms, uint, 0644);
MODULE_PARM_DESC(exit_drain_ms,
		 "Drain budget for ops of a closed file or exited process (default 5000)");

/* Registered as a parameter by limits.c. */
unsigned int xferk_escalation_interval_ms = 1000;

static void op_cancel_on_conns(struct xferk_op *op, bool force);

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
 * xferk_ops_cancel_drain(), driven by op->drain_timer instead of a sleeping
 * thread, so a drain costs a timer however long its budget. A request
 * while one runs is folded into it, with the earlier of the two deadlines:
 * a step waiting for a later time is then due at once, but for the
 * deadline's own (XFERK_DRAIN_EXPIRE), which waits for the new deadline.
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

enum hrtimer_restart op_drain_timer_fired(struct hrtimer *t)
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
		op_wake(op);
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
		op_wake(op);
		if (op->settled)
			op->settled(op, XFERK_STATE_QUARANTINED);
	}
}

/* One step of the background drain; holds its reference until the last. */
void op_drain_work(struct work_struct *work)
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
		/* An earlier deadline folded in: QUARANTINED then, not now. */
		if (!xferk_op_physical(op) && ktime_before(now, until)) {
			op_drain_arm(op, until, until);
			return;
		}
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
void op_expire_work(struct work_struct *work)
{
	struct xferk_op *op = container_of(work, struct xferk_op, expire_work);
	u32 i;

	xferk_queue_drop(&op->q);
	for (i = 0; i < op->nr_conns; i++)
		xferk_conn_drop_op(op->conns[i], op);
	xferk_op_put(op);
}

enum hrtimer_restart op_deadline_fired(struct hrtimer *t)
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
		op_wake(op);
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
 * May a cancel kill a path now?
 * @last_ns: when the limited party last did (ns): a file's account
 *	(struct xferk_qacct.last_escalation), or a session
 *	(struct xferk_conn.last_escalation)
 *
 * A cancel's escalation flushes every user's work on the path and makes
 * the session reconnect, so a file that keeps causing it is limited to
 * one per escalation_interval_ms, and so is a session's path whoever
 * asks: N files (of one tenant or of several) kill a shared path no more
 * often than one. Beyond that the cancel waits for its work requests to
 * complete by themselves (its op is QUARANTINED at the drain deadline if
 * they do not); stats/escalations_limited counts it.
 *
 * True if the escalation may go ahead (it is recorded).
 */
static bool escalation_allowed(atomic64_t *last_ns)
{
	u64 interval = (u64)READ_ONCE(xferk_escalation_interval_ms) *
		       NSEC_PER_MSEC;
	u64 now = ktime_get_ns(), last = atomic64_read(last_ns);

	if (!interval)
		return true;
	if ((!last || now - last >= interval) &&
	    atomic64_cmpxchg(last_ns, last, now) == last)
		return true;
	atomic64_inc(&xferk_stats.escalations_limited);
	return false;
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
			xferk_queue_drop(&ops[k]->q);
			for (i = 0; i < ops[k]->nr_conns; i++)
				xferk_conn_drop_op(ops[k]->conns[i], ops[k]);
		}
		return;
	}
	for (k = 0; k < nr; k++)
		for (i = 0; i < ops[k]->nr_conns; i++)
			posted |= xferk_conn_op_posted(ops[k]->conns[i], ops[k]);
	if (!posted || !escalation_allowed(&ops[0]->qacct->last_escalation))
		return;
	/*
	 * Killing the path flushes them; other ops' are posted again. Each
	 * session's path once per interval, whoever cancels.
	 */
	for (k = 0; k < nr; k++) {
		for (i = 0; i < ops[k]->nr_conns; i++) {
			c = ops[k]->conns[i];
			if (!xferk_conn_path_dead(c) &&
			    xferk_conn_op_posted(c, ops[k]) &&
			    escalation_allowed(&c->last_escalation))
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
