/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to the RDMA transport: included only by kmod/rdma*.c. The rest
 * of the module reaches the transport through transport.h alone
 * (xferk_rdma_transport, xferk_rdma_path_alloc(), xferk_cm_req_*(), its
 * module init and exit); regions reach it through the function it gives them at init
 * (xferk_region_set_unmap()).
 *
 * The RDMA transport: per-device state, in-kernel rdma_cm (active and
 * passive ends, the listener), QPs and their send slots, exports.
 *
 *   rdma_dev.c   the ib_client, per-device objects, connections attaching
 *                to their device, the DMA maps of regions, destroying a
 *                QP or MR the device refuses to let go
 *   rdma_post.c  a path's PD, pooled CQ and QPs, send slots, posting
 *                chunks, disconnect, quiesce and destroy, the keepalive
 *                probe, the transport's ops table
 *   rdma_msg.c   session messages: the receive ring, sending
 *   rdma_mr.c    exports: fast registration, user memory, unexport
 *   rdma_cm.c    the rdma_cm handshake: every cm_id's events, and the
 *                requests the listener receives, which the sessions
 *                layer answers (its private data is theirs)
 *   rdma.c       starting a path to a peer (a session's first and its
 *                next: its cm_id, address resolution), the listener,
 *                module init and exit
 */
#ifndef XFERK_RDMA_H
#define XFERK_RDMA_H

#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/cache.h>
#include <linux/dma-direction.h>
#include <linux/list.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include "wire.h"

struct net;
struct rdma_cm_event;
struct rdma_cm_id;
struct xferk_conn;
struct xferk_dev;
struct xferk_dev_link;
struct xferk_cm_req;
struct xferk_lane;
struct xferk_path;
struct sockaddr_storage;
struct xferk_qdev;
struct xferk_reg;
struct xferk_region;

#define XFERK_MAX_RD_ATOMIC	16
#define XFERK_ACK_TIMEOUT	17	/* 4.096 us * 2^17 = 0.54 s per try */
#define XFERK_RETRY_COUNT	6
#define XFERK_RNR_RETRY		6	/* 7 would mean forever */

/**
 * struct xferk_dma_map - a region's pages DMA-mapped for one device
 * @next: the region's next map (region->maps)
 * @dev: the device; NULL once the device's removal unmapped the pages
 *	(written under xferk_dma_lock, read without it by posters)
 * @dev_node: in @dev's maps while mapped (xferk_dma_lock)
 * @npages: pages mapped (the region's), 0 in @per_post mode
 * @dir: DMA_BIDIRECTIONAL, or DMA_TO_DEVICE for a region the device
 *	never writes (only a source of WRITEs)
 * @per_post: the pages could not stay mapped (the device needs its DMA
 *	synced, e.g. bounce buffers, or mapping them all failed): each post
 *	maps its chunk's pages and its completion unmaps them; never for a
 *	dma-buf region
 * @moved: the exporter announced a move of @attach's buffer
 *	(move_notify, under its reservation lock; set once, read without a
 *	lock): nothing more is posted or exported from this map (-ESTALE),
 *	what is in flight ends by the usual rules, exports made before stay
 *	until closed
 * @attach: a dma-buf region on a device with real DMA: the dma-buf
 *	attached to the device and pinned (NULL otherwise)
 * @sgt: @attach's mapping, which @dma was taken from
 * @dma: each page's DMA address, whole pages
 *
 * Made when a connection on the device first posts a chunk of the region,
 * as ib_umem maps at registration: posting then builds SGEs from @dma and
 * maps nothing. Lives until the region goes or the device does, whichever
 * is first; either waits until nothing posted can use it (a chunk holds
 * its region; a device goes only once its connections are gone). Its
 * array is charged to the region owner's memory cgroup.
 */
struct xferk_dma_map {
	struct xferk_dma_map *next;
	struct xferk_dev *dev;
	struct list_head dev_node;
	unsigned long npages;
	enum dma_data_direction dir;
	bool per_post;
	bool moved;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	u64 dma[];
};

/**
 * struct xferk_msgs - a connection's session message buffers
 * @buf: XFERK_MSG_RECVS receive buffers, then XFERK_MSG_SENDS send buffers;
 *	DMA-mapped as one while the connection has its PD (@dma)
 * @recv_cqe: the completion of each receive buffer's work request
 * @send_cqe: of each send buffer's
 * @send_busy: send buffers posted and not yet completed (path->lock);
 *	cleared for each new path
 * @send_seq: the notification sequence number each send buffer carries,
 *	0 for other messages (path->lock)
 * @dma: the mapping of @buf, while @mapped
 * @mapped: @buf is DMA-mapped on the connection's device
 *
 * @buf has cache lines of its own: the device writes it while the CPU
 * writes the rest.
 */
struct xferk_msgs {
	u8 buf[XFERK_MSG_RECVS + XFERK_MSG_SENDS][XFERK_MSG_SIZE];
	struct ib_cqe recv_cqe[XFERK_MSG_RECVS] ____cacheline_aligned;
	struct ib_cqe send_cqe[XFERK_MSG_SENDS];
	DECLARE_BITMAP(send_busy, XFERK_MSG_SENDS);
	u64 send_seq[XFERK_MSG_SENDS];
	u64 dma;
	bool mapped;
};

/* rdma_dev.c: devices, DMA maps of regions, QP and MR destruction */
extern struct ib_client xferk_ib_client;
struct xferk_dma_map *region_dma_map_find(struct xferk_region *r,
					  struct xferk_dev *d);
struct xferk_dma_map *region_dma_map(struct xferk_region *r,
				     struct xferk_dev *d);
int xferk_dev_map_region(struct xferk_dev_link *l, struct xferk_region *r,
			 bool nowait);
void xferk_region_unmap(struct xferk_region *r);
int xferk_dev_attach(struct xferk_dev_link *l, struct ib_device *ibdev,
		     struct xferk_qdev **qdev);
void xferk_dev_detach(struct xferk_dev_link *l);
void xferk_destroy_qp(struct ib_qp *qp);
void xferk_dev_sessions_shutdown(void);
int xferk_dev_request(struct xferk_cm_req *r, const void *priv, u8 len);
void xferk_dereg_mr(struct ib_mr *mr);

/* rdma_post.c: the path's CQ and QPs, send slots, posting, teardown */
int xferk_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int lane_create_qp(struct xferk_path *p, struct xferk_lane *l,
		   struct rdma_cm_id *id);
int conn_rdma_setup(struct xferk_path *p, struct rdma_cm_id *id);
struct xferk_path *wc_path(const struct ib_wc *wc);

/* rdma_msg.c: session messages */
int msg_path_init(struct xferk_path *p);
int conn_rdma_send_msg(struct xferk_path *p, const void *msg, u32 len,
		       u64 seq);

/* rdma_mr.c: exports */
int conn_rdma_export(struct xferk_path *p, struct xferk_reg *reg);
void conn_rdma_unexport(struct xferk_path *p, struct xferk_reg *reg);

/* rdma_cm.c: the handshake */
int xferk_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);

/* rdma.c: starting a path, the listener */
extern struct work_struct xferk_listen_work;
int listener_event(struct rdma_cm_id *id, struct rdma_cm_event *ev);
int conn_rdma_connect(struct xferk_path *p, struct net *net,
		      const struct sockaddr_storage *peer,
		      unsigned int timeout_ms);

#endif /* XFERK_RDMA_H */
