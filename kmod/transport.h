/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Transport layer: what the sessions layer asks of a transport (struct
 * xferk_transport, the ops table conn.c, conn_post.c and conn_timer.c
 * call through), one QP of a session's path (struct xferk_lane), the
 * bounds of posting, and the entry points of the two transports: RDMA
 * (rdma*.c; rdma.h is its private header) and the null peer (nullpeer.c).
 */
#ifndef XFERK_TRANSPORT_H
#define XFERK_TRANSPORT_H

#include <linux/completion.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include "../uapi/xferk.h"

struct net;
struct rdma_cm_id;
struct page;
struct xferk_conn;
struct xferk_dev;
struct xferk_msgs;
struct xferk_path;
struct xferk_qacct;
struct xferk_qdev;
struct xferk_region;
struct xferk_send;

/* conn.c, conn_post.c, rdma.c, nullpeer.c */

/* Chunks (send work requests) in flight per connection. */
#define XFERK_QP_CTXS	128

/*
 * Chunks posted with one call into the device (one ib_post_send() of a
 * chain, one doorbell), and picked per hold of the queue's lock.
 */
#define XFERK_POST_BATCH	16

/* Bound of a route's resolution, and of a next path's address's. */
#define XFERK_RESOLVE_MS	5000

/* Most scatter/gather entries, hence pages, one work request carries. */
#define XFERK_MAX_SGE	32

/**
 * struct xferk_wr - what the transport posts of a chunk: one work request
 * @region: the local memory (pinned; the chunk's op holds a reference)
 * @offset: start within @region
 * @remote_addr: the peer's address
 * @rkey: the peer's key for it: set by the sessions layer before each post
 *	(the chunk's rail may change between posts)
 * @len: bytes (at most a work request's, far below 4 GiB)
 * @opcode: XFERK_OP_READ or XFERK_OP_WRITE
 * @due: null peer: when to complete
 * @send: RDMA: the session's send slot while posted (path->lock)
 *
 * Embedded in its chunk (struct xferk_chunk.wr): the transport sees no
 * more of it, and hands back only this (its events->chunk_done(), ...).
 */
struct xferk_wr {
	struct xferk_region *region;
	u64 offset;
	u64 remote_addr;
	u32 rkey;
	u32 len;
	u8 opcode;
	union {
		ktime_t due;
		struct xferk_send *send;
	};
};

/**
 * struct xferk_reg - a range registered for the peer: an export's
 * @region: the pinned region it is part of (the export holds a reference)
 * @addr: start (user address of the exporting process); a window's first
 *	block's
 * @len: length; a window's is the sum of its blocks'
 * @access: XFERK_ACCESS_REMOTE_*
 * @npages: pages it covers
 * @window_pages: a window's pages, in the order the peer sees them
 *	(@npages of them); NULL for a plain range of @region
 * @iova: address the peer uses (set by the transport's @export)
 * @rkey: remote key (likewise)
 * @mr: the RDMA memory region, NULL once revoked (the session's exports
 *	lock)
 * @sgt: fast registration: the pages it maps, DMA-mapped while @mr lives
 *	(the session's exports lock)
 *
 * Embedded in its export (struct xferk_export.reg): the transport sees no
 * more of it.
 */
struct xferk_reg {
	struct xferk_region *region;
	u64 addr;
	u64 len;
	u32 access;
	unsigned long npages;
	struct page **window_pages;
	u64 iova;
	u32 rkey;
	struct ib_mr *mr;
	struct sg_table sgt;
};

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
 * @probe_seq: a keepalive probe in flight follows the chunks numbered
 *	below it (path->lock)
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
	u64 probe_seq;
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
 *	order (null peer); without @lock
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
};

/**
 * struct xferk_path - the transport's part of a session (struct
 *	xferk_conn.path): its device and its current path's verbs objects
 * @events: its session's callbacks
 * @lock: the session's posting lock: held around @post, @unpost,
 *	@overtaken, @probe and @send_msg; the transport takes it where it
 *	posts or completes on its own
 * @passive: an end the peer initiated: it counts in the listener's limit
 *	until destroyed (RDMA)
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
	u64 null_delay_ns;
	struct delayed_work null_work;
	bool null_completing;
};

/**
 * struct xferk_transport - what differs between the RDMA and null peers
 * @name: for tables
 * @post: hand @n chunks' work requests (at most XFERK_POST_BATCH) to the
 *	device in one call, in order; called with p->lock held, with a
 *	free send slot for each (the session's credits). Return: how many were
 *	posted, always the first ones of @wrs; when fewer than @n, *@error
 *	(-ENOMEM or -EIO) says why the next one was not, and nothing after
 *	it was posted; or 0: the transport has no room now (its QPs' send
 *	queues are full), the rest waits for a completion
 * @unpost: undo what @post set up (DMA mapping, send slot) once the
 *	work request is terminal; called with p->lock held
 * @overtaken: whether a work request posted before posted @wr on its QP
 *	is still outstanding now that @wr completed successfully:
 *	on an RC send queue completions come in order, so its completion
 *	was lost (p->lock held; NULL: the transport cannot tell)
 * @export: make reg->addr..+len of the calling process remotely
 *	accessible on this connection: set reg->rkey and reg->iova
 * @unexport: revoke what @export made
 * @disconnect: stop every callback of the connection manager and start
 *	flushing everything posted (the path's first teardown step)
 * @quiesce: stop the device: afterwards no posted work request can touch
 *	memory and no completion or QP event callback runs; the path is gone
 * @destroy: free what is left (after exports were revoked)
 * @probe: post a keepalive probe (p->lock held)
 * @send_msg: post a session message of @len <= XFERK_MSG_SIZE bytes
 *	(p->lock held, the connection postable); @seq: a notification's
 *	sequence number, 0 for other messages (its completion hands it to
 *	events->msg_sent); 0, -EAGAIN (no send slot
 *	free) or -EIO (the path dies); NULL: the transport carries none, and
 *	the peer announces no capability
 * @map_region: make @r's DMA map for the connection's device now, from
 *	process context without any connection's lock, so that @post finds
 *	it (NULL: the transport maps nothing ahead; @post maps what it
 *	lacks)
 * @connect: start a path to @peer in @net, its address resolved within
 *	@timeout_ms (its route within XFERK_RESOLVE_MS): an end's first path
 *	(CONNECT), or the next one of a RECONNECTING session of an end this
 *	host initiated; the first lane's cm_ready is completed once it
 *	returns. 0, or why it failed
 *	at once; later its outcome arrives as xferk_conn_lane_up() of each of
 *	the path's QPs (then xferk_conn_set_up()) or xferk_conn_path_down().
 *	NULL: paths are not replaced, their death ends the session (the
 *	null peer)
 */
struct xferk_transport {
	const char *name;
	u32 (*post)(struct xferk_path *p, struct xferk_wr **wrs, u32 n,
		    int *error);
	void (*unpost)(struct xferk_path *p, struct xferk_wr *wr);
	bool (*overtaken)(struct xferk_path *p, struct xferk_wr *wr);
	int (*export)(struct xferk_path *p, struct xferk_reg *reg);
	void (*unexport)(struct xferk_path *p, struct xferk_reg *reg);
	void (*disconnect)(struct xferk_path *p);
	void (*quiesce)(struct xferk_path *p);
	void (*destroy)(struct xferk_path *p);
	int (*probe)(struct xferk_path *p);	/* -EAGAIN: not now */
	int (*send_msg)(struct xferk_path *p, const void *msg, u32 len, u64 seq);
	void (*map_region)(struct xferk_path *p, struct xferk_region *r);
	int (*connect)(struct xferk_path *p, struct net *net,
		       const struct sockaddr_storage *peer,
		       unsigned int timeout_ms);
};

extern const struct xferk_transport xferk_null_transport;
extern const struct xferk_transport xferk_rdma_transport;

/**
 * struct xferk_dev_user - what the sessions layer (conn.c) does with each
 *	RDMA device: registered once at module load, before any device
 * @create_queue: an admission queue for a device that appeared, named
 *	@name: with a reference, or NULL without memory
 * @get_queue: another reference, for a session that attaches to it
 * @put_queue: drops one
 * @gone: the device is going: take down the session attached by @l
 *	(called with rdma_dev.c's lock held; must not wait for it)
 * @shutdown_all: take every session down and wait until each is torn
 *	down (module exit, once the listener is gone, before the devices)
 */
struct xferk_dev_user {
	struct xferk_qdev *(*create_queue)(const char *name);
	void (*get_queue)(struct xferk_qdev *q);
	void (*put_queue)(struct xferk_qdev *q);
	void (*gone)(struct xferk_dev_link *l);
	void (*shutdown_all)(void);
};

/* the RDMA transport: devices, rdma_cm, paths, the listener */
extern unsigned short xferk_listen_port;
extern struct sockaddr_storage xferk_listen_sockaddr;
extern unsigned int xferk_max_passive_conns;
extern unsigned int xferk_max_peer_qps;
extern unsigned int xferk_handshake_timeout_ms;
int xferk_rdma_module_init(void);
void xferk_rdma_module_exit(void);
void xferk_rdma_set_dev_user(const struct xferk_dev_user *user);
int xferk_rdma_path_alloc(struct xferk_path *p, gfp_t gfp, u32 nr_qps);

/* nullpeer.c */
void xferk_null_init_path(struct xferk_path *p, u64 delay_ns);
int xferk_null_module_init(void);
void xferk_null_module_exit(void);

#endif /* XFERK_TRANSPORT_H */
