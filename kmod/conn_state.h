/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The session state machine (struct xferk_conn.state): its states and the
 * table of allowed transitions. Verbs-free: KUnit checks the table
 * directly. conn.c changes a session's state only through
 * conn_change_state(), which refuses what the table does not allow.
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

/* Over: DOWN or CLOSED; nothing is posted and no path is made any more. */
static inline bool xferk_conn_state_over(int state)
{
	return state == XFERK_CONN_DOWN || state == XFERK_CONN_CLOSED;
}

#endif /* XFERK_CONN_STATE_H */
