/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Front layer: /dev/xferk and its commands. An open file (struct
 * xferk_file), the command table and the uAPI argument rules (uarg.c),
 * each command's handler (the table's entries, defined in the file of
 * what they act on), main.c's handle helpers, and the entry points of
 * sysfs.c and debugfs.c. Module parameters and limits are in limits.h,
 * io_uring commands in uring.h.
 */
#ifndef XFERK_FRONT_H
#define XFERK_FRONT_H

#include <linux/mutex.h>
#include <linux/types.h>
#include "../uapi/xferk.h"
#include "handle.h"

struct attribute_group;
struct xferk_evq;
struct xferk_op;
struct xferk_op_settle;
struct xferk_dmabuf_acct;
struct xferk_qacct;
struct xferk_ready;

/**
 * struct xferk_file - state of one open file of /dev/xferk
 * @lock: serializes handle-table changes and lookups with taking references
 * @handles: the file's handles (counted per kind against the limits)
 * @qacct: the file's account: queue admission and chunk budget (ref)
 * @evq: the file's event queue (ref), made on first use (@lock)
 * @ready: the file's readiness for poll(2) and read(2) (ref)
 * @dmabuf_acct: the pages its dma-buf regions span (ref), against
 *	max_dmabuf_pages_per_file, until each region goes
 *
 * Owned by the file: allocated in ->open, freed in ->release after every
 * handle was dropped (ops still in flight live on, owned by the kernel,
 * and keep the account).
 */
struct xferk_file {
	struct mutex lock;	/* handle table changes, lookup + get */
	struct xferk_handles handles;
	struct xferk_qacct *qacct;
	struct xferk_evq *evq;
	struct xferk_ready *ready;
	struct xferk_dmabuf_acct *dmabuf_acct;
};

/* uarg.c */

/**
 * union xferk_ioc_arg - kernel copy of any command's argument
 *
 * The ioctl path copies the caller's struct once into this union, hands
 * it to the command's handler and copies it back.
 */
union xferk_ioc_arg {
	struct xferk_ioc_info info;
	struct xferk_ioc_mr_reg mr_reg;
	struct xferk_ioc_handle handle;
	struct xferk_ioc_connect connect;
	struct xferk_ioc_export export;
	struct xferk_ioc_import import;
	struct xferk_ioc_submit submit;
	struct xferk_ioc_wait wait;
	struct xferk_ioc_query query;
	struct xferk_ioc_cancel cancel;
	struct xferk_ioc_conn_query conn_query;
	struct xferk_ioc_window_open window_open;
	struct xferk_ioc_window_close window_close;
	struct xferk_ioc_group_create group_create;
	struct xferk_ioc_group group;
	struct xferk_ioc_notify notify;
	struct xferk_ioc_events events;
};

/**
 * struct xferk_ioctl_desc - one entry of the command table
 * @cmd: the command as the header encodes it
 * @min_size: size of the struct's first version; smaller is -EINVAL
 * @size: size of the struct this kernel knows
 * @out_on_timeout: the output is copied back with -ETIMEDOUT too
 * @nonblock: never waits for the device or the network, so io_uring
 *	runs it inline (the others go to io_uring's worker threads)
 * @drop_kind: the command drops a handle of this kind (no @handler)
 * @out_kind: the command publishes a handle of this kind, written back at
 *	@out_offset; undone if the write-back fails
 * @out_offset: offset of that handle in the argument struct
 * @out_given: NULL, or whether this call wrote back a handle the caller
 *	gave it rather than one it published (a rail IMPORT returns
 *	rail_of): such a handle is not undone
 * @handler: does the command on the kernel copy of the argument
 * @done: for a command whose output commits something (EVENTS takes its
 *	events): called once the output of a 0 or -ETIMEDOUT result was
 *	copied back (@written) or could not be (then nothing is committed)
 */
struct xferk_ioctl_desc {
	unsigned int cmd;
	u32 min_size;
	u32 size;
	bool out_on_timeout;
	bool nonblock;
	u8 drop_kind;
	u8 out_kind;
	u16 out_offset;
	bool (*out_given)(const union xferk_ioc_arg *arg);
	int (*handler)(struct xferk_file *xf, union xferk_ioc_arg *arg);
	void (*done)(struct xferk_file *xf, bool written);
};

const struct xferk_ioctl_desc *xferk_ioctl_lookup(unsigned int cmd);
int xferk_arg_size_check(u32 usize, u32 min_size);
bool xferk_is_zeroed(const void *p, size_t len);
int xferk_arg_copy_in(const struct xferk_ioctl_desc *desc,
		      union xferk_ioc_arg *arg, void __user *uarg, u32 *usize);
int xferk_cmd_run(struct xferk_file *xf, const struct xferk_ioctl_desc *desc,
		  union xferk_ioc_arg *arg);
int xferk_arg_copy_out(struct xferk_file *xf,
		       const struct xferk_ioctl_desc *desc,
		       const union xferk_ioc_arg *arg, void __user *uarg,
		       u32 usize, int ret);
long xferk_ioctl_dispatch(struct xferk_file *xf, unsigned int cmd,
			  void __user *uarg);

/* Command handlers (the entries of uarg.c's table), by file */

/* main.c */
int xferk_ioctl_info(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_mr_reg(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_connect(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_drop(struct xferk_file *xf, struct xferk_ioc_handle *a, u8 kind);

/* conn_query.c */
int xferk_ioctl_conn_query(struct xferk_file *xf, union xferk_ioc_arg *arg);

/* export.c */
int xferk_ioctl_export(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_import(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_window_open(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_window_close(struct xferk_file *xf, union xferk_ioc_arg *arg);

/* op_ioctl.c */
int xferk_ioctl_submit(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_wait(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_query(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_cancel(struct xferk_file *xf, union xferk_ioc_arg *arg);

/* group.c */
int xferk_ioctl_group_create(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_group_abort(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_group_wait(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_group_query(struct xferk_file *xf, union xferk_ioc_arg *arg);

/* notify.c */
int xferk_ioctl_notify(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_events(struct xferk_file *xf, union xferk_ioc_arg *arg);
void xferk_events_done(struct xferk_file *xf, bool written);
struct xferk_evq *xferk_file_evq(struct xferk_file *xf);
int xferk_file_submit(struct xferk_file *xf, struct xferk_ioc_submit *a,
		      const struct xferk_op_settle *settle);

/* main.c: handles */
struct xferk_hobj *xferk_take_handle(struct xferk_file *xf, u64 handle, u8 kind);
int xferk_drop_handle(struct xferk_file *xf, u64 handle, u8 kind);
void xferk_unlock_published(struct xferk_file *xf, u64 handle, u8 kind);
void xferk_unpublish_handle(struct xferk_file *xf, u64 handle, u8 kind);
int xferk_drop_op_handle(struct xferk_file *xf, struct xferk_op *op,
			 u64 handle);

/* sysfs.c */
extern const struct attribute_group *xferk_dev_groups[];

/* debugfs.c */
void xferk_debugfs_init(void);
void xferk_debugfs_exit(void);

#endif /* XFERK_FRONT_H */
