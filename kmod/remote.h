/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sessions layer: remote handles (remote.c), what an imported token
 * becomes: the peer's range, key and access, and the local session end
 * that posts to it; and the token's authentication, which the exporting
 * end's requests layer uses too. The token's layout is in wire.h, rails
 * (a remote handle striped over several sessions) in rail.h.
 */
#ifndef XFERK_REMOTE_H
#define XFERK_REMOTE_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/siphash.h>
#include <linux/types.h>
#include "handle.h"

struct xferk_conn;
struct xferk_rails;
struct xferk_token;

/**
 * struct xferk_remote - an imported token: where fragments go
 * @hobj: handle-table entry
 * @ref: handle + one per chunk using it
 * @conn: the local end that posts to the exporting peer (ref)
 * @iova: the peer's address of the range's start
 * @len: the range's length
 * @rkey: the peer's remote key
 * @access: XFERK_ACCESS_REMOTE_* the peer granted
 * @id: the export's id in the session, 0 if the token has none
 * @gen: the export's generation
 * @conn_node: in @conn->remotes while @id is set (@conn->lock)
 * @error: 0, or why the key is unusable, for good: -ESTALE once the peer
 *	revoked it (REVOKE), -EACCES once the peer refused a work request on
 *	it (a remote access error). Later chunks on it fail with it unposted
 *	(instead of killing a path each): an op on a refused key FAILs with
 *	first_error -EACCES, while a submit that names a revoked one fails
 *	with -ESTALE (check_frag()). Set under @conn->lock, read locklessly.
 * @rails: NULL, or the rails of a remote handle striped over several
 *	sessions (XFERK_IMPORT_RAIL; rail.c), this one the first; set once,
 *	under its file's lock. A rail is a remote of its own with no handle.
 */
struct xferk_remote {
	struct xferk_hobj hobj;
	struct kref ref;
	struct xferk_conn *conn;
	u64 iova;
	u64 len;
	u32 rkey;
	u32 access;
	u64 id;
	u64 gen;
	struct list_head conn_node;
	int error;
	struct xferk_rails *rails;
};

u64 xferk_token_mac(const struct xferk_token *tok, const siphash_key_t *key);
bool xferk_token_well_formed(const struct xferk_token *tok);
struct xferk_remote *xferk_remote_create(const struct xferk_token *tok,
					 struct xferk_conn *via);
void xferk_remote_get(struct xferk_remote *rm);
void xferk_remote_put(struct xferk_remote *rm);

#endif /* XFERK_REMOTE_H */
