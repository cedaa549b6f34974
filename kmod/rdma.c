// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA transport's entry points: connecting to a peer (a session's
 * first path, and the next one of a session we initiated), the listener,
 * module init and exit. kmod/rdma.h lists where the rest of the transport
 * is. Locking: xferk_listen_lock guards the listener; xferk_conns_lock
 * the lookup of a connection to the peer.
 */
#include <linux/module.h>
#include <linux/random.h>
#include <net/net_namespace.h>
#include <rdma/rdma_cm.h>
#include "conn.h"
#include "conn_state.h"
#include "rdma.h"
#include "region.h"
#include "stats.h"
#include "transport.h"
#include "xferk.h"

/*
 * The listener. Bound to the wildcard address (the default) it lives on no
 * device. Bound to one address it lives on that address's device, and
 * when that device goes rdma_cm asks us to let go of it: we do, and listen
 * again whenever a device appears.
 */
static DEFINE_MUTEX(xferk_listen_lock);	/* the two below */
static struct rdma_cm_id *xferk_listener;
/* Set by main.c from its parameters at load, before the listener starts. */
unsigned short xferk_listen_port = 18515;
struct sockaddr_storage xferk_listen_sockaddr;

static bool xferk_listen_stopped;
static void listen_work_fn(struct work_struct *work);
DECLARE_WORK(xferk_listen_work, listen_work_fn);

/* ---- connecting ---- */

/*
 * A session for the RDMA transport, zeroed, with its path's send slots and
 * message buffers (for @nr_qps QPs) and its ring of revoked ids.
 */
struct xferk_conn *conn_rdma_alloc(gfp_t gfp, u32 nr_qps)
{
	struct xferk_conn *c = kzalloc(sizeof(*c), gfp);

	if (!c)
		return NULL;
	c->revoked = kvcalloc(XFERK_REVOKED_MAX, sizeof(*c->revoked), gfp);
	if (!c->revoked || rdma_path_alloc(&c->path, gfp, nr_qps)) {
		kvfree(c->revoked);
		kfree(c);
		return NULL;
	}
	return c;
}

/*
 * A new connection attempt to @peer asking for @nr_qps QPs per path,
 * counted against @acct's connection attempts (at most @max_connecting)
 * until it leaves CONNECTING; with a reference for the caller.
 */
static struct xferk_conn *conn_start(struct net *net,
				     const struct sockaddr_storage *peer,
				     unsigned int timeout_ms, u32 nr_qps,
				     struct xferk_qacct *acct,
				     unsigned long max_connecting, bool *created)
{
	struct xferk_conn *c, *other;
	struct rdma_cm_id *id;
	int ret;

	ret = xferk_conn_charge_attempt(acct, max_connecting);
	if (ret)
		return ERR_PTR(ret);
	c = conn_rdma_alloc(XFERK_GFP_USER, nr_qps);
	if (!c) {
		xferk_conn_uncharge_attempt(acct);
		return ERR_PTR(-ENOMEM);
	}
	xferk_conn_init(c, &xferk_rdma_transport, net, true);
	conn_set_qps(c, nr_qps);
	xferk_conn_set_creator(c, acct);
	c->peer = *peer;
	get_random_bytes(conn_key_half(c), 16);
	id = rdma_create_id(net, xferk_cm_handler, &c->path.lanes[0], RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		xferk_conn_put(c);
		return ERR_PTR(-ENOMEM);
	}
	other = xferk_conn_publish(c, 0);
	if (other) {
		/* An end to that peer appeared meanwhile (its request to us). */
		rdma_destroy_id(id);
		xferk_conn_put(c);
		return other;
	}
	c->path.lanes[0].cm_id = id;
	*created = true;
	xferk_conn_get(c);	/* the caller's */
	xferk_conn_arm_timer(c, timeout_ms);
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)peer, timeout_ms);
	/* The handler's alone with @id now; teardown may destroy it. */
	complete_all(&c->path.lanes[0].cm_ready);
	if (ret)
		xferk_conn_down(c, ret);
	return c;
}

/*
 * The next path of a RECONNECTING session we initiated (the recovery
 * work, after it tore the last one down and reinitialized cm_ready): the
 * same steps as the first, to the same peer address, on the same device.
 */
int conn_rdma_reconnect(struct xferk_path *p)
{
	struct xferk_conn *c = xferk_path_conn(p);
	struct rdma_cm_id *id;
	int ret;

	id = rdma_create_id(c->net, xferk_cm_handler, &c->path.lanes[0],
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		complete_all(&c->path.lanes[0].cm_ready);
		return -ENOMEM;
	}
	spin_lock_irq(&c->path.cm_lock);
	c->path.lanes[0].cm_id = id;
	spin_unlock_irq(&c->path.cm_lock);
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&c->peer,
				XFERK_RESOLVE_MS);
	complete_all(&c->path.lanes[0].cm_ready);
	return ret;
}

/* Up with a live path, or down: what CONNECT waits for. */
static bool conn_settled(struct xferk_conn *c)
{
	int state = READ_ONCE(c->state);

	return xferk_conn_state_over(state) ||
	       (state == XFERK_CONN_UP &&
		!xferk_conn_path_dead(c));
}

/**
 * xferk_conn_connect() - a connection to a peer, shared namespace-wide
 * @net: the caller's network namespace; the connection lives there
 * @peer: the peer's listener address
 * @timeout_ms: bound for resolution and handshake of a new connection,
 *	and for this caller's wait (at most XFERK_CONNECT_MAX_TIMEOUT_MS)
 * @nr_qps: QPs per path a new connection asks for (1..XFERK_MAX_QPS); an
 *	existing one is shared as it is
 * @acct: the caller's file's account; a new attempt counts against its
 *	connection attempts until it is up or down
 * @max_connecting: how many attempts @acct may have at once (its file's
 *	connection limit); -EMFILE beyond
 *
 * A new connection's attempt is bounded by @timeout_ms whoever waits for
 * it. A caller interrupted by a signal leaves the attempt running for
 * others; one that gives up for good (timeout, fatal signal) ends an
 * attempt it started. A session that is replacing its path is waited for
 * within @timeout_ms too; if it goes down meanwhile, a new connection is
 * made in the time left.
 *
 * Return: the connection, up, with a reference and a use
 * (xferk_conn_use()) for the caller; or ERR_PTR: -EHOSTUNREACH,
 * -ECONNREFUSED, -ETIMEDOUT, -EPROTONOSUPPORT, -EPROTO, -ECONNRESET,
 * -ENODEV, -ENOMEM, -EIO, -EMFILE, or -ERESTARTSYS (a signal; the attempt
 * goes on).
 */
struct xferk_conn *xferk_conn_connect(struct net *net,
				      const struct sockaddr_storage *peer,
				      unsigned int timeout_ms, u32 nr_qps,
				      struct xferk_qacct *acct,
				      unsigned long max_connecting)
{
	unsigned long until = jiffies + msecs_to_jiffies(timeout_ms);
	struct xferk_conn *c;
	bool created = false, lost;
	long left;
	int ret;

again:
	mutex_lock(&xferk_conns_lock);
	c = xferk_conn_find_peer(net, peer);
	mutex_unlock(&xferk_conns_lock);
	if (!c) {
		c = conn_start(net, peer, timeout_ms, nr_qps, acct,
			       max_connecting, &created);
		if (IS_ERR(c))
			return c;
	}

	left = wait_event_interruptible_timeout(c->state_wq, conn_settled(c),
						max_t(long, until - jiffies, 1));
	mutex_lock(&c->lock);
	ret = c->state == XFERK_CONN_UP ? 0 : c->error;
	if (!xferk_conn_state_over(c->state) && !conn_settled(c))
		ret = left < 0 ? -ERESTARTSYS : -ETIMEDOUT;
	mutex_unlock(&c->lock);
	if (!ret)
		return c;
	/*
	 * The session we found ended while we waited, or ours crossed the
	 * peer's and lost (the peer's end is ours now): look again.
	 */
	lost = ret == -EALREADY ||
	       (!created && xferk_conn_state_over(READ_ONCE(c->state)));
	if (lost && time_before(jiffies, until)) {
		xferk_conn_unuse(c);
		xferk_conn_put(c);
		created = false;
		goto again;
	}
	if (ret == -EALREADY)
		ret = -ETIMEDOUT;
	if (created && (ret == -ETIMEDOUT || fatal_signal_pending(current)))
		xferk_conn_down(c, ret);
	xferk_conn_unuse(c);
	xferk_conn_put(c);
	/* An end that was up and went down while we looked: reset. */
	if (ret == -ECANCELED || ret == -ESHUTDOWN || ret == -ESTALE)
		ret = -ECONNRESET;
	return ERR_PTR(ret);
}

/* ---- the listener, the module ---- */

/*
 * The listener's own events: its device going away. Non-zero makes rdma_cm
 * destroy it, which it may only when module exit did not take it first.
 */
int listener_event(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	bool mine = false;

	if (ev->event != RDMA_CM_EVENT_DEVICE_REMOVAL)
		return 0;
	mutex_lock(&xferk_listen_lock);
	if (xferk_listener == id) {
		xferk_listener = NULL;
		mine = true;
	}
	mutex_unlock(&xferk_listen_lock);
	return mine;
}

/* Listens on listen_addr, unless it does or the module is going. */
static int listener_start(void)
{
	struct rdma_cm_id *id;
	int ret = 0;

	mutex_lock(&xferk_listen_lock);
	if (xferk_listener || xferk_listen_stopped)
		goto out;
	id = rdma_create_id(&init_net, xferk_cm_handler, NULL, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto out;
	}
	ret = rdma_bind_addr(id, (struct sockaddr *)&xferk_listen_sockaddr);
	if (!ret)
		ret = rdma_listen(id, 128);
	if (ret)
		rdma_destroy_id(id);
	else
		xferk_listener = id;
out:
	mutex_unlock(&xferk_listen_lock);
	return ret;
}

static void listen_work_fn(struct work_struct *work)
{
	int ret = listener_start();

	if (ret)
		pr_warn_ratelimited("xferk: cannot listen on %pISpc: %d\n",
				    &xferk_listen_sockaddr, ret);
}

int xferk_rdma_module_init(void)
{
	int ret;

	xferk_region_set_unmap(xferk_region_unmap);
	ret = ib_register_client(&xferk_ib_client);
	if (ret)
		return ret;
	ret = listener_start();
	if (ret) {
		pr_err("xferk: cannot listen on %pISpc: %d\n",
		       &xferk_listen_sockaddr, ret);
		xferk_rdma_module_exit();
	}
	return ret;
}

/*
 * Before the connection workqueue goes: no new passive end, every
 * connection down and torn down, then no device of ours left. A device
 * added meanwhile may queue the listener's work again: it is cancelled
 * once more after the client is gone.
 */
void xferk_rdma_module_exit(void)
{
	struct rdma_cm_id *id;

	mutex_lock(&xferk_listen_lock);
	id = xferk_listener;
	xferk_listener = NULL;
	xferk_listen_stopped = true;
	mutex_unlock(&xferk_listen_lock);
	cancel_work_sync(&xferk_listen_work);
	if (id)
		rdma_destroy_id(id);
	xferk_conn_shutdown_all();
	ib_unregister_client(&xferk_ib_client);
	cancel_work_sync(&xferk_listen_work);
}
