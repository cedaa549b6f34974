/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sessions layer: notifications on their way to a peer's process (the
 * wire side of notify.c): queued on a session, sent as session messages
 * in sequence order, delivered once at the target. A file's queue of the
 * events they become is evq.h.
 */
#ifndef XFERK_NOTIFY_H
#define XFERK_NOTIFY_H

#include <linux/list.h>
#include <linux/types.h>

struct xferk_conn;
struct xferk_event;
struct xferk_export;
struct xferk_qacct;
struct xferk_remote;
struct xferk_wire_credit;
struct xferk_wire_notify;

/**
 * struct xferk_notify - a notification on its way to a target
 * @node: on the list of whoever owns it: a group's @aborted_notes, or its
 *	session's @notify_queue / @notify_posted (conn->lock)
 * @conn: the session it goes on; whoever holds it before it is queued
 *	keeps the session alive (an op's connections, a group's targets)
 * @acct: the account charged one work request for it (ref)
 * @seq: its sequence number in the session, from when it is queued
 * @id: the target export's id in the session
 * @tag: its tag
 * @bytes: DATA: bytes the op transferred
 * @type: XFERK_EVENT_*
 * @flags: XFERK_EVENT_INCOMPLETE
 */
struct xferk_notify {
	struct list_head node;
	struct xferk_conn *conn;
	struct xferk_qacct *acct;
	u64 seq;
	u64 id;
	u64 tag;
	u64 bytes;
	u8 type;
	u8 flags;
};

struct xferk_notify *xferk_notify_alloc(struct xferk_remote *rm,
					struct xferk_qacct *acct, u8 type,
					u64 tag);
void xferk_notify_free(struct xferk_notify *n);
void xferk_notify_free_list(struct list_head *list);
bool xferk_notify_queue_locked(struct xferk_notify *n);
void xferk_notify_send(struct xferk_notify *n);
void xferk_notify_send_list(struct list_head *list);
void xferk_notify_kick_locked(struct xferk_conn *c);
void xferk_notify_sent(struct xferk_conn *c, u64 seq);
void xferk_notify_path_lost(struct xferk_conn *c);
void xferk_notify_conn_gone(struct xferk_conn *c);
void xferk_notify_conn_down(struct xferk_conn *c);
bool xferk_notify_received(struct xferk_conn *c,
			   const struct xferk_wire_notify *m);
bool xferk_notify_credit_received(struct xferk_conn *c,
				  const struct xferk_wire_credit *m);
void xferk_notify_set_deliver(bool (*deliver)(struct xferk_export *e,
					      struct xferk_event *ev));

#endif /* XFERK_NOTIFY_H */
