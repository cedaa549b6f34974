/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Requests layer: a file's readiness (ready.c), what poll(2) and read(2)
 * of /dev/xferk report: how many times, since the last read, an op of the
 * file woke its waiters or an event was queued for the file.
 */
#ifndef XFERK_READY_H
#define XFERK_READY_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/types.h>
#include <linux/wait.h>

/**
 * struct xferk_ready - a file's count of wakeups, for poll(2) and read(2)
 * @ref: its file, each of the file's ops, the file's event queue
 * @count: wakeups since the last xferk_ready_take()
 * @wq: poll(2)'s waiters
 */
struct xferk_ready {
	struct kref ref;
	atomic64_t count;
	wait_queue_head_t wq;
};

struct xferk_ready *xferk_ready_create(void);
void xferk_ready_get(struct xferk_ready *r);
void xferk_ready_put(struct xferk_ready *r);
void xferk_ready_bump(struct xferk_ready *r);
u64 xferk_ready_take(struct xferk_ready *r);
void xferk_ready_untake(struct xferk_ready *r, u64 n);

#endif /* XFERK_READY_H */
