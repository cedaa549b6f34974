// SPDX-License-Identifier: GPL-2.0
/*
 * Attributes of /sys/class/misc/xferk; each file is documented in
 * Documentation/ABI/testing/sysfs-class-misc-xferk.
 */
#include <linux/device.h>
#include <linux/sysfs.h>

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
XFERK_STAT_ATTR(uring_exit_cancels);

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
	&dev_attr_uring_exit_cancels.attr,
	NULL,
};

static const struct attribute_group xferk_stats_group = {
	.name = "stats",
	.attrs = xferk_stats_attrs,
};

const struct attribute_group *xferk_dev_groups[] = {
	&xferk_dev_group,
	&xferk_stats_group,
	NULL,
};
