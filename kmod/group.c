// SPDX-License-Identifier: GPL-2.0
/*
 * Request groups: the ops of one request, aborted together.
 *
 * A group is created empty and open. An op joins it at submit (before it
 * is started) and stays on its list until the op is freed; then its final
 * snapshot is added to the group's sum of departed ops, so a snapshot of
 * the group always sums every op that ever joined. A join that brings a
 * remote handle the group did not use yet also brings the ABORTED
 * notification for its target, charged to the file then (so an abort
 * never allocates for them). GROUP_ABORT closes the group (a later join
 * fails with -ESHUTDOWN), takes a reference on every op still listed and
 * drains them together (xferk_ops_cancel_drain()). When the group is
 * closed and every op that joined is physically complete, the ABORTED
 * notifications go, once.
 *
 * Joins and the abort's closing and listing run under the file's lock
 * (a group belongs to one file, its ops are submitted through it; the
 * abort is given that lock): an op an abort lists is published
 * completely. Its start (deadline timer, queue) comes after the lock is
 * dropped and may follow the abort's drain: xferk_queue_start() then
 * finds its chunks dropped. The GROUP_* commands are the front's
 * (group_ioctl.c).
 *
 * References: the group's handle holds one, each op in it one.
 * Lock order: the file's lock, group->lock, then op->lock (snapshots);
 * nothing is called under group->lock that takes another lock but
 * op->lock.
 *
 * Verbs-free: KUnit tests the joining rules and the sums directly.
 */
#include <linux/random.h>
#include <linux/slab.h>
#include <kunit/visibility.h>

#include "export.h"
#include "handle.h"
#include "lifecycle.h"
#include "notify.h"
#include "op.h"
#include "queue.h"
#include "stats.h"
#include "xferk.h"

/**
 * xferk_group_create() - a new, open, empty group
 * @tag: the tag its ABORTED notifications carry
 *
 * Return: the group (one reference, for its handle) or NULL.
 */
struct xferk_group *xferk_group_create(u64 tag)
{
	struct xferk_group *g = kzalloc(sizeof(*g), XFERK_GFP_USER);

	if (!g)
		return NULL;
	kref_init(&g->ref);
	spin_lock_init(&g->lock);
	init_waitqueue_head(&g->wq);
	INIT_LIST_HEAD(&g->ops);
	INIT_LIST_HEAD(&g->aborted_notes);
	g->tag = tag;
	do {
		g->gen = get_random_u64();
	} while (!g->gen);
	return g;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_group_create);

static void group_release(struct kref *ref)
{
	struct xferk_group *g = container_of(ref, struct xferk_group, ref);
	u32 i;

	xferk_notify_free_list(&g->aborted_notes);
	for (i = 0; i < g->nr_targets; i++)
		xferk_remote_put(g->targets[i]);
	kfree(g);
}

void xferk_group_put(struct xferk_group *g)
{
	kref_put(&g->ref, group_release);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_group_put);

/* Is @rm one of the group's targets? With g->lock. */
static bool group_has_target(struct xferk_group *g, struct xferk_remote *rm)
{
	u32 i;

	for (i = 0; i < g->nr_targets; i++)
		if (g->targets[i] == rm)
			return true;
	return false;
}

/**
 * xferk_group_join() - an op being submitted joins a group
 * @g: the group
 * @op: the op, not yet started; takes a group reference on success
 * @remotes: the remote handles of its fragments
 * @nr: how many
 * @acct: the submitting file's account: charged one work request per
 *	ABORTED notification of a new target
 *
 * With the file's lock: no other join or abort of @g runs meanwhile, so
 * @g->closed and @g->targets hold still. All or nothing: the op joins and
 * the group records the remote handles it did not know yet (one reference
 * each, kept until the group goes) with their ABORTED notifications (for
 * targets that take notifications), or nothing changes.
 *
 * Return: 0, -ESHUTDOWN if the group was aborted, -E2BIG if it would use
 * more than XFERK_GROUP_MAX_TARGETS distinct remote handles, -EBUSY or
 * -ENOMEM (the notifications).
 */
int xferk_group_join(struct xferk_group *g, struct xferk_op *op,
		     struct xferk_remote *const *remotes, u32 nr,
		     struct xferk_qacct *acct)
{
	struct xferk_remote *fresh[XFERK_GROUP_MAX_TARGETS];
	struct xferk_notify *n;
	LIST_HEAD(notes);
	u32 i, j, nr_fresh = 0;

	if (READ_ONCE(g->closed))
		return -ESHUTDOWN;
	for (i = 0; i < nr; i++) {
		for (j = 0; j < nr_fresh && fresh[j] != remotes[i]; j++)
			;
		if (j < nr_fresh || group_has_target(g, remotes[i]))
			continue;
		if (g->nr_targets + nr_fresh == XFERK_GROUP_MAX_TARGETS)
			return -E2BIG;
		fresh[nr_fresh++] = remotes[i];
	}
	for (i = 0; i < nr_fresh; i++) {
		n = xferk_notify_alloc(fresh[i], acct, XFERK_EVENT_ABORTED,
				       g->tag);
		if (PTR_ERR(n) == -EOPNOTSUPP || PTR_ERR(n) == -ESTALE)
			continue;	/* its target is told nothing */
		if (IS_ERR(n)) {
			xferk_notify_free_list(&notes);
			return PTR_ERR(n);
		}
		list_add_tail(&n->node, &notes);
	}
	spin_lock(&g->lock);
	for (i = 0; i < nr_fresh; i++) {
		xferk_remote_get(fresh[i]);
		g->targets[g->nr_targets++] = fresh[i];
	}
	list_splice_tail(&notes, &g->aborted_notes);
	kref_get(&g->ref);
	op->group = g;
	list_add_tail(&op->group_node, &g->ops);
	g->nr_ops++;
	g->nr_listed++;
	spin_unlock(&g->lock);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_group_join);

/*
 * The group is closed and every op of it physical: its ABORTED
 * notifications go, once. Takes them off the group under g->lock.
 */
static void group_send_aborted(struct xferk_group *g)
{
	LIST_HEAD(notes);

	spin_lock(&g->lock);
	if (g->closed && g->nr_physical == g->nr_ops)
		list_splice_init(&g->aborted_notes, &notes);
	spin_unlock(&g->lock);
	xferk_notify_send_list(&notes);
}

/**
 * xferk_group_op_physical() - an op of the group became physically
 * complete (once per op, process context)
 * @g: the op's group
 */
void xferk_group_op_physical(struct xferk_group *g)
{
	spin_lock(&g->lock);
	g->nr_physical++;
	spin_unlock(&g->lock);
	wake_up_all(&g->wq);
	group_send_aborted(g);
}

/**
 * xferk_group_sum_add() - add an op's snapshot to a group's sums
 * @sum: the group's snapshot being built
 * @s: the op's snapshot
 */
void xferk_group_sum_add(struct xferk_group_snapshot *sum,
			 const struct xferk_op_snapshot *s)
{
	sum->ops++;
	sum->ops_physical += s->buffer_reusable;
	if (s->state < ARRAY_SIZE(sum->ops_in_state))
		sum->ops_in_state[s->state]++;
	sum->total_bytes += s->total_bytes;
	sum->transferred_bytes += s->transferred_bytes;
	sum->in_flight_bytes += s->in_flight_bytes;
	sum->quarantined_bytes += s->quarantined_bytes;
	sum->late_completions += s->late_completions;
	sum->quarantine_events += s->quarantine_events;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_group_sum_add);

/**
 * xferk_group_op_gone() - an op of the group is freed
 * @op: the op, physically complete, its snapshot final
 */
void xferk_group_op_gone(struct xferk_op *op)
{
	struct xferk_group *g = op->group;
	struct xferk_op_snapshot s;

	xferk_op_snapshot(op, &s);
	spin_lock(&g->lock);
	list_del(&op->group_node);
	g->nr_listed--;
	xferk_group_sum_add(&g->gone, &s);
	if (!g->gone_error)
		g->gone_error = s.first_error;
	spin_unlock(&g->lock);
	xferk_group_put(g);
}

/**
 * xferk_group_snapshot() - the sum of every op that joined the group
 * @g: the group
 * @snap: out
 */
void xferk_group_snapshot(struct xferk_group *g,
			  struct xferk_group_snapshot *snap)
{
	struct xferk_op_snapshot s;
	struct xferk_op *op;

	spin_lock(&g->lock);
	*snap = g->gone;
	snap->first_error = g->gone_error;
	list_for_each_entry(op, &g->ops, group_node) {
		xferk_op_snapshot(op, &s);
		xferk_group_sum_add(snap, &s);
		if (!snap->first_error)
			snap->first_error = s.first_error;
	}
	snap->aborted = g->closed;
	spin_unlock(&g->lock);
	snap->generation = g->gen;
	snap->tag = g->tag;
}

/* Every op that joined is physically complete. */
static bool group_physical(struct xferk_group *g)
{
	bool done;

	spin_lock(&g->lock);
	done = g->nr_physical == g->nr_ops;
	spin_unlock(&g->lock);
	return done;
}

/*
 * Does @snap show every op settled (as XFERK_IOC_WAIT means it), or with
 * @physical, physically complete?
 */
bool xferk_group_snapshot_settled(const struct xferk_group_snapshot *snap,
				  bool physical)
{
	if (physical)
		return snap->ops_physical == snap->ops;
	return snap->ops_in_state[XFERK_STATE_SUBMITTED] +
	       snap->ops_in_state[XFERK_STATE_IN_PROGRESS] == 0;
}

static bool group_settled(struct xferk_group *g, bool physical)
{
	struct xferk_group_snapshot snap;

	if (physical)
		return group_physical(g);
	xferk_group_snapshot(g, &snap);
	return xferk_group_snapshot_settled(&snap, false);
}

/**
 * xferk_group_wait() - sleep until every op of the group is settled
 * @g: the group
 * @physical: physically complete instead
 * @deadline: absolute CLOCK_MONOTONIC bound (KTIME_MAX: none)
 *
 * An op that settles wakes the group's waiters only when it is also
 * physical; a waiter for settled ops therefore also rechecks on the
 * ops' own progress at most every 10 ms.
 *
 * Return: 0 when they are, -ETIMEDOUT, or -ERESTARTSYS on a signal.
 */
int xferk_group_wait(struct xferk_group *g, bool physical, ktime_t deadline)
{
	for (;;) {
		ktime_t left = ktime_sub(deadline, ktime_get());
		int ret;

		if (group_settled(g, physical))
			return 0;
		if (left <= 0)
			return -ETIMEDOUT;
		if (!physical)
			left = min_t(ktime_t, left, 10 * NSEC_PER_MSEC);
		ret = wait_event_interruptible_hrtimeout(g->wq,
							 group_physical(g), left);
		if (ret == -ERESTARTSYS)
			return ret;
	}
}

/**
 * xferk_group_abort() - close a group and drain every op of it
 * @g: the group
 * @joins_lock: the lock its joins run under (its file's)
 * @drain_deadline: absolute bound of the drain
 *
 * The first abort closes the group; every abort drains what it lists, to
 * its own deadline.
 *
 * Return: as xferk_ops_cancel_drain(), or -ENOMEM (the group is closed,
 * its ops not cancelled: an abort may be repeated).
 */
int xferk_group_abort(struct xferk_group *g, struct mutex *joins_lock,
		      ktime_t drain_deadline)
{
	struct xferk_op **ops = NULL;
	struct xferk_op *op;
	u32 n, nr = 0;
	int ret;

	/*
	 * Closed first, under the joins' lock: the ops listed below are all
	 * it will ever have, and each was published and started whole.
	 */
	mutex_lock(joins_lock);
	spin_lock(&g->lock);
	if (!g->closed)
		atomic64_inc(&xferk_stats.groups_aborted);
	g->closed = true;
	n = g->nr_listed;
	spin_unlock(&g->lock);
	ops = kvmalloc_array(max(n, 1U), sizeof(*ops), XFERK_GFP_USER);
	if (ops) {
		spin_lock(&g->lock);
		list_for_each_entry(op, &g->ops, group_node)
			if (nr < n && kref_get_unless_zero(&op->ref))
				ops[nr++] = op;
		spin_unlock(&g->lock);
	}
	mutex_unlock(joins_lock);
	group_send_aborted(g);	/* all physical already */
	if (!ops)
		return -ENOMEM;
	ret = xferk_ops_cancel_drain(ops, nr, drain_deadline);
	while (nr)
		xferk_op_put(ops[--nr]);
	kvfree(ops);
	group_send_aborted(g);
	return ret;
}
