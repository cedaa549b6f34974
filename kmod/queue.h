/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sessions layer: the host-wide admission queue of each RDMA device
 * (queue.c) and the account of what each open file has in flight. The
 * scheduler model it drives is sched.h.
 */
#ifndef XFERK_QUEUE_H
#define XFERK_QUEUE_H

#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include "../uapi/xferk.h"
#include "sched.h"

struct xferk_chunk;
struct xferk_remote;

/**
 * struct xferk_qdev - the admission queue of one RDMA device
 * @node: in xferk_qdevs (xferk_queue_lock)
 * @ref: its device (struct xferk_dev), connections on it, ops admitted
 *	to it; outlives the device while ops hold it
 * @name: the device's name, for tables ("null" for the null peers')
 * @sched: the scheduler state (xferk_queue_lock)
 * @kicking: a context is dispatching (xferk_queue_lock)
 * @rekick: it should look again before it stops (xferk_queue_lock)
 * @kick_work: continues a dispatch that ran long (holds a reference)
 */
struct xferk_qdev {
	struct list_head node;
	struct kref ref;
	char name[IB_DEVICE_NAME_MAX];
	struct xferk_sched sched;
	bool kicking;
	bool rekick;
	struct work_struct kick_work;
};

/**
 * struct xferk_qacct - what one open file has in flight, wherever it goes
 * @a: its share of the admission queues (xferk_queue_lock)
 * @ref: the file and each of its ops
 * @chunks: chunks of its ops that are not physically complete, against
 *	max_chunks_per_file
 * @connecting: connections its CONNECTs started that are not yet up or
 *	down, against max_conns_per_file
 * @export_pages: pages its exports cover, against max_export_pages_per_file
 * @last_escalation: when one of its cancels last killed a path (ns), for
 *	escalation_interval_ms
 */
struct xferk_qacct {
	struct xferk_sched_account a;
	struct kref ref;
	atomic_long_t chunks;
	atomic_long_t connecting;
	atomic_long_t export_pages;
	atomic64_t last_escalation;
};

/**
 * struct xferk_qentry - an op's place in its device's admission queue
 * @item: its entry in @qdev's scheduler (xferk_queue_lock)
 * @qdev: the queue it was admitted to (ref), NULL when bypassed
 * @chunks: the op's chunks, dispatched in order; set before the op is
 *	published (a cancel may drop them from then on), NULL once they are
 *	freed
 * @next: index of the next chunk to dispatch (xferk_queue_lock)
 * @id: the op's handle, its name in traces; set before it is published
 *
 * Embedded in the op (requests layer); a chunk finds its op's entry
 * through xferk_chunk_qentry().
 */
struct xferk_qentry {
	struct xferk_sched_item item;
	struct xferk_qdev *qdev;
	struct xferk_chunk *chunks;
	u32 next;
	u64 id;
};

extern spinlock_t xferk_queue_lock;
extern struct list_head xferk_qdevs;
extern struct xferk_sched_limits xferk_queue_limits;
extern bool xferk_queue_bypass;
extern unsigned int xferk_max_chunks_per_file;

struct xferk_qdev *xferk_qdev_create(const char *name);
struct xferk_qdev *xferk_qdev_get_null(void);
void xferk_qdev_get(struct xferk_qdev *q);
void xferk_qdev_put(struct xferk_qdev *q);
struct xferk_qacct *xferk_qacct_create(void);
void xferk_qacct_put(struct xferk_qacct *a);
int xferk_queue_admit(struct xferk_qentry *qe, u64 bytes, u32 nr_chunks,
		      struct xferk_qacct *acct,
		      const struct xferk_ioc_submit *a,
		      struct xferk_remote *const *remotes);
void xferk_queue_unadmit(struct xferk_qentry *qe);
void xferk_queue_start(struct xferk_qentry *qe);
void xferk_queue_drop(struct xferk_qentry *qe);
void xferk_queue_chunk_done(struct xferk_chunk *ch, int error);
void xferk_queue_chunk_park(struct xferk_chunk *ch);
void xferk_queue_chunk_unpark(struct xferk_chunk *ch);
void xferk_queue_chunks_succeeded(struct xferk_chunk **chs, u32 n);
ktime_t xferk_queue_now(void);
int xferk_queue_module_init(void);
void xferk_queue_module_exit(void);

#endif /* XFERK_QUEUE_H */
