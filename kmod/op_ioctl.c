// SPDX-License-Identifier: GPL-2.0
/*
 * The commands on ops: SUBMIT, WAIT, QUERY and CANCEL (front layer). Each
 * checks its argument, looks the op up in the file's handle table and
 * calls the requests layer (op.h); io_uring's SUBMIT is uring.c's.
 *
 * Locking: the file's lock only to look an op up and take a reference on
 * it (op_get()); waits and drains run with no lock held.
 */
#include <linux/err.h>
#include <linux/sched/signal.h>
#include <linux/wait.h>

#include "front.h"
#include "handle.h"
#include "lifecycle.h"
#include "op.h"

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
