// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions: finding a connection. Publishing an end makes it findable
 * (xferk_conn_publish()); CONNECT looks for a live end that serves the
 * peer's listener (xferk_conn_find_peer()), a peer's new path for the
 * session it names (xferk_conn_find_resumed(), xferk_conn_resume_fresh()),
 * IMPORT for the end a token names (xferk_conn_find_importer()). Here too:
 * two hosts connecting to each other keep one session (a crossed request
 * is refused); a peer host's new session takes down the ones its old
 * instance left (xferk_conn_stale_peer()); an end's token key is read
 * under the list's lock (xferk_conn_token_key()).
 *
 * Indexes (xferk_conns_lock): every connection is on xferk_conns (tables);
 * RDMA ends are hashed by (namespace, peer address) for CONNECT, and every
 * end by its local id for IMPORT. Ids are chosen locally, so no peer can
 * make its connection be found in place of another. An id's high 32 bits
 * name this module instance (conn_instance, random once per load), its
 * low 32 bits are random: a peer tells our instances apart by them
 * (XFERK_CAP_INSTANCE).
 *
 * Locking: xferk_conns_lock guards the list, both indexes, the ids and an
 * end's peer id and token key, and is taken before an end's c->lock
 * (xferk_conn_stale_peer() takes ends down under it). A connection's
 * state is read here without its c->lock (READ_ONCE): an end found may be
 * going down already. The session's teardown (conn.c) takes an end off
 * the list and the indexes.
 */
#include <linux/hash.h>
#include <linux/hashtable.h>
#include <linux/jhash.h>
#include <linux/random.h>
#include <net/net_namespace.h>
#include "conn.h"
#include "conn_internal.h"
#include "conn_state.h"
#include "stats.h"
#include "transport.h"

DEFINE_MUTEX(xferk_conns_lock);	/* xferk_conns, both indexes, the ids */
LIST_HEAD(xferk_conns);
static DEFINE_HASHTABLE(xferk_conns_by_peer, 8);
static DEFINE_HASHTABLE(xferk_conns_by_id, 8);
static u32 conn_instance;	/* nonzero once the first end is published */

/*
 * Ends torn down lately (of sessions that were keyed), for the fence
 * messages that name them (conn_find_fenced()): a ring, oldest first out.
 * With xferk_conns_lock.
 */
#define XFERK_TOMBSTONES	64

struct conn_tombstone {
	u64 local_id;
	u64 peer_id;
	siphash_key_t key;
};

static struct conn_tombstone conn_tombstones[XFERK_TOMBSTONES];
static u32 conn_tombstone_next;

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

static bool conn_crossed_locked(struct xferk_conn *c, u64 peer_conn_id,
				u64 peer_caps);

/**
 * xferk_conn_publish() - make a new connection findable
 * @c: the connection, with its peer address (RDMA) set
 * @peer_conn_id: for an end a peer's request made, the requesting end's
 *	id; else 0
 * @peer_caps: for such an end, the capabilities the request announces
 *	(XFERK_CAP_*); else 0
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
struct xferk_conn *xferk_conn_publish(struct xferk_conn *c, u64 peer_conn_id,
				      u64 peer_caps)
{
	struct xferk_conn *other = NULL;

	mutex_lock(&xferk_conns_lock);
	if (c->transport == &xferk_rdma_transport && c->active)
		other = xferk_conn_find_peer(c->net, &c->peer);
	else if (c->transport == &xferk_rdma_transport &&
		 conn_crossed_locked(c, peer_conn_id, peer_caps))
		other = ERR_PTR(-EALREADY);
	if (other) {
		mutex_unlock(&xferk_conns_lock);
		return other;
	}
	while (!conn_instance)
		conn_instance = get_random_u32();
	do {
		c->local_id = (u64)conn_instance << 32 | get_random_u32();
	} while (conn_by_id(c->local_id));
	hash_add(xferk_conns_by_id, &c->id_node, c->local_id);
	if (c->transport == &xferk_rdma_transport)
		hash_add(xferk_conns_by_peer, &c->peer_node,
			 peer_hash(c->net, &c->peer));
	list_add_tail(&c->node, &xferk_conns);
	mutex_unlock(&xferk_conns_lock);
	return NULL;
}

/*
 * The other end of @c on this host (loopback), or NULL; with
 * xferk_conns_lock. The two ends name each other by their local ids, which
 * only this host chooses, and one initiated what the other accepted.
 */
struct xferk_conn *conn_local_sibling(struct xferk_conn *c)
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
 * Return: the connection with a reference and a use (xferk_conn_use()),
 * taken under xferk_conns_lock so that conn_reap_idle() does not take it
 * down, or NULL.
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
	if (found) {
		xferk_conn_get(found);
		xferk_conn_use(found);
	}
	return found;
}

/**
 * conn_reap_idle() - take an unused end we initiated down
 * @c: the end, idle for session_idle_ms when its keepalive looked
 *
 * Under the lock that CONNECT and IMPORT find an end with: one that took
 * a use before keeps @c up, one after does not find it (it is DOWN).
 */
void conn_reap_idle(struct xferk_conn *c)
{
	mutex_lock(&xferk_conns_lock);
	if (!atomic_read(&c->users)) {
		atomic64_inc(&xferk_stats.sessions_idle);
		xferk_conn_down(c, -ETIMEDOUT);
	}
	mutex_unlock(&xferk_conns_lock);
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
 * Whether the keyed end @c's peer is another instance of its host than
 * the one that chose @peer_id, as both announce (@peer_caps:
 * XFERK_CAP_INSTANCE); with xferk_conns_lock.
 */
static bool conn_other_instance(const struct xferk_conn *c, u64 peer_id,
				u64 peer_caps)
{
	return c->peer_caps & peer_caps & XFERK_CAP_INSTANCE &&
	       upper_32_bits(c->peer_id) != upper_32_bits(peer_id);
}

/*
 * Does the peer's request that made the passive end @p cross a session we
 * initiated to that host, connecting or up? Of two such sessions the one
 * whose initiating end has the greater id is kept; both hosts decide
 * alike. True: ours wins, refuse the request. A session of ours whose
 * peer is another instance than the requester's (@peer_conn_id,
 * @peer_caps) crosses nothing: that instance is gone, and the new
 * session, once up, takes ours down (xferk_conn_stale_peer()). With
 * xferk_conns_lock.
 */
static bool conn_crossed_locked(struct xferk_conn *p, u64 peer_conn_id,
				u64 peer_caps)
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
			   c->local_id > peer_conn_id &&
			   !(test_bit(XFERK_CONN_F_KEYED, &c->flags) &&
			     conn_other_instance(c, peer_conn_id, peer_caps));
	}
	return crossed;
}

/*
 * Whether @c, an end of a session with the host of @fresh (a new session
 * that host opened), belongs to an instance of that host that is gone;
 * with xferk_conns_lock. When both ends' peers name their instance, @c's
 * is gone if it is not @fresh's, whatever @c's state. Else an instance
 * that knew a session with us would have resumed it, so only the sessions
 * that host opened and that wait for it to come back are its old
 * instance's: a session whose path dies only later is not seen as stale.
 */
static bool conn_peer_gone(const struct xferk_conn *c,
			   const struct xferk_conn *fresh)
{
	int state = READ_ONCE(c->state);

	if (c->peer_caps & fresh->peer_caps & XFERK_CAP_INSTANCE)
		return conn_other_instance(c, fresh->peer_id, fresh->peer_caps) &&
		       (state == XFERK_CONN_UP ||
			state == XFERK_CONN_RECONNECTING);
	return !c->active && state == XFERK_CONN_RECONNECTING;
}

/**
 * xferk_conn_stale_peer() - a peer host opened a new session to us (its
 *	handshake completed)
 * @fresh: our end of it
 *
 * The sessions with that host that belong to an instance of it that is
 * gone (the host rebooted, its module was reloaded: conn_peer_gone()) go
 * down with ESTALE instead of waiting for their path to die and then for
 * reconnect_ms.
 */
void xferk_conn_stale_peer(struct xferk_conn *fresh)
{
	struct xferk_conn *c;

	mutex_lock(&xferk_conns_lock);
	hash_for_each_possible(xferk_conns_by_peer, c, peer_node,
			       peer_hash(fresh->net, &fresh->peer)) {
		if (c == fresh || c->net != fresh->net ||
		    !same_host(&c->peer, &fresh->peer) ||
		    !test_bit(XFERK_CONN_F_KEYED, &c->flags) ||
		    !conn_peer_gone(c, fresh))
			continue;
		if (xferk_conn_down(c, -ESTALE))
			atomic64_inc(&xferk_stats.sessions_stale);
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
 * Return: the end with a reference and a use (xferk_conn_use()), or NULL.
 */
struct xferk_conn *xferk_conn_find_importer(struct xferk_conn *via,
					    u64 conn_id, struct net *net)
{
	struct xferk_conn *c;

	if (via->transport == &xferk_null_transport) {
		if (via->local_id != conn_id)
			return NULL;
		xferk_conn_get(via);
		xferk_conn_use(via);
		return via;
	}
	mutex_lock(&xferk_conns_lock);
	c = conn_by_id(conn_id);
	if (c && (c->transport != &xferk_rdma_transport || c->net != net ||
		  !test_bit(XFERK_CONN_F_KEYED, &c->flags) || !conn_alive(c)))
		c = NULL;
	if (c) {
		xferk_conn_get(c);
		xferk_conn_use(c);
	}
	mutex_unlock(&xferk_conns_lock);
	return c;
}

/*
 * @c is torn down and leaves the indexes: a fence message that names it
 * is still answered for a while (its paths went with it). With
 * xferk_conns_lock.
 */
void conn_bury_locked(struct xferk_conn *c)
{
	lockdep_assert_held(&xferk_conns_lock);
	list_del_init(&c->node);
	hash_del(&c->id_node);
	hash_del(&c->peer_node);
	if (c->transport != &xferk_rdma_transport ||
	    !test_bit(XFERK_CONN_F_KEYED, &c->flags))
		return;
	conn_tombstones[conn_tombstone_next] = (struct conn_tombstone) {
		.local_id = c->local_id,
		.peer_id = c->peer_id,
		.key = c->token_key,
	};
	conn_tombstone_next = (conn_tombstone_next + 1) % XFERK_TOMBSTONES;
}

/**
 * conn_find_fenced() - the end of ours a fence message names
 * @local_id: our end's id, as the message gives it
 * @peer_id: the peer's end's id, likewise
 * @key: out: the session's token key, to check the message's MAC with
 *
 * Only a keyed end of an RDMA session whose peer's end has @peer_id
 * counts, in any namespace (the session that carried the message may be
 * in another one than the end it names); the caller checks the MAC.
 *
 * Return: the end with a reference; NULL if it was torn down lately (@key
 * is its key); else ERR_PTR(-ENOENT).
 */
struct xferk_conn *conn_find_fenced(u64 local_id, u64 peer_id,
				    siphash_key_t *key)
{
	struct conn_tombstone *t;
	struct xferk_conn *c;
	u32 i;

	mutex_lock(&xferk_conns_lock);
	c = conn_by_id(local_id);
	if (c) {
		if (c->transport == &xferk_rdma_transport &&
		    c->peer_id == peer_id &&
		    test_bit(XFERK_CONN_F_KEYED, &c->flags)) {
			xferk_conn_get(c);
			*key = c->token_key;
		} else {
			c = ERR_PTR(-ENOENT);
		}
		goto out;
	}
	c = ERR_PTR(-ENOENT);
	for (i = 0; i < XFERK_TOMBSTONES; i++) {
		t = &conn_tombstones[i];
		if (t->local_id && t->local_id == local_id &&
		    t->peer_id == peer_id) {
			*key = t->key;
			c = NULL;
			break;
		}
	}
out:
	mutex_unlock(&xferk_conns_lock);
	return c;
}
