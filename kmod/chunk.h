/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sessions layer: a chunk, one work request of an op: what the sessions
 * queue, post, move between rails and complete (conn_post.c, rail.c,
 * queue.c). Its op is the requests layer's, reached only through the
 * callbacks that layer registers (struct xferk_chunk_events, op.c).
 */
#ifndef XFERK_CHUNK_H
#define XFERK_CHUNK_H

#include <linux/container_of.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/types.h>
#include "rail.h"
#include "remote.h"
#include "transport.h"

struct xferk_conn;
struct xferk_op;
struct xferk_qentry;
struct xferk_sched_qp;

/**
 * struct xferk_chunk - one work request of an op
 * @wr: what the transport posts: the local region (ref until the op is
 *	physically complete), the peer's address, length and direction
 * @node: on conn->pending or conn->posted (conn->lock)
 * @op: the op
 * @remote: the fragment's remote handle (ref until the op is physically
 *	complete); the chunk goes through its rail @rail
 *	(xferk_chunk_remote())
 * @frags_done: fragments whose last byte it carries (chunks may carry
 *	bytes of several fragments that follow each other, see op_submit.c)
 * @posted: handed to the device and not yet reclaimed (conn->lock)
 * @sent: was handed to the device and is counted in flight: since its
 *	last post, unless it was queued again (xferk_chunk_unposted())
 * @dispatched: the admission queue let it go (charged to its windows
 *	until it is terminal)
 * @parked: dispatched, and waiting for its session's next path: out of
 *	the device window (xferk_queue_chunk_park()); written under
 *	xferk_queue_lock by whoever holds the chunk, who may read it without
 * @error: why an unposted chunk failed, for the completion path
 * @rail: the rail of @remote it goes through (0: @remote itself); changed
 *	only by whoever holds it off every list (xferk_chunk_reroute())
 * @reroutes: times it moved to another rail (bounded)
 * @fence_path: the number, plus one, of its rail's session's path that
 *	carried it last, 0 if none since it moved: it moves again only once
 *	the peer fenced that path (fence.c; conn->lock)
 * @sqp: the QP window the admission queue charged it to (dispatched)
 * @dispatched_at: when
 * @posted_at: when it was last handed to the device (conn->lock)
 *
 * Kept small: an op holds one per work request, and what a post needs
 * (SGEs, the work request, the DMA mapping) lives in the connection's
 * bounded send slots instead.
 */
struct xferk_chunk {
	struct xferk_wr wr;
	struct list_head node;
	struct xferk_op *op;
	struct xferk_remote *remote;
	u32 frags_done;
	bool posted;
	bool sent;
	bool dispatched;
	bool parked;
	u8 rail;
	u8 reroutes;
	int error;
	u64 fence_path;
	struct xferk_sched_qp *sqp;
	ktime_t dispatched_at;
	ktime_t posted_at;
};

/**
 * struct xferk_chunk_events - what becomes of a chunk's op as the chunk
 *	ends: the requests layer's (op.c), registered at module load
 * @complete: the chunk is done, completed or never posted, with @error (0
 *	or a negative errno); once per chunk, from process context
 * @succeeded: @n posted chunks (of any ops) completed without error: as
 *	@complete(ch, 0) for each, in one batch; from process context
 * @posted: the chunk was handed to the device (its session's lock held)
 * @unposted: a posted chunk is queued to be posted again (its path died):
 *	its bytes are no longer in flight until it is; by the chunk's holder
 * @cancelled: its op's outcome is decided: it is dropped, not posted
 * @holds: its op holds session @c, so the chunk may go through it
 * @queue_entry: its op's place in the admission queue
 */
struct xferk_chunk_events {
	void (*complete)(struct xferk_chunk *ch, int error);
	void (*succeeded)(struct xferk_chunk **chs, u32 n);
	void (*posted)(struct xferk_chunk *ch);
	void (*unposted)(struct xferk_chunk *ch);
	bool (*cancelled)(struct xferk_chunk *ch);
	bool (*holds)(const struct xferk_chunk *ch, const struct xferk_conn *c);
	struct xferk_qentry *(*queue_entry)(const struct xferk_chunk *ch);
};

/* conn_post.c: set once at module load (xferk_chunk_set_events()) */
extern const struct xferk_chunk_events *xferk_chunk_cb;
void xferk_chunk_set_events(const struct xferk_chunk_events *events);

static inline void xferk_chunk_complete(struct xferk_chunk *ch, int error)
{
	xferk_chunk_cb->complete(ch, error);
}

static inline void xferk_chunks_succeeded(struct xferk_chunk **chs, u32 n)
{
	xferk_chunk_cb->succeeded(chs, n);
}

static inline void xferk_chunk_posted(struct xferk_chunk *ch)
{
	xferk_chunk_cb->posted(ch);
}

static inline void xferk_chunk_unposted(struct xferk_chunk *ch)
{
	xferk_chunk_cb->unposted(ch);
}

static inline bool xferk_chunk_cancelled(struct xferk_chunk *ch)
{
	return xferk_chunk_cb->cancelled(ch);
}

static inline bool xferk_chunk_holds(const struct xferk_chunk *ch,
				     const struct xferk_conn *c)
{
	return xferk_chunk_cb->holds(ch, c);
}

/* The chunk whose work request @wr is (the transport hands back only those). */
static inline struct xferk_chunk *xferk_wr_chunk(struct xferk_wr *wr)
{
	return container_of(wr, struct xferk_chunk, wr);
}

static inline struct xferk_qentry *
xferk_chunk_qentry(const struct xferk_chunk *ch)
{
	return xferk_chunk_cb->queue_entry(ch);
}

/* The remote a chunk goes through: its handle's own, or one of its rails. */
static inline struct xferk_remote *
xferk_chunk_remote(const struct xferk_chunk *ch)
{
	return ch->rail ? ch->remote->rails->rail[ch->rail] : ch->remote;
}

#endif /* XFERK_CHUNK_H */
