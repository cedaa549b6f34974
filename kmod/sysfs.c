// SPDX-License-Identifier: GPL-2.0
/*
 * Attributes of /sys/class/misc/xferk; each file is documented in
 * Documentation/ABI/testing/sysfs-class-misc-xferk.
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "front.h"
#include "queue.h"
#include "region.h"
#include "sched.h"
#include "stats.h"
#include "transport.h"
#include "xferk.h"

static ssize_t abi_version_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", XFERK_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

static ssize_t features_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0x%llx\n", (unsigned long long)XFERK_FEATURES);
}
static DEVICE_ATTR_RO(features);

static ssize_t quarantine_limit_bytes_show(struct device *dev,
					   struct device_attribute *attr,
					   char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(xferk_quarantine_limit_bytes));
}

static ssize_t quarantine_limit_bytes_store(struct device *dev,
					    struct device_attribute *attr,
					    const char *buf, size_t len)
{
	u64 v;
	int ret = kstrtou64(buf, 0, &v);

	if (ret)
		return ret;
	WRITE_ONCE(xferk_quarantine_limit_bytes, v);
	return len;
}
static DEVICE_ATTR_RW(quarantine_limit_bytes);

static struct attribute *xferk_dev_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_features.attr,
	&dev_attr_quarantine_limit_bytes.attr,
	NULL,
};

static const struct attribute_group xferk_dev_group = {
	.attrs = xferk_dev_attrs,
};

/* stats/: one counter per file, a decimal number. */
#define XFERK_STAT_ATTR(_name)						\
static ssize_t _name##_show(struct device *dev,				\
			    struct device_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%lld\n",				\
			  atomic64_read(&xferk_stats._name));		\
}									\
static DEVICE_ATTR_RO(_name)

XFERK_STAT_ATTR(ops_submitted);
XFERK_STAT_ATTR(ops_succeeded);
XFERK_STAT_ATTR(ops_failed);
XFERK_STAT_ATTR(ops_timed_out);
XFERK_STAT_ATTR(ops_live);
XFERK_STAT_ATTR(ops_orphaned);
XFERK_STAT_ATTR(bytes_read);
XFERK_STAT_ATTR(bytes_written);
XFERK_STAT_ATTR(pinned_pages);
XFERK_STAT_ATTR(quarantined_pages);
XFERK_STAT_ATTR(regions);
XFERK_STAT_ATTR(dmabuf_regions);
XFERK_STAT_ATTR(peers_connected);
XFERK_STAT_ATTR(exports);
XFERK_STAT_ATTR(cancel_requests);
XFERK_STAT_ATTR(drains);
XFERK_STAT_ATTR(drain_timeouts);
XFERK_STAT_ATTR(quarantine_events);
XFERK_STAT_ATTR(late_completions);
XFERK_STAT_ATTR(ops_drained_after_exit);
XFERK_STAT_ATTR(quarantine_limit_rejects);
XFERK_STAT_ATTR(uring_parked);
XFERK_STAT_ATTR(uring_completed);
XFERK_STAT_ATTR(uring_submits_deferred);
XFERK_STAT_ATTR(uring_exit_cancels);
XFERK_STAT_ATTR(conns_rejected);
XFERK_STAT_ATTR(conns_reaped);
XFERK_STAT_ATTR(qp_errors);
XFERK_STAT_ATTR(tokens_rejected);
XFERK_STAT_ATTR(limit_rejects);
XFERK_STAT_ATTR(keepalive_failures);

/* stats/path_deaths_<cause>: one file per enum xferk_path_cause */
#define XFERK_PATH_DEATHS_ATTR(_cause, _index)				\
static ssize_t path_deaths_##_cause##_show(struct device *dev,		\
					   struct device_attribute *attr,	\
					   char *buf)			\
{									\
	return sysfs_emit(buf, "%lld\n",				\
			  atomic64_read(&xferk_stats.path_deaths[_index])); \
}									\
static DEVICE_ATTR_RO(path_deaths_##_cause)

XFERK_PATH_DEATHS_ATTR(qp, XFERK_PATH_QP);
XFERK_PATH_DEATHS_ATTR(peer, XFERK_PATH_PEER);
XFERK_PATH_DEATHS_ATTR(keepalive, XFERK_PATH_KEEPALIVE);
XFERK_PATH_DEATHS_ATTR(cancel, XFERK_PATH_CANCEL);
XFERK_PATH_DEATHS_ATTR(lost, XFERK_PATH_LOST);
XFERK_STAT_ATTR(reconnect_attempts);
XFERK_STAT_ATTR(reconnects);
XFERK_STAT_ATTR(chunks_reposted);
XFERK_STAT_ATTR(chunks_rerouted);
XFERK_STAT_ATTR(completions_moderated);
XFERK_STAT_ATTR(fences_asked);
XFERK_STAT_ATTR(fences_answered);
XFERK_STAT_ATTR(fences_confirmed);
XFERK_STAT_ATTR(fences_unknown);
XFERK_STAT_ATTR(dma_maps_in_post);
XFERK_STAT_ATTR(sessions_stale);
XFERK_STAT_ATTR(sessions_idle);
XFERK_STAT_ATTR(conns_crossed);
XFERK_STAT_ATTR(escalations_limited);
XFERK_STAT_ATTR(windows_opened);
XFERK_STAT_ATTR(closes_cooperative);
XFERK_STAT_ATTR(closes_forced);
XFERK_STAT_ATTR(close_ack_ns_total);
XFERK_STAT_ATTR(close_ack_ns_max);
XFERK_STAT_ATTR(revokes_answered);
XFERK_STAT_ATTR(msgs_invalid);
XFERK_STAT_ATTR(groups_aborted);
XFERK_STAT_ATTR(notifies_sent);
XFERK_STAT_ATTR(notifies_received);
XFERK_STAT_ATTR(notifies_duplicate);
XFERK_STAT_ATTR(notifies_unclaimed);
XFERK_STAT_ATTR(events_dropped);
XFERK_STAT_ATTR(destroy_retries);

static struct attribute *xferk_stats_attrs[] = {
	&dev_attr_ops_submitted.attr,
	&dev_attr_ops_succeeded.attr,
	&dev_attr_ops_failed.attr,
	&dev_attr_ops_timed_out.attr,
	&dev_attr_ops_live.attr,
	&dev_attr_ops_orphaned.attr,
	&dev_attr_bytes_read.attr,
	&dev_attr_bytes_written.attr,
	&dev_attr_pinned_pages.attr,
	&dev_attr_quarantined_pages.attr,
	&dev_attr_regions.attr,
	&dev_attr_dmabuf_regions.attr,
	&dev_attr_peers_connected.attr,
	&dev_attr_exports.attr,
	&dev_attr_cancel_requests.attr,
	&dev_attr_drains.attr,
	&dev_attr_drain_timeouts.attr,
	&dev_attr_quarantine_events.attr,
	&dev_attr_late_completions.attr,
	&dev_attr_ops_drained_after_exit.attr,
	&dev_attr_quarantine_limit_rejects.attr,
	&dev_attr_uring_parked.attr,
	&dev_attr_uring_completed.attr,
	&dev_attr_uring_submits_deferred.attr,
	&dev_attr_uring_exit_cancels.attr,
	&dev_attr_conns_rejected.attr,
	&dev_attr_conns_reaped.attr,
	&dev_attr_qp_errors.attr,
	&dev_attr_tokens_rejected.attr,
	&dev_attr_limit_rejects.attr,
	&dev_attr_keepalive_failures.attr,
	&dev_attr_path_deaths_qp.attr,
	&dev_attr_path_deaths_peer.attr,
	&dev_attr_path_deaths_keepalive.attr,
	&dev_attr_path_deaths_cancel.attr,
	&dev_attr_path_deaths_lost.attr,
	&dev_attr_reconnect_attempts.attr,
	&dev_attr_reconnects.attr,
	&dev_attr_chunks_reposted.attr,
	&dev_attr_chunks_rerouted.attr,
	&dev_attr_completions_moderated.attr,
	&dev_attr_fences_asked.attr,
	&dev_attr_fences_answered.attr,
	&dev_attr_fences_confirmed.attr,
	&dev_attr_fences_unknown.attr,
	&dev_attr_dma_maps_in_post.attr,
	&dev_attr_sessions_stale.attr,
	&dev_attr_sessions_idle.attr,
	&dev_attr_conns_crossed.attr,
	&dev_attr_escalations_limited.attr,
	&dev_attr_windows_opened.attr,
	&dev_attr_closes_cooperative.attr,
	&dev_attr_closes_forced.attr,
	&dev_attr_close_ack_ns_total.attr,
	&dev_attr_close_ack_ns_max.attr,
	&dev_attr_revokes_answered.attr,
	&dev_attr_msgs_invalid.attr,
	&dev_attr_groups_aborted.attr,
	&dev_attr_notifies_sent.attr,
	&dev_attr_notifies_received.attr,
	&dev_attr_notifies_duplicate.attr,
	&dev_attr_notifies_unclaimed.attr,
	&dev_attr_events_dropped.attr,
	&dev_attr_destroy_retries.attr,
	NULL,
};

static const struct attribute_group xferk_stats_group = {
	.name = "stats",
	.attrs = xferk_stats_attrs,
};

/*
 * queue/: the admission queue's tunables (read-write, validated: a value
 * out of range is -EINVAL and changes nothing) and metrics (read-only,
 * summed over every device's queue). All under xferk_queue_lock.
 */
struct xferk_queue_attr {
	struct device_attribute attr;
	size_t offset;	/* in struct xferk_sched_limits, or struct xferk_sched */
	u8 size;	/* 4 or 8 */
	u64 min;
	u64 max;
	u64 unit;	/* stored value = written value * unit */
};

#define to_queue_attr(a)	container_of(a, struct xferk_queue_attr, attr)

static u64 field_get(const void *base, const struct xferk_queue_attr *qa)
{
	const void *p = base + qa->offset;

	return qa->size == 8 ? *(const u64 *)p : *(const u32 *)p;
}

static ssize_t tunable_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct xferk_queue_attr *qa = to_queue_attr(attr);
	u64 v;

	spin_lock(&xferk_queue_lock);
	v = field_get(&xferk_queue_limits, qa);
	spin_unlock(&xferk_queue_lock);
	return sysfs_emit(buf, "%llu\n", v / qa->unit);
}

static ssize_t tunable_store(struct device *dev, struct device_attribute *attr,
			     const char *buf, size_t len)
{
	struct xferk_queue_attr *qa = to_queue_attr(attr);
	struct xferk_sched_limits *lim = &xferk_queue_limits;
	struct xferk_sched_limits new;
	void *p = (void *)&new + qa->offset;
	u64 v;
	int ret = kstrtou64(buf, 0, &v);

	if (ret)
		return ret;
	if (v < qa->min || v > qa->max)
		return -EINVAL;
	spin_lock(&xferk_queue_lock);
	new = *lim;
	if (qa->size == 8)
		*(u64 *)p = v * qa->unit;
	else
		*(u32 *)p = v * qa->unit;
	/* The QP windows must fit the send queue, or chunks wait there. */
	if (new.qp_window + new.internal_reserved_wrs > XFERK_QP_CTXS) {
		spin_unlock(&xferk_queue_lock);
		return -EINVAL;
	}
	*lim = new;
	spin_unlock(&xferk_queue_lock);
	return len;
}

#define XFERK_TUNABLE(_name, _field, _min, _max, _unit)			\
static struct xferk_queue_attr qattr_##_name = {			\
	.attr = __ATTR(_name, 0644, tunable_show, tunable_store),	\
	.offset = offsetof(struct xferk_sched_limits, _field),		\
	.size = sizeof_field(struct xferk_sched_limits, _field),	\
	.min = _min, .max = _max, .unit = _unit,			\
}

XFERK_TUNABLE(weight_normal, weight[XFERK_PRIO_NORMAL], 1, 1000, 1);
XFERK_TUNABLE(weight_critical, weight[XFERK_PRIO_CRITICAL], 1, 1000, 1);
XFERK_TUNABLE(weight_bulk, weight[XFERK_PRIO_BULK], 1, 1000, 1);
XFERK_TUNABLE(quantum_bytes, quantum_bytes, 4096, 16 << 20, 1);
XFERK_TUNABLE(aging_ms, aging_ns, 1, 60000, NSEC_PER_MSEC);
XFERK_TUNABLE(max_queued_ops, max_queued_ops, 1, 1 << 20, 1);
XFERK_TUNABLE(max_queued_bytes, max_queued_bytes, 4096, 1ULL << 40, 1);
XFERK_TUNABLE(file_max_ops, file_max_ops, 1, 1 << 20, 1);
XFERK_TUNABLE(file_max_bytes, file_max_bytes, 4096, 1ULL << 40, 1);
XFERK_TUNABLE(internal_reserved_ops, internal_reserved_ops, 0, 1 << 16, 1);
XFERK_TUNABLE(qp_window, qp_window, 1, XFERK_QP_CTXS, 1);
XFERK_TUNABLE(qp_window_bytes_min, qp_window_bytes_min, 0, 1ULL << 40, 1);
XFERK_TUNABLE(qp_window_bytes_max, qp_window_bytes_max, 4096, 1ULL << 40, 1);
XFERK_TUNABLE(internal_reserved_wrs, internal_reserved_wrs, 0, XFERK_QP_CTXS, 1);
XFERK_TUNABLE(dev_window_bytes, dev_window_bytes, 4096, 1ULL << 40, 1);
XFERK_TUNABLE(op_window_bytes, op_window_bytes, 4096, 1ULL << 40, 1);
XFERK_TUNABLE(op_window_chunks, op_window_chunks, 1, 1 << 16, 1);
XFERK_TUNABLE(lookahead, lookahead, 1, 1024, 1);

static ssize_t metric_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct xferk_queue_attr *qa = to_queue_attr(attr);
	struct xferk_qdev *q;
	u64 sum = 0;

	spin_lock(&xferk_queue_lock);
	list_for_each_entry(q, &xferk_qdevs, node)
		sum += field_get(&q->sched, qa);
	spin_unlock(&xferk_queue_lock);
	return sysfs_emit(buf, "%llu\n", sum);
}

#define XFERK_METRIC(_name, _field)					\
static struct xferk_queue_attr qattr_##_name = {			\
	.attr = __ATTR(_name, 0444, metric_show, NULL),			\
	.offset = offsetof(struct xferk_sched, _field),			\
	.size = sizeof_field(struct xferk_sched, _field),		\
}

XFERK_METRIC(depth_normal, cls[XFERK_PRIO_NORMAL].ops);
XFERK_METRIC(depth_critical, cls[XFERK_PRIO_CRITICAL].ops);
XFERK_METRIC(depth_bulk, cls[XFERK_PRIO_BULK].ops);
XFERK_METRIC(depth_internal, cls[XFERK_PRIO_INTERNAL].ops);
XFERK_METRIC(bytes_normal, cls[XFERK_PRIO_NORMAL].bytes);
XFERK_METRIC(bytes_critical, cls[XFERK_PRIO_CRITICAL].bytes);
XFERK_METRIC(bytes_bulk, cls[XFERK_PRIO_BULK].bytes);
XFERK_METRIC(bytes_internal, cls[XFERK_PRIO_INTERNAL].bytes);
XFERK_METRIC(inflight_bytes, inflight_bytes);
XFERK_METRIC(inflight_chunks, inflight_chunks);
XFERK_METRIC(parked_bytes, parked_bytes);
XFERK_METRIC(enqueued, stats.enqueued);
XFERK_METRIC(dispatched, stats.dispatched);
XFERK_METRIC(completed, stats.completed);
XFERK_METRIC(cancelled, stats.cancelled);
XFERK_METRIC(aged, stats.aged);
XFERK_METRIC(rejects_queued_ops, stats.rejects[XFERK_REJECT_QUEUED_OPS]);
XFERK_METRIC(rejects_queued_bytes, stats.rejects[XFERK_REJECT_QUEUED_BYTES]);
XFERK_METRIC(rejects_file_ops, stats.rejects[XFERK_REJECT_FILE_OPS]);
XFERK_METRIC(rejects_file_bytes, stats.rejects[XFERK_REJECT_FILE_BYTES]);

/* A log2 histogram: XFERK_HIST_BUCKETS counts, bucket i is [2^i, 2^(i+1)) us. */
static ssize_t hist_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct xferk_queue_attr *qa = to_queue_attr(attr);
	u64 sum[XFERK_HIST_BUCKETS] = {};
	struct xferk_qdev *q;
	int i, n = 0;

	spin_lock(&xferk_queue_lock);
	list_for_each_entry(q, &xferk_qdevs, node)
		for (i = 0; i < XFERK_HIST_BUCKETS; i++)
			sum[i] += ((u64 *)((void *)&q->sched + qa->offset))[i];
	spin_unlock(&xferk_queue_lock);
	for (i = 0; i < XFERK_HIST_BUCKETS; i++)
		n += sysfs_emit_at(buf, n, "%llu%c", sum[i],
				   i + 1 < XFERK_HIST_BUCKETS ? ' ' : '\n');
	return n;
}

#define XFERK_HIST(_name, _field)					\
static struct xferk_queue_attr qattr_##_name = {			\
	.attr = __ATTR(_name, 0444, hist_show, NULL),			\
	.offset = offsetof(struct xferk_sched, _field),			\
}

XFERK_HIST(wait_hist_us, stats.wait_hist);
XFERK_HIST(transport_hist_us, stats.xport_hist);

static struct attribute *xferk_queue_attrs[] = {
	&qattr_weight_normal.attr.attr,
	&qattr_weight_critical.attr.attr,
	&qattr_weight_bulk.attr.attr,
	&qattr_quantum_bytes.attr.attr,
	&qattr_aging_ms.attr.attr,
	&qattr_max_queued_ops.attr.attr,
	&qattr_max_queued_bytes.attr.attr,
	&qattr_file_max_ops.attr.attr,
	&qattr_file_max_bytes.attr.attr,
	&qattr_internal_reserved_ops.attr.attr,
	&qattr_qp_window.attr.attr,
	&qattr_qp_window_bytes_min.attr.attr,
	&qattr_qp_window_bytes_max.attr.attr,
	&qattr_internal_reserved_wrs.attr.attr,
	&qattr_dev_window_bytes.attr.attr,
	&qattr_op_window_bytes.attr.attr,
	&qattr_op_window_chunks.attr.attr,
	&qattr_lookahead.attr.attr,
	&qattr_depth_normal.attr.attr,
	&qattr_depth_critical.attr.attr,
	&qattr_depth_bulk.attr.attr,
	&qattr_depth_internal.attr.attr,
	&qattr_bytes_normal.attr.attr,
	&qattr_bytes_critical.attr.attr,
	&qattr_bytes_bulk.attr.attr,
	&qattr_bytes_internal.attr.attr,
	&qattr_inflight_bytes.attr.attr,
	&qattr_inflight_chunks.attr.attr,
	&qattr_parked_bytes.attr.attr,
	&qattr_enqueued.attr.attr,
	&qattr_dispatched.attr.attr,
	&qattr_completed.attr.attr,
	&qattr_cancelled.attr.attr,
	&qattr_aged.attr.attr,
	&qattr_rejects_queued_ops.attr.attr,
	&qattr_rejects_queued_bytes.attr.attr,
	&qattr_rejects_file_ops.attr.attr,
	&qattr_rejects_file_bytes.attr.attr,
	&qattr_wait_hist_us.attr.attr,
	&qattr_transport_hist_us.attr.attr,
	NULL,
};

static const struct attribute_group xferk_queue_group = {
	.name = "queue",
	.attrs = xferk_queue_attrs,
};

const struct attribute_group *xferk_dev_groups[] = {
	&xferk_dev_group,
	&xferk_stats_group,
	&xferk_queue_group,
	NULL,
};
