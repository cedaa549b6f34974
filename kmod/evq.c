// SPDX-License-Identifier: GPL-2.0
/*
 * A file's queue of events: the notifications that arrive for the file's
 * exports (notify.c hands them over) wait there for XFERK_IOC_EVENTS
 * (notify_ioctl.c). Bounded (events_per_file): an event that does not fit
 * is dropped and counted, and the next take reports how many were.
 *
 * Locking: q->lock (bh-safe) guards the ring; one reader at a time holds
 * q->read_lock from its peek to its take.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "evq.h"
#include "ready.h"
#include "stats.h"
#include "xferk.h"

#define XFERK_EVQ_MIN	16
#define XFERK_EVQ_MAX	65536

unsigned int xferk_events_per_file = 4096;

static int events_per_file_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, XFERK_EVQ_MIN, XFERK_EVQ_MAX);
}

static const struct kernel_param_ops events_per_file_ops = {
	.set = events_per_file_set,
	.get = param_get_uint,
};

module_param_cb(events_per_file, &events_per_file_ops, &xferk_events_per_file,
		0644);
MODULE_PARM_DESC(events_per_file,
		 "Events a file's queue holds before it drops them (default 4096; read when the queue is made; 16..65536)");
EXPORT_SYMBOL_IF_KUNIT(xferk_events_per_file);

/**
 * xferk_evq_create() - an empty event queue of events_per_file entries
 * @ready: its file's readiness, told of each event that arrives
 *
 * Return: the queue (one reference) or NULL.
 */
struct xferk_evq *xferk_evq_create(struct xferk_ready *ready)
{
	/* In range: events_per_file_set() checks every write. */
	u32 size = READ_ONCE(xferk_events_per_file);
	struct xferk_evq *q;

	q = kvzalloc(struct_size(q, ring, size), XFERK_GFP_USER);
	if (!q)
		return NULL;
	kref_init(&q->ref);
	xferk_ready_get(ready);
	q->ready = ready;
	spin_lock_init(&q->lock);
	mutex_init(&q->read_lock);
	init_waitqueue_head(&q->wq);
	q->size = size;
	return q;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_create);

static void evq_release(struct kref *ref)
{
	struct xferk_evq *q = container_of(ref, struct xferk_evq, ref);

	xferk_ready_put(q->ready);
	kvfree(q);
}

void xferk_evq_put(struct xferk_evq *q)
{
	kref_put(&q->ref, evq_release);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_put);

/**
 * xferk_evq_post() - add an event, or count it dropped if the queue is full
 * @q: the queue
 * @ev: the event
 *
 * Any context but hardirq.
 */
void xferk_evq_post(struct xferk_evq *q, const struct xferk_event *ev)
{
	bool posted = false;

	spin_lock_bh(&q->lock);
	if (q->count < q->size) {
		q->ring[(q->head + q->count) % q->size] = *ev;
		q->count++;
		posted = true;
	} else {
		q->dropped++;
	}
	spin_unlock_bh(&q->lock);
	/* A drop is news too: the next take reports it. Counted first. */
	xferk_ready_bump(q->ready);
	if (posted)
		wake_up_all(&q->wq);
	else
		atomic64_inc(&xferk_stats.events_dropped);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_post);

/**
 * xferk_evq_peek() - copy the oldest events without taking them
 * @q: the queue (with q->read_lock: nobody else takes events meanwhile)
 * @out: room for @max
 * @max: at most this many
 *
 * Return: how many were copied.
 */
u32 xferk_evq_peek(struct xferk_evq *q, struct xferk_event *out, u32 max)
{
	u32 i, n;

	spin_lock_bh(&q->lock);
	n = min(max, q->count);
	for (i = 0; i < n; i++)
		out[i] = q->ring[(q->head + i) % q->size];
	spin_unlock_bh(&q->lock);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_peek);

/* Events dropped since the last take. */
u64 xferk_evq_dropped(struct xferk_evq *q)
{
	u64 dropped;

	spin_lock_bh(&q->lock);
	dropped = q->dropped;
	spin_unlock_bh(&q->lock);
	return dropped;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_dropped);

/**
 * xferk_evq_take() - take the @n oldest events (peeked before)
 * @q: the queue (with q->read_lock)
 * @n: how many
 * @dropped: the drops reported with them (xferk_evq_dropped() before):
 *	later ones stay counted for the next take
 */
void xferk_evq_take(struct xferk_evq *q, u32 n, u64 dropped)
{
	spin_lock_bh(&q->lock);
	q->head = (q->head + n) % q->size;
	q->count -= n;
	q->dropped -= dropped;
	spin_unlock_bh(&q->lock);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_evq_take);

/* Are events queued? */
bool xferk_evq_ready(struct xferk_evq *q)
{
	bool ready;

	spin_lock_bh(&q->lock);
	ready = q->count;
	spin_unlock_bh(&q->lock);
	return ready;
}
