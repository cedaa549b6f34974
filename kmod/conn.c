// SPDX-License-Identifier: GPL-2.0
/*
 * Host-wide connections, independent of the transport: state, posting,
 * the one teardown path, and the indexes that find a connection.
 *
 * A connection is shared by every process of a network namespace that
 * talks to the same peer listener (RDS and rtrs do the same). It comes up
 * on the first XFERK_IOC_CONNECT or when a peer connects to our listener.
 * Once up it is a session (PD, exports, key, ids, its users' handles) over
 * a replaceable path (cm_id, QP, CQ), the way rtrs separates sessions from
 * paths and nvme-rdma reconnects a controller.
 *
 * A path dies when its QP leaves the ready-to-send state (a QP event, any
 * failed or flushed completion, a refused post, a failed keepalive probe,
 * a cancel's escalation) or the peer disconnects: from that moment the
 * session posts nothing more (a dead QP never swallows work), and it is
 * RECONNECTING. One recovery work tears the path down:
 *
 *   1. disconnect: no connection-manager callback runs any more (the
 *      cm_id is destroyed first), the QP moves to the error state and
 *      flushes every posted work request
 *   2. wait, bounded, until every posted chunk has its completion
 *   3. quiesce: destroy QP and CQ; chunks that never completed are now
 *      physically dead with their QP and count as flushed
 *
 * A chunk flushed by a path's death (or whose retries it exhausted) was
 * not at fault: it waits for the next path and is posted again (an RDMA
 * READ or WRITE of pinned, unchanged buffers is idempotent), unless its
 * op's outcome is decided (deadline, cancel, failure). The chunk whose own
 * work request failed (an access error) fails its op with that error.
 *
 * The end that initiated the session starts a new path at once, then with
 * exponential backoff (XFERK_RECONNECT_MIN_MS doubling to _MAX_MS); its
 * handshake names the session, authenticated with the session's key, and
 * the accepting end attaches the new QP to the same PD, so exports and
 * imports stay valid. A session that has no path after reconnect_ms, whose
 * peer answers that it does not know the session (it is a new instance:
 * ESTALE), or whose peer host opens a new session to us, goes DOWN. So
 * do a first connection that fails, a device that goes away, an unclaimed
 * passive end, and every session at module unload. Every way down goes
 * through xferk_conn_down(); the recovery work then moves the session
 * from DOWN to CLOSED, which happens once, and tears it down in one fixed
 * order:
 *
 *   1. stop posting: fail the chunks still waiting for a send slot
 *   2. tear the path down as above; no chunk is re-queued any more
 *   3. revoke the connection's exports (their keys die), free the rest
 *
 * Indexes (xferk_conns_lock): every connection is on xferk_conns (tables);
 * RDMA ends are hashed by (namespace, peer address) for CONNECT, and every
 * end by its local id for IMPORT. Ids are chosen locally, so no peer can
 * make its connection be found in place of another.
 */
#include <linux/delay.h>
#include <linux/hash.h>
#include <linux/hashtable.h>
#include <linux/jhash.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include "conn.h"
#include "conn_state.h"
#include "export.h"
#include "fault.h"
#include "front.h"
#include "handle.h"
#include "limits.h"
#include "notify.h"
#include "op.h"
#include "queue.h"
#include "rail.h"
#include "stats.h"
#include "transport.h"
#include "trace.h"

#define XFERK_CHUNK_MAX_BYTES	SZ_1M
#define XFERK_RECONNECT_MIN_MS	100
#define XFERK_RECONNECT_MAX_MS	5000

DEFINE_MUTEX(xferk_conns_lock);	/* xferk_conns, both indexes, the ids */
LIST_HEAD(xferk_conns);
static DEFINE_HASHTABLE(xferk_conns_by_peer, 8);
static DEFINE_HASHTABLE(xferk_conns_by_id, 8);
struct workqueue_struct *xferk_conn_wq;
static atomic_t xferk_next_conn_id = ATOMIC_INIT(0);

static unsigned int xferk_flush_timeout_ms = 5000;
module_param_named(flush_timeout_ms, xferk_flush_timeout_ms, uint, 0644);
MODULE_PARM_DESC(flush_timeout_ms,
		 "Teardown: how long to wait for posted work requests to flush before the QP is destroyed (default 5000)");

/* Fault injection (debugfs xferk/fault/), each "the next N": see fault-injection.md. */
atomic_t xferk_fault_swallow = ATOMIC_INIT(0);
atomic_t xferk_fault_delay = ATOMIC_INIT(0);
u32 xferk_fault_delay_ms = 100;
atomic_t xferk_fault_fail_post = ATOMIC_INIT(0);
atomic_t xferk_fault_fail_qp = ATOMIC_INIT(0);

void xferk_conn_get(struct xferk_conn *c)
{
	kref_get(&c->ref);
}

/* The end left CONNECTING (or goes): its creator's attempt is over. */
static void conn_drop_creator(struct xferk_conn *c)
{
	struct xferk_qacct *acct = xchg(&c->creator, NULL);

	if (acct) {
		atomic_long_dec(&acct->connecting);
		xferk_qacct_put(acct);
	}
}

static void conn_release(struct kref *ref)
{
	struct xferk_conn *c = container_of(ref, struct xferk_conn, ref);

	conn_drop_creator(c);
	WARN_ON(!list_empty(&c->pending) || !list_empty(&c->posted));
	WARN_ON(!list_empty(&c->exports));
	xa_destroy(&c->export_ids);
	xferk_notify_conn_gone(c);
	if (c->qdev)
		xferk_qdev_put(c->qdev);
	put_net(c->net);
	kvfree(c->sends);
	kfree(c->msgs);
	kvfree(c->revoked);
	kfree(c);
}

void xferk_conn_put(struct xferk_conn *c)
{
	kref_put(&c->ref, conn_release);
}

static int conn_errno(int error);
static void conn_recover(struct work_struct *work);
static void conn_down_work(struct work_struct *work);
static void conn_timer(struct work_struct *work);
static void conn_keepalive(struct work_struct *work);
static void conn_queue(struct xferk_conn *c, struct xferk_chunk **chs, u32 n,
		       bool move);
static void conn_move_chunks(struct xferk_conn *c, struct list_head *chunks);

/**
 * xferk_conn_init() - initialization shared by both transports
 * @c: the connection, zeroed
 * @t: its transport
 * @net: its network namespace (a reference is taken)
 * @active: this end initiates
 *
 * The connection is not yet findable: xferk_conn_publish() lists it.
 */
void xferk_conn_init(struct xferk_conn *c, const struct xferk_transport *t,
		     struct net *net, bool active)
{
	int i;

	kref_init(&c->ref);
	INIT_LIST_HEAD(&c->node);
	INIT_HLIST_NODE(&c->peer_node);
	INIT_HLIST_NODE(&c->id_node);
	c->transport = t;
	c->net = get_net(net);
	c->active = active;
	c->id = atomic_inc_return(&xferk_next_conn_id);
	c->state = XFERK_CONN_CONNECTING;
	c->path_live = true;	/* the first path is the connection attempt */
	init_waitqueue_head(&c->state_wq);
	mutex_init(&c->lock);
	INIT_LIST_HEAD(&c->pending);
	INIT_LIST_HEAD(&c->posted);
	INIT_LIST_HEAD(&c->remotes);
	INIT_LIST_HEAD(&c->notify_queue);
	INIT_LIST_HEAD(&c->notify_posted);
	init_waitqueue_head(&c->idle);
	mutex_init(&c->exports_lock);
	INIT_LIST_HEAD(&c->exports);
	xa_init(&c->export_ids);
	INIT_DELAYED_WORK(&c->recover_work, conn_recover);
	INIT_WORK(&c->down_work, conn_down_work);
	INIT_DELAYED_WORK(&c->timer_work, conn_timer);
	INIT_DELAYED_WORK(&c->keepalive_work, conn_keepalive);
	spin_lock_init(&c->cm_lock);
	for (i = 0; i < XFERK_MAX_QPS; i++) {
		c->lanes[i].conn = c;
		c->lanes[i].index = i;
		init_completion(&c->lanes[i].cm_ready);
		/* The first's creator completes it; the others', once made. */
		if (i)
			complete_all(&c->lanes[i].cm_ready);
	}
	c->nr_qps = 1;
	c->sqp.nr_qps = 1;
	init_completion(&c->reg_done);
	INIT_LIST_HEAD(&c->dev_node);
	INIT_LIST_HEAD(&c->free_sends);
	c->credits = XFERK_QP_CTXS;
	c->max_chunk_pages = XFERK_MAX_SGE;
	c->max_chunk_bytes = XFERK_CHUNK_MAX_BYTES;
}

static u32 peer_hash(const struct net *net, const struct sockaddr_storage *a)
{
	u32 h = hash_ptr(net, 32);

	if (a->ss_family == AF_INET)
		return jhash(&((const struct sockaddr_in *)a)->sin_addr,
			     sizeof(struct in_addr), h);
	return jhash(&((const struct sockaddr_in6 *)a)->sin6_addr,
		     sizeof(struct in6_addr), h);
}

static struct xferk_conn *conn_by_id(u64 local_id)
{
	struct xferk_conn *c;

	lockdep_assert_held(&xferk_conns_lock);
	hash_for_each_possible(xferk_conns_by_id, c, id_node, local_id)
		if (c->local_id == local_id)
			return c;
	return NULL;
}

static bool conn_crossed_locked(struct xferk_conn *c, u64 peer_conn_id);

/**
 * xferk_conn_publish() - make a new connection findable
 * @c: the connection, with its peer address (RDMA) set
 * @peer_conn_id: for an end a peer's request made, the requesting end's
 *	id; else 0
 *
 * Gives it a fresh local id and lists it; from here on its teardown is
 * the only way to free it (the list holds the initial reference). Two
 * hosts connecting to each other keep one session; under the lock that
 * lists every end, so whichever of our two ends comes second sees the
 * other: an end we initiate is not published if a live end that serves
 * the same peer listener was published meanwhile (the caller uses that
 * one), and an end a peer's request made is not published if the request
 * crosses an end we initiated that wins (conn_crossed_locked()).
 *
 * Return: NULL once published; else @c is not published and the result
 * is that other end (with a reference), or ERR_PTR(-EALREADY): refuse the
 * request.
 */
struct xferk_conn *xferk_conn_publish(struct xferk_conn *c, u64 peer_conn_id)
{
	struct xferk_conn *other = NULL;

	mutex_lock(&xferk_conns_lock);
	if (c->transport == &xferk_rdma_transport && c->active)
		other = xferk_conn_find_peer(c->net, &c->peer);
	else if (c->transport == &xferk_rdma_transport &&
		 conn_crossed_locked(c, peer_conn_id))
		other = ERR_PTR(-EALREADY);
	if (other) {
		mutex_unlock(&xferk_conns_lock);
		return other;
	}
	do {
		c->local_id = get_random_u64();
	} while (!c->local_id || conn_by_id(c->local_id));
	hash_add(xferk_conns_by_id, &c->id_node, c->local_id);
	if (c->transport == &xferk_rdma_transport)
		hash_add(xferk_conns_by_peer, &c->peer_node,
			 peer_hash(c->net, &c->peer));
	list_add_tail(&c->node, &xferk_conns);
	mutex_unlock(&xferk_conns_lock);
	return NULL;
}

/* A local object uses the connection: it is never reaped as unused. */
void xferk_conn_claim(struct xferk_conn *c)
{
	set_bit(XFERK_CONN_F_CLAIMED, &c->flags);
}

/*
 * The one function that changes @state, with c->lock: to @state if the
 * session's state machine allows it from the current one (conn_state.h).
 * Return: whether it changed.
 */
static bool conn_change_state(struct xferk_conn *c, int state)
{
	lockdep_assert_held(&c->lock);
	if (!xferk_conn_state_allowed(c->state, state))
		return false;
	trace_xferk_conn_state(c->id, c->state, state, c->error);
	if (c->state == XFERK_CONN_UP) {
		atomic64_dec(&xferk_stats.peers_connected);
		xferk_msgs_path_lost(c);
	}
	if (state == XFERK_CONN_UP)
		atomic64_inc(&xferk_stats.peers_connected);
	WRITE_ONCE(c->state, state);
	wake_up_all(&c->state_wq);
	return true;
}

/*
 * Runs the recovery work after @delay jiffies (at once if it is queued
 * later), with c->lock: never once the session is CLOSED, so that no run
 * is left for a session that may be freed.
 */
static void conn_recover_locked(struct xferk_conn *c, unsigned long delay)
{
	lockdep_assert_held(&c->lock);
	if (c->state != XFERK_CONN_CLOSED)
		mod_delayed_work(xferk_conn_wq, &c->recover_work, delay);
}

/* (Re)arms the session's own deadline @ms from now, with c->lock. */
static void conn_arm_timer_locked(struct xferk_conn *c, unsigned int ms)
{
	lockdep_assert_held(&c->lock);
	if (c->state != XFERK_CONN_CLOSED)
		mod_delayed_work(xferk_conn_wq, &c->timer_work,
				 msecs_to_jiffies(ms));
}

/**
 * xferk_conn_down() - take a connection down (any context that may sleep)
 * @c: the connection
 * @error: why, as a negative errno; the first reason is kept
 *
 * Idempotent. The teardown itself runs in the recovery work.
 */
void xferk_conn_down(struct xferk_conn *c, int error)
{
	bool first;

	mutex_lock(&c->lock);
	first = xferk_conn_state_allowed(c->state, XFERK_CONN_DOWN);
	if (first) {
		c->error = conn_errno(error);
		conn_change_state(c, XFERK_CONN_DOWN);
		conn_recover_locked(c, 0);
	}
	mutex_unlock(&c->lock);
	if (first)
		conn_drop_creator(c);
}

/* The session outlives its path: its transport makes new ones. */
static bool conn_resumable(struct xferk_conn *c)
{
	return c->transport->reconnect && READ_ONCE(xferk_reconnect_ms);
}

/*
 * The session's path died: chunks waiting for a send slot that another
 * rail of their remote can take now go there instead of waiting for the
 * next path (see conn_move_chunks()).
 */
static void conn_reroute_pending(struct xferk_conn *c)
{
	struct xferk_chunk *ch, *tmp;
	LIST_HEAD(moving);

	mutex_lock(&c->lock);
	list_for_each_entry_safe(ch, tmp, &c->pending, node)
		if (xferk_chunk_may_reroute(ch))
			list_move_tail(&ch->node, &moving);
	mutex_unlock(&c->lock);
	conn_move_chunks(c, &moving);
}

/**
 * xferk_conn_path_down() - the session's current path died (may sleep)
 * @c: the connection
 * @error: why, as a negative errno
 * @cause: enum xferk_path_cause, for the counters
 *
 * A session that was up goes RECONNECTING and the recovery work replaces
 * the path (its waiting chunks that another rail can take move there);
 * in RECONNECTING, the path attempt failed and the recovery work makes
 * the next one. A first connection that fails, or one whose paths are not
 * replaced, goes down with @error.
 */
void xferk_conn_path_down(struct xferk_conn *c, int error, int cause)
{
	bool resumable = conn_resumable(c);
	int state;

	set_bit(XFERK_CONN_F_QP_DEAD, &c->flags);
	mutex_lock(&c->lock);
	state = c->state;
	if (state == XFERK_CONN_UP && resumable) {
		c->error = conn_errno(error);
		conn_change_state(c, XFERK_CONN_RECONNECTING);
		c->attempts = 0;
		c->next_attempt = ktime_get();
		c->path_deaths++;
		atomic64_inc(&xferk_stats.path_deaths[cause]);
		conn_arm_timer_locked(c, READ_ONCE(xferk_reconnect_ms));
	}
	mutex_unlock(&c->lock);
	if (xferk_conn_state_over(state))
		return;
	if (state == XFERK_CONN_CONNECTING || !resumable) {
		xferk_conn_down(c, error);
		return;
	}
	if (state == XFERK_CONN_UP)
		conn_reroute_pending(c);
	mutex_lock(&c->lock);
	conn_recover_locked(c, 0);
	mutex_unlock(&c->lock);
}

/* Holds the reference xferk_conn_qp_dead() took for it. */
static void conn_down_work(struct work_struct *work)
{
	struct xferk_conn *c = container_of(work, struct xferk_conn, down_work);

	xferk_conn_path_down(c, READ_ONCE(c->qp_error), READ_ONCE(c->qp_cause));
	xferk_conn_put(c);
}

/**
 * xferk_conn_qp_dead() - the connection's QP left the ready-to-send state
 * @c: the connection
 * @error: why, as a negative errno
 * @cause: enum xferk_path_cause
 *
 * Any context (the QP event handler runs in atomic context): nothing is
 * posted on the path from now on, and xferk_conn_path_down() runs in a
 * work item, which holds a reference (the caller's may be its last).
 */
void xferk_conn_qp_dead(struct xferk_conn *c, int error, int cause)
{
	if (test_and_set_bit(XFERK_CONN_F_QP_DEAD, &c->flags))
		return;
	atomic64_inc(&xferk_stats.qp_errors);
	WRITE_ONCE(c->qp_error, error);
	WRITE_ONCE(c->qp_cause, cause);
	xferk_conn_get(c);
	if (!queue_work(xferk_conn_wq, &c->down_work))
		xferk_conn_put(c);	/* the queued one holds its own */
}

/*
 * A deadline of the connection itself: the handshake of either end; for a
 * passive end that came up, the time a local user has to claim it; for a
 * RECONNECTING session, reconnect_ms to get a new path.
 */
static void conn_timer(struct work_struct *work)
{
	struct xferk_conn *c = container_of(to_delayed_work(work),
					    struct xferk_conn, timer_work);
	int state;

	mutex_lock(&c->lock);
	state = c->state;
	mutex_unlock(&c->lock);
	if (xferk_conn_state_over(state) ||
	    (state == XFERK_CONN_UP &&
	     (c->active || test_bit(XFERK_CONN_F_CLAIMED, &c->flags))))
		return;
	if (state == XFERK_CONN_RECONNECTING) {
		xferk_conn_down(c, c->error);
		return;
	}
	if (!c->active)
		atomic64_inc(&xferk_stats.conns_reaped);
	xferk_conn_down(c, -ETIMEDOUT);
}

/* Until the next probe; when disabled, look again in a second. */
static unsigned long keepalive_delay(void)
{
	return msecs_to_jiffies(READ_ONCE(xferk_keepalive_ms) ?: MSEC_PER_SEC);
}

/*
 * Keepalive: while a connection is up, its transport probes the peer
 * every keepalive_ms (one probe at a time; none while the transport says
 * it cannot, e.g. its own link is down). A probe that fails takes the QP
 * down like any failed work request, so an end whose peer is gone (the
 * host died or rebooted, its module was reloaded, the peer's QP died
 * during a link outage) goes down by itself within keepalive_ms plus the
 * retry window of a probe it can post, even when no local user posts on
 * it: CONNECT then makes a new one instead of returning it.
 */
static void conn_keepalive(struct work_struct *work)
{
	struct xferk_conn *c = container_of(to_delayed_work(work),
					    struct xferk_conn, keepalive_work);
	int ret = 0;

	mutex_lock(&c->lock);
	if (!xferk_conn_postable(c)) {
		mutex_unlock(&c->lock);
		return;
	}
	if (READ_ONCE(xferk_keepalive_ms) &&
	    !test_and_set_bit(XFERK_CONN_F_PROBING, &c->flags)) {
		ret = c->transport->probe(c);
		if (ret)
			clear_bit(XFERK_CONN_F_PROBING, &c->flags);
		/* The transport cannot probe now (its link is down). */
		if (ret == -EAGAIN)
			ret = 0;
	}
	queue_delayed_work(xferk_conn_wq, &c->keepalive_work, keepalive_delay());
	mutex_unlock(&c->lock);
	if (ret)
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_KEEPALIVE);
}

/**
 * xferk_conn_probe_done() - a keepalive probe completed (any context)
 * @c: the connection
 * @error: 0, or why the probe failed (not for a flushed probe: its QP is
 *	already going down)
 *
 * A failed probe means the path died (ECONNRESET), as when a chunk fails.
 */
void xferk_conn_probe_done(struct xferk_conn *c, int error)
{
	if (error) {
		atomic64_inc(&xferk_stats.keepalive_failures);
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_KEEPALIVE);
	}
	clear_bit(XFERK_CONN_F_PROBING, &c->flags);
}

/* (Re)arms the connection's own deadline @ms from now. */
void xferk_conn_arm_timer(struct xferk_conn *c, unsigned int ms)
{
	mutex_lock(&c->lock);
	conn_arm_timer_locked(c, ms);
	mutex_unlock(&c->lock);
}

/* May a work request be posted on @c now? With c->lock. */
bool xferk_conn_postable(struct xferk_conn *c)
{
	lockdep_assert_held(&c->lock);
	return c->state == XFERK_CONN_UP &&
	       !test_bit(XFERK_CONN_F_QP_DEAD, &c->flags);
}

/*
 * Does the path's QP exist, its teardown not begun? With c->lock: the
 * teardown marks the QP dead under it before it destroys the QP.
 */
bool xferk_conn_qp_live(struct xferk_conn *c)
{
	lockdep_assert_held(&c->lock);
	return c->lanes[0].qp && !xferk_conn_state_over(c->state) &&
	       !test_bit(XFERK_CONN_F_QP_DEAD, &c->flags);
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
static void conn_kick_locked(struct xferk_conn *c, struct list_head *failed)
{
	struct xferk_chunk *batch[XFERK_POST_BATCH], *ch;
	u32 chain = DIV_ROUND_UP(XFERK_POST_BATCH, c->nr_qps);
	u32 n, i, posted;
	int error = 0;

	lockdep_assert_held(&c->lock);
	while (xferk_conn_postable(c) && c->credits && !list_empty(&c->pending)) {
		n = 0;
		while (n < min(c->credits, chain) &&
		       !list_empty(&c->pending)) {
			ch = list_first_entry(&c->pending, struct xferk_chunk,
					      node);
			list_del(&ch->node);
			ch->error = conn_chunk_refused(ch);
			if (ch->error)
				list_add_tail(&ch->node, failed);
			else
				batch[n++] = ch;
		}
		posted = n ? c->transport->post(c, batch, n, &error) : 0;
		for (i = 0; i < posted; i++) {
			ch = batch[i];
			ch->posted = true;
			xferk_chunk_posted(ch);
			list_add_tail(&ch->node, &c->posted);
		}
		c->credits -= posted;
		c->outstanding += posted;
		if (posted == n)
			continue;
		if (error) {
			batch[posted]->error = error;
			list_add_tail(&batch[posted]->node, failed);
			posted++;
		}
		for (i = n; i-- > posted; )
			list_add(&batch[i]->node, &c->pending);
		if (!error && !posted)
			break;
	}
}

/* Completes unposted chunks, each with its ->error. */
static void complete_failed(struct list_head *failed)
{
	struct xferk_chunk *ch, *tmp;

	list_for_each_entry_safe(ch, tmp, failed, node) {
		list_del_init(&ch->node);
		xferk_chunk_complete(ch, ch->error);
	}
}

static void fail_all(struct list_head *chunks, int error)
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
static void reroute_or_complete(struct list_head *chunks)
{
	struct xferk_chunk *ch, *tmp;

	list_for_each_entry_safe(ch, tmp, chunks, node) {
		list_del_init(&ch->node);
		if (!xferk_chunk_reroute(ch))
			xferk_chunk_complete(ch, ch->error);
	}
}

/**
 * xferk_conn_set_up() - the connection's (new) path is established
 * @c: the connection
 *
 * Chunks may already wait for it: an importer can queue on the accepting
 * end before its ESTABLISHED event, and a RECONNECTING session keeps the
 * chunks its last path's death flushed.
 */
void xferk_conn_set_up(struct xferk_conn *c)
{
	bool passive_up = false, new_session = false;
	LIST_HEAD(failed);

	mutex_lock(&c->lock);
	/* Not a path that died meanwhile (its recovery handles it). */
	if ((c->state == XFERK_CONN_CONNECTING ||
	     c->state == XFERK_CONN_RECONNECTING) && c->path_live &&
	    !test_bit(XFERK_CONN_F_QP_DEAD, &c->flags)) {
		if (c->state == XFERK_CONN_RECONNECTING) {
			c->reconnects++;
			atomic64_inc(&xferk_stats.reconnects);
		}
		conn_change_state(c, XFERK_CONN_UP);
		c->path_gen++;
		c->attempts = 0;
		conn_kick_locked(c, &failed);
		xferk_msgs_kick_locked(c);
		if (c->transport->probe)
			queue_delayed_work(xferk_conn_wq, &c->keepalive_work,
					   keepalive_delay());
		passive_up = !c->active;
		new_session = !c->resume_seq;
	}
	mutex_unlock(&c->lock);
	if (passive_up) {
		/* A local user has this long to claim it. */
		xferk_conn_arm_timer(c, READ_ONCE(xferk_passive_idle_ms));
		/* A new session (not a new path): see xferk_conn_stale_peer(). */
		if (new_session)
			xferk_conn_stale_peer(c->net, &c->peer);
	}
	conn_drop_creator(c);
	complete_failed(&failed);
}

/**
 * xferk_conn_lane_up() - a QP of the session's path is established
 * @c: the session
 * @l: the QP's lane
 *
 * Unless the path is dying. The path is up (xferk_conn_set_up()) once all
 * of its QPs are: until then, and under the attempt's deadline, it is
 * still being made. On the accepting end another QP may be up before the
 * path's first.
 */
void xferk_conn_lane_up(struct xferk_conn *c, struct xferk_lane *l)
{
	bool all = false;
	u32 i;

	mutex_lock(&c->lock);
	if (c->path_live && xferk_conn_qp_live(c) && l->qp) {
		l->live = true;
		for (i = 0, all = true; i < c->nr_qps; i++)
			all &= c->lanes[i].live;
	}
	mutex_unlock(&c->lock);
	if (all)
		xferk_conn_set_up(c);
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
 * A posted chunk that came back with @error, its send slot returned: one
 * a path's death flushed (or whose retries it exhausted) was not at fault
 * and waits for the next path while the session lives, unless its op's
 * outcome is decided. Return: true if it was queued again. With c->lock.
 */
static bool conn_repost_locked(struct xferk_conn *c, struct xferk_chunk *ch,
			       int error)
{
	lockdep_assert_held(&c->lock);
	if (!chunk_path_error(error) ||
	    xferk_conn_state_over(c->state) || !conn_resumable(c) ||
	    xferk_chunk_cancelled(ch))
		return false;
	xferk_chunk_unposted(ch);
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
	if (atomic_dec_if_positive(&xferk_fault_swallow) >= 0)
		return true;
	if (atomic_dec_if_positive(&xferk_fault_delay) >= 0)
		msleep(READ_ONCE(xferk_fault_delay_ms));
	return false;
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
	c->transport->unpost(c, ch);
	c->credits++;
	if (!--c->outstanding)
		wake_up_all(&c->idle);
	return true;
}

/**
 * xferk_conn_chunks_succeeded() - posted chunks' work requests succeeded
 * @c: their connection
 * @chs: the chunks, in completion order; the array is reused (compacted)
 * @n: how many
 *
 * The batch of a completion queue poll (or of the null peer's due chunks)
 * in one hold of the connection's lock: the send slots come back and what
 * waits for them is posted as chains, then the chunks complete together
 * (xferk_chunks_succeeded(): one hold of the queue's lock per device
 * queue). A chunk the path's teardown already reclaimed is left to it. A
 * completion the delay fault holds back holds back its batch.
 */
void xferk_conn_chunks_succeeded(struct xferk_conn *c,
				 struct xferk_chunk **chs, u32 n)
{
	LIST_HEAD(failed);
	u32 i, kept;

	for (i = 0, kept = 0; i < n; i++)
		if (!completion_swallowed())
			chs[kept++] = chs[i];
	mutex_lock(&c->lock);
	for (i = 0, n = kept, kept = 0; i < n; i++)
		if (conn_chunk_off_path_locked(c, chs[i]))
			chs[kept++] = chs[i];
	conn_kick_locked(c, &failed);
	if (c->nr_acks_due)
		xferk_msgs_kick_locked(c);
	mutex_unlock(&c->lock);
	xferk_chunks_succeeded(chs, kept);
	complete_failed(&failed);
}

/**
 * xferk_conn_chunk_done() - a posted chunk's work request is terminal
 * @c: the connection
 * @ch: the chunk
 * @error: 0 or a negative errno (-ECONNRESET: flushed)
 *
 * Returns the send slot, posts what waits for it, and completes the chunk,
 * or queues it again (conn_repost_locked()), or, when its path failed under
 * it and another rail of its remote is up, moves it there
 * (conn_move_chunks()). A chunk the path's
 * teardown already reclaimed is left to it. Any error means the QP is in
 * the error state: the path posts nothing more and dies.
 */
void xferk_conn_chunk_done(struct xferk_conn *c, struct xferk_chunk *ch,
			   int error)
{
	LIST_HEAD(failed);
	LIST_HEAD(moving);
	bool reposted = false;

	if (!error) {
		xferk_conn_chunks_succeeded(c, &ch, 1);
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

/*
 * The other end of @c on this host (loopback), or NULL; with
 * xferk_conns_lock. The two ends name each other by their local ids, which
 * only this host chooses, and one initiated what the other accepted.
 */
static struct xferk_conn *conn_local_sibling(struct xferk_conn *c)
{
	struct xferk_conn *s;

	lockdep_assert_held(&xferk_conns_lock);
	if (!c->peer_id || c->transport != &xferk_rdma_transport)
		return NULL;
	s = conn_by_id(c->peer_id);
	if (!s || s == c || s->active == c->active ||
	    s->peer_id != c->local_id || s->net != c->net)
		return NULL;
	return s;
}

/* Cancel: the op's chunks still waiting for a send slot are dropped. */
void xferk_conn_drop_op(struct xferk_conn *c, struct xferk_op *op)
{
	struct xferk_chunk *ch, *tmp;
	LIST_HEAD(failed);

	mutex_lock(&c->lock);
	list_for_each_entry_safe(ch, tmp, &c->pending, node) {
		if (ch->op == op) {
			ch->error = -ECANCELED;
			list_move_tail(&ch->node, &failed);
		}
	}
	mutex_unlock(&c->lock);
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

/*
 * Tears the current path down (steps 1-3 in the comment at the top);
 * idempotent. Chunks it flushes are posted again on the next path while
 * the session lives.
 */
static void conn_path_teardown(struct xferk_conn *c)
{
	/*
	 * Nothing is posted on the QP from here on (xferk_conn_qp_live()),
	 * and what it carried is forgotten: also the answers owed on a path
	 * that died before it was up.
	 */
	mutex_lock(&c->lock);
	set_bit(XFERK_CONN_F_QP_DEAD, &c->flags);
	xferk_msgs_path_lost(c);
	mutex_unlock(&c->lock);
	/*
	 * No connection-manager callback after this; flush what was posted
	 * and wait for it, bounded. The keepalive (which posts only while
	 * the connection is up) stops.
	 */
	c->transport->disconnect(c);
	cancel_delayed_work_sync(&c->keepalive_work);
	if (!wait_event_timeout(c->idle, READ_ONCE(c->outstanding) == 0,
				msecs_to_jiffies(xferk_flush_timeout_ms)))
		pr_warn("xferk: conn %u: %u work requests did not flush; destroying the QP\n",
			c->id, READ_ONCE(c->outstanding));

	/*
	 * Whatever is still posted is reclaimed here: once the device is
	 * quiesced (QP destroyed, no callback running) it cannot touch
	 * memory, and only then are those chunks completed or queued again.
	 */
	c->transport->quiesce(c);
	if (cancel_work_sync(&c->down_work))
		xferk_conn_put(c);	/* its reference; not the last */
	xferk_conn_flush_posted(c);
	mutex_lock(&c->lock);
	c->path_live = false;
	clear_bit(XFERK_CONN_F_PROBING, &c->flags);
	mutex_unlock(&c->lock);
}

/*
 * The session went from DOWN to CLOSED in this run of the recovery work:
 * tear it down (steps 1-3 of a session's teardown), once.
 */
static void conn_teardown(struct xferk_conn *c)
{
	struct xferk_conn *sibling;
	LIST_HEAD(chunks);

	/* On loopback, the other end goes down with this one. */
	mutex_lock(&xferk_conns_lock);
	sibling = conn_local_sibling(c);
	if (sibling)
		xferk_conn_get(sibling);
	mutex_unlock(&xferk_conns_lock);
	if (sibling) {
		xferk_conn_down(sibling, c->error);
		xferk_conn_put(sibling);
	}

	/* 1. Stop posting (other rails take what they can). */
	mutex_lock(&c->lock);
	list_splice_init(&c->pending, &chunks);
	fail_all(&chunks, c->error ?: -ENOTCONN);
	mutex_unlock(&c->lock);
	reroute_or_complete(&chunks);

	/* 2. The path; nothing re-arms the timer afterwards. */
	conn_path_teardown(c);
	cancel_delayed_work_sync(&c->timer_work);

	/* 3. Revoke exports, drop notifications, free the rest. */
	xferk_conn_revoke_exports(c);
	xferk_notify_conn_down(c);
	c->transport->destroy(c);

	mutex_lock(&xferk_conns_lock);
	list_del_init(&c->node);
	hash_del(&c->id_node);
	hash_del(&c->peer_node);
	mutex_unlock(&xferk_conns_lock);
	/*
	 * A run of this work queued before the session was CLOSED would find
	 * nothing to do, and nothing queues it since: drop it, as the list's
	 * reference may be the last.
	 */
	cancel_delayed_work(&c->recover_work);
	xferk_conn_put(c);
}

/* Wait before the @n-th attempt in a row: doubling, bounded. */
static unsigned int reconnect_backoff_ms(u32 n)
{
	return min_t(unsigned int, XFERK_RECONNECT_MAX_MS,
		     XFERK_RECONNECT_MIN_MS << min_t(u32, n, 6));
}

/*
 * With c->lock, or from the recovery work itself: only it closes the
 * session, and it does not come back once it did.
 */
static void conn_recover_at(struct xferk_conn *c, ktime_t when, ktime_t now)
{
	queue_delayed_work(xferk_conn_wq, &c->recover_work,
			   nsecs_to_jiffies(ktime_sub(when, now)) + 1);
}

/*
 * A RECONNECTING session of an end we initiated without a path: start the
 * next attempt when its backoff allows.
 */
static void conn_path_attempt(struct xferk_conn *c, ktime_t now)
{
	ktime_t deadline;
	int ret;

	mutex_lock(&c->lock);
	if (c->state != XFERK_CONN_RECONNECTING || c->path_live) {
		mutex_unlock(&c->lock);
		return;
	}
	if (now < c->next_attempt) {
		conn_recover_at(c, c->next_attempt, now);
		mutex_unlock(&c->lock);
		return;
	}
	c->path_live = true;
	reinit_completion(&c->lanes[0].cm_ready);
	c->next_attempt = ktime_add_ms(now, reconnect_backoff_ms(c->attempts++));
	deadline = ktime_add_ms(now, READ_ONCE(xferk_handshake_timeout_ms));
	c->attempt_deadline = deadline;
	clear_bit(XFERK_CONN_F_QP_DEAD, &c->flags);
	mutex_unlock(&c->lock);
	atomic64_inc(&xferk_stats.reconnect_attempts);
	ret = c->transport->reconnect(c);
	if (ret)
		xferk_conn_path_down(c, ret, XFERK_PATH_QP);
	else
		conn_recover_at(c, deadline, now);
}

/**
 * xferk_conn_path_attach() - a new path of a RECONNECTING session begins
 * @c: the session, of an end the peer initiated
 *
 * For the accepting end, under the handshake's deadline like an attempt.
 * Its teardown waits for the first lane's cm_ready, which the caller
 * completes once the new cm_id is the connection's.
 *
 * Return: false if the session has a path or is not RECONNECTING.
 */
bool xferk_conn_path_attach(struct xferk_conn *c)
{
	ktime_t now = ktime_get();
	bool ok;

	mutex_lock(&c->lock);
	ok = c->state == XFERK_CONN_RECONNECTING && !c->path_live;
	if (ok) {
		c->path_live = true;
		reinit_completion(&c->lanes[0].cm_ready);
		c->attempt_deadline =
			ktime_add_ms(now, READ_ONCE(xferk_handshake_timeout_ms));
		clear_bit(XFERK_CONN_F_QP_DEAD, &c->flags);
		conn_recover_at(c, c->attempt_deadline, now);
	}
	mutex_unlock(&c->lock);
	return ok;
}

/*
 * The one error-recovery path (serialized: a work item never runs twice at
 * once). A DOWN session is torn down. A dead path is torn down; a path
 * attempt that is not up by its deadline counts as dead. A RECONNECTING
 * session of an end we initiated then starts its next attempt; one a peer
 * initiated waits for the peer to come back (conn_timer() bounds both).
 */
static void conn_recover(struct work_struct *work)
{
	struct xferk_conn *c = container_of(to_delayed_work(work),
					    struct xferk_conn, recover_work);
	ktime_t now = ktime_get();
	bool live, dead, closing = false;
	int state;

	mutex_lock(&c->lock);
	state = c->state;
	live = c->path_live;
	if (state == XFERK_CONN_RECONNECTING && live && now >= c->attempt_deadline)
		set_bit(XFERK_CONN_F_QP_DEAD, &c->flags);
	dead = test_bit(XFERK_CONN_F_QP_DEAD, &c->flags);
	/* DOWN goes CLOSED once: this run alone tears the session down. */
	if (state == XFERK_CONN_DOWN)
		closing = conn_change_state(c, XFERK_CONN_CLOSED);
	mutex_unlock(&c->lock);

	if (closing) {
		conn_teardown(c);
		return;
	}
	if (xferk_conn_state_over(state))
		return;
	/*
	 * A path of an UP session died: the transition first (its down_work
	 * may not have run, or may have been cancelled by a teardown).
	 */
	if (state == XFERK_CONN_UP && dead) {
		xferk_conn_path_down(c, READ_ONCE(c->qp_error) ?: -ECONNRESET,
				     READ_ONCE(c->qp_cause));
		return;
	}
	if (state != XFERK_CONN_RECONNECTING)
		return;
	if (live && !dead) {
		/* An attempt not up yet: come back at its deadline. */
		conn_recover_at(c, c->attempt_deadline, now);
		return;
	}
	if (live)
		conn_path_teardown(c);
	if (c->active)
		conn_path_attempt(c, now);
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

static bool same_host(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((struct sockaddr_in *)b)->sin_addr.s_addr;
	return ipv6_addr_equal(&((struct sockaddr_in6 *)a)->sin6_addr,
			       &((struct sockaddr_in6 *)b)->sin6_addr);
}

static __be16 sockaddr_port(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET ? ((struct sockaddr_in *)a)->sin_port :
					 ((struct sockaddr_in6 *)a)->sin6_port;
}

/*
 * Does @c reach the listener at @peer? An end we initiated, if it went to
 * that address and port. An end the peer initiated (from any port of its
 * own), if @peer's port is our own listen_port: hosts of one cluster run
 * their listeners on the same port.
 */
static bool conn_serves(const struct xferk_conn *c,
			const struct sockaddr_storage *peer)
{
	if (!same_host(&c->peer, peer))
		return false;
	if (c->active)
		return sockaddr_port(&c->peer) == sockaddr_port(peer);
	return sockaddr_port(peer) == htons(xferk_listen_port);
}

/* Not down: up, or a session that replaces its path. */
static bool conn_alive(struct xferk_conn *c)
{
	return !xferk_conn_state_over(READ_ONCE(c->state));
}

/* Alive, and (loopback) its other end is alive too. */
static bool conn_usable(struct xferk_conn *c)
{
	struct xferk_conn *sibling;

	if (!conn_alive(c))
		return false;
	sibling = conn_local_sibling(c);
	return !sibling || conn_alive(sibling);
}

/**
 * xferk_conn_find_peer() - a live RDMA connection to a peer's listener
 * @net: the caller's network namespace
 * @peer: the listener's address and port
 *
 * Prefers an end this host initiated.
 *
 * Return: the connection with a reference, or NULL.
 */
struct xferk_conn *xferk_conn_find_peer(struct net *net,
					const struct sockaddr_storage *peer)
{
	struct xferk_conn *c, *found = NULL;

	lockdep_assert_held(&xferk_conns_lock);
	hash_for_each_possible(xferk_conns_by_peer, c, peer_node,
			       peer_hash(net, peer)) {
		if (c->net != net || !conn_serves(c, peer) || !conn_usable(c))
			continue;
		if (!found || (c->active && !found->active))
			found = c;
	}
	if (found)
		xferk_conn_get(found);
	return found;
}

/**
 * xferk_conn_find_resumed() - the session a peer's new path names
 * @local_id: our end's id, as the peer gave it
 * @from: the requesting host's address
 *
 * Only sessions the peer host initiated to our listener (its namespace)
 * are resumed through it. The caller still checks the request's MAC and
 * that it is not a replay (xferk_conn_resume_fresh()).
 *
 * Return: the session with a reference, or NULL.
 */
struct xferk_conn *xferk_conn_find_resumed(u64 local_id,
					   const struct sockaddr_storage *from)
{
	struct xferk_conn *c;

	mutex_lock(&xferk_conns_lock);
	c = conn_by_id(local_id);
	if (c && (c->transport != &xferk_rdma_transport || c->active ||
		  c->net != &init_net || !conn_alive(c) ||
		  !same_host(&c->peer, from)))
		c = NULL;
	if (c)
		xferk_conn_get(c);
	mutex_unlock(&xferk_conns_lock);
	return c;
}

/**
 * xferk_conn_resume_fresh() - is a verified new-path request a new one?
 * @c: the session, of an end the peer initiated
 * @seq: the request's sequence number (covered by its MAC)
 *
 * Return: true, and @seq is recorded, if it is newer than every request
 * accepted before; false for a replayed one.
 */
bool xferk_conn_resume_fresh(struct xferk_conn *c, u64 seq)
{
	bool fresh;

	mutex_lock(&c->lock);
	fresh = seq > c->resume_seq;
	if (fresh)
		c->resume_seq = seq;
	mutex_unlock(&c->lock);
	return fresh;
}

/*
 * Does the peer's request that made the passive end @p cross a session we
 * initiated to that host, connecting or up? Of two such sessions the one
 * whose initiating end has the greater id is kept; both hosts decide
 * alike. True: ours wins, refuse the request. With xferk_conns_lock.
 */
static bool conn_crossed_locked(struct xferk_conn *p, u64 peer_conn_id)
{
	struct xferk_conn *c;
	bool crossed = false;
	int state;

	lockdep_assert_held(&xferk_conns_lock);
	hash_for_each_possible(xferk_conns_by_peer, c, peer_node,
			       peer_hash(p->net, &p->peer)) {
		state = READ_ONCE(c->state);
		crossed |= c->net == p->net && c->active &&
			   same_host(&c->peer, &p->peer) &&
			   sockaddr_port(&c->peer) == htons(xferk_listen_port) &&
			   (state == XFERK_CONN_CONNECTING ||
			    state == XFERK_CONN_UP) &&
			   c->local_id > peer_conn_id;
	}
	return crossed;
}

/**
 * xferk_conn_stale_peer() - a peer host opened a new session to us (its
 *	handshake completed)
 * @net: the listener's namespace
 * @peer: the peer's address
 *
 * An instance that knew a session with us would have resumed it, so the
 * sessions that host opened and that wait for it to come back belong to
 * an instance that is gone (the host rebooted, its module was reloaded):
 * they go down with ESTALE instead of waiting for reconnect_ms.
 */
void xferk_conn_stale_peer(struct net *net, const struct sockaddr_storage *peer)
{
	struct xferk_conn *c;

	mutex_lock(&xferk_conns_lock);
	hash_for_each_possible(xferk_conns_by_peer, c, peer_node,
			       peer_hash(net, peer)) {
		if (c->net != net || c->active || !same_host(&c->peer, peer) ||
		    READ_ONCE(c->state) != XFERK_CONN_RECONNECTING)
			continue;
		atomic64_inc(&xferk_stats.sessions_stale);
		xferk_conn_down(c, -ESTALE);
	}
	mutex_unlock(&xferk_conns_lock);
}

/**
 * xferk_conn_token_key() - what a token exported on @c is made with
 * @c: the connection end
 * @peer_id: out: the id of the end that imports it
 * @key: out: the token key
 *
 * Return: false if the handshake has not set them yet.
 */
bool xferk_conn_token_key(struct xferk_conn *c, u64 *peer_id,
			  siphash_key_t *key)
{
	bool keyed;

	mutex_lock(&xferk_conns_lock);
	keyed = test_bit(XFERK_CONN_F_KEYED, &c->flags);
	*peer_id = c->peer_id;
	*key = c->token_key;
	mutex_unlock(&xferk_conns_lock);
	return keyed;
}

/**
 * xferk_conn_find_importer() - the end a token names
 * @via: the connection handle the importer gave
 * @conn_id: the local id the token names
 * @net: the importer's network namespace
 *
 * That is the live local end whose id the token carries: on two hosts the
 * importing host's end, whichever side initiated; on one host (loopback)
 * the end opposite the exporter's. A null peer is both ends, and must be
 * @via itself. Addresses are not compared: a host may reach its peer from
 * another of its addresses than the peer sees. The caller still checks
 * the token's authentication with the end's key.
 *
 * Return: the end with a reference, or NULL.
 */
struct xferk_conn *xferk_conn_find_importer(struct xferk_conn *via,
					    u64 conn_id, struct net *net)
{
	struct xferk_conn *c;

	if (via->transport == &xferk_null_transport) {
		if (via->local_id != conn_id)
			return NULL;
		xferk_conn_get(via);
		return via;
	}
	mutex_lock(&xferk_conns_lock);
	c = conn_by_id(conn_id);
	if (c && (c->transport != &xferk_rdma_transport || c->net != net ||
		  !test_bit(XFERK_CONN_F_KEYED, &c->flags) || !conn_alive(c)))
		c = NULL;
	if (c)
		xferk_conn_get(c);
	mutex_unlock(&xferk_conns_lock);
	return c;
}

/*
 * The errnos a connection's failure carries to CONNECT and to its chunks;
 * any other (an internal one of the RDMA stack) reads as EIO.
 */
static int conn_errno(int error)
{
	switch (error) {
	case -EHOSTUNREACH:
	case -ECONNREFUSED:
	case -ETIMEDOUT:
	case -EPROTONOSUPPORT:
	case -EPROTO:
	case -ECONNRESET:
	case -ENODEV:
	case -ENOMEM:
	case -ECANCELED:
	case -ESHUTDOWN:
	case -ESTALE:
	case -EALREADY:		/* crossed: CONNECT looks again */
		return error;
	case -ENETUNREACH:
	case -ENETDOWN:
	case -EADDRNOTAVAIL:
		return -EHOSTUNREACH;
	default:
		return -EIO;
	}
}

/* XFERK_IOC_CONN_QUERY: the state of one of the file's connections. */
int xferk_ioctl_conn_query(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_conn_query *a = &arg->conn_query;
	struct xferk_conn_info *info = &a->info;
	struct xferk_hobj *ho;
	struct xferk_conn *c;

	if (a->flags)
		return -EINVAL;
	mutex_lock(&xf->lock);
	ho = xferk_handle_lookup(&xf->handles, a->conn, XFERK_H_CONN);
	if (IS_ERR(ho)) {
		mutex_unlock(&xf->lock);
		return PTR_ERR(ho);
	}
	c = container_of(ho, struct xferk_conn_ref, hobj)->conn;
	mutex_lock(&c->lock);
	*info = (struct xferk_conn_info) {
		.state = xferk_conn_state_uapi(c->state),
		.error = c->error,
		.path_gen = c->path_gen,
		.outstanding = c->outstanding,
		.path_deaths = c->path_deaths,
		.reconnects = c->reconnects,
		.reposted = c->reposted,
		.initiator = c->active,
		.nr_qps = c->nr_qps,
	};
	mutex_unlock(&c->lock);
	mutex_unlock(&xf->lock);
	return 0;
}

int xferk_conn_module_init(void)
{
	xferk_conn_wq = alloc_workqueue("xferk_conn", WQ_MEM_RECLAIM, 0);
	return xferk_conn_wq ? 0 : -ENOMEM;
}

/* Every connection down and torn down; nothing pinned by a WR survives. */
void xferk_conn_shutdown_all(void)
{
	struct xferk_conn *c;

	mutex_lock(&xferk_conns_lock);
	list_for_each_entry(c, &xferk_conns, node)
		xferk_conn_down(c, -ESHUTDOWN);
	mutex_unlock(&xferk_conns_lock);
	flush_workqueue(xferk_conn_wq);
	WARN_ON(!list_empty(&xferk_conns));
}

void xferk_conn_module_exit(void)
{
	destroy_workqueue(xferk_conn_wq);
}
