// SPDX-License-Identifier: GPL-2.0
/*
 * Ops: submit.
 *
 * At submit every fragment is checked against its region and remote range
 * before anything is published (all or nothing); fragments that continue
 * each other are cut into chunks as one range; then the op gets its handle
 * and its chunks go to their connections' queues, through the admission
 * queue or around it (op_queue_direct()).
 *
 * Locking: the file's lock (struct xferk_submitter.lock) is held from the first fragment's
 * check to the op's publication, so the handles the fragments name stay
 * as they are, and the op is whole (its references, its timers' setup,
 * its parked command) before another thread can see it. The deadline timer
 * is started, and the chunks queued, after it is dropped. This file never
 * takes op->lock itself: until the op is published nothing else sees it,
 * and from then on only what it calls (queueing, completion) does.
 */
#include <linux/hrtimer.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "conn.h"
#include "export.h"
#include "frag.h"
#include "handle.h"
#include "lifecycle.h"
#include "notify.h"
#include "op.h"
#include "op_internal.h"
#include "queue.h"
#include "rail.h"
#include "ready.h"
#include "region.h"
#include "stats.h"
#include "transport.h"
#include "xferk.h"
#include "trace.h"

/*
 * Copies the caller's fragment array, following the struct rules: in one
 * copy when its entries have this kernel's size, else one by one.
 */
static int copy_frags(struct xferk_frag *frags,
		      const struct xferk_ioc_submit *a)
{
	u32 i;
	int ret;

	if (a->frag_size == sizeof(*frags))
		return copy_from_user(frags, u64_to_user_ptr(a->frags),
				      (size_t)a->nr_frags * sizeof(*frags)) ?
		       -EFAULT : 0;
	for (i = 0; i < a->nr_frags; i++) {
		ret = copy_struct_from_user(&frags[i], sizeof(*frags),
					    u64_to_user_ptr(a->frags +
							    (u64)i * a->frag_size),
					    a->frag_size);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The object of @kind that @handle names: @prev, the object of the
 * fragment before, when that fragment named it by the same handle (the
 * file's lock, held across the check of all fragments, keeps the table
 * as it is); else a lookup.
 */
static struct xferk_hobj *frag_handle(const struct xferk_submitter *s, u64 handle,
				      u8 kind, u64 prev_handle,
				      struct xferk_hobj *prev)
{
	if (prev && handle == prev_handle)
		return prev;
	return xferk_handle_lookup(s->handles, handle, kind);
}

/*
 * Checks fragment @i against its handles into @regions[@i] and
 * @remotes[@i] (fragments 0 to @i - 1 are checked); takes no references.
 */
static int check_frag(const struct xferk_submitter *s, const struct xferk_frag *frags,
		      u32 i, struct xferk_region **regions,
		      struct xferk_remote **remotes)
{
	const struct xferk_frag *f = &frags[i];
	struct xferk_hobj *ho;
	struct xferk_region *r;
	struct xferk_remote *rm;
	int ret;

	if (f->reserved || f->opcode > XFERK_OP_WRITE)
		return -EINVAL;
	ho = frag_handle(s, f->mr, XFERK_H_REGION, i ? frags[i - 1].mr : 0,
			 i ? &regions[i - 1]->hobj : NULL);
	if (IS_ERR(ho))
		return PTR_ERR(ho);
	r = container_of(ho, struct xferk_region, hobj);
	ho = frag_handle(s, f->remote, XFERK_H_REMOTE,
			 i ? frags[i - 1].remote : 0,
			 i ? &remotes[i - 1]->hobj : NULL);
	if (IS_ERR(ho))
		return PTR_ERR(ho);
	rm = container_of(ho, struct xferk_remote, hobj);
	/* Its exporter revoked it (its chunks would fail unposted). */
	if (READ_ONCE(rm->error) == -ESTALE)
		return -ESTALE;
	ret = xferk_range_check(f->offset, f->len, r->len);
	if (!ret)
		ret = xferk_range_check(f->remote_offset, f->len, rm->len);
	if (ret)
		return ret;
	if (f->opcode == XFERK_OP_WRITE ?
	    !(r->access & XFERK_ACCESS_LOCAL_SRC) ||
	    !(rm->access & XFERK_ACCESS_REMOTE_WRITE) :
	    !(r->access & XFERK_ACCESS_LOCAL_DST) ||
	    !(rm->access & XFERK_ACCESS_REMOTE_READ))
		return -EACCES;
	regions[i] = r;
	remotes[i] = rm;
	return 0;
}

/*
 * Does fragment @i (> 0) continue fragment @i - 1, so that one chunk may
 * carry bytes of both? Same region, remote and opcode, and the bytes
 * follow each other on both sides.
 */
static bool frag_continues(const struct xferk_frag *frags,
			   struct xferk_region **regions,
			   struct xferk_remote **remotes, u32 i)
{
	const struct xferk_frag *p = &frags[i - 1], *f = &frags[i];

	return regions[i] == regions[i - 1] && remotes[i] == remotes[i - 1] &&
	       f->opcode == p->opcode && f->offset == p->offset + p->len &&
	       f->remote_offset == p->remote_offset + p->len;
}

/* The end of the run of fragments from @i on that continue each other. */
static u32 frag_run_end(const struct xferk_frag *frags,
			struct xferk_region **regions,
			struct xferk_remote **remotes, u32 nr, u32 i)
{
	for (i++; i < nr && frag_continues(frags, regions, remotes, i); i++)
		;
	return i;
}

/*
 * Cuts the run frags[0..@nr) (fragments that continue each other, on @r
 * and @rm) into chunks as one range: a chunk may end inside a fragment or
 * carry the ends of several (@frags_done).
 */
static void op_fill_run(struct xferk_op *op, u32 *next,
			const struct xferk_frag *frags, u32 nr,
			struct xferk_region *r, struct xferk_remote *rm)
{
	u64 done = 0, run_len = 0, frag_end = frags[0].len, max_bytes;
	u32 f = 0, i, max_pages;

	xferk_remote_limits(rm, &max_pages, &max_bytes);
	for (i = 0; i < nr; i++)
		run_len += frags[i].len;
	while (done < run_len) {
		struct xferk_chunk *ch = &op->chunks[(*next)++];
		u64 len = xferk_chunk_len(r->addr + frags[0].offset + done,
					  run_len - done, max_pages, max_bytes);

		INIT_LIST_HEAD(&ch->node);
		ch->op = op;
		ch->wr.region = r;
		ch->remote = rm;
		xferk_region_get(r);
		xferk_remote_get(rm);
		ch->rail = xferk_remote_pick_rail(rm);
		ch->wr.offset = frags[0].offset + done;
		ch->wr.len = len;
		ch->wr.remote_addr = xferk_chunk_remote(ch)->iova +
				     frags[0].remote_offset + done;
		ch->wr.opcode = frags[0].opcode;
		done += len;
		for (; f < nr && frag_end <= done; f++) {
			ch->frags_done++;
			if (f + 1 < nr)
				frag_end += frags[f + 1].len;
		}
	}
}

/*
 * The distinct connections of @nr remotes and their rails, with a
 * reference each, into @op->conns (sized for the rails of each run of
 * fragments on one remote). Return: 0 or -ENOMEM.
 */
static int op_collect_conns(struct xferk_op *op, struct xferk_remote **remotes,
			    u32 nr)
{
	u32 i, j, k, n = 0;

	for (i = 0; i < nr; i++)
		if (!i || remotes[i] != remotes[i - 1])
			n += xferk_remote_nr_rails(remotes[i]);
	op->conns = kvmalloc_array(n, sizeof(*op->conns), XFERK_GFP_USER);
	if (!op->conns)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		if (i && remotes[i] == remotes[i - 1])
			continue;
		for (k = 0; k < xferk_remote_nr_rails(remotes[i]); k++) {
			struct xferk_conn *c =
				xferk_remote_rail_conn(remotes[i], k);

			for (j = 0; j < op->nr_conns && op->conns[j] != c; j++)
				;
			if (j < op->nr_conns)
				continue;
			xferk_conn_get(c);
			op->conns[op->nr_conns++] = c;
		}
	}
	return 0;
}

/*
 * Makes the DMA maps of the op's regions for the devices of the sessions
 * (rails included) their fragments go to, before the op is visible and
 * outside every session's lock: a large region's first post would
 * otherwise map all of its pages under the posting session's lock,
 * stalling every tenant's posts and completions there. Best effort for
 * user memory: a map that could not be made now is made by the post. A
 * dma-buf region's is made only here (@nowait: not at all, -EAGAIN).
 * Return: 0, or what the transport's .map_region returns for a dma-buf
 * region.
 */
static int op_map_regions(struct xferk_region **regions,
			  struct xferk_remote **remotes, u32 nr, bool nowait)
{
	struct xferk_conn *c;
	u32 i, k;
	int ret;

	for (i = 0; i < nr; i++) {
		if (i && regions[i] == regions[i - 1] &&
		    remotes[i] == remotes[i - 1])
			continue;
		for (k = 0; k < xferk_remote_nr_rails(remotes[i]); k++) {
			c = xferk_remote_rail_conn(remotes[i], k);
			if (!c->transport->map_region)
				continue;
			ret = c->transport->map_region(&c->path, regions[i],
						       nowait);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/*
 * Around the admission queue: every chunk to its connection now, in
 * batches. The caller's reference keeps the op; a batch's chunks may be
 * complete once it was queued, the ones after it cannot.
 */
static void op_queue_direct(struct xferk_op *op)
{
	struct xferk_chunk *batch[XFERK_POST_BATCH];
	u32 i, n = 0;

	for (i = 0; i < op->nr_chunks; i++) {
		batch[n++] = &op->chunks[i];
		if (n == ARRAY_SIZE(batch) || i + 1 == op->nr_chunks) {
			xferk_chunks_queue(batch, n);
			n = 0;
		}
	}
}

/**
 * xferk_op_submit() - validate a batch, publish it as an op and start it
 * @s: the submitting file
 * @a: the submit argument (kernel copy), its flags, priority, fragment
 *	count and size and deadline checked by the front
 *	(xferk_file_submit()); @a->op is set on success
 * @settle: the command to complete when the op settles, or NULL
 *
 * All or nothing: on error nothing was published. Every bound is checked
 * before the chunks are allocated, and the work is bounded by them.
 *
 * Return: 0, or a negative errno.
 */
int xferk_op_submit(const struct xferk_submitter *s, struct xferk_ioc_submit *a,
		    const struct xferk_op_settle *settle)
{
	struct xferk_region **regions = NULL;
	struct xferk_remote **remotes = NULL;
	struct xferk_notify *notify = NULL;
	struct xferk_group *group = NULL;
	struct xferk_frag *frags;
	struct xferk_op *op;
	u64 total_bytes = 0, nr_chunks = 0;
	u32 i, j, end, next = 0;
	ktime_t deadline;
	int ret;

	deadline = xferk_deadline_from_user(a->deadline_ns);

	frags = kvmalloc_array(a->nr_frags, sizeof(*frags), XFERK_GFP_USER);
	regions = kvmalloc_array(a->nr_frags, sizeof(*regions),
				 XFERK_GFP_USER);
	remotes = kvmalloc_array(a->nr_frags, sizeof(*remotes),
				 XFERK_GFP_USER);
	op = kzalloc(sizeof(*op), XFERK_GFP_USER);
	if (!frags || !regions || !remotes || !op) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = copy_frags(frags, a);
	if (ret)
		goto out_free;

	/* Validate everything before publishing anything. */
	mutex_lock(s->lock);
	for (i = 0; i < a->nr_frags; i++) {
		ret = check_frag(s, frags, i, regions, remotes);
		if (ret)
			goto out_unlock;
		/* Each length is within its region: no sum can wrap. */
		total_bytes += frags[i].len;
		if (total_bytes > XFERK_MAX_OP_BYTES) {
			ret = -E2BIG;
			goto out_unlock;
		}
		if (frags[i].opcode == XFERK_OP_READ)
			op->read_bytes += frags[i].len;
	}
	/* Runs of fragments that continue each other are cut as one range. */
	for (i = 0; i < a->nr_frags; i = end) {
		u64 run_len = 0, max_bytes;
		u32 max_pages;

		end = frag_run_end(frags, regions, remotes, a->nr_frags, i);
		for (j = i; j < end; j++)
			run_len += frags[j].len;
		xferk_remote_limits(remotes[i], &max_pages, &max_bytes);
		nr_chunks += xferk_chunk_count(regions[i]->addr + frags[i].offset,
					       run_len, max_pages, max_bytes,
					       XFERK_MAX_OP_WRS - nr_chunks);
		if (nr_chunks > XFERK_MAX_OP_WRS) {
			ret = -E2BIG;
			goto out_unlock;
		}
	}
	if (a->group) {
		struct xferk_hobj *ho = xferk_handle_lookup(s->handles,
							    a->group,
							    XFERK_H_GROUP);

		if (IS_ERR(ho)) {
			ret = PTR_ERR(ho);
			goto out_unlock;
		}
		group = container_of(ho, struct xferk_group, hobj);
	}
	/*
	 * Before anything is charged or admitted: a non-blocking issue may
	 * end here with -EAGAIN, to be issued again from a worker.
	 */
	ret = op_map_regions(regions, remotes, a->nr_frags,
			     settle && settle->nowait);
	if (ret)
		goto out_unlock;
	/* Its notification goes to the target of its last fragment. */
	if (a->flags & XFERK_SUBMIT_NOTIFY) {
		notify = xferk_notify_alloc(remotes[a->nr_frags - 1], s->acct,
					    XFERK_EVENT_DATA, a->notify_tag);
		if (IS_ERR(notify)) {
			ret = PTR_ERR(notify);
			notify = NULL;
			goto out_unlock;
		}
	}
	op->qacct = s->acct;
	op->ready = s->ready;
	op->nr_chunks = nr_chunks;
	xferk_life_init(&op->life, total_bytes, a->nr_frags, nr_chunks,
			ktime_get());
	/* The limits first: the file's chunk budget and the queue. */
	ret = xferk_charge(&op->qacct->chunks, nr_chunks, s->max_chunks,
			   -EBUSY);
	if (ret)
		goto out_unlock;
	ret = xferk_queue_admit(&op->q, op->life.total_bytes, op->nr_chunks,
				s->acct, a, remotes);
	if (ret)
		goto out_uncharge;
	op->chunks = kvcalloc(nr_chunks, sizeof(*op->chunks), XFERK_GFP_USER);
	op->q.chunks = op->chunks;
	if (!op->chunks || op_collect_conns(op, remotes, a->nr_frags)) {
		ret = -ENOMEM;
		goto out_unadmit;
	}
	kref_init(&op->ref);
	spin_lock_init(&op->lock);
	init_waitqueue_head(&op->wq);
	INIT_WORK(&op->cancel_work, op_drain_work);
	hrtimer_init(&op->drain_timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	op->drain_timer.function = op_drain_timer_fired;
	INIT_WORK(&op->expire_work, op_expire_work);
	hrtimer_init(&op->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	op->timer.function = op_deadline_fired;
	op->owner = task_tgid_nr(current);
	op->user_data = a->user_data;
	op->submit_flags = a->flags;
	op->drain_budget_ns = a->drain_budget_ns;
	op->deadline = deadline;
	for (i = 0; i < a->nr_frags; i = end) {
		end = frag_run_end(frags, regions, remotes, a->nr_frags, i);
		op_fill_run(op, &next, &frags[i], end - i, regions[i],
			    remotes[i]);
	}
	ret = s->publish(s, &op->hobj);
	if (ret)
		goto out_unfill;
	/* Last: joining cannot be undone once an abort may see the op. */
	if (group) {
		ret = xferk_group_join(group, op, remotes, a->nr_frags,
				       s->acct);
		if (ret) {
			xferk_handle_remove_obj(s->handles, op->hobj.handle,
						&op->hobj);
			goto out_unfill;
		}
	}
	op->notify = notify;
	notify = NULL;
	a->op = op->hobj.handle;
	op->id = a->op;
	op->q.id = op->id;
	trace_xferk_op_submit(op->id, total_bytes, nr_chunks, a->priority,
			      a->group);
	/*
	 * Visible once the lock is dropped: another thread may cancel or
	 * release it then. So it is complete before: the physical reference,
	 * the timer, the parked command; and this function's own reference
	 * keeps it until it is started.
	 */
	kref_get(&s->acct->ref);
	xferk_ready_get(s->ready);
	kref_get(&op->ref);	/* physical reference */
	kref_get(&op->ref);	/* until started, below */
	if (settle) {
		op->settled = settle->settled;
		settle->park(op, settle->cmd, a->op);
	}
	spin_lock(&xferk_ops_lock);
	list_add_tail(&op->node, &xferk_ops);
	spin_unlock(&xferk_ops_lock);
	atomic64_inc(&xferk_stats.ops_submitted);
	atomic64_inc(&xferk_stats.ops_live);
	mutex_unlock(s->lock);

	if (deadline != KTIME_MAX)
		hrtimer_start(&op->timer, deadline, HRTIMER_MODE_ABS);
	if (op->q.qdev)
		xferk_queue_start(&op->q);
	else
		op_queue_direct(op);
	xferk_op_put(op);
	op = NULL;
	ret = 0;
	goto out_free;

out_unfill:
	op_put_chunks(op);
out_unadmit:
	xferk_queue_unadmit(&op->q);
out_uncharge:
	atomic_long_sub(nr_chunks, &op->qacct->chunks);
out_unlock:
	mutex_unlock(s->lock);
	if (notify)
		xferk_notify_free(notify);
	if (op) {
		for (i = 0; i < op->nr_conns; i++)
			xferk_conn_put(op->conns[i]);
		kvfree(op->conns);
		kvfree(op->chunks);
	}
out_free:
	kfree(op);
	kvfree(remotes);
	kvfree(regions);
	kvfree(frags);
	return ret;
}
