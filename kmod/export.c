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
 * xferk_token below; the MAC covers every byte before it.
 */
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/siphash.h>
#include <linux/nsproxy.h>

#include "xferk.h"

#define XFERK_TOKEN_MAGIC	0x4b544658U	/* "XFTK" */
#define XFERK_TOKEN_VERSION	2

struct xferk_token {
	__le32 magic;
	__le16 version;
	__le16 reserved0;
	__le64 conn_id;		/* the importing end's local id */
	__le64 iova;
	__le64 len;
	__le32 rkey;
	__le32 access;
	__le64 reserved[2];
	__le64 mac;		/* SipHash-2-4 of the bytes above */
};

static_assert(sizeof(struct xferk_token) == XFERK_TOKEN_SIZE);

static u64 token_mac(const struct xferk_token *t, const siphash_key_t *key)
{
	return siphash(t, offsetof(struct xferk_token, mac), key);
}

static void export_release(struct kref *ref)
{
	struct xferk_export *e = container_of(ref, struct xferk_export, ref);

	xferk_export_revoke(e);
	xferk_conn_put(e->conn);
	xferk_region_put(e->region);
	atomic_long_sub(e->npages, &e->acct->export_pages);
	xferk_qacct_put(e->acct);
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

int xferk_ioctl_export(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_export *a = &arg->export;
	struct xferk_token tok = {};
	struct xferk_hobj *ho;
	struct xferk_region *r;
	struct xferk_conn *c;
	struct xferk_export *e;
	siphash_key_t key;
	u64 peer_id;
	int ret;

	if (a->flags || a->reserved0 ||
	    !xferk_is_zeroed(a->reserved, sizeof(a->reserved)) ||
	    !a->access || (a->access & ~(XFERK_ACCESS_REMOTE_READ |
					 XFERK_ACCESS_REMOTE_WRITE)))
		return -EINVAL;
	if (!xferk_handle_room_limited(xf, XFERK_H_EXPORT))
		return -EMFILE;
	e = kzalloc(sizeof(*e), XFERK_GFP_USER);
	if (!e)
		return -ENOMEM;
	kref_init(&e->ref);
	INIT_LIST_HEAD(&e->region_node);
	INIT_LIST_HEAD(&e->conn_node);

	mutex_lock(&xf->lock);
	ho = xferk_handle_lookup(&xf->handles, a->mr, XFERK_H_REGION);
	if (IS_ERR(ho)) {
		ret = PTR_ERR(ho);
		goto err_unlock;
	}
	r = container_of(ho, struct xferk_region, hobj);
	ho = xferk_handle_lookup(&xf->handles, a->conn, XFERK_H_CONN);
	if (IS_ERR(ho)) {
		ret = PTR_ERR(ho);
		goto err_unlock;
	}
	/* The handle table holds a ref to its xferk_conn_ref: see main.c. */
	c = container_of(ho, struct xferk_conn_ref, hobj)->conn;
	ret = xferk_range_check(a->offset, a->len, r->len);
	if (ret)
		goto err_unlock;
	if ((a->access & r->access) != a->access) {
		ret = -EACCES;
		goto err_unlock;
	}
	/* The key pins through the exporter's mm: it must be the region's. */
	if (current->mm != r->mm) {
		ret = -EPERM;
		goto err_unlock;
	}
	e->addr = r->addr + a->offset;
	e->len = a->len;
	e->npages = (PAGE_ALIGN(e->addr + e->len) - (e->addr & PAGE_MASK)) >>
		    PAGE_SHIFT;
	/* What the RDMA stack keeps per export grows with its pages. */
	ret = xferk_charge(&xf->qacct->export_pages, e->npages,
			   READ_ONCE(xferk_max_export_pages_per_file), -EMFILE);
	if (ret)
		goto err_unlock;
	/* From here on the export is whole: errors go through its release. */
	kref_get(&xf->qacct->ref);
	e->acct = xf->qacct;
	xferk_region_get(r);
	xferk_conn_get(c);
	e->region = r;
	e->conn = c;
	e->access = a->access;
	atomic64_inc(&xferk_stats.exports);

	mutex_lock(&r->lock);
	mutex_lock(&c->exports_lock);
	ret = READ_ONCE(c->state) == XFERK_CONN_UP &&
	      xferk_conn_token_key(c, &peer_id, &key) ?
	      c->transport->export(c, e) : -ENOTCONN;
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

	tok = (struct xferk_token) {
		.magic = cpu_to_le32(XFERK_TOKEN_MAGIC),
		.version = cpu_to_le16(XFERK_TOKEN_VERSION),
		.conn_id = cpu_to_le64(peer_id),
		.iova = cpu_to_le64(e->iova),
		.len = cpu_to_le64(e->len),
		.rkey = cpu_to_le32(e->rkey),
		.access = cpu_to_le32(e->access),
	};
	tok.mac = cpu_to_le64(token_mac(&tok, &key));
	memzero_explicit(&key, sizeof(key));
	memcpy(a->token, &tok, sizeof(tok));
	a->handle = e->hobj.handle;
	return 0;

err_unlock:
	mutex_unlock(&xf->lock);
	kfree(e);
	return ret;
}

void xferk_remote_get(struct xferk_remote *rm)
{
	kref_get(&rm->ref);
}

static void remote_release(struct kref *ref)
{
	struct xferk_remote *rm = container_of(ref, struct xferk_remote, ref);

	xferk_conn_put(rm->conn);
	kfree(rm);
}

void xferk_remote_put(struct xferk_remote *rm)
{
	kref_put(&rm->ref, remote_release);
}

/*
 * The end a token names, if the token is authentic for it; with a
 * reference. NULL for a forged, altered or foreign token.
 */
static struct xferk_conn *token_conn(struct xferk_conn *via,
				     const struct xferk_token *tok)
{
	struct xferk_conn *c;

	c = xferk_conn_find_importer(via, le64_to_cpu(tok->conn_id),
				     current->nsproxy->net_ns);
	if (c && le64_to_cpu(tok->mac) != token_mac(tok, &c->token_key)) {
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
	struct xferk_token tok;
	struct xferk_remote *rm;
	struct xferk_hobj *ho;
	struct xferk_conn *c;
	int ret;

	if (a->flags || !xferk_is_zeroed(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (!xferk_handle_room_limited(xf, XFERK_H_REMOTE))
		return -EMFILE;
	memcpy(&tok, a->token, sizeof(tok));
	if (le32_to_cpu(tok.magic) != XFERK_TOKEN_MAGIC ||
	    le16_to_cpu(tok.version) != XFERK_TOKEN_VERSION || tok.reserved0 ||
	    !tok.len || !le32_to_cpu(tok.access) ||
	    (le32_to_cpu(tok.access) & ~(XFERK_ACCESS_REMOTE_READ |
					 XFERK_ACCESS_REMOTE_WRITE)) ||
	    !xferk_is_zeroed(tok.reserved, sizeof(tok.reserved)))
		return -EINVAL;
	rm = kzalloc(sizeof(*rm), XFERK_GFP_USER);
	if (!rm)
		return -ENOMEM;
	kref_init(&rm->ref);
	rm->iova = le64_to_cpu(tok.iova);
	rm->len = le64_to_cpu(tok.len);
	rm->rkey = le32_to_cpu(tok.rkey);
	rm->access = le32_to_cpu(tok.access);

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
	ret = xferk_handle_add_limited(xf, &rm->hobj, XFERK_H_REMOTE);
	if (ret) {
		xferk_conn_put(rm->conn);
		goto err;
	}
	mutex_unlock(&xf->lock);
	xferk_conn_claim(rm->conn);
	a->handle = rm->hobj.handle;
	return 0;

err:
	mutex_unlock(&xf->lock);
	kfree(rm);
	return ret;
}
