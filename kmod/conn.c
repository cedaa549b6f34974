// SPDX-License-Identifier: GPL-2.0
/*
 * Host-wide connections over in-kernel rdma_cm, one RC QP each.
 *
 * A connection is shared by every process on the host that talks to the
 * same peer address (RDS and rtrs do the same). It comes up on the first
 * XFERK_IOC_CONNECT or when a peer connects to our listener, and stays up
 * until the peer disconnects, an error occurs, its device goes away or the
 * module unloads. Every way down goes through xferk_conn_down() and one
 * teardown work in one fixed order:
 *
 *   1. stop posting: fail the chunks still waiting for a send slot
 *   2. disconnect: the QP moves to the error state and flushes every
 *      posted work request
 *   3. wait, bounded, until every posted chunk has its completion
 *   4. revoke the connection's exports (their rkeys die)
 *   5. destroy QP, CQ, PD and cm_id; chunks that never completed are now
 *      physically dead with their QP and are completed as flushed
 *
 * Handshake: the connect request carries struct xferk_cm_req (magic,
 * protocol version, capabilities, the connection cookie); a mismatch is
 * rejected with struct xferk_cm_rej, which the initiator turns into an
 * errno. QPs get bounded ack timeout and retry counts (never the infinite
 * rnr_retry 7), so every posted work request completes in bounded time
 * while the device works.
 */
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include <rdma/ib_cm.h>
#include "xferk.h"

#define XFERK_CM_MAGIC		0x5846524bU	/* "XFRK" */
#define XFERK_PROTO_VERSION	1
#define XFERK_PROTO_CAPS	0ULL
#define XFERK_MAX_RD_ATOMIC	16
#define XFERK_ACK_TIMEOUT	17	/* 4.096 us * 2^17 = 0.54 s per try */
#define XFERK_RETRY_COUNT	6
#define XFERK_RNR_RETRY		6	/* 7 would mean forever */
#define XFERK_CHUNK_MAX_BYTES	SZ_1M

struct xferk_cm_req {
	__be32 magic;
	__be16 version;
	__be16 reserved;
	__be64 caps;
	__be64 cookie;
};

struct xferk_cm_rep {
	__be32 magic;
	__be16 version;
	__be16 reserved;
	__be64 caps;
};

struct xferk_cm_rej {
	__be32 magic;
	__be16 version;
	__be16 reserved;
	__be32 reason;		/* positive errno */
};

DEFINE_MUTEX(xferk_conns_lock);	/* xferk_conns and each conn's node */
LIST_HEAD(xferk_conns);
static struct rdma_cm_id *xferk_listener;

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
static struct workqueue_struct *xferk_conn_wq;
static atomic_t xferk_next_conn_id = ATOMIC_INIT(0);

static const struct xferk_transport xferk_rdma_transport;

void xferk_conn_get(struct xferk_conn *c)
{
	kref_get(&c->ref);
}

static void conn_release(struct kref *ref)
{
	struct xferk_conn *c = container_of(ref, struct xferk_conn, ref);

	WARN_ON(!list_empty(&c->pending) || !list_empty(&c->posted));
	WARN_ON(!list_empty(&c->exports));
	if (c->qdev)
		xferk_qdev_put(c->qdev);
	kfree(c);
}

void xferk_conn_put(struct xferk_conn *c)
{
	kref_put(&c->ref, conn_release);
}

static void conn_teardown(struct work_struct *work);

/* Initialization shared by both transports; the list holds the first ref. */
void xferk_conn_init(struct xferk_conn *c, const struct xferk_transport *t)
{
	kref_init(&c->ref);
	INIT_LIST_HEAD(&c->node);
	c->transport = t;
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
	c->credits = XFERK_QP_CTXS;
	c->max_chunk_pages = XFERK_MAX_SGE;
	c->max_chunk_bytes = XFERK_CHUNK_MAX_BYTES;
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
		c->state = XFERK_CONN_DOWN;
		c->error = error;
		first = true;
	}
	mutex_unlock(&c->lock);
	if (!first)
		return;
	complete_all(&c->established);
	queue_work(xferk_conn_wq, &c->teardown_work);
}

/* Posts pending chunks while there are send slots. Called with c->lock. */
static void conn_kick_locked(struct xferk_conn *c, struct list_head *failed)
{
	struct xferk_chunk *ch;

	lockdep_assert_held(&c->lock);
	while (c->state == XFERK_CONN_UP && c->credits &&
	       !list_empty(&c->pending)) {
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

/*
 * The connection is established. Chunks may already wait for it: an
 * importer can queue on the accepting end before its ESTABLISHED event.
 */
static void conn_set_up(struct xferk_conn *c)
{
	LIST_HEAD(failed);

	mutex_lock(&c->lock);
	if (c->state == XFERK_CONN_CONNECTING) {
		c->state = XFERK_CONN_UP;
		atomic64_inc(&xferk_stats.peers_connected);
		conn_kick_locked(c, &failed);
	}
	mutex_unlock(&c->lock);
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
 * @error: 0 or a negative errno (-ECANCELED: flushed)
 *
 * Returns the send slot, posts what waits for it, and completes the chunk.
 * A chunk the teardown already reclaimed is left to it. An error other
 * than a flush takes the connection down: the QP is in the error state.
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
	mutex_lock(&c->lock);
	if (!ch->posted) {
		mutex_unlock(&c->lock);
		return;
	}
	list_del_init(&ch->node);
	ch->posted = false;
	c->credits++;
	if (!--c->outstanding)
		wake_up_all(&c->idle);
	conn_kick_locked(c, &failed);
	mutex_unlock(&c->lock);
	c->transport->unpost(c, ch);
	if (error && error != -ECANCELED)
		xferk_conn_down(c, error);
	xferk_chunk_complete(ch, error);
	complete_failed(&failed);
}

/*
 * The other end of @c on this host (loopback), or NULL; with
 * xferk_conns_lock held.
 */
static struct xferk_conn *conn_local_sibling(struct xferk_conn *c)
{
	struct xferk_conn *s;

	lockdep_assert_held(&xferk_conns_lock);
	list_for_each_entry(s, &xferk_conns, node)
		if (s != c && s->cookie == c->cookie && s->active != c->active)
			return s;
	return NULL;
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
	struct xferk_chunk *ch, *tmp;
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

	/* 2.-3. Flush what was posted and wait for it, bounded. */
	c->transport->disconnect(c);
	if (!wait_event_timeout(c->idle, READ_ONCE(c->outstanding) == 0,
				msecs_to_jiffies(xferk_flush_timeout_ms)))
		pr_warn("xferk: conn %u: %u work requests did not flush; destroying the QP\n",
			c->id, READ_ONCE(c->outstanding));

	/*
	 * Whatever is still posted is reclaimed here: once the device is
	 * quiesced (QP destroyed, no callback running) it cannot touch
	 * memory, and only then are those chunks completed.
	 */
	mutex_lock(&c->lock);
	list_splice_init(&c->posted, &chunks);
	list_for_each_entry(ch, &chunks, node)
		ch->posted = false;
	c->outstanding = 0;
	mutex_unlock(&c->lock);
	c->transport->quiesce(c);
	list_for_each_entry_safe(ch, tmp, &chunks, node) {
		list_del_init(&ch->node);
		c->transport->unpost(c, ch);
		xferk_chunk_complete(ch, -ECANCELED);
	}

	/* 4. Revoke exports, 5. free the rest. */
	xferk_conn_revoke_exports(c);
	c->transport->destroy(c);

	mutex_lock(&xferk_conns_lock);
	list_del_init(&c->node);
	mutex_unlock(&xferk_conns_lock);
	xferk_conn_put(c);
}

/* ---- RDMA transport ---- */

static int wc_errno(enum ib_wc_status status)
{
	switch (status) {
	case IB_WC_SUCCESS:
		return 0;
	case IB_WC_WR_FLUSH_ERR:
		return -ECANCELED;
	case IB_WC_REM_ACCESS_ERR:
	case IB_WC_LOC_PROT_ERR:
		return -EACCES;
	case IB_WC_RETRY_EXC_ERR:
	case IB_WC_RNR_RETRY_EXC_ERR:
		return -ETIMEDOUT;
	default:
		return -EREMOTEIO;
	}
}

static void conn_rdma_chunk_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_chunk *ch = container_of(wc->wr_cqe, struct xferk_chunk,
					      cqe);
	struct xferk_conn *c = cq->cq_context;

	if (wc->status != IB_WC_SUCCESS && wc->status != IB_WC_WR_FLUSH_ERR)
		pr_debug("xferk: conn %u: chunk failed: %s\n", c->id,
			 ib_wc_status_msg(wc->status));
	xferk_conn_chunk_done(c, ch, wc_errno(wc->status));
}

static enum dma_data_direction chunk_dir(const struct xferk_chunk *ch)
{
	return ch->opcode == XFERK_OP_WRITE ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
}

static int conn_rdma_post(struct xferk_conn *c, struct xferk_chunk *ch)
{
	struct ib_device *dev = c->pd->device;
	struct xferk_region *r = ch->region;
	u64 uaddr = r->addr + ch->offset;
	unsigned long first = (uaddr >> PAGE_SHIFT) - (r->addr >> PAGE_SHIFT);
	unsigned long npages = DIV_ROUND_UP(offset_in_page(uaddr) + ch->len,
					    PAGE_SIZE);
	struct scatterlist *sg;
	int i, ret;

	ret = sg_alloc_table_from_pages(&ch->sgt, r->pages + first, npages,
					offset_in_page(uaddr), ch->len,
					GFP_KERNEL);
	if (ret)
		return ret;
	ch->nr_sge = ib_dma_map_sg(dev, ch->sgt.sgl, ch->sgt.orig_nents,
				   chunk_dir(ch));
	/* The split guarantees that the pages fit one work request. */
	if (!ch->nr_sge || WARN_ON_ONCE(ch->nr_sge > c->max_chunk_pages)) {
		ret = -EIO;
		goto err_unmap;
	}
	for_each_sg(ch->sgt.sgl, sg, ch->nr_sge, i) {
		ch->sge[i].addr = sg_dma_address(sg);
		ch->sge[i].length = sg_dma_len(sg);
		ch->sge[i].lkey = c->pd->local_dma_lkey;
	}
	ch->cqe.done = conn_rdma_chunk_done;
	ch->wr = (struct ib_rdma_wr) {
		.wr.wr_cqe = &ch->cqe,
		.wr.sg_list = ch->sge,
		.wr.num_sge = ch->nr_sge,
		.wr.opcode = ch->opcode == XFERK_OP_WRITE ? IB_WR_RDMA_WRITE :
							    IB_WR_RDMA_READ,
		.wr.send_flags = IB_SEND_SIGNALED,
		.remote_addr = ch->remote_addr,
		.rkey = ch->remote->rkey,
	};
	ret = ib_post_send(c->qp, &ch->wr.wr, NULL);
	if (ret)
		goto err_unmap;
	return 0;

err_unmap:
	if (ch->nr_sge)
		ib_dma_unmap_sg(dev, ch->sgt.sgl, ch->sgt.orig_nents,
				chunk_dir(ch));
	sg_free_table(&ch->sgt);
	return ret;
}

static void conn_rdma_unpost(struct xferk_conn *c, struct xferk_chunk *ch)
{
	ib_dma_unmap_sg(c->pd->device, ch->sgt.sgl, ch->sgt.orig_nents,
			chunk_dir(ch));
	sg_free_table(&ch->sgt);
}

static void conn_rdma_disconnect(struct xferk_conn *c)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	if (c->cm_id)
		rdma_disconnect(c->cm_id);
	/* Also for a half-connected QP: error state flushes everything. */
	if (c->qp)
		ib_modify_qp(c->qp, &attr, IB_QP_STATE);
}

/* QP first, then CQ: ib_free_cq() waits for a running completion callback. */
static void conn_rdma_quiesce(struct xferk_conn *c)
{
	if (c->qp)
		rdma_destroy_qp(c->cm_id);
	if (c->cq)
		ib_free_cq(c->cq);
	c->qp = NULL;
	c->cq = NULL;
}

static void conn_rdma_destroy(struct xferk_conn *c)
{
	if (c->pd)
		ib_dealloc_pd(c->pd);
	if (c->cm_id)
		rdma_destroy_id(c->cm_id);
	c->pd = NULL;
	c->cm_id = NULL;
}

static int conn_rdma_export(struct xferk_conn *c, struct xferk_export *e)
{
	int access = IB_ACCESS_LOCAL_WRITE;
	struct ib_mr *mr;

	if (e->access & XFERK_ACCESS_REMOTE_READ)
		access |= IB_ACCESS_REMOTE_READ;
	if (e->access & XFERK_ACCESS_REMOTE_WRITE)
		access |= IB_ACCESS_REMOTE_WRITE;
	/* Registered in this connection's PD: only this peer's QP can use it. */
	mr = ib_reg_user_mr(c->pd, e->addr, e->len, e->addr, access);
	if (IS_ERR(mr))
		return PTR_ERR(mr);
	e->mr = mr;
	e->iova = e->addr;
	e->rkey = mr->rkey;
	return 0;
}

static void conn_rdma_unexport(struct xferk_conn *c, struct xferk_export *e)
{
	ib_dereg_mr(e->mr);
	e->mr = NULL;
}

static const struct xferk_transport xferk_rdma_transport = {
	.name = "rdma",
	.post = conn_rdma_post,
	.unpost = conn_rdma_unpost,
	.export = conn_rdma_export,
	.unexport = conn_rdma_unexport,
	.disconnect = conn_rdma_disconnect,
	.quiesce = conn_rdma_quiesce,
	.destroy = conn_rdma_destroy,
};

/* PD, CQ and QP for a connection on @id's device. */
static int conn_rdma_create_qp(struct xferk_conn *c, struct rdma_cm_id *id)
{
	struct ib_device *dev = id->device;
	struct ib_qp_init_attr init = {};
	int ret;

	c->qdev = xferk_qdev_get(dev);
	if (!c->qdev)
		return -ENOMEM;
	c->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(c->pd)) {
		ret = PTR_ERR(c->pd);
		c->pd = NULL;
		return ret;
	}
	/* One CQE per chunk, + 1 for a drain marker. */
	c->cq = ib_alloc_cq(dev, c, XFERK_QP_CTXS + 1, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(c->cq)) {
		ret = PTR_ERR(c->cq);
		c->cq = NULL;
		return ret;
	}
	init.qp_context = c;
	init.send_cq = c->cq;
	init.recv_cq = c->cq;
	init.qp_type = IB_QPT_RC;
	init.sq_sig_type = IB_SIGNAL_REQ_WR;
	init.port_num = id->port_num;
	init.cap.max_send_wr = XFERK_QP_CTXS + 1;	/* + 1 for a drain */
	init.cap.max_recv_wr = 1;			/* drain only */
	init.cap.max_send_sge = min_t(u32, dev->attrs.max_send_sge, XFERK_MAX_SGE);
	init.cap.max_recv_sge = 1;
	ret = rdma_create_qp(id, c->pd, &init);
	if (ret)
		return ret;
	c->qp = id->qp;
	c->max_chunk_pages = min3(init.cap.max_send_sge,
				  (u32)dev->attrs.max_sge_rd, (u32)XFERK_MAX_SGE);
	c->max_chunk_bytes = XFERK_CHUNK_MAX_BYTES;
	return 0;
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
	return -(int)clamp_t(u32, be32_to_cpu(rej->reason), 1, MAX_ERRNO);
}

static int conn_active_event(struct xferk_conn *c, struct rdma_cm_id *id,
			     struct rdma_cm_event *ev)
{
	struct rdma_conn_param param;
	struct xferk_cm_req req;
	const struct xferk_cm_rep *rep;
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, 5000);
		if (ret)
			xferk_conn_down(c, ret);
		return 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = conn_rdma_create_qp(c, id);
		if (!ret)
			ret = rdma_set_ack_timeout(id, XFERK_ACK_TIMEOUT);
		if (ret) {
			xferk_conn_down(c, ret);
			return 0;
		}
		req = (struct xferk_cm_req) {
			.magic = cpu_to_be32(XFERK_CM_MAGIC),
			.version = cpu_to_be16(xferk_fault_connect_version ?:
					       XFERK_PROTO_VERSION),
			.caps = cpu_to_be64(XFERK_PROTO_CAPS),
			.cookie = cpu_to_be64(c->cookie),
		};
		conn_param_init(&param, id->device, &req, sizeof(req));
		ret = rdma_connect_locked(id, &param);
		if (ret)
			xferk_conn_down(c, ret);
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		rep = ev->param.conn.private_data;
		if (!rep || ev->param.conn.private_data_len < sizeof(*rep) ||
		    be32_to_cpu(rep->magic) != XFERK_CM_MAGIC ||
		    be16_to_cpu(rep->version) != XFERK_PROTO_VERSION) {
			xferk_conn_down(c, -EPROTO);
			return 0;
		}
		conn_set_up(c);
		return 0;
	case RDMA_CM_EVENT_REJECTED:
		xferk_conn_down(c, conn_reject_errno(id, ev));
		return 0;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		xferk_conn_down(c, -EHOSTUNREACH);
		return 0;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		xferk_conn_down(c, ev->status ?: -ECONNREFUSED);
		return 0;
	default:
		return -1;	/* not an active-side event */
	}
}

static int conn_send_reject(struct rdma_cm_id *id, int error)
{
	struct xferk_cm_rej rej = {
		.magic = cpu_to_be32(XFERK_CM_MAGIC),
		.version = cpu_to_be16(XFERK_PROTO_VERSION),
		.reason = cpu_to_be32(-error),
	};

	rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
	return error;
}

/* A peer connects to our listener; @id is the new connection's id. */
static int conn_passive_request(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct xferk_cm_req *req = ev->param.conn.private_data;
	struct xferk_cm_rep rep = {
		.magic = cpu_to_be32(XFERK_CM_MAGIC),
		.version = cpu_to_be16(XFERK_PROTO_VERSION),
		.caps = cpu_to_be64(XFERK_PROTO_CAPS),
	};
	struct rdma_conn_param param;
	struct xferk_conn *c;
	int ret;

	if (!req || ev->param.conn.private_data_len < sizeof(*req) ||
	    be32_to_cpu(req->magic) != XFERK_CM_MAGIC)
		return conn_send_reject(id, -EPROTO);
	if (be16_to_cpu(req->version) != XFERK_PROTO_VERSION)
		return conn_send_reject(id, -EPROTONOSUPPORT);

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return conn_send_reject(id, -ENOMEM);
	xferk_conn_init(c, &xferk_rdma_transport);
	c->cookie = be64_to_cpu(req->cookie);
	memcpy(&c->peer, &id->route.addr.dst_addr, sizeof(c->peer));
	ret = conn_rdma_create_qp(c, id);
	if (!ret)
		ret = rdma_set_ack_timeout(id, XFERK_ACK_TIMEOUT);
	if (ret)
		goto err;
	conn_param_init(&param, id->device, &rep, sizeof(rep));
	param.initiator_depth = min_t(u8, param.initiator_depth,
				      ev->param.conn.responder_resources);
	param.responder_resources = min_t(u8, param.responder_resources,
					  ev->param.conn.initiator_depth);
	/*
	 * Listed before the accept goes out: the initiator may import a
	 * token for this end as soon as it sees ESTABLISHED.
	 */
	c->cm_id = id;
	id->context = c;
	mutex_lock(&xferk_conns_lock);
	list_add_tail(&c->node, &xferk_conns);
	mutex_unlock(&xferk_conns_lock);
	ret = rdma_accept(id, &param);
	if (!ret)
		return 0;
	mutex_lock(&xferk_conns_lock);
	list_del(&c->node);
	mutex_unlock(&xferk_conns_lock);
	id->context = NULL;

err:
	/* The CM destroys @id when we return non-zero: free the rest here. */
	if (c->qp)
		rdma_destroy_qp(id);
	if (c->cq)
		ib_free_cq(c->cq);
	if (c->pd)
		ib_dealloc_pd(c->pd);
	kfree(c);
	return conn_send_reject(id, ret);
}

static int xferk_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct xferk_conn *c = id->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return conn_passive_request(id, ev);
	if (!c)
		return 0;	/* the listener itself */
	if (c->active && conn_active_event(c, id, ev) == 0)
		return 0;
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		conn_set_up(c);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		xferk_conn_down(c, -ECONNRESET);
		break;
	default:
		break;
	}
	return 0;
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

/* Up or coming up, and (loopback) its other end is not going down. */
static bool conn_usable(struct xferk_conn *c)
{
	struct xferk_conn *sibling;

	if (READ_ONCE(c->state) == XFERK_CONN_DOWN)
		return false;
	sibling = conn_local_sibling(c);
	return !sibling || READ_ONCE(sibling->state) != XFERK_CONN_DOWN;
}

/* A live RDMA connection to @peer's host, preferring one we initiated. */
static struct xferk_conn *conn_find_peer(const struct sockaddr_storage *peer)
{
	struct xferk_conn *c, *found = NULL;

	lockdep_assert_held(&xferk_conns_lock);
	list_for_each_entry(c, &xferk_conns, node) {
		if (c->transport != &xferk_rdma_transport ||
		    !same_host(&c->peer, peer) || !conn_usable(c))
			continue;
		if (!found || (c->active && !found->active))
			found = c;
	}
	if (found)
		xferk_conn_get(found);
	return found;
}

/**
 * xferk_conn_find_importer() - the end that posts to a token's exporter
 * @via: the connection handle the importer gave
 * @cookie: the token's connection cookie
 * @exporter_active: the side of the exporting end
 *
 * That is the live local end of the token's connection opposite the
 * exporter's (a null peer is both ends, and must be @via itself). A token
 * exported to another host names no such end: only the two ends of a
 * connection know its cookie. Addresses are not compared: a host may reach
 * its peer from another of its addresses than the peer sees.
 *
 * Return: the end with a reference, or NULL.
 */
struct xferk_conn *xferk_conn_find_importer(struct xferk_conn *via, u64 cookie,
					    bool exporter_active)
{
	struct xferk_conn *c, *found = NULL;

	if (via->transport == &xferk_null_transport) {
		if (via->cookie != cookie)
			return NULL;
		xferk_conn_get(via);
		return via;
	}
	mutex_lock(&xferk_conns_lock);
	list_for_each_entry(c, &xferk_conns, node) {
		if (c->transport == &xferk_rdma_transport && c->cookie == cookie &&
		    c->active != exporter_active &&
		    READ_ONCE(c->state) != XFERK_CONN_DOWN) {
			found = c;
			xferk_conn_get(found);
			break;
		}
	}
	mutex_unlock(&xferk_conns_lock);
	return found;
}

/**
 * xferk_conn_connect() - a connection to a peer host, shared host-wide
 * @peer: the peer's listener address
 * @timeout_ms: bound for resolution and handshake
 *
 * Return: the connection, up, with a reference; or ERR_PTR: -EHOSTUNREACH,
 * -ECONNREFUSED, -ETIMEDOUT, -EPROTONOSUPPORT (protocol version refused by
 * the peer), -EPROTO, -ECONNRESET, -EINTR (fatal signal), -ENOMEM.
 */
struct xferk_conn *xferk_conn_connect(const struct sockaddr_storage *peer,
				      unsigned int timeout_ms)
{
	struct rdma_cm_id *id;
	struct xferk_conn *c;
	long left;
	int ret;

	mutex_lock(&xferk_conns_lock);
	c = conn_find_peer(peer);
	if (!c) {
		c = kzalloc(sizeof(*c), GFP_KERNEL);
		if (!c) {
			mutex_unlock(&xferk_conns_lock);
			return ERR_PTR(-ENOMEM);
		}
		xferk_conn_init(c, &xferk_rdma_transport);
		c->active = true;
		c->cookie = get_random_u64();
		c->peer = *peer;
		id = rdma_create_id(&init_net, xferk_cm_handler, c, RDMA_PS_TCP,
				    IB_QPT_RC);
		if (IS_ERR(id)) {
			mutex_unlock(&xferk_conns_lock);
			kfree(c);
			return ERR_CAST(id);
		}
		c->cm_id = id;
		list_add_tail(&c->node, &xferk_conns);
		xferk_conn_get(c);	/* the caller's */
		mutex_unlock(&xferk_conns_lock);
		ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)peer,
					timeout_ms);
		if (ret)
			xferk_conn_down(c, ret);
	} else {
		mutex_unlock(&xferk_conns_lock);
	}

	left = wait_for_completion_killable_timeout(&c->established,
						    msecs_to_jiffies(timeout_ms));
	mutex_lock(&c->lock);
	ret = c->state == XFERK_CONN_UP ? 0 : c->error;
	mutex_unlock(&c->lock);
	if (left <= 0 && !ret) {
		ret = left ? -EINTR : -ETIMEDOUT;
		xferk_conn_down(c, ret);
	}
	if (ret) {
		xferk_conn_put(c);
		return ERR_PTR(ret ?: -ECONNREFUSED);
	}
	return c;
}

/* ---- device removal ---- */

static int xferk_ib_add(struct ib_device *dev)
{
	return 0;
}

/*
 * Our client is removed before rdma_cm's (reverse registration order):
 * tear down every connection on @dev now, synchronously.
 */
static void xferk_ib_remove(struct ib_device *dev, void *client_data)
{
	struct xferk_conn *c;

	mutex_lock(&xferk_conns_lock);
	list_for_each_entry(c, &xferk_conns, node)
		if (c->cm_id && c->cm_id->device == dev)
			xferk_conn_down(c, -ENODEV);
	mutex_unlock(&xferk_conns_lock);
	flush_workqueue(xferk_conn_wq);
}

static struct ib_client xferk_ib_client = {
	.name = "xferk",
	.add = xferk_ib_add,
	.remove = xferk_ib_remove,
};

int xferk_conn_module_init(void)
{
	struct rdma_cm_id *id;
	int ret;

	xferk_conn_wq = alloc_workqueue("xferk_conn", WQ_MEM_RECLAIM, 0);
	if (!xferk_conn_wq)
		return -ENOMEM;
	ret = ib_register_client(&xferk_ib_client);
	if (ret)
		goto err_wq;
	id = rdma_create_id(&init_net, xferk_cm_handler, NULL, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto err_client;
	}
	ret = rdma_bind_addr(id, (struct sockaddr *)&xferk_listen_sockaddr);
	if (!ret)
		ret = rdma_listen(id, 128);
	if (ret) {
		pr_err("xferk: cannot listen on %pISpc: %d\n",
		       &xferk_listen_sockaddr, ret);
		rdma_destroy_id(id);
		goto err_client;
	}
	xferk_listener = id;
	return 0;

err_client:
	ib_unregister_client(&xferk_ib_client);
err_wq:
	destroy_workqueue(xferk_conn_wq);
	return ret;
}

/* Every connection down and torn down; nothing pinned by a WR survives. */
void xferk_conn_module_exit(void)
{
	struct xferk_conn *c;

	rdma_destroy_id(xferk_listener);
	mutex_lock(&xferk_conns_lock);
	list_for_each_entry(c, &xferk_conns, node)
		xferk_conn_down(c, -ESHUTDOWN);
	mutex_unlock(&xferk_conns_lock);
	flush_workqueue(xferk_conn_wq);
	WARN_ON(!list_empty(&xferk_conns));
	ib_unregister_client(&xferk_ib_client);
	destroy_workqueue(xferk_conn_wq);
}
