/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sessions layer, private to the files of a connection: conn.c,
 * conn_post.c, conn_timer.c, conn_lookup.c, conn_path.c, conn_handshake.c
 * and fence.c (no other file includes it; conn.h is the session layer's
 * API). Which file holds what:
 *
 *   conn.c         the life of a session: init, references, the state
 *                  machine, a path's death, the recovery work (a path's
 *                  teardown, reconnect attempts), the session's teardown
 *   conn_post.c    posting chunks and their completions: queue, kick,
 *                  repost, flush, a cancel's drop; the fault injection
 *                  of posts and completions
 *   conn_timer.c   the session's own deadline and its keepalive
 *   conn_lookup.c  publishing, the indexes and lookups: by peer, by id,
 *                  crossed and stale sessions, the token key, the ends
 *                  a fence message names (and recently torn down ones)
 *   conn_path.c    what a session's path tells it: the callbacks the
 *                  transport calls (struct xferk_path_events)
 *   conn_handshake.c  the session's side of the rdma_cm handshake: the
 *                  private data, replies, rejects, the listener's
 *                  requests (a new session, a new path, a joining QP)
 *   fence.c        the rails fence: its messages and their answers
 *
 * Locking:
 *   - xferk_conns_lock (mutex): xferk_conns, both indexes, the local ids,
 *     an end's peer id and token key. Taken before an end's c->lock.
 *   - c->lock (mutex): the session's state (written only by
 *     conn_change_state()), its path, the pending and posted chunks, the
 *     credits and send slots, and the arming of its recovery, timer and
 *     keepalive works. Functions named *_locked want it held, but
 *     conn_crossed_locked(), which wants xferk_conns_lock, as conn_by_id()
 *     and conn_local_sibling() do.
 *   - Under c->lock the transport posts and unposts, and chunks are
 *     marked posted (connection, then op). Chunks are completed, moved to
 *     another rail or handed to conn_queue() again only without any
 *     connection's lock (that may take another connection's): each
 *     function collects them on a list of its own and hands them on
 *     once it has let c->lock go.
 *   - xferk_conn_qp_dead(), xferk_conn_completion_lost() and
 *     xferk_conn_probe_done() may be called in any context (they set bits
 *     and queue a work item); an entry point
 *     that takes c->lock or xferk_conns_lock may sleep. The recovery
 *     work runs one at a time and needs no lock of its own.
 */
#ifndef XFERK_CONN_INTERNAL_H
#define XFERK_CONN_INTERNAL_H

#include <linux/atomic.h>
#include <linux/siphash.h>
#include <linux/types.h>

struct work_struct;
struct xferk_cm_msg;
struct xferk_cm_req;
struct xferk_conn;
struct xferk_path_events;
struct xferk_wr;

/* conn.c */
bool conn_resumable(struct xferk_conn *c);

/* conn_path.c */
extern const struct xferk_path_events xferk_conn_path_events;

/* conn_handshake.c */
extern atomic_t xferk_passive_conns;
bool xferk_handshake_connecting(struct xferk_conn *c);
void xferk_handshake_request(struct xferk_conn *c, u32 lane,
			     struct xferk_cm_msg *req);
int xferk_handshake_replied(struct xferk_conn *c, u32 lane, const void *priv,
			    u8 len);
void xferk_handshake_rejected(struct xferk_conn *c, int error);
int xferk_handshake_received(struct xferk_cm_req *r, const void *priv, u8 len);

/* conn_post.c */
void conn_reroute_pending(struct xferk_conn *c);
void conn_park_pending_locked(struct xferk_conn *c);
void conn_kick_locked(struct xferk_conn *c, struct list_head *failed);
void complete_failed(struct list_head *failed);
void fail_all(struct list_head *chunks, int error);
void reroute_or_complete(struct list_head *chunks);
bool conn_post_overdue_locked(struct xferk_conn *c);
void conn_hold_unfenced_locked(struct xferk_conn *c);
void conn_move_fenced(struct xferk_conn *c);
struct xferk_conn *conn_fence_via_locked(struct xferk_conn *c, bool *waits);
/* what a path tells its session (conn_path.c calls them) */
void xferk_conn_chunks_succeeded(struct xferk_conn *c, struct xferk_wr **wrs,
				 u32 n);
void xferk_conn_chunk_done(struct xferk_conn *c, struct xferk_wr *wr,
			   int error);
struct xferk_wr *xferk_conn_next_posted(struct xferk_conn *c,
					struct xferk_wr *wr);
void xferk_conn_completion_lost(struct xferk_conn *c);

/* conn_timer.c */
void conn_arm_timer_locked(struct xferk_conn *c, unsigned int ms);
void conn_timer(struct work_struct *work);
unsigned long keepalive_delay(void);
void conn_keepalive(struct work_struct *work);
void xferk_conn_probe_done(struct xferk_conn *c, int error);

/* conn_lookup.c */
struct xferk_conn *conn_local_sibling(struct xferk_conn *c);
void conn_reap_idle(struct xferk_conn *c);
void conn_bury_locked(struct xferk_conn *c);
struct xferk_conn *conn_find_fenced(u64 local_id, u64 peer_id,
				    siphash_key_t *key);

#endif /* XFERK_CONN_INTERNAL_H */
