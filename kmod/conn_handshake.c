// SPDX-License-Identifier: GPL-2.0
/*
 * The session's side of the rdma_cm handshake (rdma_cm.c runs it): the
 * private data a path's requests and replies carry, what a reply or a
 * reject means to the session, which session a resume or a join names.
 * The transport never reads or writes a session's ids, key or path
 * sequence numbers; for the handshake, this file does. Locking:
 * xferk_conns_lock for the peer's id and the token key; c->lock for the
 * path's sequence number on the accepting end.
 *
 * A new session's request and reply carry the sender's local id and half
 * of a key; each end keeps the other's id and the XOR of both halves as
 * the token key. A new path's (or a joining QP's) carry both ids, the
 * path's sequence number (in the key half's first bytes) and the QP's
 * index, under a MAC with the session's token key.
 */
#include <asm/unaligned.h>
#include <linux/random.h>
#include <linux/siphash.h>
#include <net/net_namespace.h>
#include "conn.h"
#include "conn_internal.h"
#include "conn_state.h"
#include "fault.h"
#include "stats.h"
#include "transport.h"
#include "wire.h"

/* Registered as parameters by limits.c. */
unsigned int xferk_max_passive_conns = 256;
unsigned int xferk_max_peer_qps = 4;
unsigned int xferk_handshake_timeout_ms = 10000;

/* Ends the peer initiated, bounded by max_passive_conns. */
atomic_t xferk_passive_conns = ATOMIC_INIT(0);

/* Fault injection: announce no capability, use none (an old peer). */
bool xferk_fault_no_caps;

static void cm_msg_init(struct xferk_cm_msg *m, const struct xferk_conn *c,
			u16 version, const u8 key_half[16])
{
	*m = (struct xferk_cm_msg) {
		.magic = cpu_to_be32(XFERK_CM_MAGIC),
		.version = cpu_to_be16(version),
		.caps = cpu_to_be64(xferk_fault_no_caps ? 0 : XFERK_PROTO_CAPS),
		.conn_id = cpu_to_be64(c->local_id),
	};
	memcpy(m->key_half, key_half, sizeof(m->key_half));
}

static u64 cm_msg_mac(const struct xferk_cm_msg *m, const struct xferk_conn *c)
{
	return siphash(m, offsetof(struct xferk_cm_msg, mac), &c->token_key);
}

/*
 * A message of a session's new path, or of a QP joining its path (@lane
 * its index, 0 for the path's first): both ids and the path's sequence
 * number (in the key half's first bytes), under the session's key.
 */
static void cm_msg_init_resume(struct xferk_cm_msg *m,
			       const struct xferk_conn *c, u64 seq, u32 lane)
{
	static const u8 no_key[16];

	cm_msg_init(m, c, xferk_fault_connect_version ?: XFERK_PROTO_VERSION,
		    no_key);
	m->lane = lane;
	put_unaligned_be64(seq, m->key_half);
	m->resume_id = cpu_to_be64(c->peer_id);
	m->mac = cpu_to_be64(cm_msg_mac(m, c));
}

/* A new path's or a joining QP's sequence number. */
static u64 cm_msg_seq(const struct xferk_cm_msg *m)
{
	return get_unaligned_be64(m->key_half);
}

/* Does @m resume session @c, coming from its peer end? */
static bool cm_msg_resumes(const struct xferk_cm_msg *m,
			   const struct xferk_conn *c)
{
	return test_bit(XFERK_CONN_F_KEYED, &c->flags) &&
	       be64_to_cpu(m->conn_id) == c->peer_id &&
	       be64_to_cpu(m->resume_id) == c->local_id &&
	       be64_to_cpu(m->mac) == cm_msg_mac(m, c);
}

/* Does @m accept lane @lane into session @c's path, from its peer end? */
static bool cm_msg_joins(const struct xferk_cm_msg *m,
			 const struct xferk_conn *c, u32 lane)
{
	return cm_msg_resumes(m, c) && m->lane == lane &&
	       cm_msg_seq(m) == READ_ONCE(c->resume_seq);
}

/* The capabilities the peer's message announces that we know. */
static u64 cm_msg_caps(const struct xferk_cm_msg *m)
{
	return xferk_fault_no_caps ? 0 : be64_to_cpu(m->caps) & XFERK_PROTO_CAPS;
}

/*
 * Both ends are known: record the peer's id and the token key. Under
 * xferk_conns_lock, which lookups by id hold, and before the end can be
 * used for tokens.
 */
static void conn_set_peer(struct xferk_conn *c, const struct xferk_cm_msg *m,
			  const u8 key_half[16])
{
	u8 key[16];
	int i;

	for (i = 0; i < sizeof(key); i++)
		key[i] = key_half[i] ^ m->key_half[i];
	mutex_lock(&xferk_conns_lock);
	c->peer_id = be64_to_cpu(m->conn_id);
	c->peer_caps = cm_msg_caps(m);
	/* The same words on both ends, whatever their byte order. */
	c->token_key.key[0] = get_unaligned_le64(key);
	c->token_key.key[1] = get_unaligned_le64(key + 8);
	set_bit(XFERK_CONN_F_KEYED, &c->flags);
	mutex_unlock(&xferk_conns_lock);
	memzero_explicit(key, sizeof(key));
}

/* A session's next path: the peer knows us already. */
static bool conn_resuming(struct xferk_conn *c)
{
	return test_bit(XFERK_CONN_F_KEYED, &c->flags);
}

/* The peer's private data as one of our messages, or NULL. */
static const struct xferk_cm_msg *handshake_parse(const void *priv, u8 len)
{
	const struct xferk_cm_msg *m = priv;

	if (!m || len < sizeof(*m) || be32_to_cpu(m->magic) != XFERK_CM_MAGIC)
		return NULL;
	return m;
}

/* A path is being made: the first, or a session's next. */
bool xferk_handshake_connecting(struct xferk_conn *c)
{
	int state = READ_ONCE(c->state);

	return state == XFERK_CONN_CONNECTING ||
	       state == XFERK_CONN_RECONNECTING;
}

/**
 * xferk_handshake_request() - the request an initiating end's QP sends
 * @c: the session
 * @lane: the QP's index in the path
 * @req: out: the request
 *
 * A new session's first QP offers its id, key half and QP count; a new
 * path's first QP resumes the session with the next sequence number; the
 * other QPs join the path the first made. In the first QP's cm handler,
 * the only writer of c->resume_seq on this end.
 */
void xferk_handshake_request(struct xferk_conn *c, u32 lane,
			     struct xferk_cm_msg *req)
{
	if (lane) {
		cm_msg_init_resume(req, c, READ_ONCE(c->resume_seq), lane);
	} else if (conn_resuming(c)) {
		cm_msg_init_resume(req, c, c->resume_seq + 1, 0);
		WRITE_ONCE(c->resume_seq, c->resume_seq + 1);
	} else {
		cm_msg_init(req, c, xferk_fault_connect_version ?:
			    XFERK_PROTO_VERSION, xferk_conn_key_half(c));
		req->nr_qps = c->path.nr_qps;
	}
}

/**
 * xferk_handshake_replied() - an initiating end's QP was accepted
 * @c: the session
 * @lane: the QP's index in the path
 * @priv: the accept's private data
 * @len: its length
 *
 * The reply must come from the session's peer end, for this path and QP;
 * a new session's first reply makes the session keyed (the peer's id,
 * the token key, the QP count it granted).
 *
 * Return: 0, or -EPROTO: it does not.
 */
int xferk_handshake_replied(struct xferk_conn *c, u32 lane, const void *priv,
			    u8 len)
{
	const struct xferk_cm_msg *rep = handshake_parse(priv, len);

	if (lane)
		return rep && cm_msg_joins(rep, c, lane) ? 0 : -EPROTO;
	if (!rep || be16_to_cpu(rep->version) != XFERK_PROTO_VERSION ||
	    (conn_resuming(c) && !cm_msg_joins(rep, c, 0)))
		return -EPROTO;
	if (!conn_resuming(c)) {
		xferk_conn_set_qps(c, clamp_t(u32, rep->nr_qps, 1,
					      c->path.nr_qps));
		conn_set_peer(c, rep, xferk_conn_key_half(c));
	}
	return 0;
}

/**
 * xferk_handshake_rejected() - an initiating end's request was refused
 * @c: the session
 * @error: the reject as an errno (rdma_cm.c maps every reject to one)
 *
 * A new session's, a new path's or a joining QP's: the two last name a
 * session the peer knows. "Crossed" answers a new session only; "stale"
 * means the peer does not know the session any more, which ends it.
 */
void xferk_handshake_rejected(struct xferk_conn *c, int error)
{
	if (error == -EALREADY && conn_resuming(c))
		error = -EPROTO;
	if (error == -ESTALE && conn_resuming(c)) {
		if (xferk_conn_down(c, error))
			atomic64_inc(&xferk_stats.sessions_stale);
		return;
	}
	xferk_conn_path_down(c, error, XFERK_PATH_QP);
}

/*
 * The session a new path's or a QP's request names, with a reference, if
 * the request comes from its peer end (both ids, under its key) and host;
 * @fresh: a new path's, whose sequence number must be newer than every
 * one the session took. An error pointer if not, with the request
 * rejected: -ESTALE (a new instance of the peer, or a forgery), or
 * -EAGAIN for a new path's request whose number is not new. That is a
 * replay, or a retransmission: once we rejected a request, the IB CM
 * forgets it and delivers a copy the initiator's CM sends again (its
 * answer was lost or late) as a new request. It changes nothing, and
 * the peer's next attempt has a newer number; "stale" would end the
 * session at the peer.
 */
static struct xferk_conn *handshake_find(struct xferk_cm_req *r,
					 const struct xferk_cm_msg *req,
					 bool fresh)
{
	struct xferk_conn *c;

	c = xferk_conn_find_resumed(be64_to_cpu(req->resume_id),
				    xferk_cm_req_peer(r));
	if (c && !cm_msg_resumes(req, c)) {
		xferk_conn_put(c);
		c = NULL;
	}
	if (!c) {
		xferk_cm_req_reject(r, XFERK_REJ_STALE);
		return ERR_PTR(-ESTALE);
	}
	if (fresh && !xferk_conn_resume_fresh(c, cm_msg_seq(req))) {
		xferk_conn_put(c);
		xferk_cm_req_reject(r, XFERK_REJ_RETRY);
		return ERR_PTR(-EAGAIN);
	}
	return c;
}

/*
 * A new path of one of our sessions: the peer end it names (by our id and
 * its own, under the session's key) must be the one we know, and the
 * session must be waiting for a path; a session whose old path we still
 * think up learns here that it died. Like a new connection, the request's
 * cm_id belongs to the session once taken, and a failure goes through its
 * recovery.
 */
static int handshake_resume(struct xferk_cm_req *r,
			    const struct xferk_cm_msg *req)
{
	struct xferk_cm_msg rep;
	struct xferk_conn *c;
	int ret;

	c = handshake_find(r, req, true);
	if (IS_ERR(c))
		return PTR_ERR(c);
	if (!xferk_conn_path_attach(c, cm_msg_seq(req))) {
		/* Its peer made a new path: the one we think up is dead. */
		if (READ_ONCE(c->state) == XFERK_CONN_UP)
			xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_PEER);
		xferk_conn_put(c);
		xferk_cm_req_reject(r, XFERK_REJ_RETRY);
		return -EAGAIN;
	}
	xferk_cm_req_take(r, &c->path, &c->path.lanes[0]);
	ret = xferk_cm_req_path(r, &c->path);
	if (ret) {
		xferk_cm_req_reject(r, XFERK_REJ_RESOURCES);
		xferk_conn_path_down(c, ret, XFERK_PATH_QP);
		xferk_conn_put(c);
		return 0;
	}
	cm_msg_init_resume(&rep, c, cm_msg_seq(req), 0);
	ret = xferk_cm_req_accept(r, &rep);
	if (ret)
		xferk_conn_path_down(c, ret, XFERK_PATH_QP);
	xferk_conn_put(c);
	return 0;
}

/*
 * A QP joining the path a session of ours has now: named like a new path
 * (both ids, under the session's key), with that path's sequence number
 * and an index below the session's QP count that has no QP yet, once the
 * path's first QP exists. It goes on the session's PD and CQ; the
 * request's cm_id belongs to the session once taken, and a failure is the
 * path's.
 */
static int handshake_join(struct xferk_cm_req *r,
			  const struct xferk_cm_msg *req)
{
	struct xferk_lane *l = NULL;
	struct xferk_cm_msg rep;
	struct xferk_conn *c;
	int ret;

	c = handshake_find(r, req, false);
	if (IS_ERR(c))
		return PTR_ERR(c);
	mutex_lock(&c->lock);
	if (req->lane < c->path.nr_qps && cm_msg_seq(req) == c->resume_seq &&
	    xferk_conn_qp_live(c) && !c->path.lanes[req->lane].cm_id) {
		l = &c->path.lanes[req->lane];
		xferk_cm_req_take(r, &c->path, l);
	}
	mutex_unlock(&c->lock);
	if (!l) {
		xferk_conn_put(c);
		xferk_cm_req_reject(r, XFERK_REJ_RETRY);
		return -EAGAIN;
	}
	ret = xferk_cm_req_lane(r, &c->path, l);
	if (!ret) {
		cm_msg_init_resume(&rep, c, cm_msg_seq(req), l->index);
		ret = xferk_cm_req_accept(r, &rep);
	} else {
		xferk_cm_req_reject(r, XFERK_REJ_RESOURCES);
	}
	if (ret)
		xferk_conn_path_down(c, ret, XFERK_PATH_QP);
	xferk_conn_put(c);
	return 0;
}

/**
 * xferk_handshake_received() - a peer's connect request to our listener
 * @r: the request (the transport's)
 * @priv: its private data
 * @len: its length
 *
 * A new session, a session's new path, or a QP joining a path. A request
 * refused outright is rejected, and its cm_id destroyed by rdma_cm
 * (non-zero return). Once a new session is published it owns the cm_id,
 * and any later failure goes through its teardown like every other.
 *
 * Return: 0, or why the request was refused.
 */
int xferk_handshake_received(struct xferk_cm_req *r, const void *priv, u8 len)
{
	const struct xferk_cm_msg *req = handshake_parse(priv, len);
	struct xferk_cm_msg rep;
	struct xferk_conn *c;
	u32 nr_qps;
	int ret;

	if (!req) {
		xferk_cm_req_reject(r, XFERK_REJ_MALFORMED);
		return -EPROTO;
	}
	if (be16_to_cpu(req->version) != XFERK_PROTO_VERSION) {
		xferk_cm_req_reject(r, XFERK_REJ_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (req->resume_id && req->lane)
		return handshake_join(r, req);
	if (req->resume_id)
		return handshake_resume(r, req);
	if (atomic_inc_return(&xferk_passive_conns) >
	    READ_ONCE(xferk_max_passive_conns)) {
		atomic_dec(&xferk_passive_conns);
		xferk_cm_req_reject(r, XFERK_REJ_BUSY);
		return -EBUSY;
	}
	nr_qps = clamp_t(u32, req->nr_qps, 1, READ_ONCE(xferk_max_peer_qps));
	c = xferk_conn_alloc_rdma(GFP_KERNEL, nr_qps);
	if (!c) {
		atomic_dec(&xferk_passive_conns);
		xferk_cm_req_reject(r, XFERK_REJ_RESOURCES);
		return -ENOMEM;
	}
	/* Passive ends live in the listener's namespace. */
	xferk_conn_init(c, &xferk_rdma_transport, &init_net, false);
	c->path.passive = true;	/* counted until its teardown */
	xferk_conn_set_qps(c, nr_qps);
	memcpy(&c->peer, xferk_cm_req_peer(r), sizeof(c->peer));
	if (IS_ERR(xferk_conn_publish(c, be64_to_cpu(req->conn_id),
				      cm_msg_caps(req)))) {
		/* It crosses a session we initiated to that host, which wins. */
		xferk_conn_put(c);
		atomic_dec(&xferk_passive_conns);
		atomic64_inc(&xferk_stats.conns_crossed);
		xferk_cm_req_reject(r, XFERK_REJ_CROSSED);
		return -EALREADY;
	}
	xferk_cm_req_take(r, &c->path, &c->path.lanes[0]);
	xferk_conn_arm_timer(c, READ_ONCE(xferk_handshake_timeout_ms));
	ret = xferk_cm_req_path(r, &c->path);
	if (ret) {
		xferk_cm_req_reject(r, XFERK_REJ_RESOURCES);
		xferk_conn_down(c, ret);
		return 0;
	}
	/* Keyed, hence importable, only once its QP's limits are final. */
	get_random_bytes(xferk_conn_key_half(c), 16);
	cm_msg_init(&rep, c, XFERK_PROTO_VERSION, xferk_conn_key_half(c));
	rep.nr_qps = nr_qps;
	conn_set_peer(c, req, rep.key_half);
	ret = xferk_cm_req_accept(r, &rep);
	if (ret)
		xferk_conn_down(c, ret);
	return 0;
}
