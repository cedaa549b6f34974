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

const struct attribute_group *xferk_dev_groups[] = {
	&xferk_dev_group,
	NULL,
};
