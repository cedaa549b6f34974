// SPDX-License-Identifier: GPL-2.0
/*
 * Export tokens and remote handles.
 *
 * An export makes part of a region accessible to exactly one peer: the
 * memory is registered in the protection domain of the connection to that
 * peer, so only that connection's QP can use the key (the hardware
 * enforces it).
 *
 * A token is a bearer capability, and every export to one peer shares that
 * connection's protection domain: a token whose key or range a tenant
 * could change would reach another tenant's memory. So a token is
 * authenticated: it carries a SipHash-2-4 MAC under the connection's token
 * key, which the two kernels derive in the handshake and never show to
 * userspace. IMPORT finds the local end the token names (by the id this
 * host gave it) and checks the MAC with that end's key before anything is
 * published or posted: a forged, altered or foreign token fails with
 * EACCES. On two hosts that end is the importing host's, whichever side
 * initiated; on one host (loopback) it is the end opposite the exporter's.
 *
 * Token wire format (little endian, XFERK_TOKEN_SIZE bytes): struct
 * xferk_token in wire.h; the MAC covers every byte before it.
 *
 * A window is an export of a list of page-aligned blocks of a region (a
 * request's share of a pool), mapped by the device as one contiguous
 * remote range: the peer sees the blocks one after the other.
 *
 * To a peer that announced XFERK_CAP_REVOKE, an export's token also
 * carries the export's id in the session and its generation, a random
 * nonce: the revoke protocol (revoke.c) names the export by both, so that
 * CLOSE can ask the peer's kernel to stop using it first. Without them
 * (old peers, the null peer), CLOSE invalidates the key at once.
 */
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/siphash.h>
#include <linux/nsproxy.h>
#include <linux/uaccess.h>

#include "conn.h"
#include "conn_state.h"
#include "evq.h"
#include "export.h"
#include "frag.h"
#include "front.h"
#include "handle.h"
#include "limits.h"
#include "queue.h"
#include "rail.h"
#include "region.h"
#include "stats.h"
#include "wire.h"
#include "xferk.h"

static u64 token_mac(const struct xferk_token *t, const siphash_key_t *key)
{
	return siphash(t, offsetof(struct xferk_token, mac), key);
}

static void export_release(struct kref *ref)
{
	struct xferk_export *e = container_of(ref, struct xferk_export, ref);

	xferk_export_revoke(e);
	xferk_conn_unuse(e->conn);
	xferk_conn_put(e->conn);
	xferk_region_put(e->region);
	atomic_long_sub(e->npages, &e->acct->export_pages);
	xferk_qacct_put(e->acct);
	xferk_evq_put(e->evq);
	kvfree(e->window_pages);
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
	e->conn->transport->unexport(e->conn, e);
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
	struct xferk_region *r = e->region;

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
void xferk_conn_revoke_exports(struct xferk_conn *c)
{
	struct xferk_export *e, *tmp;

	mutex_lock(&c->exports_lock);
	list_for_each_entry_safe(e, tmp, &c->exports, conn_node)
		export_revoke_locked(e);
	mutex_unlock(&c->exports_lock);
}

/*
 * Range and pages of a window: each block within the region, its address
 * and length page-aligned. Return: 0, -EINVAL, or -E2BIG (more pages than
 * XFERK_WINDOW_MAX_PAGES).
 */
static int window_check(const struct xferk_region *r,
			const struct xferk_block *blocks, u32 nr_blocks,
			u64 *len, unsigned long *npages)
{
	u32 i;
	int ret;

	*len = 0;
	for (i = 0; i < nr_blocks; i++) {
		ret = xferk_range_check(blocks[i].offset, blocks[i].len, r->len);
		if (ret)
			return ret;
		if (!PAGE_ALIGNED(r->addr + blocks[i].offset) ||
		    !PAGE_ALIGNED(blocks[i].len))
			return -EINVAL;
		*len += blocks[i].len;
		if (*len > (u64)XFERK_WINDOW_MAX_PAGES << PAGE_SHIFT)
			return -E2BIG;
	}
	*npages = *len >> PAGE_SHIFT;
	return 0;
}

/* The region's pages of each block, in order (the array is the caller's). */
static struct page **window_pages(const struct xferk_region *r,
				  const struct xferk_block *blocks,
				  u32 nr_blocks, unsigned long npages)
{
	struct page **pages;
	unsigned long n = 0, first, count;
	u32 i;

	pages = kvmalloc_array(npages, sizeof(*pages), XFERK_GFP_USER);
	if (!pages)
		return NULL;
	for (i = 0; i < nr_blocks; i++) {
		first = (r->addr + blocks[i].offset - (r->addr & PAGE_MASK)) >>
			PAGE_SHIFT;
		count = blocks[i].len >> PAGE_SHIFT;
		memcpy(pages + n, r->pages + first, count * sizeof(*pages));
		n += count;
	}
	return pages;
}

/**
 * struct export_args - what EXPORT and WINDOW_OPEN ask for
 * @conn: connection handle
 * @mr: region handle
 * @access: XFERK_ACCESS_REMOTE_*
 * @offset: EXPORT: start within the region
 * @len: EXPORT: length; WINDOW_OPEN: out, the window's
 * @blocks: WINDOW_OPEN: the blocks (kernel copy), NULL for EXPORT
 * @nr_blocks: WINDOW_OPEN: their number
 * @handle: out: the export's handle
 * @gen: out: its generation
 * @token: out: its token
 */
struct export_args {
	u64 conn;
	u64 mr;
	u32 access;
	u64 offset;
	u64 len;
	const struct xferk_block *blocks;
	u32 nr_blocks;
	u64 handle;
	u64 gen;
	u8 *token;
};

/* Checks the request against the region; sets the export's range. */
static int export_range(struct xferk_export *e, const struct xferk_region *r,
			struct export_args *x)
{
	int ret;

	if (!x->blocks) {
		ret = xferk_range_check(x->offset, x->len, r->len);
		if (ret)
			return ret;
		e->addr = r->addr + x->offset;
		e->len = x->len;
		e->npages = (PAGE_ALIGN(e->addr + e->len) -
			     (e->addr & PAGE_MASK)) >> PAGE_SHIFT;
		return 0;
	}
	ret = window_check(r, x->blocks, x->nr_blocks, &x->len, &e->npages);
	if (ret)
		return ret;
	e->addr = r->addr + x->blocks[0].offset;
	e->len = x->len;
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
	} else if (e->window_pages) {
		return -EOPNOTSUPP;
	}
	ret = c->transport->export(c, e);
	if (ret || !e->id)
		return ret;
	/* Notifications name it by its id. */
	ret = xa_insert(&c->export_ids, e->id, e, XFERK_GFP_USER);
	if (ret) {
		c->transport->unexport(c, e);
		return -ENOMEM;
	}
	return 0;
}

/* EXPORT and WINDOW_OPEN: a new export, its handle published. */
static int export_create(struct xferk_file *xf, struct export_args *x)
{
	struct xferk_token tok = {};
	struct xferk_hobj *ho;
	struct xferk_region *r;
	struct xferk_conn *c;
	struct xferk_export *e;
	siphash_key_t key;
	u64 peer_id;
	int ret;

	if (!x->access || (x->access & ~(XFERK_ACCESS_REMOTE_READ |
					 XFERK_ACCESS_REMOTE_WRITE)))
		return -EINVAL;
	if (!xferk_handle_room_limited(xf, XFERK_H_EXPORT))
		return -EMFILE;
	e = kzalloc(sizeof(*e), XFERK_GFP_USER);
	if (!e)
		return -ENOMEM;
	/* Notifications for it go to its file's events (made on first use). */
	e->evq = xferk_file_evq(xf);
	if (!e->evq) {
		kfree(e);
		return -ENOMEM;
	}
	kref_init(&e->ref);
	INIT_LIST_HEAD(&e->region_node);
	INIT_LIST_HEAD(&e->conn_node);

	mutex_lock(&xf->lock);
	ho = xferk_handle_lookup(&xf->handles, x->mr, XFERK_H_REGION);
	if (IS_ERR(ho)) {
		ret = PTR_ERR(ho);
		goto err_unlock;
	}
	r = container_of(ho, struct xferk_region, hobj);
	ho = xferk_handle_lookup(&xf->handles, x->conn, XFERK_H_CONN);
	if (IS_ERR(ho)) {
		ret = PTR_ERR(ho);
		goto err_unlock;
	}
	/* The handle table holds a ref to its xferk_conn_ref: see main.c. */
	c = container_of(ho, struct xferk_conn_ref, hobj)->conn;
	ret = export_range(e, r, x);
	if (ret)
		goto err_unlock;
	if ((x->access & r->access) != x->access) {
		ret = -EACCES;
		goto err_unlock;
	}
	/* The key pins through the exporter's mm: it must be the region's. */
	if (current->mm != r->mm) {
		ret = -EPERM;
		goto err_unlock;
	}
	/* What the RDMA stack keeps per export grows with its pages. */
	ret = xferk_charge(&xf->qacct->export_pages, e->npages,
			   READ_ONCE(xferk_max_export_pages_per_file), -EMFILE);
	if (ret)
		goto err_unlock;
	if (x->blocks) {
		e->window_pages = window_pages(r, x->blocks, x->nr_blocks,
					       e->npages);
		if (!e->window_pages) {
			atomic_long_sub(e->npages, &xf->qacct->export_pages);
			ret = -ENOMEM;
			goto err_unlock;
		}
	}
	/* From here on the export is whole: errors go through its release. */
	kref_get(&xf->qacct->ref);
	e->acct = xf->qacct;
	xferk_region_get(r);
	xferk_conn_get(c);
	xferk_conn_use(c);
	e->region = r;
	e->conn = c;
	e->access = x->access;
	atomic64_inc(&xferk_stats.exports);

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
	if (!ret)
		ret = xferk_handle_add_limited(xf, &e->hobj, XFERK_H_EXPORT);
	mutex_unlock(&xf->lock);
	if (ret) {
		xferk_export_put(e);
		return ret;
	}
	xferk_conn_claim(c);
	if (x->blocks)
		atomic64_inc(&xferk_stats.windows_opened);

	tok = (struct xferk_token) {
		.magic = cpu_to_le32(XFERK_TOKEN_MAGIC),
		.version = cpu_to_le16(XFERK_TOKEN_VERSION),
		.conn_id = cpu_to_le64(peer_id),
		.iova = cpu_to_le64(e->iova),
		.len = cpu_to_le64(e->len),
		.rkey = cpu_to_le32(e->rkey),
		.access = cpu_to_le32(e->access),
		.export_id = cpu_to_le64(e->id),
		.generation = cpu_to_le64(e->gen),
	};
	tok.mac = cpu_to_le64(token_mac(&tok, &key));
	memzero_explicit(&key, sizeof(key));
	memcpy(x->token, &tok, sizeof(tok));
	x->handle = e->hobj.handle;
	x->gen = e->gen;
	return 0;

err_unlock:
	mutex_unlock(&xf->lock);
	xferk_evq_put(e->evq);
	kfree(e);
	return ret;
}

int xferk_ioctl_export(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_export *a = &arg->export;
	struct export_args x = {
		.conn = a->conn,
		.mr = a->mr,
		.access = a->access,
		.offset = a->offset,
		.len = a->len,
		.token = a->token,
	};
	int ret;

	if (a->flags || a->reserved0 ||
	    !xferk_is_zeroed(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	ret = export_create(xf, &x);
	if (!ret)
		a->handle = x.handle;
	return ret;
}

/* XFERK_IOC_WINDOW_OPEN */
int xferk_ioctl_window_open(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_window_open *a = &arg->window_open;
	struct export_args x = {
		.conn = a->conn,
		.mr = a->mr,
		.access = a->access,
		.nr_blocks = a->nr_blocks,
		.token = a->token,
	};
	struct xferk_block *blocks;
	int ret;

	if (a->flags || !xferk_is_zeroed(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (!a->nr_blocks || a->nr_blocks > XFERK_WINDOW_MAX_BLOCKS)
		return -EINVAL;
	blocks = kvmalloc_array(a->nr_blocks, sizeof(*blocks), XFERK_GFP_USER);
	if (!blocks)
		return -ENOMEM;
	if (copy_from_user(blocks, u64_to_user_ptr(a->blocks),
			   array_size(a->nr_blocks, sizeof(*blocks)))) {
		ret = -EFAULT;
		goto out;
	}
	x.blocks = blocks;
	ret = export_create(xf, &x);
	if (!ret) {
		a->handle = x.handle;
		a->len = x.len;
		a->generation = x.gen;
	}
out:
	kvfree(blocks);
	return ret;
}

/* Longest wait for the peer's answer to a CLOSE's revoke. */
#define XFERK_CLOSE_MAX_WAIT_NS	(60ULL * NSEC_PER_SEC)

/*
 * XFERK_IOC_WINDOW_CLOSE: the handle goes first (nobody else closes it),
 * then the peer is asked to stop (revoke.c), then the key is invalidated,
 * answered or not: when this returns no access through it can happen any
 * more. The peer is asked also when the close does not wait (a deadline
 * that passed): its imports are fenced all the same, so none keeps a key
 * and address that a later registration in the session's PD could match.
 */
int xferk_ioctl_window_close(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_window_close *a = &arg->window_close;
	ktime_t now = ktime_get(), deadline;
	struct xferk_hobj *ho;
	struct xferk_export *e;
	int slot;

	if (a->flags || a->reserved0 ||
	    !xferk_is_zeroed(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	ho = xferk_take_handle(xf, a->handle, XFERK_H_EXPORT);
	if (IS_ERR(ho))
		return PTR_ERR(ho);
	e = container_of(ho, struct xferk_export, hobj);
	deadline = min_t(u64, a->deadline_ns, now + XFERK_CLOSE_MAX_WAIT_NS);
	a->how = XFERK_CLOSE_FORCED;
	a->ack_ns = 0;
	if (xferk_export_ask_revoke(e, &slot) &&
	    xferk_export_await_revoke(e, slot, deadline, &a->ack_ns))
		a->how = XFERK_CLOSE_COOPERATIVE;
	else
		atomic64_inc(&xferk_stats.closes_forced);
	xferk_export_revoke(e);
	xferk_export_put(e);
	return 0;
}

void xferk_remote_get(struct xferk_remote *rm)
{
	kref_get(&rm->ref);
}

static void remote_release(struct kref *ref)
{
	struct xferk_remote *rm = container_of(ref, struct xferk_remote, ref);

	if (rm->id) {
		mutex_lock(&rm->conn->lock);
		list_del(&rm->conn_node);
		mutex_unlock(&rm->conn->lock);
	}
	xferk_remote_free_rails(rm);
	xferk_conn_unuse(rm->conn);
	xferk_conn_put(rm->conn);
	kfree(rm);
}

void xferk_remote_put(struct xferk_remote *rm)
{
	kref_put(&rm->ref, remote_release);
}

/*
 * The end a token names, if the token is authentic for it; with a
 * reference and a use. NULL for a forged, altered or foreign token.
 */
static struct xferk_conn *token_conn(struct xferk_conn *via,
				     const struct xferk_token *tok)
{
	struct xferk_conn *c;

	c = xferk_conn_find_importer(via, le64_to_cpu(tok->conn_id),
				     current->nsproxy->net_ns);
	if (c && le64_to_cpu(tok->mac) != token_mac(tok, &c->token_key)) {
		xferk_conn_unuse(c);
		xferk_conn_put(c);
		c = NULL;
	}
	if (!c)
		atomic64_inc(&xferk_stats.tokens_rejected);
	return c;
}

int xferk_ioctl_import(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_import *a = &arg->import;
	struct xferk_remote *rm, *primary = NULL;
	struct xferk_token tok;
	struct xferk_hobj *ho;
	struct xferk_conn *c;
	int ret;

	if ((a->flags & ~XFERK_IMPORT_RAIL) || a->reserved ||
	    !(a->flags & XFERK_IMPORT_RAIL) != !a->rail_of)
		return -EINVAL;
	if (!a->rail_of && !xferk_handle_room_limited(xf, XFERK_H_REMOTE))
		return -EMFILE;
	memcpy(&tok, a->token, sizeof(tok));
	if (le32_to_cpu(tok.magic) != XFERK_TOKEN_MAGIC ||
	    le16_to_cpu(tok.version) != XFERK_TOKEN_VERSION || tok.reserved0 ||
	    !tok.len || !le32_to_cpu(tok.access) ||
	    (le32_to_cpu(tok.access) & ~(XFERK_ACCESS_REMOTE_READ |
					 XFERK_ACCESS_REMOTE_WRITE)) ||
	    (!tok.export_id && tok.generation))
		return -EINVAL;
	rm = kzalloc(sizeof(*rm), XFERK_GFP_USER);
	if (!rm)
		return -ENOMEM;
	kref_init(&rm->ref);
	rm->iova = le64_to_cpu(tok.iova);
	rm->len = le64_to_cpu(tok.len);
	rm->rkey = le32_to_cpu(tok.rkey);
	rm->access = le32_to_cpu(tok.access);
	rm->id = le64_to_cpu(tok.export_id);
	rm->gen = le64_to_cpu(tok.generation);

	mutex_lock(&xf->lock);
	ho = xferk_handle_lookup(&xf->handles, a->conn, XFERK_H_CONN);
	if (IS_ERR(ho)) {
		ret = PTR_ERR(ho);
		goto err;
	}
	c = container_of(ho, struct xferk_conn_ref, hobj)->conn;
	rm->conn = token_conn(c, &tok);
	if (!rm->conn) {
		ret = -EACCES;
		goto err;
	}
	if (a->rail_of) {
		ho = xferk_handle_lookup(&xf->handles, a->rail_of,
					 XFERK_H_REMOTE);
		if (IS_ERR(ho)) {
			ret = PTR_ERR(ho);
			goto err_conn;
		}
		primary = container_of(ho, struct xferk_remote, hobj);
	}
	/* Listed before it can be used: a revoke finds it. */
	if (rm->id) {
		ret = xferk_remote_listen(rm);
		if (ret)
			goto err_conn;
	}
	if (primary) {
		ret = xferk_remote_add_rail(primary, rm);
		if (!ret)
			a->handle = primary->hobj.handle;
	} else {
		ret = xferk_handle_add_limited(xf, &rm->hobj, XFERK_H_REMOTE);
		if (!ret)
			a->handle = rm->hobj.handle;
	}
	if (!ret)
		xferk_conn_claim(rm->conn);
	mutex_unlock(&xf->lock);
	if (ret) {
		xferk_remote_put(rm);
		return ret;
	}
	return 0;

err_conn:
	xferk_conn_unuse(rm->conn);
	xferk_conn_put(rm->conn);
err:
	mutex_unlock(&xf->lock);
	kfree(rm);
	return ret;
}
