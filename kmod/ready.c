// SPDX-License-Identifier: GPL-2.0
/*
 * A file's readiness: every wakeup of one of the file's ops (op.c,
 * op_cancel.c) and every event queued for it (evq.c) counts once; poll(2)
 * reports EPOLLIN while the count is not zero and read(2) takes it
 * (main.c). The caller then queries its ops and takes its events: the
 * count says that something happened, not what.
 */
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "ready.h"
#include "xferk.h"

/* Zero wakeups, one reference. NULL when out of memory. */
struct xferk_ready *xferk_ready_create(void)
{
	struct xferk_ready *r = kzalloc(sizeof(*r), XFERK_GFP_USER);

	if (!r)
		return NULL;
	kref_init(&r->ref);
	init_waitqueue_head(&r->wq);
	return r;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_ready_create);

void xferk_ready_get(struct xferk_ready *r)
{
	kref_get(&r->ref);
}

static void ready_release(struct kref *ref)
{
	kfree(container_of(ref, struct xferk_ready, ref));
}

void xferk_ready_put(struct xferk_ready *r)
{
	kref_put(&r->ref, ready_release);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_ready_put);

/*
 * Adds @n wakeups and wakes the pollers. Any context, hardirq included (an
 * op's deadline timer). wq_has_sleeper()'s barrier orders the count before
 * the check for pollers; xferk_poll()'s orders its poll_wait() before its
 * read of the count: one of the two sees the other.
 */
static void ready_add(struct xferk_ready *r, u64 n)
{
	atomic64_add(n, &r->count);
	if (wq_has_sleeper(&r->wq))
		wake_up_poll(&r->wq, EPOLLIN | EPOLLRDNORM);
}

/* One wakeup: an op woke its waiters, or an event was queued. */
void xferk_ready_bump(struct xferk_ready *r)
{
	ready_add(r, 1);
}

/* Takes the wakeups counted since the last take. */
u64 xferk_ready_take(struct xferk_ready *r)
{
	return atomic64_xchg(&r->count, 0);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_ready_take);

/* Gives back @n taken wakeups that could not be reported. */
void xferk_ready_untake(struct xferk_ready *r, u64 n)
{
	if (n)
		ready_add(r, n);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_ready_untake);
