/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Front layer: the module's parameters: the limits and their checks
 * (limits.c), the listener's address (main.c).
 */
#ifndef XFERK_LIMITS_H
#define XFERK_LIMITS_H

#include <linux/atomic.h>
#include <linux/socket.h>
#include <linux/types.h>
#include "handle.h"

struct xferk_file;

/* limits.c: Documentation/security.md lists each limit and its errno */
extern u32 xferk_handle_limit[XFERK_H_KINDS];
extern unsigned int xferk_max_chunks_per_file;
extern unsigned long xferk_max_export_pages_per_file;
extern unsigned int xferk_max_passive_conns;
extern unsigned int xferk_qps_per_session;
extern unsigned int xferk_max_peer_qps;
extern unsigned int xferk_passive_idle_ms;
extern unsigned int xferk_handshake_timeout_ms;
extern unsigned int xferk_keepalive_ms;
extern unsigned int xferk_session_idle_ms;
extern unsigned int xferk_reconnect_ms;
extern unsigned int xferk_escalation_interval_ms;
int xferk_handle_add_limited(struct xferk_file *xf, struct xferk_hobj *obj,
			     u8 kind);
int xferk_charge(atomic_long_t *used, unsigned long n, unsigned long limit,
		 int error);
bool xferk_handle_room_limited(struct xferk_file *xf, u8 kind);
bool xferk_escalation_allowed(atomic64_t *last_ns);

/* main.c: the listener's parameters (read-only after load) */
extern char *xferk_listen_addr;
extern unsigned short xferk_listen_port;
extern struct sockaddr_storage xferk_listen_sockaddr;

#endif /* XFERK_LIMITS_H */
