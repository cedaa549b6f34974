// SPDX-License-Identifier: GPL-2.0
/*
 * What a session's path tells the session: the callbacks the transport
 * reaches the sessions layer through (struct xferk_path_events), given to
 * every session's path by xferk_conn_init(). Each finds its session from
 * the transport's part of it and calls the session's own function, with
 * that function's context and locking.
 */
#include "conn.h"
#include "conn_internal.h"
#include "revoke.h"
#include "transport.h"

static void path_chunk_done(struct xferk_path *p, struct xferk_wr *wr,
			    int error)
{
	xferk_conn_chunk_done(xferk_path_conn(p), wr, error);
}

static void path_chunks_succeeded(struct xferk_path *p, struct xferk_wr **wrs,
				  u32 n)
{
	xferk_conn_chunks_succeeded(xferk_path_conn(p), wrs, n);
}

static struct xferk_wr *path_next_posted(struct xferk_path *p,
					 struct xferk_wr *wr)
{
	return xferk_conn_next_posted(xferk_path_conn(p), wr);
}

/* Not detected while lost_completion_ms is 0. */
static void path_completion_lost(struct xferk_path *p)
{
	if (READ_ONCE(xferk_lost_completion_ms))
		xferk_conn_completion_lost(xferk_path_conn(p));
}

static void path_probe_done(struct xferk_path *p, int error)
{
	xferk_conn_probe_done(xferk_path_conn(p), error);
}

static void path_qp_dead(struct xferk_path *p, int error, int cause)
{
	xferk_conn_qp_dead(xferk_path_conn(p), error, cause);
}

static bool path_qp_live(struct xferk_path *p)
{
	return xferk_conn_qp_live(xferk_path_conn(p));
}

static bool path_postable(struct xferk_path *p)
{
	return xferk_conn_postable(xferk_path_conn(p));
}

static void path_msg_received(struct xferk_path *p, const void *msg, u32 len)
{
	xferk_msg_received(xferk_path_conn(p), msg, len);
}

/* Also a failed send frees its buffer: what waited for one goes out. */
static void path_msg_sent(struct xferk_path *p, u64 seq, bool sent)
{
	struct xferk_conn *c = xferk_path_conn(p);

	if (sent)
		xferk_msg_sent(c, seq);
	mutex_lock(&c->lock);
	xferk_msgs_kick_locked(c);
	mutex_unlock(&c->lock);
}

static bool path_connecting(struct xferk_path *p)
{
	return xferk_handshake_connecting(xferk_path_conn(p));
}

static void path_request(struct xferk_path *p, u32 lane,
			 struct xferk_cm_msg *req)
{
	xferk_handshake_request(xferk_path_conn(p), lane, req);
}

static int path_replied(struct xferk_path *p, u32 lane, const void *priv,
			u8 len)
{
	return xferk_handshake_replied(xferk_path_conn(p), lane, priv, len);
}

static void path_rejected(struct xferk_path *p, int error)
{
	xferk_handshake_rejected(xferk_path_conn(p), error);
}

static void path_lane_up(struct xferk_path *p, struct xferk_lane *l)
{
	xferk_conn_lane_up(xferk_path_conn(p), l);
}

static void path_path_down(struct xferk_path *p, int error, int cause)
{
	xferk_conn_path_down(xferk_path_conn(p), error, cause);
}

static void path_down(struct xferk_path *p, int error)
{
	xferk_conn_down(xferk_path_conn(p), error);
}

const struct xferk_path_events xferk_conn_path_events = {
	.chunk_done = path_chunk_done,
	.chunks_succeeded = path_chunks_succeeded,
	.next_posted = path_next_posted,
	.completion_lost = path_completion_lost,
	.probe_done = path_probe_done,
	.qp_dead = path_qp_dead,
	.qp_live = path_qp_live,
	.postable = path_postable,
	.msg_received = path_msg_received,
	.msg_sent = path_msg_sent,
	.connecting = path_connecting,
	.request = path_request,
	.replied = path_replied,
	.rejected = path_rejected,
	.lane_up = path_lane_up,
	.path_down = path_path_down,
	.down = path_down,
};
