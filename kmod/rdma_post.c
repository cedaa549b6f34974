// SPDX-License-Identifier: GPL-2.0
/*
 * A path's verbs objects and the data path on them: its PD, CQ and QPs,
 * the connection's send slots, posting and unposting chunks, the path's
 * disconnect, quiesce and destroy, the keepalive probe; and the
 * transport's ops table. Locking: send slots, lanes and posts under
 * path->lock; a lane's cm_id under path->cm_lock. A path's CQ is one of
 * its device's shared CQs (ib_cq_pool_get(), IB_POLL_WORKQUEUE): its
 * completions run one at a time, in process context, and a path's QPs
 * are drained (ib_drain_qp()) before they go, so none of their
 * completions is left in it.
 *
 * Completion moderation (moderate_completions): a chain's work request
 * is signaled if it is the chain's last or if it brings the chain's bytes
 * since its last signaled one to XFERK_SIGNAL_BYTES; the others are not.
 * An RC send queue completes in posting order and always reports a failed
 * or flushed work request, so any completion on a QP vouches for the
 * unsignaled work requests posted before it that are still on its lane's
 * sends: they succeeded (lane_vouch()). Every unsignaled one is followed
 * by a signaled one on its QP: a later one of its chain, or, after a
 * partial post, a marker (a zero-length RDMA WRITE in a slot of its own).
 *
 * QPs get bounded ack timeout and retry counts (never the infinite
 * rnr_retry 7), so every posted work request completes in bounded time
 * while the device works. COMM_EST goes to rdma_cm; SQ_DRAINED,
 * PATH_MIG and LAST_WQE_REACHED are ignored; every other QP event, any
 * failed or flushed completion and any refused post mark the connection's
 * QP dead at once.
 */
#include <linux/sizes.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/rdma_cm.h>
#include "fault.h"
#include "rdma.h"
#include "region.h"
#include "stats.h"
#include "transport.h"
#include "wire.h"

/**
 * struct xferk_send - one send slot of a connection: a posted chunk's
 * work request
 * @node: on path->free_sends while free (path->lock)
 * @cqe: its completion
 * @req: the chunk's work request it carries while posted
 * @lane: the QP it is posted on (while posted)
 * @lane_node: in @lane's sends once its work request was posted
 * @seq: its post's sequence number on @lane (struct xferk_lane.posts)
 * @signaled: its work request asks for a completion of its own success
 * @nr_sge: entries of @sge: one per page, or per run of pages whose DMA
 *	addresses follow each other
 * @per_post: @sge was mapped for this post (direction @dir): the
 *	completion unmaps it
 * @dir: the chunk's DMA direction
 * @sge: the work request's scatter/gather list
 * @wr: the RDMA READ or WRITE
 */
struct xferk_send {
	struct list_head node;
	struct ib_cqe cqe;
	struct xferk_wr *req;
	struct xferk_lane *lane;
	struct list_head lane_node;
	u64 seq;
	bool signaled;
	int nr_sge;
	bool per_post;
	enum dma_data_direction dir;
	struct ib_sge sge[XFERK_MAX_SGE];
	struct ib_rdma_wr wr;
};

static bool xferk_moderate_completions = true;
module_param_named(moderate_completions, xferk_moderate_completions, bool,
		   0644);
MODULE_PARM_DESC(moderate_completions,
		 "Signal a chain's last work request and one per 64 KiB (default Y)");

/*
 * With moderation, a chain signals at least one work request per this many
 * bytes. A completion's cost matters next to small work requests, not next
 * to 64 KiB of data; and a chain of large chunks then returns its first
 * chunks while its last ones are in flight, so that the queue's byte limit
 * sees a QP that stays busy (sched.c) instead of one emptied at each batch.
 */
#define XFERK_SIGNAL_BYTES	SZ_64K

/* Fault injection: the next N posts find their QP moved to the error state. */
atomic_t xferk_fault_qp_error = ATOMIC_INIT(0);
/* Fault injection: the next N chains the device takes only half of. */
atomic_t xferk_fault_refuse_chain = ATOMIC_INIT(0);

/* ---- posting ---- */

/**
 * xferk_post_send - ib_post_send() with bottom halves disabled
 * @qp: the QP
 * @wr: the chain of work requests
 * @bad_wr: where the driver names the first it did not post (may be NULL)
 *
 * A driver may hand a kernel QP's send processing to a softirq (Linux 6.1's
 * soft-RoCE runs its requester as a tasklet; later ones use a workqueue,
 * which this does not change). Raised from process context with
 * bottom halves enabled, a softirq wakes ksoftirqd: a thread that runs
 * when the scheduler gets to it, a context switch per post, milliseconds
 * on a busy host. Raised here, it runs at local_bh_enable(), at once and
 * in this context, as netif_rx() runs received packets. A driver's post
 * never sleeps, so this is safe for every driver; one that raises nothing
 * pays two counter updates. Every send post of the transport goes here.
 *
 * Return: ib_post_send()'s.
 */
int xferk_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	int ret;

	local_bh_disable();
	ret = ib_post_send(qp, wr, bad_wr);
	local_bh_enable();
	return ret;
}

/* A completion status as a chunk's error; never the device's own code. */
static int wc_errno(enum ib_wc_status status)
{
	switch (status) {
	case IB_WC_SUCCESS:
		return 0;
	case IB_WC_WR_FLUSH_ERR:
		return -ECONNRESET;
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

/*
 * The unsignaled work requests posted on @l before sequence number @seq
 * that are still on its sends succeeded, as a completion on its QP at or
 * after @seq tells: each is handed to the session as succeeded, in posting
 * order, and @last (a signaled one that succeeded, or NULL) after them in
 * the same batch, so that the windows they free go out as one chain. A
 * signaled one on the way stops the walk: it had a completion of its own
 * (lost, if it is still there: the session's overtaken check finds it).
 * The session takes each off @l's sends; one it keeps (a completion the
 * swallow fault drops) is passed over for the rest of this walk (a later
 * completion's walk hands it again: it did succeed).
 */
static void lane_vouch(struct xferk_lane *l, u64 seq, struct xferk_wr *last)
{
	struct xferk_path *p = l->path;
	struct xferk_wr *wrs[XFERK_POST_BATCH + 1];
	struct xferk_send *s;
	bool more;
	u64 from = 0;
	u32 n;

	do {
		n = 0;
		more = false;
		/* Written under p->lock; one posted after @seq is later. */
		if (READ_ONCE(l->unsignaled)) {
			mutex_lock(p->lock);
			list_for_each_entry(s, &l->sends, lane_node) {
				if (s->seq >= seq || s->signaled)
					break;
				if (s->seq < from)
					continue;
				if (n == XFERK_POST_BATCH) {
					more = true;
					break;
				}
				wrs[n++] = s->req;
				from = s->seq + 1;
			}
			mutex_unlock(p->lock);
			if (n)
				atomic64_add(n, &xferk_stats.completions_moderated);
		}
		if (!more && last)
			wrs[n++] = last;
		if (n)
			p->events->chunks_succeeded(p, wrs, n);
	} while (more);
}

static void conn_rdma_chunk_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_send *s = container_of(wc->wr_cqe, struct xferk_send, cqe);
	struct xferk_lane *l = s->lane;
	struct xferk_path *p = l->path;
	struct xferk_wr *wr = s->req;

	if (wc->status == IB_WC_SUCCESS) {
		lane_vouch(l, s->seq, wr);
		return;
	}
	if (wc->status != IB_WC_WR_FLUSH_ERR)
		pr_debug("xferk: qp %u: chunk failed: %s\n", l->qp_num,
			 ib_wc_status_msg(wc->status));
	/* The QP is in the error state: nothing more goes on the path. */
	p->events->qp_dead(p, -ECONNRESET, XFERK_PATH_QP);
	/*
	 * It had a completion of its own: no later walk vouches for it
	 * (its chunk may stay, if the swallow fault drops the completion).
	 */
	mutex_lock(p->lock);
	if (!s->signaled) {
		s->signaled = true;
		WRITE_ONCE(l->unsignaled, l->unsignaled - 1);
	}
	mutex_unlock(p->lock);
	lane_vouch(l, s->seq, NULL);
	p->events->chunk_done(p, wr, wc_errno(wc->status));
}

/*
 * A lane's marker completed: the unsignaled work requests of the partial
 * post before it are vouched for. One that did not succeed means the QP
 * is in the error state (the path dies first, as for a chunk's).
 */
static void lane_marker_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_lane *l = container_of(wc->wr_cqe, struct xferk_lane,
					    marker_cqe);
	struct xferk_path *p = l->path;
	u64 seq;

	mutex_lock(p->lock);
	l->marker_posted = false;
	seq = l->marker_seq;
	mutex_unlock(p->lock);
	if (wc->status != IB_WC_SUCCESS)
		p->events->qp_dead(p, -ECONNRESET, XFERK_PATH_QP);
	lane_vouch(l, seq, NULL);
}

/*
 * After a partial post whose last posted work request is unsignaled: a
 * signaled zero-length RDMA WRITE (which checks no key or address at the
 * peer, IBA C9-88) in the lane's marker slot, so that a completion
 * follows them. Return: 0, or -EBUSY if the slot is taken, or the
 * driver's error.
 */
static int lane_post_marker(struct xferk_lane *l)
{
	struct ib_rdma_wr wr = {
		.wr.opcode = IB_WR_RDMA_WRITE,
		.wr.wr_cqe = &l->marker_cqe,
		.wr.send_flags = IB_SEND_SIGNALED,
	};
	int ret;

	lockdep_assert_held(l->path->lock);
	if (l->marker_posted)
		return -EBUSY;
	l->marker_cqe.done = lane_marker_done;
	l->marker_seq = l->posts;
	ret = xferk_post_send(l->qp, &wr.wr, NULL);
	if (!ret)
		l->marker_posted = true;
	return ret;
}

/* ---- the path's completion queue ---- */

/* The path of a completion on one of its QPs (a pooled CQ has none). */
struct xferk_path *wc_path(const struct ib_wc *wc)
{
	struct xferk_lane *l = wc->qp->qp_context;

	return l->path;
}

/*
 * Work requests lane @index's QP takes: XFERK_QP_CTXS chunks and a marker,
 * on the first also a registration, a probe and the messages; and one
 * each way for ib_drain_qp().
 */
static u32 lane_send_wrs(u32 index)
{
	return XFERK_QP_CTXS + 2 + (index ? 0 : 2 + XFERK_MSG_SENDS);
}

static u32 lane_recv_wrs(u32 index)
{
	return 1 + (index ? 0 : XFERK_MSG_RECVS);
}

/*
 * The CQ entries a path claims in its device's pool: its QPs' queues bound
 * its completions (a flush completes every work request, signaled or
 * not).
 */
static u32 conn_cq_entries(const struct xferk_path *p)
{
	u32 i, n = 0;

	for (i = 0; i < p->nr_qps; i++)
		n += lane_send_wrs(i) + lane_recv_wrs(i);
	return n;
}

/* Unmaps what send_map() mapped for this post (per-post maps only). */
static void send_unmap(struct ib_device *dev, struct xferk_send *s)
{
	if (!s->per_post)
		return;
	while (s->nr_sge) {
		s->nr_sge--;
		ib_dma_unmap_page(dev, s->sge[s->nr_sge].addr,
				  s->sge[s->nr_sge].length, s->dir);
	}
}

/*
 * The chunk's pages as @s's SGEs: from the region's map for the device,
 * pages whose DMA addresses follow each other merged; or, for a per-post
 * map, each page mapped now for the chunk's direction, one SGE each.
 */
static int send_map(struct xferk_path *p, struct xferk_send *s,
		    const struct xferk_wr *wr)
{
	struct xferk_region *r = wr->region;
	u64 uaddr = r->addr + wr->offset;
	unsigned long page = (uaddr >> PAGE_SHIFT) - (r->addr >> PAGE_SHIFT);
	unsigned int off = offset_in_page(uaddr);
	u32 left = wr->len, lkey = p->pd->local_dma_lkey;
	struct xferk_dma_map *m = region_dma_map_find(r, p->attach.dev);
	struct ib_device *dev = p->pd->device;

	if (!m) {
		/*
		 * Its submit did not map it for this device: a rail imported
		 * since, a session not attached to its device at submit, or no
		 * memory. Never a dma-buf's here: that may wait for its
		 * exporter (xferk_dev_map_region()).
		 */
		if (r->dmabuf)
			return -EOPNOTSUPP;
		atomic64_inc(&xferk_stats.dma_maps_in_post);
		m = region_dma_map(r, p->attach.dev);
		if (IS_ERR(m))
			return PTR_ERR(m);
	}
	/* Its exporter moved the buffer: a revoke (dmabuf_move_notify()). */
	if (READ_ONCE(m->moved))
		return -ESTALE;
	s->nr_sge = 0;
	s->per_post = m->per_post;
	s->dir = wr->opcode == XFERK_OP_WRITE ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	while (left) {
		u32 len = min_t(u32, left, PAGE_SIZE - off);
		struct ib_sge *prev = s->nr_sge ? &s->sge[s->nr_sge - 1] : NULL;
		u64 addr;

		if (s->per_post) {
			addr = ib_dma_map_page(dev, r->pages[page], off, len,
					       s->dir);
			if (ib_dma_mapping_error(dev, addr)) {
				send_unmap(dev, s);
				return -EIO;
			}
		} else {
			addr = m->dma[page] + off;
		}
		page++;
		if (!s->per_post && prev && prev->addr + prev->length == addr)
			prev->length += len;
		else
			s->sge[s->nr_sge++] = (struct ib_sge) {
				.addr = addr, .length = len, .lkey = lkey,
			};
		left -= len;
		off = 0;
	}
	return 0;
}

/* Gives @wr a send slot with its mapped pages and work request. */
static int send_prepare(struct xferk_path *p, struct xferk_wr *wr)
{
	struct xferk_send *s;
	int ret;

	s = list_first_entry_or_null(&p->free_sends, struct xferk_send, node);
	/* Credits guarantee a slot; the split, that the pages fit its SGEs. */
	if (WARN_ON_ONCE(!s) ||
	    WARN_ON_ONCE(DIV_ROUND_UP(offset_in_page(wr->region->addr +
						     wr->offset) + wr->len,
				      PAGE_SIZE) > p->max_chunk_pages))
		return -EIO;
	ret = send_map(p, s, wr);
	if (ret)
		return ret;
	list_del(&s->node);
	s->req = wr;
	s->cqe.done = conn_rdma_chunk_done;
	s->wr = (struct ib_rdma_wr) {
		.wr.wr_cqe = &s->cqe,
		.wr.sg_list = s->sge,
		.wr.num_sge = s->nr_sge,
		.wr.opcode = wr->opcode == XFERK_OP_WRITE ? IB_WR_RDMA_WRITE :
							    IB_WR_RDMA_READ,
		.remote_addr = wr->remote_addr,
		.rkey = wr->rkey,
	};
	wr->send = s;
	return 0;
}

/*
 * Undoes send_prepare(), or a post once its work request is terminal: the
 * pages stay mapped (the region's map) unless they were mapped per post.
 */
static void conn_rdma_unpost(struct xferk_path *p, struct xferk_wr *wr)
{
	struct xferk_send *s = wr->send;

	lockdep_assert_held(p->lock);
	send_unmap(p->pd->device, s);
	if (!list_empty(&s->lane_node) && !s->signaled)
		WRITE_ONCE(s->lane->unsignaled, s->lane->unsignaled - 1);
	list_del_init(&s->lane_node);
	s->lane->posted--;
	s->req = NULL;
	wr->send = NULL;
	list_add(&s->node, &p->free_sends);
}

/* Posted @wr completed before a work request posted ahead of it. */
static bool conn_rdma_overtaken(struct xferk_path *p, struct xferk_wr *wr)
{
	struct xferk_send *s = wr->send;

	lockdep_assert_held(p->lock);
	if (WARN_ON_ONCE(list_empty(&s->lane_node)))
		return false;
	return list_first_entry(&s->lane->sends, struct xferk_send,
				lane_node) != s;
}

/*
 * The path's QP with the fewest chunks posted, if it has room for one (on
 * a postable path every QP is established). The search starts after the
 * last one picked, so QPs equally busy take turns.
 */
static struct xferk_lane *lane_pick(struct xferk_path *p)
{
	struct xferk_lane *best = NULL, *l;
	u32 i;

	lockdep_assert_held(p->lock);
	for (i = 0; i < p->nr_qps; i++) {
		l = &p->lanes[(p->next_lane + i) % p->nr_qps];
		if (l->live && (!best || l->posted < best->posted))
			best = l;
	}
	if (!best || best->posted >= XFERK_QP_CTXS)
		return NULL;
	p->next_lane = best->index + 1;
	return best;
}

/*
 * The first @n of @wrs go on @l's send queue, in this order: before
 * ib_post_send(), as their completions may be handled before it returns.
 */
static void lane_posted(struct xferk_lane *l, struct xferk_wr **wrs, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		wrs[i]->send->seq = l->posts++;
		list_add_tail(&wrs[i]->send->lane_node, &l->sends);
		if (!wrs[i]->send->signaled)
			WRITE_ONCE(l->unsignaled, l->unsignaled + 1);
	}
}

/*
 * The chunks' work requests as one chain on the least busy QP of the path,
 * one ib_post_send() (one doorbell). Return: how many were posted, the
 * first ones of @wrs; *@error is 0 (the rest wait for room), or why the
 * first one not posted could not be (its chunk fails, the ones after it
 * wait). A completion is what returns a send slot and
 * counts its chunk in the op. With moderate_completions the chain's last
 * work request is signaled, and one wherever the chain's bytes since its
 * last signaled one reach XFERK_SIGNAL_BYTES; a signaled one's completion
 * vouches for the ones before it (lane_vouch()); a failed or flushed work
 * request always completes, as its own chunk's. A partial post whose last
 * posted work request is unsignaled gets a marker after it; a QP that
 * cannot take one dies (its posted work requests complete, or its
 * teardown's flush wait ends and reclaims them).
 */
static u32 conn_rdma_post(struct xferk_path *p, struct xferk_wr **wrs,
			  u32 n, int *error)
{
	struct xferk_lane *l = lane_pick(p);
	bool moderate = READ_ONCE(xferk_moderate_completions);
	const struct ib_send_wr *bad = NULL;
	struct ib_send_wr *first = NULL, **link = &first;
	struct xferk_send *s;
	u64 unsignaled_bytes = 0;
	u32 ready, i;
	int ret = 0;

	*error = 0;
	if (!l)
		return 0;
	n = min_t(u32, n, XFERK_QP_CTXS - l->posted);
	for (ready = 0; ready < n; ready++) {
		ret = send_prepare(p, wrs[ready]);
		if (ret)
			break;
		s = wrs[ready]->send;
		s->lane = l;
		unsignaled_bytes += wrs[ready]->len;
		s->signaled = !moderate ||
			      unsignaled_bytes >= XFERK_SIGNAL_BYTES;
		if (s->signaled)
			unsignaled_bytes = 0;
		s->wr.wr.send_flags = s->signaled ? IB_SEND_SIGNALED : 0;
		l->posted++;
		*link = &s->wr.wr;
		link = &s->wr.wr.next;
	}
	*error = ret;
	if (!ready)
		return 0;
	s = wrs[ready - 1]->send;
	s->signaled = true;
	s->wr.wr.send_flags = IB_SEND_SIGNALED;
	lane_posted(l, wrs, ready);
	if (atomic_dec_if_positive(&xferk_fault_qp_error) >= 0) {
		struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

		ib_modify_qp(l->qp, &attr, IB_QP_STATE);
	}
	if (ready > 1 && atomic_dec_if_positive(&xferk_fault_refuse_chain) >= 0) {
		/* As a driver whose queue takes the first half: bad_wr after. */
		wrs[ready / 2 - 1]->send->wr.wr.next = NULL;
		ret = xferk_post_send(l->qp, first, &bad);
		if (!ret) {
			bad = &wrs[ready / 2]->send->wr.wr;
			ret = -ENOMEM;
		}
	} else {
		ret = xferk_post_send(l->qp, first, &bad);
	}
	if (!ret)
		return ready;
	/* The driver posted the work requests before @bad, none after. */
	for (i = 0; i < ready && &wrs[i]->send->wr.wr != bad; i++)
		;
	WARN_ON_ONCE(i == ready);
	n = i;
	for (; i < ready; i++)
		conn_rdma_unpost(p, wrs[i]);
	l->posts -= ready - n;
	if (n && !wrs[n - 1]->send->signaled && lane_post_marker(l))
		ret = -EIO;
	if (ret == -ENOMEM) {
		*error = -ENOMEM;
	} else {
		/* A QP that refuses a valid post is not ready to send. */
		p->events->qp_dead(p, -ECONNRESET, XFERK_PATH_QP);
		*error = -EIO;
	}
	return n;
}

/*
 * The cm_id goes first: once its creator is done with it, rdma_destroy_id()
 * waits for a running handler and no handler runs afterwards (and a
 * connected id sends the peer a DREQ). Only then is the QP, which the
 * handler may have just created, touched.
 */
static void conn_rdma_disconnect(struct xferk_path *p)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct rdma_cm_id *id;
	struct xferk_lane *l;

	/* Every QP's: none joins the path any more (it is marked dead). */
	for (l = p->lanes; l < p->lanes + XFERK_MAX_QPS; l++) {
		wait_for_completion(&l->cm_ready);
		spin_lock_irq(&p->cm_lock);
		id = l->cm_id;
		l->cm_id = NULL;
		spin_unlock_irq(&p->cm_lock);
		if (id)
			rdma_destroy_id(id);
	}
	/* Also for a half-connected QP: error state flushes everything. */
	for (l = p->lanes; l < p->lanes + XFERK_MAX_QPS; l++)
		if (l->qp)
			ib_modify_qp(l->qp, &attr, IB_QP_STATE);
	/*
	 * Every completion of theirs handled: each drain's own work requests
	 * complete after all of the QP's others. The CQ is shared with other
	 * sessions and stays; none may find this path's send slots, message
	 * buffers or session in it once they are gone.
	 */
	for (l = p->lanes; l < p->lanes + XFERK_MAX_QPS; l++)
		if (l->qp)
			ib_drain_qp(l->qp);
}

/*
 * QPs first (each retried until the device lets it go: xferk_destroy_qp()),
 * drained by the disconnect; then the path's entries of the shared CQ go
 * back to the device's pool. A registration still waiting for its
 * completion gets none now: it is released here, as failed (before
 * teardown revokes exports).
 */
static void conn_rdma_quiesce(struct xferk_path *p)
{
	struct ib_qp *qps[XFERK_MAX_QPS];
	int i;

	mutex_lock(p->lock);
	for (i = 0; i < XFERK_MAX_QPS; i++) {
		qps[i] = p->lanes[i].qp;
		p->lanes[i].qp = NULL;
		p->lanes[i].live = false;
		/* Drained; one whose completion a device lost goes too. */
		p->lanes[i].marker_posted = false;
	}
	mutex_unlock(p->lock);
	for (i = 0; i < XFERK_MAX_QPS; i++)
		if (qps[i])
			xferk_destroy_qp(qps[i]);
	if (p->cq)
		ib_cq_pool_put(p->cq, p->cq_entries);
	p->cq = NULL;
	/* A registration posted on them, whose completion was lost. */
	mutex_lock(p->lock);
	if (p->reg_waiting)
		complete(&p->reg_done);
	mutex_unlock(p->lock);
}

static void conn_rdma_destroy(struct xferk_path *p)
{
	if (p->msgs->mapped)
		ib_dma_unmap_single(p->pd->device, p->msgs->dma,
				    sizeof(p->msgs->buf), DMA_BIDIRECTIONAL);
	p->msgs->mapped = false;
	if (p->pd)
		ib_dealloc_pd(p->pd);
	p->pd = NULL;
	INIT_LIST_HEAD(&p->free_sends);
	xferk_dev_detach(&p->attach);
}

/*
 * A probe that succeeded vouches for every work request posted before it
 * on its send queue: a chunk's still outstanding lost its completion. In
 * the CQ's work (process context), like every completion handler here: it
 * takes p->lock.
 */
static void conn_probe_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_path *p = container_of(wc->wr_cqe, struct xferk_path,
					    keepalive_cqe);
	struct xferk_lane *l = &p->lanes[0];
	struct xferk_send *first;
	bool lost = false;

	if (wc->status == IB_WC_SUCCESS) {
		mutex_lock(p->lock);
		first = list_first_entry_or_null(&l->sends, struct xferk_send,
						 lane_node);
		lost = first && first->seq < l->probe_seq;
		mutex_unlock(p->lock);
	}
	if (lost)
		p->events->completion_lost(p);
	p->events->probe_done(p, wc->status == IB_WC_WR_FLUSH_ERR ? 0 :
			      wc_errno(wc->status));
}

/*
 * A keepalive probe: a signaled zero-length RDMA WRITE, which checks no key
 * or address at the peer (IBA C9-88) but needs the peer's QP to answer
 * within the retry window. In the send queue's second spare slot. Not
 * while our own port is down (-EAGAIN): a link that is down costs latency,
 * it does not end the connection by itself; a probe after it comes back
 * tells whether the peer is still there.
 */
static int conn_rdma_probe(struct xferk_path *p)
{
	struct ib_rdma_wr wr = {
		.wr.opcode = IB_WR_RDMA_WRITE,
		.wr.wr_cqe = &p->keepalive_cqe,
		.wr.send_flags = IB_SEND_SIGNALED,
	};
	struct ib_qp *qp = p->lanes[0].qp;
	enum ib_port_state state;

	lockdep_assert_held(p->lock);
	if (ib_get_cached_port_state(qp->device, qp->port, &state) ||
	    state != IB_PORT_ACTIVE)
		return -EAGAIN;
	p->keepalive_cqe.done = conn_probe_done;
	p->lanes[0].probe_seq = p->lanes[0].posts;
	return xferk_post_send(qp, &wr.wr, NULL);
}

/* ---- QP ---- */

/*
 * Atomic context. COMM_EST (a receive before RTU) goes to rdma_cm as the
 * rdma_cm rules ask; every event that means the QP left RTS kills the
 * connection at once.
 */
static void conn_qp_event(struct ib_event *ev, void *ctx)
{
	struct xferk_lane *l = ctx;
	struct xferk_path *p = l->path;
	unsigned long flags;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
		spin_lock_irqsave(&p->cm_lock, flags);
		if (l->cm_id)
			rdma_notify(l->cm_id, IB_EVENT_COMM_EST);
		spin_unlock_irqrestore(&p->cm_lock, flags);
		break;
	case IB_EVENT_SQ_DRAINED:
	case IB_EVENT_PATH_MIG:
	case IB_EVENT_QP_LAST_WQE_REACHED:
		break;
	default:
		pr_debug("xferk: qp %u: QP event %s\n", l->qp_num,
			 ib_event_msg(ev->event));
		p->events->qp_dead(p, -ECONNRESET, XFERK_PATH_QP);
		break;
	}
}

/*
 * Lane @l's QP on @id, on the session's PD and the path's CQ. Each QP's
 * send queue takes XFERK_QP_CTXS chunks (lane_pick() keeps it so); the
 * first's also a registration, a probe and the messages, and only it
 * receives; each has room for its drain (lane_send_wrs()). Published
 * under p->lock: a joining QP's request checks that the path has its
 * first.
 */
int lane_create_qp(struct xferk_path *p, struct xferk_lane *l,
		   struct rdma_cm_id *id)
{
	struct ib_device *dev = id->device;
	struct ib_qp_init_attr init = {
		.event_handler = conn_qp_event,
		.qp_context = l,
		.send_cq = p->cq,
		.recv_cq = p->cq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.port_num = id->port_num,
		.cap.max_send_wr = lane_send_wrs(l->index),
		.cap.max_recv_wr = lane_recv_wrs(l->index),
		.cap.max_send_sge = min_t(u32, dev->attrs.max_send_sge,
					  XFERK_MAX_SGE),
		.cap.max_recv_sge = 1,
	};
	int ret;

	if (dev != p->pd->device)
		return -ENODEV;
	ret = rdma_create_qp(id, p->pd, &init);
	if (ret)
		return ret;
	mutex_lock(p->lock);
	l->qp = id->qp;
	mutex_unlock(p->lock);
	WRITE_ONCE(l->qp_num, id->qp->qp_num);
	/*
	 * The path's QPs have the same capabilities. A device that claims 0
	 * read SGEs still gets one page per chunk.
	 */
	if (!l->index)
		p->max_chunk_pages =
			clamp_t(u32, min_t(u32, init.cap.max_send_sge,
					   dev->attrs.max_sge_rd),
				1, XFERK_MAX_SGE);
	return rdma_set_ack_timeout(id, XFERK_ACK_TIMEOUT);
}

/*
 * CQ entries (in the device's pool) and first QP of a new path on @id's
 * (attached) device; the session's first path also makes its PD and lists
 * its send slots (allocated with the connection, charged to whoever caused
 * it; a dead path's teardown gives every slot back). A later path must be
 * on the session's device.
 */
int conn_rdma_setup(struct xferk_path *p, struct rdma_cm_id *id)
{
	struct ib_device *dev = id->device;
	int i, ret;

	if (p->pd) {
		if (p->pd->device != dev)
			return -ENODEV;
	} else {
		for (i = 0; i < p->nr_qps * XFERK_QP_CTXS; i++) {
			INIT_LIST_HEAD(&p->sends[i].lane_node);
			list_add_tail(&p->sends[i].node, &p->free_sends);
		}
		p->pd = ib_alloc_pd(dev, 0);
		if (IS_ERR(p->pd)) {
			ret = PTR_ERR(p->pd);
			p->pd = NULL;
			return ret;
		}
		p->msgs->dma =
			ib_dma_map_single(dev, p->msgs->buf,
					  sizeof(p->msgs->buf),
					  DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(dev, p->msgs->dma))
			return -ENOMEM;
		p->msgs->mapped = true;
	}
	/* The handshake may lower nr_qps later: what is taken is given back. */
	p->cq_entries = conn_cq_entries(p);
	p->cq = ib_cq_pool_get(dev, p->cq_entries, -1, IB_POLL_WORKQUEUE);
	if (IS_ERR(p->cq)) {
		ret = PTR_ERR(p->cq);
		p->cq = NULL;
		return ret;
	}
	ret = lane_create_qp(p, &p->lanes[0], id);
	if (ret)
		return ret;
	return msg_path_init(p);
}

/*
 * A path's send slots (for @nr_qps QPs) and message buffers, zeroed; the
 * session frees them with itself. Return: 0 or -ENOMEM (none allocated).
 */
int xferk_rdma_path_alloc(struct xferk_path *p, gfp_t gfp, u32 nr_qps)
{
	p->sends = kvcalloc(nr_qps * XFERK_QP_CTXS, sizeof(*p->sends), gfp);
	p->msgs = kzalloc(sizeof(*p->msgs), gfp);
	if (!p->sends || !p->msgs) {
		kvfree(p->sends);
		kfree(p->msgs);
		p->sends = NULL;
		p->msgs = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Maps @r for @p's device now (xferk_dev_map_region()). */
static int conn_rdma_map_region(struct xferk_path *p, struct xferk_region *r,
				bool nowait)
{
	return xferk_dev_map_region(&p->attach, r, nowait);
}

const struct xferk_transport xferk_rdma_transport = {
	.name = "rdma",
	.post = conn_rdma_post,
	.unpost = conn_rdma_unpost,
	.overtaken = conn_rdma_overtaken,
	.export = conn_rdma_export,
	.unexport = conn_rdma_unexport,
	.disconnect = conn_rdma_disconnect,
	.quiesce = conn_rdma_quiesce,
	.destroy = conn_rdma_destroy,
	.probe = conn_rdma_probe,
	.send_msg = conn_rdma_send_msg,
	.map_region = conn_rdma_map_region,
	.connect = conn_rdma_connect,
};
