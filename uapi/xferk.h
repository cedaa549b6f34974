/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * xferk user API: the one header shared by xferk.ko and libxferk.
 *
 * Extensibility rules (Documentation/uapi.md has the full text):
 *  - Every command is _IOWR(XFERK_IOC_MAGIC, nr, struct). The kernel
 *    dispatches on the magic and the number; the size encoded in the
 *    command is that of the first version of the struct and is not used
 *    for anything else.
 *  - Every argument struct starts with __u32 size (bytes the caller passes,
 *    normally sizeof) and __u32 flags. All fields are naturally aligned with
 *    explicit padding, pointers travel as __u64, and the struct size is a
 *    multiple of 8.
 *  - A caller built against an older header passes a smaller size: the
 *    kernel treats the missing tail as zero. A caller built against a newer
 *    header passes a larger size: the kernel accepts it only if every byte
 *    it does not know is zero (-E2BIG otherwise). A size below the first
 *    version's size, or above XFERK_ARG_MAX_SIZE, is -EINVAL / -E2BIG.
 *  - Unknown flag bits and non-zero reserved fields are -EINVAL.
 *  - Output goes back into the first min(size, kernel size) bytes. If it
 *    cannot be (-EFAULT), whatever the command created is taken back
 *    (a rail IMPORT's rail stays: see Documentation/uapi.md).
 *  - Every command returns 0 or one of the errnos Documentation/uapi.md
 *    lists for it; never one that came from a peer or a device.
 *  - New fields are only ever appended; a feature bit in
 *    xferk_ioc_info.features announces each new command or field.
 */
#ifndef _UAPI_XFERK_H
#define _UAPI_XFERK_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Mode 0660; udev gives it to group "xferk" (Documentation/security.md). */
#define XFERK_DEVICE_PATH	"/dev/xferk"

/*
 * Incremented on every change of the uAPI. Additions keep old callers
 * working (see the rules above); a caller checks features, not this number,
 * before using a newer command.
 */
#define XFERK_ABI_VERSION	12

/* Largest argument struct the kernel accepts from a (future) caller. */
#define XFERK_ARG_MAX_SIZE	4096

#define XFERK_IOC_MAGIC		0xE7	/* unused in ioctl-number.rst as of 6.1 */

/* Feature bits reported in xferk_ioc_info.features. */
#define XFERK_FEAT_INFO		(1ULL << 0)	/* XFERK_IOC_INFO and these rules */
#define XFERK_FEAT_DATAPATH	(1ULL << 1)	/* regions, connections, ops */
#define XFERK_FEAT_NULL_PEER	(1ULL << 2)	/* XFERK_CONNECT_NULL_PEER */
#define XFERK_FEAT_CANCEL	(1ULL << 3)	/* XFERK_IOC_CANCEL, drain policy */
#define XFERK_FEAT_URING	(1ULL << 4)	/* IORING_OP_URING_CMD, see below */
#define XFERK_FEAT_QUEUE	(1ULL << 5)	/* priority classes, op windows */
/* Paths replaced, xferk_op_snapshot.failure, XFERK_IOC_CONN_QUERY */
#define XFERK_FEAT_SESSIONS	(1ULL << 6)
/* XFERK_IOC_WINDOW_OPEN, XFERK_IOC_WINDOW_CLOSE, the revoke protocol */
#define XFERK_FEAT_WINDOWS	(1ULL << 7)
/* XFERK_IOC_GROUP_*, xferk_ioc_submit.group */
#define XFERK_FEAT_GROUPS	(1ULL << 8)
/* XFERK_IOC_NOTIFY, XFERK_IOC_EVENTS, XFERK_SUBMIT_NOTIFY */
#define XFERK_FEAT_NOTIFY	(1ULL << 9)
/* XFERK_IMPORT_RAIL: a remote handle striped over several sessions */
#define XFERK_FEAT_RAILS	(1ULL << 10)
/* xferk_ioc_connect.nr_qps, xferk_conn_info.nr_qps: sessions of many QPs */
#define XFERK_FEAT_QPS		(1ULL << 11)
/* XFERK_MR_DMABUF: regions of dma-bufs (Documentation/gpu.md) */
#define XFERK_FEAT_DMABUF	(1ULL << 12)
/* poll(2) and read(2) of the file: a count of its ops' wakeups and events */
#define XFERK_FEAT_POLL		(1ULL << 13)
/* A window's first block may start and its last end mid-page */
#define XFERK_FEAT_WINDOW_EDGES	(1ULL << 14)

/*
 * Handles are opaque, non-zero __u64 values, valid only on the open file
 * that created them. A handle of another file fails with EBADF, a handle
 * whose object is gone with ESTALE, a malformed one or one of the wrong
 * kind with EINVAL.
 */

/* Deadlines: absolute CLOCK_MONOTONIC nanoseconds (initial time namespace). */
#define XFERK_DEADLINE_NONE	(~0ULL)

/* Access bits of a region (XFERK_IOC_MR_REG) and of an export. */
#define XFERK_ACCESS_LOCAL_SRC		(1U << 0)	/* source of RDMA WRITE */
#define XFERK_ACCESS_LOCAL_DST		(1U << 1)	/* destination of RDMA READ */
#define XFERK_ACCESS_REMOTE_READ	(1U << 2)	/* a peer may RDMA READ it */
#define XFERK_ACCESS_REMOTE_WRITE	(1U << 3)	/* a peer may RDMA WRITE it */
#define XFERK_ACCESS_ALL		0xfU

/* xferk_ioc_mr_reg.flags */
#define XFERK_MR_DMABUF		(1U << 0)	/* a range of a dma-buf */

/**
 * struct xferk_ioc_mr_reg - XFERK_IOC_MR_REG: pin a user range as a region
 * @size: sizeof as the caller knows it
 * @flags: 0, or XFERK_MR_DMABUF (XFERK_FEAT_DMABUF): the range is
 *	[@addr, @addr + @len) of the dma-buf @dmabuf_fd, held attached
 *	instead of pinned
 * @addr: start of the range (any alignment); with XFERK_MR_DMABUF, its
 *	offset in the dma-buf
 * @len: length in bytes, > 0
 * @access: XFERK_ACCESS_* the region may be used for
 * @reserved0: must be 0 without XFERK_MR_DMABUF
 * @dmabuf_fd: with XFERK_MR_DMABUF, a file descriptor of the dma-buf
 * @handle: out: the region's handle
 * @reserved: must be 0
 */
struct xferk_ioc_mr_reg {
	__u32 size;
	__u32 flags;
	__u64 addr;
	__u64 len;
	__u32 access;
	union {
		__u32 reserved0;
		__s32 dmabuf_fd;
	};
	__u64 handle;
	__u64 reserved[2];
};

/**
 * struct xferk_ioc_handle - commands that take one handle and drop it:
 * XFERK_IOC_MR_DEREG, XFERK_IOC_UNEXPORT, XFERK_IOC_UNIMPORT,
 * XFERK_IOC_DISCONNECT, XFERK_IOC_RELEASE
 * @size: sizeof as the caller knows it
 * @flags: must be 0
 * @handle: the handle to drop
 * @reserved: must be 0
 */
struct xferk_ioc_handle {
	__u32 size;
	__u32 flags;
	__u64 handle;
	__u64 reserved[2];
};

/* XFERK_IOC_CONNECT flags */
#define XFERK_CONNECT_NULL_PEER	(1U << 0)	/* scripted peer, CAP_SYS_ADMIN */

/* Longest timeout_ms a CONNECT may ask for (EINVAL beyond). */
#define XFERK_CONNECT_MAX_TIMEOUT_MS	60000

/* Most QPs one session's path has (xferk_ioc_connect.nr_qps) */
#define XFERK_MAX_QPS		8

/**
 * struct xferk_ioc_connect - XFERK_IOC_CONNECT: a host-wide connection
 * @size: sizeof as the caller knows it
 * @flags: XFERK_CONNECT_*
 * @family: AF_INET or AF_INET6 (ignored for the null peer)
 * @port: the peer's listen_port, host byte order; 0 means the default
 * @timeout_ms: bound for address/route resolution and the handshake;
 *	0 means 5000, at most XFERK_CONNECT_MAX_TIMEOUT_MS
 * @addr: IPv4 (first 4 bytes) or IPv6 address, network byte order
 * @null_delay_ns: null peer only: delay before each fragment completes
 * @handle: out: the connection's handle
 * @nr_qps: RC QPs a new session's paths have (XFERK_FEAT_QPS): its work
 *	requests are spread over them, each QP with its own admission window.
 *	0 means the module's qps_per_session; at most XFERK_MAX_QPS (EINVAL
 *	beyond); the peer may grant fewer (xferk_conn_info.nr_qps). A session
 *	to the peer that exists already is shared as it is. Must be 0 for
 *	the null peer
 * @reserved0: must be 0
 * @reserved: must be 0
 */
struct xferk_ioc_connect {
	__u32 size;
	__u32 flags;
	__u16 family;
	__u16 port;
	__u32 timeout_ms;
	__u8 addr[16];
	__u64 null_delay_ns;
	__u64 handle;
	__u32 nr_qps;
	__u32 reserved0;
	__u64 reserved[1];
};

/*
 * An export token: opaque bytes the caller hands to the peer out of band.
 * It is authenticated with a key only the connection's two kernels know:
 * a changed or forged token fails IMPORT with EACCES. Treat it as a secret.
 */
#define XFERK_TOKEN_SIZE	64

/**
 * struct xferk_ioc_export - XFERK_IOC_EXPORT: expose part of a region to
 * the one peer at the other end of a connection
 * @size: sizeof as the caller knows it
 * @flags: must be 0
 * @conn: connection handle naming the peer
 * @mr: region handle
 * @offset: start of the exported range within the region
 * @len: length of the range, > 0
 * @access: XFERK_ACCESS_REMOTE_READ and/or _WRITE, within the region's
 * @reserved0: must be 0
 * @handle: out: the export's handle (XFERK_IOC_UNEXPORT revokes it)
 * @token: out: the token for the peer's XFERK_IOC_IMPORT
 * @reserved: must be 0
 */
struct xferk_ioc_export {
	__u32 size;
	__u32 flags;
	__u64 conn;
	__u64 mr;
	__u64 offset;
	__u64 len;
	__u32 access;
	__u32 reserved0;
	__u64 handle;
	__u8 token[XFERK_TOKEN_SIZE];
	__u64 reserved[2];
};

/* XFERK_IOC_IMPORT flags */
#define XFERK_IMPORT_RAIL	(1U << 0)	/* add a rail to @rail_of */

/* Most rails (sessions) one remote handle stripes over */
#define XFERK_MAX_RAILS		8

/**
 * struct xferk_ioc_import - XFERK_IOC_IMPORT: a remote handle from a token
 * @size: sizeof as the caller knows it
 * @flags: XFERK_IMPORT_*
 * @conn: a connection handle of this file (for a null peer's token: that
 *	null peer's); the token itself names the connection end to use
 * @token: the token as XFERK_IOC_EXPORT produced it on the peer
 * @handle: out: the remote handle for fragments (with XFERK_IMPORT_RAIL:
 *	@rail_of)
 * @rail_of: with XFERK_IMPORT_RAIL, a remote handle of this file: the
 *	token, an export of the same bytes on the peer through another
 *	session (another local device or peer address), becomes one more
 *	rail of it. Its ops are then striped over the rails, and a rail
 *	whose session dies hands its unfinished work requests to the others.
 *	Same length and access as @rail_of's (EINVAL), a session none of its
 *	rails uses (EEXIST), at most XFERK_MAX_RAILS rails (E2BIG). 0
 *	without the flag.
 * @reserved: must be 0
 */
struct xferk_ioc_import {
	__u32 size;
	__u32 flags;
	__u64 conn;
	__u8 token[XFERK_TOKEN_SIZE];
	__u64 handle;
	__u64 rail_of;
	__u64 reserved;
};

/* Most blocks of one window (XFERK_IOC_WINDOW_OPEN) */
#define XFERK_WINDOW_MAX_BLOCKS	16384

/**
 * struct xferk_block - one block of a window
 * @offset: start within the region; the address it names is page-aligned,
 *	except for the window's first block (XFERK_FEAT_WINDOW_EDGES)
 * @len: bytes, > 0; the block ends on a page boundary, except for the
 *	window's last block (XFERK_FEAT_WINDOW_EDGES)
 */
struct xferk_block {
	__u64 offset;
	__u64 len;
};

/**
 * struct xferk_ioc_window_open - XFERK_IOC_WINDOW_OPEN: expose a list of
 * blocks of a region (a request's share of a pool) to the one peer at the
 * other end of a connection, as one contiguous remote range
 * @size: sizeof as the caller knows it
 * @flags: must be 0
 * @conn: connection handle naming the peer
 * @mr: region handle (the pool)
 * @blocks: user pointer to @nr_blocks struct xferk_block; they may repeat
 *	or overlap, the window maps them in this order
 * @nr_blocks: 1 .. XFERK_WINDOW_MAX_BLOCKS
 * @access: XFERK_ACCESS_REMOTE_READ and/or _WRITE, within the region's
 * @handle: out: the window's handle, an export handle
 *	(XFERK_IOC_WINDOW_CLOSE closes it safely, XFERK_IOC_UNEXPORT revokes
 *	it at once)
 * @len: out: the window's length, the sum of the blocks' lengths
 * @generation: out: the window's generation, a random non-zero nonce the
 *	kernel chose: the token carries it; with the window's id in the
 *	session it tells this window from every other
 * @token: out: the token for the peer's XFERK_IOC_IMPORT
 * @reserved: must be 0
 *
 * The peer's kernel must have announced the revoke capability in the
 * handshake (XFERK_FEAT_WINDOWS on its side; EOPNOTSUPP otherwise), and
 * the device must map the window's pages in one fast registration (E2BIG
 * beyond its page-list length).
 */
struct xferk_ioc_window_open {
	__u32 size;
	__u32 flags;
	__u64 conn;
	__u64 mr;
	__u64 blocks;
	__u32 nr_blocks;
	__u32 access;
	__u64 handle;
	__u64 len;
	__u64 generation;
	__u8 token[XFERK_TOKEN_SIZE];
	__u64 reserved[2];
};

/* struct xferk_ioc_window_close.how */
#define XFERK_CLOSE_COOPERATIVE	1	/* the peer answered the revoke */
#define XFERK_CLOSE_FORCED	2	/* revoked without the peer's answer */

/**
 * struct xferk_ioc_window_close - XFERK_IOC_WINDOW_CLOSE: close a window or
 * an export so that no remote access through it can happen any more
 * @size: sizeof as the caller knows it
 * @flags: must be 0
 * @handle: the window's or export's handle; dropped
 * @deadline_ns: absolute CLOCK_MONOTONIC bound for the peer's answer
 *	(XFERK_DEADLINE_NONE: at most 60 s)
 * @how: out: XFERK_CLOSE_COOPERATIVE or XFERK_CLOSE_FORCED
 * @reserved0: must be 0
 * @ack_ns: out: revoke to answer, 0 when forced
 * @reserved: must be 0
 *
 * The kernel asks the peer's kernel to revoke the key (it stops new
 * accesses through it, waits until the ones posted are complete, and
 * answers); then, answered or not by @deadline_ns, it invalidates the key.
 * When the command returns (0), the memory may be reused at once: a late
 * access fails at the device. A signal shortens the wait for the answer,
 * never the invalidation.
 */
struct xferk_ioc_window_close {
	__u32 size;
	__u32 flags;
	__u64 handle;
	__u64 deadline_ns;
	__u32 how;
	__u32 reserved0;
	__u64 ack_ns;
	__u64 reserved[2];
};

/* Fragment opcodes */
#define XFERK_OP_READ		0	/* remote range -> local region */
#define XFERK_OP_WRITE		1	/* local region -> remote range */

/* Most fragments in one XFERK_IOC_SUBMIT */
#define XFERK_MAX_FRAGS		4096

/*
 * Most bytes in one op (the sum of its fragments' lengths), and most work
 * requests it may be cut into: a fragment takes one per MiB, and one per
 * max_sge pages of its local region (32 on most devices: 128 KiB; 1 on
 * some: 4 KiB). An op beyond either fails with E2BIG and publishes nothing.
 */
#define XFERK_MAX_OP_BYTES	(4ULL << 30)
#define XFERK_MAX_OP_WRS	65536

/**
 * struct xferk_frag - one contiguous transfer of an op
 * @mr: local region handle
 * @offset: start within the local region
 * @len: bytes, > 0
 * @remote: remote handle (XFERK_IOC_IMPORT)
 * @remote_offset: start within the imported range
 * @opcode: XFERK_OP_READ or XFERK_OP_WRITE
 * @reserved: must be 0
 */
struct xferk_frag {
	__u64 mr;
	__u64 offset;
	__u64 len;
	__u64 remote;
	__u64 remote_offset;
	__u32 opcode;
	__u32 reserved;
};

/* XFERK_IOC_SUBMIT flags */
#define XFERK_SUBMIT_CANCEL_ON_DEADLINE	(1U << 0)	/* then drain for drain_budget_ns */
#define XFERK_SUBMIT_AUTO_RELEASE	(1U << 1)	/* io_uring only, see below */
/* Once physically complete, tell the target: see XFERK_IOC_EVENTS */
#define XFERK_SUBMIT_NOTIFY		(1U << 2)

/*
 * Priority classes of the host-wide admission queue (one per RDMA device).
 * Critical work overtakes normal work, which overtakes bulk work, by the
 * weights in /sys/class/misc/xferk/queue/; old work still progresses.
 * The internal class has reserved credits and needs CAP_SYS_ADMIN.
 */
#define XFERK_PRIO_NORMAL	0
#define XFERK_PRIO_CRITICAL	1
#define XFERK_PRIO_BULK		2
#define XFERK_PRIO_INTERNAL	3
#define XFERK_PRIO_COUNT	4

/**
 * struct xferk_ioc_submit - XFERK_IOC_SUBMIT: start an op
 * @size: sizeof as the caller knows it
 * @flags: XFERK_SUBMIT_*
 * @frags: user pointer to @nr_frags fragments
 * @nr_frags: 1 .. XFERK_MAX_FRAGS
 * @frag_size: sizeof(struct xferk_frag) as the caller knows it; the
 *	same size rules as for argument structs apply to each element
 * @deadline_ns: absolute CLOCK_MONOTONIC deadline of the whole op, or
 *	XFERK_DEADLINE_NONE; a deadline already past fails with ETIMEDOUT
 * @user_data: returned in snapshots, untouched by the kernel
 * @op: out: the op's handle
 * @drain_budget_ns: with XFERK_SUBMIT_CANCEL_ON_DEADLINE (implied through
 *	io_uring): how long the automatic cancel may drain after the
 *	deadline (a budget beyond the clock's range: until drained); must
 *	be 0 otherwise
 * @priority: XFERK_PRIO_* (XFERK_FEAT_QUEUE; 0 is normal)
 * @reserved: must be 0
 * @window_bytes: most bytes of this op in flight at once; 0: the queue's
 *	default (one work request may always be in flight)
 * @window_chunks: most work requests of this op in flight at once; 0:
 *	the queue's default
 * @reserved2: must be 0
 * @group: a group handle (XFERK_IOC_GROUP_CREATE) the op joins, or 0;
 *	a group that was aborted refuses it with ESHUTDOWN
 * @notify_tag: with XFERK_SUBMIT_NOTIFY: the tag of the XFERK_EVENT_DATA
 *	event the target of the op's last fragment receives once the op is
 *	physically complete (EOPNOTSUPP if its peer takes no notifications,
 *	ESTALE if its export was closed); must be 0 otherwise
 *
 * An op beyond XFERK_MAX_OP_BYTES or XFERK_MAX_OP_WRS fails with E2BIG;
 * one that would exceed a hard limit of the admission queue or of the open
 * file's unfinished work requests fails with EBUSY; one more op handle
 * than the file may hold fails with EMFILE. Each publishes nothing.
 */
struct xferk_ioc_submit {
	__u32 size;
	__u32 flags;
	__u64 frags;
	__u32 nr_frags;
	__u32 frag_size;
	__u64 deadline_ns;
	__u64 user_data;
	__u64 op;
	__u64 drain_budget_ns;
	__u32 priority;
	__u32 reserved;
	__u64 window_bytes;
	__u32 window_chunks;
	__u32 reserved2;
	__u64 group;
	__u64 notify_tag;
};

/* Op states (Documentation/lifecycle.md) */
enum xferk_op_state {
	XFERK_STATE_SUBMITTED = 0,
	XFERK_STATE_IN_PROGRESS = 1,
	XFERK_STATE_SUCCEEDED = 2,
	XFERK_STATE_FAILED = 3,
	XFERK_STATE_TIMED_OUT = 4,
	XFERK_STATE_CANCEL_REQUESTED = 5,
	XFERK_STATE_DRAINING = 6,
	XFERK_STATE_DRAINED = 7,
	XFERK_STATE_QUARANTINED = 8,
	XFERK_STATE_COUNT
};

/* XFERK_IOC_WAIT flags */
#define XFERK_WAIT_PHYSICAL	(1U << 0)	/* until buffer_reusable */

/*
 * struct xferk_op_snapshot.failure (XFERK_FEAT_SESSIONS): where the op's
 * first error came from. A path's death is never the op's fault: its
 * flushed work requests are posted again on the session's next path, and
 * only if that cannot happen (its outcome was decided meanwhile, or the
 * session ended) does it fail with XFERK_FAILURE_PATH.
 */
/*
 * NONE: no error. OWN: its own work request failed: EACCES (the peer's key
 * or range refused it), EREMOTEIO, EIO, ENOMEM. PATH: the path or session
 * died: ECONNRESET, ETIMEDOUT (retries exhausted), ENOTCONN, ESTALE,
 * EHOSTUNREACH, ... DEADLINE: its deadline passed (ETIMEDOUT). CANCEL: it
 * was cancelled (ECANCELED).
 */
#define XFERK_FAILURE_NONE	0
#define XFERK_FAILURE_OWN	1
#define XFERK_FAILURE_PATH	2
#define XFERK_FAILURE_DEADLINE	3
#define XFERK_FAILURE_CANCEL	4

/**
 * struct xferk_op_snapshot - an op as XFERK_IOC_QUERY and _WAIT see it
 * @state: enum xferk_op_state
 * @first_error: the first failure as a negative errno, 0 if none; never
 *	changes once set
 * @total_bytes: bytes of all fragments
 * @transferred_bytes: bytes whose work requests completed successfully
 * @in_flight_bytes: bytes posted to the device and not yet terminal
 * @quarantined_bytes: bytes the kernel holds in quarantine for this op
 * @total_fragments: fragments of the op
 * @completed_fragments: fragments with every work request terminal
 * @deadline_timeouts: times the op's deadline expired (0 or 1)
 * @cancel_requests: cancel requests received
 * @drain_attempts: drains started
 * @quarantine_events: times the op entered QUARANTINED
 * @late_completions: work requests that completed after the op's logical
 *	outcome was already decided by a timeout or cancel
 * @physical_complete: 1 when no work request of the op can touch memory
 * @buffer_reusable: 1 when the caller may reuse or free the buffers
 * @failure: XFERK_FAILURE_*: where @first_error came from
 * @submit_to_physical_ns: submit to physical completion, 0 until then
 * @user_data: as given at submit
 * @reserved: 0
 */
struct xferk_op_snapshot {
	__u32 state;
	__s32 first_error;
	__u64 total_bytes;
	__u64 transferred_bytes;
	__u64 in_flight_bytes;
	__u64 quarantined_bytes;
	__u32 total_fragments;
	__u32 completed_fragments;
	__u32 deadline_timeouts;
	__u32 cancel_requests;
	__u32 drain_attempts;
	__u32 quarantine_events;
	__u32 late_completions;
	__u32 physical_complete;
	__u32 buffer_reusable;
	__u32 failure;
	__u64 submit_to_physical_ns;
	__u64 user_data;
	__u64 reserved[2];
};

/**
 * struct xferk_ioc_wait - XFERK_IOC_WAIT: wait for an op, never cancel it
 * @size: sizeof as the caller knows it
 * @flags: XFERK_WAIT_*
 * @op: op handle
 * @deadline_ns: absolute CLOCK_MONOTONIC time to give up at, or
 *	XFERK_DEADLINE_NONE; the op itself is unaffected
 * @snap: out: the op after the wait (also when it timed out)
 *
 * Returns 0 exactly when @snap shows what was waited for (settled, or
 * buffer_reusable with XFERK_WAIT_PHYSICAL), ETIMEDOUT otherwise.
 */
struct xferk_ioc_wait {
	__u32 size;
	__u32 flags;
	__u64 op;
	__u64 deadline_ns;
	struct xferk_op_snapshot snap;
};

/**
 * struct xferk_ioc_cancel - XFERK_IOC_CANCEL: cancel an op and drain it
 * @size: sizeof as the caller knows it
 * @flags: must be 0
 * @op: op handle
 * @drain_deadline_ns: absolute CLOCK_MONOTONIC bound for the drain
 * @snap: out: the op afterwards (also with ETIMEDOUT: QUARANTINED)
 *
 * Fragments not yet posted are dropped at once; posted ones are waited
 * for; if they are not all terminal halfway to the drain deadline,
 * the op's connections are forced to the error state so the device
 * flushes them. Returns 0 exactly when the snapshot returned has
 * buffer_reusable set (DRAINED, or it was already final), ETIMEDOUT
 * exactly when it has not (QUARANTINED at the drain deadline). A signal
 * ends the wait, not the drain (which goes on in the background).
 */
struct xferk_ioc_cancel {
	__u32 size;
	__u32 flags;
	__u64 op;
	__u64 drain_deadline_ns;
	struct xferk_op_snapshot snap;
};

/**
 * struct xferk_ioc_query - XFERK_IOC_QUERY: an op's snapshot
 * @size: sizeof as the caller knows it
 * @flags: must be 0
 * @op: op handle
 * @snap: out: the snapshot
 */
struct xferk_ioc_query {
	__u32 size;
	__u32 flags;
	__u64 op;
	struct xferk_op_snapshot snap;
};

/**
 * struct xferk_ioc_group_create - XFERK_IOC_GROUP_CREATE: a request group
 * @size: sizeof as the caller knows it
 * @flags: must be 0
 * @tag: the tag of the XFERK_EVENT_ABORTED events its abort sends
 * @handle: out: the group's handle
 * @generation: out: a random non-zero nonce naming this group
 * @reserved: must be 0
 */
struct xferk_ioc_group_create {
	__u32 size;
	__u32 flags;
	__u64 tag;
	__u64 handle;
	__u64 generation;
	__u64 reserved[2];
};

/* Most distinct remote handles the ops of one group may write to or read. */
#define XFERK_GROUP_MAX_TARGETS	64

/**
 * struct xferk_group_snapshot - a group: the sum of its ops
 * @ops: ops that joined it
 * @ops_physical: of them, physically complete (buffer_reusable)
 * @ops_in_state: of them, how many are in each enum xferk_op_state
 * @aborted: 1 once XFERK_IOC_GROUP_ABORT closed it
 * @first_error: the first error of any of its ops (negative errno), 0 if none
 * @total_bytes: sum over its ops of xferk_op_snapshot.total_bytes
 * @transferred_bytes: likewise
 * @in_flight_bytes: likewise
 * @quarantined_bytes: likewise
 * @late_completions: likewise
 * @quarantine_events: likewise
 * @generation: as GROUP_CREATE returned
 * @tag: as given at GROUP_CREATE
 * @reserved: 0
 */
struct xferk_group_snapshot {
	__u32 ops;
	__u32 ops_physical;
	__u32 ops_in_state[16];
	__u32 aborted;
	__s32 first_error;
	__u64 total_bytes;
	__u64 transferred_bytes;
	__u64 in_flight_bytes;
	__u64 quarantined_bytes;
	__u32 late_completions;
	__u32 quarantine_events;
	__u64 generation;
	__u64 tag;
	__u64 reserved[2];
};

/**
 * struct xferk_ioc_group - XFERK_IOC_GROUP_ABORT, _GROUP_WAIT, _GROUP_QUERY
 * @size: sizeof as the caller knows it
 * @flags: GROUP_WAIT: XFERK_WAIT_PHYSICAL; otherwise 0
 * @group: group handle
 * @deadline_ns: GROUP_ABORT: absolute CLOCK_MONOTONIC bound of the drain;
 *	GROUP_WAIT: when to give up waiting; GROUP_QUERY: must be 0
 * @snap: out: the group afterwards (also with ETIMEDOUT)
 *
 * GROUP_ABORT closes the group (a later submit naming it fails with
 * ESHUTDOWN), cancels every op of it, drains them as XFERK_IOC_CANCEL
 * drains one (a connection still carrying one of them halfway to the
 * deadline is forced into the error state, once for the whole group),
 * and returns 0 exactly when every op of it is physically complete;
 * ETIMEDOUT when some are QUARANTINED at @deadline_ns. Once all are
 * physically complete, the target of every remote handle the group's ops
 * used receives an XFERK_EVENT_ABORTED event with the group's tag (when
 * its kernel announced notifications). GROUP_WAIT returns 0 exactly when
 * every op is settled (physically complete with XFERK_WAIT_PHYSICAL),
 * ETIMEDOUT otherwise; it never cancels anything.
 */
struct xferk_ioc_group {
	__u32 size;
	__u32 flags;
	__u64 group;
	__u64 deadline_ns;
	struct xferk_group_snapshot snap;
};

/**
 * struct xferk_ioc_notify - XFERK_IOC_NOTIFY: a notification with no data
 * @size: sizeof as the caller knows it
 * @flags: must be 0
 * @remote: remote handle (XFERK_IOC_IMPORT) whose target is told
 * @tag: delivered as the XFERK_EVENT_NOTE event's tag
 * @reserved: must be 0
 *
 * Queued behind every notification sent before on the same session;
 * returns once queued (ENOTCONN if the session has ended; one that ends
 * later drops what it has not delivered). The peer's kernel must have
 * announced notifications (EOPNOTSUPP otherwise, also for a token that
 * names no export id). Each queued notification counts as one work
 * request of the file until it is delivered (EBUSY beyond
 * max_chunks_per_file).
 */
struct xferk_ioc_notify {
	__u32 size;
	__u32 flags;
	__u64 remote;
	__u64 tag;
	__u64 reserved[2];
};

/* struct xferk_event.type */
#define XFERK_EVENT_DATA	1	/* an op with XFERK_SUBMIT_NOTIFY is physical */
#define XFERK_EVENT_NOTE	2	/* XFERK_IOC_NOTIFY */
#define XFERK_EVENT_ABORTED	3	/* the initiator aborted a group */

/* struct xferk_event.flags */
#define XFERK_EVENT_INCOMPLETE	(1U << 0)	/* DATA: the op did not succeed */

/**
 * struct xferk_event - what a target learns about one of its exports
 * @export_handle: the export's or window's handle, in the file that
 *	created it
 * @tag: the initiator's tag
 * @bytes: DATA: bytes of the op that were transferred; otherwise 0
 * @type: XFERK_EVENT_*
 * @flags: XFERK_EVENT_INCOMPLETE
 */
struct xferk_event {
	__u64 export_handle;
	__u64 tag;
	__u64 bytes;
	__u32 type;
	__u32 flags;
};

/* Most events one XFERK_IOC_EVENTS returns. */
#define XFERK_EVENTS_MAX	1024

/**
 * struct xferk_ioc_events - XFERK_IOC_EVENTS: take the file's events
 * @size: sizeof as the caller knows it
 * @flags: must be 0
 * @events: user pointer to room for @max_events struct xferk_event
 * @max_events: 1 .. XFERK_EVENTS_MAX
 * @nr_events: out: events written, in arrival order
 * @deadline_ns: absolute CLOCK_MONOTONIC time to give up waiting for the
 *	first event (0: do not wait)
 * @dropped: out: events dropped since the previous EVENTS because the
 *	file's queue (events_per_file) was full
 * @reserved: must be 0
 *
 * Returns 0 with at least one event, ETIMEDOUT with none. Events are
 * taken exactly once: if they cannot be written (EFAULT) they stay queued.
 */
struct xferk_ioc_events {
	__u32 size;
	__u32 flags;
	__u64 events;
	__u32 max_events;
	__u32 nr_events;
	__u64 deadline_ns;
	__u64 dropped;
	__u64 reserved[2];
};

/* Connection states (XFERK_IOC_CONN_QUERY) */
/*
 * CONNECTING: its first path is being made. RECONNECTING: its path died and
 * a new one is being made; its handles and queued work wait. DOWN: for
 * good; CONNECT makes a new one.
 */
#define XFERK_CONN_STATE_CONNECTING	0
#define XFERK_CONN_STATE_UP		1
#define XFERK_CONN_STATE_RECONNECTING	2
#define XFERK_CONN_STATE_DOWN		3

/**
 * struct xferk_conn_info - a connection as XFERK_IOC_CONN_QUERY sees it
 * @state: XFERK_CONN_STATE_*
 * @error: why its last path died (while UP or RECONNECTING), or why it
 *	went down; 0 if neither happened. One of CONNECT's errnos, or ESTALE
 *	(the peer is a new instance)
 * @path_gen: paths that came up: 1 once connected, one more per reconnect
 * @outstanding: work requests posted on its path now
 * @path_deaths: paths that died while it was up
 * @reconnects: new paths that came up after one died
 * @reposted: work requests a path's death flushed that were posted again
 * @initiator: 1 if this host initiated it, 0 if the peer did
 * @nr_qps: RC QPs each of its paths has (XFERK_FEAT_QPS; 1 for the null
 *	peer)
 * @reserved: 0
 */
struct xferk_conn_info {
	__u32 state;
	__s32 error;
	__u32 path_gen;
	__u32 outstanding;
	__u64 path_deaths;
	__u64 reconnects;
	__u64 reposted;
	__u32 initiator;
	__u32 nr_qps;
	__u64 reserved[2];
};

/**
 * struct xferk_ioc_conn_query - XFERK_IOC_CONN_QUERY: a connection's state
 * @size: sizeof as the caller knows it
 * @flags: must be 0
 * @conn: connection handle
 * @info: out: the connection
 */
struct xferk_ioc_conn_query {
	__u32 size;
	__u32 flags;
	__u64 conn;
	struct xferk_conn_info info;
};

/**
 * struct xferk_ioc_info - XFERK_IOC_INFO: version and features
 * @size: in: sizeof(struct xferk_ioc_info) as the caller knows it
 * @flags: in: must be 0
 * @abi_version: out: XFERK_ABI_VERSION of the running module
 * @reserved0: must be 0
 * @features: out: XFERK_FEAT_* supported by the running module
 * @reserved: must be 0
 */
struct xferk_ioc_info {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 reserved0;
	__u64 features;
	__u64 reserved[4];
};

#define XFERK_IOC_INFO		_IOWR(XFERK_IOC_MAGIC, 0x00, struct xferk_ioc_info)
#define XFERK_IOC_MR_REG	_IOWR(XFERK_IOC_MAGIC, 0x01, struct xferk_ioc_mr_reg)
#define XFERK_IOC_MR_DEREG	_IOWR(XFERK_IOC_MAGIC, 0x02, struct xferk_ioc_handle)
#define XFERK_IOC_CONNECT	_IOWR(XFERK_IOC_MAGIC, 0x03, struct xferk_ioc_connect)
#define XFERK_IOC_DISCONNECT	_IOWR(XFERK_IOC_MAGIC, 0x04, struct xferk_ioc_handle)
#define XFERK_IOC_EXPORT	_IOWR(XFERK_IOC_MAGIC, 0x05, struct xferk_ioc_export)
#define XFERK_IOC_UNEXPORT	_IOWR(XFERK_IOC_MAGIC, 0x06, struct xferk_ioc_handle)
#define XFERK_IOC_IMPORT	_IOWR(XFERK_IOC_MAGIC, 0x07, struct xferk_ioc_import)
#define XFERK_IOC_UNIMPORT	_IOWR(XFERK_IOC_MAGIC, 0x08, struct xferk_ioc_handle)
#define XFERK_IOC_SUBMIT	_IOWR(XFERK_IOC_MAGIC, 0x09, struct xferk_ioc_submit)
#define XFERK_IOC_WAIT		_IOWR(XFERK_IOC_MAGIC, 0x0a, struct xferk_ioc_wait)
#define XFERK_IOC_QUERY		_IOWR(XFERK_IOC_MAGIC, 0x0b, struct xferk_ioc_query)
#define XFERK_IOC_RELEASE	_IOWR(XFERK_IOC_MAGIC, 0x0c, struct xferk_ioc_handle)
#define XFERK_IOC_CANCEL	_IOWR(XFERK_IOC_MAGIC, 0x0d, struct xferk_ioc_cancel)
#define XFERK_IOC_CONN_QUERY	_IOWR(XFERK_IOC_MAGIC, 0x0e, struct xferk_ioc_conn_query)
#define XFERK_IOC_WINDOW_OPEN	_IOWR(XFERK_IOC_MAGIC, 0x0f, struct xferk_ioc_window_open)
#define XFERK_IOC_WINDOW_CLOSE	_IOWR(XFERK_IOC_MAGIC, 0x10, struct xferk_ioc_window_close)
#define XFERK_IOC_GROUP_CREATE	_IOWR(XFERK_IOC_MAGIC, 0x11, struct xferk_ioc_group_create)
#define XFERK_IOC_GROUP_ABORT	_IOWR(XFERK_IOC_MAGIC, 0x12, struct xferk_ioc_group)
#define XFERK_IOC_GROUP_WAIT	_IOWR(XFERK_IOC_MAGIC, 0x13, struct xferk_ioc_group)
#define XFERK_IOC_GROUP_QUERY	_IOWR(XFERK_IOC_MAGIC, 0x14, struct xferk_ioc_group)
#define XFERK_IOC_GROUP_RELEASE	_IOWR(XFERK_IOC_MAGIC, 0x15, struct xferk_ioc_handle)
#define XFERK_IOC_NOTIFY	_IOWR(XFERK_IOC_MAGIC, 0x16, struct xferk_ioc_notify)
#define XFERK_IOC_EVENTS	_IOWR(XFERK_IOC_MAGIC, 0x17, struct xferk_ioc_events)

/*
 * io_uring commands (XFERK_FEAT_URING)
 *
 * Every command above can be sent as IORING_OP_URING_CMD on an open
 * /dev/xferk: sqe->cmd_op is the command's XFERK_IOC_* number and the
 * first 16 bytes of sqe->cmd hold a struct xferk_uring_cmd pointing to the
 * same argument struct the ioctl takes (the same rules apply). In a ring
 * set up with IORING_SETUP_SQE128 the other 64 bytes of sqe->cmd must be
 * zero. The kernel reads the payload and the argument struct once, when it
 * issues the command. cqe->res is what the ioctl would return (0 or a
 * negative errno); outputs go back into the argument struct as with the
 * ioctl. INFO, QUERY, CONN_QUERY, RELEASE, GROUP_CREATE, GROUP_QUERY,
 * GROUP_RELEASE and NOTIFY run inline; the others (the waits, cancels,
 * aborts and the commands that set things up) run in io_uring's worker
 * threads.
 *
 * XFERK_IOC_SUBMIT is asynchronous: the op's handle is written to
 * xferk_ioc_submit.op before its CQE posts, and before io_uring_enter()
 * returns unless the command was issued asynchronously (IOSQE_ASYNC,
 * SQPOLL, or re-issued from a worker because a dma-buf's exporter was
 * busy). If the struct cannot take it, the op is cancelled and its handle
 * dropped, as after the ioctl's -EFAULT. The command stays parked, and
 * its CQE posts once the op is settled:
 *  - physically complete (buffer_reusable): cqe->res is the final state,
 *    SUCCEEDED, FAILED, TIMED_OUT or DRAINED;
 *  - or QUARANTINED at its drain deadline: cqe->res is
 *    XFERK_STATE_QUARANTINED and the buffers are NOT reusable yet (an
 *    XFERK_IOC_WAIT with XFERK_WAIT_PHYSICAL tells when they are);
 *  - or cancelled because the submitting task exited: -ECANCELED, after
 *    the op was cancelled and drained in the background.
 * A negative cqe->res other than -ECANCELED means nothing was submitted.
 * In a ring set up with IORING_SETUP_CQE32, big_cqe[0] holds the op handle
 * (already dropped if the op was taken back as above).
 * Through the ring a submit must have a deadline, and deadline plus
 * drain_budget_ns must lie within XFERK_URING_MAX_PARK_NS of the submit
 * (-EINVAL otherwise); XFERK_SUBMIT_CANCEL_ON_DEADLINE always applies. So
 * every parked command completes on its own, also when the ring is closed.
 * With XFERK_SUBMIT_AUTO_RELEASE the op handle is released when the CQE
 * posts, except for a QUARANTINED op (the caller releases that one); a
 * QUERY, WAIT or CANCEL that finds it gone fails with ESTALE, which then
 * means "settled, see the CQE".
 * XFERK_IOC_CANCEL through the ring takes a drain deadline within the
 * same bound.
 */
#define XFERK_URING_MAX_PARK_NS	(60ULL * 1000000000ULL)

/**
 * struct xferk_uring_cmd - the payload of IORING_OP_URING_CMD (sqe->cmd)
 * @arg: user pointer to the command's argument struct
 * @flags: must be 0
 * @reserved: must be 0
 */
struct xferk_uring_cmd {
	__u64 arg;
	__u32 flags;
	__u32 reserved;
};

#endif /* _UAPI_XFERK_H */
