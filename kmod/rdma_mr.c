// SPDX-License-Identifier: GPL-2.0
/*
 * Exports on the RDMA transport: the exported range registered in the
 * connection's PD, by fast registration or as user memory, and its
 * deregistration. Locking: registrations are one at a time per session
 * (its exports lock, which the session holds around @export and
 * @unexport), each posted under its posting lock (path->lock).
 */
#include <linux/delay.h>
#include <linux/mmu_notifier.h>
#include <linux/random.h>
#include "fault.h"
#include "rdma.h"
#include "region.h"
#include "stats.h"
#include "transport.h"
#include "xferk.h"

atomic_t xferk_fault_delay_registrations = ATOMIC_INIT(0);

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
	struct xferk_path *p = container_of(wc->wr_cqe, struct xferk_path,
					    reg_cqe);

	if (wc->status != IB_WC_SUCCESS)
		p->events->qp_dead(p, -ECONNRESET, XFERK_PATH_QP);
	WRITE_ONCE(p->reg_status, wc->status == IB_WC_SUCCESS ? 0 :
		   wc->status == IB_WC_WR_FLUSH_ERR ? -ECONNRESET : -EIO);
	complete(&p->reg_done);
}

/*
 * Posts the fast registration of @mr and waits for it. One at a time per
 * session (its exports lock), in the send queue's registration slot. A
 * registration that does not complete within 5 s kills the QP: its
 * teardown's drain flushes it (or, lost, teardown completes reg_done once
 * the QP is gone). reg_done is reset, and reg_waiting set, under the
 * posting lock with the post, so a teardown completes it only for a
 * registration posted on the QP it destroyed.
 */
static int conn_reg_mr(struct xferk_path *p, struct ib_mr *mr, int access)
{
	struct ib_reg_wr wr = {
		.wr.opcode = IB_WR_REG_MR,
		.wr.wr_cqe = &p->reg_cqe,
		.wr.send_flags = IB_SEND_SIGNALED,
		.mr = mr,
		.key = mr->rkey,
		.access = access,
	};
	int ret;

	p->reg_cqe.done = conn_reg_done;
	if (atomic_dec_if_positive(&xferk_fault_delay_registrations) >= 0)
		msleep(READ_ONCE(xferk_fault_delay_ms));
	mutex_lock(p->lock);
	if (!p->events->postable(p)) {
		mutex_unlock(p->lock);
		return -ENOTCONN;
	}
	reinit_completion(&p->reg_done);
	/* What it reads if teardown, not the completion, releases it. */
	WRITE_ONCE(p->reg_status, -ENOTCONN);
	ret = xferk_post_send(p->lanes[0].qp, &wr.wr, NULL);
	p->reg_waiting = !ret;
	mutex_unlock(p->lock);
	if (ret) {
		p->events->qp_dead(p, -ECONNRESET, XFERK_PATH_QP);
		return -EIO;
	}
	if (!wait_for_completion_timeout(&p->reg_done, 5 * HZ)) {
		p->events->qp_dead(p, -ECONNRESET, XFERK_PATH_QP);
		wait_for_completion(&p->reg_done);
	}
	mutex_lock(p->lock);
	p->reg_waiting = false;
	mutex_unlock(p->lock);
	return READ_ONCE(p->reg_status);
}

/*
 * Soft-RoCE keeps an MR's pages in maps of 256 entries, and its
 * rxe_mr_copy() (6.1) steps to the map after the last one when an access
 * ends at the last page of a full map: it reads the pointer 8 bytes past
 * the MR's array of maps (KASAN: slab-out-of-bounds). A spare page-list
 * entry makes that map exist (rxe allocates the length asked for, not
 * bounded by the 512 it advertises).
 */
#define XFERK_RXE_PAGES_PER_MAP	256

static u32 frwr_page_list_len(struct ib_device *dev, unsigned long npages)
{
	if (dev->ops.driver_id == RDMA_DRIVER_RXE &&
	    !(npages % XFERK_RXE_PAGES_PER_MAP))
		return npages + 1;
	return npages;
}

/*
 * Fast registration of @reg->sgt's first @nents DMA-mapped entries, which
 * cover @reg->npages pages, at the export's random address.
 */
static int export_frwr_sgt(struct xferk_path *p, struct xferk_reg *reg,
			   int access, int nents)
{
	struct ib_mr *mr;
	int ret;

	mr = ib_alloc_mr(p->pd, IB_MR_TYPE_MEM_REG,
			 frwr_page_list_len(p->pd->device, reg->npages));
	if (IS_ERR(mr))
		return PTR_ERR(mr) == -ENOMEM ? -ENOMEM : -EIO;
	if (ib_map_mr_sg(mr, reg->sgt.sgl, nents, NULL, PAGE_SIZE) != nents) {
		ret = -EIO;
		goto err_mr;
	}
	/* Never the DMA address (a kernel address on some devices). */
	mr->iova = export_iova(reg->addr);
	ib_update_fast_reg_key(mr, get_random_u8());
	ret = conn_reg_mr(p, mr, access);
	if (ret)
		goto err_mr;
	reg->mr = mr;
	return 0;

err_mr:
	xferk_dereg_mr(mr);
	return ret;
}

/* Frees @reg->sgt, unmapping it if the export mapped it. */
static void export_sgt_free(struct ib_device *dev, struct xferk_reg *reg)
{
	if (reg->sgt_mapped)
		ib_dma_unmap_sg(dev, reg->sgt.sgl, reg->sgt.orig_nents,
				DMA_BIDIRECTIONAL);
	reg->sgt_mapped = false;
	sg_free_table(&reg->sgt);
}

/*
 * Fast registration of @npages of the region's own pinned pages, from
 * @offset in the first: nothing is pinned or charged a second time, nobody
 * walks the page tables again.
 */
static int export_frwr(struct xferk_path *p, struct xferk_reg *reg,
		       int access, struct page **pages, unsigned long npages,
		       unsigned int offset)
{
	struct ib_device *dev = p->pd->device;
	int nents, ret;

	ret = sg_alloc_table_from_pages(&reg->sgt, pages, npages, offset,
					reg->len, XFERK_GFP_USER);
	if (ret)
		return -ENOMEM;
	nents = ib_dma_map_sg(dev, reg->sgt.sgl, reg->sgt.orig_nents,
			      DMA_BIDIRECTIONAL);
	if (!nents) {
		sg_free_table(&reg->sgt);
		return -EIO;
	}
	reg->sgt_mapped = true;
	ret = export_frwr_sgt(p, reg, access, nents);
	if (ret)
		export_sgt_free(dev, reg);
	return ret;
}

/* A window of user memory: its pages, in the window's order. */
static int export_window(struct xferk_path *p, struct xferk_reg *reg,
			 int access)
{
	struct xferk_region *r = reg->region;
	struct page **pages;
	unsigned long i;
	int ret;

	pages = kvmalloc_array(reg->npages, sizeof(*pages), XFERK_GFP_USER);
	if (!pages)
		return -ENOMEM;
	for (i = 0; i < reg->npages; i++)
		pages[i] = r->pages[reg->window_index[i]];
	ret = export_frwr(p, reg, access, pages, reg->npages,
			  offset_in_page(reg->addr));
	kvfree(pages);
	return ret;
}

/*
 * A range or window of a dma-buf region, fast-registered over the DMA
 * addresses of the region's map for the device (made ahead by the
 * export, xferk_dev_map_region(); here, under the export's locks, only if
 * the session attached to its device after that): no struct page is touched
 * and nothing is mapped again. The map outlives the MR: the export holds
 * the region, and the device's removal unmaps it only once every session
 * there, and so every export, is gone.
 */
static int export_dmabuf(struct xferk_path *p, struct xferk_reg *reg,
			 int access)
{
	struct xferk_region *r = reg->region;
	unsigned long first = (reg->addr >> PAGE_SHIFT) -
			      (r->addr >> PAGE_SHIFT);
	unsigned int off = offset_in_page(reg->addr);
	struct xferk_dma_map *m;
	struct scatterlist *sg;
	u64 left = reg->len;
	unsigned int i;
	int ret;

	m = region_dma_map(r, p->attach.dev);
	if (IS_ERR(m))
		return PTR_ERR(m);
	if (READ_ONCE(m->moved))
		return -ESTALE;
	ret = sg_alloc_table(&reg->sgt, reg->npages, XFERK_GFP_USER);
	if (ret)
		return -ENOMEM;
	for_each_sgtable_sg(&reg->sgt, sg, i) {
		unsigned long page = reg->window_index ?
				     reg->window_index[i] : first + i;
		u32 len = min_t(u64, left, PAGE_SIZE - off);

		sg->length = len;
		sg_dma_address(sg) = m->dma[page] + off;
		sg_dma_len(sg) = len;
		left -= len;
		off = 0;
	}
	ret = export_frwr_sgt(p, reg, access, reg->npages);
	if (ret)
		sg_free_table(&reg->sgt);
	return ret;
}

/*
 * Whether the calling process maps the region's own pages at
 * [addr, addr + npages pages): 0 if it does, EFAULT if it remapped part of
 * the range since MR_REG. Read as the region pinned them (FOLL_FORCE: also
 * a range the process made inaccessible since).
 */
static int export_maps_region(const struct xferk_region *r, u64 addr,
			      unsigned long npages)
{
	unsigned long first = (addr >> PAGE_SHIFT) - (r->addr >> PAGE_SHIFT);
	unsigned long done = 0, i;
	struct page *pages[64];
	int n, ret = 0;

	while (!ret && done < npages) {
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
		n = get_user_pages_fast((addr & PAGE_MASK) + done * PAGE_SIZE,
					min_t(unsigned long, npages - done,
					      ARRAY_SIZE(pages)), FOLL_FORCE,
					pages);
		if (n <= 0)
			return -EFAULT;
		for (i = 0; i < n; i++) {
			if (pages[i] != r->pages[first + done + i])
				ret = -EFAULT;
			put_page(pages[i]);
		}
		done += n;
	}
	return ret;
}

/*
 * Watches an exported range of the calling process while it is registered
 * as user memory: any change of its mappings (munmap, mremap, mmap over
 * it, ...) from mmu_interval_read_begin() on moves the sequence.
 */
struct export_watch {
	struct mmu_interval_notifier mni;
	spinlock_t lock;	/* mmu_interval_set_seq() vs the retry check */
};

static bool export_watch_invalidate(struct mmu_interval_notifier *mni,
				    const struct mmu_notifier_range *range,
				    unsigned long cur_seq)
{
	struct export_watch *w = container_of(mni, struct export_watch, mni);

	/*
	 * A change of protection (mprotect, NUMA balancing, fork) keeps the
	 * pages; a copy on write that follows comes as an event of its own.
	 */
	if (range->event == MMU_NOTIFY_PROTECTION_VMA ||
	    range->event == MMU_NOTIFY_PROTECTION_PAGE ||
	    range->event == MMU_NOTIFY_SOFT_DIRTY)
		return true;
	spin_lock(&w->lock);
	mmu_interval_set_seq(mni, cur_seq);
	spin_unlock(&w->lock);
	return true;
}

static const struct mmu_interval_notifier_ops export_watch_ops = {
	.invalidate = export_watch_invalidate,
};

/* Registrations whose range's mappings changed meanwhile, before EFAULT. */
#define EXPORT_WATCH_TRIES	4

/*
 * Registers the range as user memory of the calling process (the
 * region's: EXPORT refuses others with EPERM), which pins what the process
 * maps there. It is kept only if those are the region's own pages: the
 * range is watched from before the registration to after the pages are
 * compared with the region's. A mapping that differs from the region's
 * fails the export with EFAULT; one that changed in between makes the
 * registration start again, and EFAULT after EXPORT_WATCH_TRIES.
 *
 * The registration charges its pages to RLIMIT_MEMLOCK itself, so it
 * needs room for them while it registers (the device's own check). Once
 * its pages are proven the region's, the region lends it their charge, so
 * that a page counts once; the charge is returned before the registration
 * goes. pinned_vm never counts less than what is pinned: another thread
 * of the process may pin meanwhile.
 */
static int export_user_mr(struct xferk_path *p, struct xferk_reg *reg,
			  int access)
{
	struct xferk_region *r = reg->region;
	struct export_watch w;
	unsigned long seq;
	struct ib_mr *mr;
	bool changed;
	int tries, ret;

	spin_lock_init(&w.lock);
	ret = mmu_interval_notifier_insert(&w.mni, current->mm,
					   reg->addr & PAGE_MASK,
					   reg->npages << PAGE_SHIFT,
					   &export_watch_ops);
	if (ret)
		return ret == -EINTR ? -EINTR : -ENOMEM;
	for (tries = 1; ; tries++) {
		seq = mmu_interval_read_begin(&w.mni);
		mr = ib_reg_user_mr(p->pd, reg->addr, reg->len,
				    export_iova(reg->addr), access);
		if (IS_ERR(mr)) {
			ret = PTR_ERR(mr) == -ENOMEM || PTR_ERR(mr) == -EFAULT ?
			      PTR_ERR(mr) : -EIO;
			break;
		}
		ret = export_maps_region(r, reg->addr, reg->npages);
		spin_lock(&w.lock);
		changed = mmu_interval_read_retry(&w.mni, seq);
		spin_unlock(&w.lock);
		if (!ret && !changed) {
			xferk_region_lend_charge(r, reg->npages);
			reg->mr = mr;
			reg->lent_pages = reg->npages;
			break;
		}
		xferk_dereg_mr(mr);
		if (!ret && tries == EXPORT_WATCH_TRIES)
			ret = -EFAULT;
		if (ret)
			break;
	}
	mmu_interval_notifier_remove(&w.mni);
	return ret;
}

/*
 * An export registers the exported range in this connection's PD, so only
 * this peer's QP can use the key (the hardware enforces it), at a random
 * remote address, so a key reused later never matches an old token. The
 * region's own pages are registered by fast registration where the device
 * maps that many pages in one MR; a longer range (soft-RoCE maps 512 pages)
 * is registered as user memory, only while the range maps the region's
 * pages, and charged once (export_user_mr()). A window (its pages
 * scattered) and a dma-buf region (over its DMA addresses) are always
 * fast-registered: EOPNOTSUPP without fast registration, E2BIG beyond the
 * device's page-list length.
 */
int conn_rdma_export(struct xferk_path *p, struct xferk_reg *reg)
{
	const struct ib_device_attr *attrs = &p->pd->device->attrs;
	struct xferk_region *r = reg->region;
	unsigned long npages = reg->npages;
	bool frwr = (attrs->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) &&
		    npages <= attrs->max_fast_reg_page_list_len;
	int access = 0;
	int ret;

	/* Verbs require local write with remote write; not with read alone. */
	if (reg->access & XFERK_ACCESS_REMOTE_WRITE)
		access |= IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	if (reg->access & XFERK_ACCESS_REMOTE_READ)
		access |= IB_ACCESS_REMOTE_READ;
	/*
	 * A window, or a dma-buf region (no user memory to register), only
	 * by fast registration.
	 */
	if ((reg->window_index || r->dmabuf) && !frwr)
		return attrs->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS ?
		       -E2BIG : -EOPNOTSUPP;
	if (r->dmabuf)
		ret = export_dmabuf(p, reg, access);
	else if (reg->window_index)
		ret = export_window(p, reg, access);
	else if (frwr)
		ret = export_frwr(p, reg, access, r->pages +
				  ((reg->addr >> PAGE_SHIFT) -
				   (r->addr >> PAGE_SHIFT)),
				  npages, offset_in_page(reg->addr));
	else
		ret = export_user_mr(p, reg, access);
	if (ret)
		return ret;
	reg->iova = reg->mr->iova;
	reg->rkey = reg->mr->rkey;
	return 0;
}

void conn_rdma_unexport(struct xferk_path *p, struct xferk_reg *reg)
{
	if (reg->lent_pages) {
		xferk_region_return_charge(reg->region, reg->lent_pages);
		reg->lent_pages = 0;
	}
	xferk_dereg_mr(reg->mr);
	if (reg->sgt.sgl)
		export_sgt_free(p->pd->device, reg);
	reg->mr = NULL;
}
