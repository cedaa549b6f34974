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
#include <linux/nsproxy.h>
#include <linux/poll.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>
#include <kunit/visibility.h>

#include "conn.h"
#include "evq.h"
#include "export.h"
#include "fault.h"
#include "front.h"
#include "handle.h"
#include "limits.h"
#include "op.h"
#include "queue.h"
#include "ready.h"
#include "region.h"
#include "stats.h"
#include "transport.h"
#include "uring.h"
#include "xferk.h"

char *xferk_listen_addr = "0.0.0.0";
module_param_named(listen_addr, xferk_listen_addr, charp, 0444);
MODULE_PARM_DESC(listen_addr,
		 "IPv4/IPv6 address the connection listener binds (default 0.0.0.0: every IPv4 address; \"::\" every IPv4 and IPv6 one, IPv6 only on iWARP)");

module_param_named(listen_port, xferk_listen_port, ushort, 0444);
MODULE_PARM_DESC(listen_port, "TCP-space port of the connection listener (default 18515)");

atomic_t xferk_fault_drop_published = ATOMIC_INIT(0);

/*
 * listen_addr and listen_port are parsed at load into the transport's
 * xferk_listen_sockaddr; invalid values fail the load.
 */

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

int xferk_ioctl_mr_reg(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_mr_reg *a = &arg->mr_reg;
	struct xferk_region *r;
	int ret;

	if ((a->flags & ~XFERK_MR_DMABUF) ||
	    (!(a->flags & XFERK_MR_DMABUF) && a->reserved0) ||
	    !xferk_is_zeroed(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	if (!xferk_handle_room_limited(xf, XFERK_H_REGION))
		return -EMFILE;
	if (a->flags & XFERK_MR_DMABUF)
		r = xferk_region_create_dmabuf(a->dmabuf_fd, a->addr, a->len,
					       a->access, xf->dmabuf_acct,
					       READ_ONCE(xferk_max_dmabuf_pages_per_file));
	else
		r = xferk_region_create(a->addr, a->len, a->access);
	if (IS_ERR(r))
		return PTR_ERR(r);
	mutex_lock(&xf->lock);
	ret = xferk_handle_add_limited(xf, &r->hobj, XFERK_H_REGION);
	if (ret) {
		mutex_unlock(&xf->lock);
		xferk_region_put(r);
		return ret;
	}
	a->handle = r->hobj.handle;
	xferk_unlock_published(xf, a->handle, XFERK_H_REGION);
	return 0;
}

static int connect_sockaddr(const struct xferk_ioc_connect *a,
			    struct sockaddr_storage *ss)
{
	u16 port = a->port ?: xferk_listen_port;

	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (!xferk_is_zeroed(a->addr + 4, sizeof(a->addr) - 4))
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, a->addr, 4);
		return 0;
	}
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, a->addr, sizeof(a->addr));
		return 0;
	}
	return -EAFNOSUPPORT;
}

int xferk_ioctl_connect(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_connect *a = &arg->connect;
	struct sockaddr_storage peer;
	struct xferk_conn_ref *cr;
	struct xferk_conn *c;
	int ret;

	if ((a->flags & ~XFERK_CONNECT_NULL_PEER) || a->reserved0 ||
	    !xferk_is_zeroed(a->reserved, sizeof(a->reserved)) ||
	    a->nr_qps > XFERK_MAX_QPS)
		return -EINVAL;
	if (a->flags & XFERK_CONNECT_NULL_PEER) {
		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		if (a->nr_qps)
			return -EINVAL;
	} else {
		if (a->null_delay_ns ||
		    a->timeout_ms > XFERK_CONNECT_MAX_TIMEOUT_MS)
			return -EINVAL;
		ret = connect_sockaddr(a, &peer);
		if (ret)
			return ret;
	}
	if (!xferk_handle_room_limited(xf, XFERK_H_CONN))
		return -EMFILE;
	cr = kzalloc(sizeof(*cr), XFERK_GFP_USER);
	if (!cr)
		return -ENOMEM;
	if (a->flags & XFERK_CONNECT_NULL_PEER)
		c = xferk_conn_null_create(a->null_delay_ns);
	else
		c = xferk_conn_connect(current->nsproxy->net_ns, &peer,
				       a->timeout_ms ?: 5000,
				       a->nr_qps ?: READ_ONCE(xferk_qps_per_session),
				       xf->qacct,
				       READ_ONCE(xferk_handle_limit[XFERK_H_CONN]));
	if (IS_ERR(c)) {
		kfree(cr);
		return PTR_ERR(c);
	}
	cr->conn = c;
	mutex_lock(&xf->lock);
	ret = xferk_handle_add_limited(xf, &cr->hobj, XFERK_H_CONN);
	if (ret) {
		mutex_unlock(&xf->lock);
		xferk_conn_unuse(c);
		xferk_conn_put(c);
		kfree(cr);
		return ret;
	}
	xferk_conn_claim(c);
	a->handle = cr->hobj.handle;
	xferk_unlock_published(xf, a->handle, XFERK_H_CONN);
	return 0;
}

/*
 * Drops what a handle held. Ops that are not physically complete stay
 * owned by the kernel until they are; when the file is closing (process
 * exit) they are also cancelled and drained in the background. Regions
 * stay pinned while ops use them; a null peer dies with its handle (it is
 * never shared).
 */
static void drop_object(struct xferk_hobj *ho, bool closing)
{
	struct xferk_region *r;
	struct xferk_conn_ref *cr;
	struct xferk_op *op;

	switch (ho->kind) {
	case XFERK_H_REGION:
		r = container_of(ho, struct xferk_region, hobj);
		xferk_region_revoke_exports(r);
		xferk_region_deregister(r);
		break;
	case XFERK_H_CONN:
		cr = container_of(ho, struct xferk_conn_ref, hobj);
		if (cr->conn->transport == &xferk_null_transport)
			xferk_conn_down(cr->conn, -ESHUTDOWN);
		xferk_conn_unuse(cr->conn);
		xferk_conn_put(cr->conn);
		kfree(cr);
		break;
	case XFERK_H_EXPORT:
		xferk_export_put(container_of(ho, struct xferk_export, hobj));
		break;
	case XFERK_H_REMOTE:
		xferk_remote_put(container_of(ho, struct xferk_remote, hobj));
		break;
	case XFERK_H_GROUP:
		xferk_group_put(container_of(ho, struct xferk_group, hobj));
		break;
	case XFERK_H_OP:
		op = container_of(ho, struct xferk_op, hobj);
		if (!xferk_op_physical(op)) {
			atomic64_inc(&xferk_stats.ops_orphaned);
			if (closing)
				xferk_op_orphan(op);
		}
		xferk_op_put(op);
		break;
	}
}

/**
 * xferk_take_handle() - remove a handle from its file, keep its object
 * @xf: the file
 * @handle: the handle
 * @kind: XFERK_H_* it must be
 *
 * Return: the object, with the reference the handle held; or ERR_PTR of
 * the lookup's error (EBADF, ESTALE, EINVAL).
 */
struct xferk_hobj *xferk_take_handle(struct xferk_file *xf, u64 handle, u8 kind)
{
	struct xferk_hobj *ho;

	mutex_lock(&xf->lock);
	ho = xferk_handle_remove(&xf->handles, handle, kind);
	mutex_unlock(&xf->lock);
	return ho;
}

/**
 * xferk_drop_handle() - remove a handle from its file and drop its object
 * @xf: the file
 * @handle: the handle
 * @kind: XFERK_H_* it must be
 *
 * Return: 0, or the lookup's error (EBADF, ESTALE, EINVAL).
 */
int xferk_drop_handle(struct xferk_file *xf, u64 handle, u8 kind)
{
	struct xferk_hobj *ho = xferk_take_handle(xf, handle, kind);

	if (IS_ERR(ho))
		return PTR_ERR(ho);
	drop_object(ho, false);
	return 0;
}

/**
 * xferk_unlock_published() - drop the file's lock after publishing a handle
 * @xf: the file, its lock held
 * @handle: the handle just published under it
 * @kind: its kind
 *
 * Once the lock is dropped another thread of the process may drop the
 * handle (handles are predictable), and with it the object's last
 * reference: a command reads what it returns from its new object, and
 * claims what it needs, before it calls this. Fault drop_published
 * (Documentation/fault-injection.md) drops the handle right here, as such
 * a thread would.
 */
void xferk_unlock_published(struct xferk_file *xf, u64 handle, u8 kind)
{
	mutex_unlock(&xf->lock);
	if (atomic_dec_if_positive(&xferk_fault_drop_published) >= 0)
		xferk_drop_handle(xf, handle, kind);
}

/**
 * xferk_unpublish_handle() - undo a command whose caller never saw its handle
 * @xf: the file
 * @handle: the handle the command created
 * @kind: its kind
 *
 * The write-back of the handle failed (EFAULT): nothing the command
 * created may stay behind. An op is treated as if its file had closed:
 * cancelled and drained in the background. Quietly nothing if another
 * thread dropped the handle already.
 */
void xferk_unpublish_handle(struct xferk_file *xf, u64 handle, u8 kind)
{
	struct xferk_hobj *ho = xferk_take_handle(xf, handle, kind);

	if (!IS_ERR(ho))
		drop_object(ho, true);
}

/**
 * xferk_drop_op_handle() - release an op's handle on the kernel's behalf
 * @xf: the file
 * @op: the op (the caller holds a reference)
 * @handle: the handle it was published with
 *
 * For XFERK_SUBMIT_AUTO_RELEASE: the caller may have released the handle
 * already, and its slot may hold a newer op by now; only @op's own handle
 * is dropped.
 *
 * Return: 0, or -ESTALE if @handle no longer names @op.
 */
int xferk_drop_op_handle(struct xferk_file *xf, struct xferk_op *op,
			 u64 handle)
{
	int ret;

	mutex_lock(&xf->lock);
	ret = xferk_handle_remove_obj(&xf->handles, handle, &op->hobj);
	mutex_unlock(&xf->lock);
	if (!ret)
		drop_object(&op->hobj, false);
	return ret;
}

int xferk_ioctl_drop(struct xferk_file *xf, struct xferk_ioc_handle *a, u8 kind)
{
	if (a->flags || !xferk_is_zeroed(a->reserved, sizeof(a->reserved)))
		return -EINVAL;
	return xferk_drop_handle(xf, a->handle, kind);
}

static int xferk_open(struct inode *inode, struct file *file)
{
	struct xferk_file *xf;

	xf = kzalloc(sizeof(*xf), XFERK_GFP_USER);
	if (!xf)
		return -ENOMEM;
	xf->qacct = xferk_qacct_create();
	xf->dmabuf_acct = xferk_dmabuf_acct_create();
	xf->ready = xferk_ready_create();
	if (!xf->qacct || !xf->dmabuf_acct || !xf->ready) {
		if (xf->qacct)
			xferk_qacct_put(xf->qacct);
		if (xf->ready)
			xferk_ready_put(xf->ready);
		kfree(xf->dmabuf_acct);
		kfree(xf);
		return -ENOMEM;
	}
	mutex_init(&xf->lock);
	xferk_handles_init(&xf->handles);
	file->private_data = xf;
	return 0;
}

/*
 * Drops every handle, in any order: each object holds references to what
 * it uses, so ops in flight keep their regions pinned and connections up.
 */
static int xferk_release(struct inode *inode, struct file *file)
{
	struct xferk_file *xf = file->private_data;
	struct xferk_hobj *ho;

	while ((ho = xferk_handle_pop(&xf->handles)))
		drop_object(ho, true);
	xferk_handles_destroy(&xf->handles);
	if (xf->evq)
		xferk_evq_put(xf->evq);
	xferk_qacct_put(xf->qacct);
	xferk_ready_put(xf->ready);
	xferk_dmabuf_acct_put(xf->dmabuf_acct);
	kfree(xf);
	return 0;
}

/*
 * EPOLLIN while an op of the file has woken its waiters, or an event was
 * queued for it, since the last read(2) (ready.c).
 */
static __poll_t xferk_poll(struct file *file, poll_table *pt)
{
	struct xferk_ready *r = ((struct xferk_file *)file->private_data)->ready;

	poll_wait(file, &r->wq, pt);
	/* Pairs with ready_add()'s: queued on @r->wq before the count is read. */
	smp_mb();
	return atomic64_read(&r->count) ? EPOLLIN | EPOLLRDNORM : 0;
}

/*
 * Takes the file's wakeups since the last read: 8 bytes, a native-endian
 * count (0 included); never blocks. A short buffer is -EINVAL; a fault
 * gives the count back (-EFAULT).
 */
static ssize_t xferk_read(struct file *file, char __user *buf, size_t len,
			  loff_t *ppos)
{
	struct xferk_ready *r = ((struct xferk_file *)file->private_data)->ready;
	u64 n;

	if (len < sizeof(n))
		return -EINVAL;
	n = xferk_ready_take(r);
	if (copy_to_user(buf, &n, sizeof(n))) {
		xferk_ready_untake(r, n);
		return -EFAULT;
	}
	return sizeof(n);
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
	.poll		= xferk_poll,
	.read		= xferk_read,
	.unlocked_ioctl	= xferk_unlocked_ioctl,
	.uring_cmd	= xferk_uring_cmd,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice xferk_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "xferk",
	.fops	= &xferk_fops,
	.groups	= xferk_dev_groups,
	/* Group access is granted by udev (tools/60-xferk.rules): security.md. */
	.mode	= 0660,
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
	xferk_export_module_init();
	ret = xferk_region_dmabuf_init();
	if (ret)
		return ret;
	ret = xferk_op_module_init();
	if (ret)
		goto err_dmabuf;
	ret = xferk_queue_module_init();
	if (ret)
		goto err_op;
	ret = xferk_null_module_init();
	if (ret)
		goto err_queue;
	ret = xferk_conn_module_init();
	if (ret)
		goto err_null;
	ret = xferk_rdma_module_init();
	if (ret)
		goto err_conn;
	xferk_debugfs_init();
	ret = misc_register(&xferk_misc);
	if (ret)
		goto err_debugfs;
	pr_info("xferk: loaded, abi %u, features %#llx\n", XFERK_ABI_VERSION,
		(unsigned long long)XFERK_FEATURES);
	return 0;

err_debugfs:
	xferk_debugfs_exit();
	xferk_rdma_module_exit();
err_conn:
	xferk_conn_module_exit();
err_null:
	xferk_null_module_exit();
err_queue:
	xferk_queue_module_exit();
err_op:
	xferk_op_module_exit();
err_dmabuf:
	xferk_region_dmabuf_exit();
	return ret;
}

static void __exit xferk_exit(void)
{
	misc_deregister(&xferk_misc);
	xferk_uring_module_exit();
	xferk_debugfs_exit();
	xferk_rdma_module_exit();
	xferk_conn_module_exit();
	xferk_null_module_exit();
	xferk_queue_module_exit();
	xferk_op_module_exit();
	xferk_region_dmabuf_exit();
	WARN_ON(atomic64_read(&xferk_stats.pinned_pages));
	pr_info("xferk: unloaded\n");
}

module_init(xferk_init);
module_exit(xferk_exit);

MODULE_DESCRIPTION("xferk: deadline-safe RDMA transfers of pinned user memory");
MODULE_AUTHOR("The xferk developers");
MODULE_LICENSE("GPL");
