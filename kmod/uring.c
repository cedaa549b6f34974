// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring commands (IORING_OP_URING_CMD) on /dev/xferk.
 *
 * The payload (struct xferk_uring_cmd) names the same argument struct the
 * ioctl takes; commands run through the ioctl table. Commands that may
 * wait for the device or the network return -EAGAIN when issued
 * non-blocking, so io_uring runs them in its worker threads, where a
 * signal (ring exit, task exit) interrupts their waits; so does a SUBMIT
 * that would wait for a dma-buf's exporter (struct xferk_op_settle). No
 * command returns -EAGAIN for any other reason.
 *
 * SUBMIT parks instead: the op records the command (op->ucmd) before it is
 * published and completes it exactly once when it settles, whoever gets
 * there first. The requests layer does both through the callbacks this
 * file hands to xferk_file_submit() (struct xferk_op_settle): uring_park()
 * at submit, and uring_op_settled() as op->settled from
 *
 *   op_apply()                physically complete     res = final state
 *   op_drain_expire()         QUARANTINED at deadline res = QUARANTINED
 *
 * The winner sets XFERK_OP_UCMD_CLAIMED, takes the op off xferk_parked and
 * fills the command's pdu. The CQE waits for one more thing: the issue
 * writing the op's handle back into the caller's struct. An issue from
 * io-wq (IOSQE_ASYNC, or a SUBMIT re-issued after waiting for a dma-buf's
 * exporter) writes it after the op is published, and the op may settle
 * first. So the claim and the issue each drop one of the pdu's two
 * @posters; the last one hands the command to
 * io_uring_cmd_complete_in_task(): the CQE is posted from the submitter's
 * task context (or io_uring's fallback worker when that task is exiting),
 * never from the CQ callback, and never before the handle is written.
 *
 * 6.1 cannot cancel a parked uring_cmd, and a closed ring waits for every
 * parked command. So a ring SUBMIT needs a deadline and always gets the
 * cancel-on-deadline policy, both bounded by XFERK_URING_MAX_PARK_NS:
 * every parked command completes on its own. And the monitor (as ublk's)
 * looks for parked commands whose submitting process is exiting (the
 * process: one of its threads, or its SQPOLL thread, exiting is not the
 * end of its ring), marks them XFERK_OP_EXIT_CANCEL and cancels and drains
 * their ops in the background; they complete with -ECANCELED when the op
 * settles.
 *
 * Lifetime: a parked command holds a reference to the file (io_uring's),
 * so the file, and with it the module, outlives it. An op on xferk_parked
 * is not yet claimed and still holds its physical reference, which
 * op_apply() drops only after claiming; a claimed one holds a reference
 * for its completion until the CQE posts, so auto-release drops that op's
 * handle and no other.
 */
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "front.h"
#include "lifecycle.h"
#include "op.h"
#include "stats.h"
#include "uring.h"
#include "uring_compat.h"

/* How often the monitor looks for exiting tasks while commands are parked. */
#define XFERK_URING_MONITOR_MS	100

/**
 * struct xferk_ucmd - xferk's state in io_uring_cmd.pdu
 * @res: the CQE's result
 * @release: drop @op_handle before posting the CQE
 * @posters: who has yet to be done before the CQE posts: the issue (the
 *	handle written back) and the claim; the one that drops it to zero
 *	posts
 * @op_handle: the op's handle: CQE32 big_cqe[0], and what auto-release drops
 * @op: the op (a reference from the claim until the CQE)
 *
 * @op_handle and @posters are set when the command parks, @res, @release
 * and @op by the claimer; ucmd_done_in_task() reads them.
 */
struct xferk_ucmd {
	s32 res;
	bool release;
	atomic_t posters;
	u64 op_handle;
	struct xferk_op *op;
};

static DEFINE_SPINLOCK(xferk_parked_lock);	/* xferk_parked */
static LIST_HEAD(xferk_parked);
static void uring_monitor(struct work_struct *work);
static DECLARE_DELAYED_WORK(xferk_uring_monitor, uring_monitor);

static struct xferk_ucmd *ucmd_pdu(struct io_uring_cmd *cmd)
{
	BUILD_BUG_ON(sizeof(struct xferk_ucmd) > sizeof(cmd->pdu));
	return (struct xferk_ucmd *)cmd->pdu;
}

/**
 * uring_park() - make a SUBMIT command wait for its op
 * @op: the op, before its chunks are queued
 * @cmd: the command; completed when the op settles
 * @handle: the op's handle, as the submit returns it
 *
 * struct xferk_op_settle.park: xferk_op_submit() calls it under the
 * file's lock, before the op is published.
 */
static void uring_park(struct xferk_op *op, struct io_uring_cmd *cmd,
		       u64 handle)
{
	ucmd_pdu(cmd)->op_handle = handle;
	atomic_set(&ucmd_pdu(cmd)->posters, 2);
	op->ucmd = cmd;
	/* The submitter, also when an io-wq worker or SQPOLL issues it. */
	op->ucmd_task = get_task_struct(xferk_uring_cmd_task(cmd));
	spin_lock(&xferk_parked_lock);
	list_add_tail(&op->parked_node, &xferk_parked);
	spin_unlock(&xferk_parked_lock);
	atomic64_inc(&xferk_stats.uring_parked);
	schedule_delayed_work(&xferk_uring_monitor,
			      msecs_to_jiffies(XFERK_URING_MONITOR_MS));
}

/* Task context: release the handle if asked, then post the CQE. */
static void ucmd_done_in_task(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct xferk_ucmd *uc = ucmd_pdu(cmd);
	struct xferk_op *op = uc->op;

	/* Quietly nothing if the caller released the handle already. */
	if (uc->release)
		xferk_drop_op_handle(cmd->file->private_data, op, uc->op_handle);
	xferk_op_put(op);
	xferk_uring_cmd_done(cmd, uc->res, uc->op_handle, issue_flags);
}

/*
 * The issue and the claim each call this once: the second posts the CQE.
 * The pdu may be gone once this returns.
 */
static void ucmd_poster_done(struct io_uring_cmd *cmd)
{
	if (atomic_dec_and_test(&ucmd_pdu(cmd)->posters))
		io_uring_cmd_complete_in_task(cmd, ucmd_done_in_task);
}

/**
 * uring_op_settled() - complete the op's parked command, once
 * @op: the op; physically complete or QUARANTINED
 * @state: its state now
 *
 * struct xferk_op_settle.settled, the op's ->settled. Process context.
 * Does nothing for ops without a command and for every call after the
 * first.
 */
static void uring_op_settled(struct xferk_op *op, u32 state)
{
	struct io_uring_cmd *cmd = op->ucmd;
	struct xferk_ucmd *uc;
	bool exited;

	if (!cmd || test_and_set_bit(XFERK_OP_UCMD_CLAIMED, &op->flags))
		return;
	spin_lock(&xferk_parked_lock);
	list_del(&op->parked_node);
	spin_unlock(&xferk_parked_lock);
	put_task_struct(op->ucmd_task);

	exited = test_bit(XFERK_OP_EXIT_CANCEL, &op->flags);
	uc = ucmd_pdu(cmd);
	kref_get(&op->ref);
	uc->op = op;
	uc->res = exited ? -ECANCELED : state;
	uc->release = !exited && state != XFERK_STATE_QUARANTINED &&
		      (op->submit_flags & XFERK_SUBMIT_AUTO_RELEASE);
	atomic64_dec(&xferk_stats.uring_parked);
	atomic64_inc(&xferk_stats.uring_completed);
	ucmd_poster_done(cmd);
}

/*
 * Is the process that submitted through @t going away? A thread of it (or
 * its SQPOLL thread) exiting is not enough: the ring lives on.
 */
static bool uring_process_exiting(struct task_struct *t)
{
	return (READ_ONCE(t->signal->flags) & SIGNAL_GROUP_EXIT) ||
	       !atomic_read(&t->signal->live);
}

/* Cancels and drains, in the background, the ops of exiting processes. */
static void uring_monitor(struct work_struct *work)
{
	struct xferk_op *op;
	bool parked;

	spin_lock(&xferk_parked_lock);
	list_for_each_entry(op, &xferk_parked, parked_node) {
		if (!uring_process_exiting(op->ucmd_task) ||
		    test_and_set_bit(XFERK_OP_EXIT_CANCEL, &op->flags))
			continue;
		atomic64_inc(&xferk_stats.uring_exit_cancels);
		xferk_op_orphan(op);
	}
	parked = !list_empty(&xferk_parked);
	spin_unlock(&xferk_parked_lock);
	if (parked)
		schedule_delayed_work(&xferk_uring_monitor,
				      msecs_to_jiffies(XFERK_URING_MONITOR_MS));
}

/*
 * A ring SUBMIT: bounded as described above, then parked. The op handle
 * goes back into the caller's struct before the issue returns.
 */
static int uring_submit(struct xferk_file *xf, struct io_uring_cmd *cmd,
			unsigned int issue_flags, struct xferk_ioc_submit *a,
			struct xferk_ioc_submit __user *uarg)
{
	const struct xferk_op_settle settle = {
		.cmd = cmd,
		.nowait = issue_flags & IO_URING_F_NONBLOCK,
		.park = uring_park,
		.settled = uring_op_settled,
	};
	ktime_t deadline = xferk_deadline_from_user(a->deadline_ns);
	ktime_t now = ktime_get();
	int ret;

	if (deadline == KTIME_MAX ||
	    a->drain_budget_ns > XFERK_URING_MAX_PARK_NS ||
	    ktime_sub(deadline, now) >
	    (s64)(XFERK_URING_MAX_PARK_NS - a->drain_budget_ns))
		return -EINVAL;
	a->flags |= XFERK_SUBMIT_CANCEL_ON_DEADLINE;
	ret = xferk_file_submit(xf, a, &settle);
	if (ret == -EAGAIN)
		atomic64_inc(&xferk_stats.uring_submits_deferred);
	if (ret)
		return ret;
	/*
	 * Published and parked: the CQE will come whatever happens here, but
	 * not before this write. If the caller's struct cannot take it, the
	 * op is taken back as the ioctl's would be (xferk_arg_copy_out()):
	 * cancelled and drained in the background, its handle dropped. Its
	 * CQE still posts when it settles.
	 */
	if (put_user(a->op, &uarg->op))
		xferk_unpublish_handle(xf, a->op, XFERK_H_OP);
	ucmd_poster_done(cmd);
	return -EIOCBQUEUED;
}

/*
 * A drain deadline (CANCEL's, GROUP_ABORT's) within the bound of a parked
 * command (see uapi).
 */
static int uring_drain_check(u64 deadline_ns)
{
	ktime_t until = xferk_deadline_from_user(deadline_ns);

	if (until == KTIME_MAX ||
	    ktime_sub(until, ktime_get()) > (s64)XFERK_URING_MAX_PARK_NS)
		return -EINVAL;
	return 0;
}

/* The command's payload: read once, checked for reserved bytes. */
static int uring_payload(struct io_uring_cmd *cmd, unsigned int issue_flags,
			 void __user **uarg)
{
	const u8 *payload = xferk_uring_payload(cmd);
	struct xferk_uring_cmd uc;
	u8 tail[64];

	memcpy(&uc, payload, sizeof(uc));
	if (uc.flags || uc.reserved)
		return -EINVAL;
	if (issue_flags & IO_URING_F_SQE128) {
		BUILD_BUG_ON(sizeof(uc) + sizeof(tail) != 80);
		memcpy(tail, payload + sizeof(uc), sizeof(tail));
		if (!xferk_is_zeroed(tail, sizeof(tail)))
			return -EINVAL;
	}
	*uarg = u64_to_user_ptr(uc.arg);
	return 0;
}

/**
 * xferk_uring_cmd() - file_operations.uring_cmd of /dev/xferk
 * @cmd: the command; cmd_op is an XFERK_IOC_* number
 * @issue_flags: IO_URING_F_*
 *
 * Return: -EIOCBQUEUED for a parked SUBMIT, -EAGAIN to be re-issued from
 * io_uring's worker, else the CQE's result: what the ioctl returns.
 */
int xferk_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	const struct xferk_ioctl_desc *desc = xferk_ioctl_lookup(cmd->cmd_op);
	struct xferk_file *xf = cmd->file->private_data;
	union xferk_ioc_arg arg;
	void __user *uarg;
	u32 usize;
	int ret;

	if (!desc)
		return -ENOTTY;
	if (!desc->nonblock && (issue_flags & IO_URING_F_NONBLOCK))
		return -EAGAIN;
	ret = uring_payload(cmd, issue_flags, &uarg);
	if (ret)
		return ret;
	ret = xferk_arg_copy_in(desc, &arg, uarg, &usize);
	if (ret)
		return ret;
	if (desc->cmd == XFERK_IOC_SUBMIT)
		return uring_submit(xf, cmd, issue_flags, &arg.submit, uarg);
	if (desc->cmd == XFERK_IOC_CANCEL || desc->cmd == XFERK_IOC_GROUP_ABORT) {
		ret = uring_drain_check(desc->cmd == XFERK_IOC_CANCEL ?
					arg.cancel.drain_deadline_ns :
					arg.group.deadline_ns);
		if (ret)
			return ret;
	}
	ret = xferk_cmd_run(xf, desc, &arg);
	/* A signal ends a wait in io_uring's worker: nothing restarts it. */
	if (ret <= -ERESTARTSYS && ret >= -ERESTART_RESTARTBLOCK)
		ret = -EINTR;
	return xferk_arg_copy_out(xf, desc, &arg, uarg, usize, ret);
}

void xferk_uring_module_exit(void)
{
	/* No command can be parked: each holds a file, hence the module. */
	cancel_delayed_work_sync(&xferk_uring_monitor);
}
