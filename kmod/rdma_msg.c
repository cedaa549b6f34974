// SPDX-License-Identifier: GPL-2.0
/*
 * Session messages (revoke.c) are SENDs into a ring of receive buffers
 * each path posts before it connects. Locking: the send buffers and the
 * posts under the session's lock (path->lock). The path's disconnect
 * drains its QPs, so every
 * message's completion is handled before its buffers go.
 */
#include "rdma.h"
#include "stats.h"
#include "transport.h"
#include "wire.h"

/* ---- session messages ---- */

static u64 msg_dma(const struct xferk_path *p, int buf)
{
	return p->msgs->dma + (u64)buf * XFERK_MSG_SIZE;
}

static void conn_msg_recv_done(struct ib_cq *cq, struct ib_wc *wc);

/* (Re)posts receive buffer @i; the QP is live. */
static int msg_post_recv(struct xferk_path *p, int i)
{
	struct ib_sge sge = {
		.addr = msg_dma(p, i),
		.length = XFERK_MSG_SIZE,
		.lkey = p->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &p->msgs->recv_cqe[i],
		.sg_list = &sge,
		.num_sge = 1,
	};
	int ret;

	p->msgs->recv_cqe[i].done = conn_msg_recv_done;
	ret = ib_post_recv(p->lanes[0].qp, &wr, NULL);
	return ret;
}

/*
 * A message arrived: copied out, its buffer posted again at once (the
 * ring bound in wire.h counts on it), then handed to the protocol.
 * Anything but a SEND is not a message.
 */
static void conn_msg_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_path *p = wc_path(wc);
	int i = wc->wr_cqe - p->msgs->recv_cqe;
	struct ib_device *dev = cq->device;
	u8 msg[XFERK_MSG_SIZE];
	u32 len;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			p->events->qp_dead(p, -ECONNRESET, XFERK_PATH_QP);
		return;
	}
	len = wc->opcode == IB_WC_RECV ? wc->byte_len : 0;
	ib_dma_sync_single_for_cpu(dev, msg_dma(p, i), XFERK_MSG_SIZE,
				   DMA_BIDIRECTIONAL);
	memcpy(msg, p->msgs->buf[i], sizeof(msg));
	ib_dma_sync_single_for_device(dev, msg_dma(p, i), XFERK_MSG_SIZE,
				      DMA_BIDIRECTIONAL);
	mutex_lock(p->lock);
	if (p->events->qp_live(p) && msg_post_recv(p, i))
		p->events->qp_dead(p, -ECONNRESET, XFERK_PATH_QP);
	mutex_unlock(p->lock);
	p->events->msg_received(p, msg, len);
}

/*
 * A message went out (or was flushed): its buffer is free again, and the
 * session learns what went out (events->msg_sent).
 */
static void conn_msg_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_path *p = wc_path(wc);
	int i = wc->wr_cqe - p->msgs->send_cqe;
	u64 seq;

	if (wc->status != IB_WC_SUCCESS)
		p->events->qp_dead(p, -ECONNRESET, XFERK_PATH_QP);
	mutex_lock(p->lock);
	seq = p->msgs->send_seq[i];
	__clear_bit(i, p->msgs->send_busy);
	mutex_unlock(p->lock);
	p->events->msg_sent(p, seq, wc->status == IB_WC_SUCCESS);
}

int conn_rdma_send_msg(struct xferk_path *p, const void *msg, u32 len,
		       u64 seq)
{
	struct xferk_msgs *m = p->msgs;
	int i = find_first_zero_bit(m->send_busy, XFERK_MSG_SENDS);
	int buf = XFERK_MSG_RECVS + i;
	struct ib_sge sge = {
		.addr = msg_dma(p, buf),
		.length = len,
		.lkey = p->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &m->send_cqe[i],
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};

	lockdep_assert_held(p->lock);
	if (i >= XFERK_MSG_SENDS)
		return -EAGAIN;
	memcpy(m->buf[buf], msg, len);
	ib_dma_sync_single_for_device(p->pd->device, sge.addr, len,
				      DMA_BIDIRECTIONAL);
	m->send_seq[i] = seq;
	m->send_cqe[i].done = conn_msg_send_done;
	if (xferk_post_send(p->lanes[0].qp, &wr, NULL)) {
		p->events->qp_dead(p, -ECONNRESET, XFERK_PATH_QP);
		return -EIO;
	}
	__set_bit(i, m->send_busy);
	return 0;
}

/* A new path's receive ring, before it connects; its send buffers free. */
int msg_path_init(struct xferk_path *p)
{
	int i, ret;

	bitmap_zero(p->msgs->send_busy, XFERK_MSG_SENDS);
	for (i = 0; i < XFERK_MSG_RECVS; i++) {
		ret = msg_post_recv(p, i);
		if (ret)
			return ret;
	}
	return 0;
}
