// SPDX-License-Identifier: GPL-2.0
/*
 * Host-wide connections, independent of the transport: state, posting,
 * the one teardown path, and the indexes that find a connection.
 *
 * A connection is shared by every process of a network namespace that
 * talks to the same peer listener (RDS and rtrs do the same). It comes up
 * on the first XFERK_IOC_CONNECT or when a peer connects to our listener,
 * and stays up until the peer disconnects, its QP fails, its device goes
 * away, a passive end is reaped or the module unloads. Every way down goes
 * through xferk_conn_down() and one teardown work in one fixed order:
 *
 *   1. stop posting: fail the chunks still waiting for a send slot
 *   2. disconnect: no connection-manager callback runs any more (the
 *      cm_id is destroyed first), the QP moves to the error state and
 *      flushes every posted work request
 *   3. wait, bounded, until every posted chunk has its completion
 *   4. quiesce: destroy QP and CQ; chunks that never completed are now
 *      physically dead with their QP and are completed as flushed
 *   5. revoke the connection's exports (their keys die), free the rest
 *
 * A connection whose QP left the ready-to-send state (a QP event, or any
 * failed or flushed completion) posts nothing more from that moment: a
 * dead QP never swallows work.
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
#include "xferk.h"

#define XFERK_CHUNK_MAX_BYTES	SZ_1M

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
	if (c->qdev)
		xferk_qdev_put(c->qdev);
	put_net(c->net);
	kvfree(c->sends);
	kfree(c);
}

void xferk_conn_put(struct xferk_conn *c)
{
	kref_put(&c->ref, conn_release);
}

static int conn_errno(int error);
static void conn_teardown(struct work_struct *work);
static void conn_down_work(struct work_struct *work);
static void conn_timer(struct work_struct *work);
static void conn_keepalive(struct work_struct *work);

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
	kref_init(&c->ref);
	INIT_LIST_HEAD(&c->node);
	INIT_HLIST_NODE(&c->peer_node);
	INIT_HLIST_NODE(&c->id_node);
	c->transport = t;
	c->net = get_net(net);
	c->active = active;
	c->id = atomic_inc_return(&xferk_next_conn_id);
	c->state = XFERK_CONN_CONNECTING;
	init_completion(&c->established);
	mutex_init(&c->lock);
	INIT_LIST_HEAD(&c->pending);
	INIT_LIST_HEAD(&c->posted);
	init_waitqueue_head(&c->idle);
	mutex_init(&c->exports_lock);
	INIT_LIST_HEAD(&c->exports);
	INIT_WORK(&c->teardown_work, conn_teardown);
	INIT_WORK(&c->down_work, conn_down_work);
	INIT_DELAYED_WORK(&c->timer_work, conn_timer);
	INIT_DELAYED_WORK(&c->keepalive_work, conn_keepalive);
	spin_lock_init(&c->cm_lock);
	init_completion(&c->cm_ready);
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

/**
 * xferk_conn_publish() - make a new connection findable
 * @c: the connection, with its peer address (RDMA) set
 *
 * Gives it a fresh local id and lists it; from here on its teardown is
 * the only way to free it (the list holds the initial reference).
 */
void xferk_conn_publish(struct xferk_conn *c)
{
	mutex_lock(&xferk_conns_lock);
	do {
		c->local_id = get_random_u64();
	} while (!c->local_id || conn_by_id(c->local_id));
	hash_add(xferk_conns_by_id, &c->id_node, c->local_id);
	if (c->transport == &xferk_rdma_transport)
		hash_add(xferk_conns_by_peer, &c->peer_node,
			 peer_hash(c->net, &c->peer));
	list_add_tail(&c->node, &xferk_conns);
	mutex_unlock(&xferk_conns_lock);
}

/* A local object uses the connection: it is never reaped as unused. */
void xferk_conn_claim(struct xferk_conn *c)
{
	set_bit(XFERK_CONN_F_CLAIMED, &c->flags);
}

/**
 * xferk_conn_down() - take a connection down (any context that may sleep)
 * @c: the connection
 * @error: why, as a negative errno; the first reason is kept
 *
 * Idempotent. The teardown itself runs in a work item.
 */
void xferk_conn_down(struct xferk_conn *c, int error)
{
	bool first = false;

	mutex_lock(&c->lock);
	if (c->state != XFERK_CONN_DOWN) {
		if (c->state == XFERK_CONN_UP)
			atomic64_dec(&xferk_stats.peers_connected);
		WRITE_ONCE(c->state, XFERK_CONN_DOWN);
		c->error = conn_errno(error);
		first = true;
	}
	mutex_unlock(&c->lock);
	if (!first)
		return;
	conn_drop_creator(c);
	complete_all(&c->established);
	queue_work(xferk_conn_wq, &c->teardown_work);
}

static void conn_down_work(struct work_struct *work)
{
	struct xferk_conn *c = container_of(work, struct xferk_conn, down_work);

	xferk_conn_down(c, READ_ONCE(c->qp_error));
}

/**
 * xferk_conn_qp_dead() - the connection's QP left the ready-to-send state
 * @c: the connection
 * @error: why, as a negative errno
 *
 * Any context (the QP event handler runs in atomic context): nothing is
 * posted from now on, and the connection goes down in a work item.
 */
void xferk_conn_qp_dead(struct xferk_conn *c, int error)
{
	if (test_and_set_bit(XFERK_CONN_F_QP_DEAD, &c->flags))
		return;
	atomic64_inc(&xferk_stats.qp_errors);
	WRITE_ONCE(c->qp_error, error);
	queue_work(xferk_conn_wq, &c->down_work);
}

/*
 * A deadline of the connection itself: the handshake of either end, and
 * for a passive end that came up, the time a local user has to claim it.
 */
static void conn_timer(struct work_struct *work)
{
	struct xferk_conn *c = container_of(to_delayed_work(work),
					    struct xferk_conn, timer_work);
	int state;

	mutex_lock(&c->lock);
	state = c->state;
	mutex_unlock(&c->lock);
	if (state == XFERK_CONN_DOWN ||
	    (state == XFERK_CONN_UP &&
	     (c->active || test_bit(XFERK_CONN_F_CLAIMED, &c->flags))))
		return;
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
		xferk_conn_qp_dead(c, -ECONNRESET);
}

/**
 * xferk_conn_probe_done() - a keepalive probe completed (any context)
 * @c: the connection
 * @error: 0, or why the probe failed (not for a flushed probe: its QP is
 *	already going down)
 *
 * A failed probe means the path died: the connection goes down with
 * ECONNRESET, as for the others when a chunk fails.
 */
void xferk_conn_probe_done(struct xferk_conn *c, int error)
{
	if (error) {
		atomic64_inc(&xferk_stats.keepalive_failures);
		xferk_conn_qp_dead(c, -ECONNRESET);
	}
	clear_bit(XFERK_CONN_F_PROBING, &c->flags);
}

/* (Re)arms the connection's own deadline @ms from now. */
void xferk_conn_arm_timer(struct xferk_conn *c, unsigned int ms)
{
	mod_delayed_work(xferk_conn_wq, &c->timer_work, msecs_to_jiffies(ms));
}

/* May a work request be posted on @c now? With c->lock. */
bool xferk_conn_postable(struct xferk_conn *c)
{
	lockdep_assert_held(&c->lock);
	return c->state == XFERK_CONN_UP &&
	       !test_bit(XFERK_CONN_F_QP_DEAD, &c->flags);
}

/* Posts pending chunks while there are send slots. Called with c->lock. */
static void conn_kick_locked(struct xferk_conn *c, struct list_head *failed)
{
	struct xferk_chunk *ch;

	lockdep_assert_held(&c->lock);
	while (xferk_conn_postable(c) && c->credits && !list_empty(&c->pending)) {
		ch = list_first_entry(&c->pending, struct xferk_chunk, node);
		list_del(&ch->node);
		if (xferk_chunk_cancelled(ch))
			ch->error = -ECANCELED;
		else if (atomic_dec_if_positive(&xferk_fault_fail_post) >= 0)
			ch->error = -EIO;
		else
			ch->error = c->transport->post(c, ch);
		if (ch->error) {
			list_add_tail(&ch->node, failed);
			continue;
		}
		ch->posted = true;
		xferk_chunk_posted(ch);
		c->credits--;
		c->outstanding++;
		list_add_tail(&ch->node, &c->posted);
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

/**
 * xferk_conn_set_up() - the connection is established
 * @c: the connection
 *
 * Chunks may already wait for it: an importer can queue on the accepting
 * end before its ESTABLISHED event.
 */
void xferk_conn_set_up(struct xferk_conn *c)
{
	LIST_HEAD(failed);

	mutex_lock(&c->lock);
	if (c->state == XFERK_CONN_CONNECTING) {
		WRITE_ONCE(c->state, XFERK_CONN_UP);
		atomic64_inc(&xferk_stats.peers_connected);
		conn_kick_locked(c, &failed);
		if (c->transport->probe)
			queue_delayed_work(xferk_conn_wq, &c->keepalive_work,
					   keepalive_delay());
	}
	mutex_unlock(&c->lock);
	conn_drop_creator(c);
	complete_all(&c->established);
	complete_failed(&failed);
}

/**
 * xferk_conn_queue() - hand a chunk to a connection
 * @c: the connection
 * @ch: the chunk, not yet posted
 *
 * The chunk is posted when a send slot is free, in order. If the
 * connection is down, or the op was settled meanwhile, the chunk is
 * completed unposted with an error.
 */
void xferk_conn_queue(struct xferk_conn *c, struct xferk_chunk *ch)
{
	LIST_HEAD(failed);

	if (atomic_dec_if_positive(&xferk_fault_fail_qp) >= 0)
		xferk_conn_down(c, -EIO);
	mutex_lock(&c->lock);
	if (c->state == XFERK_CONN_DOWN) {
		ch->error = c->error ?: -ENOTCONN;
		list_add_tail(&ch->node, &failed);
	} else {
		list_add_tail(&ch->node, &c->pending);
		conn_kick_locked(c, &failed);
	}
	mutex_unlock(&c->lock);
	complete_failed(&failed);
}

/**
 * xferk_conn_chunk_done() - a posted chunk's work request is terminal
 * @c: the connection
 * @ch: the chunk
 * @error: 0 or a negative errno (-ECONNRESET: flushed)
 *
 * Returns the send slot, posts what waits for it, and completes the chunk.
 * A chunk the teardown already reclaimed is left to it. Any error means
 * the QP is in the error state: the connection posts nothing more and
 * goes down.
 */
void xferk_conn_chunk_done(struct xferk_conn *c, struct xferk_chunk *ch,
			   int error)
{
	LIST_HEAD(failed);

	/* A swallowed completion: the work request never reports. */
	if (atomic_dec_if_positive(&xferk_fault_swallow) >= 0)
		return;
	if (atomic_dec_if_positive(&xferk_fault_delay) >= 0)
		msleep(READ_ONCE(xferk_fault_delay_ms));
	/* The chunk keeps its own error; others see the connection reset. */
	if (error)
		xferk_conn_qp_dead(c, -ECONNRESET);
	mutex_lock(&c->lock);
	if (!ch->posted) {
		mutex_unlock(&c->lock);
		return;
	}
	list_del_init(&ch->node);
	ch->posted = false;
	c->transport->unpost(c, ch);
	c->credits++;
	if (!--c->outstanding)
		wake_up_all(&c->idle);
	conn_kick_locked(c, &failed);
	mutex_unlock(&c->lock);
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

/*
 * Cancel escalation: if the op still has work requests posted here, the
 * connection goes to the error state, which flushes them (and every other
 * op's on it).
 */
void xferk_conn_fail_op(struct xferk_conn *c, struct xferk_op *op)
{
	struct xferk_chunk *ch;
	bool posted = false;

	mutex_lock(&c->lock);
	list_for_each_entry(ch, &c->posted, node)
		posted |= ch->op == op;
	mutex_unlock(&c->lock);
	if (posted)
		xferk_conn_down(c, -ECANCELED);
}

static void conn_teardown(struct work_struct *work)
{
	struct xferk_conn *c = container_of(work, struct xferk_conn,
					    teardown_work);
	struct xferk_conn *sibling;
	LIST_HEAD(chunks);

	/* 0. On loopback, the other end goes down with this one. */
	mutex_lock(&xferk_conns_lock);
	sibling = conn_local_sibling(c);
	if (sibling)
		xferk_conn_get(sibling);
	mutex_unlock(&xferk_conns_lock);
	if (sibling) {
		xferk_conn_down(sibling, c->error);
		xferk_conn_put(sibling);
	}

	/* 1. Stop posting. */
	mutex_lock(&c->lock);
	list_splice_init(&c->pending, &chunks);
	fail_all(&chunks, c->error ?: -ENOTCONN);
	mutex_unlock(&c->lock);
	complete_failed(&chunks);

	/*
	 * 2.-3. No connection-manager callback after this; flush what was
	 * posted and wait for it, bounded. Then nothing re-arms the timer,
	 * and the keepalive (which posts only while the connection is up)
	 * stops.
	 */
	c->transport->disconnect(c);
	cancel_delayed_work_sync(&c->timer_work);
	cancel_delayed_work_sync(&c->keepalive_work);
	if (!wait_event_timeout(c->idle, READ_ONCE(c->outstanding) == 0,
				msecs_to_jiffies(xferk_flush_timeout_ms)))
		pr_warn("xferk: conn %u: %u work requests did not flush; destroying the QP\n",
			c->id, READ_ONCE(c->outstanding));

	/*
	 * 4. Whatever is still posted is reclaimed here: once the device is
	 * quiesced (QP destroyed, no callback running) it cannot touch
	 * memory, and only then are those chunks completed.
	 */
	c->transport->quiesce(c);
	cancel_work_sync(&c->down_work);
	xferk_conn_flush_posted(c);

	/* 5. Revoke exports, free the rest. */
	xferk_conn_revoke_exports(c);
	c->transport->destroy(c);

	mutex_lock(&xferk_conns_lock);
	list_del_init(&c->node);
	hash_del(&c->id_node);
	hash_del(&c->peer_node);
	mutex_unlock(&xferk_conns_lock);
	xferk_conn_put(c);
}

/**
 * xferk_conn_flush_posted() - complete every chunk still posted, as flushed
 * @c: the connection, down
 *
 * Only once nothing can touch their memory any more: the transport is
 * quiesced, or has no device (the null peer).
 */
void xferk_conn_flush_posted(struct xferk_conn *c)
{
	struct xferk_chunk *ch, *tmp;
	LIST_HEAD(chunks);

	mutex_lock(&c->lock);
	list_splice_init(&c->posted, &chunks);
	list_for_each_entry(ch, &chunks, node) {
		ch->posted = false;
		c->transport->unpost(c, ch);
	}
	c->outstanding = 0;
	mutex_unlock(&c->lock);
	wake_up_all(&c->idle);
	list_for_each_entry_safe(ch, tmp, &chunks, node) {
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

/* Neither down nor with a dead QP. */
static bool conn_alive(struct xferk_conn *c)
{
	return READ_ONCE(c->state) != XFERK_CONN_DOWN &&
	       !test_bit(XFERK_CONN_F_QP_DEAD, &c->flags);
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
		return error;
	case -ENETUNREACH:
	case -ENETDOWN:
	case -EADDRNOTAVAIL:
		return -EHOSTUNREACH;
	default:
		return -EIO;
	}
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
