/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Requests layer: exports and windows (part of a region a peer may access,
 * export.c) and remote handles (an imported token). The token's layout is
 * in wire.h, the revoke protocol's entry points in conn.h, rails in rail.h.
 */
#ifndef XFERK_EXPORT_H
#define XFERK_EXPORT_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/types.h>
#include "handle.h"
#include "remote.h"
#include "transport.h"
#include "../uapi/xferk.h"

struct xferk_conn;
struct xferk_block;
struct xferk_evq;
struct xferk_qacct;
struct xferk_rails;
struct xferk_region;
struct xferk_token;

/**
 * struct xferk_export - part of a region exposed to one peer
 * @hobj: handle-table entry
 * @ref: handle; the lists do not hold references
 * @conn: the connection whose peer may access it (ref)
 * @reg: what the transport registers: the exported region (ref), range
 *	and access, a window's pages; its key and address for the peer.
 *	reg.npages are charged to @acct's max_export_pages_per_file
 * @region_node: in reg.region->exports (its lock)
 * @conn_node: in conn->exports (conn->exports_lock)
 * @id: its id in the session (@conn->next_export_id), 0 when the peer
 *	announced no XFERK_CAP_REVOKE: then the token carries none, and a
 *	CLOSE revokes without asking
 * @gen: its generation, a random nonce the token carries
 * @acct: the exporting file's account (ref)
 * @evq: the exporting file's event queue (ref): notifications for it go
 *	there
 * @live: not yet revoked (conn->exports_lock)
 */
struct xferk_export {
	struct xferk_hobj hobj;
	struct kref ref;
	struct xferk_conn *conn;
	struct xferk_reg reg;
	struct list_head region_node;
	struct list_head conn_node;
	u64 id;
	u64 gen;
	struct xferk_qacct *acct;
	struct xferk_evq *evq;
	bool live;
};

/* Most pages of one window (256 MiB in 4 KiB pages): E2BIG beyond. */
#define XFERK_WINDOW_MAX_PAGES	65536

/**
 * struct xferk_export_req - what EXPORT and WINDOW_OPEN ask for
 * @region: the region (its handle held by the caller)
 * @conn: the session whose peer may access it (its handle held too)
 * @acct: the asking file's account, charged the export's pages
 * @max_pages: what that account's exports may cover at most
 * @evq: the asking file's event queue (the export takes a reference)
 * @access: XFERK_ACCESS_REMOTE_*
 * @offset: EXPORT: start within the region
 * @len: EXPORT: length; WINDOW_OPEN: out, the window's
 * @blocks: WINDOW_OPEN: the blocks (kernel copy), NULL for EXPORT
 * @nr_blocks: WINDOW_OPEN: their number
 * @gen: out: the export's generation
 * @token: out: its token (XFERK_TOKEN_SIZE bytes)
 */
struct xferk_export_req {
	struct xferk_region *region;
	struct xferk_conn *conn;
	struct xferk_qacct *acct;
	unsigned long max_pages;
	struct xferk_evq *evq;
	u32 access;
	u64 offset;
	u64 len;
	const struct xferk_block *blocks;
	u32 nr_blocks;
	u64 gen;
	u8 *token;
};

/* The access an export may grant: some of XFERK_ACCESS_REMOTE_*, no more. */
static inline bool xferk_export_access_valid(u32 access)
{
	return access && !(access & ~(XFERK_ACCESS_REMOTE_READ |
				      XFERK_ACCESS_REMOTE_WRITE));
}

struct xferk_export *xferk_export_create(struct xferk_export_req *x);
void xferk_export_put(struct xferk_export *e);
void xferk_export_revoke(struct xferk_export *e);
void xferk_region_revoke_exports(struct xferk_region *r);
void xferk_export_module_init(void);

#endif /* XFERK_EXPORT_H */
