// SPDX-License-Identifier: GPL-2.0
/*
 * A minimal reproduction of a soft-RoCE (rdma_rxe) use-after-free in the
 * 6.1 kernels Debian ships: ib_destroy_cq() frees a CQ whose completion
 * tasklet is still scheduled. rxe_cq_post() schedules the CQ's tasklet
 * (rxe_send_complete()) when a completion arrives on an armed CQ, and
 * rxe_destroy_cq() neither kills nor waits for it; when it runs, it takes
 * the freed CQ's lock. Upstream later stopped using the tasklet
 * (78b26a335310, "RDMA/rxe: Remove tasklet call from rxe_cq.c").
 *
 * No verbs contract is broken here: both QPs are destroyed before their
 * CQs, nothing is polled or posted after. Only the timing is arranged,
 * with a second CQ whose handler is slow (as any handler can be when the
 * CPU is busy): on CPU 1, the flush completions of two QPs in the error
 * state schedule CQ A's tasklet, then CQ B's; while A's handler runs, CQ
 * B's tasklet waits behind it, and CPU 0 destroys QP B and CQ B. When A's
 * handler returns, B's tasklet runs on freed memory: on a KASAN kernel,
 * "BUG: KASAN: use-after-free" in rxe_send_complete(). It is what xferk's
 * kill storm met with one CQ per path (teardown destroyed a path's CQ
 * while its QPs' flushes had just armed the tasklet); xferk now takes CQ
 * entries from the device's pool, whose CQs live as long as the device.
 *
 * Loaded on a kernel with an rxe device and two CPUs, it does this once,
 * at load, and reports what it did in the kernel log
 * (tests/vm/run repro debug).
 */
#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

static unsigned int handler_ms = 200;
module_param(handler_ms, uint, 0444);
MODULE_PARM_DESC(handler_ms, "How long CQ A's handler runs (default 200)");

/* The first rxe device, found by the client's add() at registration. */
static struct ib_device *repro_dev;
/* CQ A's handler has started (and runs for handler_ms). */
static atomic_t handler_a_started = ATOMIC_INIT(0);

static int repro_add(struct ib_device *dev)
{
	if (!repro_dev && !strncmp(dev_name(&dev->dev), "rxe", 3))
		repro_dev = dev;
	return 0;
}

static void repro_remove(struct ib_device *dev, void *client_data)
{
}

static struct ib_client repro_client = {
	.name = "rxe_cq_tasklet_repro",
	.add = repro_add,
	.remove = repro_remove,
};

/* One CQ with one RC QP on it, the QP in the error state. */
struct repro_pair {
	struct ib_cq *cq;
	struct ib_qp *qp;
};

static void cq_a_event(struct ib_cq *cq, void *context)
{
	atomic_set(&handler_a_started, 1);
	mdelay(handler_ms);
}

/* Never legitimately called: CQ B is destroyed before its tasklet runs. */
static void cq_b_event(struct ib_cq *cq, void *context)
{
}

static int pair_create(struct ib_pd *pd, struct repro_pair *p,
		       ib_comp_handler handler)
{
	struct ib_cq_init_attr cq_attr = { .cqe = 4 };
	struct ib_qp_init_attr qp_attr = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = {
			.max_send_wr = 2, .max_recv_wr = 2,
			.max_send_sge = 1, .max_recv_sge = 1,
		},
	};
	struct ib_qp_attr init = {
		.qp_state = IB_QPS_INIT,
		.port_num = 1,
	};
	struct ib_qp_attr err = { .qp_state = IB_QPS_ERR };
	int ret;

	p->cq = ib_create_cq(pd->device, handler, NULL, p, &cq_attr);
	if (IS_ERR(p->cq)) {
		pr_err("rxe_cq_tasklet: ib_create_cq: %ld\n", PTR_ERR(p->cq));
		return PTR_ERR(p->cq);
	}
	qp_attr.send_cq = p->cq;
	qp_attr.recv_cq = p->cq;
	p->qp = ib_create_qp(pd, &qp_attr);
	if (IS_ERR(p->qp)) {
		ret = PTR_ERR(p->qp);
		pr_err("rxe_cq_tasklet: ib_create_qp: %d\n", ret);
		ib_destroy_cq(p->cq);
		return ret;
	}
	/* Reset to error is not a transition: through INIT. */
	ret = ib_modify_qp(p->qp, &init, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (!ret)
		ret = ib_modify_qp(p->qp, &err, IB_QP_STATE);
	if (!ret)
		ret = ib_req_notify_cq(p->cq, IB_CQ_NEXT_COMP);
	if (ret) {
		pr_err("rxe_cq_tasklet: error state, arming: %d\n", ret);
		ib_destroy_qp(p->qp);
		ib_destroy_cq(p->cq);
	}
	return ret;
}

static void pair_destroy(struct repro_pair *p)
{
	ib_destroy_qp(p->qp);
	ib_destroy_cq(p->cq);
}

/*
 * On CPU 1: a signaled work request on each QP, A's first. Their flushes
 * run in that CPU's tasklets, which schedule CQ A's then CQ B's there.
 */
static long post_on_both(void *arg)
{
	struct repro_pair *pairs = arg;
	struct ib_rdma_wr wr = {
		.wr.opcode = IB_WR_RDMA_WRITE,
		.wr.send_flags = IB_SEND_SIGNALED,
	};
	int ret;

	ret = ib_post_send(pairs[0].qp, &wr.wr, NULL);
	if (!ret)
		ret = ib_post_send(pairs[1].qp, &wr.wr, NULL);
	if (ret)
		pr_err("rxe_cq_tasklet: ib_post_send: %d\n", ret);
	return ret;
}

/* On CPU 0: once A's handler runs, B's QP and CQ go. */
static long destroy_b_behind_a(void *arg)
{
	struct repro_pair *b = arg;
	unsigned long end = jiffies + msecs_to_jiffies(5000);

	while (!atomic_read(&handler_a_started) && time_before(jiffies, end))
		cpu_relax();
	if (!atomic_read(&handler_a_started))
		return -ETIMEDOUT;
	pair_destroy(b);
	return 0;
}

static int __init repro_init(void)
{
	struct repro_pair pairs[2];
	struct ib_pd *pd;
	long ret;

	ret = ib_register_client(&repro_client);
	if (ret)
		return ret;
	if (!repro_dev || !cpu_online(0) || !cpu_online(1)) {
		pr_err("rxe_cq_tasklet: needs an rxe device and CPUs 0 and 1\n");
		ib_unregister_client(&repro_client);
		return -ENODEV;
	}
	pd = ib_alloc_pd(repro_dev, 0);
	if (IS_ERR(pd)) {
		ib_unregister_client(&repro_client);
		return PTR_ERR(pd);
	}
	ret = pair_create(pd, &pairs[0], cq_a_event);
	if (ret)
		goto out_pd;
	ret = pair_create(pd, &pairs[1], cq_b_event);
	if (ret)
		goto out_a;
	ret = work_on_cpu(1, post_on_both, pairs);
	if (!ret)
		ret = work_on_cpu(0, destroy_b_behind_a, &pairs[1]);
	if (ret)
		pair_destroy(&pairs[1]);
	if (ret)
		pr_err("rxe_cq_tasklet: could not arrange the race: %ld\n", ret);
	else
		pr_info("rxe_cq_tasklet: CQ B destroyed while its completion tasklet was scheduled\n");
	/* A's handler is over before A goes. */
	msleep(2 * handler_ms);
out_a:
	pair_destroy(&pairs[0]);
out_pd:
	ib_dealloc_pd(pd);
	ib_unregister_client(&repro_client);
	return ret;
}

static void __exit repro_exit(void)
{
}

module_init(repro_init);
module_exit(repro_exit);
MODULE_DESCRIPTION("Reproduction: rdma_rxe frees a CQ whose completion tasklet is scheduled");
MODULE_LICENSE("GPL");
