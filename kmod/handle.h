/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-file handle tables. A handle is a non-zero u64:
 *
 *   63..48 file tag   unique per open file while fewer than 65535 are open
 *   47..44 kind       enum xferk_handle_kind
 *   43..16 generation the file's own counter, from a random start, bumped
 *                     on every add: a stale handle names no newer object of
 *                     its file until 2^28 more handles were created through
 *                     that file
 *   15..0  slot       index in the file's xarray
 *
 * The table counts its handles per kind and refuses a kind past its limit,
 * so the limits of Documentation/security.md hold by construction.
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
	XFERK_H_GROUP,
	XFERK_H_KINDS
};

/* Most handles of one file, all kinds together (the slot bits). */
#define XFERK_HANDLES_MAX	65535U

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
 * @xa: slot -> struct xferk_hobj; the xarray's own lock guards it and the
 *	fields below
 * @tag: the file's tag (bits 63..48 of its handles)
 * @next_gen: generation of the next handle
 * @count: handles per kind
 *
 * The table does not hold references: callers pair add/remove with their
 * own reference counting, and look objects up under a lock that keeps
 * removal out (struct xferk_file.lock).
 */
struct xferk_handles {
	struct xarray xa;
	u16 tag;
	u32 next_gen;
	u32 count[XFERK_H_KINDS];
};

void xferk_handles_init(struct xferk_handles *t);
void xferk_handles_destroy(struct xferk_handles *t);
bool xferk_handle_room(struct xferk_handles *t, u8 kind, u32 limit);
int xferk_handle_add(struct xferk_handles *t, struct xferk_hobj *obj, u8 kind,
		     u32 limit);
struct xferk_hobj *xferk_handle_lookup(struct xferk_handles *t, u64 handle,
				       u8 kind);
struct xferk_hobj *xferk_handle_remove(struct xferk_handles *t, u64 handle,
				       u8 kind);
int xferk_handle_remove_obj(struct xferk_handles *t, u64 handle,
			    struct xferk_hobj *obj);
struct xferk_hobj *xferk_handle_pop(struct xferk_handles *t);

#endif /* XFERK_HANDLE_H */
