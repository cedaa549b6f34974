// SPDX-License-Identifier: GPL-2.0
/*
 * The revoke protocol: how an end closes an export or a window so that its
 * peer can access it no more, with no error on the wire when the peer's
 * kernel cooperates, and as safely when it does not.
 *
 *   exporting end (CLOSE)                  importing end
 *   REVOKE(id, gen)   ------------------>  every import of (id, gen) becomes
 *                                          unusable (ESTALE): nothing more is
 *                                          posted on it; it waits until none
 *                                          of its work requests is posted
 *                     <------------------  REVOKE_ACK(id, gen)
 *   invalidates the key; CLOSE returns
 *
 * Without the answer by CLOSE's deadline, when the path dies first, or when
 * the peer announced no XFERK_CAP_REVOKE, the key is invalidated all the
 * same ("forced"): a late access then fails at the device and never lands.
 * An id names an export within its session; the generation is a random
 * nonce, so an answer can only ever match the export it was asked for.
 * Messages travel on the session's current path; a path's death forgets
 * what it carried (a revoke is never sent twice: its CLOSE is forced).
 *
 * Bounds: an end has at most XFERK_REVOKES_MAX revokes unanswered (a CLOSE
 * beyond is forced) and owes at most as many answers (a peer that asks
 * more breaks the protocol, and the path that carried it dies, as with any
 * message that is not one of ours).
 *
 * Verbs-free: the transport's send_msg() posts a message, and it hands
 * every message it receives to xferk_msg_received() and every send that
 * completed to xferk_msg_sent().
 */
#include <linux/wait.h>
#include <kunit/visibility.h>

#include "chunk.h"
#include "conn.h"
#include "fault.h"
#include "fence.h"
#include "notify.h"
#include "remote.h"
#include "stats.h"
#include "wire.h"

/* Fault injection: the next N revokes received are never answered. */
atomic_t xferk_fault_ignore_revokes = ATOMIC_INIT(0);

static void revoke_msg(struct xferk_wire_msg *m, u8 type,
		       const struct xferk_revoke *r)
{
	*m = (struct xferk_wire_msg) {
		.magic = cpu_to_le32(XFERK_MSG_MAGIC),
		.type = type,
		.id = cpu_to_le64(r->id),
		.gen = cpu_to_le64(r->gen),
	};
}

/**
 * xferk_revoke_ask() - send the peer a REVOKE for an export
 * @c: the export's session
 * @id: the export's id in it, 0 if it has none
 * @gen: its generation
 * @slot: out: the revoke's slot in c->revokes
 *
 * Only if the protocol can carry it: the export has an id (its peer
 * announced XFERK_CAP_REVOKE), the session is up and fewer than
 * XFERK_REVOKES_MAX revokes are unanswered.
 *
 * Return: true if sent; xferk_revoke_await() then frees @slot.
 */
bool xferk_revoke_ask(struct xferk_conn *c, u64 id, u64 gen, int *slot)
{
	struct xferk_revoke r = { .id = id, .gen = gen };
	struct xferk_wire_msg m;
	bool sent = false;
	int i;

	if (!id || !c->transport->send_msg)
		return false;
	revoke_msg(&m, XFERK_MSG_REVOKE, &r);
	mutex_lock(&c->lock);
	for (i = 0; i < XFERK_REVOKES_MAX; i++)
		if (c->revokes[i].state == XFERK_REVOKE_FREE)
			break;
	if (i < XFERK_REVOKES_MAX && xferk_conn_postable(c) &&
	    !c->transport->send_msg(&c->path, &m, sizeof(m), 0)) {
		r.sent = ktime_get();
		r.state = XFERK_REVOKE_WAITING;
		c->revokes[i] = r;
		*slot = i;
		sent = true;
	}
	mutex_unlock(&c->lock);
	return sent;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_revoke_ask);

static void stat_max(atomic64_t *max, s64 v)
{
	s64 old = atomic64_read(max);

	while (old < v && !atomic64_try_cmpxchg(max, &old, v))
		;
}

/**
 * xferk_revoke_await() - wait for the answer to a REVOKE
 * @c: the export's session
 * @slot: its revoke's slot (xferk_revoke_ask())
 * @deadline: give up at this time (CLOCK_MONOTONIC)
 * @ack_ns: out: revoke to answer, if answered
 *
 * Ends early on a signal, or when the path dies. Frees @slot, or leaves it
 * taken (abandoned) until the answer comes or the path dies, so that the
 * unanswered revokes stay bounded.
 *
 * Return: true if the peer answered.
 */
bool xferk_revoke_await(struct xferk_conn *c, int slot, ktime_t deadline,
			u64 *ack_ns)
{
	struct xferk_revoke *r = &c->revokes[slot];
	s64 left = ktime_to_ns(ktime_sub(deadline, ktime_get()));
	bool answered;

	if (left > 0)
		wait_event_interruptible_timeout(c->state_wq,
						 READ_ONCE(r->state) !=
						 XFERK_REVOKE_WAITING,
						 nsecs_to_jiffies(left) + 1);
	mutex_lock(&c->lock);
	answered = r->state == XFERK_REVOKE_ANSWERED;
	if (answered)
		*ack_ns = ktime_to_ns(ktime_sub(r->answered, r->sent));
	r->state = r->state == XFERK_REVOKE_WAITING ? XFERK_REVOKE_ABANDONED :
						       XFERK_REVOKE_FREE;
	mutex_unlock(&c->lock);
	if (answered) {
		atomic64_inc(&xferk_stats.closes_cooperative);
		atomic64_add(*ack_ns, &xferk_stats.close_ack_ns_total);
		stat_max(&xferk_stats.close_ack_ns_max, *ack_ns);
	}
	return answered;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_revoke_await);

/* Is a work request on an import of @r posted? With c->lock. */
static bool revoke_posted_locked(struct xferk_conn *c,
				 const struct xferk_revoke *r)
{
	struct xferk_chunk *ch;

	list_for_each_entry(ch, &c->posted, node)
		if (xferk_chunk_remote(ch)->id == r->id &&
		    xferk_chunk_remote(ch)->gen == r->gen)
			return true;
	return false;
}

/**
 * xferk_msgs_kick_locked() - send the messages that can be sent
 * @c: the connection, with c->lock
 *
 * Answers first: a revoke is answered once no work request on its imports
 * is posted (none can be any more: they are unusable), on a path that is
 * up. Then fence messages, then queued notifications. Runs when a revoke
 * arrives, when a work request or a message completes, and when a path
 * comes up.
 */
void xferk_msgs_kick_locked(struct xferk_conn *c)
{
	struct xferk_wire_msg m;
	u32 i = 0;

	lockdep_assert_held(&c->lock);
	while (i < c->nr_acks_due && xferk_conn_postable(c)) {
		struct xferk_revoke *r = &c->acks_due[i];

		if (revoke_posted_locked(c, r)) {
			i++;
			continue;
		}
		revoke_msg(&m, XFERK_MSG_REVOKE_ACK, r);
		/* No send slot: a message's completion kicks again. */
		if (c->transport->send_msg(&c->path, &m, sizeof(m), 0))
			break;
		atomic64_inc(&xferk_stats.revokes_answered);
		*r = c->acks_due[--c->nr_acks_due];
	}
	xferk_fence_kick_locked(c);
	xferk_notify_kick_locked(c);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_msgs_kick_locked);

/* Did the peer revoke export @id (of the last XFERK_REVOKED_MAX)? c->lock. */
static bool revoked_has_locked(struct xferk_conn *c, u64 id)
{
	u32 i;

	for (i = 0; i < c->nr_revoked; i++)
		if (c->revoked[i] == id)
			return true;
	return false;
}

/*
 * Remembers that the peer revoked export @id, for imports of its token
 * that come later, in a fixed ring: beyond XFERK_REVOKED_MAX the oldest
 * goes (an import of its token is then refused by the peer's device
 * instead). With c->lock.
 */
static void revoked_add_locked(struct xferk_conn *c, u64 id)
{
	if (!c->revoked || revoked_has_locked(c, id))
		return;
	c->revoked[c->revoked_next] = id;
	c->revoked_next = (c->revoked_next + 1) % XFERK_REVOKED_MAX;
	if (c->nr_revoked < XFERK_REVOKED_MAX)
		c->nr_revoked++;
}

/**
 * xferk_remote_listen() - list a new import for the revokes of its export
 * @rm: the import, not yet published, of a token with an export id
 *
 * Return: 0, or -ESTALE if the peer revoked the export already.
 */
int xferk_remote_listen(struct xferk_remote *rm)
{
	struct xferk_conn *c = rm->conn;
	int ret = 0;

	mutex_lock(&c->lock);
	if (revoked_has_locked(c, rm->id))
		ret = -ESTALE;
	else
		list_add_tail(&rm->conn_node, &c->remotes);
	mutex_unlock(&c->lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_remote_listen);

/*
 * REVOKE: fence every import of (id, gen), answer when drained. A revoke
 * that a dead path delivers late (its QP is dead, the owed answers of
 * that path dropped) fences all the same but is not answered: its sender
 * forgot it with the path. Return: false if the peer broke the protocol.
 */
static bool revoke_received(struct xferk_conn *c, const struct xferk_revoke *r)
{
	struct xferk_remote *rm;
	bool ok, owed;

	if (!r->id)
		return false;
	/* Fault injection: a peer that never answers. */
	if (atomic_dec_if_positive(&xferk_fault_ignore_revokes) >= 0)
		return true;
	mutex_lock(&c->lock);
	owed = xferk_conn_qp_live(c);
	ok = !owed || c->nr_acks_due < XFERK_REVOKES_MAX;
	if (ok) {
		list_for_each_entry(rm, &c->remotes, conn_node)
			if (rm->id == r->id && rm->gen == r->gen)
				WRITE_ONCE(rm->error, -ESTALE);
		revoked_add_locked(c, r->id);
	}
	if (ok && owed) {
		c->acks_due[c->nr_acks_due++] = *r;
		xferk_msgs_kick_locked(c);
	}
	mutex_unlock(&c->lock);
	return ok;
}

/* REVOKE_ACK: the CLOSE waiting for it may go on. Unknown ones are late. */
static void ack_received(struct xferk_conn *c, const struct xferk_revoke *a)
{
	struct xferk_revoke *r;
	int i;

	mutex_lock(&c->lock);
	for (i = 0; i < XFERK_REVOKES_MAX; i++) {
		r = &c->revokes[i];
		if (r->id != a->id || r->gen != a->gen)
			continue;
		if (r->state == XFERK_REVOKE_WAITING) {
			r->state = XFERK_REVOKE_ANSWERED;
			r->answered = ktime_get();
			wake_up_all(&c->state_wq);
			break;
		}
		if (r->state == XFERK_REVOKE_ABANDONED) {
			r->state = XFERK_REVOKE_FREE;
			break;
		}
	}
	mutex_unlock(&c->lock);
}

/**
 * xferk_msg_received() - a session message arrived
 * @c: the connection whose path carried it
 * @msg: its bytes (a copy)
 * @len: its length (0: it was not a SEND)
 *
 * Anything but a valid message of the protocol, within its bounds, kills
 * the path (the peer's kernel is not ours, or is broken).
 */
void xferk_msg_received(struct xferk_conn *c, const void *msg, u32 len)
{
	const struct xferk_wire_notify *n = msg;
	const struct xferk_wire_msg *m = msg;
	struct xferk_revoke r;

	if (len < sizeof(*m) || le32_to_cpu(m->magic) != XFERK_MSG_MAGIC)
		goto invalid;
	if (m->type == XFERK_MSG_FENCE || m->type == XFERK_MSG_FENCE_ACK) {
		if (len != sizeof(struct xferk_wire_fence) ||
		    !xferk_fence_received(c, msg))
			goto invalid;
		return;
	}
	if (m->type == XFERK_MSG_NOTIFY) {
		if (len != sizeof(*n) || n->reserved0 || n->reserved ||
		    !xferk_notify_received(c, n))
			goto invalid;
		return;
	}
	if (m->type == XFERK_MSG_CREDIT) {
		if (len != sizeof(struct xferk_wire_credit) ||
		    !xferk_notify_credit_received(c, msg))
			goto invalid;
		return;
	}
	if (len != sizeof(*m) ||
	    memchr_inv(m->reserved0, 0, sizeof(m->reserved0)) || m->reserved)
		goto invalid;
	r = (struct xferk_revoke) {
		.id = le64_to_cpu(m->id),
		.gen = le64_to_cpu(m->gen),
	};
	switch (m->type) {
	case XFERK_MSG_REVOKE:
		if (!revoke_received(c, &r))
			goto invalid;
		return;
	case XFERK_MSG_REVOKE_ACK:
		ack_received(c, &r);
		return;
	}
invalid:
	atomic64_inc(&xferk_stats.msgs_invalid);
	xferk_conn_qp_dead(c, -EPROTO, XFERK_PATH_QP);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_msg_received);

/**
 * xferk_msg_sent() - a session message the transport sent went out
 * @c: the connection
 * @seq: the sequence number it was sent with (a notification's), or
 *	XFERK_MSG_SEQ_FENCE (a fence message), or 0
 *
 * Called only for a send that completed successfully: the peer's device
 * holds the message. A notification is delivered then (notify.c).
 */
void xferk_msg_sent(struct xferk_conn *c, u64 seq)
{
	if (seq == XFERK_MSG_SEQ_FENCE)
		xferk_fence_sent(c);
	else if (seq)
		xferk_notify_sent(c, seq);
}

/**
 * xferk_msgs_path_lost() - the session's path died
 * @c: the connection, with c->lock (its state leaves UP, or the path's
 *	teardown begins; idempotent)
 *
 * What the path carried is forgotten: revokes waiting for an answer are
 * lost (their CLOSEs force), abandoned ones free their slots, and owed
 * answers are dropped (their imports stay unusable). Notifications not
 * known delivered are queued again (xferk_notify_path_lost()).
 */
void xferk_msgs_path_lost(struct xferk_conn *c)
{
	int i;

	lockdep_assert_held(&c->lock);
	for (i = 0; i < XFERK_REVOKES_MAX; i++) {
		if (c->revokes[i].state == XFERK_REVOKE_WAITING)
			c->revokes[i].state = XFERK_REVOKE_LOST;
		else if (c->revokes[i].state == XFERK_REVOKE_ABANDONED)
			c->revokes[i].state = XFERK_REVOKE_FREE;
	}
	c->nr_acks_due = 0;
	xferk_fence_path_lost_locked(c);
	xferk_notify_path_lost(c);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_msgs_path_lost);
