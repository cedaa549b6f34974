// SPDX-License-Identifier: GPL-2.0
/*
 * Limits on what a user, a file or a peer may make the kernel hold, as
 * module parameters (writable at run time, each checked against its
 * range). Documentation/security.md lists them with their errnos:
 *
 *   handles of one open file, per kind      EMFILE at the limit
 *   pages one file's exports cover          EMFILE at the limit
 *   pages one file's dma-buf regions span   EMFILE at the limit
 *   connection attempts one file started    EMFILE at max_conns_per_file
 *   chunks of one file's unfinished ops     EBUSY at the limit
 *   passive connections on the host         the peer is refused
 *
 * Memory a user causes is also charged to the user's memory cgroup
 * (XFERK_GFP_USER: ENOMEM at its limit), and pinned pages to
 * RLIMIT_MEMLOCK (region.c).
 */
#include <linux/moduleparam.h>

#include "conn.h"
#include "front.h"
#include "handle.h"
#include "limits.h"
#include "op.h"
#include "queue.h"
#include "stats.h"
#include "transport.h"

/* Indexed by enum xferk_handle_kind. */
u32 xferk_handle_limit[XFERK_H_KINDS] = {
	[XFERK_H_REGION] = 4096,
	[XFERK_H_CONN] = 256,
	[XFERK_H_EXPORT] = 16384,
	[XFERK_H_REMOTE] = 16384,
	[XFERK_H_OP] = 16384,
	[XFERK_H_GROUP] = 4096,
};

static int handle_limit_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, XFERK_HANDLES_MAX);
}

static const struct kernel_param_ops handle_limit_ops = {
	.set = handle_limit_set,
	.get = param_get_uint,
};

module_param_cb(max_regions_per_file, &handle_limit_ops,
		&xferk_handle_limit[XFERK_H_REGION], 0644);
MODULE_PARM_DESC(max_regions_per_file,
		 "Region handles one open file may hold (default 4096, at most 65535)");
module_param_cb(max_conns_per_file, &handle_limit_ops,
		&xferk_handle_limit[XFERK_H_CONN], 0644);
MODULE_PARM_DESC(max_conns_per_file,
		 "Connection handles one open file may hold (default 256, at most 65535)");
module_param_cb(max_exports_per_file, &handle_limit_ops,
		&xferk_handle_limit[XFERK_H_EXPORT], 0644);
MODULE_PARM_DESC(max_exports_per_file,
		 "Export handles one open file may hold (default 16384, at most 65535)");
module_param_cb(max_imports_per_file, &handle_limit_ops,
		&xferk_handle_limit[XFERK_H_REMOTE], 0644);
MODULE_PARM_DESC(max_imports_per_file,
		 "Remote handles (imports) one open file may hold (default 16384, at most 65535)");
module_param_cb(max_ops_per_file, &handle_limit_ops,
		&xferk_handle_limit[XFERK_H_OP], 0644);
MODULE_PARM_DESC(max_ops_per_file,
		 "Op handles one open file may hold, finished ones included until released (default 16384, at most 65535)");
module_param_cb(max_groups_per_file, &handle_limit_ops,
		&xferk_handle_limit[XFERK_H_GROUP], 0644);
MODULE_PARM_DESC(max_groups_per_file,
		 "Group handles one open file may hold (default 4096, at most 65535)");

static int chunk_limit_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, 1 << 24);
}

static const struct kernel_param_ops chunk_limit_ops = {
	.set = chunk_limit_set,
	.get = param_get_uint,
};

module_param_cb(max_chunks_per_file, &chunk_limit_ops,
		&xferk_max_chunks_per_file, 0644);
MODULE_PARM_DESC(max_chunks_per_file,
		 "Work requests of one open file's ops that are not physically complete (default 262144; an op needing more fails with EBUSY)");

unsigned long xferk_max_dmabuf_pages_per_file = 1UL << 24;
module_param_named(max_dmabuf_pages_per_file, xferk_max_dmabuf_pages_per_file,
		   ulong, 0644);
MODULE_PARM_DESC(max_dmabuf_pages_per_file,
		 "Pages one open file's dma-buf regions may span, summed until each region goes (default 16777216: 64 GiB)");

unsigned long xferk_max_export_pages_per_file = 1UL << 24;
module_param_named(max_export_pages_per_file, xferk_max_export_pages_per_file,
		   ulong, 0644);
MODULE_PARM_DESC(max_export_pages_per_file,
		 "Pages one open file's exports may cover, summed over its exports (default 16777216: 64 GiB)");

static int passive_limit_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, 65536);
}

static const struct kernel_param_ops passive_limit_ops = {
	.set = passive_limit_set,
	.get = param_get_uint,
};

module_param_cb(max_passive_conns, &passive_limit_ops,
		&xferk_max_passive_conns, 0644);
MODULE_PARM_DESC(max_passive_conns,
		 "Connections peers may open to this host's listener; more are refused (default 256, 0: none)");

unsigned int xferk_qps_per_session = 1;

static int qps_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, XFERK_MAX_QPS);
}

static const struct kernel_param_ops qps_ops = {
	.set = qps_set,
	.get = param_get_uint,
};

module_param_cb(qps_per_session, &qps_ops, &xferk_qps_per_session, 0644);
MODULE_PARM_DESC(qps_per_session,
		 "RC QPs per path of a new session whose CONNECT names none (default 1, at most 8)");

module_param_cb(max_peer_qps, &qps_ops, &xferk_max_peer_qps, 0644);
MODULE_PARM_DESC(max_peer_qps,
		 "Most RC QPs per path a session a peer opens to this host gets (default 4, at most 8)");

/* 100 ms to one day. */
static int timeout_ms_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 100, 86400000);
}

static const struct kernel_param_ops timeout_ms_ops = {
	.set = timeout_ms_set,
	.get = param_get_uint,
};

module_param_cb(passive_idle_ms, &timeout_ms_ops, &xferk_passive_idle_ms, 0644);
MODULE_PARM_DESC(passive_idle_ms,
		 "A connection a peer opened is closed if no local user claims it within this time (default 300000)");
module_param_cb(handshake_timeout_ms, &timeout_ms_ops,
		&xferk_handshake_timeout_ms, 0644);
MODULE_PARM_DESC(handshake_timeout_ms,
		 "A connection a peer opened is closed if its handshake does not finish within this time (default 10000)");

/* A time in milliseconds: 0, or from @min to @max. */
static int ms_param_set(const char *val, const struct kernel_param *kp,
			unsigned int min, unsigned int max)
{
	unsigned int ms;
	int ret = kstrtouint(val, 0, &ms);

	if (ret)
		return ret;
	if (ms && (ms < min || ms > max))
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, ms);
	return 0;
}

/* 0 (off), or 100 ms to one minute. */
static int keepalive_ms_set(const char *val, const struct kernel_param *kp)
{
	return ms_param_set(val, kp, 100, 60000);
}

static const struct kernel_param_ops keepalive_ms_ops = {
	.set = keepalive_ms_set,
	.get = param_get_uint,
};

module_param_cb(keepalive_ms, &keepalive_ms_ops, &xferk_keepalive_ms, 0644);
MODULE_PARM_DESC(keepalive_ms,
		 "Every RDMA connection probes its peer this often, so that an end whose peer is gone goes down by itself; 0 disables (default 2000)");

/* 0 (never), or 100 ms to one day. */
static int session_idle_ms_set(const char *val, const struct kernel_param *kp)
{
	return ms_param_set(val, kp, 100, 86400000);
}

static const struct kernel_param_ops session_idle_ms_ops = {
	.set = session_idle_ms_set,
	.get = param_get_uint,
};

module_param_cb(session_idle_ms, &session_idle_ms_ops, &xferk_session_idle_ms,
		0644);
MODULE_PARM_DESC(session_idle_ms,
		 "A session this host initiated goes down once no CONNECT handle, export or import has used it for this long; 0: never (default 0)");

/*
 * 0 (off), or 5 s (about a work request's own retry window: 7 tries of
 * 0.54 s) to ten minutes.
 */
static int lost_completion_ms_set(const char *val,
				  const struct kernel_param *kp)
{
	return ms_param_set(val, kp, 5000, 600000);
}

static const struct kernel_param_ops lost_completion_ms_ops = {
	.set = lost_completion_ms_set,
	.get = param_get_uint,
};

module_param_cb(lost_completion_ms, &lost_completion_ms_ops,
		&xferk_lost_completion_ms, 0644);
MODULE_PARM_DESC(lost_completion_ms,
		 "A work request outstanding this long, or after a later one of its QP completed, lost its completion: the path is replaced; 0: off (default 30000)");

/* 0 (no wait) to ten minutes: the teardown adds its own wait to it. */
static int flush_timeout_ms_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, 600000);
}

static const struct kernel_param_ops flush_timeout_ms_ops = {
	.set = flush_timeout_ms_set,
	.get = param_get_uint,
};

module_param_cb(flush_timeout_ms, &flush_timeout_ms_ops,
		&xferk_flush_timeout_ms, 0644);
MODULE_PARM_DESC(flush_timeout_ms,
		 "Teardown: how long to wait, once the QP is drained, for work requests whose completion is missing before the QP is destroyed (default 5000, at most 600000)");

/* 0 (paths are not replaced), or one second to ten minutes. */
static int reconnect_ms_set(const char *val, const struct kernel_param *kp)
{
	return ms_param_set(val, kp, 1000, 600000);
}

static const struct kernel_param_ops reconnect_ms_ops = {
	.set = reconnect_ms_set,
	.get = param_get_uint,
};

module_param_cb(reconnect_ms, &reconnect_ms_ops, &xferk_reconnect_ms, 0644);
MODULE_PARM_DESC(reconnect_ms,
		 "A session whose path died gets this long to make a new one before it goes down; 0: a path's death ends the session (default 30000)");

/* 0 (no limit), or at most a minute. */
static int escalation_interval_ms_set(const char *val,
				      const struct kernel_param *kp)
{
	return ms_param_set(val, kp, 1, 60000);
}

static const struct kernel_param_ops escalation_interval_ms_ops = {
	.set = escalation_interval_ms_set,
	.get = param_get_uint,
};

module_param_cb(escalation_interval_ms, &escalation_interval_ms_ops,
		&xferk_escalation_interval_ms, 0644);
MODULE_PARM_DESC(escalation_interval_ms,
		 "A file's cancels kill a path (flushing every user's work on it) at most once per this interval, and so do all cancels on one session's path; 0: no limit (default 1000)");

static void count_reject(int ret)
{
	if (ret == -EMFILE)
		atomic64_inc(&xferk_stats.limit_rejects);
}

/**
 * xferk_handle_add_limited() - xferk_handle_add() under the file's limits
 * @xf: the file (its lock held)
 * @obj: the object
 * @kind: enum xferk_handle_kind
 *
 * Return: 0, -EMFILE at the limit of @kind, or -ENOMEM.
 */
int xferk_handle_add_limited(struct xferk_file *xf, struct xferk_hobj *obj,
			     u8 kind)
{
	int ret;

	lockdep_assert_held(&xf->lock);
	ret = xferk_handle_add(&xf->handles, obj, kind,
			       READ_ONCE(xferk_handle_limit[kind]));
	count_reject(ret);
	return ret;
}

/**
 * xferk_handle_room_limited() - may the file hold one more handle of @kind?
 * @xf: the file
 * @kind: enum xferk_handle_kind
 *
 * For a check before expensive work; the add checks again.
 *
 * Return: true if there is room.
 */
bool xferk_handle_room_limited(struct xferk_file *xf, u8 kind)
{
	bool room = xferk_handle_room(&xf->handles, kind,
				      READ_ONCE(xferk_handle_limit[kind]));

	if (!room)
		count_reject(-EMFILE);
	return room;
}
