/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The expected layout of the uAPI structs, checked where the kernel
 * compiles the header (KUnit suite xferk_uapi) and where userspace does
 * (tests/unit/uapi_layout.c): both sides must agree byte for byte.
 */
#ifndef XFERK_TEST_UAPI_LAYOUT_H
#define XFERK_TEST_UAPI_LAYOUT_H

struct layout_case {
	const char *what;
	size_t actual;
	size_t expected;
};

static const struct layout_case xferk_layout_cases[] = {
	{ "xferk_ioc_info.size", offsetof(struct xferk_ioc_info, size), 0 },
	{ "xferk_ioc_info.flags", offsetof(struct xferk_ioc_info, flags), 4 },
	{ "xferk_ioc_info.abi_version", offsetof(struct xferk_ioc_info, abi_version), 8 },
	{ "xferk_ioc_info.features", offsetof(struct xferk_ioc_info, features), 16 },
	{ "xferk_ioc_info.reserved", offsetof(struct xferk_ioc_info, reserved), 24 },
	{ "sizeof xferk_ioc_info", sizeof(struct xferk_ioc_info), 56 },
	{ "xferk_ioc_mr_reg.addr", offsetof(struct xferk_ioc_mr_reg, addr), 8 },
	{ "xferk_ioc_mr_reg.handle", offsetof(struct xferk_ioc_mr_reg, handle), 32 },
	{ "sizeof xferk_ioc_mr_reg", sizeof(struct xferk_ioc_mr_reg), 56 },
	{ "sizeof xferk_ioc_handle", sizeof(struct xferk_ioc_handle), 32 },
	{ "xferk_ioc_connect.addr", offsetof(struct xferk_ioc_connect, addr), 16 },
	{ "xferk_ioc_connect.handle", offsetof(struct xferk_ioc_connect, handle), 40 },
	{ "sizeof xferk_ioc_connect", sizeof(struct xferk_ioc_connect), 64 },
	{ "xferk_ioc_export.token", offsetof(struct xferk_ioc_export, token), 56 },
	{ "sizeof xferk_ioc_export", sizeof(struct xferk_ioc_export), 136 },
	{ "xferk_ioc_import.token", offsetof(struct xferk_ioc_import, token), 16 },
	{ "sizeof xferk_ioc_import", sizeof(struct xferk_ioc_import), 104 },
	{ "xferk_frag.opcode", offsetof(struct xferk_frag, opcode), 40 },
	{ "sizeof xferk_frag", sizeof(struct xferk_frag), 48 },
	{ "xferk_ioc_submit.deadline_ns", offsetof(struct xferk_ioc_submit, deadline_ns), 24 },
	{ "xferk_ioc_submit.drain_budget_ns",
	  offsetof(struct xferk_ioc_submit, drain_budget_ns), 48 },
	{ "xferk_ioc_submit.priority", offsetof(struct xferk_ioc_submit, priority), 56 },
	{ "xferk_ioc_submit.window_bytes",
	  offsetof(struct xferk_ioc_submit, window_bytes), 64 },
	{ "sizeof xferk_ioc_submit", sizeof(struct xferk_ioc_submit), 80 },
	{ "xferk_op_snapshot.total_fragments",
	  offsetof(struct xferk_op_snapshot, total_fragments), 40 },
	{ "xferk_op_snapshot.failure",
	  offsetof(struct xferk_op_snapshot, failure), 76 },
	{ "xferk_op_snapshot.submit_to_physical_ns",
	  offsetof(struct xferk_op_snapshot, submit_to_physical_ns), 80 },
	{ "sizeof xferk_op_snapshot", sizeof(struct xferk_op_snapshot), 112 },
	{ "xferk_conn_info.path_deaths",
	  offsetof(struct xferk_conn_info, path_deaths), 16 },
	{ "xferk_conn_info.initiator",
	  offsetof(struct xferk_conn_info, initiator), 40 },
	{ "sizeof xferk_conn_info", sizeof(struct xferk_conn_info), 64 },
	{ "xferk_ioc_conn_query.info",
	  offsetof(struct xferk_ioc_conn_query, info), 16 },
	{ "sizeof xferk_ioc_conn_query", sizeof(struct xferk_ioc_conn_query), 80 },
	{ "sizeof xferk_block", sizeof(struct xferk_block), 16 },
	{ "xferk_ioc_window_open.blocks",
	  offsetof(struct xferk_ioc_window_open, blocks), 24 },
	{ "xferk_ioc_window_open.handle",
	  offsetof(struct xferk_ioc_window_open, handle), 40 },
	{ "xferk_ioc_window_open.token",
	  offsetof(struct xferk_ioc_window_open, token), 64 },
	{ "sizeof xferk_ioc_window_open", sizeof(struct xferk_ioc_window_open), 144 },
	{ "xferk_ioc_window_close.deadline_ns",
	  offsetof(struct xferk_ioc_window_close, deadline_ns), 16 },
	{ "xferk_ioc_window_close.ack_ns",
	  offsetof(struct xferk_ioc_window_close, ack_ns), 32 },
	{ "sizeof xferk_ioc_window_close", sizeof(struct xferk_ioc_window_close), 56 },
	{ "xferk_ioc_wait.snap", offsetof(struct xferk_ioc_wait, snap), 24 },
	{ "sizeof xferk_ioc_wait", sizeof(struct xferk_ioc_wait), 136 },
	{ "xferk_ioc_query.snap", offsetof(struct xferk_ioc_query, snap), 16 },
	{ "xferk_ioc_cancel.snap", offsetof(struct xferk_ioc_cancel, snap), 24 },
	{ "sizeof xferk_ioc_cancel", sizeof(struct xferk_ioc_cancel), 136 },
	{ "xferk_uring_cmd.flags", offsetof(struct xferk_uring_cmd, flags), 8 },
	{ "sizeof xferk_uring_cmd", sizeof(struct xferk_uring_cmd), 16 },
};

#endif
