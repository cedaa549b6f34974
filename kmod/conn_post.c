// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions: posting chunks and their completions, independent of the
 * transport. A chunk handed to its connection (xferk_chunks_queue())
 * waits on c->pending for a send slot and a live path, is posted in
 * batches (conn_kick_locked(): one chain per call into the transport) and
 * stays on c->posted until its work request is terminal: it succeeded
 * (xferk_conn_chunks_succeeded()), it failed (xferk_conn_chunk_done()),
 * or the path's teardown reclaims it (xferk_conn_flush_posted()). A chunk
 * whose path failed under it moves to another rail of its remote that is
 * up, or waits for the session's next path (conn.c describes the path's
 * teardown), parked out of its device's window (xferk_queue_chunk_park())
 * until it is posted again. A cancel drops an op's waiting chunks
 * (xferk_conn_drop_op()). The fault injection of posts and completions is
 * here too.
 *
 * Lock order: c->lock, then xferk_queue_lock (parking).
 *
 * Locking: c->lock guards the pending and posted lists, the credits and
 * the send slots, and the transport posts and unposts under it; functions
 * named *_locked want it held. Chunks are completed, moved to another
 * rail or handed to conn_queue() again only without any connection's
 * lock (that may take another connection's): each function collects
 * them on a list of its own and hands them on once it has let c->lock go.
 */
#include <linux/wait.h>
#include "chunk.h"
#include "conn.h"
#include "conn_internal.h"
#include "conn_state.h"
#include "fault.h"
#include "queue.h"
#include "rail.h"
#include "stats.h"
#include "transport.h"

/* Fault injection (debugfs xferk/fault/), each "the next N": see fault-injection.md. */
atomic_t xferk_fault_swallow = ATOMIC_INIT(0);
atomic_t xferk_fault_delay = ATOMIC_INIT(0);
u32 xferk_fault_delay_ms = 100;
atomic_t xferk_fault_fail_post = ATOMIC_INIT(0);
atomic_t xferk_fault_fail_qp = ATOMIC_INIT(0);

/* A held completion waits here until delay_ms passed or a release. */
static DECLARE_WAIT_QUEUE_HEAD(fault_delay_wq);
static atomic_t fault_delay_releases = ATOMIC_INIT(0);

/* A module parameter (limits.c); 0 turns the detection of lost completions off. */
unsigned int xferk_lost_completion_ms = 30000;

static void conn_queue(struct xferk_conn *c, struct xferk_chunk **chs, u32 n,
		       bool move);
static void conn_move_chunks(struct xferk_conn *c, struct list_head *chunks);
static bool conn_fence_wanted_locked(struct xferk_conn *c,
				     struct xferk_chunk *ch);

/*
 * The session's path died: chunks waiting for a send slot that another
 * rail of their remote can take now go there instead of waiting for the
 * next path (see conn_move_chunks()); one that must wait for the fence of
 * the path that carried it asks for it.
 */
void conn_reroute_pending(struct xferk_conn *c)
{
	struct xferk_chunk *ch, *tmp;
	LIST_HEAD(moving);

	mutex_lock(&c->lock);
	list_for_each_entry_safe(ch, tmp, &c->pending, node) {
		if (xferk_chunk_may_reroute(ch))
			list_move_tail(&ch->node, &moving);
		else
			conn_fence_wanted_locked(c, ch);
	}
	mutex_unlock(&c->lock);
	conn_move_chunks(c, &moving);
}

/*
 * The session's path died: the chunks waiting for a send slot now wait for
 * the next path, out of the device window (xferk_queue_chunk_park()).
 * With c->lock.
 */
void conn_park_pending_locked(struct xferk_conn *c)
{
	struct xferk_chunk *ch;

	lockdep_assert_held(&c->lock);
	list_for_each_entry(ch, &c->pending, node)
		xferk_queue_chunk_park(ch);
}

/* May a work request be posted on @c now? With c->lock. */
bool xferk_conn_postable(struct xferk_conn *c)
{
	lockdep_assert_held(&c->lock);
	return c->state == XFERK_CONN_UP && !xferk_conn_path_dead(c);
}

/*
 * Does the path's QP exist, its teardown not begun? With c->lock: the
 * teardown marks the QP dead under it before it destroys the QP.
 */
bool xferk_conn_qp_live(struct xferk_conn *c)
{
	lockdep_assert_held(&c->lock);
	return c->path.lanes[0].qp && !xferk_conn_state_over(c->state) &&
	       !xferk_conn_path_dead(c);
}

/* What becomes of a chunk's op: the requests layer's (op.c). */
const struct xferk_chunk_events *xferk_chunk_cb __ro_after_init;

void xferk_chunk_set_events(const struct xferk_chunk_events *events)
{
	xferk_chunk_cb = events;
}

/* Why a pending chunk may not be posted, or 0. Called with c->lock. */
static int conn_chunk_refused(struct xferk_chunk *ch)
{
	if (xferk_chunk_cancelled(ch))
		return -ECANCELED;
	if (xferk_chunk_remote(ch)->error)	/* written under c->lock */
		return xferk_chunk_remote(ch)->error;
	if (atomic_dec_if_positive(&xferk_fault_fail_post) >= 0)
		return -EIO;
	return 0;
}

/*
 * Posts pending chunks while there are send slots, in order, up to
 * XFERK_POST_BATCH per call into the transport, or its share of them on a
 * session of several QPs: each call is one chain on one QP (the least busy
 * one), so what waits is spread over all of them. A chunk it refused goes
 * to @failed with its error; the ones behind it go back to the head of
 * the queue. Chunks it took none of without an error (its QPs' send
 * queues are full) wait there too, until a completion kicks again.
 * Called with c->lock.
 */
void conn_kick_locked(struct xferk_conn *c, struct list_head *failed)
{
	struct xferk_wr *wrs[XFERK_POST_BATCH];
	struct xferk_chunk *ch;
	u32 chain = DIV_ROUND_UP(XFERK_POST_BATCH, c->path.nr_qps);
	u64 fence_path = xferk_fence_path_locked(c);	/* the path is c->lock's */
	u32 n, i, posted;
	int error = 0;
	ktime_t now;

	lockdep_assert_held(&c->lock);
	while (xferk_conn_postable(c) && c->credits && !list_empty(&c->pending)) {
		n = 0;
		while (n < min(c->credits, chain) &&
		       !list_empty(&c->pending)) {
			ch = list_first_entry(&c->pending, struct xferk_chunk,
					      node);
			list_del(&ch->node);
			ch->error = conn_chunk_refused(ch);
			if (ch->error) {
				list_add_tail(&ch->node, failed);
				continue;
			}
			/* Its rail is chosen: the key is that rail's. */
			ch->wr.rkey = xferk_chunk_remote(ch)->rkey;
			wrs[n++] = &ch->wr;
		}
		posted = n ? c->transport->post(&c->path, wrs, n, &error) : 0;
		now = ktime_get();
		for (i = 0; i < posted; i++) {
			ch = xferk_wr_chunk(wrs[i]);
			xferk_queue_chunk_unpark(ch);
			ch->posted = true;
			ch->posted_at = now;
			ch->fence_path = fence_path;
			xferk_chunk_posted(ch);
			list_add_tail(&ch->node, &c->posted);
		}
		c->credits -= posted;
		c->outstanding += posted;
		if (posted == n)
			continue;
		if (error) {
			ch = xferk_wr_chunk(wrs[posted++]);
			ch->error = error;
			list_add_tail(&ch->node, failed);
		}
		for (i = n; i-- > posted; )
			list_add(&xferk_wr_chunk(wrs[i])->node, &c->pending);
		if (!error && !posted)
			break;
	}
}

/* Completes unposted chunks, each with its ->error. */
void complete_failed(struct list_head *failed)
{
	struct xferk_chunk *ch, *tmp;

	list_for_each_entry_safe(ch, tmp, failed, node) {
		list_del_init(&ch->node);
		xferk_chunk_complete(ch, ch->error);
	}
}

void fail_all(struct list_head *chunks, int error)
{
	struct xferk_chunk *ch;

	list_for_each_entry(ch, chunks, node)
		ch->error = error;
}

/*
 * Chunks whose session or path failed under them, each with its ->error:
 * each moves to another rail of its remote if one is up (rail.c), or is
 * completed unposted. Without any connection's lock.
 */
void reroute_or_complete(struct list_head *chunks)
{
	struct xferk_chunk *ch, *tmp;

	list_for_each_entry_safe(ch, tmp, chunks, node) {
		list_del_init(&ch->node);
		if (!xferk_chunk_reroute(ch))
			xferk_chunk_complete(ch, ch->error);
	}
}

/*
 * Hands @n chunks, all on @c and not yet posted, to @c in one hold of its
 * lock: see xferk_chunks_queue(). @move: a chunk that would wait for @c's
 * next path moves to another rail of its remote that is up.
 */
static void conn_queue(struct xferk_conn *c, struct xferk_chunk **chs, u32 n,
		       bool move)
{
	struct xferk_chunk *ch;
	LIST_HEAD(failed);
	LIST_HEAD(moving);
	LIST_HEAD(down);
	u32 i;

	if (atomic_dec_if_positive(&xferk_fault_fail_qp) >= 0)
		xferk_conn_down(c, -EIO);
	mutex_lock(&c->lock);
	for (i = 0; i < n; i++) {
		ch = chs[i];
		if (xferk_conn_state_over(c->state)) {
			ch->error = c->error ?: -ENOTCONN;
			list_add_tail(&ch->node, &down);
		} else if (!xferk_conn_postable(c) &&
			   xferk_chunk_cancelled(ch)) {
			/*
			 * It would wait for a path, but its op's deadline may
			 * have dropped the others already (when postable, the
			 * kick drops it).
			 */
			ch->error = -ECANCELED;
			list_add_tail(&ch->node, &failed);
		} else if (move && !xferk_conn_postable(c) &&
			   xferk_chunk_may_reroute(ch)) {
			list_add_tail(&ch->node, &moving);
		} else {
			list_add_tail(&ch->node, &c->pending);
			if (!xferk_conn_postable(c))
				xferk_queue_chunk_park(ch);
		}
	}
	conn_kick_locked(c, &failed);
	mutex_unlock(&c->lock);
	complete_failed(&failed);
	reroute_or_complete(&down);
	conn_move_chunks(c, &moving);
}

/*
 * Chunks whose session @c failed under them, not posted, on no list but
 * @chunks: each moves to another rail of its remote that is up, or else
 * is queued on @c again (behind the others: it waits for the next path,
 * or completes as conn_queue() decides when @c is down or its op was
 * settled). Without any connection's lock.
 */
static void conn_move_chunks(struct xferk_conn *c, struct list_head *chunks)
{
	struct xferk_chunk *ch, *tmp;

	list_for_each_entry_safe(ch, tmp, chunks, node) {
		list_del_init(&ch->node);
		if (xferk_chunk_reroute(ch))
			continue;
		if (ch->sent)
			xferk_chunk_unposted(ch);
		conn_queue(c, &ch, 1, false);
	}
}

/**
 * xferk_chunks_queue() - hand chunks to their connections
 * @chs: the chunks, not yet posted
 * @n: how many
 *
 * Each run of chunks on the same connection is queued in one hold of its
 * lock and posted in batches. A chunk is posted when a send slot is free
 * (and the session has a path), in the order chunks were queued; chunks
 * a path's death flushed are queued again behind those waiting. If the
 * connection is down, the chunk moves to another rail of its remote, or
 * is completed unposted with an error, as when the op was settled
 * meanwhile. A chunk may be complete (and its op
 * gone) once this returns; @chs is not touched after its run was queued.
 */
void xferk_chunks_queue(struct xferk_chunk **chs, u32 n)
{
	u32 i, run;

	for (i = 0; i < n; i += run) {
		struct xferk_conn *c = xferk_chunk_remote(chs[i])->conn;

		for (run = 1; i + run < n &&
		     xferk_chunk_remote(chs[i + run])->conn == c; run++)
			;
		conn_queue(c, chs + i, run, true);
	}
}

/* Did the chunk's path fail under it (not its own fault)? */
static bool chunk_path_error(int error)
{
	return error == -ECONNRESET || error == -ETIMEDOUT;
}

/*
 * Would @ch move to another rail but for the fence of the path that
 * carried it? Then its session asks for the fence. With c->lock.
 */
static bool conn_fence_wanted_locked(struct xferk_conn *c,
				     struct xferk_chunk *ch)
{
	if (!xferk_chunk_fence_blocks(ch))
		return false;
	xferk_fence_want_locked(c, ch->fence_path);
	return true;
}

/*
 * A posted chunk that came back with @error, its send slot returned: one
 * a path's death flushed (or whose retries it exhausted) was not at fault
 * and waits for the next path while the session lives, unless its op's
 * outcome is decided; once the session is going down, it waits for its
 * fence instead if that is all that keeps it from another rail (its
 * session's teardown moves it, conn_move_fenced()). Return: true if it
 * was queued again or held. With c->lock.
 */
static bool conn_repost_locked(struct xferk_conn *c, struct xferk_chunk *ch,
			       int error)
{
	bool fence, over;

	lockdep_assert_held(&c->lock);
	if (!chunk_path_error(error) || xferk_chunk_cancelled(ch))
		return false;
	fence = conn_fence_wanted_locked(c, ch);
	over = xferk_conn_state_over(c->state) || !conn_resumable(c);
	if (over && !fence)
		return false;
	xferk_chunk_unposted(ch);
	xferk_queue_chunk_park(ch);
	if (over) {
		list_add_tail(&ch->node, &c->fence.waiting);
		return true;
	}
	list_add_tail(&ch->node, &c->pending);
	c->reposted++;
	atomic64_inc(&xferk_stats.chunks_reposted);
	return true;
}

/*
 * Fault injection for a work request's completion: a swallowed one never
 * reports (true); a delayed one is reported late.
 */
static bool completion_swallowed(void)
{
	int releases;

	if (atomic_dec_if_positive(&xferk_fault_swallow) >= 0)
		return true;
	if (!atomic_read(&xferk_fault_delay))
		return false;
	/* Read before the knob is taken: a release once it is ends the hold. */
	releases = atomic_read(&fault_delay_releases);
	if (atomic_dec_if_positive(&xferk_fault_delay) >= 0)
		wait_event_timeout(fault_delay_wq,
				   atomic_read(&fault_delay_releases) != releases,
				   msecs_to_jiffies(READ_ONCE(xferk_fault_delay_ms)));
	return false;
}

/*
 * Fault knob release_delays: every completion delay_completions holds now
 * is handled at once, so a test that checked what it needed while an op
 * was in flight need not wait out delay_ms.
 */
void xferk_fault_release_delays(void)
{
	atomic_inc(&fault_delay_releases);
	wake_up_all(&fault_delay_wq);
}

/*
 * A posted chunk whose work request is terminal leaves the path: its send
 * slot is returned. With c->lock. Return: false if the path's teardown
 * already reclaimed it (it is teardown's to complete).
 */
static bool conn_chunk_off_path_locked(struct xferk_conn *c,
				       struct xferk_chunk *ch)
{
	lockdep_assert_held(&c->lock);
	if (!ch->posted)
		return false;
	list_del_init(&ch->node);
	ch->posted = false;
	c->transport->unpost(&c->path, &ch->wr);
	c->credits++;
	if (!--c->outstanding)
		wake_up_all(&c->idle);
	return true;
}

/*
 * Posted chunks' work requests succeeded: @chs, in completion order (the
 * array is reused, compacted). The batch in one hold of the connection's
 * lock: the send slots come back and what waits for them is posted as
 * chains, then the chunks complete together (xferk_chunks_succeeded():
 * one hold of the queue's lock per device queue). A chunk the path's
 * teardown already reclaimed is left to it. A completion the delay fault
 * holds back holds back its batch.
 */
static void conn_chunks_succeeded(struct xferk_conn *c,
				  struct xferk_chunk **chs, u32 n)
{
	bool check = READ_ONCE(xferk_lost_completion_ms) &&
		     c->transport->overtaken;
	bool lost = false;
	LIST_HEAD(failed);
	u32 i, kept;

	for (i = 0, kept = 0; i < n; i++)
		if (!completion_swallowed())
			chs[kept++] = chs[i];
	mutex_lock(&c->lock);
	for (i = 0, n = kept, kept = 0; i < n; i++) {
		if (check && chs[i]->posted &&
		    c->transport->overtaken(&c->path, &chs[i]->wr))
			lost = true;
		if (conn_chunk_off_path_locked(c, chs[i]))
			chs[kept++] = chs[i];
	}
	conn_kick_locked(c, &failed);
	if (c->nr_acks_due)
		xferk_msgs_kick_locked(c);
	mutex_unlock(&c->lock);
	if (lost)
		xferk_conn_completion_lost(c);
	xferk_chunks_succeeded(chs, kept);
	complete_failed(&failed);
}

/**
 * xferk_conn_chunks_succeeded() - posted chunks' work requests succeeded
 * @c: their connection
 * @wrs: the work requests, in completion order
 * @n: how many
 *
 * The null peer's due work requests: XFERK_POST_BATCH at a time, each
 * batch in one hold of the connection's lock (conn_chunks_succeeded()).
 */
void xferk_conn_chunks_succeeded(struct xferk_conn *c, struct xferk_wr **wrs,
				 u32 n)
{
	struct xferk_chunk *chs[XFERK_POST_BATCH];
	u32 i, batch;

	while (n) {
		batch = min_t(u32, n, ARRAY_SIZE(chs));
		for (i = 0; i < batch; i++)
			chs[i] = xferk_wr_chunk(wrs[i]);
		conn_chunks_succeeded(c, chs, batch);
		wrs += batch;
		n -= batch;
	}
}

/**
 * xferk_conn_next_posted() - the session's posted work requests, in order
 * @c: the session, its lock held
 * @wr: the previous one, NULL for the first
 *
 * Return: the work request posted after @wr (c->posted is in posting
 * order), or NULL after the last.
 */
struct xferk_wr *xferk_conn_next_posted(struct xferk_conn *c,
					struct xferk_wr *wr)
{
	struct xferk_chunk *ch;

	lockdep_assert_held(&c->lock);
	if (wr)
		ch = list_next_entry(xferk_wr_chunk(wr), node);
	else
		ch = list_first_entry(&c->posted, struct xferk_chunk, node);
	return list_entry_is_head(ch, &c->posted, node) ? NULL : &ch->wr;
}

/**
 * xferk_conn_completion_lost() - a work request's completion was lost
 * @c: the session whose path posted it
 *
 * A work request still outstanding after a later one of its RC send queue
 * completed (completions come in order there), or outstanding for
 * lost_completion_ms, will never complete: a device fault, not a tenant's
 * doing, so the path is replaced at once, outside the escalation limit.
 * Its teardown reclaims the work request once the QP is destroyed, and
 * its chunk is posted again or completes.
 */
void xferk_conn_completion_lost(struct xferk_conn *c)
{
	if (!xferk_conn_path_dead(c))
		pr_warn_ratelimited("xferk: conn %u: a work request lost its completion; replacing the path\n",
				    c->id);
	xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_LOST);
}

/*
 * The oldest chunk still posted was posted lost_completion_ms ago or
 * earlier: with c->lock.
 */
bool conn_post_overdue_locked(struct xferk_conn *c)
{
	u64 bound = READ_ONCE(xferk_lost_completion_ms);
	struct xferk_chunk *ch;

	lockdep_assert_held(&c->lock);
	ch = list_first_entry_or_null(&c->posted, struct xferk_chunk, node);
	return bound && ch &&
	       ktime_ms_delta(ktime_get(), ch->posted_at) >= (s64)bound;
}

/**
 * xferk_conn_chunk_done() - a posted chunk's work request is terminal
 * @c: the connection
 * @wr: the chunk's work request
 * @error: 0 or a negative errno (-ECONNRESET: flushed)
 *
 * Returns the send slot, posts what waits for it, and completes the chunk,
 * or queues it again (conn_repost_locked()), or, when its path failed under
 * it and another rail of its remote is up, moves it there
 * (conn_move_chunks()). A chunk the path's
 * teardown already reclaimed is left to it. Any error means the QP is in
 * the error state: the path posts nothing more and dies.
 */
void xferk_conn_chunk_done(struct xferk_conn *c, struct xferk_wr *wr,
			   int error)
{
	struct xferk_chunk *ch = xferk_wr_chunk(wr);
	LIST_HEAD(failed);
	LIST_HEAD(moving);
	bool reposted = false;

	if (!error) {
		conn_chunks_succeeded(c, &ch, 1);
		return;
	}
	if (completion_swallowed())
		return;
	/* The chunk keeps its own error; others see the path reset. */
	xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
	mutex_lock(&c->lock);
	/* A key the peer refused stays so: its other chunks fail unposted. */
	if (error == -EACCES && !xferk_chunk_remote(ch)->error)
		WRITE_ONCE(xferk_chunk_remote(ch)->error, -EACCES);
	if (!conn_chunk_off_path_locked(c, ch)) {
		mutex_unlock(&c->lock);
		return;
	}
	if (chunk_path_error(error) && xferk_chunk_may_reroute(ch))
		list_add_tail(&ch->node, &moving);
	else
		reposted = conn_repost_locked(c, ch, error);
	conn_kick_locked(c, &failed);
	if (c->nr_acks_due)
		xferk_msgs_kick_locked(c);
	mutex_unlock(&c->lock);
	if (!list_empty(&moving))
		conn_move_chunks(c, &moving);
	else if (!reposted)
		xferk_chunk_complete(ch, error);
	complete_failed(&failed);
}

/* Cancel: the op's chunks waiting for a send slot or their fence are dropped. */
void xferk_conn_drop_op(struct xferk_conn *c, struct xferk_op *op)
{
	struct list_head *lists[] = { &c->pending, &c->fence.waiting };
	struct xferk_chunk *ch, *tmp;
	LIST_HEAD(failed);
	u32 i;

	mutex_lock(&c->lock);
	for (i = 0; i < ARRAY_SIZE(lists); i++) {
		list_for_each_entry_safe(ch, tmp, lists[i], node) {
			if (ch->op == op) {
				ch->error = -ECANCELED;
				list_move_tail(&ch->node, &failed);
			}
		}
	}
	mutex_unlock(&c->lock);
	wake_up_all(&c->state_wq);	/* a teardown may wait for them */
	complete_failed(&failed);
}

/* Has @op work requests posted on @c's path? */
bool xferk_conn_op_posted(struct xferk_conn *c, struct xferk_op *op)
{
	struct xferk_chunk *ch;
	bool posted = false;

	mutex_lock(&c->lock);
	list_for_each_entry(ch, &c->posted, node)
		posted |= ch->op == op;
	mutex_unlock(&c->lock);
	return posted;
}

/**
 * xferk_conn_flush_posted() - reclaim every chunk still posted, as flushed
 * @c: the connection, its path dead
 *
 * Only once nothing can touch their memory any more: the transport is
 * quiesced, or has no device (the null peer).
 */
void xferk_conn_flush_posted(struct xferk_conn *c)
{
	struct xferk_chunk *ch, *tmp;
	LIST_HEAD(chunks);
	LIST_HEAD(moving);
	LIST_HEAD(done);

	mutex_lock(&c->lock);
	list_splice_init(&c->posted, &chunks);
	list_for_each_entry_safe(ch, tmp, &chunks, node) {
		conn_chunk_off_path_locked(c, ch);
		if (xferk_chunk_may_reroute(ch))
			list_add_tail(&ch->node, &moving);
		else if (!conn_repost_locked(c, ch, -ECONNRESET))
			list_add_tail(&ch->node, &done);
	}
	mutex_unlock(&c->lock);
	conn_move_chunks(c, &moving);
	list_for_each_entry_safe(ch, tmp, &done, node) {
		list_del_init(&ch->node);
		xferk_chunk_complete(ch, -ECONNRESET);
	}
}

/*
 * The session is going down: its waiting chunks that only the fence of
 * the path that carried them keeps from another rail wait for it
 * (c->fence.waiting) instead of failing. With c->lock.
 */
void conn_hold_unfenced_locked(struct xferk_conn *c)
{
	struct xferk_chunk *ch, *tmp;

	lockdep_assert_held(&c->lock);
	list_for_each_entry_safe(ch, tmp, &c->pending, node) {
		if (conn_fence_wanted_locked(c, ch)) {
			list_move_tail(&ch->node, &c->fence.waiting);
			xferk_queue_chunk_park(ch);
		}
	}
}

/*
 * The session's teardown waited for its fence: the chunks that waited
 * move to another rail if it was confirmed, or fail with the session's
 * error.
 */
void conn_move_fenced(struct xferk_conn *c)
{
	LIST_HEAD(chunks);

	mutex_lock(&c->lock);
	list_splice_init(&c->fence.waiting, &chunks);
	fail_all(&chunks, c->error ?: -ENOTCONN);
	mutex_unlock(&c->lock);
	reroute_or_complete(&chunks);
}

/*
 * The session through which to ask for @c's fence (a reference), or
 * NULL: the one another rail of a chunk that waits for it would take.
 * @waits: out: whether any chunk waits for it. With c->lock.
 */
struct xferk_conn *conn_fence_via_locked(struct xferk_conn *c, bool *waits)
{
	struct list_head *lists[] = { &c->pending, &c->fence.waiting };
	struct xferk_conn *via;
	struct xferk_chunk *ch;
	u32 i;

	lockdep_assert_held(&c->lock);
	*waits = false;
	for (i = 0; i < ARRAY_SIZE(lists); i++) {
		list_for_each_entry(ch, lists[i], node) {
			if (xferk_fence_covers(c, ch->fence_path))
				continue;
			*waits = true;
			via = xferk_chunk_fence_via(ch);
			if (via)
				return via;
		}
	}
	return NULL;
}
