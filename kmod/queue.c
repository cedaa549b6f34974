// SPDX-License-Identifier: GPL-2.0
/*
 * The host-wide admission queue: one struct xferk_qdev per RDMA device,
 * and one shared by all null peers, between submit and the connections.
 * The scheduling decisions are the verbs-free model of sched.c; this file
 * connects it to ops, chunks and connections.
 *
 *   submit   xferk_queue_admit()   all or nothing, before the op is
 *                                  published; -EBUSY publishes nothing
 *            xferk_queue_start()   after publishing: on the class list
 *   dispatch queue_kick()          picks chunks under xferk_queue_lock,
 *                                  posts them (xferk_chunks_queue()) after
 *   complete xferk_queue_chunk_done()  frees the windows, kicks; an error
 *                                  drops the op's undispatched chunks;
 *            xferk_queue_chunks_succeeded()  a batch, one kick per queue
 *   cancel   xferk_queue_drop()    cancel, deadline, error: undispatched
 *                                  chunks complete unposted (-ECANCELED)
 *   park     xferk_queue_chunk_park()  a dispatched chunk waits for its
 *                                  session's next path: it leaves the
 *                                  device window until posted
 *
 * Only one context dispatches per device at a time (@kicking): a kick
 * that finds another running asks it to go round once more (@rekick), so
 * completions that run inside a post do not recurse. A context dispatches
 * at most KICK_ROUNDS batches, then hands on to the device's kick_work:
 * a CQ handler or a submitting task never dispatches for others for long.
 *
 * Locking: xferk_queue_lock (a spinlock; never held while calling out)
 * guards every qdev's sched, the qdev list and every account. One lock for
 * all devices keeps per-file accounts, which span devices, exact; hosts
 * have few RDMA devices.
 *
 * Clock: the queue's times (admission, aging, the histograms) come from
 * xferk_queue_now(), not from the clocksource: it is read for every chunk
 * dispatched and completed, where a clocksource read can cost more than
 * the rest (HPET: an emulated device access).
 *
 * Lifetime: a device (rdma.c) and each connection on it hold a reference
 * to its qdev, an op one to the qdev it was admitted to; the qdev outlives
 * its device while ops hold it. Null peers share one qdev.
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "chunk.h"
#include "conn.h"
#include "queue.h"
#include "remote.h"
#include "sched.h"
#include "transport.h"
#include "xferk.h"
#include "trace.h"

DEFINE_SPINLOCK(xferk_queue_lock);
LIST_HEAD(xferk_qdevs);

/* What a file's account may hold in chunks; registered by limits.c. */
unsigned int xferk_max_chunks_per_file = 262144;

bool xferk_queue_bypass;
module_param_named(queue_bypass, xferk_queue_bypass, bool, 0644);
MODULE_PARM_DESC(queue_bypass,
		 "Submit straight to the connections, bypassing the admission queue (default N)");

/* The tunables, under xferk_queue_lock; sysfs.c validates every write. */
struct xferk_sched_limits xferk_queue_limits = {
	.weight = {
		[XFERK_PRIO_NORMAL] = 4,
		[XFERK_PRIO_CRITICAL] = 16,
		[XFERK_PRIO_BULK] = 1,
	},
	.quantum_bytes = 64 << 10,
	.aging_ns = 500 * NSEC_PER_MSEC,
	.max_queued_ops = 65536,
	.max_queued_bytes = 16ULL << 30,
	.file_max_ops = 32768,
	.file_max_bytes = 8ULL << 30,
	.internal_reserved_ops = 256,
	.qp_window = 8,
	.qp_window_bytes_min = 64 << 10,
	.qp_window_bytes_max = 4 << 20,
	.internal_reserved_wrs = 4,
	.dev_window_bytes = 4 << 20,
	.op_window_bytes = 2 << 20,
	.op_window_chunks = 16,
	.lookahead = 32,
};

#define KICK_BATCH	XFERK_POST_BATCH	/* chunks picked per lock hold */
#define KICK_ROUNDS	8	/* batches per call; the rest in kick_work */

static struct workqueue_struct *xferk_queue_wq;
static struct xferk_qdev *xferk_null_qdev;	/* xferk_queue_lock */
static void queue_kick_work(struct work_struct *work);

static void qdev_release(struct kref *ref)
{
	struct xferk_qdev *q = container_of(ref, struct xferk_qdev, ref);

	WARN_ON(!xferk_sched_empty(&q->sched));
	spin_lock(&xferk_queue_lock);
	list_del(&q->node);
	if (xferk_null_qdev == q)
		xferk_null_qdev = NULL;
	spin_unlock(&xferk_queue_lock);
	kfree(q);
}

void xferk_qdev_put(struct xferk_qdev *q)
{
	kref_put(&q->ref, qdev_release);
}

static struct xferk_qdev *qdev_alloc(const char *name)
{
	struct xferk_qdev *q = kzalloc(sizeof(*q), GFP_KERNEL);

	if (!q)
		return NULL;
	kref_init(&q->ref);
	INIT_WORK(&q->kick_work, queue_kick_work);
	strscpy(q->name, name, sizeof(q->name));
	xferk_sched_init(&q->sched, &xferk_queue_limits);
	return q;
}

/**
 * xferk_qdev_create() - a new queue, for a device that appeared
 * @name: the device's name
 *
 * Return: the queue with a reference, or NULL without memory.
 */
struct xferk_qdev *xferk_qdev_create(const char *name)
{
	struct xferk_qdev *q = qdev_alloc(name);

	if (q) {
		spin_lock(&xferk_queue_lock);
		list_add_tail(&q->node, &xferk_qdevs);
		spin_unlock(&xferk_queue_lock);
	}
	return q;
}

/**
 * xferk_qdev_get_null() - the one queue all null peers share
 *
 * Return: the queue with a reference, or NULL without memory.
 */
struct xferk_qdev *xferk_qdev_get_null(void)
{
	struct xferk_qdev *q, *new = qdev_alloc("null");

	spin_lock(&xferk_queue_lock);
	q = xferk_null_qdev;
	if (q && kref_get_unless_zero(&q->ref)) {
		spin_unlock(&xferk_queue_lock);
		kfree(new);
		return q;
	}
	if (new) {
		list_add_tail(&new->node, &xferk_qdevs);
		xferk_null_qdev = new;
	}
	spin_unlock(&xferk_queue_lock);
	return new;
}

void xferk_qdev_get(struct xferk_qdev *q)
{
	kref_get(&q->ref);
}

/* A file's account: the file and each of its ops hold a ref. */
struct xferk_qacct *xferk_qacct_create(void)
{
	struct xferk_qacct *a = kzalloc(sizeof(*a), XFERK_GFP_USER);

	if (a)
		kref_init(&a->ref);
	return a;
}

static void qacct_release(struct kref *ref)
{
	kfree(container_of(ref, struct xferk_qacct, ref));
}

void xferk_qacct_put(struct xferk_qacct *a)
{
	kref_put(&a->ref, qacct_release);
}

/**
 * xferk_queue_now() - the admission queue's clock
 *
 * local_clock(): nanoseconds, cheap everywhere, monotonic on one CPU and
 * within a tick or so across CPUs: ample for aging in hundreds of
 * milliseconds and for statistics. Never compared with ktime_get() times
 * (deadlines).
 */
ktime_t xferk_queue_now(void)
{
	return ns_to_ktime(local_clock());
}

/* Tells the model about the chunk the op dispatches next. */
static void set_next(struct xferk_qentry *qe)
{
	struct xferk_chunk *ch = &qe->chunks[qe->next];

	qe->item.next_len = ch->wr.len;
	qe->item.next_qp = &xferk_chunk_remote(ch)->conn->sqp;
}

/**
 * xferk_queue_admit() - reserve the op's place in its device's queue
 * @qe: the op's entry, zeroed; the op is not yet published and its chunks
 *	need not exist yet
 * @bytes: the op's bytes
 * @nr_chunks: the chunks it is cut into
 * @acct: the submitting file's account (the op holds it)
 * @a: the submit argument: priority and window
 * @remotes: the remote of each fragment
 *
 * Return: 0 (admitted, or the queue is bypassed: @qe->qdev stays NULL),
 * -EXDEV if the fragments use connections on different devices, or
 * -EBUSY if a hard limit would be exceeded.
 */
int xferk_queue_admit(struct xferk_qentry *qe, u64 bytes, u32 nr_chunks,
		      struct xferk_qacct *acct,
		      const struct xferk_ioc_submit *a,
		      struct xferk_remote *const *remotes)
{
	struct xferk_sched_item *it = &qe->item;
	struct xferk_qdev *q = remotes[0]->conn->qdev;
	u32 i;
	int ret;

	for (i = 1; i < a->nr_frags; i++)
		if (remotes[i]->conn->qdev != q)
			return -EXDEV;
	if (READ_ONCE(xferk_queue_bypass) || !q)
		return 0;

	it->prio = a->priority;
	it->bytes = bytes;
	it->undispatched_chunks = nr_chunks;
	spin_lock(&xferk_queue_lock);
	it->window_bytes = a->window_bytes ?: xferk_queue_limits.op_window_bytes;
	it->window_chunks = a->window_chunks ?: xferk_queue_limits.op_window_chunks;
	ret = xferk_sched_admit(&q->sched, it, &acct->a, xferk_queue_now());
	spin_unlock(&xferk_queue_lock);
	if (ret)
		return ret;
	kref_get(&q->ref);
	qe->qdev = q;
	return 0;
}

/* Undoes xferk_queue_admit() of an op that was never published. */
void xferk_queue_unadmit(struct xferk_qentry *qe)
{
	if (!qe->qdev)
		return;
	spin_lock(&xferk_queue_lock);
	xferk_sched_cancel(&qe->qdev->sched, &qe->item);
	spin_unlock(&xferk_queue_lock);
	xferk_qdev_put(qe->qdev);
	qe->qdev = NULL;
}

/*
 * Is @sqp a rail's window? The QP window of a connection that is a rail
 * (rail.c) is shared by the queues of several devices: items of another
 * device's queue may wait for it, on its blocked lists or for its room.
 */
static bool sqp_shared(struct xferk_sched_qp *sqp)
{
	return test_bit(XFERK_CONN_F_RAIL,
			&container_of(sqp, struct xferk_conn, sqp)->flags);
}

/* Runs @q's kick in its kick work; the caller holds a reference to @q. */
static void queue_kick_async(struct xferk_qdev *q)
{
	kref_get(&q->ref);	/* the work's */
	if (!queue_work(xferk_queue_wq, &q->kick_work))
		xferk_qdev_put(q);	/* never the last: the caller's stays */
}

/*
 * Every other device's queue, in its kick work: an item there may wait
 * for a QP window shared with this one (sqp_shared()) that just had room.
 */
static void queue_kick_others(struct xferk_qdev *q)
{
	struct xferk_qdev *o;

	spin_lock(&xferk_queue_lock);
	list_for_each_entry(o, &xferk_qdevs, node) {
		/* One being freed waits for the lock; it has no items. */
		if (o == q || !kref_get_unless_zero(&o->ref))
			continue;
		/* A pending work holds a reference: ours is not the last. */
		if (!queue_work(xferk_queue_wq, &o->kick_work))
			xferk_qdev_put(o);
	}
	spin_unlock(&xferk_queue_lock);
}

/*
 * Posts chunks while the model allows; one dispatcher per device (see the
 * top of this file). Called with xferk_queue_lock, which it releases; the
 * caller holds a reference to @q. @now: the caller's recent reading of
 * xferk_queue_now(), the time of the first batch; each later one reads
 * the clock again (queueing a batch may sleep).
 */
static void queue_kick_locked(struct xferk_qdev *q, ktime_t now)
	__releases(&xferk_queue_lock)
{
	struct xferk_chunk *batch[KICK_BATCH];
	struct xferk_sched_item *it;
	unsigned int n, i, rounds = 0;
	bool handoff = false, others = false;

	lockdep_assert_held(&xferk_queue_lock);
	if (q->kicking) {
		q->rekick = true;
		spin_unlock(&xferk_queue_lock);
		return;
	}
	q->kicking = true;
	for (;;) {
		q->rekick = false;
		for (n = 0; n < KICK_BATCH; n++) {
			struct xferk_qentry *qe;

			it = xferk_sched_next(&q->sched, now);
			if (!it)
				break;
			qe = container_of(it, struct xferk_qentry, item);
			batch[n] = &qe->chunks[qe->next++];
			batch[n]->dispatched = true;
			batch[n]->sqp = it->next_qp;
			if (it->undispatched_chunks)
				set_next(qe);
		}
		if (!n && !q->rekick)
			break;
		spin_unlock(&xferk_queue_lock);
		/* A dispatched chunk keeps its op (and this qdev) alive. */
		for (i = 0; i < n; i++) {
			trace_xferk_chunk_dispatch(xferk_chunk_qentry(batch[i])->id,
						   xferk_chunk_remote(batch[i])->conn->id,
						   batch[i]->wr.len, 0);
			batch[i]->dispatched_at = now;
			others |= sqp_shared(batch[i]->sqp);
		}
		xferk_chunks_queue(batch, n);
		now = xferk_queue_now();
		spin_lock(&xferk_queue_lock);
		if (++rounds == KICK_ROUNDS) {
			handoff = true;
			break;
		}
	}
	q->kicking = false;
	spin_unlock(&xferk_queue_lock);
	if (handoff)
		queue_kick_async(q);
	/* A dispatch on a rail may have let another queue's item go. */
	if (others)
		queue_kick_others(q);
}

static void queue_kick(struct xferk_qdev *q)
{
	ktime_t now = xferk_queue_now();

	spin_lock(&xferk_queue_lock);
	queue_kick_locked(q, now);
}

static void queue_kick_work(struct work_struct *work)
{
	struct xferk_qdev *q = container_of(work, struct xferk_qdev, kick_work);

	queue_kick(q);
	xferk_qdev_put(q);
}

/* The op is published, its chunks filled: they may go. */
void xferk_queue_start(struct xferk_qentry *qe)
{
	struct xferk_sched_item *it = &qe->item;
	ktime_t now = xferk_queue_now();

	spin_lock(&xferk_queue_lock);
	/* A cancel may have dropped every chunk since the op was published. */
	if (it->undispatched_chunks)
		set_next(qe);
	xferk_sched_start(&qe->qdev->sched, it, now);
	queue_kick_locked(qe->qdev, now);
}

/*
 * Takes the op's item off the queue. Its undispatched chunks, from @from
 * on, are now the caller's to complete (complete_dropped()).
 */
static u32 queue_cancel_locked(struct xferk_qentry *qe, u32 *from)
{
	u32 dropped;

	lockdep_assert_held(&xferk_queue_lock);
	dropped = xferk_sched_cancel(&qe->qdev->sched, &qe->item);
	*from = qe->next;
	qe->next += dropped;
	return dropped;
}

/* Completes dropped chunks unposted; without the queue lock. */
static void complete_dropped(struct xferk_qentry *qe, u32 from, u32 dropped)
{
	u32 i;

	for (i = from; i < from + dropped; i++)
		xferk_chunk_complete(&qe->chunks[i], -ECANCELED);
}

/**
 * xferk_queue_drop() - take an op off its queue
 * @qe: the op's entry (the caller holds a reference to the op)
 *
 * The op's chunks that were not dispatched yet are completed unposted
 * with -ECANCELED; the device never sees them. Safe to call repeatedly.
 */
void xferk_queue_drop(struct xferk_qentry *qe)
{
	u32 from, dropped;
	bool shared;

	if (!qe->qdev)
		return;
	spin_lock(&xferk_queue_lock);
	dropped = queue_cancel_locked(qe, &from);
	shared = dropped && qe->item.next_qp && sqp_shared(qe->item.next_qp);
	spin_unlock(&xferk_queue_lock);
	/*
	 * An item that leaves lets the first one blocked on its QP come back
	 * (sched.c): that queue may dispatch now.
	 */
	if (dropped)
		queue_kick_async(qe->qdev);
	if (shared)
		queue_kick_others(qe->qdev);
	complete_dropped(qe, from, dropped);
}

/*
 * Frees the windows a dispatched chunk held; with xferk_queue_lock.
 * Return: whether other devices' queues must be kicked (sqp_shared()).
 */
static bool queue_chunk_done_locked(struct xferk_chunk *ch, ktime_t now)
{
	struct xferk_qentry *qe = xferk_chunk_qentry(ch);

	lockdep_assert_held(&xferk_queue_lock);
	if (ch->parked) {
		ch->parked = false;
		xferk_sched_unpark(&qe->qdev->sched, ch->wr.len);
	}
	xferk_sched_complete(&qe->qdev->sched, &qe->item, ch->wr.len,
			     ch->sqp, ktime_sub(now, ch->dispatched_at));
	return sqp_shared(ch->sqp);
}

/**
 * xferk_queue_chunk_park() - a chunk waits for its session's next path
 * @ch: the chunk, held by the caller (on no list, or on its connection's
 *	pending list under that connection's lock)
 *
 * A dispatched chunk gives its bytes in the device window back, so that
 * the device's other sessions do not wait for this one's reconnect, and
 * the device's queue is kicked in its kick work (the caller may hold a
 * connection's lock). Its op's and its QP's windows stay charged. Once
 * only; undone by xferk_queue_chunk_unpark() or its completion.
 */
void xferk_queue_chunk_park(struct xferk_chunk *ch)
{
	struct xferk_qdev *q = xferk_chunk_qentry(ch)->qdev;

	if (!ch->dispatched || ch->parked)
		return;
	spin_lock(&xferk_queue_lock);
	ch->parked = true;
	xferk_sched_park(&q->sched, ch->wr.len);
	queue_kick_async(q);	/* the chunk's op holds @q */
	spin_unlock(&xferk_queue_lock);
}

/**
 * xferk_queue_chunk_unpark() - a parked chunk is posted again
 * @ch: the chunk, held by the caller
 *
 * It counts in the device window again (see xferk_sched_unpark()).
 */
void xferk_queue_chunk_unpark(struct xferk_chunk *ch)
{
	if (!ch->parked)
		return;
	spin_lock(&xferk_queue_lock);
	ch->parked = false;
	xferk_sched_unpark(&xferk_chunk_qentry(ch)->qdev->sched, ch->wr.len);
	spin_unlock(&xferk_queue_lock);
}

/**
 * xferk_queue_chunk_done() - a dispatched chunk became terminal
 * @ch: the chunk; it is not yet counted terminal in its op
 * @error: its result
 *
 * Frees the windows it held and lets the next chunks go, in one hold of
 * the queue lock. After an error the op's remaining chunks are dropped
 * first: it cannot succeed any more. Other devices' queues are kicked in
 * their kick work where the window was a rail's.
 */
void xferk_queue_chunk_done(struct xferk_chunk *ch, int error)
{
	struct xferk_qentry *qe = xferk_chunk_qentry(ch);
	struct xferk_qdev *q = qe->qdev;
	ktime_t now = xferk_queue_now();
	u32 from = 0, dropped = 0;
	bool others;

	spin_lock(&xferk_queue_lock);
	others = queue_chunk_done_locked(ch, now);
	if (error)
		dropped = queue_cancel_locked(qe, &from);
	queue_kick_locked(q, now);
	if (others)
		queue_kick_others(q);
	complete_dropped(qe, from, dropped);
}

/**
 * xferk_queue_chunks_succeeded() - chunks completed without error
 * @chs: the chunks, none yet counted terminal in its op; those not
 *	dispatched (queue bypass) are skipped
 * @n: how many
 *
 * As xferk_queue_chunk_done(ch, 0) for each, with one hold of the queue
 * lock and one kick for each run of chunks admitted to the same device's
 * queue: the kick dispatches what the windows freed by all of them let go,
 * as chains.
 */
void xferk_queue_chunks_succeeded(struct xferk_chunk **chs, u32 n)
{
	struct xferk_qdev *q;
	bool others;
	ktime_t now;
	u32 i = 0;

	while (i < n) {
		if (!chs[i]->dispatched) {
			i++;
			continue;
		}
		q = xferk_chunk_qentry(chs[i])->qdev;
		now = xferk_queue_now();
		others = false;
		spin_lock(&xferk_queue_lock);
		for (; i < n && (!chs[i]->dispatched ||
				 xferk_chunk_qentry(chs[i])->qdev == q); i++)
			if (chs[i]->dispatched)
				others |= queue_chunk_done_locked(chs[i], now);
		queue_kick_locked(q, now);
		if (others)
			queue_kick_others(q);
	}
}

int xferk_queue_module_init(void)
{
	xferk_queue_wq = alloc_workqueue("xferk_queue", WQ_UNBOUND, 0);
	return xferk_queue_wq ? 0 : -ENOMEM;
}

/* After the connections are gone: no kick can be queued any more. */
void xferk_queue_module_exit(void)
{
	destroy_workqueue(xferk_queue_wq);
}
