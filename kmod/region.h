/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bottom layer (models and resources): pinned user memory (region.c),
 * charged to its owner's pinned_vm, and quarantined while the device may
 * still touch it.
 */
#ifndef XFERK_REGION_H
#define XFERK_REGION_H

#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include "handle.h"

struct dma_buf;
struct mm_struct;
struct page;
struct xferk_dma_map;
struct xferk_dmabuf;

/**
 * struct xferk_region - pinned user memory
 * @hobj: handle-table entry
 * @ref: handle + one per chunk of every op using the region
 * @addr: start as the user gave it
 * @len: length in bytes
 * @access: XFERK_ACCESS_*
 * @writable: the NIC may write the pages (pinned with FOLL_WRITE)
 * @deregistered: the handle is gone; the pages count as quarantined
 * @npages: pinned pages
 * @pages: the pinned pages, first one contains @addr; of a dma-buf, NULL
 *	until xferk_region_pages() made them
 * @mm: the owner's mm (mmgrab), charged in pinned_vm (not for a dma-buf)
 * @dmabuf: what a region of a dma-buf holds (region_dmabuf.c), @addr
 *	the range's offset in the dma-buf; NULL for user memory
 * @owner: tgid of the registering process
 * @lock: protects @exports
 * @exports: exports of this region (struct xferk_export.region_node)
 * @node: in xferk_regions (xferk_regions_lock), for the quarantine table
 * @deregistered_at: when the handle went
 * @maps: its pages DMA-mapped for each RDMA device that posted them
 *	(rdma_dev.c): added under xferk_dma_lock and published with release
 *	semantics, read without the lock; freed when the region goes
 */
struct xferk_region {
	struct xferk_hobj hobj;
	struct kref ref;
	u64 addr;
	u64 len;
	u32 access;
	bool writable;
	bool deregistered;
	unsigned long npages;
	struct page **pages;
	struct mm_struct *mm;
	struct xferk_dmabuf *dmabuf;
	pid_t owner;
	struct mutex lock;	/* protects exports */
	struct list_head exports;
	struct list_head node;
	ktime_t deregistered_at;
	struct xferk_dma_map *maps;
};

extern spinlock_t xferk_regions_lock;
extern struct list_head xferk_regions;
extern u64 xferk_quarantine_limit_bytes;

struct xferk_region *xferk_region_create(u64 addr, u64 len, u32 access);
struct xferk_dmabuf_acct;
struct xferk_region *xferk_region_create_dmabuf(int fd, u64 offset, u64 len,
						u32 access,
						struct xferk_dmabuf_acct *acct,
						unsigned long max_pages);
struct xferk_dmabuf_acct *xferk_dmabuf_acct_create(void);
void xferk_dmabuf_acct_put(struct xferk_dmabuf_acct *a);
int xferk_region_dmabuf_init(void);
void xferk_region_dmabuf_exit(void);
int xferk_region_pages(struct xferk_region *r);
struct dma_buf *xferk_region_dma_buf(const struct xferk_region *r);
int xferk_dmabuf_errno(long err);

/* For the two kinds of region: region.c and region_dmabuf.c */
int xferk_region_check(u64 addr, u64 len, u32 access, unsigned long *npages);
struct xferk_region *xferk_region_alloc(u64 addr, u64 len, u32 access,
					unsigned long npages, bool pages);
void xferk_region_publish(struct xferk_region *r);
void xferk_region_dmabuf_release(struct xferk_region *r);
void xferk_region_get(struct xferk_region *r);
void xferk_region_put(struct xferk_region *r);
void xferk_region_deregister(struct xferk_region *r);
void xferk_region_lend_charge(struct xferk_region *r, unsigned long npages);
void xferk_region_return_charge(struct xferk_region *r, unsigned long npages);
void xferk_region_set_unmap(void (*unmap)(struct xferk_region *r));

#endif /* XFERK_REGION_H */
