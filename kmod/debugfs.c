// SPDX-License-Identifier: GPL-2.0
/*
 * <debugfs>/xferk: human-readable tables for operators, and test knobs.
 * Not an ABI: columns may change between versions (sysfs holds the stable
 * counters).
 *
 *   config   version, features, listener address
 *   ops      live ops: handle owner pid, state, bytes, age
 *   peers    connections (sessions): state, side, QP number, outstanding
 *            chunks, error, whether the path's QP died, whether a local
 *            user claimed it, path generation, whether a path exists,
 *            path attempts since the last one was up, reconnects, chunks
 *            posted again
 *   quarantine  what the kernel holds because a device may still touch
 *            it: deregistered regions still pinned, orphaned and
 *            QUARANTINED ops (owner pid, bytes, age, reason)
 *   fault/   fault injection, Documentation/fault-injection.md
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "conn.h"
#include "conn_state.h"
#include "fault.h"
#include "front.h"
#include "lifecycle.h"
#include "limits.h"
#include "op.h"
#include "queue.h"
#include "region.h"
#include "sched.h"
#include "transport.h"
#include "wire.h"
#include "xferk.h"

u16 xferk_fault_connect_version;
static struct dentry *xferk_debugfs_root;

static int config_show(struct seq_file *m, void *unused)
{
	seq_printf(m, "abi_version %u\n", XFERK_ABI_VERSION);
	seq_printf(m, "features 0x%llx\n", (unsigned long long)XFERK_FEATURES);
	seq_printf(m, "listen %pISpc\n", &xferk_listen_sockaddr);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(config);

static int ops_show(struct seq_file *m, void *unused)
{
	ktime_t now = ktime_get();
	struct xferk_op_snapshot s;
	struct xferk_op *op;
	unsigned long flags;

	seq_puts(m, "pid state first_error total_bytes in_flight_bytes done_frags/frags age_ms via\n");
	spin_lock(&xferk_ops_lock);
	list_for_each_entry(op, &xferk_ops, node) {
		spin_lock_irqsave(&op->lock, flags);
		xferk_life_snapshot(&op->life, &s);
		spin_unlock_irqrestore(&op->lock, flags);
		seq_printf(m, "%d %s %d %llu %llu %u/%u %lld %s\n", op->owner,
			   xferk_state_name(s.state), s.first_error,
			   s.total_bytes, s.in_flight_bytes,
			   s.completed_fragments, s.total_fragments,
			   ktime_ms_delta(now, op->life.submit_time),
			   !op->ucmd ? "ioctl" :
			   test_bit(XFERK_OP_UCMD_CLAIMED, &op->flags) ?
			   "uring-done" : "uring-parked");
	}
	spin_unlock(&xferk_ops_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ops);

static int quarantine_show(struct seq_file *m, void *unused)
{
	ktime_t now = ktime_get();
	struct xferk_op_snapshot s;
	struct xferk_region *r;
	struct xferk_op *op;
	unsigned long flags;

	seq_puts(m, "kind pid bytes age_ms reason\n");
	spin_lock(&xferk_regions_lock);
	list_for_each_entry(r, &xferk_regions, node)
		if (r->deregistered)
			seq_printf(m, "region %d %lu %lld deregistered-in-use\n",
				   r->owner, r->npages << PAGE_SHIFT,
				   ktime_ms_delta(now, r->deregistered_at));
	spin_unlock(&xferk_regions_lock);
	spin_lock(&xferk_ops_lock);
	list_for_each_entry(op, &xferk_ops, node) {
		spin_lock_irqsave(&op->lock, flags);
		xferk_life_snapshot(&op->life, &s);
		spin_unlock_irqrestore(&op->lock, flags);
		if (s.physical_complete)
			continue;
		if (s.state == XFERK_STATE_QUARANTINED || op->orphaned)
			seq_printf(m, "op %d %llu %lld %s\n", op->owner,
				   s.in_flight_bytes,
				   ktime_ms_delta(now, op->life.submit_time),
				   s.state == XFERK_STATE_QUARANTINED ?
				   "quarantined" : "orphaned-by-exit");
	}
	spin_unlock(&xferk_ops_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(quarantine);

/* Revokes this end sent that are not answered (waiting or abandoned). */
static unsigned int revokes_unanswered(const struct xferk_conn *c)
{
	unsigned int i, n = 0;

	for (i = 0; i < XFERK_REVOKES_MAX; i++)
		n += c->revokes[i].state == XFERK_REVOKE_WAITING ||
		     c->revokes[i].state == XFERK_REVOKE_ABANDONED;
	return n;
}

/* QPs of @c's path that are established. With c->lock. */
static u32 lanes_live(struct xferk_conn *c)
{
	u32 i, n = 0;

	for (i = 0; i < c->path.nr_qps; i++)
		n += c->path.lanes[i].live;
	return n;
}

static int peers_show(struct seq_file *m, void *unused)
{
	struct xferk_conn *c;
	u32 i, window_limit;
	u64 window_bytes;

	seq_puts(m, "id transport side state peer qpn outstanding error qp_dead claimed path_gen path attempts reconnects reposted peer_caps revokes_unanswered answers_owed qps qps_live qp_posts window_bytes window_limit notify_uncredited notify_owed\n");
	mutex_lock(&xferk_conns_lock);
	list_for_each_entry(c, &xferk_conns, node) {
		mutex_lock(&c->lock);
		seq_printf(m, "%u %s %s %s %pISpc %u %u %d %d %d %u %s %u %llu %llu %#llx %u %u %u %u ",
			   c->id, c->transport->name,
			   c->active ? "active" : "passive",
			   xferk_conn_state_name(c->state), &c->peer,
			   READ_ONCE(c->path.lanes[0].qp_num),
			   c->outstanding, c->error,
			   xferk_conn_path_dead(c),
			   test_bit(XFERK_CONN_F_CLAIMED, &c->flags),
			   c->path_gen,
			   xferk_path_state_name(READ_ONCE(c->path_state)),
			   c->attempts,
			   c->reconnects, c->reposted, c->peer_caps,
			   revokes_unanswered(c), c->nr_acks_due, c->path.nr_qps,
			   lanes_live(c));
		for (i = 0; i < c->path.nr_qps; i++)
			seq_printf(m, "%s%llu", i ? "," : "",
				   c->path.lanes[i].posts);
		spin_lock(&xferk_queue_lock);
		window_bytes = c->sqp.inflight_bytes;
		window_limit = c->sqp.bytes.limit;
		spin_unlock(&xferk_queue_lock);
		seq_printf(m, " %llu %u %u %u\n", window_bytes, window_limit,
			   c->notify_uncredited, c->notify_owed);
		mutex_unlock(&c->lock);
	}
	mutex_unlock(&xferk_conns_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(peers);

static const char *const xferk_prio_names[XFERK_PRIO_COUNT] = {
	[XFERK_PRIO_NORMAL] = "normal",
	[XFERK_PRIO_CRITICAL] = "critical",
	[XFERK_PRIO_BULK] = "bulk",
	[XFERK_PRIO_INTERNAL] = "internal",
};

static const char *const xferk_qstate_names[] = {
	[XFERK_Q_QUEUED] = "queued",
	[XFERK_Q_DISPATCHING] = "dispatching",
	[XFERK_Q_SUBMITTED] = "submitted",
	[XFERK_Q_DONE] = "done",
};

static void queue_item_show(struct seq_file *m, struct xferk_sched_item *it,
			    ktime_t now)
{
	seq_printf(m, "  pid %d %s undispatched %llu/%u inflight %llu/%u age_ms %lld\n",
		   container_of(it, struct xferk_op, q.item)->owner,
		   xferk_qstate_names[it->state], it->undispatched_bytes,
		   it->undispatched_chunks, it->inflight_bytes,
		   it->inflight_chunks, ktime_ms_delta(now, it->enqueued));
}

/*
 * Every device's queue: windows, classes, and the ops waiting in them,
 * also those blocked on their session's full QP window (off the class
 * list, on the session's: struct xferk_sched_qp.blocked).
 */
static int queue_show(struct seq_file *m, void *unused)
{
	ktime_t now = xferk_queue_now();
	struct xferk_sched_item *it;
	struct xferk_qdev *q;
	struct xferk_conn *c;
	int i;

	seq_printf(m, "bypass %d\n", READ_ONCE(xferk_queue_bypass));
	mutex_lock(&xferk_conns_lock);
	spin_lock(&xferk_queue_lock);
	list_for_each_entry(q, &xferk_qdevs, node) {
		seq_printf(m, "device %s inflight_bytes %llu inflight_chunks %u parked_bytes %llu\n",
			   q->name, q->sched.inflight_bytes,
			   q->sched.inflight_chunks, q->sched.parked_bytes);
		for (i = 0; i < XFERK_PRIO_COUNT; i++) {
			struct xferk_sched_class *cls = &q->sched.cls[i];

			seq_printf(m, " class %s ops %u bytes %llu deficit %lld\n",
				   xferk_prio_names[i], cls->ops, cls->bytes,
				   cls->deficit);
			list_for_each_entry(it, &cls->items, node)
				queue_item_show(m, it, now);
			if (i == XFERK_PRIO_INTERNAL)
				continue;
			list_for_each_entry(c, &xferk_conns, node)
				list_for_each_entry(it, &c->sqp.blocked[i], node)
					if (it->sched == &q->sched)
						queue_item_show(m, it, now);
		}
	}
	spin_unlock(&xferk_queue_lock);
	mutex_unlock(&xferk_conns_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(queue);

/* fault/release_delays: any value written ends the held completions. */
static int release_delays_set(void *data, u64 val)
{
	xferk_fault_release_delays();
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(release_delays_fops, NULL, release_delays_set,
			 "%llu\n");

/* Failure to create debugfs entries is not an error (debugfs API rules). */
void xferk_debugfs_init(void)
{
	struct dentry *fault;

	xferk_debugfs_root = debugfs_create_dir("xferk", NULL);
	debugfs_create_file("config", 0444, xferk_debugfs_root, NULL,
			    &config_fops);
	debugfs_create_file("ops", 0444, xferk_debugfs_root, NULL, &ops_fops);
	debugfs_create_file("peers", 0444, xferk_debugfs_root, NULL,
			    &peers_fops);
	debugfs_create_file("queue", 0444, xferk_debugfs_root, NULL,
			    &queue_fops);
	debugfs_create_file("quarantine", 0444, xferk_debugfs_root, NULL,
			    &quarantine_fops);
	fault = debugfs_create_dir("fault", xferk_debugfs_root);
	debugfs_create_u16("connect_version", 0600, fault,
			   &xferk_fault_connect_version);
	debugfs_create_atomic_t("swallow_completions", 0600, fault,
				&xferk_fault_swallow);
	debugfs_create_atomic_t("delay_completions", 0600, fault,
				&xferk_fault_delay);
	debugfs_create_u32("delay_ms", 0600, fault, &xferk_fault_delay_ms);
	debugfs_create_file_unsafe("release_delays", 0200, fault, NULL,
				   &release_delays_fops);
	debugfs_create_atomic_t("fail_post", 0600, fault, &xferk_fault_fail_post);
	debugfs_create_atomic_t("fail_qp", 0600, fault, &xferk_fault_fail_qp);
	debugfs_create_atomic_t("qp_error", 0600, fault, &xferk_fault_qp_error);
	debugfs_create_atomic_t("refuse_chain", 0600, fault,
				&xferk_fault_refuse_chain);
	debugfs_create_bool("no_caps", 0600, fault, &xferk_fault_no_caps);
	debugfs_create_atomic_t("ignore_revokes", 0600, fault,
				&xferk_fault_ignore_revokes);
	debugfs_create_atomic_t("fail_destroy", 0600, fault,
				&xferk_fault_fail_destroy);
	debugfs_create_atomic_t("ignore_disconnects", 0600, fault,
				&xferk_fault_ignore_disconnects);
	debugfs_create_atomic_t("drop_published", 0600, fault,
				&xferk_fault_drop_published);
	debugfs_create_atomic_t("delay_registrations", 0600, fault,
				&xferk_fault_delay_registrations);
}

void xferk_debugfs_exit(void)
{
	debugfs_remove_recursive(xferk_debugfs_root);
}
