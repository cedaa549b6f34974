/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xferk: module-wide constants, and the map of the module's files.
 *
 * The files form five layers. Calls go downward; a lower layer reaches a
 * higher one only through a callback. A file includes the headers of its
 * own layer and of lower ones: tests/unit/layers.sh checks it, and lists
 * the upward includes still to remove. One concern per file:
 *
 * 1. Front: the device file and its commands
 *   main.c       module init/exit, parameters, /dev/xferk file operations
 *   uarg.c       ioctl table and the uAPI argument rules (size, reserved)
 *   conn_query.c the CONN_QUERY command: a connection's state
 *   uring.c      io_uring commands: parking, completion, exit monitor
 *   limits.c     registers every module parameter; the front's limits
 *   sysfs.c      counters, parameters and queues in sysfs
 *   debugfs.c    live objects and fault injection in debugfs
 *   op_ioctl.c   the commands on ops: SUBMIT, WAIT, QUERY, CANCEL
 *   group_ioctl.c  the commands on groups: GROUP_CREATE, _ABORT, _WAIT,
 *                _QUERY
 *   notify_ioctl.c  the commands on notifications: NOTIFY, EVENTS
 *   export_ioctl.c  the commands on exports and imports: EXPORT,
 *                WINDOW_OPEN, WINDOW_CLOSE, IMPORT
 *   front.h      open file, command table, command handlers
 *   limits.h     the front's limits and their checks (limits.c registers
 *                every parameter; a lower layer's are declared in its
 *                own header)
 *   uring.h      io_uring commands
 *   uring_compat.h  io_uring command API differences between kernels
 *
 * 2. Requests: what a process asked for
 *   op.c         an op's life: chunks' ends, physical end, references
 *   op_submit.c  submit: checking fragments, cutting chunks, publishing
 *   op_cancel.c  deadline, cancel, drain, quarantine, exit drain
 *   group.c      groups of ops, aborted together
 *   export.c     exports, their tokens, windows
 *   evq.c        a file's queue of events, taken by EVENTS
 *   op.h         ops, groups, the background drain
 *   op_internal.h  what the files of ops share among themselves
 *   export.h     exports, windows
 *   evq.h        a file's queue of events (evq.c)
 *
 * 3. Sessions: connections to peers
 *   conn.c       host-wide connections: state machine, recovery, teardown
 *   conn_post.c  posting chunks on a connection, their completions
 *   conn_timer.c a connection's deadline and keepalive
 *   conn_lookup.c  publishing connections, finding them by peer and by id
 *   conn_path.c  what a session's path tells it: the transport's callbacks
 *   conn_connect.c  making a session over RDMA; CONNECT: find or start one
 *   conn_handshake.c  the session's side of the rdma_cm handshake: its
 *                private data, what a reply or reject means, which
 *                session a resume names
 *   revoke.c     the revoke protocol: CLOSE, REVOKE, REVOKE_ACK  (verbs-free)
 *   notify.c     notifications to a peer's process: sending, receiving
 *   rail.c       a remote handle striped over several sessions
 *   remote.c     remote handles: imported tokens, authenticated
 *   fence.c      the rails fence: FENCE, FENCE_ACK  (verbs-free)
 *   queue.c      the host-wide admission queue per RDMA device
 *   conn.h       connections, the session API
 *   conn_internal.h  private to conn.c, conn_post.c, conn_timer.c,
 *                conn_lookup.c, conn_path.c and fence.c: what they share,
 *                their locking rules
 *   notify.h     notifications on their way
 *   rail.h       rails
 *   remote.h     remote handles, the tokens' MAC
 *   chunk.h      an op's work requests, as the sessions handle them
 *   fence.h      a session's part in the rails fence
 *   revoke.h     the revoke protocol's state and entry points
 *   queue.h      admission queues, an op's entry, per-file accounts
 *
 * 4. Transport: RDMA and the null peer
 *   rdma.c       the RDMA transport: starting a path, the listener, init
 *   rdma_dev.c   RDMA devices, connections attaching, DMA maps of regions
 *   rdma_post.c  RDMA paths: PD, CQ, QPs, send slots, posting, teardown
 *   rdma_msg.c   RDMA session messages: the receive ring, sending
 *   rdma_mr.c    RDMA exports: memory registration
 *   rdma_cm.c    the rdma_cm handshake's events; answering the listener's
 *                requests for the sessions layer
 *   nullpeer.c   the scripted null peer (benchmarks, deterministic tests)
 *   transport.h  the transport ops table, posting bounds, a chunk's work
 *                request, an export's registration, the transports'
 *                entry points
 *   path.h       a session's transport part (struct xferk_path), its
 *                QPs, and the callbacks it reaches its session through
 *   rdma.h       the RDMA transport's private header (rdma*.c only)
 *
 * 5. Bottom: models and resources
 *   lifecycle.c  the op state machine and deadline arithmetic (verbs-free)
 *   sched.c      admission and scheduling model of the queue  (verbs-free)
 *   handle.c     per-file handle tables                       (verbs-free)
 *   frag.c       fragment bounds and chunk splitting          (verbs-free)
 *   conn_state.c the session state machine's table           (verbs-free)
 *   region.c     pinned user memory
 *   stats.c      counters; sysfs.c and debugfs.c present them
 *   trace.c      the tracepoints' definitions
 *   lifecycle.h, sched.h, handle.h, frag.h, conn_state.h  their models
 *   region.h, stats.h, trace.h  pinned memory, counters, tracepoints
 *   wire.h       every on-the-wire format: handshake, messages, tokens
 *   fault.h      fault injection knobs
 *   xferk.h      this map, module-wide constants
 *
 * Object ownership (Documentation/design.md has the full picture):
 *   file --handle--> region, conn, export, remote, op      (one ref each)
 *   op --chunk--> region, remote                          (one ref per chunk,
 *                 until the op is physically complete)
 *   op --> its connections, its file's account            (until freed)
 *   remote, export --> conn;  export --> region
 *   xferk_conns list --> conn (until teardown)
 *   RDMA conn --> its device (struct xferk_dev) from attach until its
 *                 verbs resources are gone; the device's removal waits
 */
#ifndef XFERK_H
#define XFERK_H

#include <linux/gfp.h>
#include "../uapi/xferk.h"

/*
 * Memory a user's command makes the kernel hold: charged to the caller's
 * memory cgroup, and at its limit the command fails with ENOMEM rather
 * than waking the OOM killer.
 */
#define XFERK_GFP_USER	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL)

/* Features this build implements; reported by XFERK_IOC_INFO and sysfs. */
#define XFERK_FEATURES	(XFERK_FEAT_INFO | XFERK_FEAT_DATAPATH | \
			 XFERK_FEAT_NULL_PEER | XFERK_FEAT_CANCEL | \
			 XFERK_FEAT_URING | XFERK_FEAT_QUEUE | \
			 XFERK_FEAT_SESSIONS | XFERK_FEAT_WINDOWS | \
			 XFERK_FEAT_GROUPS | XFERK_FEAT_NOTIFY | \
			 XFERK_FEAT_RAILS | XFERK_FEAT_QPS | \
			 XFERK_FEAT_DMABUF | XFERK_FEAT_POLL | \
			 XFERK_FEAT_WINDOW_EDGES)

#endif /* XFERK_H */
