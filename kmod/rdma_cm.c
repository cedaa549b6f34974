// SPDX-License-Identifier: GPL-2.0
/*
 * The rdma_cm handshake: its private data, the events of every cm_id (an
 * end we initiated, an end a peer initiated, a QP joining a path) and the
 * requests the listener receives (a new session, a session's new path, a
 * QP joining a path). rdma_cm runs one handler at a time per cm_id.
 * Locking: conn->path.cm_lock guards a lane's cm_id (the QP event handler
 * takes it in atomic context); xferk_conns_lock the peer's id and the token
 * key.
 *
 * Handshake (protocol version 2): the connect request carries struct
 * xferk_cm_msg with the initiator's local connection id and half of a
 * key; the accept carries the acceptor's id and its half. Each end keeps
 * the other's id (tokens the peer exports name our end by it) and the
 * XOR of both halves as the connection's token key. A new path of a
 * session (conn.c) sends both ids instead (resume_id: the acceptor's) and
 * a sequence number, with a MAC under the session's token key; the
 * acceptor takes it only from the session's peer host and only if the
 * number is newer than every one it took (a replay is refused), attaches
 * the new QP to that session and answers likewise. It rejects a resume of a session
 * it does not know (a new instance, or a forgery) as stale, and one
 * whose old path it is still tearing down as "retry". Two hosts that open a
 * session to each other at the same moment keep one (xferk_conn_publish()):
 * a request that crosses a session we initiated, connecting or up, whose
 * end has the greater id is refused ("crossed"), and the refused
 * initiator's CONNECT then takes the end the other request made. A request
 * we refuse gets struct xferk_cm_rej with a reason code (never an errno);
 * whatever reject a peer sends, the initiator maps it to one documented
 * errno.
 * A session of several QPs (nr_qps, agreed in its first handshake: the
 * initiator asks, the acceptor grants at most max_peer_qps) makes each
 * path's first QP by that handshake; once it is established the
 * initiator connects every other QP of the path from the same source
 * address, each request naming the session like a new path does (both
 * ids, the path's sequence number, the QP's index, under the session's
 * MAC); the acceptor takes it only for the path it has now, once per
 * index, on the session's PD and CQ. Any QP of a path failing is the path
 * dying.
 * Passive ends are bounded (max_passive_conns), their handshake is
 * bounded (handshake_timeout_ms), and one no local user claims within
 * passive_idle_ms is reaped.
 *
 * The handshake announces capabilities (XFERK_CAP_*); an end uses one only
 * if its peer announced it.
 */
#include <asm/unaligned.h>
#include <linux/inet.h>
#include <linux/random.h>
#include <net/net_namespace.h>
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>
#include "conn.h"
#include "conn_state.h"
#include "fault.h"
#include "rdma.h"
#include "stats.h"
#include "transport.h"
#include "wire.h"

/* Registered as parameters by limits.c. */
unsigned int xferk_max_passive_conns = 256;
unsigned int xferk_max_peer_qps = 4;
unsigned int xferk_handshake_timeout_ms = 10000;

/* Fault injection: ends miss the next N disconnects of their peers. */
atomic_t xferk_fault_ignore_disconnects = ATOMIC_INIT(0);

/* Passive ends, bounded by max_passive_conns. */
atomic_t xferk_passive_conns = ATOMIC_INIT(0);

/* Fault injection: announce no capability, use none (an old peer). */
bool xferk_fault_no_caps;

/* ---- handshake ---- */

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

/* Does @m accept lane @l into session @c's path, from its peer end? */
static bool cm_msg_joins(const struct xferk_cm_msg *m,
			 const struct xferk_conn *c, const struct xferk_lane *l)
{
	return cm_msg_resumes(m, c) && m->lane == l->index &&
	       cm_msg_seq(m) == READ_ONCE(c->resume_seq);
}

/* The peer's private data as one of our messages, or NULL. */
static const struct xferk_cm_msg *cm_msg_parse(const void *priv, u8 len)
{
	const struct xferk_cm_msg *m = priv;

	if (!m || len < sizeof(*m) || be32_to_cpu(m->magic) != XFERK_CM_MAGIC)
		return NULL;
	return m;
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
	c->peer_caps = xferk_fault_no_caps ? 0 :
		       be64_to_cpu(m->caps) & XFERK_PROTO_CAPS;
	/* The same words on both ends, whatever their byte order. */
	c->token_key.key[0] = get_unaligned_le64(key);
	c->token_key.key[1] = get_unaligned_le64(key + 8);
	set_bit(XFERK_CONN_F_KEYED, &c->flags);
	mutex_unlock(&xferk_conns_lock);
	memzero_explicit(key, sizeof(key));
}

static void conn_param_init(struct rdma_conn_param *p, struct ib_device *dev,
			    const void *priv, u8 priv_len)
{
	*p = (struct rdma_conn_param) {
		.private_data = priv,
		.private_data_len = priv_len,
		.initiator_depth = min_t(int, dev->attrs.max_qp_init_rd_atom,
					 XFERK_MAX_RD_ATOMIC),
		.responder_resources = min_t(int, dev->attrs.max_qp_rd_atom,
					     XFERK_MAX_RD_ATOMIC),
		.retry_count = XFERK_RETRY_COUNT,
		.rnr_retry_count = XFERK_RNR_RETRY,
	};
}

/* Whatever a peer's reject says, one of three documented errnos. */
static int conn_reject_errno(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct xferk_cm_rej *rej;
	u8 len = 0;

	if (ev->status != IB_CM_REJ_CONSUMER_DEFINED)
		return -ECONNREFUSED;
	rej = rdma_consumer_reject_data(id, ev, &len);
	if (!rej || len < sizeof(*rej) ||
	    be32_to_cpu(rej->magic) != XFERK_CM_MAGIC)
		return -ECONNREFUSED;
	switch (be32_to_cpu(rej->reason)) {
	case XFERK_REJ_VERSION:
		return -EPROTONOSUPPORT;
	case XFERK_REJ_MALFORMED:
		return -EPROTO;
	case XFERK_REJ_STALE:
		return -ESTALE;
	case XFERK_REJ_RETRY:
		return -EAGAIN;
	case XFERK_REJ_CROSSED:
		return -EALREADY;
	default:
		return -ECONNREFUSED;
	}
}

/* A path is being made: the first, or a session's next. */
static bool conn_connecting(struct xferk_conn *c)
{
	int state = READ_ONCE(c->state);

	return state == XFERK_CONN_CONNECTING ||
	       state == XFERK_CONN_RECONNECTING;
}

/* A session's next path: the peer knows us already. */
static bool conn_resuming(struct xferk_conn *c)
{
	return test_bit(XFERK_CONN_F_KEYED, &c->flags);
}

/*
 * The initiator's QP @l joins the path: from @src (the first QP's source
 * address, so on the same device), unless the path is already dying.
 * Called from the first QP's handler. Teardown, which marks the path dead
 * under c->lock first, then waits for cm_ready: taken here under that
 * lock before the cm_id exists, so a dying path makes none.
 */
static void lane_start(struct xferk_conn *c, struct xferk_lane *l,
		       struct sockaddr_storage *src)
{
	struct rdma_cm_id *id;
	bool ok;
	int ret;

	mutex_lock(&c->lock);
	ok = xferk_conn_qp_live(c) && !l->cm_id;
	if (ok)
		reinit_completion(&l->cm_ready);
	mutex_unlock(&c->lock);
	if (!ok)
		return;
	id = rdma_create_id(c->net, xferk_cm_handler, l, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		complete_all(&l->cm_ready);
		xferk_conn_path_down(c, -ENOMEM, XFERK_PATH_QP);
		return;
	}
	spin_lock_irq(&c->path.cm_lock);
	l->cm_id = id;
	spin_unlock_irq(&c->path.cm_lock);
	ret = rdma_resolve_addr(id, (struct sockaddr *)src,
				(struct sockaddr *)&c->peer, XFERK_RESOLVE_MS);
	/* The handler's alone with @id now; teardown may destroy it. */
	complete_all(&l->cm_ready);
	if (ret)
		xferk_conn_path_down(c, ret, XFERK_PATH_QP);
}

/* The path's first QP (@first) is established: the others join it. */
static void lanes_start(struct xferk_conn *c, struct rdma_cm_id *first)
{
	struct sockaddr_storage src = first->route.addr.src_addr;
	u32 i;

	if (src.ss_family == AF_INET)
		((struct sockaddr_in *)&src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&src)->sin6_port = 0;
	for (i = 1; i < c->path.nr_qps; i++)
		lane_start(c, &c->path.lanes[i], &src);
}

/*
 * Fault injection: an end that misses its peer's disconnect keeps its
 * path (until its keepalive or a FENCE ends it).
 */
static bool disconnect_missed(void)
{
	return atomic_dec_if_positive(&xferk_fault_ignore_disconnects) >= 0;
}

/* The events that end a path (or session) of an end we initiated. */
static void active_path_failed(struct xferk_conn *c, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		xferk_conn_path_down(c, -EHOSTUNREACH, XFERK_PATH_QP);
		return;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		xferk_conn_path_down(c, -ECONNREFUSED, XFERK_PATH_QP);
		return;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		xferk_conn_down(c, -ENODEV);
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (!disconnect_missed())
			xferk_conn_path_down(c, -ECONNRESET, XFERK_PATH_PEER);
		return;
	default:
		return;
	}
}

/*
 * A request of an end we initiated was refused: a new session's, a new
 * path's or a joining QP's (the two last name a session the peer knows).
 */
static void active_rejected(struct xferk_conn *c, struct rdma_cm_id *id,
			    struct rdma_cm_event *ev)
{
	int ret = conn_reject_errno(id, ev);

	/* "Crossed" answers a new session only: a new path got none. */
	if (ret == -EALREADY && conn_resuming(c))
		ret = -EPROTO;
	if (ret == -ESTALE && conn_resuming(c)) {
		atomic64_inc(&xferk_stats.sessions_stale);
		xferk_conn_down(c, ret);
		return;
	}
	xferk_conn_path_down(c, ret, XFERK_PATH_QP);
}

/* The events that end a path (or session) of an end a peer initiated. */
static void passive_path_failed(struct xferk_conn *c, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		xferk_conn_down(c, -ENODEV);
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (disconnect_missed())
			return;
		fallthrough;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		xferk_conn_path_down(c, -ECONNRESET, XFERK_PATH_PEER);
		return;
	default:
		return;
	}
}

/*
 * Events of a QP joining a path (either end). Whatever fails is the
 * path's failure; the teardown of a dying path destroys the cm_id before
 * the QP it may have created here.
 */
static void lane_event(struct xferk_lane *l, struct rdma_cm_id *id,
		       struct rdma_cm_event *ev)
{
	struct xferk_conn *c = xferk_path_conn(l->path);
	const struct xferk_cm_msg *rep;
	struct rdma_conn_param param;
	struct xferk_cm_msg req;
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, XFERK_RESOLVE_MS);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = lane_create_qp(&c->path, l, id);
		if (ret)
			break;
		cm_msg_init_resume(&req, c, READ_ONCE(c->resume_seq), l->index);
		conn_param_init(&param, id->device, &req, sizeof(req));
		ret = rdma_connect_locked(id, &param);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		rep = cm_msg_parse(ev->param.conn.private_data,
				   ev->param.conn.private_data_len);
		if (c->active && (!rep || !cm_msg_joins(rep, c, l))) {
			ret = -EPROTO;
			break;
		}
		xferk_conn_lane_up(c, l);
		return;
	case RDMA_CM_EVENT_REJECTED:
		if (c->active) {
			active_rejected(c, id, ev);
			return;
		}
		fallthrough;
	default:
		if (c->active)
			active_path_failed(c, ev);
		else
			passive_path_failed(c, ev);
		return;
	}
	if (ret)
		xferk_conn_path_down(c, ret, XFERK_PATH_QP);
}

/*
 * Events of an end we initiated. The connection may be going down
 * concurrently: then nothing is created, and teardown, which destroys the
 * cm_id before anything else, frees what was.
 */
static void conn_active_event(struct xferk_conn *c, struct rdma_cm_id *id,
			      struct rdma_cm_event *ev)
{
	struct rdma_conn_param param;
	struct xferk_cm_msg req;
	const struct xferk_cm_msg *rep;
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (!conn_connecting(c))
			return;
		ret = c->path.attach.dev ? 0 :
		      xferk_dev_attach(&c->path.attach, id->device, &c->qdev);
		if (!ret)
			ret = rdma_resolve_route(id, XFERK_RESOLVE_MS);
		if (ret)
			xferk_conn_path_down(c, ret, XFERK_PATH_QP);
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (!conn_connecting(c))
			return;
		ret = conn_rdma_setup(&c->path, id);
		if (ret) {
			xferk_conn_path_down(c, ret, XFERK_PATH_QP);
			return;
		}
		if (conn_resuming(c)) {
			cm_msg_init_resume(&req, c, c->resume_seq + 1, 0);
			WRITE_ONCE(c->resume_seq, c->resume_seq + 1);
		} else {
			cm_msg_init(&req, c, xferk_fault_connect_version ?:
				    XFERK_PROTO_VERSION, xferk_conn_key_half(c));
			req.nr_qps = c->path.nr_qps;
		}
		conn_param_init(&param, id->device, &req, sizeof(req));
		ret = rdma_connect_locked(id, &param);
		if (ret)
			xferk_conn_path_down(c, ret, XFERK_PATH_QP);
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		rep = cm_msg_parse(ev->param.conn.private_data,
				   ev->param.conn.private_data_len);
		if (!rep || be16_to_cpu(rep->version) != XFERK_PROTO_VERSION ||
		    (conn_resuming(c) && !cm_msg_joins(rep, c, &c->path.lanes[0]))) {
			xferk_conn_path_down(c, -EPROTO, XFERK_PATH_QP);
			return;
		}
		if (!conn_resuming(c)) {
			xferk_conn_set_qps(c, clamp_t(u32, rep->nr_qps, 1, c->path.nr_qps));
			conn_set_peer(c, rep, xferk_conn_key_half(c));
		}
		xferk_conn_lane_up(c, &c->path.lanes[0]);
		lanes_start(c, id);
		return;
	case RDMA_CM_EVENT_REJECTED:
		active_rejected(c, id, ev);
		return;
	default:
		active_path_failed(c, ev);
		return;
	}
}

/* Events of an end a peer initiated, after its request. */
static void conn_passive_event(struct xferk_conn *c, struct rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
		xferk_conn_lane_up(c, &c->path.lanes[0]);
	else
		passive_path_failed(c, ev);
}

static void conn_send_reject(struct rdma_cm_id *id, enum xferk_rej_reason why)
{
	struct xferk_cm_rej rej = {
		.magic = cpu_to_be32(XFERK_CM_MAGIC),
		.version = cpu_to_be16(XFERK_PROTO_VERSION),
		.reason = cpu_to_be32(why),
	};

	atomic64_inc(&xferk_stats.conns_rejected);
	rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
}

/* Accepts @id's request with @rep, within what the requester offered. */
static int conn_accept(struct rdma_cm_id *id, struct rdma_cm_event *ev,
		       const struct xferk_cm_msg *rep)
{
	struct rdma_conn_param param;

	conn_param_init(&param, id->device, rep, sizeof(*rep));
	param.initiator_depth = min_t(u8, param.initiator_depth,
				      ev->param.conn.responder_resources);
	param.responder_resources = min_t(u8, param.responder_resources,
					  ev->param.conn.initiator_depth);
	return rdma_accept(id, &param);
}

/*
 * A new path of one of our sessions: the peer end it names (by our id and
 * its own, under the session's key) must be the one we know, and the
 * session must be waiting for a path; a session whose old path we still
 * think up learns here that it died. Like a new connection, @id belongs
 * to the session once attached, and a failure goes through its recovery.
 */
static int conn_passive_resume(struct rdma_cm_id *id, struct rdma_cm_event *ev,
			       const struct xferk_cm_msg *req)
{
	struct xferk_cm_msg rep;
	struct xferk_conn *c;
	int ret;

	c = xferk_conn_find_resumed(be64_to_cpu(req->resume_id),
				    &id->route.addr.dst_addr);
	if (c && (!cm_msg_resumes(req, c) ||
		  !xferk_conn_resume_fresh(c, cm_msg_seq(req)))) {
		xferk_conn_put(c);
		c = NULL;
	}
	if (!c) {
		conn_send_reject(id, XFERK_REJ_STALE);
		return -ESTALE;
	}
	if (!xferk_conn_path_attach(c, cm_msg_seq(req))) {
		/* Its peer made a new path: the one we think up is dead. */
		if (READ_ONCE(c->state) == XFERK_CONN_UP)
			xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_PEER);
		xferk_conn_put(c);
		conn_send_reject(id, XFERK_REJ_RETRY);
		return -EAGAIN;
	}
	spin_lock_irq(&c->path.cm_lock);
	c->path.lanes[0].cm_id = id;
	spin_unlock_irq(&c->path.cm_lock);
	id->context = &c->path.lanes[0];
	complete_all(&c->path.lanes[0].cm_ready);	/* the handler owns @id now */
	ret = conn_rdma_setup(&c->path, id);
	if (ret) {
		conn_send_reject(id, XFERK_REJ_RESOURCES);
		xferk_conn_path_down(c, ret, XFERK_PATH_QP);
		xferk_conn_put(c);
		return 0;
	}
	cm_msg_init_resume(&rep, c, cm_msg_seq(req), 0);
	ret = conn_accept(id, ev, &rep);
	if (ret)
		xferk_conn_path_down(c, ret, XFERK_PATH_QP);
	xferk_conn_put(c);
	return 0;
}

/*
 * A QP joining the path a session of ours has now: named like a new path
 * (both ids, under the session's key), with that path's sequence number
 * and an index below the session's QP count that has no QP yet, once the
 * path's first QP exists. It goes on the session's PD and CQ; @id belongs
 * to the session once attached, and a failure is the path's.
 */
static int conn_passive_join(struct rdma_cm_id *id, struct rdma_cm_event *ev,
			     const struct xferk_cm_msg *req)
{
	struct xferk_lane *l = NULL;
	struct xferk_cm_msg rep;
	struct xferk_conn *c;
	int ret;

	c = xferk_conn_find_resumed(be64_to_cpu(req->resume_id),
				    &id->route.addr.dst_addr);
	if (c && !cm_msg_resumes(req, c)) {
		xferk_conn_put(c);
		c = NULL;
	}
	if (!c) {
		conn_send_reject(id, XFERK_REJ_STALE);
		return -ESTALE;
	}
	mutex_lock(&c->lock);
	if (req->lane < c->path.nr_qps && cm_msg_seq(req) == c->resume_seq &&
	    xferk_conn_qp_live(c) &&
	    !c->path.lanes[req->lane].cm_id) {
		l = &c->path.lanes[req->lane];
		spin_lock_irq(&c->path.cm_lock);
		l->cm_id = id;
		spin_unlock_irq(&c->path.cm_lock);
		id->context = l;
	}
	mutex_unlock(&c->lock);
	if (!l) {
		xferk_conn_put(c);
		conn_send_reject(id, XFERK_REJ_RETRY);
		return -EAGAIN;
	}
	ret = lane_create_qp(&c->path, l, id);
	if (!ret) {
		cm_msg_init_resume(&rep, c, cm_msg_seq(req), l->index);
		ret = conn_accept(id, ev, &rep);
	} else {
		conn_send_reject(id, XFERK_REJ_RESOURCES);
	}
	if (ret)
		xferk_conn_path_down(c, ret, XFERK_PATH_QP);
	xferk_conn_put(c);
	return 0;
}

/*
 * A peer connects to our listener; @id is the new connection's id. A
 * request we refuse outright is rejected and @id destroyed by rdma_cm
 * (non-zero return). Once the connection is published it owns @id, and
 * any later failure goes through its teardown like every other.
 */
static int conn_passive_request(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct xferk_cm_msg *req;
	struct xferk_cm_msg rep;
	struct xferk_conn *c;
	u32 nr_qps;
	int ret;

	req = cm_msg_parse(ev->param.conn.private_data,
			   ev->param.conn.private_data_len);
	if (!req) {
		conn_send_reject(id, XFERK_REJ_MALFORMED);
		return -EPROTO;
	}
	if (be16_to_cpu(req->version) != XFERK_PROTO_VERSION) {
		conn_send_reject(id, XFERK_REJ_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (req->resume_id && req->lane)
		return conn_passive_join(id, ev, req);
	if (req->resume_id)
		return conn_passive_resume(id, ev, req);
	if (atomic_inc_return(&xferk_passive_conns) >
	    READ_ONCE(xferk_max_passive_conns)) {
		atomic_dec(&xferk_passive_conns);
		conn_send_reject(id, XFERK_REJ_BUSY);
		return -EBUSY;
	}
	nr_qps = clamp_t(u32, req->nr_qps, 1, READ_ONCE(xferk_max_peer_qps));
	c = xferk_conn_alloc_rdma(GFP_KERNEL, nr_qps);
	if (!c) {
		atomic_dec(&xferk_passive_conns);
		conn_send_reject(id, XFERK_REJ_RESOURCES);
		return -ENOMEM;
	}
	/* Passive ends live in the listener's namespace. */
	xferk_conn_init(c, &xferk_rdma_transport, &init_net, false);
	c->path.passive = true;	/* counted until its destroy */
	xferk_conn_set_qps(c, nr_qps);
	memcpy(&c->peer, &id->route.addr.dst_addr, sizeof(c->peer));
	if (IS_ERR(xferk_conn_publish(c, be64_to_cpu(req->conn_id)))) {
		/* It crosses a session we initiated to that host, which wins. */
		xferk_conn_put(c);
		atomic_dec(&xferk_passive_conns);
		atomic64_inc(&xferk_stats.conns_crossed);
		conn_send_reject(id, XFERK_REJ_CROSSED);
		return -EALREADY;
	}
	c->path.lanes[0].cm_id = id;
	id->context = &c->path.lanes[0];
	complete_all(&c->path.lanes[0].cm_ready);	/* the handler owns @id now */
	xferk_conn_arm_timer(c, READ_ONCE(xferk_handshake_timeout_ms));

	ret = xferk_dev_attach(&c->path.attach, id->device, &c->qdev);
	if (!ret)
		ret = conn_rdma_setup(&c->path, id);
	if (ret) {
		conn_send_reject(id, XFERK_REJ_RESOURCES);
		xferk_conn_down(c, ret);
		return 0;
	}
	/* Keyed, hence importable, only once its QP's limits are final. */
	get_random_bytes(xferk_conn_key_half(c), 16);
	cm_msg_init(&rep, c, XFERK_PROTO_VERSION, xferk_conn_key_half(c));
	rep.nr_qps = nr_qps;
	conn_set_peer(c, req, rep.key_half);
	ret = conn_accept(id, ev, &rep);
	if (ret)
		xferk_conn_down(c, ret);
	return 0;
}

/* An id's context is the lane it is the cm_id of; the listener's is NULL. */
int xferk_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct xferk_lane *l = id->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return conn_passive_request(id, ev);
	if (!l)
		return listener_event(id, ev);
	if (l->index)
		lane_event(l, id, ev);
	else if (xferk_path_conn(l->path)->active)
		conn_active_event(xferk_path_conn(l->path), id, ev);
	else
		conn_passive_event(xferk_path_conn(l->path), ev);
	return 0;
}
