// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions: a session's timers. Its own deadline (timer_work): the
 * handshake of either end, the time a local user has to claim a passive
 * end that came up, reconnect_ms for a RECONNECTING session to get a new
 * path; when it passes, the session goes down. And the keepalive
 * (keepalive_work): while the session is up, its transport probes the
 * peer every keepalive_ms, and a failed probe kills the path like a
 * failed work request; and every keepalive_ms (or second), a work request
 * outstanding for lost_completion_ms replaces the path.
 *
 * Locking: both are armed under c->lock, never once the session is CLOSED
 * (its teardown cancels them); the keepalive re-arms itself only under
 * c->lock while the session may post. A probe's completion (any context)
 * clears a bit and, if the probe failed, marks the QP dead.
 */
#include "conn.h"
#include "conn_internal.h"
#include "conn_state.h"
#include "stats.h"
#include "transport.h"

/* Registered as parameters by limits.c. */
unsigned int xferk_keepalive_ms = 2000;
unsigned int xferk_session_idle_ms;

/* (Re)arms the session's own deadline @ms from now, with c->lock. */
void conn_arm_timer_locked(struct xferk_conn *c, unsigned int ms)
{
	lockdep_assert_held(&c->lock);
	if (c->state != XFERK_CONN_CLOSED)
		mod_delayed_work(xferk_conn_wq, &c->timer_work,
				 msecs_to_jiffies(ms));
}

/*
 * A deadline of the connection itself: the handshake of either end; for a
 * passive end that came up, the time a local user has to claim it; for a
 * RECONNECTING session, reconnect_ms to get a new path.
 */
void conn_timer(struct work_struct *work)
{
	struct xferk_conn *c = container_of(to_delayed_work(work),
					    struct xferk_conn, timer_work);
	int state, error;

	mutex_lock(&c->lock);
	state = c->state;
	error = c->error;
	mutex_unlock(&c->lock);
	if (xferk_conn_state_over(state) ||
	    (state == XFERK_CONN_UP &&
	     (c->active || test_bit(XFERK_CONN_F_CLAIMED, &c->flags))))
		return;
	if (state == XFERK_CONN_RECONNECTING) {
		xferk_conn_down(c, error);
		return;
	}
	if (!c->active)
		atomic64_inc(&xferk_stats.conns_reaped);
	xferk_conn_down(c, -ETIMEDOUT);
}

/* Until the next probe; when disabled, look again in a second. */
unsigned long keepalive_delay(void)
{
	return msecs_to_jiffies(READ_ONCE(xferk_keepalive_ms) ?: MSEC_PER_SEC);
}

/*
 * Keepalive: while a connection is up, its transport probes the peer
 * every keepalive_ms (one probe at a time; none while the transport says
 * it cannot, e.g. its own link is down). A probe that fails takes the QP
 * down like any failed work request, so an end whose peer is gone (the
 * host died or rebooted, its module was reloaded, the peer's QP died
 * during a link outage) goes down by itself within keepalive_ms plus the
 * retry window of a probe it can post, even when no local user posts on
 * it: CONNECT then makes a new one instead of returning it.
 */
/*
 * An end we initiated that no local object has used for session_idle_ms,
 * with nothing posted or waiting to be: with c->lock.
 */
static bool conn_idle_locked(struct xferk_conn *c)
{
	u64 idle_ns = (u64)READ_ONCE(xferk_session_idle_ms) * NSEC_PER_MSEC;

	lockdep_assert_held(&c->lock);
	return c->active && idle_ns && !atomic_read(&c->users) &&
	       !c->outstanding && list_empty(&c->pending) &&
	       ktime_get_ns() - atomic64_read(&c->idle_since) >= idle_ns;
}

void conn_keepalive(struct work_struct *work)
{
	struct xferk_conn *c = container_of(to_delayed_work(work),
					    struct xferk_conn, keepalive_work);
	bool idle, lost;
	int ret = 0;

	mutex_lock(&c->lock);
	if (!xferk_conn_postable(c)) {
		mutex_unlock(&c->lock);
		return;
	}
	idle = conn_idle_locked(c);
	lost = conn_post_overdue_locked(c);
	if (READ_ONCE(xferk_keepalive_ms) &&
	    !test_and_set_bit(XFERK_CONN_F_PROBING, &c->flags)) {
		ret = c->transport->probe(&c->path);
		if (ret)
			clear_bit(XFERK_CONN_F_PROBING, &c->flags);
		/* The transport cannot probe now (its link is down). */
		if (ret == -EAGAIN)
			ret = 0;
	}
	queue_delayed_work(xferk_conn_wq, &c->keepalive_work, keepalive_delay());
	mutex_unlock(&c->lock);
	if (lost)
		xferk_conn_completion_lost(c);
	else if (ret)
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_KEEPALIVE);
	else if (idle)
		conn_reap_idle(c);
}

/**
 * xferk_conn_probe_done() - a keepalive probe completed (any context)
 * @c: the connection
 * @error: 0, or why the probe failed (not for a flushed probe: its QP is
 *	already going down)
 *
 * A failed probe means the path died (ECONNRESET), as when a chunk fails.
 */
void xferk_conn_probe_done(struct xferk_conn *c, int error)
{
	if (error) {
		atomic64_inc(&xferk_stats.keepalive_failures);
		xferk_conn_qp_dead(c, -ECONNRESET, XFERK_PATH_KEEPALIVE);
	}
	clear_bit(XFERK_CONN_F_PROBING, &c->flags);
}

/* (Re)arms the connection's own deadline @ms from now. */
void xferk_conn_arm_timer(struct xferk_conn *c, unsigned int ms)
{
	mutex_lock(&c->lock);
	conn_arm_timer_locked(c, ms);
	mutex_unlock(&c->lock);
}
