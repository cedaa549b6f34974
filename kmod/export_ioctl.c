// SPDX-License-Identifier: GPL-2.0
/*
 * The commands on exports and remote handles (front layer): EXPORT and
 * WINDOW_OPEN make an export of a region to a session's peer and publish
 * its handle, WINDOW_CLOSE takes it back (asking the peer first), IMPORT
 * makes a remote handle of a token, or adds one as a rail. export.c makes
 * and revokes the objects.
 *
 * Locking: an export is made under the file's lock, with the handles of
 * its region and session looked up under it: a deregistration, which
 * revokes the region's exports, runs before or after, never during.
 */
#include <linux/err.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "conn.h"
#include "evq.h"
#include "export.h"
#include "front.h"
#include "handle.h"
#include "limits.h"
#include "rail.h"
#include "region.h"
#include "stats.h"
#include "wire.h"
#include "xferk.h"

/**
 * struct export_args - an EXPORT's or WINDOW_OPEN's handles and answers
 * @conn: connection handle
 * @mr: region handle
 * @handle: out: the export's handle
 * @req: the rest of the request (export.h)
 */
struct export_args {
	u64 conn;
	u64 mr;
	u64 handle;
	struct xferk_export_req req;
};

/* EXPORT and WINDOW_OPEN: a new export, its handle published. */
static int export_open(struct xferk_file *xf, struct export_args *x)
{
	struct xferk_export *e;
	struct xferk_hobj *ho;
	struct xferk_evq *evq;
	int ret;

	if (!xferk_export_access_valid(x->req.access))
		return -EINVAL;
	if (!xferk_handle_room_limited(xf, XFERK_H_EXPORT))
		return -EMFILE;
	/* Notifications for it go to its file's events (made on first use). */
	evq = xferk_file_evq(xf);
	if (!evq)
		return -ENOMEM;
	x->req.evq = evq;
	x->req.acct = xf->qacct;
	x->req.max_pages = READ_ONCE(xferk_max_export_pages_per_file);

	mutex_lock(&xf->lock);
	ho = xferk_handle_lookup(&xf->handles, x->mr, XFERK_H_REGION);
	if (IS_ERR(ho)) {
		ret = PTR_ERR(ho);
		goto out_unlock;
	}
	x->req.region = container_of(ho, struct xferk_region, hobj);
	ho = xferk_handle_lookup(&xf->handles, x->conn, XFERK_H_CONN);
	if (IS_ERR(ho)) {
		ret = PTR_ERR(ho);
		goto out_unlock;
	}
	/* The handle table holds a ref to its xferk_conn_ref: see main.c. */
	x->req.conn = container_of(ho, struct xferk_conn_ref, hobj)->conn;
	e = xferk_export_create(&x->req);
	if (IS_ERR(e)) {
		ret = PTR_ERR(e);
		goto out_unlock;
	}
	ret = xferk_handle_add_limited(xf, &e->hobj, XFERK_H_EXPORT);
	if (ret) {
		mutex_unlock(&xf->lock);
		xferk_evq_put(evq);
		xferk_export_put(e);
		return ret;
	}
	xferk_conn_claim(e->conn);
	if (x->req.blocks)
		atomic64_inc(&xferk_stats.windows_opened);
	x->handle = e->hobj.handle;
	xferk_unlock_published(xf, x->handle, XFERK_H_EXPORT);
	xferk_evq_put(evq);
	return 0;

out_unlock:
	mutex_unlock(&xf->lock);
	xferk_evq_put(evq);
	return ret;
}

int xferk_ioctl_export(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_export *a = &arg->export;
	struct export_args x = {
		.conn = a->conn,
		.mr = a->mr,
		.req.access = a->access,
		.req.offset = a->offset,
		.req.len = a->len,
		.req.token = a->token,
	};
	int ret;

	if (a->flags || a->reserved0 ||
	    !xferk_is_zeroed(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	ret = export_open(xf, &x);
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
		.req.access = a->access,
		.req.nr_blocks = a->nr_blocks,
		.req.token = a->token,
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
	x.req.blocks = blocks;
	ret = export_open(xf, &x);
	if (!ret) {
		a->handle = x.handle;
		a->len = x.req.len;
		a->generation = x.req.gen;
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
	if (xferk_revoke_ask(e->conn, e->id, e->gen, &slot) &&
	    xferk_revoke_await(e->conn, slot, deadline, &a->ack_ns))
		a->how = XFERK_CLOSE_COOPERATIVE;
	else
		atomic64_inc(&xferk_stats.closes_forced);
	xferk_export_revoke(e);
	xferk_export_put(e);
	return 0;
}

int xferk_ioctl_import(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_import *a = &arg->import;
	struct xferk_remote *rm, *primary = NULL;
	struct xferk_token tok;
	struct xferk_hobj *ho;
	int ret;

	if ((a->flags & ~XFERK_IMPORT_RAIL) || a->reserved ||
	    !(a->flags & XFERK_IMPORT_RAIL) != !a->rail_of)
		return -EINVAL;
	if (!a->rail_of && !xferk_handle_room_limited(xf, XFERK_H_REMOTE))
		return -EMFILE;
	memcpy(&tok, a->token, sizeof(tok));
	if (!xferk_token_well_formed(&tok))
		return -EINVAL;

	mutex_lock(&xf->lock);
	ho = xferk_handle_lookup(&xf->handles, a->conn, XFERK_H_CONN);
	if (IS_ERR(ho)) {
		mutex_unlock(&xf->lock);
		return PTR_ERR(ho);
	}
	rm = xferk_remote_create(&tok,
				 container_of(ho, struct xferk_conn_ref, hobj)->conn);
	if (IS_ERR(rm)) {
		mutex_unlock(&xf->lock);
		return PTR_ERR(rm);
	}
	ret = 0;
	if (a->rail_of) {
		ho = xferk_handle_lookup(&xf->handles, a->rail_of,
					 XFERK_H_REMOTE);
		ret = PTR_ERR_OR_ZERO(ho);
		if (!ret)
			primary = container_of(ho, struct xferk_remote, hobj);
	}
	/* Listed before it can be used: a revoke finds it. */
	if (!ret && rm->id)
		ret = xferk_remote_listen(rm);
	if (!ret && primary) {
		ret = xferk_remote_add_rail(primary, rm);
		if (!ret)
			a->handle = primary->hobj.handle;
	} else if (!ret) {
		ret = xferk_handle_add_limited(xf, &rm->hobj, XFERK_H_REMOTE);
		if (!ret)
			a->handle = rm->hobj.handle;
	}
	if (!ret)
		xferk_conn_claim(rm->conn);
	mutex_unlock(&xf->lock);
	if (ret)
		xferk_remote_put(rm);
	return ret;
}
