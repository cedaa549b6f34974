/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Requests layer, private to the files of ops (op.c, op_submit.c,
 * op_cancel.c): what one of them defines for another. No other file
 * includes it; the ops' API is op.h.
 *
 * Locking: as the files say; nothing here is called with op->lock held.
 */
#ifndef XFERK_OP_INTERNAL_H
#define XFERK_OP_INTERNAL_H

#include <linux/hrtimer.h>
#include <linux/workqueue.h>

struct xferk_op;

/* op.c: runs the ops' drain steps and deadline work (module init/exit) */
extern struct workqueue_struct *xferk_op_wq;

/* op.c: the references of an op's filled chunks dropped */
void op_put_chunks(struct xferk_op *op);

/* op.c: wakes the op's waiters and counts it for its file's poll(2) */
void op_wake(struct xferk_op *op);

/* op_cancel.c: an op's timers and work items, set up by xferk_op_submit() */
void op_drain_work(struct work_struct *work);
enum hrtimer_restart op_drain_timer_fired(struct hrtimer *t);
void op_expire_work(struct work_struct *work);
enum hrtimer_restart op_deadline_fired(struct hrtimer *t);

#endif /* XFERK_OP_INTERNAL_H */
