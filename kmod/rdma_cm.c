// SPDX-License-Identifier: GPL-2.0
/*
 * The rdma_cm handshake: the events of every cm_id (an end we initiated,
 * an end a peer initiated, a QP joining a path) and the requests the
 * listener receives (a new session, a session's new path, a QP joining a
 * path). rdma_cm runs one handler at a time per cm_id. The private data,
 * and what a reply or reject means to the session, are the session's
 * (conn_handshake.c): this file never reads a session's ids or key.
 * Locking: conn->path.cm_lock guards a lane's cm_id (the QP event handler
 * takes it in atomic context).
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
 * the new QP to that session and answers likewise. It rejects a resume of
 * a session it does not know (a new instance, or a forgery) as stale, and
 * one whose old path it is still tearing down as "retry". Two hosts that open a
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

/* ---- handshake ---- */

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
		xferk_handshake_request(c, l->index, &req);
		conn_param_init(&param, id->device, &req, sizeof(req));
		ret = rdma_connect_locked(id, &param);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (c->active) {	/* the acceptor's reply, checked */
			const struct rdma_conn_param *cp = &ev->param.conn;

			ret = xferk_handshake_replied(c, l->index,
						      cp->private_data,
						      cp->private_data_len);
			if (ret)
				break;
		}
		xferk_conn_lane_up(c, l);
		return;
	case RDMA_CM_EVENT_REJECTED:
		if (c->active) {
			xferk_handshake_rejected(c, conn_reject_errno(id, ev));
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
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (!xferk_handshake_connecting(c))
			return;
		ret = c->path.attach.dev ? 0 :
		      xferk_dev_attach(&c->path.attach, id->device, &c->qdev);
		if (!ret)
			ret = rdma_resolve_route(id, XFERK_RESOLVE_MS);
		if (ret)
			xferk_conn_path_down(c, ret, XFERK_PATH_QP);
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (!xferk_handshake_connecting(c))
			return;
		ret = conn_rdma_setup(&c->path, id);
		if (ret) {
			xferk_conn_path_down(c, ret, XFERK_PATH_QP);
			return;
		}
		xferk_handshake_request(c, 0, &req);
		conn_param_init(&param, id->device, &req, sizeof(req));
		ret = rdma_connect_locked(id, &param);
		if (ret)
			xferk_conn_path_down(c, ret, XFERK_PATH_QP);
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		ret = xferk_handshake_replied(c, 0, ev->param.conn.private_data,
					      ev->param.conn.private_data_len);
		if (ret) {
			xferk_conn_path_down(c, ret, XFERK_PATH_QP);
			return;
		}
		xferk_conn_lane_up(c, &c->path.lanes[0]);
		lanes_start(c, id);
		return;
	case RDMA_CM_EVENT_REJECTED:
		xferk_handshake_rejected(c, conn_reject_errno(id, ev));
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

	c = xferk_handshake_find(req, &id->route.addr.dst_addr, true);
	if (!c) {
		conn_send_reject(id, XFERK_REJ_STALE);
		return -ESTALE;
	}
	if (!xferk_conn_path_attach(c, xferk_handshake_seq(req))) {
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
	xferk_handshake_reply_resume(c, req, &rep);
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

	c = xferk_handshake_find(req, &id->route.addr.dst_addr, false);
	if (!c) {
		conn_send_reject(id, XFERK_REJ_STALE);
		return -ESTALE;
	}
	mutex_lock(&c->lock);
	if (xferk_handshake_joins_locked(c, req) && xferk_conn_qp_live(c) &&
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
		xferk_handshake_reply_resume(c, req, &rep);
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

	req = xferk_handshake_parse(ev->param.conn.private_data,
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
	xferk_handshake_reply_new(c, req, &rep);
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
