// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA transport's entry points: connecting to a peer (a session's
 * first path, and the next one of a session we initiated), the listener,
 * module init and exit. kmod/rdma.h lists where the rest of the transport
 * is. Locking: xferk_listen_lock guards the listener.
 */
#include <linux/module.h>
#include <linux/random.h>
#include <net/net_namespace.h>
#include <rdma/rdma_cm.h>
#include "rdma.h"
#include "region.h"
#include "stats.h"
#include "transport.h"
#include "xferk.h"

/*
 * The listener. Bound to the wildcard address (the default) it lives on no
 * device. Bound to one address it lives on that address's device, and
 * when that device goes rdma_cm asks us to let go of it: we do, and listen
 * again whenever a device appears.
 */
static DEFINE_MUTEX(xferk_listen_lock);	/* the two below */
static struct rdma_cm_id *xferk_listener;
/* Set by main.c from its parameters at load, before the listener starts. */
unsigned short xferk_listen_port = 18515;
struct sockaddr_storage xferk_listen_sockaddr;

static bool xferk_listen_stopped;
static void listen_work_fn(struct work_struct *work);
DECLARE_WORK(xferk_listen_work, listen_work_fn);

/* ---- connecting ---- */

/*
 * A path to @peer in @net for @p's session: the first, or the next one of
 * a RECONNECTING session we initiated (the recovery work, after it tore
 * the last one down and reinitialized cm_ready). Its address is resolved
 * within @timeout_ms; rdma_cm's events take it from there.
 */
int conn_rdma_connect(struct xferk_path *p, struct net *net,
		      const struct sockaddr_storage *peer,
		      unsigned int timeout_ms)
{
	struct rdma_cm_id *id;
	int ret;

	id = rdma_create_id(net, xferk_cm_handler, &p->lanes[0],
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		complete_all(&p->lanes[0].cm_ready);
		return -ENOMEM;
	}
	spin_lock_irq(&p->cm_lock);
	p->lanes[0].cm_id = id;
	spin_unlock_irq(&p->cm_lock);
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)peer, timeout_ms);
	/* The handler's alone with @id now; teardown may destroy it. */
	complete_all(&p->lanes[0].cm_ready);
	return ret;
}

/* ---- the listener, the module ---- */

/*
 * The listener's own events: its device going away. Non-zero makes rdma_cm
 * destroy it, which it may only when module exit did not take it first.
 */
int listener_event(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	bool mine = false;

	if (ev->event != RDMA_CM_EVENT_DEVICE_REMOVAL)
		return 0;
	mutex_lock(&xferk_listen_lock);
	if (xferk_listener == id) {
		xferk_listener = NULL;
		mine = true;
	}
	mutex_unlock(&xferk_listen_lock);
	return mine;
}

/* Listens on listen_addr, unless it does or the module is going. */
static int listener_start(void)
{
	struct rdma_cm_id *id;
	int ret = 0;

	mutex_lock(&xferk_listen_lock);
	if (xferk_listener || xferk_listen_stopped)
		goto out;
	id = rdma_create_id(&init_net, xferk_cm_handler, NULL, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto out;
	}
	/*
	 * "::" takes IPv4 peers too, whatever net.ipv6.bindv6only says, where
	 * rdma_cm matches the address families itself (InfiniBand, RoCE; an
	 * iWARP device listens on its IPv6 addresses only); "0.0.0.0" only
	 * IPv4 ones (rdma_cm's rule for AF_INET).
	 */
	if (xferk_listen_sockaddr.ss_family == AF_INET6)
		ret = rdma_set_afonly(id, 0);
	if (!ret)
		ret = rdma_bind_addr(id,
				     (struct sockaddr *)&xferk_listen_sockaddr);
	if (!ret)
		ret = rdma_listen(id, 128);
	if (ret)
		rdma_destroy_id(id);
	else
		xferk_listener = id;
out:
	mutex_unlock(&xferk_listen_lock);
	return ret;
}

static void listen_work_fn(struct work_struct *work)
{
	int ret = listener_start();

	if (ret)
		pr_warn_ratelimited("xferk: cannot listen on %pISpc: %d\n",
				    &xferk_listen_sockaddr, ret);
}

int xferk_rdma_module_init(void)
{
	int ret;

	xferk_region_set_unmap(xferk_region_unmap);
	ret = ib_register_client(&xferk_ib_client);
	if (ret)
		return ret;
	ret = listener_start();
	if (ret) {
		pr_err("xferk: cannot listen on %pISpc: %d\n",
		       &xferk_listen_sockaddr, ret);
		xferk_rdma_module_exit();
	}
	return ret;
}

/*
 * Before the connection workqueue goes: no new passive end, every
 * connection down and torn down, then no device of ours left. A device
 * added meanwhile may queue the listener's work again: it is cancelled
 * once more after the client is gone.
 */
void xferk_rdma_module_exit(void)
{
	struct rdma_cm_id *id;

	mutex_lock(&xferk_listen_lock);
	id = xferk_listener;
	xferk_listener = NULL;
	xferk_listen_stopped = true;
	mutex_unlock(&xferk_listen_lock);
	cancel_work_sync(&xferk_listen_work);
	if (id)
		rdma_destroy_id(id);
	xferk_dev_sessions_shutdown();
	ib_unregister_client(&xferk_ib_client);
	cancel_work_sync(&xferk_listen_work);
}
