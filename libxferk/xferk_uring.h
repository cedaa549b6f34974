/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * xferk_uring.h: prepare xferk commands on an io_uring ring (liburing >= 2.3)
 * and decode their completions. Header-only: include it after <liburing.h>;
 * libxferk itself does not depend on liburing.
 *
 * Each prep function fills one SQE for IORING_OP_URING_CMD on an open
 * /dev/xferk (xferk_fd()). The argument struct is the ioctl's; the kernel
 * reads it, and the fragment array of a submit, when it issues the SQE
 * (normally inside io_uring_submit()), and writes its outputs back there.
 * Keep them valid until the CQE: commands that run in io_uring's worker,
 * and SQEs issued asynchronously (IOSQE_ASYNC, SQPOLL), read them later.
 * In a ring set up with IORING_SETUP_SQE128, zero the whole 128-byte SQE
 * before preparing it: the kernel rejects a non-zero second half.
 *
 * Documentation/libxferk.md describes RETURN VALUE and ERRORS of each
 * command; uapi/xferk.h has the rules for a parked submit.
 */
#ifndef XFERK_URING_H
#define XFERK_URING_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <liburing.h>
#include "xferk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Any xferk command: @cmd_op is its XFERK_IOC_* number, @arg its struct. */
static inline void io_uring_prep_xferk_cmd(struct io_uring_sqe *sqe, int fd,
					   unsigned int cmd_op, void *arg)
{
	struct xferk_uring_cmd payload;

	memset(&payload, 0, sizeof(payload));
	payload.arg = (uint64_t)(uintptr_t)arg;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = cmd_op;
	memcpy(sqe->cmd, &payload, sizeof(payload));
}

/*
 * Starts an op. The CQE posts when the op settles: cqe->res is its final
 * state (decode with xferk_cqe_*), or a negative errno. @s->op holds the
 * op's handle when the CQE posts, and once io_uring_submit() returned
 * unless the SQE was issued asynchronously (IOSQE_ASYNC, SQPOLL, or again
 * from a worker because a dma-buf region's exporter was busy);
 * @s->deadline_ns must be set.
 */
static inline void io_uring_prep_xferk_submit(struct io_uring_sqe *sqe, int fd,
					      struct xferk_ioc_submit *s)
{
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_SUBMIT, s);
}

/* Waits for an op (runs in io_uring's worker); cqe->res as XFERK_IOC_WAIT. */
static inline void io_uring_prep_xferk_wait(struct io_uring_sqe *sqe, int fd,
					    struct xferk_ioc_wait *w)
{
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_WAIT, w);
}

/* Cancels and drains an op; cqe->res as XFERK_IOC_CANCEL. */
static inline void io_uring_prep_xferk_cancel(struct io_uring_sqe *sqe, int fd,
					      struct xferk_ioc_cancel *c)
{
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_CANCEL, c);
}

/* An op's snapshot, inline; cqe->res as XFERK_IOC_QUERY. */
static inline void io_uring_prep_xferk_query(struct io_uring_sqe *sqe, int fd,
					     struct xferk_ioc_query *q)
{
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_QUERY, q);
}

/*
 * Closes a window or an export (runs in io_uring's worker: it waits for the
 * peer's answer until @w->deadline_ns); cqe->res as XFERK_IOC_WINDOW_CLOSE,
 * @w->how and @w->ack_ns written back.
 */
static inline void io_uring_prep_xferk_window_close(struct io_uring_sqe *sqe,
						    int fd,
						    struct xferk_ioc_window_close *w)
{
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_WINDOW_CLOSE, w);
}

/*
 * Aborts a group and drains its ops (runs in io_uring's worker: it waits
 * until @g->deadline_ns); cqe->res as XFERK_IOC_GROUP_ABORT, @g->snap
 * written back (also with -ETIMEDOUT).
 */
static inline void io_uring_prep_xferk_group_abort(struct io_uring_sqe *sqe,
						   int fd,
						   struct xferk_ioc_group *g)
{
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_GROUP_ABORT, g);
}

/*
 * Waits for a group's ops, never cancels them (runs in io_uring's worker);
 * cqe->res as XFERK_IOC_GROUP_WAIT, @g->snap written back (also with
 * -ETIMEDOUT).
 */
static inline void io_uring_prep_xferk_group_wait(struct io_uring_sqe *sqe,
						  int fd,
						  struct xferk_ioc_group *g)
{
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_GROUP_WAIT, g);
}

/*
 * Takes the file's events into @e->events, waiting for the first until
 * @e->deadline_ns (runs in io_uring's worker); cqe->res as
 * XFERK_IOC_EVENTS, @e->nr_events and @e->dropped written back. Keep the
 * event array valid until the CQE.
 */
static inline void io_uring_prep_xferk_events(struct io_uring_sqe *sqe, int fd,
					      struct xferk_ioc_events *e)
{
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_EVENTS, e);
}

/* Releases an op handle, inline; cqe->res as XFERK_IOC_RELEASE. */
static inline void io_uring_prep_xferk_release(struct io_uring_sqe *sqe, int fd,
					       struct xferk_ioc_handle *h)
{
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_RELEASE, h);
}

/* A submit's CQE: the op ran and settled (cqe->res is its state). */
static inline bool xferk_cqe_settled(const struct io_uring_cqe *cqe)
{
	return cqe->res >= 0;
}

/* A submit's CQE: the op's buffers may be reused or freed. */
static inline bool xferk_cqe_buffer_reusable(const struct io_uring_cqe *cqe)
{
	return cqe->res >= 0 && cqe->res != XFERK_STATE_QUARANTINED;
}

/* A submit's CQE: every byte arrived. */
static inline bool xferk_cqe_succeeded(const struct io_uring_cqe *cqe)
{
	return cqe->res == XFERK_STATE_SUCCEEDED;
}

/* A submit's CQE in an IORING_SETUP_CQE32 ring: the op's handle. */
static inline uint64_t xferk_cqe_op(const struct io_uring_cqe *cqe)
{
	return cqe->big_cqe[0];
}

#ifdef __cplusplus
}
#endif

#endif /* XFERK_URING_H */
