// SPDX-License-Identifier: GPL-2.0
/*
 * The commands on ops: SUBMIT, WAIT, QUERY and CANCEL (front layer). Each
 * checks its argument, looks the op up in the file's handle table and
 * calls the requests layer (op.h). SUBMIT's checks and the file it
 * submits through (xferk_file_submit()) are shared with io_uring's
 * SUBMIT (uring.c).
 *
 * Locking: the file's lock only to look an op up and take a reference on
 * it (op_get()); waits and drains run with no lock held.
 */
#include <linux/capability.h>
#include <linux/err.h>
#include <linux/sched/signal.h>
#include <linux/wait.h>

#include "front.h"
#include "handle.h"
#include "lifecycle.h"
#include "limits.h"
#include "op.h"
#include "queue.h"

/* The submitting file behind a struct xferk_submitter. */
struct file_submitter {
	struct xferk_submitter s;
	struct xferk_file *xf;
};

static int file_publish(const struct xferk_submitter *s,
			struct xferk_hobj *obj)
{
	return xferk_handle_add_limited(container_of(s, struct file_submitter,
						     s)->xf, obj, XFERK_H_OP);
}

/**
 * xferk_file_submit() - SUBMIT's argument checked, then the op submitted
 * @xf: the submitting file
 * @a: the argument (kernel copy); @a->op is set on success
 * @settle: the command to complete when the op settles, or NULL
 *
 * The uAPI's rules for the argument (flags, reserved fields, priority,
 * fragment count and size, a deadline already passed, the file's op
 * handle limit), then xferk_op_submit() on the file.
 *
 * Return: 0, or a negative errno.
 */
int xferk_file_submit(struct xferk_file *xf, struct xferk_ioc_submit *a,
		      const struct xferk_op_settle *settle)
{
	struct file_submitter fs = {
		.s = {
			.lock = &xf->lock,
			.handles = &xf->handles,
			.acct = xf->qacct,
			.ready = xf->ready,
			.max_chunks = READ_ONCE(xferk_max_chunks_per_file),
			.publish = file_publish,
		},
		.xf = xf,
	};
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
	if (xferk_deadline_passed(xferk_deadline_from_user(a->deadline_ns),
				  ktime_get()))
		return -ETIMEDOUT;
	if (!xferk_handle_room_limited(xf, XFERK_H_OP))
		return -EMFILE;
	return xferk_op_submit(&fs.s, a, settle);
}

int xferk_ioctl_submit(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	if (arg->submit.flags & XFERK_SUBMIT_AUTO_RELEASE)
		return -EINVAL;		/* there is no completion to release at */
	return xferk_file_submit(xf, &arg->submit, NULL);
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
