// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/* libxferk: thin, explicit wrappers around the /dev/xferk uAPI. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "libxferk.h"

struct xferk {
	int fd;
	uint32_t abi_version;
	uint64_t features;
};

#define XFERK_EXPORT __attribute__((visibility("default")))

/* Runs one command; the struct's size field must already be set. */
static int xferk_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, cmd, arg) < 0 ? -errno : 0;
	} while (ret == -EINTR);
	return ret;
}

XFERK_EXPORT int xferk_open(struct xferk **xp)
{
	struct xferk_ioc_info info = { .size = sizeof(info) };
	struct xferk *x;
	int ret;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->fd = open(XFERK_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (x->fd < 0) {
		ret = -errno;
		free(x);
		return ret;
	}
	ret = xferk_ioctl(x->fd, XFERK_IOC_INFO, &info);
	if (ret) {
		xferk_close(x);
		return ret;
	}
	x->abi_version = info.abi_version;
	x->features = info.features;
	*xp = x;
	return 0;
}

XFERK_EXPORT void xferk_close(struct xferk *x)
{
	if (!x)
		return;
	close(x->fd);
	free(x);
}

XFERK_EXPORT int xferk_fd(const struct xferk *x)
{
	return x->fd;
}

XFERK_EXPORT int xferk_wakeups(struct xferk *x, uint64_t *count)
{
	ssize_t n;

	if (!(x->features & XFERK_FEAT_POLL))
		return -EOPNOTSUPP;
	do
		n = read(x->fd, count, sizeof(*count));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == sizeof(*count) ? 0 : -EIO;
}

XFERK_EXPORT uint32_t xferk_abi_version(const struct xferk *x)
{
	return x->abi_version;
}

XFERK_EXPORT uint64_t xferk_features(const struct xferk *x)
{
	return x->features;
}

XFERK_EXPORT int xferk_mr_reg(struct xferk *x, void *addr, uint64_t len,
			      uint32_t access, uint64_t *mr)
{
	struct xferk_ioc_mr_reg a = {
		.size = sizeof(a),
		.addr = (uintptr_t)addr,
		.len = len,
		.access = access,
	};
	int ret = xferk_ioctl(x->fd, XFERK_IOC_MR_REG, &a);

	if (!ret)
		*mr = a.handle;
	return ret;
}

XFERK_EXPORT int xferk_mr_reg_dmabuf(struct xferk *x, int dmabuf_fd,
				     uint64_t offset, uint64_t len,
				     uint32_t access, uint64_t *mr)
{
	struct xferk_ioc_mr_reg a = {
		.size = sizeof(a),
		.flags = XFERK_MR_DMABUF,
		.addr = offset,
		.len = len,
		.access = access,
		.dmabuf_fd = dmabuf_fd,
	};
	int ret = xferk_ioctl(x->fd, XFERK_IOC_MR_REG, &a);

	if (!ret)
		*mr = a.handle;
	return ret;
}

/* The commands that take a handle and drop it. */
static int drop(struct xferk *x, unsigned long cmd, uint64_t handle)
{
	struct xferk_ioc_handle a = { .size = sizeof(a), .handle = handle };

	return xferk_ioctl(x->fd, cmd, &a);
}

XFERK_EXPORT int xferk_mr_dereg(struct xferk *x, uint64_t mr)
{
	return drop(x, XFERK_IOC_MR_DEREG, mr);
}

static int connect_common(struct xferk *x, struct xferk_ioc_connect *a,
			  uint64_t *conn)
{
	int ret;

	a->size = sizeof(*a);
	ret = xferk_ioctl(x->fd, XFERK_IOC_CONNECT, a);
	if (!ret)
		*conn = a->handle;
	return ret;
}

XFERK_EXPORT int xferk_connect(struct xferk *x, const char *ip, uint16_t port,
			       unsigned int timeout_ms, uint64_t *conn)
{
	return xferk_connect_qps(x, ip, port, timeout_ms, 0, conn);
}

XFERK_EXPORT int xferk_connect_qps(struct xferk *x, const char *ip,
				   uint16_t port, unsigned int timeout_ms,
				   unsigned int nr_qps, uint64_t *conn)
{
	struct xferk_ioc_connect a = {
		.port = port,
		.timeout_ms = timeout_ms,
		.nr_qps = nr_qps,
	};

	if (inet_pton(AF_INET, ip, a.addr) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, ip, a.addr) == 1)
		a.family = AF_INET6;
	else
		return -EINVAL;
	return connect_common(x, &a, conn);
}

XFERK_EXPORT int xferk_connect_null(struct xferk *x, uint64_t delay_ns,
				    uint64_t *conn)
{
	struct xferk_ioc_connect a = {
		.flags = XFERK_CONNECT_NULL_PEER,
		.null_delay_ns = delay_ns,
	};

	return connect_common(x, &a, conn);
}

XFERK_EXPORT int xferk_disconnect(struct xferk *x, uint64_t conn)
{
	return drop(x, XFERK_IOC_DISCONNECT, conn);
}

XFERK_EXPORT int xferk_export(struct xferk *x, uint64_t conn, uint64_t mr,
			      uint64_t offset, uint64_t len, uint32_t access,
			      struct xferk_token *token, uint64_t *export_handle)
{
	struct xferk_ioc_export a = {
		.size = sizeof(a),
		.conn = conn,
		.mr = mr,
		.offset = offset,
		.len = len,
		.access = access,
	};
	int ret = xferk_ioctl(x->fd, XFERK_IOC_EXPORT, &a);

	if (ret)
		return ret;
	memcpy(token->bytes, a.token, sizeof(token->bytes));
	*export_handle = a.handle;
	return 0;
}

XFERK_EXPORT int xferk_unexport(struct xferk *x, uint64_t export_handle)
{
	return drop(x, XFERK_IOC_UNEXPORT, export_handle);
}

XFERK_EXPORT int xferk_import(struct xferk *x, uint64_t conn,
			      const struct xferk_token *token, uint64_t *remote)
{
	struct xferk_ioc_import a = { .size = sizeof(a), .conn = conn };
	int ret;

	memcpy(a.token, token->bytes, sizeof(a.token));
	ret = xferk_ioctl(x->fd, XFERK_IOC_IMPORT, &a);
	if (!ret)
		*remote = a.handle;
	return ret;
}

XFERK_EXPORT int xferk_import_rail(struct xferk *x, uint64_t conn,
				   const struct xferk_token *token,
				   uint64_t remote)
{
	struct xferk_ioc_import a = { .size = sizeof(a), .conn = conn,
				      .flags = XFERK_IMPORT_RAIL,
				      .rail_of = remote };

	memcpy(a.token, token->bytes, sizeof(a.token));
	return xferk_ioctl(x->fd, XFERK_IOC_IMPORT, &a);
}

XFERK_EXPORT int xferk_unimport(struct xferk *x, uint64_t remote)
{
	return drop(x, XFERK_IOC_UNIMPORT, remote);
}

XFERK_EXPORT int xferk_token_format(const struct xferk_token *token, char *buf,
				    size_t len)
{
	size_t i;

	if (len < XFERK_TOKEN_HEX_LEN)
		return -ENOSPC;
	for (i = 0; i < sizeof(token->bytes); i++)
		snprintf(buf + 2 * i, 3, "%02x", token->bytes[i]);
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

XFERK_EXPORT int xferk_token_parse(const char *text, struct xferk_token *token)
{
	struct xferk_token t;
	size_t i;

	if (strlen(text) != 2 * sizeof(t.bytes))
		return -EINVAL;
	for (i = 0; i < sizeof(t.bytes); i++) {
		int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		t.bytes[i] = (uint8_t)(hi << 4 | lo);
	}
	*token = t;
	return 0;
}

XFERK_EXPORT int xferk_submit_group(struct xferk *x,
				    const struct xferk_frag *frags,
				    uint32_t nr_frags, uint64_t deadline_ns,
				    const struct xferk_submit_opts *opts,
				    uint64_t group, uint64_t notify_tag,
				    uint64_t *op)
{
	static const struct xferk_submit_opts defaults;
	const struct xferk_submit_opts *o = opts ? opts : &defaults;
	struct xferk_ioc_submit a = {
		.size = sizeof(a),
		.flags = o->flags,
		.frags = (uintptr_t)frags,
		.nr_frags = nr_frags,
		.frag_size = sizeof(*frags),
		.deadline_ns = deadline_ns,
		.user_data = o->user_data,
		.drain_budget_ns = o->drain_budget_ns,
		.priority = o->priority,
		.window_bytes = o->window_bytes,
		.window_chunks = o->window_chunks,
		.group = group,
		.notify_tag = notify_tag,
	};
	int ret = xferk_ioctl(x->fd, XFERK_IOC_SUBMIT, &a);

	if (!ret)
		*op = a.op;
	return ret;
}

XFERK_EXPORT int xferk_submit_ex(struct xferk *x, const struct xferk_frag *frags,
				 uint32_t nr_frags, uint64_t deadline_ns,
				 const struct xferk_submit_opts *opts,
				 uint64_t *op)
{
	return xferk_submit_group(x, frags, nr_frags, deadline_ns, opts, 0, 0,
				  op);
}

XFERK_EXPORT int xferk_submit(struct xferk *x, const struct xferk_frag *frags,
			      uint32_t nr_frags, uint64_t deadline_ns,
			      uint64_t user_data, uint64_t *op)
{
	struct xferk_submit_opts opts = { .user_data = user_data };

	return xferk_submit_ex(x, frags, nr_frags, deadline_ns, &opts, op);
}

XFERK_EXPORT int xferk_cancel_drain(struct xferk *x, uint64_t op,
				    uint64_t drain_deadline_ns,
				    struct xferk_op_snapshot *snap)
{
	struct xferk_ioc_cancel a = {
		.size = sizeof(a),
		.op = op,
		.drain_deadline_ns = drain_deadline_ns,
	};
	int ret = xferk_ioctl(x->fd, XFERK_IOC_CANCEL, &a);

	/* The snapshot is valid with -ETIMEDOUT (QUARANTINED) too. */
	if ((!ret || ret == -ETIMEDOUT) && snap)
		*snap = a.snap;
	return ret;
}

/*
 * Submit, wait; on anything but success cancel and drain the rest. Never
 * returns while a fragment can still touch the buffers, unless it says so
 * with XFERK_COMPLETION_UNKNOWN.
 */
XFERK_EXPORT int xferk_transfer_sync(struct xferk *x,
				     const struct xferk_frag *frags,
				     uint32_t nr_frags, uint64_t deadline_ns,
				     uint64_t drain_budget_ns,
				     struct xferk_op_snapshot *snap)
{
	struct xferk_op_snapshot s = { 0 };
	uint64_t op, now;
	int ret;

	ret = xferk_submit(x, frags, nr_frags, deadline_ns, 0, &op);
	if (ret)
		return ret;	/* nothing was submitted */
	ret = xferk_wait(x, op, deadline_ns, 0, &s);
	if (ret || s.state != XFERK_STATE_SUCCEEDED) {
		now = xferk_now_ns();
		xferk_cancel_drain(x, op, (deadline_ns > now ? deadline_ns : now) +
				   drain_budget_ns, &s);
	}
	xferk_release(x, op);
	if (snap)
		*snap = s;
	if (!s.buffer_reusable)
		return XFERK_COMPLETION_UNKNOWN;
	if (s.state == XFERK_STATE_SUCCEEDED)
		return 0;
	return s.first_error ? s.first_error : -EIO;
}

XFERK_EXPORT int xferk_wait(struct xferk *x, uint64_t op, uint64_t deadline_ns,
			    uint32_t flags, struct xferk_op_snapshot *snap)
{
	struct xferk_ioc_wait a = {
		.size = sizeof(a),
		.flags = flags,
		.op = op,
		.deadline_ns = deadline_ns,
	};
	int ret = xferk_ioctl(x->fd, XFERK_IOC_WAIT, &a);

	/* The snapshot is valid with -ETIMEDOUT too. */
	if ((!ret || ret == -ETIMEDOUT) && snap)
		*snap = a.snap;
	return ret;
}

XFERK_EXPORT int xferk_query(struct xferk *x, uint64_t op,
			     struct xferk_op_snapshot *snap)
{
	struct xferk_ioc_query a = { .size = sizeof(a), .op = op };
	int ret = xferk_ioctl(x->fd, XFERK_IOC_QUERY, &a);

	if (!ret)
		*snap = a.snap;
	return ret;
}

XFERK_EXPORT int xferk_conn_query(struct xferk *x, uint64_t conn,
				  struct xferk_conn_info *info)
{
	struct xferk_ioc_conn_query a = { .size = sizeof(a), .conn = conn };
	int ret = xferk_ioctl(x->fd, XFERK_IOC_CONN_QUERY, &a);

	if (!ret)
		*info = a.info;
	return ret;
}

XFERK_EXPORT int xferk_window_open(struct xferk *x, uint64_t conn, uint64_t mr,
				   const struct xferk_block *blocks,
				   uint32_t nr_blocks, uint32_t access,
				   struct xferk_token *token, uint64_t *window,
				   uint64_t *len)
{
	return xferk_window_open_gen(x, conn, mr, blocks, nr_blocks, access,
				     token, window, len, NULL);
}

XFERK_EXPORT int xferk_window_open_gen(struct xferk *x, uint64_t conn,
				       uint64_t mr,
				       const struct xferk_block *blocks,
				       uint32_t nr_blocks, uint32_t access,
				       struct xferk_token *token,
				       uint64_t *window, uint64_t *len,
				       uint64_t *generation)
{
	struct xferk_ioc_window_open a = {
		.size = sizeof(a),
		.conn = conn,
		.mr = mr,
		.blocks = (uintptr_t)blocks,
		.nr_blocks = nr_blocks,
		.access = access,
	};
	int ret = xferk_ioctl(x->fd, XFERK_IOC_WINDOW_OPEN, &a);

	if (ret)
		return ret;
	memcpy(token->bytes, a.token, sizeof(token->bytes));
	*window = a.handle;
	if (len)
		*len = a.len;
	if (generation)
		*generation = a.generation;
	return 0;
}

XFERK_EXPORT int xferk_window_close(struct xferk *x, uint64_t handle,
				    uint64_t deadline_ns, uint32_t *how,
				    uint64_t *ack_ns)
{
	struct xferk_ioc_window_close a = {
		.size = sizeof(a),
		.handle = handle,
		.deadline_ns = deadline_ns,
	};
	int ret = xferk_ioctl(x->fd, XFERK_IOC_WINDOW_CLOSE, &a);

	if (ret)
		return ret;
	if (how)
		*how = a.how;
	if (ack_ns)
		*ack_ns = a.ack_ns;
	return 0;
}

XFERK_EXPORT int xferk_release(struct xferk *x, uint64_t op)
{
	return drop(x, XFERK_IOC_RELEASE, op);
}

XFERK_EXPORT int xferk_group_create(struct xferk *x, uint64_t tag,
				    uint64_t *group, uint64_t *generation)
{
	struct xferk_ioc_group_create a = { .size = sizeof(a), .tag = tag };
	int ret = xferk_ioctl(x->fd, XFERK_IOC_GROUP_CREATE, &a);

	if (ret)
		return ret;
	*group = a.handle;
	if (generation)
		*generation = a.generation;
	return 0;
}

/* GROUP_ABORT, GROUP_WAIT and GROUP_QUERY: one group, its snapshot back. */
static int group_cmd(struct xferk *x, unsigned long cmd, uint64_t group,
		     uint64_t deadline_ns, uint32_t flags,
		     struct xferk_group_snapshot *snap)
{
	struct xferk_ioc_group a = {
		.size = sizeof(a),
		.flags = flags,
		.group = group,
		.deadline_ns = deadline_ns,
	};
	int ret = xferk_ioctl(x->fd, cmd, &a);

	/* The snapshot is valid with -ETIMEDOUT too. */
	if ((!ret || ret == -ETIMEDOUT) && snap)
		*snap = a.snap;
	return ret;
}

XFERK_EXPORT int xferk_group_abort(struct xferk *x, uint64_t group,
				   uint64_t drain_deadline_ns,
				   struct xferk_group_snapshot *snap)
{
	return group_cmd(x, XFERK_IOC_GROUP_ABORT, group, drain_deadline_ns, 0,
			 snap);
}

XFERK_EXPORT int xferk_group_wait(struct xferk *x, uint64_t group,
				  uint64_t deadline_ns, uint32_t flags,
				  struct xferk_group_snapshot *snap)
{
	return group_cmd(x, XFERK_IOC_GROUP_WAIT, group, deadline_ns, flags,
			 snap);
}

XFERK_EXPORT int xferk_group_query(struct xferk *x, uint64_t group,
				   struct xferk_group_snapshot *snap)
{
	return group_cmd(x, XFERK_IOC_GROUP_QUERY, group, 0, 0, snap);
}

XFERK_EXPORT int xferk_group_release(struct xferk *x, uint64_t group)
{
	return drop(x, XFERK_IOC_GROUP_RELEASE, group);
}

XFERK_EXPORT int xferk_notify(struct xferk *x, uint64_t remote, uint64_t tag)
{
	struct xferk_ioc_notify a = {
		.size = sizeof(a),
		.remote = remote,
		.tag = tag,
	};

	return xferk_ioctl(x->fd, XFERK_IOC_NOTIFY, &a);
}

XFERK_EXPORT int xferk_events(struct xferk *x, struct xferk_event *events,
			      uint32_t max_events, uint64_t deadline_ns,
			      uint32_t *nr_events, uint64_t *dropped)
{
	struct xferk_ioc_events a = {
		.size = sizeof(a),
		.events = (uintptr_t)events,
		.max_events = max_events,
		.deadline_ns = deadline_ns,
	};
	int ret = xferk_ioctl(x->fd, XFERK_IOC_EVENTS, &a);

	if (ret && ret != -ETIMEDOUT)
		return ret;
	/* -ETIMEDOUT: none arrived, and none can have been dropped. */
	*nr_events = ret ? 0 : a.nr_events;
	if (dropped)
		*dropped = ret ? 0 : a.dropped;
	return ret;
}

XFERK_EXPORT uint64_t xferk_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

XFERK_EXPORT const char *xferk_state_name(uint32_t state)
{
	static const char *const names[XFERK_STATE_COUNT] = {
		"SUBMITTED", "IN_PROGRESS", "SUCCEEDED", "FAILED", "TIMED_OUT",
		"CANCEL_REQUESTED", "DRAINING", "DRAINED", "QUARANTINED",
	};

	return state < XFERK_STATE_COUNT ? names[state] : "UNKNOWN";
}
