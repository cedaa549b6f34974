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
 * The target's queue of events (evq.c) is bounded (events_per_file): an
 * event that does not fit is dropped and counted, and the next
 * XFERK_IOC_EVENTS reports how many were (never silently). The NOTIFY and
 * EVENTS commands are the front's (notify_ioctl.c).
 *
 * Flow control (wire.h): toward a peer that announced XFERK_CAP_CREDIT, at
 * most XFERK_NOTIFY_CREDITS NOTIFYs are sent on a path and not credited
 * back; an end credits back the NOTIFYs that arrived (their buffers are
 * posted again before they are handled) in CREDIT messages. A new path
 * starts with a full ring: both counts start at 0.
 *
 * Each queued notification counts as one work request of the file that
 * caused it (max_chunks_per_file) until its send completes.
 *
 * Verbs-free: the transport's send_msg() posts, with the sequence number;
 * its completion reaches xferk_notify_sent() through xferk_msg_sent().
 */
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "conn.h"
#include "conn_state.h"
#include "notify.h"
#include "queue.h"
#include "remote.h"
#include "stats.h"
#include "wire.h"
#include "xferk.h"

/*
 * Hands an event to the file that owns export @e (its event queue), with
 * the export's handle, if it has one (false if not): the requests
 * layer's, which owns both (xferk_notify_set_deliver()); from the CQ's
 * context, under the session's export_ids xa_lock. Set once at module
 * load.
 */
static bool (*notify_deliver)(struct xferk_export *e,
			      struct xferk_event *ev) __ro_after_init;

void xferk_notify_set_deliver(bool (*deliver)(struct xferk_export *e,
					      struct xferk_event *ev))
{
	notify_deliver = deliver;
}

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

/* Whether the peer credits NOTIFYs back (XFERK_CAP_CREDIT). */
static bool notify_credited(struct xferk_conn *c)
{
	return READ_ONCE(c->peer_caps) & XFERK_CAP_CREDIT;
}

/*
 * Credits back the peer's NOTIFYs that arrived, once there are
 * XFERK_CREDIT_BATCH of them, while the path is up and a send slot is
 * free (a message's completion kicks again). With c->lock.
 */
static void notify_credit_kick_locked(struct xferk_conn *c)
{
	u32 count = min_t(u32, c->notify_owed, XFERK_NOTIFY_CREDITS);
	struct xferk_wire_credit m = {
		.magic = cpu_to_le32(XFERK_MSG_MAGIC),
		.type = XFERK_MSG_CREDIT,
		.count = cpu_to_le32(count),
	};

	lockdep_assert_held(&c->lock);
	if (count < XFERK_CREDIT_BATCH || !notify_credited(c) ||
	    !xferk_conn_postable(c))
		return;
	if (!c->transport->send_msg(&c->path, &m, sizeof(m), 0))
		c->notify_owed -= count;
}

/*
 * Credits back what arrived, then sends what is queued, in order, while
 * the path is up, send slots are free and the peer has room (a message's
 * completion, and a CREDIT, kick again). With c->lock.
 */
void xferk_notify_kick_locked(struct xferk_conn *c)
{
	struct xferk_wire_notify m;
	struct xferk_notify *n;

	lockdep_assert_held(&c->lock);
	notify_credit_kick_locked(c);
	while (!list_empty(&c->notify_queue) && xferk_conn_postable(c) &&
	       c->nr_notify_posted < XFERK_NOTIFY_SENDS &&
	       (!notify_credited(c) ||
		c->notify_uncredited < XFERK_NOTIFY_CREDITS)) {
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
		if (c->transport->send_msg(&c->path, &m, sizeof(m), n->seq))
			break;
		list_move_tail(&n->node, &c->notify_posted);
		c->nr_notify_posted++;
		if (notify_credited(c))
			c->notify_uncredited++;
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
 * queue, in order: the next path sends them again. Its ring is the next
 * path's no more: nothing is owed, nothing is uncredited.
 */
void xferk_notify_path_lost(struct xferk_conn *c)
{
	lockdep_assert_held(&c->lock);
	list_splice_init(&c->notify_posted, &c->notify_queue);
	c->nr_notify_posted = 0;
	c->notify_uncredited = 0;
	c->notify_owed = 0;
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
	bool fresh, delivered;

	if (!seq || !id || ev.type < XFERK_EVENT_DATA ||
	    ev.type > XFERK_EVENT_ABORTED || (ev.flags & ~XFERK_EVENT_INCOMPLETE) ||
	    (ev.type != XFERK_EVENT_DATA && (ev.bytes || ev.flags)))
		return false;
	mutex_lock(&c->lock);
	/*
	 * Its buffer was posted again before it was handed on, while the QP
	 * lived (the transport's order); on a path whose teardown began it
	 * was not, and the next path's ring is a new one: nothing owed. We
	 * owe at most what the peer may have uncredited: one more broke the
	 * protocol (its CREDITs would take send slots nobody counted).
	 */
	if (notify_credited(c) && xferk_conn_qp_live(c)) {
		if (c->notify_owed >= XFERK_NOTIFY_CREDITS) {
			mutex_unlock(&c->lock);
			return false;
		}
		c->notify_owed++;
		notify_credit_kick_locked(c);
	}
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
	delivered = e && notify_deliver(e, &ev);
	xa_unlock(&c->export_ids);
	if (!delivered)
		atomic64_inc(&xferk_stats.notifies_unclaimed);
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_notify_received);

/*
 * CREDIT arrived: @count of our NOTIFYs' buffers are posted again. The
 * count is taken as a bound, never below 0 (the peer's to keep right: too
 * many credits only let its own ring run dry). Return: false if the peer
 * broke the protocol (also: a CREDIT from a peer that did not announce
 * XFERK_CAP_CREDIT).
 */
bool xferk_notify_credit_received(struct xferk_conn *c,
				  const struct xferk_wire_credit *m)
{
	u32 count = le32_to_cpu(m->count);

	if (!notify_credited(c) || !count || count > XFERK_NOTIFY_CREDITS ||
	    memchr_inv(m->reserved0, 0, sizeof(m->reserved0)) ||
	    m->reserved1 || m->reserved[0] || m->reserved[1])
		return false;
	mutex_lock(&c->lock);
	c->notify_uncredited -= min(count, c->notify_uncredited);
	xferk_notify_kick_locked(c);
	mutex_unlock(&c->lock);
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_notify_credit_received);
