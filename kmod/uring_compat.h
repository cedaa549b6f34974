/* SPDX-License-Identifier: GPL-2.0 */
/*
 * io_uring command API differences between the kernels xferk builds on.
 *
 *  - The driver-side declarations moved from <linux/io_uring.h> to
 *    <linux/io_uring/cmd.h> (6.7), where the payload is reached through
 *    io_uring_sqe_cmd(cmd->sqe) instead of cmd->cmd.
 *  - io_uring_cmd_done() gained its issue_flags argument in 6.3 and in
 *    later 6.1 stable releases (Debian 12's 6.1 has it).
 *  - The task that owns a request (not the io-wq worker or SQPOLL thread
 *    that may issue it) is the request's ->task up to 6.12; 6.13 reaches
 *    it through io_uring_cmd_get_task().
 * kmod/Kbuild probes the target kernel's headers and defines
 * XFERK_HAVE_IO_URING_CMD_H, XFERK_CMD_DONE_HAS_ISSUE_FLAGS and
 * XFERK_HAVE_CMD_GET_TASK.
 */
#ifndef XFERK_URING_COMPAT_H
#define XFERK_URING_COMPAT_H

#ifdef XFERK_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#define xferk_uring_payload(cmd)	io_uring_sqe_cmd((cmd)->sqe)
#else
#include <linux/io_uring.h>
#define xferk_uring_payload(cmd)	((cmd)->cmd)
#endif

#ifdef XFERK_CMD_DONE_HAS_ISSUE_FLAGS
#define xferk_uring_cmd_done(cmd, ret, res2, issue_flags) \
	io_uring_cmd_done(cmd, ret, res2, issue_flags)
#else
#define xferk_uring_cmd_done(cmd, ret, res2, issue_flags) \
	io_uring_cmd_done(cmd, ret, res2)
#endif

#ifdef XFERK_HAVE_CMD_GET_TASK
#define xferk_uring_cmd_task(cmd)	io_uring_cmd_get_task(cmd)
#else
#include <linux/io_uring_types.h>
#define xferk_uring_cmd_task(cmd)	(cmd_to_io_kiocb(cmd)->task)
#endif

#endif /* XFERK_URING_COMPAT_H */
