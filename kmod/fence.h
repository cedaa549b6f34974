/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sessions layer: the rails fence (fence.c). Before a chunk whose work
 * request was posted on a session's path moves to another rail, the peer
 * confirms, through the session of that rail, that its end of the path is
 * torn down: nothing of the first attempt can then still land at the peer.
 */
#ifndef XFERK_FENCE_H
#define XFERK_FENCE_H

#include <linux/list.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include "wire.h"

struct xferk_conn;

/* A session going down waits this long for its fence beyond a flush (ms). */
#define XFERK_FENCE_WAIT_MS	3000
/* A fence not confirmed is asked for again this often (ms). */
#define XFERK_FENCE_RETRY_MS	1000
/* The sequence number a fence message is sent with (xferk_msg_sent()). */
#define XFERK_MSG_SEQ_FENCE	U64_MAX

/* A FENCE to answer once this end's path is torn down. */
struct xferk_fence_owed {
	struct xferk_conn *via;		/* the session it came through (ref) */
	u64 path;
	u64 peer_conn_id;		/* the asking end's id */
};

/**
 * struct xferk_fence - a session's part in the rails fence
 * @fenced: the peer confirmed that its end of every path numbered below
 *	this is torn down; only grows (the session's lock; read locklessly)
 * @wanted: the highest fence asked for (a chunk posted on a path numbered
 *	below it waited to move); only grows (the session's lock; read
 *	locklessly)
 * @stopped: the session's teardown is past its wait: @work does not
 *	re-arm (the session's lock)
 * @work: asks the peer for @wanted through another rail's session, again
 *	every XFERK_FENCE_RETRY_MS until confirmed; then moves what waited
 * @waiting: chunks of a session going down that wait for @fenced to move
 *	(the session's lock)
 * @path_seq: accepting end: the number of the path it has (or last had)
 *	(the session's lock); an initiating end's is its resume_seq
 * @torn: every path of this end numbered below it is torn down (the
 *	session's lock)
 * @owed: FENCEs about this session that wait for its path's teardown
 *	(the session's lock)
 * @nr_owed: entries of @owed
 * @msgs: fence messages to send on this session's path (its lock)
 * @nr_msgs: entries of @msgs
 * @sending: fence messages posted on the path whose send has not
 *	completed, at most XFERK_FENCES_MAX (the session's lock)
 */
struct xferk_fence {
	u64 fenced;
	u64 wanted;
	bool stopped;
	struct delayed_work work;
	struct list_head waiting;
	u64 path_seq;
	u64 torn;
	struct xferk_fence_owed owed[XFERK_FENCES_MAX];
	u32 nr_owed;
	struct xferk_wire_fence msgs[XFERK_FENCES_MAX];
	u32 nr_msgs;
	u32 sending;
};

void xferk_fence_init(struct xferk_conn *c);
u64 xferk_fence_path_locked(struct xferk_conn *c);
bool xferk_fence_covers(struct xferk_conn *c, u64 fence_path);
void xferk_fence_want_locked(struct xferk_conn *c, u64 fence_path);
bool xferk_fence_settled(struct xferk_conn *c);
void xferk_fence_stop(struct xferk_conn *c);
void xferk_fence_kick_locked(struct xferk_conn *c);
void xferk_fence_sent(struct xferk_conn *c);
bool xferk_fence_received(struct xferk_conn *via,
			  const struct xferk_wire_fence *f);
void xferk_fence_path_lost_locked(struct xferk_conn *c);
u32 xferk_fence_path_torn_locked(struct xferk_conn *c,
				 struct xferk_fence_owed *owed);
void xferk_fence_answer_owed(struct xferk_conn *c,
			     struct xferk_fence_owed *owed, u32 n);

#endif /* XFERK_FENCE_H */
