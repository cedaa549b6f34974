/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sessions layer: the revoke protocol (revoke.c): the revokes a session
 * end sent and owes, and the entry points of the protocol and of the
 * session messages that carry it. Its messages' layout is in wire.h.
 */
#ifndef XFERK_REVOKE_H
#define XFERK_REVOKE_H

#include <linux/ktime.h>
#include <linux/types.h>

struct xferk_conn;
struct xferk_remote;

/* Ids of the peer's revoked exports an end remembers (the oldest go). */
#define XFERK_REVOKED_MAX	1024

/* States of a revoke this end sent (struct xferk_revoke.state). */
enum xferk_revoke_state {
	XFERK_REVOKE_FREE,	/* slot unused */
	XFERK_REVOKE_WAITING,	/* sent; its CLOSE waits for the answer */
	XFERK_REVOKE_ANSWERED,	/* answered; its CLOSE takes the slot back */
	XFERK_REVOKE_LOST,	/* its path died first; likewise */
	/* its CLOSE gave up: taken until the answer comes or the path dies */
	XFERK_REVOKE_ABANDONED,
};

/**
 * struct xferk_revoke - a revoke this end sent, or one it must answer
 * @id: the export's id in the session
 * @gen: the export's generation
 * @sent: when it was sent (sender)
 * @answered: when its answer came (sender)
 * @state: enum xferk_revoke_state (sender)
 */
struct xferk_revoke {
	u64 id;
	u64 gen;
	ktime_t sent;
	ktime_t answered;
	u8 state;
};

bool xferk_revoke_ask(struct xferk_conn *c, u64 id, u64 gen, int *slot);
bool xferk_revoke_await(struct xferk_conn *c, int slot, ktime_t deadline,
			u64 *ack_ns);
void xferk_msg_received(struct xferk_conn *c, const void *msg, u32 len);
void xferk_msg_sent(struct xferk_conn *c, u64 seq);
void xferk_msgs_kick_locked(struct xferk_conn *c);
void xferk_msgs_path_lost(struct xferk_conn *c);
int xferk_remote_listen(struct xferk_remote *rm);

#endif /* XFERK_REVOKE_H */
