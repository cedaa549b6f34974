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
#include <rdma/ib_cm.h>
#include <rdma/rdma_cm.h>
#include "fault.h"
#include "rdma.h"
#include "stats.h"
#include "transport.h"
#include "wire.h"

/* Fault injection: ends miss the next N disconnects of their peers. */
atomic_t xferk_fault_ignore_disconnects = ATOMIC_INIT(0);

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
 * under p->lock first, then waits for cm_ready: taken here under that
 * lock before the cm_id exists, so a dying path makes none.
 */
static void lane_start(struct xferk_path *p, struct xferk_lane *l,
		       struct rdma_cm_id *first, struct sockaddr_storage *src)
{
	struct rdma_cm_id *id;
	bool ok;
	int ret;

	mutex_lock(p->lock);
	ok = p->events->qp_live(p) && !l->cm_id;
	if (ok)
		reinit_completion(&l->cm_ready);
	mutex_unlock(p->lock);
	if (!ok)
		return;
	id = rdma_create_id(first->route.addr.dev_addr.net, xferk_cm_handler,
			    l, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		complete_all(&l->cm_ready);
		p->events->path_down(p, -ENOMEM, XFERK_PATH_QP);
		return;
	}
	spin_lock_irq(&p->cm_lock);
	l->cm_id = id;
	spin_unlock_irq(&p->cm_lock);
	ret = rdma_resolve_addr(id, (struct sockaddr *)src,
				(struct sockaddr *)&first->route.addr.dst_addr,
				XFERK_RESOLVE_MS);
	/* The handler's alone with @id now; teardown may destroy it. */
	complete_all(&l->cm_ready);
	if (ret)
		p->events->path_down(p, ret, XFERK_PATH_QP);
}

/*
 * The path's first QP (@first) is established: the others join it, to the
 * same peer address in the same namespace.
 */
static void lanes_start(struct xferk_path *p, struct rdma_cm_id *first)
{
	struct sockaddr_storage src = first->route.addr.src_addr;
	u32 i;

	if (src.ss_family == AF_INET)
		((struct sockaddr_in *)&src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&src)->sin6_port = 0;
	for (i = 1; i < p->nr_qps; i++)
		lane_start(p, &p->lanes[i], first, &src);
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
static void active_path_failed(struct xferk_path *p, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		p->events->path_down(p, -EHOSTUNREACH, XFERK_PATH_QP);
		return;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		p->events->path_down(p, -ECONNREFUSED, XFERK_PATH_QP);
		return;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		p->events->down(p, -ENODEV);
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (!disconnect_missed())
			p->events->path_down(p, -ECONNRESET, XFERK_PATH_PEER);
		return;
	default:
		return;
	}
}

/* The events that end a path (or session) of an end a peer initiated. */
static void passive_path_failed(struct xferk_path *p, struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		p->events->down(p, -ENODEV);
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (disconnect_missed())
			return;
		fallthrough;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		p->events->path_down(p, -ECONNRESET, XFERK_PATH_PEER);
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
	struct xferk_path *p = l->path;
	struct rdma_conn_param param;
	struct xferk_cm_msg req;
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, XFERK_RESOLVE_MS);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = lane_create_qp(p, l, id);
		if (ret)
			break;
		p->events->request(p, l->index, &req);
		conn_param_init(&param, id->device, &req, sizeof(req));
		ret = rdma_connect_locked(id, &param);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (!p->passive) {	/* the acceptor's reply, checked */
			const struct rdma_conn_param *cp = &ev->param.conn;

			ret = p->events->replied(p, l->index, cp->private_data,
						 cp->private_data_len);
			if (ret)
				break;
		}
		p->events->lane_up(p, l);
		return;
	case RDMA_CM_EVENT_REJECTED:
		if (!p->passive) {
			p->events->rejected(p, conn_reject_errno(id, ev));
			return;
		}
		fallthrough;
	default:
		if (!p->passive)
			active_path_failed(p, ev);
		else
			passive_path_failed(p, ev);
		return;
	}
	if (ret)
		p->events->path_down(p, ret, XFERK_PATH_QP);
}

/*
 * Events of an end we initiated. The connection may be going down
 * concurrently: then nothing is created, and teardown, which destroys the
 * cm_id before anything else, frees what was.
 */
static void conn_active_event(struct xferk_path *p, struct rdma_cm_id *id,
			      struct rdma_cm_event *ev)
{
	struct rdma_conn_param param;
	struct xferk_cm_msg req;
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (!p->events->connecting(p))
			return;
		ret = p->attach.dev ? 0 :
		      xferk_dev_attach(&p->attach, id->device, p->qdev);
		if (!ret)
			ret = rdma_resolve_route(id, XFERK_RESOLVE_MS);
		if (ret)
			p->events->path_down(p, ret, XFERK_PATH_QP);
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (!p->events->connecting(p))
			return;
		ret = conn_rdma_setup(p, id);
		if (ret) {
			p->events->path_down(p, ret, XFERK_PATH_QP);
			return;
		}
		p->events->request(p, 0, &req);
		conn_param_init(&param, id->device, &req, sizeof(req));
		ret = rdma_connect_locked(id, &param);
		if (ret)
			p->events->path_down(p, ret, XFERK_PATH_QP);
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		ret = p->events->replied(p, 0, ev->param.conn.private_data,
					 ev->param.conn.private_data_len);
		if (ret) {
			p->events->path_down(p, ret, XFERK_PATH_QP);
			return;
		}
		p->events->lane_up(p, &p->lanes[0]);
		lanes_start(p, id);
		return;
	case RDMA_CM_EVENT_REJECTED:
		p->events->rejected(p, conn_reject_errno(id, ev));
		return;
	default:
		active_path_failed(p, ev);
		return;
	}
}

/* Events of an end a peer initiated, after its request. */
static void conn_passive_event(struct xferk_path *p, struct rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
		p->events->lane_up(p, &p->lanes[0]);
	else
		passive_path_failed(p, ev);
}

/*
 * A connect request the listener received, handed to the sessions layer
 * (struct xferk_dev_user.request), which answers it through the
 * xferk_cm_req_*() calls below, within the request's handler.
 */
struct xferk_cm_req {
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
};

/* Where the request came from. */
const struct sockaddr_storage *xferk_cm_req_peer(const struct xferk_cm_req *r)
{
	return &r->id->route.addr.dst_addr;
}

/* Refuses the request with @why (never an errno). */
void xferk_cm_req_reject(struct xferk_cm_req *r, enum xferk_rej_reason why)
{
	struct xferk_cm_rej rej = {
		.magic = cpu_to_be32(XFERK_CM_MAGIC),
		.version = cpu_to_be16(XFERK_PROTO_VERSION),
		.reason = cpu_to_be32(why),
	};

	atomic64_inc(&xferk_stats.conns_rejected);
	rdma_reject(r->id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
}

/*
 * The request's cm_id becomes lane @l's of path @p: its handler's from
 * now on, and the session's teardown destroys it. For a path's first QP,
 * the one its teardown waits for (cm_ready).
 */
void xferk_cm_req_take(struct xferk_cm_req *r, struct xferk_path *p,
		       struct xferk_lane *l)
{
	spin_lock_irq(&p->cm_lock);
	l->cm_id = r->id;
	spin_unlock_irq(&p->cm_lock);
	r->id->context = l;
	if (!l->index)
		complete_all(&l->cm_ready);	/* the handler owns the id now */
}

/* Path @p's device (attached once), CQ and first QP, on the request's. */
int xferk_cm_req_path(struct xferk_cm_req *r, struct xferk_path *p)
{
	int ret;

	ret = p->attach.dev ? 0 :
	      xferk_dev_attach(&p->attach, r->id->device, p->qdev);
	return ret ?: conn_rdma_setup(p, r->id);
}

/* Lane @l's QP, joining path @p, on the request's cm_id. */
int xferk_cm_req_lane(struct xferk_cm_req *r, struct xferk_path *p,
		      struct xferk_lane *l)
{
	return lane_create_qp(p, l, r->id);
}

/* Accepts the request with @rep, within what the requester offered. */
int xferk_cm_req_accept(struct xferk_cm_req *r, const struct xferk_cm_msg *rep)
{
	struct rdma_conn_param param;

	conn_param_init(&param, r->id->device, rep, sizeof(*rep));
	param.initiator_depth = min_t(u8, param.initiator_depth,
				      r->ev->param.conn.responder_resources);
	param.responder_resources = min_t(u8, param.responder_resources,
					  r->ev->param.conn.initiator_depth);
	return rdma_accept(r->id, &param);
}

/* An id's context is the lane it is the cm_id of; the listener's is NULL. */
int xferk_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct xferk_lane *l = id->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		struct xferk_cm_req r = { .id = id, .ev = ev };

		/* Non-zero: refused, and rdma_cm destroys @id. */
		return xferk_dev_request(&r, ev->param.conn.private_data,
					 ev->param.conn.private_data_len);
	}
	if (!l)
		return listener_event(id, ev);
	if (l->index)
		lane_event(l, id, ev);
	else if (!l->path->passive)
		conn_active_event(l->path, id, ev);
	else
		conn_passive_event(l->path, ev);
	return 0;
}
