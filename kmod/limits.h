/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Front layer: the module's parameters. limits.c registers them all: the
 * front's own limits are defined there and declared here, with their
 * checks; a lower layer's tunables are defined and declared by the layer
 * that reads them (conn.h, op.h, transport.h), so no lower layer needs
 * this header. main.c: the listener's address.
 */
#ifndef XFERK_LIMITS_H
#define XFERK_LIMITS_H

#include <linux/atomic.h>
#include <linux/types.h>
#include "handle.h"

struct xferk_file;

/* limits.c: Documentation/security.md lists each limit and its errno */
extern u32 xferk_handle_limit[XFERK_H_KINDS];
extern unsigned long xferk_max_export_pages_per_file;
extern unsigned long xferk_max_dmabuf_pages_per_file;
extern unsigned int xferk_qps_per_session;
int xferk_handle_add_limited(struct xferk_file *xf, struct xferk_hobj *obj,
			     u8 kind);
bool xferk_handle_room_limited(struct xferk_file *xf, u8 kind);

/* main.c: the listener's address (read-only after load) */
extern char *xferk_listen_addr;

#endif /* XFERK_LIMITS_H */
