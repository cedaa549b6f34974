// SPDX-License-Identifier: GPL-2.0
/*
 * The rails fence. A chunk whose work request a session's path carried,
 * and which that path's death flushed, may move to another rail (rail.c)
 * only once the peer's end of that path is torn down: until then, packets
 * of the first attempt that the peer's end still holds can be executed
 * there, after the move's own bytes and after the op completed.
 *
 * The initiator of the move (A, the session whose path died) asks through
 * the session of the rail the chunk would move to (B, whose peer
 * announced XFERK_CAP_FENCE): a FENCE names A by both ends' ids and the
 * path by its number (the resume request's; the first path is 0), and
 * carries a MAC with A's token key, which only A's two ends know. The
 * peer answers FENCE_ACK, authenticated alike, once its end of A has no
 * path numbered as low (it kills the path if it still has it, and answers
 * when its teardown is over, QPs destroyed), or immediately when that end
 * is gone (a small ring of recently torn down sessions keeps their keys).
 * The initiator then counts every path of A up to that number as fenced
 * (struct xferk_fence.fenced), and the chunks that waited move.
 *
 * Until then a chunk waits in A: on its pending list for A's next path
 * (which the peer attaches only after its end of the old one is torn
 * down, so it needs no fence), or, when A goes down, in its teardown for
 * at most flush_timeout_ms + XFERK_FENCE_WAIT_MS, after which it fails as
 * without rails. A FENCE that is lost with B's path is asked again every
 * XFERK_FENCE_RETRY_MS; a peer that does not announce the capability is
 * never asked, and such chunks neither move nor wait for it.
 *
 * Flow: each session sends at most XFERK_FENCES_MAX fence messages at a
 * time (struct xferk_fence.sending, returned as their sends complete) from
 * a queue of as many; a message that finds the queue full is dropped and
 * asked again (a FENCE) or answered again (its FENCE, asked again).
 * Locking: each session's fence state is under its lock; the work holds
 * at most one session's lock at a time.
 */
#include <linux/siphash.h>

#include "conn.h"
#include "conn_internal.h"
#include "fence.h"
#include "stats.h"
#include "wire.h"

static void fence_work(struct work_struct *work);

void xferk_fence_init(struct xferk_conn *c)
{
	INIT_DELAYED_WORK(&c->fence.work, fence_work);
	INIT_LIST_HEAD(&c->fence.waiting);
}

/* The number of the path @c has now, or is making. With c->lock. */
static u64 fence_path_seq(struct xferk_conn *c)
{
	lockdep_assert_held(&c->lock);
	return c->active ? READ_ONCE(c->resume_seq) : c->fence.path_seq;
}

/**
 * xferk_fence_path_locked() - what a chunk posted now must be fenced with
 * @c: the session, with c->lock, its path up
 *
 * Return: the number of its path plus one; 0 for a transport without
 * messages (the null peer: no device can hold anything after a flush).
 */
u64 xferk_fence_path_locked(struct xferk_conn *c)
{
	return c->transport->send_msg ? fence_path_seq(c) + 1 : 0;
}

/*
 * Is a chunk posted on @c's path (xferk_fence_path_locked() then: @fence_path)
 * fenced at the peer? Lockless.
 */
bool xferk_fence_covers(struct xferk_conn *c, u64 fence_path)
{
	return !fence_path || READ_ONCE(c->fence.fenced) >= fence_path;
}

/**
 * xferk_fence_want_locked() - a chunk waits for a fence to move
 * @c: its session, with c->lock
 * @fence_path: the chunk's (not covered)
 *
 * Asks the peer at once for a fence not asked for yet; for one asked for
 * already, unless its next ask is pending.
 */
void xferk_fence_want_locked(struct xferk_conn *c, u64 fence_path)
{
	lockdep_assert_held(&c->lock);
	if (c->fence.stopped)
		return;
	if (fence_path > c->fence.wanted) {
		WRITE_ONCE(c->fence.wanted, fence_path);
		mod_delayed_work(xferk_conn_wq, &c->fence.work, 0);
	} else if (!delayed_work_pending(&c->fence.work)) {
		mod_delayed_work(xferk_conn_wq, &c->fence.work, 0);
	}
}

/*
 * Is there nothing left for @c's teardown to wait for: every fence asked
 * for confirmed, or no chunk waiting? Lockless (a wait's condition).
 */
bool xferk_fence_settled(struct xferk_conn *c)
{
	return READ_ONCE(c->fence.fenced) >= READ_ONCE(c->fence.wanted) ||
	       list_empty_careful(&c->fence.waiting);
}

/* The session's teardown: no more asks, none running. */
void xferk_fence_stop(struct xferk_conn *c)
{
	mutex_lock(&c->lock);
	c->fence.stopped = true;
	mutex_unlock(&c->lock);
	cancel_delayed_work_sync(&c->fence.work);
}

static u64 fence_mac(const struct xferk_wire_fence *f, const siphash_key_t *key)
{
	return siphash(f, offsetof(struct xferk_wire_fence, mac), key);
}

static void fence_msg(struct xferk_wire_fence *f, u8 type, u64 conn_id,
		      u64 peer_conn_id, u64 path, const siphash_key_t *key)
{
	*f = (struct xferk_wire_fence) {
		.magic = cpu_to_le32(XFERK_MSG_MAGIC),
		.type = type,
		.conn_id = cpu_to_le64(conn_id),
		.peer_conn_id = cpu_to_le64(peer_conn_id),
		.path = cpu_to_le64(path),
	};
	f->mac = cpu_to_le64(fence_mac(f, key));
}

/*
 * Queues @f on @via's path and sends what it can; dropped if the queue is
 * full or the path cannot carry it (the asking end asks again).
 */
static void fence_queue(struct xferk_conn *via, const struct xferk_wire_fence *f)
{
	mutex_lock(&via->lock);
	if (xferk_conn_postable(via) && via->fence.nr_msgs < XFERK_FENCES_MAX) {
		via->fence.msgs[via->fence.nr_msgs++] = *f;
		xferk_fence_kick_locked(via);
	}
	mutex_unlock(&via->lock);
}

/**
 * xferk_fence_kick_locked() - send the queued fence messages that can go
 * @c: the session, with c->lock
 */
void xferk_fence_kick_locked(struct xferk_conn *c)
{
	struct xferk_fence *fc = &c->fence;

	lockdep_assert_held(&c->lock);
	while (fc->nr_msgs && fc->sending < XFERK_FENCES_MAX &&
	       xferk_conn_postable(c)) {
		/* No send slot: a message's completion kicks again. */
		if (c->transport->send_msg(&c->path, &fc->msgs[0], sizeof(fc->msgs[0]),
					   XFERK_MSG_SEQ_FENCE))
			break;
		fc->sending++;
		atomic64_inc(fc->msgs[0].type == XFERK_MSG_FENCE ?
			     &xferk_stats.fences_asked :
			     &xferk_stats.fences_answered);
		memmove(&fc->msgs[0], &fc->msgs[1],
			--fc->nr_msgs * sizeof(fc->msgs[0]));
	}
}

/* A fence message's send completed successfully. */
void xferk_fence_sent(struct xferk_conn *c)
{
	mutex_lock(&c->lock);
	if (!WARN_ON_ONCE(!c->fence.sending))
		c->fence.sending--;
	mutex_unlock(&c->lock);
}

/*
 * Asks the peer for @c's fence through the session another rail of a
 * waiting chunk would take, and again later until it is confirmed; once
 * it is, moves what waited (a session going down moves its own in its
 * teardown, which this wakes).
 */
static void fence_work(struct work_struct *work)
{
	struct xferk_conn *c = container_of(to_delayed_work(work),
					    struct xferk_conn, fence.work);
	struct xferk_conn *via = NULL;
	struct xferk_wire_fence f;
	bool confirmed, waits = false;

	mutex_lock(&c->lock);
	confirmed = c->fence.fenced >= c->fence.wanted;
	if (!confirmed)
		via = conn_fence_via_locked(c, &waits);
	if (via)
		fence_msg(&f, XFERK_MSG_FENCE, c->peer_id, c->local_id,
			  c->fence.wanted - 1, &c->token_key);
	/* Until it is confirmed, or nothing waits for it any more. */
	if (waits && !c->fence.stopped)
		mod_delayed_work(xferk_conn_wq, &c->fence.work,
				 msecs_to_jiffies(XFERK_FENCE_RETRY_MS));
	mutex_unlock(&c->lock);
	if (confirmed) {
		wake_up_all(&c->state_wq);
		/* Without a path that is up, also while a new one is made. */
		if (READ_ONCE(c->state) == XFERK_CONN_RECONNECTING)
			conn_reroute_pending(c);
		return;
	}
	if (!via)
		return;
	fence_queue(via, &f);
	xferk_conn_put(via);
}

/*
 * The FENCE's answer, sent through @via, if it can be sent now (else the
 * asking end asks again).
 */
static void fence_answer(struct xferk_conn *via, u64 conn_id,
			 u64 peer_conn_id, u64 path, const siphash_key_t *key)
{
	struct xferk_wire_fence f;

	fence_msg(&f, XFERK_MSG_FENCE_ACK, conn_id, peer_conn_id, path, key);
	fence_queue(via, &f);
}

/*
 * Records that @c owes @via an answer for @path, once per (@via, asking
 * end): a FENCE asked again updates it. False if too many are owed (the
 * asking end asks again). With c->lock.
 */
static bool fence_owe_locked(struct xferk_conn *c, struct xferk_conn *via,
			     u64 path, u64 peer_conn_id)
{
	struct xferk_fence_owed *o;
	u32 i;

	for (i = 0; i < c->fence.nr_owed; i++) {
		o = &c->fence.owed[i];
		if (o->via == via && o->peer_conn_id == peer_conn_id) {
			o->path = max(o->path, path);
			return true;
		}
	}
	if (c->fence.nr_owed == XFERK_FENCES_MAX)
		return false;
	xferk_conn_get(via);
	c->fence.owed[c->fence.nr_owed++] = (struct xferk_fence_owed) {
		.via = via,
		.path = path,
		.peer_conn_id = peer_conn_id,
	};
	return true;
}

/*
 * FENCE about our end @c of a session: answer at once if @c has no path
 * numbered @path or lower (none, a newer one, or that one torn down);
 * else kill that path and answer when its teardown is over.
 */
static void fence_asked(struct xferk_conn *via, struct xferk_conn *c, u64 path,
			u64 peer_conn_id, const siphash_key_t *key)
{
	bool now;

	mutex_lock(&c->lock);
	now = READ_ONCE(c->path_state) == XFERK_PATH_NONE ||
	      fence_path_seq(c) > path || c->fence.torn > path;
	/* Under the lock: the path killed is the one that was asked for. */
	if (!now && fence_owe_locked(c, via, path, peer_conn_id))
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_PEER);
	mutex_unlock(&c->lock);
	if (now)
		fence_answer(via, peer_conn_id, c->local_id, path, key);
}

/*
 * FENCE_ACK about our end @c: every path up to @path is fenced; never
 * beyond what was asked for.
 */
static void fence_confirmed(struct xferk_conn *c, u64 path)
{
	u64 fenced;

	mutex_lock(&c->lock);
	fenced = min(path + 1, c->fence.wanted);
	if (fenced > c->fence.fenced) {
		WRITE_ONCE(c->fence.fenced, fenced);
		atomic64_inc(&xferk_stats.fences_confirmed);
		if (!c->fence.stopped)
			mod_delayed_work(xferk_conn_wq, &c->fence.work, 0);
	}
	mutex_unlock(&c->lock);
	wake_up_all(&c->state_wq);
}

/**
 * xferk_fence_received() - a FENCE or FENCE_ACK arrived
 * @via: the session whose path carried it
 * @f: the message (a copy), of its size, magic and type checked
 *
 * One that names no session of ours between the same hosts, or whose MAC
 * is wrong, is dropped: the session it names may have gone, and only its
 * ends can tell. Return: false if it breaks the protocol.
 */
bool xferk_fence_received(struct xferk_conn *via,
			  const struct xferk_wire_fence *f)
{
	u64 path = le64_to_cpu(f->path);
	u64 peer_conn_id = le64_to_cpu(f->peer_conn_id);
	struct xferk_conn *c;
	siphash_key_t key;

	if (memchr_inv(f->reserved0, 0, sizeof(f->reserved0)) ||
	    path == U64_MAX)
		return false;
	c = conn_find_fenced(le64_to_cpu(f->conn_id), peer_conn_id, &key);
	if (IS_ERR(c) || le64_to_cpu(f->mac) != fence_mac(f, &key)) {
		atomic64_inc(&xferk_stats.fences_unknown);
		goto out;
	}
	if (f->type == XFERK_MSG_FENCE) {
		if (c)
			fence_asked(via, c, path, peer_conn_id, &key);
		else	/* its end here is gone, every path with it */
			fence_answer(via, peer_conn_id,
				     le64_to_cpu(f->conn_id), path, &key);
	} else if (c) {
		fence_confirmed(c, path);
	}
out:
	memzero_explicit(&key, sizeof(key));
	if (!IS_ERR_OR_NULL(c))
		xferk_conn_put(c);
	return true;
}

/**
 * xferk_fence_path_lost_locked() - @c's path died: what it was to carry
 *	is forgotten (the asking ends ask again)
 * @c: the session, with c->lock
 */
void xferk_fence_path_lost_locked(struct xferk_conn *c)
{
	lockdep_assert_held(&c->lock);
	c->fence.nr_msgs = 0;
}

/**
 * xferk_fence_path_torn_locked() - @c's path is torn down, QPs destroyed
 * @c: the session, with c->lock, its path just made NONE
 * @owed: out: the FENCEs that waited for it, XFERK_FENCES_MAX entries,
 *	for xferk_fence_answer_owed() once c->lock is let go
 *
 * No send of the old path completes any more. Return: entries of @owed.
 */
u32 xferk_fence_path_torn_locked(struct xferk_conn *c,
				 struct xferk_fence_owed *owed)
{
	u32 n = c->fence.nr_owed;

	lockdep_assert_held(&c->lock);
	c->fence.torn = max(c->fence.torn, fence_path_seq(c) + 1);
	c->fence.sending = 0;
	memcpy(owed, c->fence.owed, n * sizeof(owed[0]));
	c->fence.nr_owed = 0;
	return n;
}

/* Answers the FENCEs xferk_fence_path_torn_locked() took (drops @owed's). */
void xferk_fence_answer_owed(struct xferk_conn *c,
			     struct xferk_fence_owed *owed, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		fence_answer(owed[i].via, owed[i].peer_conn_id, c->local_id,
			     owed[i].path, &c->token_key);
		xferk_conn_put(owed[i].via);
	}
}
