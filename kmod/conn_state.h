/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The session and path state machines (struct xferk_conn.state and .path):
 * their states and tables of allowed transitions. Verbs-free: KUnit checks
 * the tables directly. conn.c changes a session's state only through
 * conn_change_state() and a path's only through conn_path_change(), which
 * refuse what the tables do not allow.
 *
 *   CONNECTING --> UP <--> RECONNECTING
 *        \         |         /
 *         `-----> DOWN <----'
 *                  |
 *                CLOSED
 *
 * DOWN: the session is over and its teardown is due; CLOSED: the
 * recovery work took the teardown on. DOWN -> CLOSED is the only way out
 * of DOWN and happens once, so a session is torn down exactly once
 * whatever races to take it down. Userspace sees CLOSED as DOWN.
 */
#ifndef XFERK_CONN_STATE_H
#define XFERK_CONN_STATE_H

#include <linux/types.h>
#include "../uapi/xferk.h"

/*
 * A session's path: its QPs, their cm_ids and its CQ (one path at a time).
 *
 *   NONE --> LIVE --> DEAD
 *     ^                 |
 *     `-----------------'
 *
 * LIVE: a path attempt or an up path, its QPs usable: work may be posted
 * (while the session is UP). DEAD: a QP left the ready-to-send state, or
 * the path failed or is being torn down: nothing is posted any more and
 * the path's teardown is due. NONE: the teardown is done (QPs destroyed,
 * what they carried reclaimed); the next attempt, or the peer's new path
 * (xferk_conn_path_attach()), makes it LIVE again. A path dies from any
 * context (a completion, a QP event, a refused post), so LIVE -> DEAD is
 * atomic and without the session's lock; the others are made under it.
 */
enum xferk_path_state {
	XFERK_PATH_LIVE,	/* 0: a session is created with its first attempt */
	XFERK_PATH_DEAD,
	XFERK_PATH_NONE,
	XFERK_PATH_NR_STATES
};

enum xferk_conn_state {
	XFERK_CONN_CONNECTING = XFERK_CONN_STATE_CONNECTING,
	XFERK_CONN_UP = XFERK_CONN_STATE_UP,
	XFERK_CONN_RECONNECTING = XFERK_CONN_STATE_RECONNECTING,
	XFERK_CONN_DOWN = XFERK_CONN_STATE_DOWN,
	XFERK_CONN_CLOSED,
	XFERK_CONN_NR_STATES
};

bool xferk_conn_state_allowed(int from, int to);
const char *xferk_conn_state_name(int state);
int xferk_conn_state_uapi(int state);
bool xferk_path_state_allowed(int from, int to);
const char *xferk_path_state_name(int state);

/* Over: DOWN or CLOSED; nothing is posted and no path is made any more. */
static inline bool xferk_conn_state_over(int state)
{
	return state == XFERK_CONN_DOWN || state == XFERK_CONN_CLOSED;
}

#endif /* XFERK_CONN_STATE_H */
