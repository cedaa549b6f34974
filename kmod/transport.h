/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Transport layer: what the sessions layer asks of a transport (struct
 * xferk_transport, the ops table conn.c, conn_post.c and conn_timer.c
 * call through, on a session's struct xferk_path: path.h), the bounds of
 * posting, what it posts of a chunk and registers of an export, and the
 * entry points of the two transports: RDMA (rdma*.c; rdma.h is its
 * private header) and the null peer (nullpeer.c).
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
#include "path.h"
#include "wire.h"

struct net;
struct rdma_cm_id;
struct page;
struct xferk_cm_req;
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
 * @window_index: a window's pages as indices into @region's pages, in
 *	the order the peer sees them (@npages of them); NULL for a plain
 *	range of @region
 * @iova: address the peer uses (set by the transport's @export)
 * @rkey: remote key (likewise)
 * @mr: the RDMA memory region, NULL once revoked (the session's exports
 *	lock)
 * @sgt: fast registration: the pages it maps, DMA-mapped while @mr lives
 *	(the session's exports lock); of a dma-buf region, only their DMA
 *	addresses, which are @region's map's for the device
 * @sgt_mapped: @sgt was DMA-mapped for @mr (not a dma-buf region's)
 * @lent_pages: registration as user memory: the pages of @region's
 *	RLIMIT_MEMLOCK charge lent to @mr, which pins and charges the same
 *	pages itself; returned when @mr goes
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
	unsigned long *window_index;
	u64 iova;
	u32 rkey;
	struct ib_mr *mr;
	struct sg_table sgt;
	bool sgt_mapped;
	unsigned long lent_pages;
};

/**
 * struct xferk_transport - what differs between the RDMA and null peers
 * @name: for tables
 * @post: hand @n chunks' work requests (at most XFERK_POST_BATCH) to the
 *	device in one call, in order; called with p->lock held, with a
 *	free send slot for each (the session's credits). Return: how many were
 *	posted, always the first ones of @wrs; when fewer than @n, *@error
 *	(-ENOMEM, -EIO, -EOPNOTSUPP: a dma-buf region not mapped for the
 *	device, -ESTALE: its exporter moved it) says why the next one was
 *	not, and nothing after it was posted; or 0: the transport has no
 *	room now (its QPs' send queues are full), the rest waits for a
 *	completion
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
 *	lacks). @nowait: do not wait for a dma-buf's exporter. Return: 0 (a
 *	map of user memory it could not make is @post's to try); for a
 *	dma-buf region, whose map only this makes: -EAGAIN (@nowait and
 *	not mapped yet), -EOPNOTSUPP (the device cannot reach it), -ENOMEM,
 *	-EINTR, -ETIMEDOUT (its exporter's fences), -ESTALE (its exporter
 *	moved it)
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
	int (*map_region)(struct xferk_path *p, struct xferk_region *r,
			  bool nowait);
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
 * @request: the listener received a connect request with @priv of @len
 *	bytes: answer it through xferk_cm_req_*(), within the call. Return:
 *	0, or why it was refused (then rdma_cm destroys its cm_id)
 */
struct xferk_dev_user {
	struct xferk_qdev *(*create_queue)(const char *name);
	void (*get_queue)(struct xferk_qdev *q);
	void (*put_queue)(struct xferk_qdev *q);
	void (*gone)(struct xferk_dev_link *l);
	void (*shutdown_all)(void);
	int (*request)(struct xferk_cm_req *r, const void *priv, u8 len);
};

/* the RDMA transport: devices, rdma_cm, paths, the listener */
extern unsigned short xferk_listen_port;
extern struct sockaddr_storage xferk_listen_sockaddr;
int xferk_rdma_module_init(void);
void xferk_rdma_module_exit(void);
void xferk_rdma_set_dev_user(const struct xferk_dev_user *user);
int xferk_rdma_path_alloc(struct xferk_path *p, gfp_t gfp, u32 nr_qps);

/* rdma_cm.c: answering a connect request (struct xferk_dev_user.request) */
const struct sockaddr_storage *xferk_cm_req_peer(const struct xferk_cm_req *r);
void xferk_cm_req_reject(struct xferk_cm_req *r, enum xferk_rej_reason why);
void xferk_cm_req_take(struct xferk_cm_req *r, struct xferk_path *p,
		       struct xferk_lane *l);
int xferk_cm_req_path(struct xferk_cm_req *r, struct xferk_path *p);
int xferk_cm_req_lane(struct xferk_cm_req *r, struct xferk_path *p,
		      struct xferk_lane *l);
int xferk_cm_req_accept(struct xferk_cm_req *r, const struct xferk_cm_msg *rep);

/* nullpeer.c */
void xferk_null_init_path(struct xferk_path *p, u64 delay_ns);
int xferk_null_module_init(void);
void xferk_null_module_exit(void);

#endif /* XFERK_TRANSPORT_H */
