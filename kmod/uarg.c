// SPDX-License-Identifier: GPL-2.0
/*
 * The ioctl command table and the argument rules of uapi/xferk.h:
 * dispatch on magic, number and direction; a leading size field; an older
 * caller's missing tail reads as zero; a newer caller's unknown tail must
 * be zero; output goes back into min(caller size, kernel size) bytes.
 *
 * The table lookup and the size and reserved-byte checks are free of user
 * memory, so the KUnit suites call them directly.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "front.h"
#include "handle.h"

#define XFERK_IOCTL(_cmd, _handler, _struct, _first_last, _flags)	\
	[_IOC_NR(_cmd)] = {						\
		.cmd = _cmd,						\
		.min_size = offsetofend(_struct, _first_last),		\
		.size = sizeof(_struct),				\
		.out_on_timeout = (_flags) & OUT_ON_TIMEOUT,		\
		.nonblock = (_flags) & NONBLOCK,			\
		.handler = _handler,					\
	}

/* Commands that publish a handle of @_kind in the field @_out. */
#define XFERK_IOCTL_NEW(_cmd, _handler, _struct, _first_last, _flags,	\
			_kind, _out)					\
	XFERK_IOCTL_NEW_OR_GIVEN(_cmd, _handler, _struct, _first_last,	\
				 _flags, _kind, _out, NULL)

/* The same, where a call may write back a handle it was given instead. */
#define XFERK_IOCTL_NEW_OR_GIVEN(_cmd, _handler, _struct, _first_last,	\
				 _flags, _kind, _out, _given)		\
	[_IOC_NR(_cmd)] = {						\
		.cmd = _cmd,						\
		.min_size = offsetofend(_struct, _first_last),		\
		.size = sizeof(_struct),				\
		.nonblock = (_flags) & NONBLOCK,			\
		.out_kind = _kind,					\
		.out_offset = offsetof(_struct, _out),			\
		.out_given = _given,					\
		.handler = _handler,					\
	}

/* A rail IMPORT writes back rail_of, the caller's own remote handle. */
static bool import_is_rail(const union xferk_ioc_arg *arg)
{
	return arg->import.flags & XFERK_IMPORT_RAIL;
}

/* Flags of the table entries. */
#define OUT_ON_TIMEOUT	BIT(0)	/* output copied back with -ETIMEDOUT too */
#define NONBLOCK	BIT(1)	/* never waits for the device or the network */

/* Commands that take one handle of @_kind and drop it. */
#define XFERK_IOCTL_DROP(_cmd, _kind, _flags)				\
	[_IOC_NR(_cmd)] = {						\
		.cmd = _cmd,						\
		.min_size = offsetofend(struct xferk_ioc_handle, reserved), \
		.size = sizeof(struct xferk_ioc_handle),		\
		.nonblock = (_flags) & NONBLOCK,			\
		.drop_kind = _kind,					\
	}

/* Indexed by _IOC_NR; _first_last is the last field of the first version. */
static const struct xferk_ioctl_desc xferk_ioctls[] = {
	XFERK_IOCTL(XFERK_IOC_INFO, xferk_ioctl_info, struct xferk_ioc_info,
		    reserved, NONBLOCK),
	XFERK_IOCTL_NEW(XFERK_IOC_MR_REG, xferk_ioctl_mr_reg,
			struct xferk_ioc_mr_reg, reserved, 0, XFERK_H_REGION,
			handle),
	XFERK_IOCTL_DROP(XFERK_IOC_MR_DEREG, XFERK_H_REGION, 0),
	XFERK_IOCTL_NEW(XFERK_IOC_CONNECT, xferk_ioctl_connect,
			struct xferk_ioc_connect, reserved, 0, XFERK_H_CONN,
			handle),
	XFERK_IOCTL_DROP(XFERK_IOC_DISCONNECT, XFERK_H_CONN, 0),
	XFERK_IOCTL_NEW(XFERK_IOC_EXPORT, xferk_ioctl_export,
			struct xferk_ioc_export, reserved, 0, XFERK_H_EXPORT,
			handle),
	XFERK_IOCTL_DROP(XFERK_IOC_UNEXPORT, XFERK_H_EXPORT, 0),
	XFERK_IOCTL_NEW_OR_GIVEN(XFERK_IOC_IMPORT, xferk_ioctl_import,
				 struct xferk_ioc_import, reserved, 0,
				 XFERK_H_REMOTE, handle, import_is_rail),
	XFERK_IOCTL_DROP(XFERK_IOC_UNIMPORT, XFERK_H_REMOTE, 0),
	XFERK_IOCTL_NEW(XFERK_IOC_SUBMIT, xferk_ioctl_submit,
			struct xferk_ioc_submit, reserved, NONBLOCK, XFERK_H_OP,
			op),
	XFERK_IOCTL(XFERK_IOC_WAIT, xferk_ioctl_wait, struct xferk_ioc_wait,
		    snap, OUT_ON_TIMEOUT),
	XFERK_IOCTL(XFERK_IOC_QUERY, xferk_ioctl_query,
		    struct xferk_ioc_query, snap, NONBLOCK),
	XFERK_IOCTL_DROP(XFERK_IOC_RELEASE, XFERK_H_OP, NONBLOCK),
	XFERK_IOCTL(XFERK_IOC_CANCEL, xferk_ioctl_cancel,
		    struct xferk_ioc_cancel, snap, OUT_ON_TIMEOUT),
	XFERK_IOCTL(XFERK_IOC_CONN_QUERY, xferk_ioctl_conn_query,
		    struct xferk_ioc_conn_query, info, NONBLOCK),
	XFERK_IOCTL_NEW(XFERK_IOC_WINDOW_OPEN, xferk_ioctl_window_open,
			struct xferk_ioc_window_open, reserved, 0,
			XFERK_H_EXPORT, handle),
	XFERK_IOCTL(XFERK_IOC_WINDOW_CLOSE, xferk_ioctl_window_close,
		    struct xferk_ioc_window_close, reserved, 0),
	XFERK_IOCTL_NEW(XFERK_IOC_GROUP_CREATE, xferk_ioctl_group_create,
			struct xferk_ioc_group_create, reserved, NONBLOCK,
			XFERK_H_GROUP, handle),
	XFERK_IOCTL(XFERK_IOC_GROUP_ABORT, xferk_ioctl_group_abort,
		    struct xferk_ioc_group, snap, OUT_ON_TIMEOUT),
	XFERK_IOCTL(XFERK_IOC_GROUP_WAIT, xferk_ioctl_group_wait,
		    struct xferk_ioc_group, snap, OUT_ON_TIMEOUT),
	XFERK_IOCTL(XFERK_IOC_GROUP_QUERY, xferk_ioctl_group_query,
		    struct xferk_ioc_group, snap, NONBLOCK),
	XFERK_IOCTL_DROP(XFERK_IOC_GROUP_RELEASE, XFERK_H_GROUP, NONBLOCK),
	XFERK_IOCTL(XFERK_IOC_NOTIFY, xferk_ioctl_notify,
		    struct xferk_ioc_notify, reserved, NONBLOCK),
	[_IOC_NR(XFERK_IOC_EVENTS)] = {
		.cmd = XFERK_IOC_EVENTS,
		.min_size = offsetofend(struct xferk_ioc_events, reserved),
		.size = sizeof(struct xferk_ioc_events),
		.out_on_timeout = true,
		.handler = xferk_ioctl_events,
		.done = xferk_events_done,
	},
};

/**
 * xferk_ioctl_lookup() - find the table entry of an ioctl command
 * @cmd: command number from the caller
 *
 * The size bits of @cmd are ignored: a struct that grew keeps its number.
 *
 * Return: the entry, or NULL if magic, number or direction are unknown.
 */
const struct xferk_ioctl_desc *xferk_ioctl_lookup(unsigned int cmd)
{
	const struct xferk_ioctl_desc *desc;
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != XFERK_IOC_MAGIC || nr >= ARRAY_SIZE(xferk_ioctls))
		return NULL;
	desc = &xferk_ioctls[nr];
	if (!desc->cmd || _IOC_DIR(cmd) != _IOC_DIR(desc->cmd))
		return NULL;
	return desc;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_ioctl_lookup);

/**
 * xferk_arg_size_check() - validate the size a caller claims for its struct
 * @usize: the struct's size field as the caller set it
 * @min_size: size of the first version of the struct
 *
 * Return: 0, -EINVAL if @usize is below the first version, or -E2BIG above
 * XFERK_ARG_MAX_SIZE.
 */
int xferk_arg_size_check(u32 usize, u32 min_size)
{
	if (usize < min_size)
		return -EINVAL;
	if (usize > XFERK_ARG_MAX_SIZE)
		return -E2BIG;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_arg_size_check);

/**
 * xferk_is_zeroed() - check that reserved bytes are zero
 * @p: start of the reserved bytes
 * @len: their length
 *
 * Return: true if all @len bytes are zero.
 */
bool xferk_is_zeroed(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_is_zeroed);

/**
 * xferk_arg_copy_in() - copy a command's argument struct from the caller
 * @desc: the command's table entry
 * @arg: the kernel copy
 * @uarg: the caller's struct
 * @usize: out: the size the caller claims
 *
 * Return: 0, or -EFAULT, -EINVAL, -E2BIG under the argument rules.
 */
int xferk_arg_copy_in(const struct xferk_ioctl_desc *desc,
		      union xferk_ioc_arg *arg, void __user *uarg, u32 *usize)
{
	int ret;

	if (get_user(*usize, (u32 __user *)uarg))
		return -EFAULT;
	ret = xferk_arg_size_check(*usize, desc->min_size);
	if (ret)
		return ret;
	return copy_struct_from_user(arg, desc->size, uarg, *usize);
}

/**
 * xferk_cmd_run() - run a command on the kernel copy of its argument
 * @xf: the calling file
 * @desc: the command's table entry
 * @arg: the argument, copied in
 *
 * Return: the handler's result.
 */
int xferk_cmd_run(struct xferk_file *xf, const struct xferk_ioctl_desc *desc,
		  union xferk_ioc_arg *arg)
{
	if (desc->drop_kind)
		return xferk_ioctl_drop(xf, &arg->handle, desc->drop_kind);
	return desc->handler(xf, arg);
}

/**
 * xferk_arg_copy_out() - copy a command's result back
 * @xf: the calling file
 * @desc: the command's table entry
 * @arg: the kernel copy
 * @uarg: the caller's struct
 * @usize: the size the caller claims
 * @ret: the handler's result
 *
 * Copies back after success, and after -ETIMEDOUT for commands whose
 * output is meaningful then; commands without output copy nothing. If the
 * copy fails, a handle the command published is taken back (an op is
 * cancelled and drained in the background): the caller, who gets EFAULT,
 * could never name it. A handle the caller gave (desc->out_given) stays:
 * a rail IMPORT's rail stays added to it, since rails are never taken out
 * of a remote handle its ops may be using. What WAIT, QUERY or CANCEL did
 * stays done; what EVENTS would take stays queued (its @done commits only
 * a written copy).
 *
 * Return: @ret, or -EFAULT if the copy failed.
 */
int xferk_arg_copy_out(struct xferk_file *xf,
		       const struct xferk_ioctl_desc *desc,
		       const union xferk_ioc_arg *arg, void __user *uarg,
		       u32 usize, int ret)
{
	bool written;

	/* The commands that drop a handle have no output. */
	if (desc->drop_kind)
		return ret;
	if (ret && !(ret == -ETIMEDOUT && desc->out_on_timeout))
		return ret;
	written = !copy_to_user(uarg, arg, min_t(u32, usize, desc->size));
	if (desc->done)
		desc->done(xf, written);
	if (written)
		return ret;
	if (desc->out_kind && !ret &&
	    !(desc->out_given && desc->out_given(arg)))
		xferk_unpublish_handle(xf, *(const u64 *)((const u8 *)arg +
							  desc->out_offset),
				       desc->out_kind);
	return -EFAULT;
}

/**
 * xferk_ioctl_dispatch() - run one ioctl command
 * @xf: the calling file
 * @cmd: command number
 * @uarg: the caller's argument struct
 *
 * Copies the argument in once, runs the handler on the copy and, if it
 * succeeded, copies the result back.
 *
 * Return: the handler's result, -ENOTTY for an unknown command, or an
 * argument error (-EFAULT, -EINVAL, -E2BIG).
 */
long xferk_ioctl_dispatch(struct xferk_file *xf, unsigned int cmd,
			  void __user *uarg)
{
	const struct xferk_ioctl_desc *desc = xferk_ioctl_lookup(cmd);
	union xferk_ioc_arg arg;
	u32 usize;
	int ret;

	if (!desc)
		return -ENOTTY;
	ret = xferk_arg_copy_in(desc, &arg, uarg, &usize);
	if (ret)
		return ret;
	ret = xferk_cmd_run(xf, desc, &arg);
	return xferk_arg_copy_out(xf, desc, &arg, uarg, usize, ret);
}
