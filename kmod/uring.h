/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Front layer: io_uring commands (uring.c), the file's ->uring_cmd: a
 * SUBMIT parks its command until the op settles. uring_compat.h hides the
 * differences of the kernels' io_uring command API.
 */
#ifndef XFERK_URING_H
#define XFERK_URING_H

#include <linux/types.h>

struct io_uring_cmd;

/* uring.c */
int xferk_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);
void xferk_uring_module_exit(void);

#endif /* XFERK_URING_H */
