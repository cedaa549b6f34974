// SPDX-License-Identifier: GPL-2.0
/*
 * Making a session over RDMA: allocating one, its QPs per path and its
 * key half (also for the handshake's passive end, conn_handshake.c), and
 * CONNECT: finding a session to the peer or starting one, and waiting
 * until it is up or down. The transport makes its paths
 * (xferk_rdma_transport.connect). Locking: xferk_conns_lock for the
 * lookup of a session to the peer, c->lock for its QP count and credits.
 */
#include <linux/random.h>
#include <linux/slab.h>
#include "conn.h"
#include "conn_state.h"
#include "transport.h"
#include "xferk.h"

/**
 * xferk_conn_alloc_rdma() - a session for the RDMA transport
 * @gfp: whose memory (XFERK_GFP_USER: the caller's)
 * @nr_qps: QPs per path it may have (its send slots are made for as many)
 *
 * Return: the session, zeroed, with its path's send slots and message
 * buffers and its ring of revoked ids; NULL without memory.
 */
struct xferk_conn *xferk_conn_alloc_rdma(gfp_t gfp, u32 nr_qps)
{
	struct xferk_conn *c = kzalloc(sizeof(*c), gfp);

	if (!c)
		return NULL;
	c->revoked = kvcalloc(XFERK_REVOKED_MAX, sizeof(*c->revoked), gfp);
	if (!c->revoked || xferk_rdma_path_alloc(&c->path, gfp, nr_qps)) {
		kvfree(c->revoked);
		kfree(c);
		return NULL;
	}
	return c;
}

/**
 * xferk_conn_set_qps() - the session's QPs per path
 * @c: the session
 * @nr: how many: what the initiator asks, what the acceptor grants
 *
 * XFERK_QP_CTXS send slots and one QP window each in the admission queue.
 * Set before the session is keyed, so before anything is dispatched to it
 * or posted; the initiator's send slots were allocated for what it asked,
 * at least what it is granted.
 */
void xferk_conn_set_qps(struct xferk_conn *c, u32 nr)
{
	mutex_lock(&c->lock);
	c->path.nr_qps = nr;
	c->credits = nr * XFERK_QP_CTXS;
	mutex_unlock(&c->lock);
	WRITE_ONCE(c->sqp.nr_qps, nr);
}

/* The key half this end sends; kept in the session until it is up. */
u8 *xferk_conn_key_half(struct xferk_conn *c)
{
	BUILD_BUG_ON(sizeof(c->token_key) != 16);
	return (u8 *)&c->token_key;
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
	int ret;

	ret = xferk_conn_charge_attempt(acct, max_connecting);
	if (ret)
		return ERR_PTR(ret);
	c = xferk_conn_alloc_rdma(XFERK_GFP_USER, nr_qps);
	if (!c) {
		xferk_conn_uncharge_attempt(acct);
		return ERR_PTR(-ENOMEM);
	}
	xferk_conn_init(c, &xferk_rdma_transport, net, true);
	xferk_conn_set_qps(c, nr_qps);
	xferk_conn_set_creator(c, acct);
	c->peer = *peer;
	get_random_bytes(xferk_conn_key_half(c), 16);
	other = xferk_conn_publish(c, 0, 0);
	if (other) {
		/* An end to that peer appeared meanwhile (its request to us). */
		xferk_conn_put(c);
		return other;
	}
	*created = true;
	xferk_conn_get(c);	/* the caller's */
	xferk_conn_arm_timer(c, timeout_ms);
	ret = c->transport->connect(&c->path, net, peer, timeout_ms);
	if (ret)
		xferk_conn_down(c, ret);
	return c;
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
