/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sessions layer: rails, one remote handle striped over several sessions
 * to its peer (rail.c has the rules), and the rerouting of a chunk whose
 * rail failed.
 */
#ifndef XFERK_RAIL_H
#define XFERK_RAIL_H

#include <linux/atomic.h>
#include <linux/types.h>
#include "../uapi/xferk.h"

struct xferk_chunk;
struct xferk_conn;
struct xferk_remote;

/**
 * struct xferk_rails - the sessions one remote handle's ops are striped over
 * @nr: rails in @rail, >= 1; only grows, under the handle's file's lock,
 *	published with smp_store_release() after its entry
 * @next: the rail the next chunk cut tries first
 * @rail: [0] is the handle's remote itself (no reference), the others
 *	imports of the same bytes through other sessions (a reference each,
 *	dropped when the handle's remote is freed: after every chunk)
 */
struct xferk_rails {
	u32 nr;
	atomic_t next;
	struct xferk_remote *rail[XFERK_MAX_RAILS];
};

/* rail.c */
int xferk_remote_add_rail(struct xferk_remote *rm, struct xferk_remote *rail);
void xferk_remote_free_rails(struct xferk_remote *rm);
void xferk_remote_limits(struct xferk_remote *rm, u32 *pages, u64 *bytes);
u32 xferk_remote_nr_rails(struct xferk_remote *rm);
struct xferk_conn *xferk_remote_rail_conn(struct xferk_remote *rm, u32 i);
u8 xferk_remote_pick_rail(struct xferk_remote *rm);
bool xferk_chunk_may_reroute(const struct xferk_chunk *ch);
bool xferk_chunk_fence_blocks(const struct xferk_chunk *ch);
struct xferk_conn *xferk_chunk_fence_via(const struct xferk_chunk *ch);
bool xferk_chunk_reroute(struct xferk_chunk *ch);

#endif /* XFERK_RAIL_H */
