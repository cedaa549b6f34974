/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Requests layer: ops (op.c, op_submit.c, op_cancel.c; their commands are
 * the front's op_ioctl.c) and their groups (group.c). An op is one
 * submitted batch of fragments, cut into chunks of one work request each;
 * the lifecycle model is lifecycle.h, the queue's scheduler model
 * sched.h. Also the background drain's steps. An op's chunks are the
 * sessions layer's (chunk.h); what becomes of the op as they end is op.c's
 * (struct xferk_chunk_events).
 */
#ifndef XFERK_OP_H
#define XFERK_OP_H

#include <linux/hrtimer.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include "../uapi/xferk.h"
#include "chunk.h"
#include "export.h"
#include "handle.h"
#include "lifecycle.h"
#include "queue.h"
#include "rail.h"
#include "sched.h"
#include "transport.h"

struct io_uring_cmd;
struct mutex;
struct task_struct;
struct xferk_conn;
struct xferk_file;
struct xferk_handles;
struct xferk_hobj;
struct xferk_notify;
struct xferk_qacct;
struct xferk_qdev;
struct xferk_ready;
struct xferk_region;
struct xferk_send;

#define XFERK_SUBMIT_FLAGS	(XFERK_SUBMIT_CANCEL_ON_DEADLINE | \
				 XFERK_SUBMIT_AUTO_RELEASE | XFERK_SUBMIT_NOTIFY)

/* op.c, op_submit.c, op_cancel.c */

/**
 * struct xferk_op - one submitted batch of fragments
 * @hobj: handle-table entry
 * @ref: handle + one until physically complete (+ one while an io_uring
 *	completion for it is on its way)
 * @node: in xferk_ops (xferk_ops_lock), for debugfs
 * @lock: protects @life and @drain_deadline; taken from the deadline
 *	hrtimer (irq-safe)
 * @life: lifecycle and accounting
 * @wq: waiters for @life changes
 * @deadline: absolute, KTIME_MAX for none
 * @timer: fires at @deadline
 * @owner: tgid of the submitter
 * @user_data: as given at submit
 * @read_bytes: bytes of its READ fragments (the rest are WRITEs)
 * @submit_flags: XFERK_SUBMIT_*
 * @drain_budget_ns: drain budget of the deadline policy
 * @flags: XFERK_OP_* bits
 * @orphaned: its file was closed before it was physically complete
 * @drain_deadline: bound of the background drain (while
 *	XFERK_OP_CANCEL_QUEUED; @lock)
 * @drain_step: its next step, enum xferk_drain_step (its work item only)
 * @drain_timer: when that step is due
 * @cancel_work: the background drain's steps (deadline policy, exit, an
 *	interrupted CANCEL)
 * @settled: the submitter's settle callback (struct xferk_op_settle), or
 *	NULL; set before the op is published, never changed
 * @ucmd: the parked io_uring SUBMIT command, or NULL; set by the front's
 *	park callback before the op is published, completed once
 *	(XFERK_OP_UCMD_CLAIMED) when it settles
 * @ucmd_task: the task that submitted @ucmd (ref until claimed)
 * @parked_node: in xferk_parked (xferk_parked_lock) until claimed
 * @expire_work: at the deadline: takes the op off its queue
 * @q: its place in its device's admission queue (queue.h): the queue
 *	(ref, NULL when bypassed), its scheduler item, its next chunk
 * @qacct: its file's account (ref): queue admission, chunk budget
 * @ready: its file's readiness (ref), told each time the op wakes its
 *	waiters (op_wake())
 * @nr_conns: connections in @conns
 * @conns: the distinct connections its chunks use (one ref each), for
 *	cancel; they outlive @chunks
 * @nr_chunks: chunks the op was cut into
 * @chunks: the op's chunks; freed when the op is physically complete
 *	(NULL afterwards): a finished op keeps only its accounting
 * @id: its handle as SUBMIT returned it, its name in traces
 * @group: the group it joined at submit (ref), or NULL
 * @group_node: in @group->ops until the op is freed (@group->lock)
 * @notify: XFERK_SUBMIT_NOTIFY: its notification (@lock), queued (and
 *	NULL) by the chunk that makes the op physically complete, under its
 *	session's lock (op.c chunk_end_count())
 */
struct xferk_op {
	struct xferk_hobj hobj;
	struct kref ref;
	struct list_head node;
	spinlock_t lock;	/* life; irq-safe */
	struct xferk_life life;
	wait_queue_head_t wq;
	ktime_t deadline;
	struct hrtimer timer;
	pid_t owner;
	u64 user_data;
	u64 read_bytes;
	u32 submit_flags;
	u64 drain_budget_ns;
	unsigned long flags;
	bool orphaned;
	ktime_t drain_deadline;
	u8 drain_step;
	struct hrtimer drain_timer;
	struct work_struct cancel_work;
	void (*settled)(struct xferk_op *op, u32 state);
	struct io_uring_cmd *ucmd;
	struct task_struct *ucmd_task;
	struct list_head parked_node;
	struct work_struct expire_work;
	struct xferk_qentry q;
	struct xferk_qacct *qacct;
	struct xferk_ready *ready;
	u32 nr_conns;
	struct xferk_conn **conns;
	u32 nr_chunks;
	struct xferk_chunk *chunks;
	u64 id;
	struct xferk_group *group;
	struct list_head group_node;
	struct xferk_notify *notify;
};

/* struct xferk_op.flags */
#define XFERK_OP_CANCEL_QUEUED	0	/* a background drain runs; holds a reference */
#define XFERK_OP_UCMD_CLAIMED	1	/* whoever sets it completes ucmd */
#define XFERK_OP_EXIT_CANCEL	2	/* ucmd_task exited: cancelled, -ECANCELED */

/* Steps of the background drain (struct xferk_op.drain_step). */
enum xferk_drain_step {
	XFERK_DRAIN_BEGIN,	/* cancel, drop unposted chunks */
	XFERK_DRAIN_FORCE,	/* halfway: fail the connections still posting */
	XFERK_DRAIN_EXPIRE,	/* the deadline: QUARANTINED if not physical */
};

/**
 * struct xferk_op_settle - a submitter whose command waits for its op
 * @cmd: the command that waits: an io_uring SUBMIT (uring.c)
 * @nowait: the command is issued non-blocking: where the submit would
 *	wait for a dma-buf's exporter (mapping its region for a device), it
 *	fails with -EAGAIN instead, having published nothing, and io_uring
 *	issues it again from a worker
 * @park: records @cmd in the op, with the op's handle
 * @settled: the op's ->settled from then on
 *
 * The front that submits through io_uring hands this to xferk_op_submit()
 * (the ioctl path passes NULL: nothing waits), so that the requests layer
 * completes the command by calling back, never by calling the front. The
 * exactly-once protocol is the front's (uring.c); this is only its wiring.
 *
 * @park is called once, by xferk_op_submit() under the file's lock
 * (xf->lock, a mutex; process context, no spinlock held), after the op
 * holds its handle, its physical reference and its chunks and after
 * ->settled was set, and before the op is published: before it is on
 * xferk_ops, its timer runs or a chunk is queued, so nothing can settle
 * it or see it until @park returned. It cannot fail. It owns what it sets
 * in the op: @ucmd, @ucmd_task and @parked_node of struct xferk_op (the
 * requests layer only reads @ucmd: "a command is parked", which bounds a
 * drain of the op).
 *
 * @settled is called with the op's state when the op settles: by
 * op_apply() once it is physically complete (its chunks and their pages
 * released, waiters woken) with its final state, before the op's physical
 * reference is dropped; and by op_drain_expire() when a drain leaves it
 * QUARANTINED. So up to twice (QUARANTINED, then physically complete),
 * possibly at once from two threads: the callee acts on the first call
 * only (XFERK_OP_UCMD_CLAIMED). Process context, with neither op->lock
 * nor a lock of the op's sessions or of the admission queue held; it must
 * not sleep (op_apply() is on the chunks' completion path).
 * The caller holds a reference to the op for the call, the physical one
 * included when called from op_apply(): an op the callee keeps beyond the
 * call needs a reference of its own (kref_get()).
 */
struct xferk_op_settle {
	struct io_uring_cmd *cmd;
	bool nowait;
	void (*park)(struct xferk_op *op, struct io_uring_cmd *cmd,
		     u64 handle);
	void (*settled)(struct xferk_op *op, u32 state);
};

extern spinlock_t xferk_ops_lock;
extern struct list_head xferk_ops;

/**
 * struct xferk_submitter - the file an op is submitted through, as the
 *	requests layer sees it (the front fills it in: xferk_file_submit())
 * @lock: the file's lock: held from the first fragment's check to the
 *	op's publication
 * @handles: the file's handles, which the fragments name
 * @acct: the file's account: charged the op's chunks and notification
 * @ready: the file's readiness: counts the op's wakeups (poll(2))
 * @max_chunks: the chunks @acct may hold at once (-EBUSY beyond)
 * @publish: gives the op its handle in @handles within the file's limit
 *	(with @lock held): 0, -EMFILE or -ENOMEM
 */
struct xferk_submitter {
	struct mutex *lock;	/* the file's lock */
	struct xferk_handles *handles;
	struct xferk_qacct *acct;
	struct xferk_ready *ready;
	unsigned long max_chunks;
	int (*publish)(const struct xferk_submitter *s, struct xferk_hobj *obj);
};

int xferk_op_submit(const struct xferk_submitter *s,
		    struct xferk_ioc_submit *a,
		    const struct xferk_op_settle *settle);
int xferk_ops_cancel_drain(struct xferk_op **ops, u32 nr,
			   ktime_t drain_deadline);
void xferk_op_snapshot(struct xferk_op *op, struct xferk_op_snapshot *snap);
void xferk_op_orphan(struct xferk_op *op);
bool xferk_op_physical(struct xferk_op *op);
int xferk_op_module_init(void);
void xferk_op_module_exit(void);
extern unsigned int xferk_exit_drain_ms;
extern unsigned int xferk_escalation_interval_ms;
void xferk_op_put(struct xferk_op *op);

/* group.c */

/**
 * struct xferk_group - ops of one request, aborted together
 * @hobj: handle-table entry
 * @ref: handle + one per op that joined
 * @lock: guards @ops, @nr_listed, @nr_physical, @gone, @gone_error and
 *	@aborted_notes; @closed, @nr_ops and @targets change only under it
 *	and the file's lock (joins and aborts run under the latter)
 * @wq: woken when an op of it becomes physically complete
 * @ops: its ops that are not yet freed (struct xferk_op.group_node)
 * @nr_ops: ops that joined
 * @nr_listed: of them, still on @ops
 * @nr_physical: of them, physically complete
 * @closed: aborted: no op joins any more, @targets no longer change
 * @gone: the sum of the snapshots of its ops that were freed
 * @gone_error: the first error among them
 * @aborted_notes: the ABORTED notifications of its targets, made as they
 *	joined, sent once it is closed and every op is physically complete
 *	(struct xferk_notify.node)
 * @nr_targets: entries of @targets
 * @targets: the distinct remote handles its ops used (a reference each)
 * @gen: random non-zero nonce
 * @tag: the tag of its ABORTED notifications
 */
struct xferk_group {
	struct xferk_hobj hobj;
	struct kref ref;
	spinlock_t lock;	/* see above */
	wait_queue_head_t wq;
	struct list_head ops;
	u32 nr_ops;
	u32 nr_listed;
	u32 nr_physical;
	bool closed;
	struct xferk_group_snapshot gone;
	int gone_error;
	struct list_head aborted_notes;
	u32 nr_targets;
	struct xferk_remote *targets[XFERK_GROUP_MAX_TARGETS];
	u64 gen;
	u64 tag;
};

struct xferk_group *xferk_group_create(u64 tag);
void xferk_group_put(struct xferk_group *g);
int xferk_group_join(struct xferk_group *g, struct xferk_op *op,
		     struct xferk_remote *const *remotes, u32 nr,
		     struct xferk_qacct *acct);
void xferk_group_op_physical(struct xferk_group *g);
void xferk_group_op_gone(struct xferk_op *op);
void xferk_group_sum_add(struct xferk_group_snapshot *sum,
			 const struct xferk_op_snapshot *s);
void xferk_group_snapshot(struct xferk_group *g,
			  struct xferk_group_snapshot *snap);
int xferk_group_wait(struct xferk_group *g, bool physical, ktime_t deadline);
bool xferk_group_snapshot_settled(const struct xferk_group_snapshot *snap,
				  bool physical);
int xferk_group_abort(struct xferk_group *g, struct mutex *joins_lock,
		      ktime_t drain_deadline);

#endif /* XFERK_OP_H */
