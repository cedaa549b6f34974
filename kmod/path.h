/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Transport layer: a session's transport part (struct xferk_path, which
 * each session embeds), the QPs of its path (struct xferk_lane), its
 * device link, and the callbacks through which the path reaches its
 * session (struct xferk_path_events). transport.h has the ops table that
 * acts on it.
 */
#ifndef XFERK_PATH_H
#define XFERK_PATH_H

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include "../uapi/xferk.h"

struct ib_qp;
struct rdma_cm_id;
struct xferk_cm_msg;
struct xferk_dev;
struct xferk_msgs;
struct xferk_path;
struct xferk_qdev;
struct xferk_send;
struct xferk_wr;

/**
 * struct xferk_lane - one RC QP of a session's path (RDMA)
 * @path: the transport's part of its session
 * @index: 0 for the QP of the path's handshake, which also carries the
 *	session's messages, registrations and keepalive probes; 1 to
 *	nr_qps - 1 for the QPs that join the path once its first is
 *	established (chunks only)
 * @cm_id: its rdma_cm id, NULL until the path has one for it and once
 *	teardown destroyed it (path->cm_lock for the QP event handler; on
 *	the accepting end a joining QP's is set under path->lock, on the
 *	initiating end once @cm_ready was reserved under it)
 * @cm_ready: completed once only the handler calls rdma_cm on @cm_id (its
 *	creator's rdma_resolve_addr() returned); teardown waits for it
 * @qp: the QP, NULL until the path creates it and once quiesced
 * @qp_num: its number, for tables
 * @live: established on the current path (path->lock); the path is up
 *	once all of its QPs are
 * @posted: chunks posted on it and not yet terminal (path->lock)
 * @posts: chunks posted on it over the session's life (path->lock); a
 *	post's sequence number on the QP
 * @sends: the send slots of those chunks, in posting order (RDMA;
 *	path->lock): its RC send queue completes them in that order
 * @unsignaled: those of @sends that are not signaled (path->lock; read
 *	without it by the completion handler, which needs only the ones
 *	posted before its own)
 * @probe_seq: a keepalive probe in flight follows the chunks numbered
 *	below it (path->lock)
 * @marker_cqe: the completion of its marker, which a partial post of
 *	unsignaled work requests gets (RDMA, rdma_post.c)
 * @marker_seq: the marker in flight follows the chunks numbered below it
 *	(path->lock)
 * @marker_posted: its marker is in flight (path->lock)
 *
 * A path's QPs live and die together: any of them failing is the path
 * dying (one recovery, one next path with every QP again).
 */
struct xferk_lane {
	struct xferk_path *path;
	u32 index;
	struct rdma_cm_id *cm_id;
	struct completion cm_ready;
	struct ib_qp *qp;
	u32 qp_num;
	bool live;
	u32 posted;
	u64 posts;
	struct list_head sends;
	u32 unsignaled;
	u64 probe_seq;
	struct ib_cqe marker_cqe;
	u64 marker_seq;
	bool marker_posted;
};

/**
 * struct xferk_dev_link - a session's attachment to its RDMA device
 * @dev: the device its verbs resources live on (ref), NULL until attached
 * @node: in the device's list of attached sessions (rdma_dev.c)
 */
struct xferk_dev_link {
	struct xferk_dev *dev;
	struct list_head node;
};

/**
 * struct xferk_path_events - what a path tells its session: the sessions
 *	layer's callbacks, which xferk_conn_init() gives each session's path
 *	(struct xferk_path.events). The transport reaches its session only
 *	through them.
 * @chunk_done: a chunk's work request is terminal, @error 0 or a negative
 *	errno (-ECONNRESET: flushed); without @lock
 * @chunks_succeeded: @n work requests completed successfully, in posting
 *	order (the null peer's; an RDMA completion's and the unsignaled
 *	ones it vouches for); without @lock
 * @next_posted: the work request posted after @wr (NULL: the first
 *	posted), NULL after the last; with @lock
 * @completion_lost: a work request's completion was lost: the path is
 *	replaced; without @lock
 * @probe_done: the keepalive probe completed: 0 (also flushed) or why it
 *	failed; without @lock
 * @qp_dead: a QP of the path failed, or a post on it: the path dies with
 *	@error and @cause (enum xferk_path_cause); any context
 * @qp_live: whether the path's QPs exist and their teardown has not begun;
 *	with @lock
 * @postable: whether a work request may be posted on the path now; with
 *	@lock
 * @msg_received: a session message of @len bytes arrived (a copy; 0: not
 *	a SEND); without @lock
 * @msg_sent: a message's send completed and its buffer is free again:
 *	@sent, it went out with sequence number @seq; without @lock
 * @connecting: whether the session is making a path (an initiating end's
 *	handshake goes on only then)
 * @request: the private data lane @lane's connect request carries (an
 *	initiating end)
 * @replied: lane @lane's request was accepted with @priv of @len bytes:
 *	0, or -EPROTO if the reply is not the session's peer's
 * @rejected: the path's request was refused; @error says why (one of the
 *	errnos of CONNECT)
 * @lane_up: lane @l is established
 * @path_down: the path failed to come up, or died (@error, @cause)
 * @down: the session goes down with @error (its device is going)
 *
 * The handshake's callbacks (@connecting to @down) run in a cm_id's
 * handler, without @lock.
 */
struct xferk_path_events {
	void (*chunk_done)(struct xferk_path *p, struct xferk_wr *wr,
			   int error);
	void (*chunks_succeeded)(struct xferk_path *p, struct xferk_wr **wrs,
				 u32 n);
	struct xferk_wr *(*next_posted)(struct xferk_path *p,
					struct xferk_wr *wr);
	void (*completion_lost)(struct xferk_path *p);
	void (*probe_done)(struct xferk_path *p, int error);
	void (*qp_dead)(struct xferk_path *p, int error, int cause);
	bool (*qp_live)(struct xferk_path *p);
	bool (*postable)(struct xferk_path *p);
	void (*msg_received)(struct xferk_path *p, const void *msg, u32 len);
	void (*msg_sent)(struct xferk_path *p, u64 seq, bool sent);
	bool (*connecting)(struct xferk_path *p);
	void (*request)(struct xferk_path *p, u32 lane, struct xferk_cm_msg *req);
	int (*replied)(struct xferk_path *p, u32 lane, const void *priv, u8 len);
	void (*rejected)(struct xferk_path *p, int error);
	void (*lane_up)(struct xferk_path *p, struct xferk_lane *l);
	void (*path_down)(struct xferk_path *p, int error, int cause);
	void (*down)(struct xferk_path *p, int error);
};

/**
 * struct xferk_path - the transport's part of a session (struct
 *	xferk_conn.path): its device and its current path's verbs objects
 * @events: its session's callbacks
 * @lock: the session's posting lock: held around @post, @unpost,
 *	@overtaken, @probe and @send_msg; the transport takes it where it
 *	posts or completes on its own
 * @passive: an end the peer initiated (set by the sessions layer before
 *	its first handshake event)
 * @qdev: where attaching the path's device puts the device's admission
 *	queue (the session's)
 * @max_chunk_pages: most pages one work request covers (>= 1)
 * @max_chunk_bytes: most bytes one work request carries
 * @nr_qps: QPs each path has (@lanes), 1 to XFERK_MAX_QPS: agreed in the
 *	session's first handshake, before it is keyed; 1 for the null peer
 * @lanes: the path's QPs (RDMA); lanes[0] is the handshake's
 * @next_lane: where the search for the least busy lane starts (@lock)
 * @cm_lock: guards each lane's cm_id against the QP event handler
 *	(irq-safe)
 * @attach: its RDMA device (ref), none until attached
 * @pd: protection domain of this session alone (RDMA)
 * @cq: completion queue of all of the path's QPs, one of its device's
 *	pool (RDMA)
 * @cq_entries: the entries of @cq the path claimed
 * @sends: XFERK_QP_CTXS send slots per QP asked for (RDMA), the free ones
 *	on @free_sends
 * @free_sends: send slots not in use (@lock)
 * @msgs: the transport's message buffers (RDMA)
 * @keepalive_cqe: the keepalive probe's completion (XFERK_CONN_F_PROBING
 *	while posted)
 * @reg_cqe: completion of an export's registration work request
 * @reg_done: completed by it, or by teardown once the QP is gone
 * @reg_status: its result (0 or -EIO); the three are the session's
 *	exports lock's (@export is called under it)
 * @reg_waiting: a registration is posted and waited for (@lock): the one
 *	a teardown completes @reg_done for
 * @null_delay_ns: delay before a chunk completes (null peer)
 * @null_work: completes due chunks (null peer)
 * @null_completing: @null_work is in its loop and looks at what is posted
 *	again before it leaves it, so a post need not queue it (null peer;
 *	@lock)
 *
 * Fencing: the rdma_cm handler runs only until teardown destroys a lane's
 * cm_id (rdma_destroy_id() waits for a running one, and teardown first
 * waits for the creator's own call into rdma_cm, each lane's cm_ready);
 * teardown destroys every lane's cm_id first and frees no verbs resource
 * before that, and the handler creates none for a session that is down.
 * The QP event handler reads a lane's cm_id under @cm_lock and sets bits;
 * it runs until the QP is destroyed, before the session's down work is
 * flushed.
 */
struct xferk_path {
	const struct xferk_path_events *events;
	struct mutex *lock;	/* the session's, see above */
	bool passive;
	struct xferk_qdev **qdev;
	u32 max_chunk_pages;
	u64 max_chunk_bytes;
	u32 nr_qps;
	struct xferk_lane lanes[XFERK_MAX_QPS];
	u32 next_lane;
	spinlock_t cm_lock;	/* lanes' cm_ids vs the QP event handler */
	struct xferk_dev_link attach;
	struct ib_pd *pd;
	struct ib_cq *cq;
	u32 cq_entries;
	struct xferk_send *sends;
	struct list_head free_sends;
	struct xferk_msgs *msgs;
	struct ib_cqe keepalive_cqe;
	struct ib_cqe reg_cqe;
	struct completion reg_done;
	int reg_status;
	bool reg_waiting;
	u64 null_delay_ns;
	struct delayed_work null_work;
	bool null_completing;
};

#endif /* XFERK_PATH_H */
