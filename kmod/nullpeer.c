// SPDX-License-Identifier: GPL-2.0
/*
 * The scripted null peer: a connection whose "device" completes every
 * chunk successfully after a fixed delay, without moving any data. It
 * exists for the control-plane benchmark and for deterministic tests of
 * the op machinery; nothing that claims RDMA behaviour may use it.
 * Creating one needs CAP_SYS_ADMIN.
 */
#include <linux/slab.h>

#include "xferk.h"

static struct workqueue_struct *xferk_null_wq;

/* Completes the chunks that are due, oldest first (they are in due order). */
static void null_complete_due(struct work_struct *work)
{
	struct xferk_conn *c = container_of(to_delayed_work(work),
					    struct xferk_conn, null_work);
	struct xferk_chunk *ch;
	ktime_t now;

	for (;;) {
		mutex_lock(&c->lock);
		ch = list_first_entry_or_null(&c->posted, struct xferk_chunk,
					      node);
		now = ktime_get();
		if (ch && ktime_after(ch->due, now)) {
			queue_delayed_work(xferk_null_wq, &c->null_work,
					   nsecs_to_jiffies(ktime_sub(ch->due, now)) + 1);
			ch = NULL;
		}
		mutex_unlock(&c->lock);
		if (!ch)
			return;
		xferk_conn_chunk_done(c, ch, 0);
	}
}

static int null_post(struct xferk_conn *c, struct xferk_chunk *ch)
{
	ch->due = ktime_add_ns(ktime_get(), c->null_delay_ns);
	if (list_empty(&c->posted))
		mod_delayed_work(xferk_null_wq, &c->null_work,
				 nsecs_to_jiffies(c->null_delay_ns));
	return 0;
}

static void null_unpost(struct xferk_conn *c, struct xferk_chunk *ch)
{
}

static int null_export(struct xferk_conn *c, struct xferk_export *e)
{
	e->iova = e->addr;
	e->rkey = 0;
	return 0;
}

static void null_unexport(struct xferk_conn *c, struct xferk_export *e)
{
}

static void null_disconnect(struct xferk_conn *c)
{
}

static void null_quiesce(struct xferk_conn *c)
{
	cancel_delayed_work_sync(&c->null_work);
}

static void null_destroy(struct xferk_conn *c)
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

/**
 * xferk_conn_null_create() - a new null peer
 * @delay_ns: how long each chunk takes
 *
 * Null peers are never shared: each call makes a new one, which lives
 * until the module unloads or XFERK_IOC_DISCONNECT.
 *
 * Return: the connection, up, with a reference for the caller.
 */
struct xferk_conn *xferk_conn_null_create(u64 delay_ns)
{
	struct xferk_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (!c)
		return ERR_PTR(-ENOMEM);
	c->qdev = xferk_qdev_get(NULL);
	if (!c->qdev) {
		kfree(c);
		return ERR_PTR(-ENOMEM);
	}
	xferk_conn_init(c, &xferk_null_transport);
	INIT_DELAYED_WORK(&c->null_work, null_complete_due);
	c->null_delay_ns = delay_ns;
	c->cookie = get_random_u64();
	c->active = true;
	c->state = XFERK_CONN_UP;
	c->max_chunk_pages = XFERK_MAX_SGE;
	complete_all(&c->established);
	atomic64_inc(&xferk_stats.peers_connected);
	mutex_lock(&xferk_conns_lock);
	list_add_tail(&c->node, &xferk_conns);
	mutex_unlock(&xferk_conns_lock);
	xferk_conn_get(c);
	return c;
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
