/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Requests layer: a file's queue of events (evq.c): notifications that
 * arrive for the file's exports wait there for XFERK_IOC_EVENTS. The
 * notifications themselves are in notify.h.
 */
#ifndef XFERK_EVQ_H
#define XFERK_EVQ_H

#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include "../uapi/xferk.h"

/**
 * struct xferk_evq - a file's queue of events
 * @ref: its file, each of its exports
 * @ready: its file's readiness (ref): told of each event that arrives
 * @lock: guards @head, @count, @dropped and @ring (bh-safe)
 * @read_lock: one reader at a time: events are peeked, written out, then
 *	taken
 * @wq: woken when an event arrives
 * @size: entries of @ring
 * @head: index of the oldest event
 * @count: events queued
 * @dropped: events dropped since the last take (the queue was full)
 * @taking: events the reader holding @read_lock wrote out, to take once
 *	its command's output is written too (@read_lock)
 * @taking_dropped: the drops it reported (@read_lock)
 * @ring: the events
 */
struct xferk_evq {
	struct kref ref;
	struct xferk_ready *ready;
	spinlock_t lock;	/* bh-safe */
	struct mutex read_lock;
	wait_queue_head_t wq;
	u32 size;
	u32 head;
	u32 count;
	u64 dropped;
	u32 taking;
	u64 taking_dropped;
	struct xferk_event ring[];
};

extern unsigned int xferk_events_per_file;
struct xferk_ready;

struct xferk_evq *xferk_evq_create(struct xferk_ready *ready);
void xferk_evq_put(struct xferk_evq *q);
void xferk_evq_post(struct xferk_evq *q, const struct xferk_event *ev);
u32 xferk_evq_peek(struct xferk_evq *q, struct xferk_event *out, u32 max);
u64 xferk_evq_dropped(struct xferk_evq *q);
void xferk_evq_take(struct xferk_evq *q, u32 n, u64 dropped);
bool xferk_evq_ready(struct xferk_evq *q);

#endif /* XFERK_EVQ_H */
