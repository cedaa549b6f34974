// SPDX-License-Identifier: GPL-2.0
/*
 * Regions of dma-bufs: a range of a buffer another driver exported (a
 * GPU's memory, vgem's), held attached where user memory is pinned.
 *
 * A region holds the dma-buf and nothing else until a device needs it.
 * A device with real DMA attaches the dma-buf to itself (rdma_dev.c). A
 * device with virtual DMA (soft-RoCE, siw) cannot: it reaches memory
 * through kernel addresses of struct pages. For it, the region attaches
 * the dma-buf once to a DMA device of the module's own (xferk_dma_dev),
 * maps it (the exporter keeps the buffer in place while a static importer
 * has it mapped) and takes the region's pages from that mapping
 * (xferk_region_pages()). A dma-buf without struct pages (device memory
 * that only a PCI peer can reach) cannot be used so: EOPNOTSUPP.
 *
 * The region holds the dma-buf and its attachments exactly as it would
 * hold pinned pages (region.c): until its last reference goes, after every
 * work request that can touch them is physically terminal, whatever comes
 * first (MR_DEREG, the dma-buf's fd closed, the exporter's own handle
 * freed, process exit). The memory is not charged to RLIMIT_MEMLOCK (it
 * is the exporter's, not the process's); the pages of one file's dma-buf
 * regions are bounded (max_dmabuf_pages_per_file) until each region goes.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/memcontrol.h>
#include <linux/memremap.h>
#include <linux/sched/mm.h>
#include <linux/platform_device.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "region.h"
#include "stats.h"
#include "xferk.h"

MODULE_IMPORT_NS(DMA_BUF);

/* The module's own DMA device: what regions attach their dma-bufs to. */
static struct platform_device *xferk_dma_dev;

int xferk_region_dmabuf_init(void)
{
	struct platform_device *pdev;
	int ret;

	pdev = platform_device_register_simple("xferk-dma", PLATFORM_DEVID_NONE,
					       NULL, 0);
	if (IS_ERR(pdev))
		return PTR_ERR(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret) {
		platform_device_unregister(pdev);
		return ret;
	}
	xferk_dma_dev = pdev;
	return 0;
}

/* At module exit, once every op and so every region is gone. */
void xferk_region_dmabuf_exit(void)
{
	platform_device_unregister(xferk_dma_dev);
}

/**
 * struct xferk_dmabuf_acct - the dma-buf pages one open file holds
 * @ref: the file, and each of its dma-buf regions
 * @pages: the pages its dma-buf regions span, each until the region goes
 *	(not its handle: an op may hold the region longer)
 */
struct xferk_dmabuf_acct {
	struct kref ref;
	atomic_long_t pages;
};

struct xferk_dmabuf_acct *xferk_dmabuf_acct_create(void)
{
	struct xferk_dmabuf_acct *a = kzalloc(sizeof(*a), XFERK_GFP_USER);

	if (a)
		kref_init(&a->ref);
	return a;
}

static void dmabuf_acct_release(struct kref *ref)
{
	kfree(container_of(ref, struct xferk_dmabuf_acct, ref));
}

void xferk_dmabuf_acct_put(struct xferk_dmabuf_acct *a)
{
	kref_put(&a->ref, dmabuf_acct_release);
}

/**
 * struct xferk_dmabuf - what a region of a dma-buf holds
 * @dmabuf: the dma-buf (a reference)
 * @acct: its file's account (a reference), charged with the region's pages
 * @lock: makes @attach once
 * @attach: @dmabuf attached to xferk_dma_dev, NULL until a device with
 *	virtual DMA needs the region's pages
 * @sgt: @attach's mapping, which the region's pages were taken from
 * @error: why the pages cannot be had, for good (0: not known yet)
 * @ready: the region's pages are there (set with release semantics after
 *	them)
 */
struct xferk_dmabuf {
	struct dma_buf *dmabuf;
	struct xferk_dmabuf_acct *acct;
	struct mutex lock;	/* @attach, @sgt, @error */
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	int error;
	bool ready;
};

struct dma_buf *xferk_region_dma_buf(const struct xferk_region *r)
{
	return r->dmabuf->dmabuf;
}

static enum dma_data_direction dmabuf_dir(const struct xferk_region *r)
{
	return r->writable ? DMA_BIDIRECTIONAL : DMA_TO_DEVICE;
}

/*
 * Fills r->pages with the pages of [r->addr, r->addr + r->len) of the
 * mapping: 0, or -EOPNOTSUPP where the mapping has no struct pages (or
 * pages of device memory) or pieces of other than whole pages.
 */
static int dmabuf_pages(struct xferk_region *r, struct sg_table *sgt)
{
	unsigned long skip = r->addr >> PAGE_SHIFT, i = 0, j, n;
	struct scatterlist *sg;
	unsigned int k;

	for_each_sgtable_sg(sgt, sg, k) {
		struct page *page = sg_page(sg);

		if (!page || is_zone_device_page(page) || sg->offset ||
		    !PAGE_ALIGNED(sg->length))
			return -EOPNOTSUPP;
		n = sg->length >> PAGE_SHIFT;
		for (j = 0; j < n && i < r->npages; j++) {
			if (skip)
				skip--;
			else
				r->pages[i++] = nth_page(page, j);
		}
		if (i == r->npages)
			return 0;
	}
	/* The exporter mapped less than its size. */
	return -EOPNOTSUPP;
}

/**
 * xferk_dmabuf_errno() - what an exporter's failure means here
 * @err: what the exporter returned from attaching, pinning or mapping
 *
 * Return: -ENOMEM, or -EINTR (a signal while the exporter waited): both
 * may not happen next time; anything else is -EOPNOTSUPP, for good.
 */
int xferk_dmabuf_errno(long err)
{
	if (err == -ENOMEM)
		return -ENOMEM;
	if (err == -EINTR || err == -ERESTARTSYS)
		return -EINTR;
	return -EOPNOTSUPP;
}

/*
 * Attaches, maps and takes the pages; d->lock held. The page array is
 * charged to the region owner's memory cgroup, whoever needs it first (a
 * submit, or the completion worker's post). 0 or an errno.
 */
static int dmabuf_attach_pages(struct xferk_region *r)
{
	struct mem_cgroup *memcg = get_mem_cgroup_from_mm(r->mm), *old;
	struct xferk_dmabuf *d = r->dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	int ret;

	old = set_active_memcg(memcg);
	r->pages = kvmalloc_array(r->npages, sizeof(*r->pages),
				  XFERK_GFP_USER | __GFP_NOWARN);
	set_active_memcg(old);
	mem_cgroup_put(memcg);
	if (!r->pages)
		return -ENOMEM;
	attach = dma_buf_attach(d->dmabuf, &xferk_dma_dev->dev);
	if (IS_ERR(attach)) {
		ret = xferk_dmabuf_errno(PTR_ERR(attach));
		goto err_free;
	}
	sgt = dma_buf_map_attachment_unlocked(attach, dmabuf_dir(r));
	if (IS_ERR(sgt)) {
		ret = xferk_dmabuf_errno(PTR_ERR(sgt));
		goto err_detach;
	}
	ret = dmabuf_pages(r, sgt);
	if (ret)
		goto err_unmap;
	d->attach = attach;
	d->sgt = sgt;
	return 0;

err_unmap:
	dma_buf_unmap_attachment_unlocked(attach, sgt, dmabuf_dir(r));
err_detach:
	dma_buf_detach(d->dmabuf, attach);
err_free:
	kvfree(r->pages);
	r->pages = NULL;
	return ret;
}

/**
 * xferk_region_pages() - make sure the region has struct pages
 * @r: a region, which the caller holds
 *
 * For devices with virtual DMA, which reach memory through the kernel
 * addresses of its pages. User memory has them. A dma-buf region gets
 * them on first use: its dma-buf attached to the module's own DMA device
 * and mapped, until the region goes. May sleep; never under a lock the
 * exporter may take (dma-buf reservation locks).
 *
 * Return: 0 (r->pages is there), -EOPNOTSUPP (the exporter refused, or
 * the memory has no struct pages: for good), -ENOMEM or -EINTR (the next
 * call tries again).
 */
int xferk_region_pages(struct xferk_region *r)
{
	struct xferk_dmabuf *d = r->dmabuf;
	int ret;

	/* Pairs with the release below: seen ready means the pages are. */
	if (!d || smp_load_acquire(&d->ready))
		return 0;
	/* Its importers must not read pages: dma-buf mangles them. */
	if (IS_ENABLED(CONFIG_DMABUF_DEBUG))
		return -EOPNOTSUPP;
	mutex_lock(&d->lock);
	ret = d->error;
	if (!ret && !d->ready) {
		ret = dmabuf_attach_pages(r);
		if (!ret) {
			/* Publishes r->pages to the lockless check above. */
			smp_store_release(&d->ready, true);
		} else if (ret == -EOPNOTSUPP) {
			d->error = ret;
		}
	}
	mutex_unlock(&d->lock);
	return ret;
}

/**
 * xferk_region_create_dmabuf() - a region of [offset, offset + len) of a
 * dma-buf
 * @fd: a file descriptor of the dma-buf
 * @offset: the range's start in it, any alignment
 * @len: length, > 0
 * @access: XFERK_ACCESS_* bits
 * @acct: the calling file's account, charged with the region's pages
 *	until the region goes
 * @max_pages: what @acct may hold
 *
 * Return: the region with one reference, or ERR_PTR: those of
 * xferk_region_check(), -EMFILE (@acct would pass @max_pages), -EBADF
 * (@fd is not open), -EINVAL (@fd is not a dma-buf), -ERANGE (the range
 * ends past the dma-buf), -EACCES (the device would write a dma-buf
 * opened read-only), -ENOMEM.
 */
struct xferk_region *xferk_region_create_dmabuf(int fd, u64 offset, u64 len,
						u32 access,
						struct xferk_dmabuf_acct *acct,
						unsigned long max_pages)
{
	struct xferk_region *r;
	struct xferk_dmabuf *d;
	struct dma_buf *dmabuf;
	unsigned long npages;
	int ret;

	ret = xferk_region_check(offset, len, access, &npages);
	if (ret)
		return ERR_PTR(ret);
	ret = xferk_charge(&acct->pages, npages, max_pages, -EMFILE);
	if (ret)
		return ERR_PTR(ret);
	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf) == -EBADF ? -EBADF : -EINVAL;
		goto err_uncharge;
	}
	ret = -ERANGE;
	if (offset + len > dmabuf->size)
		goto err_put;
	ret = -EACCES;
	if ((access & (XFERK_ACCESS_LOCAL_DST | XFERK_ACCESS_REMOTE_WRITE)) &&
	    !(dmabuf->file->f_mode & FMODE_WRITE))
		goto err_put;
	ret = -ENOMEM;
	d = kzalloc(sizeof(*d), XFERK_GFP_USER);
	if (!d)
		goto err_put;
	r = xferk_region_alloc(offset, len, access, npages, false);
	if (!r)
		goto err_free;
	mutex_init(&d->lock);
	d->dmabuf = dmabuf;
	kref_get(&acct->ref);
	d->acct = acct;
	r->dmabuf = d;
	atomic64_inc(&xferk_stats.dmabuf_regions);
	xferk_region_publish(r);
	return r;

err_free:
	kfree(d);
err_put:
	dma_buf_put(dmabuf);
err_uncharge:
	atomic_long_sub(npages, &acct->pages);
	return ERR_PTR(ret);
}

/* Lets the dma-buf go: nothing posted can touch it any more. */
void xferk_region_dmabuf_release(struct xferk_region *r)
{
	struct xferk_dmabuf *d = r->dmabuf;

	if (d->attach) {
		dma_buf_unmap_attachment_unlocked(d->attach, d->sgt,
						  dmabuf_dir(r));
		dma_buf_detach(d->dmabuf, d->attach);
	}
	dma_buf_put(d->dmabuf);
	atomic_long_sub(r->npages, &d->acct->pages);
	xferk_dmabuf_acct_put(d->acct);
	kfree(d);
	atomic64_dec(&xferk_stats.dmabuf_regions);
}
