// SPDX-License-Identifier: GPL-2.0
/*
 * xferk: deadline-safe RDMA transfers of pinned user memory.
 *
 * Module init/exit, parameters and the file operations of /dev/xferk.
 */
#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/inet.h>
#include <net/net_namespace.h>
#include <kunit/visibility.h>

#include "xferk.h"

char *xferk_listen_addr = "0.0.0.0";
module_param_named(listen_addr, xferk_listen_addr, charp, 0444);
MODULE_PARM_DESC(listen_addr,
		 "IPv4/IPv6 address the connection listener binds (default 0.0.0.0: all)");

unsigned short xferk_listen_port = 18515;
module_param_named(listen_port, xferk_listen_port, ushort, 0444);
MODULE_PARM_DESC(listen_port, "TCP-space port of the connection listener (default 18515)");

/* listen_addr and listen_port parsed at load; invalid values fail the load. */
struct sockaddr_storage xferk_listen_sockaddr;

int xferk_ioctl_info(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_info *info = &arg->info;

	if (info->flags || info->reserved0 ||
	    !xferk_is_zeroed(info->reserved, sizeof(info->reserved)))
		return -EINVAL;
	info->abi_version = XFERK_ABI_VERSION;
	info->features = XFERK_FEATURES;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_ioctl_info);

static int xferk_open(struct inode *inode, struct file *file)
{
	struct xferk_file *xf;

	xf = kzalloc(sizeof(*xf), GFP_KERNEL);
	if (!xf)
		return -ENOMEM;
	xf->owner_tgid = task_tgid_nr(current);
	file->private_data = xf;
	return 0;
}

static int xferk_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

static long xferk_unlocked_ioctl(struct file *file, unsigned int cmd,
				 unsigned long arg)
{
	return xferk_ioctl_dispatch(file->private_data, cmd,
				    (void __user *)arg);
}

static const struct file_operations xferk_fops = {
	.owner		= THIS_MODULE,
	.open		= xferk_open,
	.release	= xferk_release,
	.unlocked_ioctl	= xferk_unlocked_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice xferk_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "xferk",
	.fops	= &xferk_fops,
	.groups	= xferk_dev_groups,
	.mode	= 0666,
};

static int __init xferk_init(void)
{
	char port[8];
	int ret;

	snprintf(port, sizeof(port), "%u", xferk_listen_port);
	ret = inet_pton_with_scope(&init_net, AF_UNSPEC, xferk_listen_addr,
				   port, &xferk_listen_sockaddr);
	if (ret) {
		pr_err("xferk: invalid listen_addr '%s'\n", xferk_listen_addr);
		return -EINVAL;
	}
	xferk_debugfs_init();
	ret = misc_register(&xferk_misc);
	if (ret) {
		xferk_debugfs_exit();
		return ret;
	}
	pr_info("xferk: loaded, abi %u, features %#llx\n", XFERK_ABI_VERSION,
		(unsigned long long)XFERK_FEATURES);
	return 0;
}

static void __exit xferk_exit(void)
{
	misc_deregister(&xferk_misc);
	xferk_debugfs_exit();
	pr_info("xferk: unloaded\n");
}

module_init(xferk_init);
module_exit(xferk_exit);

MODULE_DESCRIPTION("xferk: deadline-safe RDMA transfers of pinned user memory");
MODULE_AUTHOR("The xferk developers");
MODULE_LICENSE("GPL");
