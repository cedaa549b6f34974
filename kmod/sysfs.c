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

static struct attribute *xferk_dev_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_features.attr,
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
