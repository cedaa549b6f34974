// SPDX-License-Identifier: GPL-2.0
/*
 * The scripted null peer: a connection whose "device" completes every
 * chunk successfully after a fixed delay, without moving any data. It
 * exists for the control-plane benchmark and for deterministic tests of
 * the op machinery; nothing that claims RDMA behaviour may use it.
 * Creating one needs CAP_SYS_ADMIN.
 */
#include <linux/workqueue.h>
#include "transport.h"
#include "xferk.h"

static struct workqueue_struct *xferk_null_wq;

/*
 * Completes the chunks that are due, oldest first (they are in due order),
 * up to XFERK_POST_BATCH at a time, as a device's completion queue poll
 * hands them over. The clock is read again only when a chunk seems not
 * due yet. Only this work completes the null peer's chunks; they stay
 * posted (events->next_posted) until events->chunks_succeeded takes them
 * off. While it loops (p->null_completing) it finds what is posted
 * meanwhile itself; it leaves only with nothing due, queued again for the
 * first chunk still posted if there is one.
 */
static void null_complete_due(struct work_struct *work)
{
	struct xferk_path *p = container_of(to_delayed_work(work),
					    struct xferk_path, null_work);
	struct xferk_wr *due[XFERK_POST_BATCH], *wr;
	ktime_t now = ktime_get(), wait;
	u32 n;

	do {
		n = 0;
		wr = NULL;
		mutex_lock(p->lock);
		p->null_completing = true;
		while ((wr = p->events->next_posted(p, wr))) {
			if (n == ARRAY_SIZE(due))
				break;
			if (ktime_after(wr->due, now))
				now = ktime_get();
			if (ktime_after(wr->due, now)) {
				wait = ktime_sub(wr->due, now);
				if (!n)
					queue_delayed_work(xferk_null_wq,
							   &p->null_work,
							   nsecs_to_jiffies(wait) + 1);
				break;
			}
			due[n++] = wr;
		}
		if (!n)
			p->null_completing = false;
		mutex_unlock(p->lock);
		if (n)
			p->events->chunks_succeeded(p, due, n);
	} while (n);
}

/*
 * One batch is due at one time: the clock is read once per call, and not
 * at all without a delay (due at 0: at once).
 */
static u32 null_post(struct xferk_path *p, struct xferk_wr **wrs, u32 n,
		     int *error)
{
	ktime_t due = p->null_delay_ns ?
		      ktime_add_ns(ktime_get(), p->null_delay_ns) : 0;
	u32 i;

	for (i = 0; i < n; i++)
		wrs[i]->due = due;
	if (!p->events->next_posted(p, NULL) && !p->null_completing)
		mod_delayed_work(xferk_null_wq, &p->null_work,
				 nsecs_to_jiffies(p->null_delay_ns));
	return n;
}

static void null_unpost(struct xferk_path *p, struct xferk_wr *wr)
{
}

static int null_export(struct xferk_path *p, struct xferk_reg *reg)
{
	reg->iova = reg->addr;
	reg->rkey = 0;
	return 0;
}

static void null_unexport(struct xferk_path *p, struct xferk_reg *reg)
{
}

static void null_disconnect(struct xferk_path *p)
{
}

static void null_quiesce(struct xferk_path *p)
{
	cancel_delayed_work_sync(&p->null_work);
}

static void null_destroy(struct xferk_path *p)
{
}

const struct xferk_transport xferk_null_transport = {
	.name = "null",
	.post = null_post,
	.unpost = null_unpost,
	.export = null_export,
	.unexport = null_unexport,
	.disconnect = null_disconnect,
	.quiesce = null_quiesce,
	.destroy = null_destroy,
};

/* Makes @p a null peer's path: each chunk completes @delay_ns later. */
void xferk_null_init_path(struct xferk_path *p, u64 delay_ns)
{
	INIT_DELAYED_WORK(&p->null_work, null_complete_due);
	p->null_delay_ns = delay_ns;
}

int xferk_null_module_init(void)
{
	xferk_null_wq = alloc_workqueue("xferk_null", WQ_UNBOUND, 0);
	return xferk_null_wq ? 0 : -ENOMEM;
}

void xferk_null_module_exit(void)
{
	destroy_workqueue(xferk_null_wq);
}
