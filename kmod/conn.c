// SPDX-License-Identifier: GPL-2.0
/*
 * Host-wide connections, independent of the transport: the life of a
 * session (init, references, its state machine) and the one recovery and
 * teardown path. Posting and completion are in conn_post.c, a session's
 * timers and keepalive in conn_timer.c, the indexes that find a
 * connection in conn_lookup.c; conn_internal.h is what they share, with
 * their locking rules.
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
 *      flushes every posted work request; RDMA drains it (ib_drain_qp()),
 *      so every completion the device makes is handled
 *   2. wait, bounded, until every posted chunk has its completion (on
 *      RDMA only one the device lost can still be missing)
 *   3. quiesce: destroy the QP, give its CQ entries back; chunks that
 *      never completed are now physically dead with their QP and count
 *      as flushed
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
 *   1. stop posting: the chunks still waiting for a send slot move to
 *      another rail or fail; one a path carried waits for the peer's
 *      fence instead, if that is all that keeps it (fence.c)
 *   2. tear the path down as above; no chunk is re-queued any more; then
 *      wait, bounded, for the fence, and move or fail what waited for it
 *   3. revoke the connection's exports (their keys die), free the rest
 *
 * Locking: a session's state and path change under its c->lock, a mutex
 * (xferk_conn_qp_dead() is the entry for any context: it makes the path
 * DEAD atomically and queues work), the state only in conn_change_state(),
 * the path only in conn_path_change(). The recovery work
 * runs one at a time (a work item) and needs no lock of its own.
 * xferk_conns_lock is taken before c->lock.
 */
#include <linux/hashtable.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/random.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include "conn.h"
#include "conn_internal.h"
#include "conn_state.h"
#include "notify.h"
#include "queue.h"
#include "stats.h"
#include "transport.h"
#include "xferk.h"
#include "trace.h"

#define XFERK_CHUNK_MAX_BYTES	SZ_1M
#define XFERK_RECONNECT_MIN_MS	100
#define XFERK_RECONNECT_MAX_MS	5000

struct workqueue_struct *xferk_conn_wq;
static atomic_t xferk_next_conn_id = ATOMIC_INIT(0);

/* Registered as parameters by limits.c. */
unsigned int xferk_passive_idle_ms = 300000;
unsigned int xferk_reconnect_ms = 30000;
unsigned int xferk_flush_timeout_ms = 5000;

void xferk_conn_get(struct xferk_conn *c)
{
	kref_get(&c->ref);
}

/*
 * Revokes a session's exports at its teardown: the requests layer's, which
 * owns them (xferk_conn_set_exports_down()). Set once at module load.
 */
static void (*conn_exports_down)(struct xferk_conn *c) __ro_after_init;

void xferk_conn_set_exports_down(void (*exports_down)(struct xferk_conn *c))
{
	conn_exports_down = exports_down;
}

/**
 * xferk_conn_charge_attempt() - count a new connection attempt of a file
 * @acct: the file's account
 * @max_connecting: how many attempts it may have at once
 *
 * Before anything is allocated for it; xferk_conn_set_creator() hands the
 * charge to the new end, xferk_conn_uncharge_attempt() returns it.
 *
 * Return: 0, or -EMFILE.
 */
int xferk_conn_charge_attempt(struct xferk_qacct *acct,
			      unsigned long max_connecting)
{
	return xferk_charge(&acct->connecting, 1, max_connecting, -EMFILE);
}

void xferk_conn_uncharge_attempt(struct xferk_qacct *acct)
{
	atomic_long_dec(&acct->connecting);
}

/* @c's attempt is charged to @acct until it leaves CONNECTING (a ref). */
void xferk_conn_set_creator(struct xferk_conn *c, struct xferk_qacct *acct)
{
	kref_get(&acct->ref);
	c->creator = acct;
}

/* The end left CONNECTING (or goes): its creator's attempt is over. */
static void conn_drop_creator(struct xferk_conn *c)
{
	struct xferk_qacct *acct = xchg(&c->creator, NULL);

	if (acct) {
		xferk_conn_uncharge_attempt(acct);
		xferk_qacct_put(acct);
	}
}

static void conn_release(struct kref *ref)
{
	struct xferk_conn *c = container_of(ref, struct xferk_conn, ref);

	conn_drop_creator(c);
	WARN_ON(!list_empty(&c->pending) || !list_empty(&c->posted));
	WARN_ON(!list_empty(&c->exports));
	WARN_ON(c->fence.nr_owed || !list_empty(&c->fence.waiting));
	xa_destroy(&c->export_ids);
	xferk_notify_conn_gone(c);
	if (c->qdev)
		xferk_qdev_put(c->qdev);
	put_net(c->net);
	kvfree(c->path.sends);
	kfree(c->path.msgs);
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
	/* An end we initiate is its creator's to use (CONNECT's handle). */
	atomic_set(&c->users, active);
	atomic64_set(&c->idle_since, ktime_get_ns());
	c->state = XFERK_CONN_CONNECTING;
	c->path_state = XFERK_PATH_LIVE;	/* the first path is the connection attempt */
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
	c->path.events = &xferk_conn_path_events;
	c->path.lock = &c->lock;
	c->path.qdev = &c->qdev;
	spin_lock_init(&c->path.cm_lock);
	for (i = 0; i < XFERK_MAX_QPS; i++) {
		c->path.lanes[i].path = &c->path;
		c->path.lanes[i].index = i;
		INIT_LIST_HEAD(&c->path.lanes[i].sends);
		init_completion(&c->path.lanes[i].cm_ready);
		/* The first's creator completes it; the others', once made. */
		if (i)
			complete_all(&c->path.lanes[i].cm_ready);
	}
	c->path.nr_qps = 1;
	xferk_sched_qp_init(&c->sqp);
	xferk_fence_init(c);
	init_completion(&c->path.reg_done);
	INIT_LIST_HEAD(&c->path.attach.node);
	INIT_LIST_HEAD(&c->path.free_sends);
	c->credits = XFERK_QP_CTXS;
	c->path.max_chunk_pages = XFERK_MAX_SGE;
	c->path.max_chunk_bytes = XFERK_CHUNK_MAX_BYTES;
}

/* A local object uses the connection: it is never reaped as unused. */
void xferk_conn_claim(struct xferk_conn *c)
{
	set_bit(XFERK_CONN_F_CLAIMED, &c->flags);
}

/**
 * xferk_conn_null_create() - a new null peer
 * @delay_ns: how long each chunk takes
 *
 * Null peers are never shared: each call makes a new one, which lives
 * until the module unloads or its handle goes. It is both ends of itself:
 * its tokens name its own id, under its own random key. All null peers
 * share one admission queue.
 *
 * Return: the connection, up, with a reference and a use
 * (xferk_conn_use()) for the caller.
 */
struct xferk_conn *xferk_conn_null_create(u64 delay_ns)
{
	struct xferk_conn *c = kzalloc(sizeof(*c), XFERK_GFP_USER);

	if (!c)
		return ERR_PTR(-ENOMEM);
	xferk_conn_init(c, &xferk_null_transport, current->nsproxy->net_ns,
			true);
	c->qdev = xferk_qdev_get_null();
	if (!c->qdev) {
		xferk_conn_put(c);
		return ERR_PTR(-ENOMEM);
	}
	xferk_null_init_path(&c->path, delay_ns);
	get_random_bytes(&c->token_key, sizeof(c->token_key));
	xferk_conn_publish(c, 0, 0);	/* a null peer is published always */
	c->peer_id = c->local_id;
	set_bit(XFERK_CONN_F_KEYED, &c->flags);
	xferk_conn_claim(c);
	xferk_conn_get(c);
	c->path.lanes[0].live = true;	/* its one "QP", for the tables */
	xferk_conn_set_up(c);
	return c;
}

/*
 * A local object (a CONNECT handle, an export, an import) uses @c from now
 * on; each use is dropped by xferk_conn_unuse(). While an end we initiated
 * has none, its keepalive takes it down after session_idle_ms
 * (conn_reap_idle()).
 */
void xferk_conn_use(struct xferk_conn *c)
{
	atomic_inc(&c->users);
}

void xferk_conn_unuse(struct xferk_conn *c)
{
	if (atomic_dec_and_test(&c->users))
		atomic64_set(&c->idle_since, ktime_get_ns());
}

/*
 * The one function that changes @path_state: from @from to @to, if the
 * path's state machine allows it (conn_state.h) and the path is in @from.
 * A path dies (LIVE -> DEAD) from any context, without c->lock, so the
 * change is one atomic exchange; the others are made with c->lock.
 * Return: whether it changed.
 */
static bool conn_path_change(struct xferk_conn *c, int from, int to)
{
	if (WARN_ON_ONCE(!xferk_path_state_allowed(from, to)))
		return false;
	if (to != XFERK_PATH_DEAD)
		lockdep_assert_held(&c->lock);
	return cmpxchg(&c->path_state, from, to) == from;
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
	/* A session that loses its peer, or gets it back, says so. */
	if (state == XFERK_CONN_RECONNECTING || state == XFERK_CONN_DOWN ||
	    (c->state == XFERK_CONN_RECONNECTING && state == XFERK_CONN_UP))
		pr_info_ratelimited("xferk: conn %u: %s -> %s (error %d)\n",
				    c->id, xferk_conn_state_name(c->state),
				    xferk_conn_state_name(state), c->error);
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

/**
 * xferk_conn_down() - take a connection down (any context that may sleep)
 * @c: the connection
 * @error: why, as a negative errno; the first reason is kept
 *
 * Idempotent. The teardown itself runs in the recovery work.
 *
 * Return: true if this call took it down (it was not down already).
 */
bool xferk_conn_down(struct xferk_conn *c, int error)
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
	return first;
}

/* The session outlives its path: its transport makes new ones. */
bool conn_resumable(struct xferk_conn *c)
{
	return c->transport->connect && READ_ONCE(xferk_reconnect_ms);
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

	conn_path_change(c, XFERK_PATH_LIVE, XFERK_PATH_DEAD);
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
	if (state == XFERK_CONN_RECONNECTING)
		pr_info_ratelimited("xferk: conn %u: path attempt %u failed (error %d)\n",
				    c->id, READ_ONCE(c->attempts), error);
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
	if (!conn_path_change(c, XFERK_PATH_LIVE, XFERK_PATH_DEAD))
		return;
	atomic64_inc(&xferk_stats.qp_errors);
	WRITE_ONCE(c->qp_error, error);
	WRITE_ONCE(c->qp_cause, cause);
	xferk_conn_get(c);
	if (!queue_work(xferk_conn_wq, &c->down_work))
		xferk_conn_put(c);	/* the queued one holds its own */
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
	     c->state == XFERK_CONN_RECONNECTING) &&
	    !xferk_conn_path_dead(c)) {
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
			xferk_conn_stale_peer(c);
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
	if (xferk_conn_qp_live(c) && l->qp) {
		l->live = true;
		for (i = 0, all = true; i < c->path.nr_qps; i++)
			all &= c->path.lanes[i].live;
	}
	mutex_unlock(&c->lock);
	if (all)
		xferk_conn_set_up(c);
}

/*
 * Tears the current path down (steps 1-3 in the comment at the top);
 * idempotent. Chunks it flushes are posted again on the next path while
 * the session lives.
 */
static void conn_path_teardown(struct xferk_conn *c)
{
	struct xferk_fence_owed owed[XFERK_FENCES_MAX];
	u32 nr_owed;

	/*
	 * Nothing is posted on the QP from here on (xferk_conn_qp_live()),
	 * and what it carried is forgotten: also the answers owed on a path
	 * that died before it was up.
	 */
	mutex_lock(&c->lock);
	conn_path_change(c, XFERK_PATH_LIVE, XFERK_PATH_DEAD);
	xferk_msgs_path_lost(c);
	conn_park_pending_locked(c);
	mutex_unlock(&c->lock);
	/*
	 * No connection-manager callback after this; flush what was posted
	 * and wait for it, bounded. The keepalive (which posts only while
	 * the connection is up) stops.
	 */
	c->transport->disconnect(&c->path);
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
	c->transport->quiesce(&c->path);
	if (cancel_work_sync(&c->down_work))
		xferk_conn_put(c);	/* its reference; not the last */
	xferk_conn_flush_posted(c);
	mutex_lock(&c->lock);
	conn_path_change(c, XFERK_PATH_DEAD, XFERK_PATH_NONE);
	clear_bit(XFERK_CONN_F_PROBING, &c->flags);
	nr_owed = xferk_fence_path_torn_locked(c, owed);
	mutex_unlock(&c->lock);
	/* The FENCEs that waited for this teardown (fence.c). */
	xferk_fence_answer_owed(c, owed, nr_owed);
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

	/*
	 * 1. Stop posting (other rails take what they can, or once the peer
	 * fenced the path that carried them).
	 */
	mutex_lock(&c->lock);
	conn_hold_unfenced_locked(c);
	list_splice_init(&c->pending, &chunks);
	fail_all(&chunks, c->error ?: -ENOTCONN);
	mutex_unlock(&c->lock);
	reroute_or_complete(&chunks);

	/* 2. The path; nothing re-arms the timer afterwards. */
	conn_path_teardown(c);
	cancel_delayed_work_sync(&c->timer_work);

	/*
	 * The chunks that wait for the fence, bounded: the peer answers once
	 * its end of the path is torn down, which its flush bounds (fence.c).
	 */
	wait_event_timeout(c->state_wq, xferk_fence_settled(c),
			   msecs_to_jiffies(READ_ONCE(xferk_flush_timeout_ms) +
					    XFERK_FENCE_WAIT_MS));
	xferk_fence_stop(c);
	conn_move_fenced(c);

	/* 3. Revoke exports, drop notifications, free the rest. */
	conn_exports_down(c);
	xferk_notify_conn_down(c);
	c->transport->destroy(&c->path);
	if (c->path.passive)
		atomic_dec(&xferk_passive_conns);

	mutex_lock(&xferk_conns_lock);
	conn_bury_locked(c);
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
	if (c->state != XFERK_CONN_RECONNECTING ||
	    READ_ONCE(c->path_state) != XFERK_PATH_NONE) {
		mutex_unlock(&c->lock);
		return;
	}
	if (now < c->next_attempt) {
		conn_recover_at(c, c->next_attempt, now);
		mutex_unlock(&c->lock);
		return;
	}
	conn_path_change(c, XFERK_PATH_NONE, XFERK_PATH_LIVE);
	reinit_completion(&c->path.lanes[0].cm_ready);
	c->next_attempt = ktime_add_ms(now, reconnect_backoff_ms(c->attempts++));
	deadline = ktime_add_ms(now, READ_ONCE(xferk_handshake_timeout_ms));
	c->attempt_deadline = deadline;
	mutex_unlock(&c->lock);
	atomic64_inc(&xferk_stats.reconnect_attempts);
	ret = c->transport->connect(&c->path, c->net, &c->peer,
				    XFERK_RESOLVE_MS);
	if (ret)
		xferk_conn_path_down(c, ret, XFERK_PATH_QP);
	else
		conn_recover_at(c, deadline, now);
}

/**
 * xferk_conn_path_attach() - a new path of a RECONNECTING session begins
 * @c: the session, of an end the peer initiated
 * @seq: the path's number, its request's
 *
 * For the accepting end, under the handshake's deadline like an attempt.
 * Its teardown waits for the first lane's cm_ready, which the caller
 * completes once the new cm_id is the connection's.
 *
 * Return: false if the session has a path or is not RECONNECTING.
 */
bool xferk_conn_path_attach(struct xferk_conn *c, u64 seq)
{
	ktime_t now = ktime_get();
	bool ok;

	mutex_lock(&c->lock);
	ok = c->state == XFERK_CONN_RECONNECTING &&
	     conn_path_change(c, XFERK_PATH_NONE, XFERK_PATH_LIVE);
	if (ok) {
		c->fence.path_seq = seq;
		reinit_completion(&c->path.lanes[0].cm_ready);
		c->attempt_deadline =
			ktime_add_ms(now, READ_ONCE(xferk_handshake_timeout_ms));
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
	bool closing = false;
	int state, path;

	mutex_lock(&c->lock);
	state = c->state;
	if (state == XFERK_CONN_RECONNECTING && now >= c->attempt_deadline)
		conn_path_change(c, XFERK_PATH_LIVE, XFERK_PATH_DEAD);
	path = READ_ONCE(c->path_state);
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
	if (state == XFERK_CONN_UP && path != XFERK_PATH_LIVE) {
		xferk_conn_path_down(c, READ_ONCE(c->qp_error) ?: -ECONNRESET,
				     READ_ONCE(c->qp_cause));
		return;
	}
	if (state != XFERK_CONN_RECONNECTING)
		return;
	if (path == XFERK_PATH_LIVE) {
		/* An attempt not up yet: come back at its deadline. */
		conn_recover_at(c, c->attempt_deadline, now);
		return;
	}
	if (path == XFERK_PATH_DEAD)
		conn_path_teardown(c);
	if (c->active)
		conn_path_attempt(c, now);
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

/* Its RDMA device is going: the session attached by @l goes down. */
static void conn_dev_gone(struct xferk_dev_link *l)
{
	xferk_conn_down(container_of(l, struct xferk_conn, path.attach), -ENODEV);
}

/* Every connection down and torn down; nothing pinned by a WR survives. */
static void conn_shutdown_all(void)
{
	struct xferk_conn *c;

	mutex_lock(&xferk_conns_lock);
	list_for_each_entry(c, &xferk_conns, node)
		xferk_conn_down(c, -ESHUTDOWN);
	mutex_unlock(&xferk_conns_lock);
	flush_workqueue(xferk_conn_wq);
	WARN_ON(!list_empty(&xferk_conns));
}

static const struct xferk_dev_user conn_dev_user = {
	.create_queue = xferk_qdev_create,
	.get_queue = xferk_qdev_get,
	.put_queue = xferk_qdev_put,
	.gone = conn_dev_gone,
	.shutdown_all = conn_shutdown_all,
	.request = xferk_handshake_received,
};

int xferk_conn_module_init(void)
{
	xferk_rdma_set_dev_user(&conn_dev_user);
	xferk_conn_wq = alloc_workqueue("xferk_conn", WQ_MEM_RECLAIM, 0);
	return xferk_conn_wq ? 0 : -ENOMEM;
}

void xferk_conn_module_exit(void)
{
	destroy_workqueue(xferk_conn_wq);
}
