/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xferk internal interfaces shared by the module's files.
 *
 * File layout, one concern per file:
 *   main.c     module init/exit, parameters, /dev/xferk file operations
 *   uarg.c     ioctl table and the uAPI argument rules (size, reserved)
 *   sysfs.c    attributes of /sys/class/misc/xferk
 *   debugfs.c  tables under <debugfs>/xferk
 */
#ifndef XFERK_H
#define XFERK_H

#include <linux/types.h>
#include <linux/device.h>
#include <linux/socket.h>
#include "../uapi/xferk.h"

/* Features this build implements; reported by XFERK_IOC_INFO and sysfs. */
#define XFERK_FEATURES		XFERK_FEAT_INFO

/**
 * struct xferk_file - state of one open file of /dev/xferk
 * @owner_tgid: thread group that opened the file, for tables and limits
 *
 * Owned by the file: allocated in ->open, freed in ->release.
 */
struct xferk_file {
	pid_t owner_tgid;
};

/* main.c: module parameters (read-only after load) and command handlers */
extern char *xferk_listen_addr;
extern unsigned short xferk_listen_port;
extern struct sockaddr_storage xferk_listen_sockaddr;

union xferk_ioc_arg;
int xferk_ioctl_info(struct xferk_file *xf, union xferk_ioc_arg *arg);

/* uarg.c */

/**
 * union xferk_ioc_arg - kernel copy of any command's argument
 *
 * The ioctl path copies the caller's struct once into this union, hands
 * it to the command's handler and copies it back.
 */
union xferk_ioc_arg {
	struct xferk_ioc_info info;
};

/**
 * struct xferk_ioctl_desc - one entry of the command table
 * @cmd: the command as the header encodes it
 * @min_size: size of the struct's first version; smaller is -EINVAL
 * @size: size of the struct this kernel knows
 * @handler: does the command on the kernel copy of the argument
 */
struct xferk_ioctl_desc {
	unsigned int cmd;
	u32 min_size;
	u32 size;
	int (*handler)(struct xferk_file *xf, union xferk_ioc_arg *arg);
};

const struct xferk_ioctl_desc *xferk_ioctl_lookup(unsigned int cmd);
int xferk_arg_size_check(u32 usize, u32 min_size);
bool xferk_is_zeroed(const void *p, size_t len);
long xferk_ioctl_dispatch(struct xferk_file *xf, unsigned int cmd,
			  void __user *uarg);

/* sysfs.c */
extern const struct attribute_group *xferk_dev_groups[];

/* debugfs.c */
void xferk_debugfs_init(void);
void xferk_debugfs_exit(void);

#endif /* XFERK_H */
