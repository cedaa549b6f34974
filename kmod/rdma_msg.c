// SPDX-License-Identifier: GPL-2.0
/*
 * Session messages (revoke.c) are SENDs into a ring of receive buffers
 * each path posts before it connects. Locking: the send buffers and the
 * posts under conn->lock. The path's disconnect drains its QPs, so every
 * message's completion is handled before its buffers go.
 */
#include "conn.h"
#include "rdma.h"
#include "stats.h"
#include "wire.h"

/* ---- session messages ---- */

static u64 msg_dma(const struct xferk_conn *c, int buf)
{
	return c->path.msgs->dma + (u64)buf * XFERK_MSG_SIZE;
}

static void conn_msg_recv_done(struct ib_cq *cq, struct ib_wc *wc);

/* (Re)posts receive buffer @i; the QP is live. */
static int msg_post_recv(struct xferk_conn *c, int i)
{
	struct ib_sge sge = {
		.addr = msg_dma(c, i),
		.length = XFERK_MSG_SIZE,
		.lkey = c->path.pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &c->path.msgs->recv_cqe[i],
		.sg_list = &sge,
		.num_sge = 1,
	};
	int ret;

	c->path.msgs->recv_cqe[i].done = conn_msg_recv_done;
	ret = ib_post_recv(c->path.lanes[0].qp, &wr, NULL);
	return ret;
}

/*
 * A message arrived: copied out, its buffer posted again at once (the
 * ring bound in wire.h counts on it), then handed to the protocol.
 * Anything but a SEND is not a message.
 */
static void conn_msg_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_conn *c = wc_conn(wc);
	int i = wc->wr_cqe - c->path.msgs->recv_cqe;
	struct ib_device *dev = cq->device;
	u8 msg[XFERK_MSG_SIZE];
	u32 len;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
		return;
	}
	len = wc->opcode == IB_WC_RECV ? wc->byte_len : 0;
	ib_dma_sync_single_for_cpu(dev, msg_dma(c, i), XFERK_MSG_SIZE,
				   DMA_BIDIRECTIONAL);
	memcpy(msg, c->path.msgs->buf[i], sizeof(msg));
	ib_dma_sync_single_for_device(dev, msg_dma(c, i), XFERK_MSG_SIZE,
				      DMA_BIDIRECTIONAL);
	mutex_lock(&c->lock);
	if (xferk_conn_qp_live(c) && msg_post_recv(c, i))
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
	mutex_unlock(&c->lock);
	xferk_msg_received(c, msg, len);
}

/*
 * A message went out (or was flushed): its buffer is free again, and the
 * session learns what went out (xferk_msg_sent()).
 */
static void conn_msg_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_conn *c = wc_conn(wc);
	int i = wc->wr_cqe - c->path.msgs->send_cqe;
	u64 seq;

	if (wc->status != IB_WC_SUCCESS)
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
	mutex_lock(&c->lock);
	seq = c->path.msgs->send_seq[i];
	__clear_bit(i, c->path.msgs->send_busy);
	mutex_unlock(&c->lock);
	if (wc->status == IB_WC_SUCCESS)
		xferk_msg_sent(c, seq);
	mutex_lock(&c->lock);
	xferk_msgs_kick_locked(c);
	mutex_unlock(&c->lock);
}

int conn_rdma_send_msg(struct xferk_conn *c, const void *msg, u32 len,
		       u64 seq)
{
	struct xferk_msgs *m = c->path.msgs;
	int i = find_first_zero_bit(m->send_busy, XFERK_MSG_SENDS);
	int buf = XFERK_MSG_RECVS + i;
	struct ib_sge sge = {
		.addr = msg_dma(c, buf),
		.length = len,
		.lkey = c->path.pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &m->send_cqe[i],
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};

	lockdep_assert_held(&c->lock);
	if (i >= XFERK_MSG_SENDS)
		return -EAGAIN;
	memcpy(m->buf[buf], msg, len);
	ib_dma_sync_single_for_device(c->path.pd->device, sge.addr, len,
				      DMA_BIDIRECTIONAL);
	m->send_seq[i] = seq;
	m->send_cqe[i].done = conn_msg_send_done;
	if (ib_post_send(c->path.lanes[0].qp, &wr, NULL)) {
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
		return -EIO;
	}
	__set_bit(i, m->send_busy);
	return 0;
}

/* A new path's receive ring, before it connects; its send buffers free. */
int msg_path_init(struct xferk_conn *c)
{
	int i, ret;

	bitmap_zero(c->path.msgs->send_busy, XFERK_MSG_SENDS);
	for (i = 0; i < XFERK_MSG_RECVS; i++) {
		ret = msg_post_recv(c, i);
		if (ret)
			return ret;
	}
	return 0;
}
