// SPDX-License-Identifier: GPL-2.0
/*
 * Rails: one remote handle striped over several sessions to its peer.
 *
 * A host with several RDMA devices reaches the same peer memory through a
 * session per device (or per peer address): each session has its own PD,
 * so the peer exports the bytes on each and the importer gets a token per
 * session. XFERK_IMPORT_RAIL adds such a token to an existing remote
 * handle as one more rail (struct xferk_rails); its fragments then name
 * the bytes, not the session.
 *
 * Striping: each work request of an op goes to the next rail whose
 * session is up, in rotation over the handle (so ops of one chunk spread
 * too), cut to the smallest work request any of the rails takes, so that
 * every chunk fits every rail.
 *
 * Failover: a chunk whose rail failed under it (its work request flushed
 * or out of retries, its session down, its path dead while it waited, its
 * session without a path when it is handed over) and that was not at
 * fault moves to another rail whose session is up, among the sessions its
 * op holds and whose device takes it in one work request, unless its op's
 * outcome is decided (deadline, cancel, failure): xferk_chunk_reroute().
 * Only a chunk whose work request is terminal or was never posted moves (a
 * flushed one counts when its completion arrived or its QP was destroyed),
 * and one a path carried only once the peer fenced that path (fence.c:
 * its end of the path is torn down), so as with a repost on a new path,
 * an RDMA READ or WRITE of pinned, unchanged buffers is done again, never
 * twice at once, not even at the peer. A chunk that finds no rail up
 * waits for its session's next path, or fails if the session is down, as
 * without rails.
 *
 * The admission queue: an op is admitted to the queue of its fragments'
 * first rails' device and charged to the QP window of the rail each
 * chunk was cut for (struct xferk_chunk.sqp, which it releases even
 * after a move). A rail's QP window is thus shared by several devices'
 * queues: when a full one frees, the other queues are kicked too
 * (XFERK_CONN_F_RAIL, xferk_queue_chunk_done()). A moved chunk is queued
 * on its new session directly. A notification (XFERK_SUBMIT_NOTIFY) goes
 * through the handle's own session, as without rails.
 *
 * Locking: a handle's rails only grow, under its file's lock; readers in
 * other contexts read @nr with smp_load_acquire(). A rail lives until the
 * handle's remote is freed, after the last chunk that may use it.
 */
#include <kunit/visibility.h>
#include <linux/slab.h>

#include "chunk.h"
#include "conn.h"
#include "conn_state.h"
#include "fence.h"
#include "rail.h"
#include "region.h"
#include "remote.h"
#include "stats.h"
#include "xferk.h"

/* A chunk moves at most this often: a bound on a storm of session deaths. */
#define XFERK_MAX_REROUTES	(2 * XFERK_MAX_RAILS)

/* How many rails @rm has; lockless. */
static u32 rails_nr(const struct xferk_remote *rm)
{
	struct xferk_rails *rails;

	/* Pairs with xferk_remote_add_rail(): seen filled. */
	rails = smp_load_acquire(&rm->rails);
	if (!rails)
		return 1;
	/* Pairs with xferk_remote_add_rail(): the entries it counts. */
	return smp_load_acquire(&rails->nr);
}

static struct xferk_remote *rail_at(struct xferk_remote *rm, u32 i)
{
	return i ? rm->rails->rail[i] : rm;
}

/* May work be sent through @rail now? Lockless: a hint, the post decides. */
static bool rail_up(struct xferk_remote *rail)
{
	return READ_ONCE(rail->conn->state) == XFERK_CONN_UP &&
	       !xferk_conn_path_dead(rail->conn) &&
	       !READ_ONCE(rail->error);
}

/**
 * xferk_remote_add_rail() - add an import of the same bytes as a rail
 * @rm: a remote handle's remote (with its file's lock)
 * @rail: a new import through another session, unpublished; on success
 *	its reference belongs to @rm
 *
 * Return: 0, -EINVAL (length or access differ), -EEXIST (a rail of @rm
 * uses its session already), -E2BIG (XFERK_MAX_RAILS reached) or -ENOMEM.
 */
int xferk_remote_add_rail(struct xferk_remote *rm, struct xferk_remote *rail)
{
	u32 i, nr = rails_nr(rm);

	if (rail->len != rm->len || rail->access != rm->access)
		return -EINVAL;
	for (i = 0; i < nr; i++)
		if (rail_at(rm, i)->conn == rail->conn)
			return -EEXIST;
	if (nr == XFERK_MAX_RAILS)
		return -E2BIG;
	if (!rm->rails) {
		struct xferk_rails *rails = kzalloc(sizeof(*rails),
						    XFERK_GFP_USER);

		if (!rails)
			return -ENOMEM;
		rails->nr = 1;
		rails->rail[0] = rm;
		/* Filled before it is seen: seen by rails_nr(). */
		smp_store_release(&rm->rails, rails);
	}
	rm->rails->rail[nr] = rail;
	/* Their QP windows are shared by several devices' queues. */
	set_bit(XFERK_CONN_F_RAIL, &rm->conn->flags);
	set_bit(XFERK_CONN_F_RAIL, &rail->conn->flags);
	/* The entry before the count that covers it: seen by rails_nr(). */
	smp_store_release(&rm->rails->nr, nr + 1);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_remote_add_rail);

/* The remote @rm is freed: its rails go with it. */
void xferk_remote_free_rails(struct xferk_remote *rm)
{
	u32 i;

	if (!rm->rails)
		return;
	for (i = 1; i < rm->rails->nr; i++)
		xferk_remote_put(rm->rails->rail[i]);
	kfree(rm->rails);
}

/**
 * xferk_remote_limits() - the largest work request every rail of @rm takes
 * @rm: a remote handle's remote (with its file's lock: stable)
 * @pages: out: most pages
 * @bytes: out: most bytes
 */
void xferk_remote_limits(struct xferk_remote *rm, u32 *pages, u64 *bytes)
{
	u32 i, nr = rails_nr(rm);

	*pages = rm->conn->path.max_chunk_pages;
	*bytes = rm->conn->path.max_chunk_bytes;
	for (i = 1; i < nr; i++) {
		*pages = min(*pages, rm->rails->rail[i]->conn->path.max_chunk_pages);
		*bytes = min(*bytes, rm->rails->rail[i]->conn->path.max_chunk_bytes);
	}
}
EXPORT_SYMBOL_IF_KUNIT(xferk_remote_limits);

/* The number of rails of @rm and its @i-th one's session, for op_submit.c. */
u32 xferk_remote_nr_rails(struct xferk_remote *rm)
{
	return rails_nr(rm);
}

struct xferk_conn *xferk_remote_rail_conn(struct xferk_remote *rm, u32 i)
{
	return rail_at(rm, i)->conn;
}

/**
 * xferk_remote_pick_rail() - the rail the next chunk cut of @rm goes to
 * @rm: a remote handle's remote
 *
 * Return: the next rail in rotation whose session is up; 0 (the handle's
 * own) if it has no other rail or none is up.
 */
u8 xferk_remote_pick_rail(struct xferk_remote *rm)
{
	u32 nr = rails_nr(rm), i, first;

	if (nr == 1)
		return 0;
	first = (u32)atomic_inc_return(&rm->rails->next);
	for (i = 0; i < nr; i++)
		if (rail_up(rail_at(rm, (first + i) % nr)))
			return (first + i) % nr;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_remote_pick_rail);

/*
 * Does @ch fit one work request of @c's device? It was cut for the rails
 * its remote had at submit; a rail added later may be on a device that
 * takes less.
 */
static bool chunk_fits(const struct xferk_chunk *ch, const struct xferk_conn *c)
{
	u64 start = ch->wr.region->addr + ch->wr.offset;

	return ch->wr.len <= c->path.max_chunk_bytes &&
	       DIV_ROUND_UP(offset_in_page(start) + ch->wr.len, PAGE_SIZE) <=
	       c->path.max_chunk_pages;
}

/*
 * Another rail @ch could move to now, or -1: its session is up, its op
 * holds that session, and it takes the chunk in one work request.
 */
static int chunk_other_rail(const struct xferk_chunk *ch)
{
	struct xferk_remote *rm = ch->remote, *rail;
	u32 nr = rails_nr(rm), i, r;

	if (nr == 1 || ch->reroutes >= XFERK_MAX_REROUTES)
		return -1;
	for (i = 1; i < nr; i++) {
		r = (ch->rail + i) % nr;
		rail = rail_at(rm, r);
		if (rail_up(rail) && xferk_chunk_holds(ch, rail->conn) &&
		    chunk_fits(ch, rail->conn))
			return r;
	}
	return -1;
}

/*
 * Is the path of its rail's session that carried @ch last torn down at
 * the peer (fence.c)? Nothing of its first attempt can land there then.
 */
static bool chunk_fenced(const struct xferk_chunk *ch)
{
	return xferk_fence_covers(xferk_chunk_remote(ch)->conn, ch->fence_path);
}

/**
 * xferk_chunk_may_reroute() - could @ch move to another rail now?
 * @ch: a chunk whose rail failed under it
 *
 * A hint for a caller that must choose under its connection's lock
 * between waiting for the session's next path and moving.
 */
bool xferk_chunk_may_reroute(const struct xferk_chunk *ch)
{
	return chunk_fenced(ch) && chunk_other_rail(ch) >= 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_chunk_may_reroute);

/*
 * The session through which @ch's fence can be asked for: that of the
 * rail it would move to, if its peer knows the fence; or NULL.
 */
static struct xferk_conn *chunk_fence_via(const struct xferk_chunk *ch)
{
	int r = chunk_other_rail(ch);
	struct xferk_conn *via;

	if (r < 0)
		return NULL;
	via = rail_at(ch->remote, r)->conn;
	return READ_ONCE(via->peer_caps) & XFERK_CAP_FENCE ? via : NULL;
}

/**
 * xferk_chunk_fence_blocks() - could @ch move now but for its fence,
 *	which can be asked for?
 * @ch: a chunk whose rail failed under it
 */
bool xferk_chunk_fence_blocks(const struct xferk_chunk *ch)
{
	return !chunk_fenced(ch) && chunk_fence_via(ch);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_chunk_fence_blocks);

/**
 * xferk_chunk_fence_via() - the session to ask for @ch's fence through
 * @ch: a chunk that waits for its fence
 *
 * That of the rail it would move to, if its peer knows the fence.
 *
 * Return: the session with a reference, or NULL.
 */
struct xferk_conn *xferk_chunk_fence_via(const struct xferk_chunk *ch)
{
	struct xferk_conn *via = chunk_fence_via(ch);

	if (via)
		xferk_conn_get(via);
	return via;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_chunk_fence_via);

/**
 * xferk_chunk_reroute() - move a chunk whose rail failed to another rail
 * @ch: the chunk, on no list and not posted: its work request, if it had
 *	one, is terminal, and fenced at the peer if a path carried it; the
 *	caller holds no connection's lock
 *
 * Return: true if it was queued on another rail (it is no longer the
 * caller's), false if it stays the caller's to complete with its error.
 */
bool xferk_chunk_reroute(struct xferk_chunk *ch)
{
	struct xferk_remote *from = xferk_chunk_remote(ch), *to;
	int r = chunk_other_rail(ch);

	if (r < 0 || !chunk_fenced(ch) || xferk_chunk_cancelled(ch))
		return false;
	to = rail_at(ch->remote, r);
	if (ch->sent)
		xferk_chunk_unposted(ch);
	ch->wr.remote_addr = to->iova + (ch->wr.remote_addr - from->iova);
	ch->rail = r;
	ch->reroutes++;
	ch->error = 0;
	ch->fence_path = 0;
	atomic64_inc(&xferk_stats.chunks_rerouted);
	xferk_chunks_queue(&ch, 1);
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_chunk_reroute);
