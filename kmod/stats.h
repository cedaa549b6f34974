/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bottom layer (models and resources): the module-wide counters
 * (stats.c), which sysfs.c presents, and the causes of a path's death
 * they count; charging a budget, which counts what it refuses.
 */
#ifndef XFERK_STATS_H
#define XFERK_STATS_H

#include <linux/atomic.h>
#include <linux/types.h>

/* Why a session's path died (counted per cause in sysfs stats/). */
enum xferk_path_cause {
	XFERK_PATH_QP,		/* a failed completion, QP event or refused post */
	XFERK_PATH_PEER,	/* the peer disconnected */
	XFERK_PATH_KEEPALIVE,	/* a keepalive probe failed */
	XFERK_PATH_CANCEL,	/* a cancel's escalation flushed the QP */
	XFERK_PATH_LOST,	/* a work request's completion was lost */
	XFERK_PATH_CAUSES
};

/* stats.c: module-wide counters, shown in sysfs */
struct xferk_stats {
	atomic64_t ops_submitted;
	atomic64_t ops_succeeded;
	atomic64_t ops_failed;
	atomic64_t ops_timed_out;
	atomic64_t ops_live;
	atomic64_t ops_orphaned;
	atomic64_t bytes_read;
	atomic64_t bytes_written;
	atomic64_t pinned_pages;
	atomic64_t quarantined_pages;
	atomic64_t regions;
	atomic64_t dmabuf_regions;
	atomic64_t peers_connected;
	atomic64_t exports;
	atomic64_t cancel_requests;
	atomic64_t drains;
	atomic64_t drain_timeouts;
	atomic64_t quarantine_events;
	atomic64_t late_completions;
	atomic64_t ops_drained_after_exit;
	atomic64_t quarantine_limit_rejects;
	atomic64_t uring_parked;
	atomic64_t uring_completed;
	atomic64_t uring_submits_deferred;
	atomic64_t uring_exit_cancels;
	atomic64_t conns_rejected;
	atomic64_t conns_reaped;
	atomic64_t qp_errors;
	atomic64_t tokens_rejected;
	atomic64_t limit_rejects;
	atomic64_t keepalive_failures;
	atomic64_t path_deaths[XFERK_PATH_CAUSES];
	atomic64_t reconnect_attempts;
	atomic64_t reconnects;
	atomic64_t chunks_reposted;
	atomic64_t chunks_rerouted;
	atomic64_t completions_moderated;
	atomic64_t fences_asked;
	atomic64_t fences_answered;
	atomic64_t fences_confirmed;
	atomic64_t fences_unknown;
	atomic64_t dma_maps_in_post;
	atomic64_t sessions_stale;
	atomic64_t sessions_idle;
	atomic64_t conns_crossed;
	atomic64_t escalations_limited;
	atomic64_t windows_opened;
	atomic64_t closes_cooperative;
	atomic64_t closes_forced;
	atomic64_t close_ack_ns_total;
	atomic64_t close_ack_ns_max;
	atomic64_t revokes_answered;
	atomic64_t msgs_invalid;
	atomic64_t groups_aborted;
	atomic64_t notifies_sent;
	atomic64_t notifies_received;
	atomic64_t notifies_duplicate;
	atomic64_t notifies_unclaimed;
	atomic64_t events_dropped;
	atomic64_t destroy_retries;
};

extern struct xferk_stats xferk_stats;

int xferk_charge(atomic_long_t *used, unsigned long n, unsigned long limit,
		 int error);

#endif /* XFERK_STATS_H */
