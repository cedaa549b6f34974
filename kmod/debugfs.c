// SPDX-License-Identifier: GPL-2.0
/*
 * <debugfs>/xferk: human-readable tables for operators. Not an ABI:
 * columns may change between versions (sysfs holds the stable counters).
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "xferk.h"

static struct dentry *xferk_debugfs_root;

static int config_show(struct seq_file *m, void *unused)
{
	seq_printf(m, "abi_version %u\n", XFERK_ABI_VERSION);
	seq_printf(m, "features 0x%llx\n", (unsigned long long)XFERK_FEATURES);
	seq_printf(m, "listen %pISpc\n", &xferk_listen_sockaddr);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(config);

/* Failure to create debugfs entries is not an error (debugfs API rules). */
void xferk_debugfs_init(void)
{
	xferk_debugfs_root = debugfs_create_dir("xferk", NULL);
	debugfs_create_file("config", 0444, xferk_debugfs_root, NULL,
			    &config_fops);
}

void xferk_debugfs_exit(void)
{
	debugfs_remove_recursive(xferk_debugfs_root);
}
