// SPDX-License-Identifier: GPL-2.0
/*
 * The commands on groups: GROUP_CREATE, GROUP_ABORT, GROUP_WAIT and
 * GROUP_QUERY (front layer). Each checks its argument, looks the group up
 * in the file's handle table (a new one counts against the file's handle
 * limit) and calls the requests layer (group.c).
 *
 * Locking: the file's lock to look a group up and take a reference on it
 * (group_get()), and for the abort's closing of the group (its joins run
 * under it); waits and drains run with no lock held.
 */
#include <linux/err.h>

#include "front.h"
#include "handle.h"
#include "lifecycle.h"
#include "limits.h"
#include "op.h"

int xferk_ioctl_group_create(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_group_create *a = &arg->group_create;
	struct xferk_group *g;
	int ret;

	if (a->flags || !xferk_is_zeroed(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (!xferk_handle_room_limited(xf, XFERK_H_GROUP))
		return -EMFILE;
	g = xferk_group_create(a->tag);
	if (!g)
		return -ENOMEM;
	mutex_lock(&xf->lock);
	ret = xferk_handle_add_limited(xf, &g->hobj, XFERK_H_GROUP);
	if (ret) {
		mutex_unlock(&xf->lock);
		xferk_group_put(g);
		return ret;
	}
	a->handle = g->hobj.handle;
	a->generation = g->gen;
	xferk_unlock_published(xf, a->handle, XFERK_H_GROUP);
	return 0;
}

/* Looks up a group and takes a reference, so the file lock can be dropped. */
static struct xferk_group *group_get(struct xferk_file *xf, u64 handle)
{
	struct xferk_group *g;
	struct xferk_hobj *ho;

	mutex_lock(&xf->lock);
	ho = xferk_handle_lookup(&xf->handles, handle, XFERK_H_GROUP);
	if (IS_ERR(ho)) {
		mutex_unlock(&xf->lock);
		return ERR_CAST(ho);
	}
	g = container_of(ho, struct xferk_group, hobj);
	kref_get(&g->ref);
	mutex_unlock(&xf->lock);
	return g;
}

/*
 * GROUP_ABORT, _WAIT, _QUERY: @op does the work; the snapshot goes back
 * with the result, and the result follows the snapshot: 0 exactly when it
 * shows what ABORT (every op physical) or WAIT waited for, else
 * -ETIMEDOUT (or the signal, -ENOMEM).
 */
static int group_cmd(struct xferk_file *xf, struct xferk_ioc_group *a,
		     int (*op)(struct xferk_file *xf, struct xferk_group *g,
			       struct xferk_ioc_group *a),
		     bool physical)
{
	struct xferk_group *g = group_get(xf, a->group);
	int ret;

	if (IS_ERR(g))
		return PTR_ERR(g);
	ret = op ? op(xf, g, a) : 0;
	xferk_group_snapshot(g, &a->snap);
	xferk_group_put(g);
	if (!op || ret == -ERESTARTSYS || ret == -ENOMEM)
		return ret;
	return xferk_group_snapshot_settled(&a->snap, physical) ? 0 : -ETIMEDOUT;
}

static int group_abort(struct xferk_file *xf, struct xferk_group *g,
		       struct xferk_ioc_group *a)
{
	return xferk_group_abort(g, &xf->lock,
				 xferk_deadline_from_user(a->deadline_ns));
}

static int group_wait(struct xferk_file *xf, struct xferk_group *g,
		      struct xferk_ioc_group *a)
{
	return xferk_group_wait(g, a->flags & XFERK_WAIT_PHYSICAL,
				xferk_deadline_from_user(a->deadline_ns));
}

int xferk_ioctl_group_abort(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	if (arg->group.flags)
		return -EINVAL;
	return group_cmd(xf, &arg->group, group_abort, true);
}

int xferk_ioctl_group_wait(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	if (arg->group.flags & ~XFERK_WAIT_PHYSICAL)
		return -EINVAL;
	return group_cmd(xf, &arg->group, group_wait,
			 arg->group.flags & XFERK_WAIT_PHYSICAL);
}

int xferk_ioctl_group_query(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	if (arg->group.flags || arg->group.deadline_ns)
		return -EINVAL;
	return group_cmd(xf, &arg->group, NULL, false);
}
