// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA transport: per-device state, in-kernel rdma_cm (active and
 * passive ends, the listener), QPs and their send slots, exports.
 *
 * Devices. Each RDMA device has a struct xferk_dev from our ib_client's
 * .add to its .remove, kept as the device's client data. A connection
 * attaches to the device its cm_id resolved to before it creates a PD,
 * CQ or QP there, and detaches when its teardown has freed them. .remove
 * (which runs before rdma_cm's own) stops new attaches, takes every
 * attached connection down and waits until each has detached: nothing of
 * ours lives on a device past its removal, whenever a cm_id resolves or a
 * peer connects.
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
 * if its peer announced it. Session messages (revoke.c) are SENDs into a
 * ring of receive buffers each path posts before it connects.
 *
 * QPs get bounded ack timeout and retry counts (never the infinite
 * rnr_retry 7), so every posted work request completes in bounded time
 * while the device works. COMM_EST goes to rdma_cm; SQ_DRAINED,
 * PATH_MIG and LAST_WQE_REACHED are ignored; every other QP event, any
 * failed or flushed completion and any refused post mark the connection's
 * QP dead at once.
 */
#include <asm/unaligned.h>
#include <linux/dma-mapping.h>
#include <linux/inet.h>
#include <linux/memcontrol.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <net/net_namespace.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>
#include "xferk.h"

#define XFERK_CM_MAGIC		0x5846524bU	/* "XFRK" */
#define XFERK_PROTO_VERSION	2
#define XFERK_PROTO_CAPS	(XFERK_CAP_REVOKE | XFERK_CAP_NOTIFY)
#define XFERK_MAX_RD_ATOMIC	16
#define XFERK_ACK_TIMEOUT	17	/* 4.096 us * 2^17 = 0.54 s per try */
#define XFERK_RETRY_COUNT	6
#define XFERK_RNR_RETRY		6	/* 7 would mean forever */
#define XFERK_RESOLVE_MS	5000

/*
 * The connect request's and the accept's private data (56 bytes fit a
 * request over RoCE; the receiver may see more, zero-padded).
 */
struct xferk_cm_msg {
	__be32 magic;
	__be16 version;
	u8 nr_qps;		/* new: asked, accepted: granted (0 means 1) */
	u8 lane;		/* a QP joining a path: its index (1..) */
	__be64 caps;
	__be64 conn_id;		/* the sender's local connection id */
	u8 key_half[16];	/* the sender's half of the token key (new) */
	__be64 resume_id;	/* resume: the acceptor's connection id */
	__be64 mac;		/* resume: SipHash-2-4 of the bytes above */
};

static_assert(sizeof(struct xferk_cm_msg) <= 56);

/* Why we refuse a connect request (struct xferk_cm_rej.reason). */
enum xferk_rej_reason {
	XFERK_REJ_VERSION = 1,		/* protocol version not supported */
	XFERK_REJ_MALFORMED = 2,	/* not a valid xferk request */
	XFERK_REJ_BUSY = 3,		/* max_passive_conns reached */
	XFERK_REJ_RESOURCES = 4,	/* we could not set the end up */
	XFERK_REJ_STALE = 5,		/* resume of a session we do not know */
	XFERK_REJ_RETRY = 6,		/* resume: the old path is going; retry */
	XFERK_REJ_CROSSED = 7,		/* ours to you crosses yours: use ours */
};

struct xferk_cm_rej {
	__be32 magic;
	__be16 version;
	__be16 reserved;
	__be32 reason;		/* enum xferk_rej_reason */
};

/**
 * struct xferk_dev - what xferk keeps per RDMA device
 * @ibdev: the device
 * @ref: the device's own (until .remove) and one per attached connection
 * @conns: attached connections (xferk_devs_lock)
 * @released: completed when @ref drops to zero
 * @qdev: the device's admission queue (ref)
 * @maps: regions mapped for the device (struct xferk_dma_map.dev_node,
 *	xferk_dma_lock)
 */
struct xferk_dev {
	struct ib_device *ibdev;
	struct kref ref;
	struct list_head conns;
	struct completion released;
	struct xferk_qdev *qdev;
	struct list_head maps;
};

/**
 * struct xferk_dma_map - a region's pages DMA-mapped for one device
 * @next: the region's next map (region->maps)
 * @dev: the device; NULL once the device's removal unmapped the pages
 *	(written under xferk_dma_lock, read without it by posters)
 * @dev_node: in @dev's maps while mapped (xferk_dma_lock)
 * @npages: pages mapped (the region's), 0 in @per_post mode
 * @dir: DMA_BIDIRECTIONAL, or DMA_TO_DEVICE for a region the device
 *	never writes (only a source of WRITEs)
 * @per_post: the pages could not stay mapped (the device needs its DMA
 *	synced, e.g. bounce buffers, or mapping them all failed): each post
 *	maps its chunk's pages and its completion unmaps them
 * @dma: each page's DMA address, whole pages
 *
 * Made when a connection on the device first posts a chunk of the region,
 * as ib_umem maps at registration: posting then builds SGEs from @dma and
 * maps nothing. Lives until the region goes or the device does, whichever
 * is first; either waits until nothing posted can use it (a chunk holds
 * its region; a device goes only once its connections are gone). Its
 * array is charged to the region owner's memory cgroup.
 */
struct xferk_dma_map {
	struct xferk_dma_map *next;
	struct xferk_dev *dev;
	struct list_head dev_node;
	unsigned long npages;
	enum dma_data_direction dir;
	bool per_post;
	u64 dma[];
};

/* Makes and tears down maps; posting reads them without it. */
static DEFINE_MUTEX(xferk_dma_lock);

/**
 * struct xferk_send - one send slot of a connection: a posted chunk's
 * work request
 * @node: on conn->free_sends while free (conn->lock)
 * @cqe: its completion
 * @ch: the chunk it carries while posted
 * @lane: the QP it is posted on (while posted)
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
	struct xferk_chunk *ch;
	struct xferk_lane *lane;
	int nr_sge;
	bool per_post;
	enum dma_data_direction dir;
	struct ib_sge sge[XFERK_MAX_SGE];
	struct ib_rdma_wr wr;
};

/**
 * struct xferk_msgs - a connection's session message buffers
 * @buf: XFERK_MSG_RECVS receive buffers, then XFERK_MSG_SENDS send buffers;
 *	DMA-mapped as one while the connection has its PD (@dma)
 * @recv_cqe: the completion of each receive buffer's work request
 * @send_cqe: of each send buffer's
 * @send_busy: send buffers posted and not yet completed (conn->lock);
 *	cleared for each new path
 * @send_seq: the notification sequence number each send buffer carries,
 *	0 for other messages (conn->lock)
 * @inflight: receive and send work requests posted on the current path
 *	whose completion was not handled yet; the path's disconnect waits for
 *	their flush (conn->idle), so no completion of theirs is still pending
 *	when the CQ is freed
 * @dma: the mapping of @buf, while @mapped
 * @mapped: @buf is DMA-mapped on the connection's device
 *
 * @buf has cache lines of its own: the device writes it while the CPU
 * writes the rest.
 */
struct xferk_msgs {
	u8 buf[XFERK_MSG_RECVS + XFERK_MSG_SENDS][XFERK_MSG_SIZE];
	struct ib_cqe recv_cqe[XFERK_MSG_RECVS] ____cacheline_aligned;
	struct ib_cqe send_cqe[XFERK_MSG_SENDS];
	DECLARE_BITMAP(send_busy, XFERK_MSG_SENDS);
	u64 send_seq[XFERK_MSG_SENDS];
	atomic_t inflight;
	u64 dma;
	bool mapped;
};

static DEFINE_MUTEX(xferk_devs_lock);	/* client data lookups, dev->conns */

/*
 * The listener. Bound to the wildcard address (the default) it lives on no
 * device. Bound to one address it lives on that address's device, and
 * when that device goes rdma_cm asks us to let go of it: we do, and listen
 * again whenever a device appears.
 */
static DEFINE_MUTEX(xferk_listen_lock);	/* the two below */
static struct rdma_cm_id *xferk_listener;
static bool xferk_listen_stopped;
static void listen_work_fn(struct work_struct *work);
static DECLARE_WORK(xferk_listen_work, listen_work_fn);
static atomic_t xferk_passive_conns = ATOMIC_INIT(0);
static struct ib_client xferk_ib_client;

/* Fault injection: the next N posts find their QP moved to the error state. */
atomic_t xferk_fault_qp_error = ATOMIC_INIT(0);
/* Fault injection: the next N chains the device takes only half of. */
atomic_t xferk_fault_refuse_chain = ATOMIC_INIT(0);
/* Fault injection: announce no capability, use none (an old peer). */
bool xferk_fault_no_caps;

/* ---- DMA maps of regions ---- */

static void dma_map_undo(struct xferk_dma_map *m, struct ib_device *ibdev,
			 unsigned long n)
{
	while (n--) {
		ib_dma_unmap_page(ibdev, m->dma[n], PAGE_SIZE, m->dir);
		cond_resched();
	}
}

/*
 * Maps every page of @r for @ibdev into @m. Return: true, or false (and
 * nothing mapped) if a mapping failed or a page would need its DMA synced
 * around each transfer, which one long-lived mapping cannot do.
 */
static bool dma_map_pages(struct xferk_dma_map *m, struct xferk_region *r,
			  struct ib_device *ibdev)
{
	unsigned long i;

	for (i = 0; i < r->npages; i++) {
		m->dma[i] = ib_dma_map_page(ibdev, r->pages[i], 0, PAGE_SIZE,
					    m->dir);
		if (ib_dma_mapping_error(ibdev, m->dma[i]) ||
		    (!ib_uses_virt_dma(ibdev) &&
		     dma_need_sync(ibdev->dma_device, m->dma[i]))) {
			if (!ib_dma_mapping_error(ibdev, m->dma[i]))
				i++;
			dma_map_undo(m, ibdev, i);
			return false;
		}
		cond_resched();
	}
	return true;
}

/* A new map of @r for @d, charged to the region owner's memory cgroup. */
static struct xferk_dma_map *dma_map_create(struct xferk_region *r,
					    struct xferk_dev *d)
{
	struct mem_cgroup *memcg = get_mem_cgroup_from_mm(r->mm), *old;
	struct xferk_dma_map *m;
	bool whole;

	old = set_active_memcg(memcg);
	m = kvzalloc(struct_size(m, dma, r->npages),
		     XFERK_GFP_USER | __GFP_NOWARN);
	whole = m;
	if (!m)		/* mapping per post needs no array */
		m = kzalloc(sizeof(*m), XFERK_GFP_USER);
	set_active_memcg(old);
	mem_cgroup_put(memcg);
	if (!m)
		return NULL;
	m->dev = d;
	m->dir = r->writable ? DMA_BIDIRECTIONAL : DMA_TO_DEVICE;
	m->per_post = !whole || !dma_map_pages(m, r, d->ibdev);
	m->npages = m->per_post ? 0 : r->npages;
	return m;
}

/*
 * The map of @r for @d, made now if it has none. Called with the posting
 * connection's lock; the pages are mapped without the global lock, which
 * is taken only to publish the map (a racing twin is thrown away).
 * Return: the map, or NULL (no memory).
 */
static struct xferk_dma_map *region_dma_map(struct xferk_region *r,
					    struct xferk_dev *d)
{
	struct xferk_dma_map *m, *new;

	/* Pairs with the release below: a map seen is a map filled. */
	for (m = smp_load_acquire(&r->maps); m; m = m->next)
		if (READ_ONCE(m->dev) == d)
			return m;
	new = dma_map_create(r, d);
	if (!new)
		return NULL;
	mutex_lock(&xferk_dma_lock);
	/* Another connection on the device may have made one meanwhile. */
	for (m = r->maps; m && m->dev != d; m = m->next)
		;
	if (!m) {
		m = new;
		new = NULL;
		list_add(&m->dev_node, &d->maps);
		m->next = r->maps;
		/* Publishes the filled map to the lockless readers above. */
		smp_store_release(&r->maps, m);
	}
	mutex_unlock(&xferk_dma_lock);
	if (new) {
		dma_map_undo(new, d->ibdev, new->npages);
		kvfree(new);
	}
	return m;
}

/* Unmaps @m from its device, which keeps it no more. xferk_dma_lock held. */
static void dma_map_unmap_locked(struct xferk_dma_map *m)
{
	lockdep_assert_held(&xferk_dma_lock);
	dma_map_undo(m, m->dev->ibdev, m->npages);
	list_del(&m->dev_node);
	WRITE_ONCE(m->dev, NULL);
}

/**
 * xferk_region_unmap() - the region is going: unmap and free its maps
 * @r: the region; no chunk of it is posted or will be
 */
void xferk_region_unmap(struct xferk_region *r)
{
	struct xferk_dma_map *m;

	if (!r->maps)
		return;
	mutex_lock(&xferk_dma_lock);
	while ((m = r->maps)) {
		r->maps = m->next;
		if (m->dev)
			dma_map_unmap_locked(m);
		kvfree(m);
	}
	mutex_unlock(&xferk_dma_lock);
}

/* The device is going and no connection uses it: unmap what it has. */
static void dev_unmap_all(struct xferk_dev *d)
{
	struct xferk_dma_map *m, *tmp;

	mutex_lock(&xferk_dma_lock);
	list_for_each_entry_safe(m, tmp, &d->maps, dev_node)
		dma_map_unmap_locked(m);
	mutex_unlock(&xferk_dma_lock);
}

/* ---- devices ---- */

static void dev_release(struct kref *ref)
{
	complete(&container_of(ref, struct xferk_dev, ref)->released);
}

static int xferk_ib_add(struct ib_device *ibdev)
{
	struct xferk_dev *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return -ENOMEM;
	d->qdev = xferk_qdev_create(dev_name(&ibdev->dev));
	if (!d->qdev) {
		kfree(d);
		return -ENOMEM;
	}
	d->ibdev = ibdev;
	kref_init(&d->ref);
	INIT_LIST_HEAD(&d->conns);
	INIT_LIST_HEAD(&d->maps);
	init_completion(&d->released);
	mutex_lock(&xferk_devs_lock);
	ib_set_client_data(ibdev, &xferk_ib_client, d);
	mutex_unlock(&xferk_devs_lock);
	/* A listener that lost its device may find its address here. */
	queue_work(xferk_conn_wq, &xferk_listen_work);
	return 0;
}

/*
 * Our client is removed before rdma_cm's (reverse registration order).
 * After the client data is cleared no connection can attach; the attached
 * ones go down and we wait until their teardown freed what they had here.
 */
static void xferk_ib_remove(struct ib_device *ibdev, void *client_data)
{
	struct xferk_dev *d = client_data;
	struct xferk_conn *c;

	mutex_lock(&xferk_devs_lock);
	ib_set_client_data(ibdev, &xferk_ib_client, NULL);
	list_for_each_entry(c, &d->conns, dev_node)
		xferk_conn_down(c, -ENODEV);
	mutex_unlock(&xferk_devs_lock);
	kref_put(&d->ref, dev_release);
	wait_for_completion(&d->released);
	dev_unmap_all(d);
	xferk_qdev_put(d->qdev);
	kfree(d);
}

static struct ib_client xferk_ib_client = {
	.name = "xferk",
	.add = xferk_ib_add,
	.remove = xferk_ib_remove,
};

/*
 * Attaches @c to its cm_id's device, unless that device is going away.
 * Return: 0 or -ENODEV.
 */
static int conn_attach(struct xferk_conn *c, struct ib_device *ibdev)
{
	struct xferk_dev *d;

	mutex_lock(&xferk_devs_lock);
	d = ib_get_client_data(ibdev, &xferk_ib_client);
	if (d) {
		kref_get(&d->ref);
		list_add_tail(&c->dev_node, &d->conns);
		c->dev = d;
		xferk_qdev_get(d->qdev);
		c->qdev = d->qdev;
	}
	mutex_unlock(&xferk_devs_lock);
	return d ? 0 : -ENODEV;
}

/* After every verbs resource of @c is gone: the device may go too. */
static void conn_detach(struct xferk_conn *c)
{
	struct xferk_dev *d = c->dev;

	if (!d)
		return;
	mutex_lock(&xferk_devs_lock);
	list_del_init(&c->dev_node);
	mutex_unlock(&xferk_devs_lock);
	c->dev = NULL;
	kref_put(&d->ref, dev_release);
}

/* ---- posting ---- */

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

static void conn_rdma_chunk_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_send *s = container_of(wc->wr_cqe, struct xferk_send, cqe);
	struct xferk_conn *c = cq->cq_context;

	if (wc->status != IB_WC_SUCCESS && wc->status != IB_WC_WR_FLUSH_ERR)
		pr_debug("xferk: conn %u: chunk failed: %s\n", c->id,
			 ib_wc_status_msg(wc->status));
	xferk_conn_chunk_done(c, s->ch, wc_errno(wc->status));
}

/* ---- the path's completion queue ---- */

static struct workqueue_struct *xferk_cq_wq;

/* Completions handled per run of a CQ's work before it yields the CPU. */
#define XFERK_CQ_BUDGET		512

/*
 * The CQ's completion event (device context): its work polls it. Only for
 * the path's CQ as it is: soft-RoCE may still call a destroyed CQ's
 * handler (its completion tasklet), after the next path made its own.
 */
static void conn_cq_event(struct ib_cq *cq, void *context)
{
	struct xferk_conn *c = context;

	if (cq == READ_ONCE(c->cq) && !READ_ONCE(c->cq_stopped))
		queue_work(xferk_cq_wq, &c->cq_work);
}

/*
 * Polls the path's CQ, XFERK_CQ_BATCH completions at a time, in order:
 * each run of chunks whose work requests succeeded completes as one batch
 * (xferk_conn_chunks_succeeded(): one hold of the connection's lock, one
 * of the queue's per device queue, the send slots and windows they free
 * refilled as chains); any other completion goes to its own handler, after
 * the chunks before it. Then the CQ is armed again, or, past the budget or
 * with a completion that raced the arming, the work runs again. A work
 * item never runs twice at once: it is the CQ's only poller.
 */
static void conn_cq_work(struct work_struct *work)
{
	struct xferk_conn *c = container_of(work, struct xferk_conn, cq_work);
	struct xferk_chunk *succeeded[XFERK_CQ_BATCH];
	int n, i, nr, total = 0;

	if (READ_ONCE(c->cq_stopped))
		return;
	do {
		n = ib_poll_cq(c->cq, XFERK_CQ_BATCH, c->cq_wcs);
		for (i = 0, nr = 0; i < n; i++) {
			struct ib_wc *wc = &c->cq_wcs[i];

			if (wc->status == IB_WC_SUCCESS && wc->wr_cqe &&
			    wc->wr_cqe->done == conn_rdma_chunk_done) {
				succeeded[nr++] = container_of(wc->wr_cqe,
							       struct xferk_send,
							       cqe)->ch;
				continue;
			}
			if (nr)
				xferk_conn_chunks_succeeded(c, succeeded, nr);
			nr = 0;
			if (wc->wr_cqe)
				wc->wr_cqe->done(c->cq, wc);
			else
				WARN_ON_ONCE(wc->status == IB_WC_SUCCESS);
		}
		if (nr)
			xferk_conn_chunks_succeeded(c, succeeded, nr);
		total += max(n, 0);
	} while (n == XFERK_CQ_BATCH && total < XFERK_CQ_BUDGET);
	if (total >= XFERK_CQ_BUDGET ||
	    ib_req_notify_cq(c->cq, IB_CQ_NEXT_COMP |
				    IB_CQ_REPORT_MISSED_EVENTS) > 0)
		queue_work(xferk_cq_wq, &c->cq_work);
}

/*
 * A new path's CQ of @cqes entries, armed, on an unbound workqueue:
 * completion handling (the op's accounting, the queue, the next posts,
 * io_uring completions) runs on any CPU, not only on the one whose
 * softirq raised it (a software device's tasklets run there too). The
 * previous path's work is not running (conn_cq_destroy()).
 */
static int conn_cq_create(struct xferk_conn *c, struct ib_device *dev,
			  int cqes)
{
	struct ib_cq_init_attr attr = { .cqe = cqes };
	struct ib_cq *cq;

	cq = ib_create_cq(dev, conn_cq_event, NULL, c, &attr);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	WRITE_ONCE(c->cq_stopped, false);
	WRITE_ONCE(c->cq, cq);
	ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	return 0;
}

/*
 * After the path's QPs are destroyed: its work stops, then the CQ goes.
 * What it did not handle is teardown's: the chunks still posted
 * (xferk_conn_flush_posted()), the message ring (msg_path_init() of the
 * next path), a registration (reg_done) and a probe. An event that raced
 * the stop may queue the work again: it returns at once, and the second
 * cancel waits for it.
 */
static void conn_cq_destroy(struct xferk_conn *c)
{
	WRITE_ONCE(c->cq_stopped, true);
	cancel_work_sync(&c->cq_work);
	ib_destroy_cq(c->cq);
	WRITE_ONCE(c->cq, NULL);
	cancel_work_sync(&c->cq_work);
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
static int send_map(struct xferk_conn *c, struct xferk_send *s,
		    const struct xferk_chunk *ch)
{
	struct xferk_region *r = ch->region;
	u64 uaddr = r->addr + ch->offset;
	unsigned long page = (uaddr >> PAGE_SHIFT) - (r->addr >> PAGE_SHIFT);
	unsigned int off = offset_in_page(uaddr);
	u32 left = ch->len, lkey = c->pd->local_dma_lkey;
	struct xferk_dma_map *m = region_dma_map(r, c->dev);
	struct ib_device *dev = c->pd->device;

	if (!m)
		return -ENOMEM;
	s->nr_sge = 0;
	s->per_post = m->per_post;
	s->dir = ch->opcode == XFERK_OP_WRITE ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
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

/* Gives @ch a send slot with its mapped pages and work request. */
static int send_prepare(struct xferk_conn *c, struct xferk_chunk *ch)
{
	struct xferk_send *s;
	int ret;

	s = list_first_entry_or_null(&c->free_sends, struct xferk_send, node);
	/* Credits guarantee a slot; the split, that the pages fit its SGEs. */
	if (WARN_ON_ONCE(!s) ||
	    WARN_ON_ONCE(DIV_ROUND_UP(offset_in_page(ch->region->addr +
						     ch->offset) + ch->len,
				      PAGE_SIZE) > c->max_chunk_pages))
		return -EIO;
	ret = send_map(c, s, ch);
	if (ret)
		return ret;
	list_del(&s->node);
	s->ch = ch;
	s->cqe.done = conn_rdma_chunk_done;
	s->wr = (struct ib_rdma_wr) {
		.wr.wr_cqe = &s->cqe,
		.wr.sg_list = s->sge,
		.wr.num_sge = s->nr_sge,
		.wr.opcode = ch->opcode == XFERK_OP_WRITE ? IB_WR_RDMA_WRITE :
							    IB_WR_RDMA_READ,
		.wr.send_flags = IB_SEND_SIGNALED,
		.remote_addr = ch->remote_addr,
		.rkey = xferk_chunk_remote(ch)->rkey,
	};
	ch->send = s;
	return 0;
}

/*
 * Undoes send_prepare(), or a post once its work request is terminal: the
 * pages stay mapped (the region's map) unless they were mapped per post.
 */
static void conn_rdma_unpost(struct xferk_conn *c, struct xferk_chunk *ch)
{
	struct xferk_send *s = ch->send;

	lockdep_assert_held(&c->lock);
	send_unmap(c->pd->device, s);
	s->lane->posted--;
	s->ch = NULL;
	ch->send = NULL;
	list_add(&s->node, &c->free_sends);
}

/*
 * The path's QP with the fewest chunks posted, if it has room for one (on
 * a postable path every QP is established). The search starts after the
 * last one picked, so QPs equally busy take turns.
 */
static struct xferk_lane *lane_pick(struct xferk_conn *c)
{
	struct xferk_lane *best = NULL, *l;
	u32 i;

	lockdep_assert_held(&c->lock);
	for (i = 0; i < c->nr_qps; i++) {
		l = &c->lanes[(c->next_lane + i) % c->nr_qps];
		if (l->live && (!best || l->posted < best->posted))
			best = l;
	}
	if (!best || best->posted >= XFERK_QP_CTXS)
		return NULL;
	c->next_lane = best->index + 1;
	return best;
}

/*
 * The chunks' work requests as one chain on the least busy QP of the path,
 * one ib_post_send() (one doorbell); as many as its send queue takes (the
 * rest wait, *@error 0). Every one is signaled: its completion is what returns its
 * send slot and counts its chunk in the op, so each chunk learns its own
 * outcome, and a flushed or failed work request is its own chunk's. (On
 * an RC send queue one completion would also vouch for every work request
 * before it, and failed ones always complete; moderation is left until a
 * device's completion rate, not its posting, limits xferk.)
 */
static u32 conn_rdma_post(struct xferk_conn *c, struct xferk_chunk **chs,
			  u32 n, int *error)
{
	struct xferk_lane *l = lane_pick(c);
	const struct ib_send_wr *bad = NULL;
	struct ib_send_wr *first = NULL, **link = &first;
	u32 ready, i;
	int ret = 0;

	*error = 0;
	if (!l)
		return 0;
	n = min_t(u32, n, XFERK_QP_CTXS - l->posted);
	for (ready = 0; ready < n; ready++) {
		ret = send_prepare(c, chs[ready]);
		if (ret)
			break;
		chs[ready]->send->lane = l;
		l->posted++;
		*link = &chs[ready]->send->wr.wr;
		link = &chs[ready]->send->wr.wr.next;
	}
	*error = ret;
	if (!ready)
		return 0;
	if (atomic_dec_if_positive(&xferk_fault_qp_error) >= 0) {
		struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

		ib_modify_qp(l->qp, &attr, IB_QP_STATE);
	}
	if (ready > 1 && atomic_dec_if_positive(&xferk_fault_refuse_chain) >= 0) {
		/* As a driver whose queue takes the first half: bad_wr after. */
		chs[ready / 2 - 1]->send->wr.wr.next = NULL;
		ret = ib_post_send(l->qp, first, &bad);
		if (!ret) {
			bad = &chs[ready / 2]->send->wr.wr;
			ret = -ENOMEM;
		}
	} else {
		ret = ib_post_send(l->qp, first, &bad);
	}
	if (!ret) {
		l->posts += ready;
		return ready;
	}
	/* The driver posted the work requests before @bad, none after. */
	for (i = 0; i < ready && &chs[i]->send->wr.wr != bad; i++)
		;
	WARN_ON_ONCE(i == ready);
	n = i;
	l->posts += n;
	for (; i < ready; i++)
		conn_rdma_unpost(c, chs[i]);
	if (ret == -ENOMEM) {
		*error = -ENOMEM;
	} else {
		/* A QP that refuses a valid post is not ready to send. */
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
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
static void conn_rdma_disconnect(struct xferk_conn *c)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct rdma_cm_id *id;
	struct xferk_lane *l;

	/* Every QP's: none joins the path any more (it is marked dead). */
	for (l = c->lanes; l < c->lanes + XFERK_MAX_QPS; l++) {
		wait_for_completion(&l->cm_ready);
		spin_lock_irq(&c->cm_lock);
		id = l->cm_id;
		l->cm_id = NULL;
		spin_unlock_irq(&c->cm_lock);
		if (id)
			rdma_destroy_id(id);
	}
	/* Also for a half-connected QP: error state flushes everything. */
	for (l = c->lanes; l < c->lanes + XFERK_MAX_QPS; l++)
		if (l->qp)
			ib_modify_qp(l->qp, &attr, IB_QP_STATE);
	if (!c->lanes[0].qp)
		return;
	/*
	 * The message ring's flushes handled before the QP and CQ go (bounded,
	 * like the chunks' wait): soft-RoCE frees a CQ whose completion
	 * tasklet may still be scheduled, and a flush arriving at the CQ just
	 * before it goes would schedule it.
	 */
	wait_event_timeout(c->idle, !atomic_read(&c->msgs->inflight),
			   msecs_to_jiffies(1000));
}

/*
 * QPs first, then the CQ: conn_cq_destroy() waits for a running completion
 * handler. A registration still waiting for its completion gets none now:
 * it is released here, as failed (before teardown revokes exports).
 */
static void conn_rdma_quiesce(struct xferk_conn *c)
{
	struct ib_qp *qps[XFERK_MAX_QPS];
	int i;

	mutex_lock(&c->lock);
	for (i = 0; i < XFERK_MAX_QPS; i++) {
		qps[i] = c->lanes[i].qp;
		c->lanes[i].qp = NULL;
		c->lanes[i].live = false;
	}
	mutex_unlock(&c->lock);
	for (i = 0; i < XFERK_MAX_QPS; i++)
		if (qps[i])
			ib_destroy_qp(qps[i]);
	if (c->cq)
		conn_cq_destroy(c);
	complete(&c->reg_done);
}

static void conn_rdma_destroy(struct xferk_conn *c)
{
	if (c->msgs->mapped)
		ib_dma_unmap_single(c->pd->device, c->msgs->dma,
				    sizeof(c->msgs->buf), DMA_BIDIRECTIONAL);
	c->msgs->mapped = false;
	if (c->pd)
		ib_dealloc_pd(c->pd);
	c->pd = NULL;
	INIT_LIST_HEAD(&c->free_sends);
	conn_detach(c);
	if (!c->active)
		atomic_dec(&xferk_passive_conns);
}

static void conn_probe_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_conn *c = cq->cq_context;

	xferk_conn_probe_done(c, wc->status == IB_WC_WR_FLUSH_ERR ? 0 :
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
static int conn_rdma_probe(struct xferk_conn *c)
{
	struct ib_rdma_wr wr = {
		.wr.opcode = IB_WR_RDMA_WRITE,
		.wr.wr_cqe = &c->keepalive_cqe,
		.wr.send_flags = IB_SEND_SIGNALED,
	};
	struct ib_qp *qp = c->lanes[0].qp;
	enum ib_port_state state;

	lockdep_assert_held(&c->lock);
	if (ib_get_cached_port_state(qp->device, qp->port, &state) ||
	    state != IB_PORT_ACTIVE)
		return -EAGAIN;
	c->keepalive_cqe.done = conn_probe_done;
	return ib_post_send(qp, &wr.wr, NULL);
}

/* ---- session messages ---- */

static u64 msg_dma(const struct xferk_conn *c, int buf)
{
	return c->msgs->dma + (u64)buf * XFERK_MSG_SIZE;
}

static void conn_msg_recv_done(struct ib_cq *cq, struct ib_wc *wc);

/* (Re)posts receive buffer @i; the QP is live. */
static int msg_post_recv(struct xferk_conn *c, int i)
{
	struct ib_sge sge = {
		.addr = msg_dma(c, i),
		.length = XFERK_MSG_SIZE,
		.lkey = c->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &c->msgs->recv_cqe[i],
		.sg_list = &sge,
		.num_sge = 1,
	};
	int ret;

	c->msgs->recv_cqe[i].done = conn_msg_recv_done;
	ret = ib_post_recv(c->lanes[0].qp, &wr, NULL);
	if (!ret)
		atomic_inc(&c->msgs->inflight);
	return ret;
}

/* A message work request's completion was handled. */
static void msg_done(struct xferk_conn *c)
{
	if (atomic_dec_and_test(&c->msgs->inflight))
		wake_up_all(&c->idle);
}

/*
 * A message arrived: copied out, its buffer posted again at once (the
 * ring bound in xferk.h counts on it), then handed to the protocol.
 * Anything but a SEND is not a message.
 */
static void conn_msg_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_conn *c = cq->cq_context;
	int i = wc->wr_cqe - c->msgs->recv_cqe;
	struct ib_device *dev = cq->device;
	u8 msg[XFERK_MSG_SIZE];
	u32 len;

	msg_done(c);
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
		return;
	}
	len = wc->opcode == IB_WC_RECV ? wc->byte_len : 0;
	ib_dma_sync_single_for_cpu(dev, msg_dma(c, i), XFERK_MSG_SIZE,
				   DMA_BIDIRECTIONAL);
	memcpy(msg, c->msgs->buf[i], sizeof(msg));
	ib_dma_sync_single_for_device(dev, msg_dma(c, i), XFERK_MSG_SIZE,
				      DMA_BIDIRECTIONAL);
	mutex_lock(&c->lock);
	if (xferk_conn_qp_live(c) && msg_post_recv(c, i))
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
	mutex_unlock(&c->lock);
	xferk_msg_received(c, msg, len);
}

/*
 * A message went out (or was flushed): its buffer is free again. A
 * notification that went out is delivered.
 */
static void conn_msg_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_conn *c = cq->cq_context;
	int i = wc->wr_cqe - c->msgs->send_cqe;
	u64 seq;

	if (wc->status != IB_WC_SUCCESS)
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
	mutex_lock(&c->lock);
	seq = c->msgs->send_seq[i];
	__clear_bit(i, c->msgs->send_busy);
	mutex_unlock(&c->lock);
	if (seq && wc->status == IB_WC_SUCCESS)
		xferk_notify_sent(c, seq);
	mutex_lock(&c->lock);
	xferk_msgs_kick_locked(c);
	mutex_unlock(&c->lock);
	msg_done(c);
}

static int conn_rdma_send_msg(struct xferk_conn *c, const void *msg, u32 len,
			      u64 seq)
{
	struct xferk_msgs *m = c->msgs;
	int i = find_first_zero_bit(m->send_busy, XFERK_MSG_SENDS);
	int buf = XFERK_MSG_RECVS + i;
	struct ib_sge sge = {
		.addr = msg_dma(c, buf),
		.length = len,
		.lkey = c->pd->local_dma_lkey,
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
	ib_dma_sync_single_for_device(c->pd->device, sge.addr, len,
				      DMA_BIDIRECTIONAL);
	m->send_seq[i] = seq;
	m->send_cqe[i].done = conn_msg_send_done;
	if (ib_post_send(c->lanes[0].qp, &wr, NULL)) {
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
		return -EIO;
	}
	atomic_inc(&m->inflight);
	__set_bit(i, m->send_busy);
	return 0;
}

/* A new path's receive ring, before it connects; its send buffers free. */
static int msg_path_init(struct xferk_conn *c)
{
	int i, ret;

	bitmap_zero(c->msgs->send_busy, XFERK_MSG_SENDS);
	atomic_set(&c->msgs->inflight, 0);
	for (i = 0; i < XFERK_MSG_RECVS; i++) {
		ret = msg_post_recv(c, i);
		if (ret)
			return ret;
	}
	return 0;
}

/* The remote address of an export: random, with @addr's page offset. */
static u64 export_iova(u64 addr)
{
	return (get_random_u64() & GENMASK_ULL(46, PAGE_SHIFT)) |
	       offset_in_page(addr);
}

/*
 * The completion of an export's registration work request: flushed, the
 * path died under it (the session replaces the path: ECONNRESET); failed,
 * the device refused it (EIO).
 */
static void conn_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xferk_conn *c = cq->cq_context;

	if (wc->status != IB_WC_SUCCESS)
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
	WRITE_ONCE(c->reg_status, wc->status == IB_WC_SUCCESS ? 0 :
		   wc->status == IB_WC_WR_FLUSH_ERR ? -ECONNRESET : -EIO);
	complete(&c->reg_done);
}

/*
 * Posts the fast registration of @mr and waits for it. One at a time per
 * connection (c->exports_lock), in the send queue's registration slot. The
 * wait is bounded: a registration that does not complete kills the QP,
 * and teardown completes reg_done once the QP is gone.
 */
static int conn_reg_mr(struct xferk_conn *c, struct ib_mr *mr, int access)
{
	struct ib_reg_wr wr = {
		.wr.opcode = IB_WR_REG_MR,
		.wr.wr_cqe = &c->reg_cqe,
		.wr.send_flags = IB_SEND_SIGNALED,
		.mr = mr,
		.key = mr->rkey,
		.access = access,
	};
	int ret;

	lockdep_assert_held(&c->exports_lock);
	c->reg_cqe.done = conn_reg_done;
	reinit_completion(&c->reg_done);
	/* What it reads if teardown, not the completion, releases it. */
	WRITE_ONCE(c->reg_status, -ENOTCONN);
	mutex_lock(&c->lock);
	ret = xferk_conn_postable(c) ?
	      ib_post_send(c->lanes[0].qp, &wr.wr, NULL) : -ENOTCONN;
	mutex_unlock(&c->lock);
	if (ret == -ENOTCONN)
		return ret;
	if (ret) {
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
		return -EIO;
	}
	if (!wait_for_completion_timeout(&c->reg_done, 5 * HZ)) {
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
		wait_for_completion(&c->reg_done);
	}
	return READ_ONCE(c->reg_status);
}

/*
 * Fast registration of @npages of the region's own pinned pages, from
 * @offset in the first: nothing is pinned or charged a second time, nobody
 * walks the page tables again.
 */
static int export_frwr(struct xferk_conn *c, struct xferk_export *e,
		       int access, struct page **pages, unsigned long npages,
		       unsigned int offset)
{
	struct ib_device *dev = c->pd->device;
	struct ib_mr *mr;
	int nents, ret;

	ret = sg_alloc_table_from_pages(&e->sgt, pages, npages, offset, e->len,
					XFERK_GFP_USER);
	if (ret)
		return -ENOMEM;
	nents = ib_dma_map_sg(dev, e->sgt.sgl, e->sgt.orig_nents,
			      DMA_BIDIRECTIONAL);
	if (!nents) {
		ret = -EIO;
		goto err_free;
	}
	mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, npages);
	if (IS_ERR(mr)) {
		ret = PTR_ERR(mr) == -ENOMEM ? -ENOMEM : -EIO;
		goto err_unmap;
	}
	if (ib_map_mr_sg(mr, e->sgt.sgl, nents, NULL, PAGE_SIZE) != nents) {
		ret = -EIO;
		goto err_mr;
	}
	/* Never the DMA address (a kernel address on some devices). */
	mr->iova = export_iova(e->addr);
	ib_update_fast_reg_key(mr, get_random_u8());
	ret = conn_reg_mr(c, mr, access);
	if (ret)
		goto err_mr;
	e->mr = mr;
	return 0;

err_mr:
	ib_dereg_mr(mr);
err_unmap:
	ib_dma_unmap_sg(dev, e->sgt.sgl, e->sgt.orig_nents, DMA_BIDIRECTIONAL);
err_free:
	sg_free_table(&e->sgt);
	return ret;
}

/*
 * An export registers the exported range in this connection's PD, so only
 * this peer's QP can use the key (the hardware enforces it), at a random
 * remote address, so a key reused later never matches an old token. The
 * region's own pages are registered by fast registration where the device
 * maps that many pages in one MR; a longer range (soft-RoCE maps 512 pages)
 * is registered as user memory, which pins and charges its pages to
 * RLIMIT_MEMLOCK a second time. A window (its pages scattered) is always
 * fast-registered: EOPNOTSUPP without fast registration, E2BIG beyond the
 * device's page-list length.
 */
static int conn_rdma_export(struct xferk_conn *c, struct xferk_export *e)
{
	const struct ib_device_attr *attrs = &c->pd->device->attrs;
	struct xferk_region *r = e->region;
	unsigned long npages = e->npages;
	bool frwr = (attrs->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) &&
		    npages <= attrs->max_fast_reg_page_list_len;
	int access = 0;
	struct ib_mr *mr;
	int ret;

	/* Verbs require local write with remote write; not with read alone. */
	if (e->access & XFERK_ACCESS_REMOTE_WRITE)
		access |= IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	if (e->access & XFERK_ACCESS_REMOTE_READ)
		access |= IB_ACCESS_REMOTE_READ;
	if (e->window_pages && !frwr)
		return attrs->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS ?
		       -E2BIG : -EOPNOTSUPP;
	if (e->window_pages) {
		ret = export_frwr(c, e, access, e->window_pages, npages, 0);
		if (ret)
			return ret;
	} else if (frwr) {
		ret = export_frwr(c, e, access, r->pages +
				  ((e->addr >> PAGE_SHIFT) -
				   (r->addr >> PAGE_SHIFT)),
				  npages, offset_in_page(e->addr));
		if (ret)
			return ret;
	} else {
		mr = ib_reg_user_mr(c->pd, e->addr, e->len,
				    export_iova(e->addr), access);
		if (IS_ERR(mr))
			return PTR_ERR(mr) == -ENOMEM || PTR_ERR(mr) == -EFAULT ?
			       PTR_ERR(mr) : -EIO;
		e->mr = mr;
	}
	e->iova = e->mr->iova;
	e->rkey = e->mr->rkey;
	return 0;
}

static void conn_rdma_unexport(struct xferk_conn *c, struct xferk_export *e)
{
	ib_dereg_mr(e->mr);
	if (e->sgt.sgl) {
		ib_dma_unmap_sg(c->pd->device, e->sgt.sgl, e->sgt.orig_nents,
				DMA_BIDIRECTIONAL);
		sg_free_table(&e->sgt);
	}
	e->mr = NULL;
}

static int conn_rdma_reconnect(struct xferk_conn *c);

const struct xferk_transport xferk_rdma_transport = {
	.name = "rdma",
	.post = conn_rdma_post,
	.unpost = conn_rdma_unpost,
	.export = conn_rdma_export,
	.unexport = conn_rdma_unexport,
	.disconnect = conn_rdma_disconnect,
	.quiesce = conn_rdma_quiesce,
	.destroy = conn_rdma_destroy,
	.probe = conn_rdma_probe,
	.send_msg = conn_rdma_send_msg,
	.reconnect = conn_rdma_reconnect,
};

/* ---- QP ---- */

/*
 * Atomic context. COMM_EST (a receive before RTU) goes to rdma_cm as the
 * rdma_cm rules ask; every event that means the QP left RTS kills the
 * connection at once.
 */
static void conn_qp_event(struct ib_event *ev, void *ctx)
{
	struct xferk_lane *l = ctx;
	struct xferk_conn *c = l->conn;
	unsigned long flags;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
		spin_lock_irqsave(&c->cm_lock, flags);
		if (l->cm_id)
			rdma_notify(l->cm_id, IB_EVENT_COMM_EST);
		spin_unlock_irqrestore(&c->cm_lock, flags);
		break;
	case IB_EVENT_SQ_DRAINED:
	case IB_EVENT_PATH_MIG:
	case IB_EVENT_QP_LAST_WQE_REACHED:
		break;
	default:
		pr_debug("xferk: conn %u: QP event %s\n", c->id,
			 ib_event_msg(ev->event));
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_QP);
		break;
	}
}

/*
 * Lane @l's QP on @id, on the session's PD and the path's CQ. Each QP's
 * send queue takes XFERK_QP_CTXS chunks (lane_pick() keeps it so); the
 * first's also a registration, a probe and the messages, and only it
 * receives. Published under c->lock: a joining QP's request checks that
 * the path has its first.
 */
static int lane_create_qp(struct xferk_conn *c, struct xferk_lane *l,
			  struct rdma_cm_id *id)
{
	struct ib_device *dev = id->device;
	struct ib_qp_init_attr init = {
		.event_handler = conn_qp_event,
		.qp_context = l,
		.send_cq = c->cq,
		.recv_cq = c->cq,
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.port_num = id->port_num,
		.cap.max_send_wr = XFERK_QP_CTXS,
		.cap.max_recv_wr = 1,
		.cap.max_send_sge = min_t(u32, dev->attrs.max_send_sge,
					  XFERK_MAX_SGE),
		.cap.max_recv_sge = 1,
	};
	int ret;

	if (dev != c->pd->device)
		return -ENODEV;
	if (!l->index) {
		init.cap.max_send_wr += 2 + XFERK_MSG_SENDS;
		init.cap.max_recv_wr = XFERK_MSG_RECVS;
	}
	ret = rdma_create_qp(id, c->pd, &init);
	if (ret)
		return ret;
	mutex_lock(&c->lock);
	l->qp = id->qp;
	mutex_unlock(&c->lock);
	WRITE_ONCE(l->qp_num, id->qp->qp_num);
	/*
	 * The path's QPs have the same capabilities. A device that claims 0
	 * read SGEs still gets one page per chunk.
	 */
	if (!l->index)
		c->max_chunk_pages = clamp_t(u32,
					     min_t(u32, init.cap.max_send_sge,
						   dev->attrs.max_sge_rd),
					     1, XFERK_MAX_SGE);
	return rdma_set_ack_timeout(id, XFERK_ACK_TIMEOUT);
}

/*
 * CQ and first QP of a new path on @id's (attached) device; the session's
 * first path also makes its PD and lists its send slots (allocated with
 * the connection, charged to whoever caused it; a dead path's teardown
 * gives every slot back). A later path must be on the session's device.
 */
static int conn_rdma_setup(struct xferk_conn *c, struct rdma_cm_id *id)
{
	struct ib_device *dev = id->device;
	int i, ret;

	if (c->pd) {
		if (c->pd->device != dev)
			return -ENODEV;
	} else {
		for (i = 0; i < c->nr_qps * XFERK_QP_CTXS; i++)
			list_add_tail(&c->sends[i].node, &c->free_sends);
		c->pd = ib_alloc_pd(dev, 0);
		if (IS_ERR(c->pd)) {
			ret = PTR_ERR(c->pd);
			c->pd = NULL;
			return ret;
		}
		c->msgs->dma = ib_dma_map_single(dev, c->msgs->buf,
						 sizeof(c->msgs->buf),
						 DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(dev, c->msgs->dma))
			return -ENOMEM;
		c->msgs->mapped = true;
	}
	/*
	 * One CQE per chunk (every QP's send slots), an export's
	 * registration, a keepalive probe, each message buffer.
	 */
	ret = conn_cq_create(c, dev, c->nr_qps * XFERK_QP_CTXS + 2 +
			     XFERK_MSG_SENDS + XFERK_MSG_RECVS);
	if (ret)
		return ret;
	ret = lane_create_qp(c, &c->lanes[0], id);
	if (ret)
		return ret;
	return msg_path_init(c);
}

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

/* The key half this end sends; kept in the connection until it is up. */
static u8 *conn_key_half(struct xferk_conn *c)
{
	BUILD_BUG_ON(sizeof(c->token_key) != 16);
	return (u8 *)&c->token_key;
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
 * The session's QPs per path: @nr of them (what the initiator asks, what
 * the acceptor grants), XFERK_QP_CTXS send slots and one QP window each in
 * the admission queue. Set before the session is keyed, so before
 * anything is dispatched to it or posted; the initiator's send slots were
 * allocated for what it asked, at least what it is granted.
 */
static void conn_set_qps(struct xferk_conn *c, u32 nr)
{
	mutex_lock(&c->lock);
	c->nr_qps = nr;
	c->credits = nr * XFERK_QP_CTXS;
	mutex_unlock(&c->lock);
	WRITE_ONCE(c->sqp.nr_qps, nr);
}

static int xferk_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);

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
	spin_lock_irq(&c->cm_lock);
	l->cm_id = id;
	spin_unlock_irq(&c->cm_lock);
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
	for (i = 1; i < c->nr_qps; i++)
		lane_start(c, &c->lanes[i], &src);
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
	struct xferk_conn *c = l->conn;
	const struct xferk_cm_msg *rep;
	struct rdma_conn_param param;
	struct xferk_cm_msg req;
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, XFERK_RESOLVE_MS);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = lane_create_qp(c, l, id);
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
		ret = c->dev ? 0 : conn_attach(c, id->device);
		if (!ret)
			ret = rdma_resolve_route(id, XFERK_RESOLVE_MS);
		if (ret)
			xferk_conn_path_down(c, ret, XFERK_PATH_QP);
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (!conn_connecting(c))
			return;
		ret = conn_rdma_setup(c, id);
		if (ret) {
			xferk_conn_path_down(c, ret, XFERK_PATH_QP);
			return;
		}
		if (conn_resuming(c)) {
			cm_msg_init_resume(&req, c, c->resume_seq + 1, 0);
			WRITE_ONCE(c->resume_seq, c->resume_seq + 1);
		} else {
			cm_msg_init(&req, c, xferk_fault_connect_version ?:
				    XFERK_PROTO_VERSION, conn_key_half(c));
			req.nr_qps = c->nr_qps;
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
		    (conn_resuming(c) && !cm_msg_joins(rep, c, &c->lanes[0]))) {
			xferk_conn_path_down(c, -EPROTO, XFERK_PATH_QP);
			return;
		}
		if (!conn_resuming(c)) {
			conn_set_qps(c, clamp_t(u32, rep->nr_qps, 1, c->nr_qps));
			conn_set_peer(c, rep, conn_key_half(c));
		}
		xferk_conn_lane_up(c, &c->lanes[0]);
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
		xferk_conn_lane_up(c, &c->lanes[0]);
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
 * A connection with its send slots (for @nr_qps QPs), message buffers,
 * revoked ids, its CQ's work; zeroed.
 */
static struct xferk_conn *conn_rdma_alloc(gfp_t gfp, u32 nr_qps)
{
	struct xferk_conn *c = kzalloc(sizeof(*c), gfp);

	if (!c)
		return NULL;
	c->sends = kvcalloc(nr_qps * XFERK_QP_CTXS, sizeof(*c->sends), gfp);
	c->msgs = kzalloc(sizeof(*c->msgs), gfp);
	c->revoked = kvcalloc(XFERK_REVOKED_MAX, sizeof(*c->revoked), gfp);
	if (!c->sends || !c->msgs || !c->revoked) {
		kvfree(c->sends);
		kfree(c->msgs);
		kvfree(c->revoked);
		kfree(c);
		return NULL;
	}
	INIT_WORK(&c->cq_work, conn_cq_work);
	return c;
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
	if (!xferk_conn_path_attach(c)) {
		/* Its peer made a new path: the one we think up is dead. */
		if (READ_ONCE(c->state) == XFERK_CONN_UP)
			xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_PEER);
		xferk_conn_put(c);
		conn_send_reject(id, XFERK_REJ_RETRY);
		return -EAGAIN;
	}
	spin_lock_irq(&c->cm_lock);
	c->lanes[0].cm_id = id;
	spin_unlock_irq(&c->cm_lock);
	id->context = &c->lanes[0];
	complete_all(&c->lanes[0].cm_ready);	/* the handler owns @id now */
	ret = conn_rdma_setup(c, id);
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
	if (req->lane < c->nr_qps && cm_msg_seq(req) == c->resume_seq &&
	    c->path_live && xferk_conn_qp_live(c) &&
	    !c->lanes[req->lane].cm_id) {
		l = &c->lanes[req->lane];
		spin_lock_irq(&c->cm_lock);
		l->cm_id = id;
		spin_unlock_irq(&c->cm_lock);
		id->context = l;
	}
	mutex_unlock(&c->lock);
	if (!l) {
		xferk_conn_put(c);
		conn_send_reject(id, XFERK_REJ_RETRY);
		return -EAGAIN;
	}
	ret = lane_create_qp(c, l, id);
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
	c = conn_rdma_alloc(GFP_KERNEL, nr_qps);
	if (!c) {
		atomic_dec(&xferk_passive_conns);
		conn_send_reject(id, XFERK_REJ_RESOURCES);
		return -ENOMEM;
	}
	/* Passive ends live in the listener's namespace. */
	xferk_conn_init(c, &xferk_rdma_transport, &init_net, false);
	conn_set_qps(c, nr_qps);
	memcpy(&c->peer, &id->route.addr.dst_addr, sizeof(c->peer));
	if (IS_ERR(xferk_conn_publish(c, be64_to_cpu(req->conn_id)))) {
		/* It crosses a session we initiated to that host, which wins. */
		xferk_conn_put(c);
		atomic_dec(&xferk_passive_conns);
		atomic64_inc(&xferk_stats.conns_crossed);
		conn_send_reject(id, XFERK_REJ_CROSSED);
		return -EALREADY;
	}
	c->lanes[0].cm_id = id;
	id->context = &c->lanes[0];
	complete_all(&c->lanes[0].cm_ready);	/* the handler owns @id now */
	xferk_conn_arm_timer(c, READ_ONCE(xferk_handshake_timeout_ms));

	ret = conn_attach(c, id->device);
	if (!ret)
		ret = conn_rdma_setup(c, id);
	if (ret) {
		conn_send_reject(id, XFERK_REJ_RESOURCES);
		xferk_conn_down(c, ret);
		return 0;
	}
	/* Keyed, hence importable, only once its QP's limits are final. */
	get_random_bytes(conn_key_half(c), 16);
	cm_msg_init(&rep, c, XFERK_PROTO_VERSION, conn_key_half(c));
	rep.nr_qps = nr_qps;
	conn_set_peer(c, req, rep.key_half);
	ret = conn_accept(id, ev, &rep);
	if (ret)
		xferk_conn_down(c, ret);
	return 0;
}

/*
 * The listener's own events: its device going away. Non-zero makes rdma_cm
 * destroy it, which it may only when module exit did not take it first.
 */
static int listener_event(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	bool mine = false;

	if (ev->event != RDMA_CM_EVENT_DEVICE_REMOVAL)
		return 0;
	mutex_lock(&xferk_listen_lock);
	if (xferk_listener == id) {
		xferk_listener = NULL;
		mine = true;
	}
	mutex_unlock(&xferk_listen_lock);
	return mine;
}

/* An id's context is the lane it is the cm_id of; the listener's is NULL. */
static int xferk_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct xferk_lane *l = id->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return conn_passive_request(id, ev);
	if (!l)
		return listener_event(id, ev);
	if (l->index)
		lane_event(l, id, ev);
	else if (l->conn->active)
		conn_active_event(l->conn, id, ev);
	else
		conn_passive_event(l->conn, ev);
	return 0;
}

/*
 * A new connection attempt to @peer asking for @nr_qps QPs per path,
 * counted against @acct's connection limit until it leaves CONNECTING;
 * with a reference for the caller.
 */
static struct xferk_conn *conn_start(struct net *net,
				     const struct sockaddr_storage *peer,
				     unsigned int timeout_ms, u32 nr_qps,
				     struct xferk_qacct *acct, bool *created)
{
	struct xferk_conn *c, *other;
	struct rdma_cm_id *id;
	int ret;

	ret = xferk_charge(&acct->connecting, 1,
			   READ_ONCE(xferk_handle_limit[XFERK_H_CONN]), -EMFILE);
	if (ret)
		return ERR_PTR(ret);
	c = conn_rdma_alloc(XFERK_GFP_USER, nr_qps);
	if (!c) {
		atomic_long_dec(&acct->connecting);
		return ERR_PTR(-ENOMEM);
	}
	xferk_conn_init(c, &xferk_rdma_transport, net, true);
	conn_set_qps(c, nr_qps);
	kref_get(&acct->ref);
	c->creator = acct;
	c->peer = *peer;
	get_random_bytes(conn_key_half(c), 16);
	id = rdma_create_id(net, xferk_cm_handler, &c->lanes[0], RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		xferk_conn_put(c);
		return ERR_PTR(-ENOMEM);
	}
	other = xferk_conn_publish(c, 0);
	if (other) {
		/* An end to that peer appeared meanwhile (its request to us). */
		rdma_destroy_id(id);
		xferk_conn_put(c);
		return other;
	}
	c->lanes[0].cm_id = id;
	*created = true;
	xferk_conn_get(c);	/* the caller's */
	xferk_conn_arm_timer(c, timeout_ms);
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)peer, timeout_ms);
	/* The handler's alone with @id now; teardown may destroy it. */
	complete_all(&c->lanes[0].cm_ready);
	if (ret)
		xferk_conn_down(c, ret);
	return c;
}

/*
 * The next path of a RECONNECTING session we initiated (the recovery
 * work, after it tore the last one down and reinitialized cm_ready): the
 * same steps as the first, to the same peer address, on the same device.
 */
static int conn_rdma_reconnect(struct xferk_conn *c)
{
	struct rdma_cm_id *id;
	int ret;

	id = rdma_create_id(c->net, xferk_cm_handler, &c->lanes[0],
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		complete_all(&c->lanes[0].cm_ready);
		return -ENOMEM;
	}
	spin_lock_irq(&c->cm_lock);
	c->lanes[0].cm_id = id;
	spin_unlock_irq(&c->cm_lock);
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&c->peer,
				XFERK_RESOLVE_MS);
	complete_all(&c->lanes[0].cm_ready);
	return ret;
}

/* Up with a live path, or down: what CONNECT waits for. */
static bool conn_settled(struct xferk_conn *c)
{
	int state = READ_ONCE(c->state);

	return state == XFERK_CONN_DOWN ||
	       (state == XFERK_CONN_UP &&
		!test_bit(XFERK_CONN_F_QP_DEAD, &c->flags));
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
 *	connection limit until it is up or down
 *
 * A new connection's attempt is bounded by @timeout_ms whoever waits for
 * it. A caller interrupted by a signal leaves the attempt running for
 * others; one that gives up for good (timeout, fatal signal) ends an
 * attempt it started. A session that is replacing its path is waited for
 * within @timeout_ms too; if it goes down meanwhile, a new connection is
 * made in the time left.
 *
 * Return: the connection, up, with a reference; or ERR_PTR: -EHOSTUNREACH,
 * -ECONNREFUSED, -ETIMEDOUT, -EPROTONOSUPPORT, -EPROTO, -ECONNRESET,
 * -ENODEV, -ENOMEM, -EIO, -EMFILE, or -ERESTARTSYS (a signal; the attempt
 * goes on).
 */
struct xferk_conn *xferk_conn_connect(struct net *net,
				      const struct sockaddr_storage *peer,
				      unsigned int timeout_ms, u32 nr_qps,
				      struct xferk_qacct *acct)
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
		c = conn_start(net, peer, timeout_ms, nr_qps, acct, &created);
		if (IS_ERR(c))
			return c;
	}

	left = wait_event_interruptible_timeout(c->state_wq, conn_settled(c),
						max_t(long, until - jiffies, 1));
	mutex_lock(&c->lock);
	ret = c->state == XFERK_CONN_UP ? 0 : c->error;
	if (c->state != XFERK_CONN_DOWN && !conn_settled(c))
		ret = left < 0 ? -ERESTARTSYS : -ETIMEDOUT;
	mutex_unlock(&c->lock);
	if (!ret)
		return c;
	/*
	 * The session we found ended while we waited, or ours crossed the
	 * peer's and lost (the peer's end is ours now): look again.
	 */
	lost = ret == -EALREADY ||
	       (!created && READ_ONCE(c->state) == XFERK_CONN_DOWN);
	if (lost && time_before(jiffies, until)) {
		xferk_conn_put(c);
		created = false;
		goto again;
	}
	if (ret == -EALREADY)
		ret = -ETIMEDOUT;
	if (created && (ret == -ETIMEDOUT || fatal_signal_pending(current)))
		xferk_conn_down(c, ret);
	xferk_conn_put(c);
	/* An end that was up and went down while we looked: reset. */
	if (ret == -ECANCELED || ret == -ESHUTDOWN || ret == -ESTALE)
		ret = -ECONNRESET;
	return ERR_PTR(ret);
}

/* ---- the listener, the module ---- */

/* Listens on listen_addr, unless it does or the module is going. */
static int listener_start(void)
{
	struct rdma_cm_id *id;
	int ret = 0;

	mutex_lock(&xferk_listen_lock);
	if (xferk_listener || xferk_listen_stopped)
		goto out;
	id = rdma_create_id(&init_net, xferk_cm_handler, NULL, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto out;
	}
	ret = rdma_bind_addr(id, (struct sockaddr *)&xferk_listen_sockaddr);
	if (!ret)
		ret = rdma_listen(id, 128);
	if (ret)
		rdma_destroy_id(id);
	else
		xferk_listener = id;
out:
	mutex_unlock(&xferk_listen_lock);
	return ret;
}

static void listen_work_fn(struct work_struct *work)
{
	int ret = listener_start();

	if (ret)
		pr_warn_ratelimited("xferk: cannot listen on %pISpc: %d\n",
				    &xferk_listen_sockaddr, ret);
}

int xferk_rdma_module_init(void)
{
	int ret;

	xferk_cq_wq = alloc_workqueue("xferk_cq",
				      WQ_UNBOUND | WQ_HIGHPRI | WQ_MEM_RECLAIM,
				      0);
	if (!xferk_cq_wq)
		return -ENOMEM;
	ret = ib_register_client(&xferk_ib_client);
	if (ret) {
		destroy_workqueue(xferk_cq_wq);
		return ret;
	}
	ret = listener_start();
	if (ret) {
		pr_err("xferk: cannot listen on %pISpc: %d\n",
		       &xferk_listen_sockaddr, ret);
		xferk_rdma_module_exit();
	}
	return ret;
}

/*
 * Before the connection workqueue goes: no new passive end, every
 * connection down and torn down, then no device of ours left.
 */
void xferk_rdma_module_exit(void)
{
	struct rdma_cm_id *id;

	mutex_lock(&xferk_listen_lock);
	id = xferk_listener;
	xferk_listener = NULL;
	xferk_listen_stopped = true;
	mutex_unlock(&xferk_listen_lock);
	cancel_work_sync(&xferk_listen_work);
	if (id)
		rdma_destroy_id(id);
	xferk_conn_shutdown_all();
	ib_unregister_client(&xferk_ib_client);
	destroy_workqueue(xferk_cq_wq);
}
