// SPDX-License-Identifier: GPL-2.0
/*
 * Notifications: an initiator tells a target's process that an op's data
 * landed in one of its exports (DATA), sends it a tag with no data
 * (NOTE), or says it aborted a group that used the export (ABORTED).
 *
 *   initiator                               target
 *   op physically complete (its writes were acknowledged by the target's
 *   device: the data is there)
 *   NOTIFY(seq, type, id, tag, bytes) ----> the event goes to the queue of
 *                                           the file that owns export id
 *
 * A notification is a session message (a 48-byte SEND on the session's
 * path). Every notification of a session has a sequence number, given
 * when it is first queued; they are sent in that order. One stays on the
 * sender until its send completes successfully (then the target's device
 * holds it, and its kernel hands it on); a path's death puts those not
 * known delivered back at the head of the queue, and the next path sends
 * them again. The target delivers a sequence number only if it is newer
 * than the last one it delivered: exactly once, in order.
 *
 * The target's queue of events is bounded (events_per_file): an event
 * that does not fit is dropped and counted, and the next XFERK_IOC_EVENTS
 * reports how many were (never silently).
 *
 * Each queued notification counts as one work request of the file that
 * caused it (max_chunks_per_file) until its send completes.
 *
 * Verbs-free: the transport's send_msg() posts, with the sequence number;
 * its completion calls xferk_notify_sent().
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "conn.h"
#include "conn_state.h"
#include "evq.h"
#include "export.h"
#include "front.h"
#include "handle.h"
#include "lifecycle.h"
#include "limits.h"
#include "notify.h"
#include "queue.h"
#include "stats.h"
#include "wire.h"
#include "xferk.h"

unsigned int xferk_events_per_file = 4096;
module_param_named(events_per_file, xferk_events_per_file, uint, 0644);
MODULE_PARM_DESC(events_per_file,
		 "Events a file's queue holds before it drops them (default 4096; read when the queue is made; 16..65536)");
EXPORT_SYMBOL_IF_KUNIT(xferk_events_per_file);

/**
 * xferk_notify_alloc() - a notification for the target of a remote handle
 * @rm: the remote handle
 * @acct: the account it is charged to (one work request, until delivered)
 * @type: XFERK_EVENT_*
 * @tag: its tag
 *
 * Return: the notification, or ERR_PTR(-EOPNOTSUPP) (the peer announced
 * no notifications, or the token names no export id), -ESTALE (the
 * export was revoked), -EBUSY or -ENOMEM.
 */
struct xferk_notify *xferk_notify_alloc(struct xferk_remote *rm,
					struct xferk_qacct *acct, u8 type,
					u64 tag)
{
	struct xferk_notify *n;
	int ret;

	if (!rm->id || !(READ_ONCE(rm->conn->peer_caps) & XFERK_CAP_NOTIFY))
		return ERR_PTR(-EOPNOTSUPP);
	if (READ_ONCE(rm->error) == -ESTALE)
		return ERR_PTR(-ESTALE);
	n = kzalloc(sizeof(*n), XFERK_GFP_USER);
	if (!n)
		return ERR_PTR(-ENOMEM);
	ret = xferk_charge(&acct->chunks, 1,
			   READ_ONCE(xferk_max_chunks_per_file), -EBUSY);
	if (ret) {
		kfree(n);
		return ERR_PTR(ret);
	}
	INIT_LIST_HEAD(&n->node);
	n->conn = rm->conn;
	kref_get(&acct->ref);
	n->acct = acct;
	n->type = type;
	n->id = rm->id;
	n->tag = tag;
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_notify_alloc);

void xferk_notify_free(struct xferk_notify *n)
{
	atomic_long_dec(&n->acct->chunks);
	xferk_qacct_put(n->acct);
	kfree(n);
}

void xferk_notify_free_list(struct list_head *list)
{
	struct xferk_notify *n, *tmp;

	list_for_each_entry_safe(n, tmp, list, node) {
		list_del(&n->node);
		xferk_notify_free(n);
	}
}

/*
 * Sends what is queued, in order, while the path is up and send slots are
 * free (a message's completion kicks again). With c->lock.
 */
void xferk_notify_kick_locked(struct xferk_conn *c)
{
	struct xferk_wire_notify m;
	struct xferk_notify *n;

	lockdep_assert_held(&c->lock);
	while (!list_empty(&c->notify_queue) && xferk_conn_postable(c) &&
	       c->nr_notify_posted < XFERK_NOTIFY_SENDS) {
		n = list_first_entry(&c->notify_queue, struct xferk_notify,
				     node);
		m = (struct xferk_wire_notify) {
			.magic = cpu_to_le32(XFERK_MSG_MAGIC),
			.type = XFERK_MSG_NOTIFY,
			.event = n->type,
			.flags = n->flags,
			.id = cpu_to_le64(n->id),
			.tag = cpu_to_le64(n->tag),
			.bytes = cpu_to_le64(n->bytes),
			.seq = cpu_to_le64(n->seq),
		};
		if (c->transport->send_msg(c, &m, sizeof(m), n->seq))
			break;
		list_move_tail(&n->node, &c->notify_posted);
		c->nr_notify_posted++;
	}
}
EXPORT_SYMBOL_IF_KUNIT(xferk_notify_kick_locked);

/**
 * xferk_notify_queue_locked() - number a notification and queue it on its
 *	session, with the session's lock
 * @n: the notification
 *
 * Its sequence number is its place in the order the peer sees, so a
 * caller that must order it before something else (an op's DATA before
 * what anyone may do once the op is seen physically complete) numbers it
 * within the same hold of the lock.
 *
 * Return: true if the session owns it now; false if the session ended:
 * the caller frees it (xferk_notify_free()) without the lock.
 */
bool xferk_notify_queue_locked(struct xferk_notify *n)
{
	struct xferk_conn *c = n->conn;

	lockdep_assert_held(&c->lock);
	if (xferk_conn_state_over(c->state))
		return false;
	n->seq = ++c->notify_seq;
	list_add_tail(&n->node, &c->notify_queue);
	xferk_notify_kick_locked(c);
	return true;
}

/**
 * xferk_notify_send() - queue a notification on its session
 * @n: the notification; the session owns it from now on (one that ended
 *	drops it at once)
 */
void xferk_notify_send(struct xferk_notify *n)
{
	struct xferk_conn *c = n->conn;
	bool queued;

	mutex_lock(&c->lock);
	queued = xferk_notify_queue_locked(n);
	mutex_unlock(&c->lock);
	if (!queued)
		xferk_notify_free(n);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_notify_send);

void xferk_notify_send_list(struct list_head *list)
{
	struct xferk_notify *n, *tmp;

	list_for_each_entry_safe(n, tmp, list, node) {
		list_del_init(&n->node);
		xferk_notify_send(n);
	}
}

/**
 * xferk_notify_sent() - a notification's send completed successfully
 * @c: the connection
 * @seq: its sequence number
 *
 * The target's device holds it: it is done. A completion that arrives
 * after its path's death put it back on the queue, or after it was sent
 * again, ends it too (the target drops the copy).
 */
void xferk_notify_sent(struct xferk_conn *c, u64 seq)
{
	struct xferk_notify *n, *done = NULL;

	mutex_lock(&c->lock);
	list_for_each_entry(n, &c->notify_posted, node)
		if (n->seq == seq) {
			done = n;
			c->nr_notify_posted--;
			break;
		}
	if (!done)
		list_for_each_entry(n, &c->notify_queue, node)
			if (n->seq == seq) {
				done = n;
				break;
			}
	if (done)
		list_del(&done->node);
	mutex_unlock(&c->lock);
	if (done) {
		atomic64_inc(&xferk_stats.notifies_sent);
		xferk_notify_free(done);
	}
}
EXPORT_SYMBOL_IF_KUNIT(xferk_notify_sent);

/**
 * xferk_notify_path_lost() - the session's path died
 * @c: the connection, with c->lock
 *
 * Notifications sent but not known delivered go back to the head of the
 * queue, in order: the next path sends them again.
 */
void xferk_notify_path_lost(struct xferk_conn *c)
{
	lockdep_assert_held(&c->lock);
	list_splice_init(&c->notify_posted, &c->notify_queue);
	c->nr_notify_posted = 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_notify_path_lost);

/**
 * xferk_notify_conn_down() - the session ended for good: what it holds
 * goes (and with it the files' charges), nothing more is queued
 * @c: the connection, CLOSED (being torn down)
 */
void xferk_notify_conn_down(struct xferk_conn *c)
{
	LIST_HEAD(lost);

	mutex_lock(&c->lock);
	list_splice_init(&c->notify_posted, &lost);
	list_splice_tail_init(&c->notify_queue, &lost);
	c->nr_notify_posted = 0;
	mutex_unlock(&c->lock);
	xferk_notify_free_list(&lost);
}

/**
 * xferk_notify_conn_gone() - the connection is freed: what it still holds
 * goes (a session's teardown dropped it all already)
 * @c: the connection, no longer reachable
 */
void xferk_notify_conn_gone(struct xferk_conn *c)
{
	xferk_notify_free_list(&c->notify_posted);
	xferk_notify_free_list(&c->notify_queue);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_notify_conn_gone);

/* ---- the target's event queues ---- */

/**
 * xferk_evq_create() - an empty event queue of events_per_file entries
 *
 * Return: the queue (one reference) or NULL.
 */
struct xferk_evq *xferk_evq_create(void)
{
	u32 size = clamp_t(u32, READ_ONCE(xferk_events_per_file), 16, 65536);
	struct xferk_evq *q;

	q = kvzalloc(struct_size(q, ring, size), XFERK_GFP_USER);
	if (!q)
		return NULL;
	kref_init(&q->ref);
	spin_lock_init(&q->lock);
	mutex_init(&q->read_lock);
	init_waitqueue_head(&q->wq);
	q->size = size;
	return q;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_create);

static void evq_release(struct kref *ref)
{
	kvfree(container_of(ref, struct xferk_evq, ref));
}

void xferk_evq_put(struct xferk_evq *q)
{
	kref_put(&q->ref, evq_release);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_put);

/**
 * xferk_evq_post() - add an event, or count it dropped if the queue is full
 * @q: the queue
 * @ev: the event
 *
 * Any context but hardirq.
 */
void xferk_evq_post(struct xferk_evq *q, const struct xferk_event *ev)
{
	bool posted = false;

	spin_lock_bh(&q->lock);
	if (q->count < q->size) {
		q->ring[(q->head + q->count) % q->size] = *ev;
		q->count++;
		posted = true;
	} else {
		q->dropped++;
	}
	spin_unlock_bh(&q->lock);
	if (posted)
		wake_up_all(&q->wq);
	else
		atomic64_inc(&xferk_stats.events_dropped);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_post);

/**
 * xferk_evq_peek() - copy the oldest events without taking them
 * @q: the queue (with q->read_lock: nobody else takes events meanwhile)
 * @out: room for @max
 * @max: at most this many
 *
 * Return: how many were copied.
 */
u32 xferk_evq_peek(struct xferk_evq *q, struct xferk_event *out, u32 max)
{
	u32 i, n;

	spin_lock_bh(&q->lock);
	n = min(max, q->count);
	for (i = 0; i < n; i++)
		out[i] = q->ring[(q->head + i) % q->size];
	spin_unlock_bh(&q->lock);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_peek);

/* Events dropped since the last take. */
u64 xferk_evq_dropped(struct xferk_evq *q)
{
	u64 dropped;

	spin_lock_bh(&q->lock);
	dropped = q->dropped;
	spin_unlock_bh(&q->lock);
	return dropped;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_dropped);

/**
 * xferk_evq_take() - take the @n oldest events (peeked before)
 * @q: the queue (with q->read_lock)
 * @n: how many
 * @dropped: the drops reported with them (xferk_evq_dropped() before):
 *	later ones stay counted for the next take
 */
void xferk_evq_take(struct xferk_evq *q, u32 n, u64 dropped)
{
	spin_lock_bh(&q->lock);
	q->head = (q->head + n) % q->size;
	q->count -= n;
	q->dropped -= dropped;
	spin_unlock_bh(&q->lock);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_take);

static bool evq_ready(struct xferk_evq *q)
{
	bool ready;

	spin_lock_bh(&q->lock);
	ready = q->count;
	spin_unlock_bh(&q->lock);
	return ready;
}

/* The file's event queue, made on first use. */
struct xferk_evq *xferk_file_evq(struct xferk_file *xf)
{
	struct xferk_evq *q;

	mutex_lock(&xf->lock);
	if (!xf->evq)
		xf->evq = xferk_evq_create();
	q = xf->evq;
	if (q)
		kref_get(&q->ref);
	mutex_unlock(&xf->lock);
	return q;
}

/*
 * NOTIFY arrived: deliver it to the owner of export @id, unless it is a
 * copy of one delivered already. Return: false if the peer broke the
 * protocol.
 */
bool xferk_notify_received(struct xferk_conn *c,
			   const struct xferk_wire_notify *m)
{
	u64 seq = le64_to_cpu(m->seq), id = le64_to_cpu(m->id);
	struct xferk_event ev = {
		.tag = le64_to_cpu(m->tag),
		.bytes = le64_to_cpu(m->bytes),
		.type = m->event,
		.flags = m->flags,
	};
	struct xferk_export *e;
	bool fresh;

	if (!seq || !id || ev.type < XFERK_EVENT_DATA ||
	    ev.type > XFERK_EVENT_ABORTED || (ev.flags & ~XFERK_EVENT_INCOMPLETE) ||
	    (ev.type != XFERK_EVENT_DATA && (ev.bytes || ev.flags)))
		return false;
	mutex_lock(&c->lock);
	fresh = seq > c->notify_seen;
	if (fresh)
		c->notify_seen = seq;
	mutex_unlock(&c->lock);
	if (!fresh) {
		atomic64_inc(&xferk_stats.notifies_duplicate);
		return true;
	}
	atomic64_inc(&xferk_stats.notifies_received);
	/*
	 * Not c->exports_lock: an export's registration holds it while it
	 * waits for a completion that this context (the CQ's) must handle.
	 * xa_lock keeps a listed export from being revoked, hence freed.
	 */
	xa_lock(&c->export_ids);
	e = xa_load(&c->export_ids, id);
	/* Not yet (or no longer) published: nobody could name it. */
	ev.export_handle = e ? READ_ONCE(e->hobj.handle) : 0;
	if (ev.export_handle)
		xferk_evq_post(e->evq, &ev);
	xa_unlock(&c->export_ids);
	if (!ev.export_handle)
		atomic64_inc(&xferk_stats.notifies_unclaimed);
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_notify_received);

/* ---- commands ---- */

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
			ret = wait_event_interruptible(q->wq, evq_ready(q));
		else if (left > 0)
			ret = wait_event_interruptible_hrtimeout(q->wq,
								 evq_ready(q),
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
