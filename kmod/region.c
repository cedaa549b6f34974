// SPDX-License-Identifier: GPL-2.0
/*
 * Regions: user memory pinned for the lifetime of every op that uses it.
 *
 * Pinning follows ib_umem_get(): mm->pinned_vm is charged against
 * RLIMIT_MEMLOCK unless CAP_IPC_LOCK, pages are pinned with FOLL_LONGTERM
 * in batches, and a partial pin is undone. A region is reference counted:
 * its handle holds one reference, every op using it one more (RDS rule: the
 * pages outlive every in-flight op). The pages are DMA-unmapped (the RDMA
 * transport maps them once per device, and gave the function that unmaps
 * them: xferk_region_set_unmap()) and unpinned when the last reference
 * goes, which may be in the completion worker.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "region.h"
#include "stats.h"
#include "xferk.h"

#define PIN_BATCH	(PAGE_SIZE / sizeof(struct page *))

DEFINE_SPINLOCK(xferk_regions_lock);	/* xferk_regions */
LIST_HEAD(xferk_regions);

/* sysfs quarantine_limit_bytes: 0 means no limit. */
u64 xferk_quarantine_limit_bytes;

static void region_unpin(struct xferk_region *r)
{
	unpin_user_pages_dirty_lock(r->pages, r->npages, r->writable);
	atomic64_sub(r->npages, &r->mm->pinned_vm);
	atomic64_sub(r->npages, &xferk_stats.pinned_pages);
}

/**
 * xferk_region_check() - check a new region's range before anything is made
 * @addr: start (a user address, or an offset in a dma-buf)
 * @len: length
 * @access: XFERK_ACCESS_* bits
 * @npages: out: the pages [@addr, @addr + @len) spans
 *
 * Return: 0, -EINVAL (bad access or len 0), -EOVERFLOW (addr + len wraps),
 * -ENOMEM (more pages than the machine has), -EDQUOT (the quarantine holds
 * quarantine_limit_bytes or more).
 */
int xferk_region_check(u64 addr, u64 len, u32 access, unsigned long *npages)
{
	if (!access || (access & ~XFERK_ACCESS_ALL) || !len)
		return -EINVAL;
	if (addr + len < addr || PAGE_ALIGN(addr + len) < addr + len)
		return -EOVERFLOW;
	*npages = (PAGE_ALIGN(addr + len) >> PAGE_SHIFT) - (addr >> PAGE_SHIFT);
	/* No machine pins more pages than it has. */
	if (*npages > totalram_pages() ||
	    *npages > INT_MAX / sizeof(struct page *))
		return -ENOMEM;
	if (READ_ONCE(xferk_quarantine_limit_bytes) &&
	    atomic64_read(&xferk_stats.quarantined_pages) * PAGE_SIZE >=
	    READ_ONCE(xferk_quarantine_limit_bytes)) {
		atomic64_inc(&xferk_stats.quarantine_limit_rejects);
		return -EDQUOT;
	}
	return 0;
}

/**
 * xferk_region_alloc() - a region not yet published, with its page array
 * @addr: start as the user gave it
 * @len: length
 * @access: XFERK_ACCESS_* bits
 * @npages: pages it spans (xferk_region_check())
 * @pages: allocate its page array now
 *
 * The region and its page array are charged to the caller's memory
 * cgroup; the region keeps the caller's mm (mmgrab).
 *
 * Return: the region with one reference, or NULL.
 */
struct xferk_region *xferk_region_alloc(u64 addr, u64 len, u32 access,
					unsigned long npages, bool pages)
{
	struct xferk_region *r;

	r = kzalloc(sizeof(*r), XFERK_GFP_USER);
	if (!r)
		return NULL;
	if (pages) {
		r->pages = kvmalloc_array(npages, sizeof(*r->pages),
					  XFERK_GFP_USER | __GFP_NOWARN);
		if (!r->pages) {
			kfree(r);
			return NULL;
		}
	}
	kref_init(&r->ref);
	mutex_init(&r->lock);
	INIT_LIST_HEAD(&r->exports);
	r->addr = addr;
	r->len = len;
	r->access = access;
	r->npages = npages;
	r->owner = task_tgid_nr(current);
	/* The NIC writes these pages. */
	r->writable = access & (XFERK_ACCESS_LOCAL_DST | XFERK_ACCESS_REMOTE_WRITE);
	r->mm = current->mm;
	mmgrab(r->mm);
	return r;
}

static void xferk_region_free(struct xferk_region *r)
{
	mmdrop(r->mm);
	kvfree(r->pages);
	kfree(r);
}

/* Makes a region whose pages are held visible in the quarantine table. */
void xferk_region_publish(struct xferk_region *r)
{
	atomic64_inc(&xferk_stats.regions);
	spin_lock(&xferk_regions_lock);
	list_add_tail(&r->node, &xferk_regions);
	spin_unlock(&xferk_regions_lock);
}

/**
 * xferk_region_create() - pin [addr, addr + len) of the calling process
 * @addr: start, any alignment
 * @len: length, > 0
 * @access: XFERK_ACCESS_* bits
 *
 * Everything is checked before anything is allocated: the length against
 * the machine's memory, the pages against RLIMIT_MEMLOCK. The page array
 * is charged to the caller's memory cgroup.
 *
 * Return: the region with one reference, or ERR_PTR: those of
 * xferk_region_check(), -ENOMEM (RLIMIT_MEMLOCK, or memory), -EFAULT
 * (unmapped, or memory that cannot be pinned for writing), -EOPNOTSUPP
 * (memory that cannot be pinned long-term, e.g. fsdax), -EINTR.
 */
struct xferk_region *xferk_region_create(u64 addr, u64 len, u32 access)
{
	unsigned int gup_flags = FOLL_WRITE | FOLL_LONGTERM;
	struct mm_struct *mm = current->mm;
	unsigned long npages, done = 0;
	struct xferk_region *r;
	int ret;

	ret = xferk_region_check(addr, len, access, &npages);
	if (ret)
		return ERR_PTR(ret);
	if (atomic64_add_return(npages, &mm->pinned_vm) >
	    rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return ERR_PTR(-ENOMEM);
	}
	r = xferk_region_alloc(addr, len, access, npages, true);
	if (!r) {
		ret = -ENOMEM;
		goto err_uncharge;
	}
	/* A plain write pin (no COW breaking); FOLL_FORCE for read-only. */
	if (!r->writable)
		gup_flags |= FOLL_FORCE;
	while (done < npages) {
		int n = min_t(unsigned long, npages - done, PIN_BATCH);

		cond_resched();
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err_unpin;
		}
		ret = pin_user_pages_fast(((addr >> PAGE_SHIFT) + done) <<
					  PAGE_SHIFT, n, gup_flags,
					  r->pages + done);
		if (ret <= 0) {
			/* Only the errnos documented for MR_REG leave here. */
			if (ret != -ENOMEM && ret != -EOPNOTSUPP && ret != -EINTR)
				ret = -EFAULT;
			goto err_unpin;
		}
		done += ret;
		if (ret < n) {
			ret = -EFAULT;
			goto err_unpin;
		}
	}
	atomic64_add(npages, &xferk_stats.pinned_pages);
	xferk_region_publish(r);
	return r;

err_unpin:
	unpin_user_pages(r->pages, done);
	xferk_region_free(r);
err_uncharge:
	atomic64_sub(npages, &mm->pinned_vm);
	return ERR_PTR(ret);
}

/*
 * Unmaps and frees what a transport made of a region (its DMA maps), given
 * by the transport at its init, before any region exists; module code, so
 * it stays valid as long as a region can.
 */
static void (*region_unmap)(struct xferk_region *r);

void xferk_region_set_unmap(void (*unmap)(struct xferk_region *r))
{
	WRITE_ONCE(region_unmap, unmap);
}

static void region_release(struct kref *ref)
{
	struct xferk_region *r = container_of(ref, struct xferk_region, ref);

	WARN_ON(!list_empty(&r->exports));
	spin_lock(&xferk_regions_lock);
	list_del(&r->node);
	spin_unlock(&xferk_regions_lock);
	if (r->maps)
		READ_ONCE(region_unmap)(r);
	if (r->dmabuf)
		xferk_region_dmabuf_release(r);
	else
		region_unpin(r);
	/* Last: a reader that sees the quarantine empty sees the pages unpinned. */
	if (r->deregistered)
		atomic64_sub(r->npages, &xferk_stats.quarantined_pages);
	xferk_region_free(r);
	atomic64_dec(&xferk_stats.regions);
}

/**
 * xferk_region_lend_charge() - hand pages of the region's charge to a pin
 * of the same pages
 * @r: the region, owned by the calling process's mm
 * @npages: how many of its pages another pin of the same pages (a user
 *	memory registration, which charged pinned_vm itself) takes over;
 *	the caller has proven they are the same pages, and returns the
 *	charge before that pin goes, so that pinned_vm never counts less
 *	than what is pinned
 *
 * A page is charged to RLIMIT_MEMLOCK once however often it is pinned.
 */
void xferk_region_lend_charge(struct xferk_region *r, unsigned long npages)
{
	atomic64_sub(npages, &r->mm->pinned_vm);
}

/* Takes back what xferk_region_lend_charge() handed over. */
void xferk_region_return_charge(struct xferk_region *r, unsigned long npages)
{
	atomic64_add(npages, &r->mm->pinned_vm);
}

/* Drops a reference; the last one unpins, so the caller must be able to sleep. */
void xferk_region_put(struct xferk_region *r)
{
	might_sleep();
	kref_put(&r->ref, region_release);
}

void xferk_region_get(struct xferk_region *r)
{
	kref_get(&r->ref);
}

/**
 * xferk_region_deregister() - the region's handle is gone
 * @r: the region, with the handle's reference; its exports revoked
 *	already (xferk_region_revoke_exports()), so that no peer can reach
 *	the pages through a remote key
 *
 * Drops the handle's reference. Ops still using the
 * region keep the pages pinned until they are physically complete; until
 * then the pages count as quarantined.
 */
void xferk_region_deregister(struct xferk_region *r)
{
	r->deregistered_at = ktime_get();
	r->deregistered = true;
	atomic64_add(r->npages, &xferk_stats.quarantined_pages);
	xferk_region_put(r);
}
