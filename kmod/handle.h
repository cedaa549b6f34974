/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-file handle tables. A handle is a non-zero u64:
 *
 *   63..48 file tag   unique per open file while fewer than 65535 are open
 *   47..44 kind       enum xferk_handle_kind
 *   43..20 generation from a global counter: a stale handle never names a
 *                     newer object in the same slot
 *   19..0  slot       index in the file's xarray
 *
 * Verbs-free, so KUnit tests it directly.
 */
#ifndef XFERK_HANDLE_H
#define XFERK_HANDLE_H

#include <linux/types.h>
#include <linux/xarray.h>

enum xferk_handle_kind {
	XFERK_H_REGION = 1,
	XFERK_H_CONN,
	XFERK_H_EXPORT,
	XFERK_H_REMOTE,
	XFERK_H_OP,
};

/**
 * struct xferk_hobj - what a table slot points to, embedded in each object
 * @handle: the object's handle while it is in a table, 0 otherwise
 * @kind: enum xferk_handle_kind
 */
struct xferk_hobj {
	u64 handle;
	u8 kind;
};

/**
 * struct xferk_handles - one file's table
 * @xa: slot -> struct xferk_hobj; the xarray's own lock guards it
 * @tag: the file's tag (bits 63..48 of its handles)
 *
 * The table does not hold references: callers pair add/remove with their
 * own reference counting, and look objects up under a lock that keeps
 * removal out (struct xferk_file.lock).
 */
struct xferk_handles {
	struct xarray xa;
	u16 tag;
};

void xferk_handles_init(struct xferk_handles *t);
void xferk_handles_destroy(struct xferk_handles *t);
int xferk_handle_add(struct xferk_handles *t, struct xferk_hobj *obj, u8 kind);
struct xferk_hobj *xferk_handle_lookup(struct xferk_handles *t, u64 handle,
				       u8 kind);
struct xferk_hobj *xferk_handle_remove(struct xferk_handles *t, u64 handle,
				       u8 kind);
struct xferk_hobj *xferk_handle_pop(struct xferk_handles *t);

#endif /* XFERK_HANDLE_H */
