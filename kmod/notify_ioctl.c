// SPDX-License-Identifier: GPL-2.0
/*
 * The commands on notifications (front layer): NOTIFY queues a NOTE for
 * the target of a remote handle (notify.c sends it); EVENTS takes the
 * events queued for the file's exports (evq.c). A file's event queue is
 * made on first use (xferk_file_evq()).
 *
 * Locking: the file's lock to look a handle up and to make the queue;
 * an EVENTS reader holds the queue's read_lock from its peek until its
 * output is written back (xferk_events_done()).
 */
#include <linux/err.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "conn.h"
#include "conn_state.h"
#include "evq.h"
#include "export.h"
#include "front.h"
#include "handle.h"
#include "lifecycle.h"
#include "notify.h"
#include "xferk.h"

/* The file's event queue, made on first use. */
struct xferk_evq *xferk_file_evq(struct xferk_file *xf)
{
	struct xferk_evq *q;

	mutex_lock(&xf->lock);
	if (!xf->evq)
		xf->evq = xferk_evq_create(xf->ready);
	q = xf->evq;
	if (q)
		kref_get(&q->ref);
	mutex_unlock(&xf->lock);
	return q;
}

int xferk_ioctl_notify(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_notify *a = &arg->notify;
	struct xferk_notify *n;
	struct xferk_remote *rm;
	struct xferk_conn *c;
	struct xferk_hobj *ho;

	if (a->flags || !xferk_is_zeroed(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	mutex_lock(&xf->lock);
	ho = xferk_handle_lookup(&xf->handles, a->remote, XFERK_H_REMOTE);
	if (IS_ERR(ho)) {
		mutex_unlock(&xf->lock);
		return PTR_ERR(ho);
	}
	rm = container_of(ho, struct xferk_remote, hobj);
	/* Refused while the session has ended (later, it drops it). */
	if (xferk_conn_state_over(READ_ONCE(rm->conn->state))) {
		mutex_unlock(&xf->lock);
		return -ENOTCONN;
	}
	n = xferk_notify_alloc(rm, xf->qacct, XFERK_EVENT_NOTE, a->tag);
	if (!IS_ERR(n))
		xferk_conn_get(n->conn);	/* the handle may go meanwhile */
	mutex_unlock(&xf->lock);
	if (IS_ERR(n))
		return PTR_ERR(n);
	c = n->conn;
	xferk_notify_send(n);
	xferk_conn_put(c);
	return 0;
}

/*
 * EVENTS: 0 with at least one event, -ETIMEDOUT with none by the
 * deadline. Events are taken only once they and the command's output were
 * written to the caller: the handler returns 0 or -ETIMEDOUT holding the
 * queue's read_lock, and xferk_events_done() takes them and lets it go.
 */
int xferk_ioctl_events(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_events *a = &arg->events;
	struct xferk_event *buf;
	struct xferk_evq *q;
	ktime_t deadline;
	int ret;
	u32 n;

	if (a->flags || !a->max_events ||
	    !xferk_is_zeroed(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (a->max_events > XFERK_EVENTS_MAX)
		return -E2BIG;
	a->nr_events = 0;
	a->dropped = 0;
	q = xferk_file_evq(xf);
	if (!q)
		return -ENOMEM;
	buf = kvmalloc_array(a->max_events, sizeof(*buf), XFERK_GFP_USER);
	if (!buf) {
		xferk_evq_put(q);
		return -ENOMEM;
	}
	deadline = xferk_deadline_from_user(a->deadline_ns);
	for (;;) {
		ktime_t left = ktime_sub(deadline, ktime_get());

		ret = 0;
		if (deadline == KTIME_MAX)
			ret = wait_event_interruptible(q->wq, xferk_evq_ready(q));
		else if (left > 0)
			ret = wait_event_interruptible_hrtimeout(q->wq,
								 xferk_evq_ready(q),
								 left);
		/* A reader stuck writing out (userfaultfd) holds it up. */
		if (ret == -ERESTARTSYS || mutex_lock_interruptible(&q->read_lock)) {
			ret = -ERESTARTSYS;
			goto out;
		}
		n = xferk_evq_peek(q, buf, a->max_events);
		if (n || xferk_deadline_passed(deadline, ktime_get()))
			break;
		/* Another reader took them: wait again. */
		mutex_unlock(&q->read_lock);
	}
	if (copy_to_user(u64_to_user_ptr(a->events), buf, n * sizeof(*buf))) {
		mutex_unlock(&q->read_lock);
		ret = -EFAULT;
		goto out;
	}
	a->nr_events = n;
	a->dropped = xferk_evq_dropped(q);
	q->taking = n;
	q->taking_dropped = a->dropped;
	ret = n ? 0 : -ETIMEDOUT;
out:
	kvfree(buf);
	xferk_evq_put(q);	/* the file keeps it */
	return ret;
}

/* EVENTS' output was written back (or not): commit, let the queue go. */
void xferk_events_done(struct xferk_file *xf, bool written)
{
	struct xferk_evq *q = xf->evq;

	if (written)
		xferk_evq_take(q, q->taking, q->taking_dropped);
	mutex_unlock(&q->read_lock);
}
