// SPDX-License-Identifier: GPL-2.0
/*
 * Exports and their tokens.
 *
 * An export makes part of a region accessible to exactly one peer: the
 * memory is registered in the protection domain of the connection to that
 * peer, so only that connection's QP can use the key (the hardware
 * enforces it). Its token carries a MAC under the session's token key
 * (xferk_token_mac()): remote.c has why, and what IMPORT makes of it.
 *
 * Token wire format (little endian, XFERK_TOKEN_SIZE bytes): struct
 * xferk_token in wire.h; the MAC covers every byte before it.
 *
 * A window is an export of a list of blocks of a region (a request's share
 * of a pool), mapped by the device as one contiguous remote range: the
 * peer sees the blocks one after the other. Where two blocks meet, both
 * are page-aligned; the first may start and the last end mid-page.
 *
 * To a peer that announced XFERK_CAP_REVOKE, an export's token also
 * carries the export's id in the session and its generation, a random
 * nonce: the revoke protocol (revoke.c) names the export by both, so that
 * CLOSE can ask the peer's kernel to stop using it first. Without them
 * (old peers, the null peer), CLOSE invalidates the key at once.
 *
 * The EXPORT, WINDOW_* and IMPORT commands are the front's
 * (export_ioctl.c); they call xferk_export_create() and
 * xferk_remote_create() with the file's lock held.
 */
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/siphash.h>

#include "conn.h"
#include "conn_state.h"
#include "evq.h"
#include "export.h"
#include "frag.h"
#include "handle.h"
#include "notify.h"
#include "queue.h"
#include "region.h"
#include "stats.h"
#include "wire.h"
#include "xferk.h"

static void export_release(struct kref *ref)
{
	struct xferk_export *e = container_of(ref, struct xferk_export, ref);

	xferk_export_revoke(e);
	xferk_conn_unuse(e->conn);
	xferk_conn_put(e->conn);
	xferk_region_put(e->reg.region);
	atomic_long_sub(e->reg.npages, &e->acct->export_pages);
	xferk_qacct_put(e->acct);
	xferk_evq_put(e->evq);
	kvfree(e->reg.window_index);
	kfree(e);
	atomic64_dec(&xferk_stats.exports);
}

void xferk_export_put(struct xferk_export *e)
{
	kref_put(&e->ref, export_release);
}

/*
 * Revokes the remote key (idempotent). Lock order: region->lock, then
 * conn->exports_lock.
 */
static void export_revoke_locked(struct xferk_export *e)
{
	lockdep_assert_held(&e->conn->exports_lock);
	if (!e->live)
		return;
	if (e->id)
		xa_erase(&e->conn->export_ids, e->id);
	e->conn->transport->unexport(&e->conn->path, &e->reg);
	list_del_init(&e->conn_node);
	e->live = false;
}

/**
 * xferk_export_revoke() - make an export's key unusable and unlink it
 * @e: the export
 *
 * After this returns, no peer can start an access through the export's
 * key; the pages stay pinned by the region for ops still using them.
 */
void xferk_export_revoke(struct xferk_export *e)
{
	struct xferk_region *r = e->reg.region;

	mutex_lock(&r->lock);
	mutex_lock(&e->conn->exports_lock);
	export_revoke_locked(e);
	mutex_unlock(&e->conn->exports_lock);
	list_del_init(&e->region_node);
	mutex_unlock(&r->lock);
}

/* Deregistration: every export of @r loses its key before the pages go. */
void xferk_region_revoke_exports(struct xferk_region *r)
{
	struct xferk_export *e, *tmp;

	mutex_lock(&r->lock);
	list_for_each_entry_safe(e, tmp, &r->exports, region_node) {
		mutex_lock(&e->conn->exports_lock);
		export_revoke_locked(e);
		mutex_unlock(&e->conn->exports_lock);
		list_del_init(&e->region_node);
	}
	mutex_unlock(&r->lock);
}

/* Connection teardown: every export on @c loses its key before the PD goes. */
static void conn_revoke_exports(struct xferk_conn *c)
{
	struct xferk_export *e, *tmp;

	mutex_lock(&c->exports_lock);
	list_for_each_entry_safe(e, tmp, &c->exports, conn_node)
		export_revoke_locked(e);
	mutex_unlock(&c->exports_lock);
}

/*
 * A notification for export @e arrived: to its file's event queue, which
 * names it by its handle. Return: false while @e has none (not yet, or no
 * longer, published: nobody could name it).
 */
static bool export_post_event(struct xferk_export *e, struct xferk_event *ev)
{
	ev->export_handle = READ_ONCE(e->hobj.handle);
	if (!ev->export_handle)
		return false;
	xferk_evq_post(e->evq, ev);
	return true;
}

/**
 * xferk_export_module_init() - give the sessions layer what it calls back
 *
 * A session's teardown revokes its exports, and a notification received
 * goes to its export's event queue: both are this layer's objects.
 */
void xferk_export_module_init(void)
{
	xferk_conn_set_exports_down(conn_revoke_exports);
	xferk_notify_set_deliver(export_post_event);
}

/* The pages [addr, addr + len) touches. */
static unsigned long span_pages(u64 addr, u64 len)
{
	return (PAGE_ALIGN(addr + len) - (addr & PAGE_MASK)) >> PAGE_SHIFT;
}

/*
 * Range and pages of a window: each block within the region; every edge
 * between two blocks page-aligned, so that the blocks are one range of
 * pages to the device (the first block may start and the last may end
 * anywhere, as a plain export may). Return: 0, -EINVAL, or -E2BIG (more
 * pages than XFERK_WINDOW_MAX_PAGES).
 */
static int window_check(const struct xferk_region *r,
			const struct xferk_block *blocks, u32 nr_blocks,
			u64 *len, unsigned long *npages)
{
	u64 addr;
	u32 i;
	int ret;

	*len = 0;
	*npages = 0;
	for (i = 0; i < nr_blocks; i++) {
		ret = xferk_range_check(blocks[i].offset, blocks[i].len, r->len);
		if (ret)
			return ret;
		addr = r->addr + blocks[i].offset;
		if ((i > 0 && !PAGE_ALIGNED(addr)) ||
		    (i < nr_blocks - 1 && !PAGE_ALIGNED(addr + blocks[i].len)))
			return -EINVAL;
		*len += blocks[i].len;
		*npages += span_pages(addr, blocks[i].len);
		if (*npages > XFERK_WINDOW_MAX_PAGES)
			return -E2BIG;
	}
	return 0;
}

/*
 * The indices of the region's pages of each block, in order (the array
 * is the caller's).
 */
static unsigned long *window_index(const struct xferk_region *r,
				   const struct xferk_block *blocks,
				   u32 nr_blocks, unsigned long npages)
{
	unsigned long *index, n = 0, first, count;
	u64 addr;
	u32 i;

	index = kvmalloc_array(npages, sizeof(*index), XFERK_GFP_USER);
	if (!index)
		return NULL;
	for (i = 0; i < nr_blocks; i++) {
		addr = r->addr + blocks[i].offset;
		first = (addr >> PAGE_SHIFT) - (r->addr >> PAGE_SHIFT);
		for (count = span_pages(addr, blocks[i].len); count; count--)
			index[n++] = first++;
	}
	return index;
}

/* Checks the request against the region; sets the export's range. */
static int export_range(struct xferk_export *e, const struct xferk_region *r,
			struct xferk_export_req *x)
{
	int ret;

	if (!x->blocks) {
		ret = xferk_range_check(x->offset, x->len, r->len);
		if (ret)
			return ret;
		e->reg.addr = r->addr + x->offset;
		e->reg.len = x->len;
		e->reg.npages = span_pages(e->reg.addr, e->reg.len);
		return 0;
	}
	ret = window_check(r, x->blocks, x->nr_blocks, &x->len, &e->reg.npages);
	if (ret)
		return ret;
	e->reg.addr = r->addr + x->blocks[0].offset;
	e->reg.len = x->len;
	return 0;
}

/*
 * Makes the export's key on its connection: only on a session that is up
 * and keyed, a window only for a peer that can revoke it. With the
 * region's lock and the connection's exports_lock.
 */
static int export_register(struct xferk_export *e, u64 *peer_id,
			   siphash_key_t *key)
{
	struct xferk_conn *c = e->conn;
	int ret;

	lockdep_assert_held(&c->exports_lock);
	if (READ_ONCE(c->state) != XFERK_CONN_UP ||
	    !xferk_conn_token_key(c, peer_id, key))
		return -ENOTCONN;
	if (c->peer_caps & XFERK_CAP_REVOKE) {
		e->id = ++c->next_export_id;
		e->gen = get_random_u64() ?: 1;
	} else if (e->reg.window_index) {
		return -EOPNOTSUPP;
	}
	ret = c->transport->export(&c->path, &e->reg);
	if (ret || !e->id)
		return ret;
	/* Notifications name it by its id. */
	ret = xa_insert(&c->export_ids, e->id, e, XFERK_GFP_USER);
	if (ret) {
		c->transport->unexport(&c->path, &e->reg);
		return -ENOMEM;
	}
	return 0;
}

/**
 * xferk_export_create() - a new export of a region to a session's peer
 * @x: what is asked (its access checked: xferk_export_access_valid()),
 *	and where the answers go
 *
 * With the lock of the file that holds @x->region's and @x->conn's handles
 * (their handles cannot go meanwhile, so a deregistration that revokes the
 * region's exports sees this one). The export is registered on the
 * session and listed on the region and the session; @x->token, @x->len
 * (a window's) and @x->gen are filled in. Its pages are charged to
 * @x->acct's export pages (at most @x->max_pages).
 *
 * Return: the export, with one reference (for the handle the caller
 * publishes), or ERR_PTR: -EINVAL (the range), -E2BIG, -EACCES (more access than the
 * region's), -EPERM (not the region's process), -EMFILE (the pages),
 * -ENOTCONN, -EOPNOTSUPP, -ENOMEM, or what registration returns.
 */
struct xferk_export *xferk_export_create(struct xferk_export_req *x)
{
	struct xferk_region *r = x->region;
	struct xferk_conn *c = x->conn;
	struct xferk_token tok = {};
	struct xferk_export *e;
	siphash_key_t key;
	u64 peer_id;
	int ret;

	e = kzalloc(sizeof(*e), XFERK_GFP_USER);
	if (!e)
		return ERR_PTR(-ENOMEM);
	kref_init(&e->ref);
	INIT_LIST_HEAD(&e->region_node);
	INIT_LIST_HEAD(&e->conn_node);
	ret = export_range(e, r, x);
	if (ret)
		goto err_free;
	if ((x->access & r->access) != x->access) {
		ret = -EACCES;
		goto err_free;
	}
	/* The key pins through the exporter's mm: it must be the region's. */
	if (current->mm != r->mm) {
		ret = -EPERM;
		goto err_free;
	}
	/* What the RDMA stack keeps per export grows with its pages. */
	ret = xferk_charge(&x->acct->export_pages, e->reg.npages, x->max_pages,
			   -EMFILE);
	if (ret)
		goto err_free;
	if (x->blocks) {
		e->reg.window_index = window_index(r, x->blocks,
						   x->nr_blocks,
						   e->reg.npages);
		if (!e->reg.window_index) {
			atomic_long_sub(e->reg.npages, &x->acct->export_pages);
			ret = -ENOMEM;
			goto err_free;
		}
	}
	/* From here on the export is whole: errors go through its release. */
	kref_get(&x->acct->ref);
	e->acct = x->acct;
	/* Notifications for it go to its file's events. */
	kref_get(&x->evq->ref);
	e->evq = x->evq;
	xferk_region_get(r);
	xferk_conn_get(c);
	xferk_conn_use(c);
	e->reg.region = r;
	e->conn = c;
	e->reg.access = x->access;
	atomic64_inc(&xferk_stats.exports);

	/*
	 * Mapping a dma-buf may wait for its exporter: before the region's
	 * and the session's locks (the caller holds only its file's), and
	 * only for a session that is up.
	 */
	if (r->dmabuf && c->transport->map_region) {
		if (READ_ONCE(c->state) != XFERK_CONN_UP) {
			xferk_export_put(e);
			return ERR_PTR(-ENOTCONN);
		}
		ret = c->transport->map_region(&c->path, r, false);
		if (ret) {
			xferk_export_put(e);
			return ERR_PTR(ret);
		}
	}
	mutex_lock(&r->lock);
	mutex_lock(&c->exports_lock);
	ret = export_register(e, &peer_id, &key);
	if (!ret) {
		e->live = true;
		list_add_tail(&e->conn_node, &c->exports);
		list_add_tail(&e->region_node, &r->exports);
	}
	mutex_unlock(&c->exports_lock);
	mutex_unlock(&r->lock);
	if (ret) {
		xferk_export_put(e);
		return ERR_PTR(ret);
	}

	tok = (struct xferk_token) {
		.magic = cpu_to_le32(XFERK_TOKEN_MAGIC),
		.version = cpu_to_le16(XFERK_TOKEN_VERSION),
		.conn_id = cpu_to_le64(peer_id),
		.iova = cpu_to_le64(e->reg.iova),
		.len = cpu_to_le64(e->reg.len),
		.rkey = cpu_to_le32(e->reg.rkey),
		.access = cpu_to_le32(e->reg.access),
		.export_id = cpu_to_le64(e->id),
		.generation = cpu_to_le64(e->gen),
	};
	tok.mac = cpu_to_le64(xferk_token_mac(&tok, &key));
	memzero_explicit(&key, sizeof(key));
	memcpy(x->token, &tok, sizeof(tok));
	x->gen = e->gen;
	return e;

err_free:
	kfree(e);
	return ERR_PTR(ret);
}
