/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libxferk: the C library for /dev/xferk.
 *
 * Every function that can fail returns 0 (or a non-negative value) on
 * success and a negative errno on failure; the result is the error
 * (errno may be changed by the system calls made, and means nothing).
 * Calls on one struct xferk may run in several threads at once (the struct
 * does not change after xferk_open(); each call is ioctls on its file),
 * except xferk_close(), which no other call on it may overlap.
 * See Documentation/libxferk.md for each function's RETURN VALUE and ERRORS.
 */
#ifndef LIBXFERK_H
#define LIBXFERK_H

#include <stddef.h>
#include <stdint.h>
#include "xferk.h"

#ifdef __cplusplus
extern "C" {
#endif

struct xferk;

/* An export token: opaque bytes, carried to the peer by the caller. */
struct xferk_token {
	uint8_t bytes[XFERK_TOKEN_SIZE];
};

/* Text form of a token: 2 * XFERK_TOKEN_SIZE hex digits and a NUL. */
#define XFERK_TOKEN_HEX_LEN	(2 * XFERK_TOKEN_SIZE + 1)

int xferk_open(struct xferk **xp);
void xferk_close(struct xferk *x);
int xferk_fd(const struct xferk *x);
int xferk_wakeups(struct xferk *x, uint64_t *count);
uint32_t xferk_abi_version(const struct xferk *x);
uint64_t xferk_features(const struct xferk *x);

int xferk_mr_reg(struct xferk *x, void *addr, uint64_t len, uint32_t access,
		 uint64_t *mr);
int xferk_mr_reg_dmabuf(struct xferk *x, int dmabuf_fd, uint64_t offset,
			uint64_t len, uint32_t access, uint64_t *mr);
int xferk_mr_dereg(struct xferk *x, uint64_t mr);

int xferk_connect(struct xferk *x, const char *ip, uint16_t port,
		  unsigned int timeout_ms, uint64_t *conn);
int xferk_connect_qps(struct xferk *x, const char *ip, uint16_t port,
		      unsigned int timeout_ms, unsigned int nr_qps,
		      uint64_t *conn);
int xferk_connect_null(struct xferk *x, uint64_t delay_ns, uint64_t *conn);
int xferk_disconnect(struct xferk *x, uint64_t conn);

int xferk_export(struct xferk *x, uint64_t conn, uint64_t mr, uint64_t offset,
		 uint64_t len, uint32_t access, struct xferk_token *token,
		 uint64_t *export_handle);
int xferk_unexport(struct xferk *x, uint64_t export_handle);
int xferk_import(struct xferk *x, uint64_t conn,
		 const struct xferk_token *token, uint64_t *remote);
int xferk_import_rail(struct xferk *x, uint64_t conn,
		      const struct xferk_token *token, uint64_t remote);
int xferk_unimport(struct xferk *x, uint64_t remote);
int xferk_token_format(const struct xferk_token *token, char *buf,
		       size_t len);
int xferk_token_parse(const char *text, struct xferk_token *token);

/*
 * xferk_transfer_sync(): the transfer may still be running and can still
 * touch the buffers; keep them alive and do not reuse them.
 */
#define XFERK_COMPLETION_UNKNOWN	1

/*
 * Options of xferk_submit_ex() and xferk_submit_group(); zero means the
 * default for each.
 */
struct xferk_submit_opts {
	uint32_t flags;			/* XFERK_SUBMIT_* */
	uint64_t drain_budget_ns;	/* with XFERK_SUBMIT_CANCEL_ON_DEADLINE */
	uint64_t user_data;
	uint32_t priority;		/* XFERK_PRIO_* (0: normal) */
	uint64_t window_bytes;		/* op window: bytes in flight */
	uint32_t window_chunks;		/* op window: work requests in flight */
};

int xferk_submit(struct xferk *x, const struct xferk_frag *frags,
		 uint32_t nr_frags, uint64_t deadline_ns, uint64_t user_data,
		 uint64_t *op);
int xferk_submit_ex(struct xferk *x, const struct xferk_frag *frags,
		    uint32_t nr_frags, uint64_t deadline_ns,
		    const struct xferk_submit_opts *opts, uint64_t *op);
int xferk_cancel_drain(struct xferk *x, uint64_t op,
		       uint64_t drain_deadline_ns,
		       struct xferk_op_snapshot *snap);
int xferk_transfer_sync(struct xferk *x, const struct xferk_frag *frags,
			uint32_t nr_frags, uint64_t deadline_ns,
			uint64_t drain_budget_ns,
			struct xferk_op_snapshot *snap);
int xferk_wait(struct xferk *x, uint64_t op, uint64_t deadline_ns,
	       uint32_t flags, struct xferk_op_snapshot *snap);
int xferk_query(struct xferk *x, uint64_t op, struct xferk_op_snapshot *snap);
int xferk_release(struct xferk *x, uint64_t op);
int xferk_conn_query(struct xferk *x, uint64_t conn,
		     struct xferk_conn_info *info);
int xferk_window_open(struct xferk *x, uint64_t conn, uint64_t mr,
		      const struct xferk_block *blocks, uint32_t nr_blocks,
		      uint32_t access, struct xferk_token *token,
		      uint64_t *window, uint64_t *len);
int xferk_window_open_gen(struct xferk *x, uint64_t conn, uint64_t mr,
			  const struct xferk_block *blocks, uint32_t nr_blocks,
			  uint32_t access, struct xferk_token *token,
			  uint64_t *window, uint64_t *len, uint64_t *generation);
int xferk_window_close(struct xferk *x, uint64_t handle, uint64_t deadline_ns,
		       uint32_t *how, uint64_t *ack_ns);

/* Request groups (XFERK_FEAT_GROUPS) and notifications (XFERK_FEAT_NOTIFY). */
int xferk_group_create(struct xferk *x, uint64_t tag, uint64_t *group,
		       uint64_t *generation);
int xferk_group_abort(struct xferk *x, uint64_t group,
		      uint64_t drain_deadline_ns,
		      struct xferk_group_snapshot *snap);
int xferk_group_wait(struct xferk *x, uint64_t group, uint64_t deadline_ns,
		     uint32_t flags, struct xferk_group_snapshot *snap);
int xferk_group_query(struct xferk *x, uint64_t group,
		      struct xferk_group_snapshot *snap);
int xferk_group_release(struct xferk *x, uint64_t group);
int xferk_submit_group(struct xferk *x, const struct xferk_frag *frags,
		       uint32_t nr_frags, uint64_t deadline_ns,
		       const struct xferk_submit_opts *opts, uint64_t group,
		       uint64_t notify_tag, uint64_t *op);
int xferk_notify(struct xferk *x, uint64_t remote, uint64_t tag);
int xferk_events(struct xferk *x, struct xferk_event *events,
		 uint32_t max_events, uint64_t deadline_ns,
		 uint32_t *nr_events, uint64_t *dropped);

uint64_t xferk_now_ns(void);
const char *xferk_state_name(uint32_t state);

#ifdef __cplusplus
}
#endif

#endif /* LIBXFERK_H */
