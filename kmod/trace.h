/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of xferk (tracefs: events/xferk/). An op is named by its
 * handle as SUBMIT returned it (it stays the op's name after RELEASE).
 * Documentation/module.md lists them, with perf and bpftrace one-liners.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM xferk

#if !defined(XFERK_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define XFERK_TRACE_H

#include <linux/tracepoint.h>

TRACE_EVENT(xferk_op_submit,
	TP_PROTO(u64 op, u64 bytes, u32 chunks, u32 prio, u64 group),
	TP_ARGS(op, bytes, chunks, prio, group),
	TP_STRUCT__entry(
		__field(u64, op)
		__field(u64, bytes)
		__field(u32, chunks)
		__field(u32, prio)
		__field(u64, group)
	),
	TP_fast_assign(
		__entry->op = op;
		__entry->bytes = bytes;
		__entry->chunks = chunks;
		__entry->prio = prio;
		__entry->group = group;
	),
	TP_printk("op=%#llx bytes=%llu chunks=%u prio=%u group=%#llx",
		  __entry->op, __entry->bytes, __entry->chunks, __entry->prio,
		  __entry->group)
);

DECLARE_EVENT_CLASS(xferk_chunk,
	TP_PROTO(u64 op, u32 conn, u32 len, int error),
	TP_ARGS(op, conn, len, error),
	TP_STRUCT__entry(
		__field(u64, op)
		__field(u32, conn)
		__field(u32, len)
		__field(int, error)
	),
	TP_fast_assign(
		__entry->op = op;
		__entry->conn = conn;
		__entry->len = len;
		__entry->error = error;
	),
	TP_printk("op=%#llx conn=%u len=%u error=%d", __entry->op,
		  __entry->conn, __entry->len, __entry->error)
);

/* The admission queue let a work request go. */
DEFINE_EVENT(xferk_chunk, xferk_chunk_dispatch,
	TP_PROTO(u64 op, u32 conn, u32 len, int error),
	TP_ARGS(op, conn, len, error));

/* A work request was handed to the device. */
DEFINE_EVENT(xferk_chunk, xferk_chunk_post,
	TP_PROTO(u64 op, u32 conn, u32 len, int error),
	TP_ARGS(op, conn, len, error));

/* A work request became terminal (completed, flushed or never posted). */
DEFINE_EVENT(xferk_chunk, xferk_chunk_done,
	TP_PROTO(u64 op, u32 conn, u32 len, int error),
	TP_ARGS(op, conn, len, error));

DECLARE_EVENT_CLASS(xferk_op_event,
	TP_PROTO(u64 op, u32 state),
	TP_ARGS(op, state),
	TP_STRUCT__entry(
		__field(u64, op)
		__field(u32, state)
	),
	TP_fast_assign(
		__entry->op = op;
		__entry->state = state;
	),
	TP_printk("op=%#llx state=%s", __entry->op,
		  __print_symbolic(__entry->state,
				   { 0, "SUBMITTED" }, { 1, "IN_PROGRESS" },
				   { 2, "SUCCEEDED" }, { 3, "FAILED" },
				   { 4, "TIMED_OUT" }, { 5, "CANCEL_REQUESTED" },
				   { 6, "DRAINING" }, { 7, "DRAINED" },
				   { 8, "QUARANTINED" }))
);

/* Its deadline passed. */
DEFINE_EVENT(xferk_op_event, xferk_op_deadline,
	TP_PROTO(u64 op, u32 state), TP_ARGS(op, state));

/* A cancel started (CANCEL, GROUP_ABORT, the deadline policy, exit). */
DEFINE_EVENT(xferk_op_event, xferk_op_cancel,
	TP_PROTO(u64 op, u32 state), TP_ARGS(op, state));

/* Its drain deadline passed with work requests still posted. */
DEFINE_EVENT(xferk_op_event, xferk_op_quarantine,
	TP_PROTO(u64 op, u32 state), TP_ARGS(op, state));

/* It became physically complete: its buffers are reusable. */
DEFINE_EVENT(xferk_op_event, xferk_op_physical,
	TP_PROTO(u64 op, u32 state), TP_ARGS(op, state));

/* It is freed: handle released and physically complete. */
DEFINE_EVENT(xferk_op_event, xferk_op_release,
	TP_PROTO(u64 op, u32 state), TP_ARGS(op, state));

TRACE_EVENT(xferk_conn_state,
	TP_PROTO(u32 conn, int from, int to, int error),
	TP_ARGS(conn, from, to, error),
	TP_STRUCT__entry(
		__field(u32, conn)
		__field(int, from)
		__field(int, to)
		__field(int, error)
	),
	TP_fast_assign(
		__entry->conn = conn;
		__entry->from = from;
		__entry->to = to;
		__entry->error = error;
	),
	TP_printk("conn=%u %d->%d error=%d", __entry->conn, __entry->from,
		  __entry->to, __entry->error)
);

#endif /* XFERK_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
