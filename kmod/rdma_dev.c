// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA transport's devices: our ib_client, a struct xferk_dev per
 * device, connections attaching to theirs, and the DMA maps of regions.
 * Locking: xferk_devs_lock guards the client data lookups and each
 * device's list of connections; xferk_dma_lock makes and tears down maps,
 * which posting reads without it (release and acquire on region->maps).
 *
 * Devices. Each RDMA device has a struct xferk_dev from our ib_client's
 * .add to its .remove, kept as the device's client data. A connection
 * attaches to the device its cm_id resolved to before it creates a PD,
 * CQ or QP there, and detaches when its teardown has freed them. .remove
 * (which runs before rdma_cm's own) stops new attaches, takes every
 * attached connection down and waits until each has detached: nothing of
 * ours lives on a device past its removal, whenever a cm_id resolves or a
 * peer connects.
 */
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/dma-mapping.h>
#include <linux/memcontrol.h>
#include <linux/ratelimit.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include "fault.h"
#include "rdma.h"
#include "region.h"
#include "stats.h"
#include "transport.h"
#include "xferk.h"

/**
 * struct xferk_dev - what xferk keeps per RDMA device
 * @ibdev: the device
 * @ref: the device's own (until .remove) and one per attached connection
 * @conns: attached sessions (struct xferk_dev_link.node; xferk_devs_lock)
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

/* Makes and tears down maps; posting reads them without it. */
static DEFINE_MUTEX(xferk_dma_lock);

static DEFINE_MUTEX(xferk_devs_lock);	/* client data lookups, dev->conns */

/*
 * The sessions layer's part in each device: its admission queue, its
 * sessions taken down when it goes. Set once at module load, before the
 * client sees a device.
 */
static const struct xferk_dev_user *dev_user __ro_after_init;

void xferk_rdma_set_dev_user(const struct xferk_dev_user *user)
{
	dev_user = user;
}

/* Module exit, the listener gone: every session down and torn down. */
void xferk_dev_sessions_shutdown(void)
{
	dev_user->shutdown_all();
}

/* A connect request the listener received, for the sessions to answer. */
int xferk_dev_request(struct xferk_cm_req *r, const void *priv, u8 len)
{
	return dev_user->request(r, priv, len);
}

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

/* Undoes what dma_map_create() mapped of @m for @ibdev. */
static void dma_map_release(struct xferk_dma_map *m, struct ib_device *ibdev)
{
	struct dma_buf *dmabuf;

	if (!m->attach) {
		dma_map_undo(m, ibdev, m->npages);
		return;
	}
	dmabuf = m->attach->dmabuf;
	dma_resv_lock(dmabuf->resv, NULL);
	dma_buf_unmap_attachment(m->attach, m->sgt, m->dir);
	dma_buf_unpin(m->attach);
	dma_resv_unlock(dmabuf->resv);
	dma_buf_detach(dmabuf, m->attach);
	m->attach = NULL;
}

/*
 * An exporter moves only what is not pinned (dma-buf.c), so a pinned
 * attachment should never hear this. One that does anyway is taken as a
 * revoke of the buffer for new work: the map is used no more (struct
 * xferk_dma_map @moved), and what is in flight ends by the usual rules
 * (drain, quarantine), holding the attachment until it is terminal.
 * Exports made from the map before stay until they are closed (or the
 * region deregistered): revoking them needs the region's and sessions'
 * locks, which are taken outside the reservation lock this is called
 * with. So it only sets a flag.
 */
static void dmabuf_move_notify(struct dma_buf_attachment *attach)
{
	struct xferk_dma_map *m = attach->importer_priv;

	WRITE_ONCE(m->moved, true);
}

static const struct dma_buf_attach_ops dmabuf_pinned_ops = {
	.allow_peer2peer = true,
	.move_notify = dmabuf_move_notify,
};

/*
 * How long a map waits for the exporter's pending moves of a dma-buf it
 * pinned (its kernel fences): past it, the map fails with -ETIMEDOUT.
 */
#define XFERK_DMABUF_FENCE_WAIT	(10 * HZ)

/*
 * Maps a dma-buf region for a device with real DMA, as
 * ib_umem_dmabuf_get_pinned() does: the dma-buf attached to the device
 * itself (peer to peer allowed: a GPU's memory), pinned and mapped, once
 * the exporter's pending moves are done (within XFERK_DMABUF_FENCE_WAIT,
 * a signal ends the wait); @m->dma taken from its DMA addresses, whole
 * page by whole page. No struct page is touched. Return: 0, or an errno
 * with nothing attached: -EOPNOTSUPP (the exporter refused, or its
 * mapping is not of whole pages), -ENOMEM, -EINTR, -ETIMEDOUT.
 */
static int dma_map_dmabuf(struct xferk_dma_map *m, struct xferk_region *r,
			  struct ib_device *ibdev)
{
	unsigned long skip = r->addr >> PAGE_SHIFT, i = 0, j, n;
	struct dma_buf *dmabuf = xferk_region_dma_buf(r);
	struct dma_buf_attachment *attach;
	struct scatterlist *sg;
	struct sg_table *sgt;
	unsigned int k;
	long wait;
	int ret;

	attach = dma_buf_dynamic_attach(dmabuf, ibdev->dma_device,
					&dmabuf_pinned_ops, m);
	if (IS_ERR(attach))
		return xferk_dmabuf_errno(PTR_ERR(attach));
	ret = dma_resv_lock_interruptible(dmabuf->resv, NULL);
	if (ret) {
		ret = -EINTR;
		goto err_detach;
	}
	ret = dma_buf_pin(attach);
	if (ret) {
		ret = xferk_dmabuf_errno(ret);
		goto err_unlock;
	}
	sgt = dma_buf_map_attachment(attach, m->dir);
	if (IS_ERR(sgt)) {
		ret = xferk_dmabuf_errno(PTR_ERR(sgt));
		goto err_unpin;
	}
	m->attach = attach;
	m->sgt = sgt;
	wait = dma_resv_wait_timeout(dmabuf->resv, DMA_RESV_USAGE_KERNEL, true,
				     XFERK_DMABUF_FENCE_WAIT);
	dma_resv_unlock(dmabuf->resv);
	if (wait <= 0) {
		ret = wait ? -EINTR : -ETIMEDOUT;
		goto err_release;
	}
	for_each_sgtable_dma_sg(sgt, sg, k) {
		dma_addr_t addr = sg_dma_address(sg);

		if (!PAGE_ALIGNED(addr) || !PAGE_ALIGNED(sg_dma_len(sg)))
			break;
		n = sg_dma_len(sg) >> PAGE_SHIFT;
		for (j = 0; j < n && i < r->npages; j++) {
			if (skip)
				skip--;
			else
				m->dma[i++] = addr + j * PAGE_SIZE;
		}
		if (i == r->npages)
			return 0;
	}
	ret = -EOPNOTSUPP;
err_release:
	dma_map_release(m, ibdev);
	return ret;

err_unpin:
	dma_buf_unpin(attach);
err_unlock:
	dma_resv_unlock(dmabuf->resv);
err_detach:
	dma_buf_detach(dmabuf, attach);
	return ret;
}

/*
 * A new map of @r for @d, charged to the region owner's memory cgroup. A
 * dma-buf region on a device with real DMA is mapped through its dma-buf
 * (dma_map_dmabuf()), whole or not at all; everything else through its
 * pages (a dma-buf region's made now: xferk_region_pages()), per post
 * where they cannot stay mapped (never a dma-buf region's). Return: the
 * map, or ERR_PTR: -ENOMEM, or for a dma-buf region what
 * dma_map_dmabuf() or xferk_region_pages() returns.
 */
static struct xferk_dma_map *dma_map_create(struct xferk_region *r,
					    struct xferk_dev *d)
{
	bool dmabuf = r->dmabuf && !ib_uses_virt_dma(d->ibdev);
	struct mem_cgroup *memcg, *old;
	struct xferk_dma_map *m;
	bool whole;
	int ret;

	if (!dmabuf) {
		ret = xferk_region_pages(r);
		if (ret)
			return ERR_PTR(ret);
	}
	memcg = get_mem_cgroup_from_mm(r->mm);
	old = set_active_memcg(memcg);
	m = kvzalloc(struct_size(m, dma, r->npages),
		     XFERK_GFP_USER | __GFP_NOWARN);
	whole = m;
	if (!m && !r->dmabuf)	/* mapping per post needs no array */
		m = kzalloc(sizeof(*m), XFERK_GFP_USER);
	set_active_memcg(old);
	mem_cgroup_put(memcg);
	if (!m)
		return ERR_PTR(-ENOMEM);
	m->dev = d;
	m->dir = r->writable ? DMA_BIDIRECTIONAL : DMA_TO_DEVICE;
	if (dmabuf) {
		ret = dma_map_dmabuf(m, r, d->ibdev);
		if (ret) {
			kvfree(m);
			return ERR_PTR(ret);
		}
		m->npages = r->npages;
		return m;
	}
	m->per_post = !whole || !dma_map_pages(m, r, d->ibdev);
	if (m->per_post && r->dmabuf) {
		kvfree(m);
		return ERR_PTR(-ENOMEM);
	}
	m->npages = m->per_post ? 0 : r->npages;
	return m;
}

/* The map of @r for @d, or NULL if it has none yet. Lockless. */
struct xferk_dma_map *region_dma_map_find(struct xferk_region *r,
					  struct xferk_dev *d)
{
	struct xferk_dma_map *m;

	/* Pairs with the release in region_dma_map(): seen means filled. */
	for (m = smp_load_acquire(&r->maps); m; m = m->next)
		if (READ_ONCE(m->dev) == d)
			return m;
	return NULL;
}

/*
 * The map of @r for @d, made now if it has none: by a submit or an export
 * (xferk_dev_map_region()), else by the post that needs it, with the
 * posting connection's lock (never a dma-buf region's: see
 * xferk_dev_map_region()). The pages are mapped without the global lock,
 * which is taken only to publish the map (a racing twin is thrown away).
 * Return: the map, or ERR_PTR (dma_map_create()).
 */
struct xferk_dma_map *region_dma_map(struct xferk_region *r,
				     struct xferk_dev *d)
{
	struct xferk_dma_map *m, *new;

	m = region_dma_map_find(r, d);
	if (m)
		return m;
	new = dma_map_create(r, d);
	if (IS_ERR(new))
		return new;
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
		dma_map_release(new, d->ibdev);
		kvfree(new);
	}
	return m;
}

/* Unmaps @m from its device, which keeps it no more. xferk_dma_lock held. */
static void dma_map_unmap_locked(struct xferk_dma_map *m)
{
	lockdep_assert_held(&xferk_dma_lock);
	dma_map_release(m, m->dev->ibdev);
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

/**
 * xferk_dev_map_region() - map @r for a session's device ahead of its posts
 * @l: the session's link to its device
 * @r: a region the caller holds
 * @nowait: the caller must not wait for a dma-buf's exporter
 *
 * For the transport's .map_region: without any connection's lock, so
 * that a large region's first post finds its map instead of mapping every
 * page under the posting connection's lock. Nothing for a connection not
 * attached (@l without a device). A reference keeps the device until the
 * map is published; its removal waits for it, then unmaps the map with
 * the device's others.
 *
 * A map of user memory is best effort: one that could not be made is
 * made by the post. A dma-buf region's is made only here, where waiting
 * for its exporter (attaching, pinning, its fences) holds no lock but the
 * file's: the post fails its chunk with -EOPNOTSUPP if it finds none.
 *
 * Return: 0, or for a dma-buf region: -EAGAIN (@nowait, and it has no map
 * yet), -ESTALE (its exporter moved the buffer: dmabuf_move_notify()),
 * what dma_map_create() returns (-EOPNOTSUPP: the device cannot reach it).
 */
int xferk_dev_map_region(struct xferk_dev_link *l, struct xferk_region *r,
			 bool nowait)
{
	struct xferk_dma_map *m;
	struct xferk_dev *d = NULL;
	int ret = 0;

	/* Listed: its detach has not dropped its reference yet. */
	mutex_lock(&xferk_devs_lock);
	if (l->dev && !list_empty(&l->node)) {
		d = l->dev;
		kref_get(&d->ref);
	}
	mutex_unlock(&xferk_devs_lock);
	if (!d)
		return 0;
	if (r->dmabuf && nowait && !region_dma_map_find(r, d)) {
		ret = -EAGAIN;
	} else {
		m = region_dma_map(r, d);
		if (IS_ERR(m) && r->dmabuf)
			ret = PTR_ERR(m);
		else if (!IS_ERR(m) && READ_ONCE(m->moved))
			ret = -ESTALE;
	}
	kref_put(&d->ref, dev_release);
	return ret;
}

static int xferk_ib_add(struct ib_device *ibdev)
{
	struct xferk_dev *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return -ENOMEM;
	d->qdev = dev_user->create_queue(dev_name(&ibdev->dev));
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
	queue_work(system_unbound_wq, &xferk_listen_work);
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
	struct xferk_dev_link *l;

	mutex_lock(&xferk_devs_lock);
	ib_set_client_data(ibdev, &xferk_ib_client, NULL);
	list_for_each_entry(l, &d->conns, node)
		dev_user->gone(l);
	mutex_unlock(&xferk_devs_lock);
	kref_put(&d->ref, dev_release);
	wait_for_completion(&d->released);
	dev_unmap_all(d);
	dev_user->put_queue(d->qdev);
	kfree(d);
}

struct ib_client xferk_ib_client = {
	.name = "xferk",
	.add = xferk_ib_add,
	.remove = xferk_ib_remove,
};

/*
 * Attaches a session (by its link @l) to its cm_id's device, unless that
 * device is going away; *@qdev becomes the device's admission queue (a
 * reference). Return: 0 or -ENODEV.
 */
int xferk_dev_attach(struct xferk_dev_link *l, struct ib_device *ibdev,
		     struct xferk_qdev **qdev)
{
	struct xferk_dev *d;

	mutex_lock(&xferk_devs_lock);
	d = ib_get_client_data(ibdev, &xferk_ib_client);
	if (d) {
		kref_get(&d->ref);
		list_add_tail(&l->node, &d->conns);
		l->dev = d;
		dev_user->get_queue(d->qdev);
		*qdev = d->qdev;
	}
	mutex_unlock(&xferk_devs_lock);
	return d ? 0 : -ENODEV;
}

/* After every verbs resource of @l's session is gone: the device may go. */
void xferk_dev_detach(struct xferk_dev_link *l)
{
	struct xferk_dev *d = l->dev;

	if (!d)
		return;
	mutex_lock(&xferk_devs_lock);
	list_del_init(&l->node);
	mutex_unlock(&xferk_devs_lock);
	l->dev = NULL;
	kref_put(&d->ref, dev_release);
}

/*
 * A QP whose destruction failed, or an MR whose deregistration failed, is
 * still the device's: it may still access what it references (the pages
 * and DMA maps behind it, its CQ and PD). Nothing of that may be released,
 * so the destruction is retried, 100 ms after the first failure, the pause
 * doubling up to 1 s, until the device lets the object go; the caller (a
 * path's teardown, an export's revocation, from process context) waits
 * and releases the rest only then. stats/destroy_retries counts failures.
 * A device that refuses for good keeps its caller waiting, with a message
 * every 10 s: pages a device may still write are never handed back.
 * fault/fail_destroy refuses the next N before they reach the device.
 */
atomic_t xferk_fault_fail_destroy = ATOMIC_INIT(0);

static void destroy_failed(const char *what, int ret, unsigned int *ms)
{
	static DEFINE_RATELIMIT_STATE(rs, 10 * HZ, 1);

	atomic64_inc(&xferk_stats.destroy_retries);
	if (__ratelimit(&rs))
		pr_warn("xferk: destroying a %s failed (%d); retrying until the device releases it\n",
			what, ret);
	msleep(*ms);
	*ms = min(*ms * 2, 1000U);
}

static int destroy_fault(void)
{
	return atomic_dec_if_positive(&xferk_fault_fail_destroy) >= 0 ?
	       -EBUSY : 0;
}

void xferk_destroy_qp(struct ib_qp *qp)
{
	unsigned int ms = 100;
	int ret;

	might_sleep();
	while ((ret = destroy_fault() ?: ib_destroy_qp(qp)))
		destroy_failed("QP", ret, &ms);
}

void xferk_dereg_mr(struct ib_mr *mr)
{
	unsigned int ms = 100;
	int ret;

	might_sleep();
	while ((ret = destroy_fault() ?: ib_dereg_mr(mr)))
		destroy_failed("MR", ret, &ms);
}
