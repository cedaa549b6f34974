/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xferk internal interfaces shared by the module's files.
 *
 * File layout, one concern per file:
 *   main.c       module init/exit, parameters, /dev/xferk file operations
 *   uarg.c       ioctl table and the uAPI argument rules (size, reserved)
 *   handle.c     per-file handle tables                       (verbs-free)
 *   lifecycle.c  the op state machine and deadline arithmetic (verbs-free)
 *   frag.c       fragment bounds and chunk splitting          (verbs-free)
 *   limits.c     per-file and host-wide limits (module parameters)
 *   region.c     pinned user memory
 *   conn.c       host-wide connections: state, posting, teardown, lookup
 *   conn_state.c the session state machine's table       (verbs-free)
 *   rdma.c       the RDMA transport: connecting, the listener, module init
 *   rdma_dev.c   RDMA devices, connections attaching, DMA maps of regions
 *   rdma_post.c  RDMA paths: PD, CQ, QPs, send slots, posting, teardown
 *   rdma_msg.c   RDMA session messages: the receive ring, sending
 *   rdma_mr.c    RDMA exports: memory registration
 *   rdma_cm.c    the rdma_cm handshake: its messages, events, requests
 *   rdma.h       the RDMA transport's private header (rdma*.c only)
 *   nullpeer.c   the scripted null peer (benchmarks, deterministic tests)
 *   export.c     export tokens (authenticated), windows, remote handles
 *   revoke.c     the revoke protocol: CLOSE, REVOKE, REVOKE_ACK  (verbs-free)
 *   op.c         submit, posting, completion, wait, query, release
 *   uring.c      io_uring commands: parking, completion, exit monitor
 *   sched.c      admission and scheduling model of the queue  (verbs-free)
 *   queue.c      the host-wide admission queue per RDMA device
 *   stats.c      counters; sysfs.c and debugfs.c present them
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

#include <linux/types.h>
#include <linux/device.h>
#include <linux/hrtimer.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/siphash.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "../uapi/xferk.h"
#include "handle.h"
#include "lifecycle.h"
#include "frag.h"
#include "sched.h"
#include "conn_state.h"

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
			 XFERK_FEAT_RAILS | XFERK_FEAT_QPS)

#define XFERK_SUBMIT_FLAGS	(XFERK_SUBMIT_CANCEL_ON_DEADLINE | \
				 XFERK_SUBMIT_AUTO_RELEASE | XFERK_SUBMIT_NOTIFY)

/**
 * struct xferk_file - state of one open file of /dev/xferk
 * @lock: serializes handle-table changes and lookups with taking references
 * @handles: the file's handles (counted per kind against the limits)
 * @qacct: the file's account: queue admission and chunk budget (ref)
 * @evq: the file's event queue (ref), made on first use (@lock)
 *
 * Owned by the file: allocated in ->open, freed in ->release after every
 * handle was dropped (ops still in flight live on, owned by the kernel,
 * and keep the account).
 */
struct xferk_file {
	struct mutex lock;	/* handle table changes, lookup + get */
	struct xferk_handles handles;
	struct xferk_qacct *qacct;
	struct xferk_evq *evq;
};

/* limits.c: Documentation/security.md lists each limit and its errno */
extern u32 xferk_handle_limit[XFERK_H_KINDS];
extern unsigned int xferk_max_chunks_per_file;
extern unsigned long xferk_max_export_pages_per_file;
extern unsigned int xferk_max_passive_conns;
extern unsigned int xferk_qps_per_session;
extern unsigned int xferk_max_peer_qps;
extern unsigned int xferk_passive_idle_ms;
extern unsigned int xferk_handshake_timeout_ms;
extern unsigned int xferk_keepalive_ms;
extern unsigned int xferk_reconnect_ms;
extern unsigned int xferk_escalation_interval_ms;
int xferk_handle_add_limited(struct xferk_file *xf, struct xferk_hobj *obj,
			     u8 kind);
int xferk_charge(atomic_long_t *used, unsigned long n, unsigned long limit,
		 int error);
bool xferk_handle_room_limited(struct xferk_file *xf, u8 kind);
struct xferk_qacct;
bool xferk_escalation_allowed(atomic64_t *last_ns);

/* main.c: module parameters (read-only after load) and command handlers */
extern char *xferk_listen_addr;
extern unsigned short xferk_listen_port;
extern struct sockaddr_storage xferk_listen_sockaddr;

union xferk_ioc_arg;
int xferk_ioctl_info(struct xferk_file *xf, union xferk_ioc_arg *arg);

/* uarg.c */

/**
 * union xferk_ioc_arg - kernel copy of any command's argument
 *
 * The ioctl path copies the caller's struct once into this union, hands
 * it to the command's handler and copies it back.
 */
union xferk_ioc_arg {
	struct xferk_ioc_info info;
	struct xferk_ioc_mr_reg mr_reg;
	struct xferk_ioc_handle handle;
	struct xferk_ioc_connect connect;
	struct xferk_ioc_export export;
	struct xferk_ioc_import import;
	struct xferk_ioc_submit submit;
	struct xferk_ioc_wait wait;
	struct xferk_ioc_query query;
	struct xferk_ioc_cancel cancel;
	struct xferk_ioc_conn_query conn_query;
	struct xferk_ioc_window_open window_open;
	struct xferk_ioc_window_close window_close;
	struct xferk_ioc_group_create group_create;
	struct xferk_ioc_group group;
	struct xferk_ioc_notify notify;
	struct xferk_ioc_events events;
};

/**
 * struct xferk_ioctl_desc - one entry of the command table
 * @cmd: the command as the header encodes it
 * @min_size: size of the struct's first version; smaller is -EINVAL
 * @size: size of the struct this kernel knows
 * @out_on_timeout: the output is copied back with -ETIMEDOUT too
 * @nonblock: never waits for the device or the network, so io_uring
 *	runs it inline (the others go to io_uring's worker threads)
 * @drop_kind: the command drops a handle of this kind (no @handler)
 * @out_kind: the command publishes a handle of this kind, written back at
 *	@out_offset; undone if the write-back fails
 * @out_offset: offset of that handle in the argument struct
 * @handler: does the command on the kernel copy of the argument
 * @done: for a command whose output commits something (EVENTS takes its
 *	events): called once the output of a 0 or -ETIMEDOUT result was
 *	copied back (@written) or could not be (then nothing is committed)
 */
struct xferk_ioctl_desc {
	unsigned int cmd;
	u32 min_size;
	u32 size;
	bool out_on_timeout;
	bool nonblock;
	u8 drop_kind;
	u8 out_kind;
	u16 out_offset;
	int (*handler)(struct xferk_file *xf, union xferk_ioc_arg *arg);
	void (*done)(struct xferk_file *xf, bool written);
};

const struct xferk_ioctl_desc *xferk_ioctl_lookup(unsigned int cmd);
int xferk_arg_size_check(u32 usize, u32 min_size);
bool xferk_is_zeroed(const void *p, size_t len);
int xferk_arg_copy_in(const struct xferk_ioctl_desc *desc,
		      union xferk_ioc_arg *arg, void __user *uarg, u32 *usize);
int xferk_cmd_run(struct xferk_file *xf, const struct xferk_ioctl_desc *desc,
		  union xferk_ioc_arg *arg);
int xferk_arg_copy_out(struct xferk_file *xf,
		       const struct xferk_ioctl_desc *desc,
		       const union xferk_ioc_arg *arg, void __user *uarg,
		       u32 usize, int ret);
long xferk_ioctl_dispatch(struct xferk_file *xf, unsigned int cmd,
			  void __user *uarg);

/* Why a session's path died (counted per cause in sysfs stats/). */
enum xferk_path_cause {
	XFERK_PATH_QP,		/* a failed completion, QP event or refused post */
	XFERK_PATH_PEER,	/* the peer disconnected */
	XFERK_PATH_KEEPALIVE,	/* a keepalive probe failed */
	XFERK_PATH_CANCEL,	/* a cancel's escalation flushed the QP */
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
	atomic64_t dma_maps_in_post;
	atomic64_t sessions_stale;
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
};

extern struct xferk_stats xferk_stats;

/* region.c */

struct xferk_dma_map;

/**
 * struct xferk_region - pinned user memory
 * @hobj: handle-table entry
 * @ref: handle + one per chunk of every op using the region
 * @addr: start as the user gave it
 * @len: length in bytes
 * @access: XFERK_ACCESS_*
 * @writable: the NIC may write the pages (pinned with FOLL_WRITE)
 * @deregistered: the handle is gone; the pages count as quarantined
 * @npages: pinned pages
 * @pages: the pinned pages, first one contains @addr
 * @mm: the owner's mm (mmgrab), charged in pinned_vm
 * @owner: tgid of the registering process
 * @lock: protects @exports
 * @exports: exports of this region (struct xferk_export.region_node)
 * @node: in xferk_regions (xferk_regions_lock), for the quarantine table
 * @deregistered_at: when the handle went
 * @maps: its pages DMA-mapped for each RDMA device that posted them
 *	(rdma.c): added under xferk_dma_lock and published with release
 *	semantics, read without the lock; freed when the region goes
 */
struct xferk_region {
	struct xferk_hobj hobj;
	struct kref ref;
	u64 addr;
	u64 len;
	u32 access;
	bool writable;
	bool deregistered;
	unsigned long npages;
	struct page **pages;
	struct mm_struct *mm;
	pid_t owner;
	struct mutex lock;	/* protects exports */
	struct list_head exports;
	struct list_head node;
	ktime_t deregistered_at;
	struct xferk_dma_map *maps;
};

extern spinlock_t xferk_regions_lock;
extern struct list_head xferk_regions;
extern u64 xferk_quarantine_limit_bytes;

struct xferk_region *xferk_region_create(u64 addr, u64 len, u32 access);
void xferk_region_get(struct xferk_region *r);
void xferk_region_put(struct xferk_region *r);
void xferk_region_deregister(struct xferk_region *r);

/* conn.c, rdma.c, nullpeer.c */

/* Chunks (send work requests) in flight per connection. */
#define XFERK_QP_CTXS	128

/*
 * Chunks posted with one call into the device (one ib_post_send() of a
 * chain, one doorbell), and picked per hold of the queue's lock.
 */
#define XFERK_POST_BATCH	16

/*
 * Completions taken per poll of a path's CQ: as many as one chain posts,
 * and as many chunks as complete together (xferk_conn_chunks_succeeded()).
 */
#define XFERK_CQ_BATCH		XFERK_POST_BATCH

/**
 * struct xferk_lane - one RC QP of a session's path (RDMA)
 * @conn: its session
 * @index: 0 for the QP of the path's handshake, which also carries the
 *	session's messages, registrations and keepalive probes; 1 to
 *	nr_qps - 1 for the QPs that join the path once its first is
 *	established (chunks only)
 * @cm_id: its rdma_cm id, NULL until the path has one for it and once
 *	teardown destroyed it (conn->cm_lock for the QP event handler; on
 *	the accepting end a joining QP's is set under conn->lock, on the
 *	initiating end once @cm_ready was reserved under it)
 * @cm_ready: completed once only the handler calls rdma_cm on @cm_id (its
 *	creator's rdma_resolve_addr() returned); teardown waits for it
 * @qp: the QP, NULL until the path creates it and once quiesced
 * @qp_num: its number, for tables
 * @live: established on the current path (conn->lock); the path is up
 *	once all of its QPs are
 * @posted: chunks posted on it and not yet terminal (conn->lock)
 * @posts: chunks posted on it over the session's life (conn->lock)
 *
 * A path's QPs live and die together: any of them failing is the path
 * dying (one recovery, one next path with every QP again).
 */
struct xferk_lane {
	struct xferk_conn *conn;
	u32 index;
	struct rdma_cm_id *cm_id;
	struct completion cm_ready;
	struct ib_qp *qp;
	u32 qp_num;
	bool live;
	u32 posted;
	u64 posts;
};

/*
 * A connection is a session with the peer (its PD, exports, key, ids, its
 * users' handles) over one path at a time (cm_ids, QPs, CQ). When the path
 * of an UP session dies, the session is RECONNECTING until a new path is
 * up (UP again) or it gives up (DOWN). conn_state.h has the state machine;
 * every transition is in conn.c.
 */

/* struct xferk_conn.flags: atomic bits, set from any context */
#define XFERK_CONN_F_QP_DEAD	0	/* the QP left RTS: post nothing more */
#define XFERK_CONN_F_CLAIMED	1	/* a local object used it: never reaped */
#define XFERK_CONN_F_KEYED	2	/* @peer_id and @token_key are set */
#define XFERK_CONN_F_PROBING	3	/* a keepalive probe is posted */
#define XFERK_CONN_F_RAIL	4	/* a remote handle's rail (rail.c) */

struct xferk_conn;
struct xferk_chunk;
struct io_uring_cmd;
struct xferk_op;
struct xferk_qdev;
struct xferk_export;
struct xferk_dev;
struct xferk_send;
struct xferk_msgs;

/*
 * Session messages (revoke.c and notify.c have the protocols): control
 * messages travel as SENDs of at most XFERK_MSG_SIZE bytes. One end has at
 * most XFERK_REVOKES_MAX revokes unanswered, owes at most as many answers,
 * and has at most XFERK_NOTIFY_SENDS notifications posted, so its send
 * slots suffice and its peer's receive ring holds what is on its way
 * unless the peer's kernel lags in reposting it (then the device retries
 * the send, XFERK_RNR_RETRY times: a kernel that lags longer kills the
 * path, which is why nothing that can take long, such as mapping a
 * region, runs under the lock that the receive completions need).
 */
#define XFERK_MSG_SIZE		48
#define XFERK_REVOKES_MAX	16
#define XFERK_NOTIFY_SENDS	16
#define XFERK_MSG_SENDS		(2 * XFERK_REVOKES_MAX + XFERK_NOTIFY_SENDS)
#define XFERK_MSG_RECVS		(2 * XFERK_REVOKES_MAX + XFERK_NOTIFY_SENDS + 8)

#define XFERK_MSG_MAGIC		0x4b4d4658U	/* "XFMK" */

enum xferk_msg_type {
	XFERK_MSG_REVOKE = 1,		/* stop using (id, gen), then answer */
	XFERK_MSG_REVOKE_ACK = 2,	/* nothing of (id, gen) is posted */
	XFERK_MSG_NOTIFY = 3,		/* an event for export id */
};

/* A REVOKE or REVOKE_ACK on the wire (little endian). */
struct xferk_wire_msg {
	__le32 magic;
	u8 type;		/* enum xferk_msg_type */
	u8 reserved0[3];
	__le64 id;		/* the export's id in the session */
	__le64 gen;		/* the export's generation */
	__le64 reserved;
};

/* A NOTIFY on the wire (little endian). */
struct xferk_wire_notify {
	__le32 magic;
	u8 type;		/* XFERK_MSG_NOTIFY */
	u8 event;		/* XFERK_EVENT_* */
	u8 flags;		/* XFERK_EVENT_INCOMPLETE */
	u8 reserved0;
	__le64 id;		/* the target export's id in the session */
	__le64 tag;
	__le64 bytes;
	__le64 seq;		/* its number in the session, from 1 */
	__le64 reserved;
};

/* Ids of the peer's revoked exports an end remembers (the oldest go). */
#define XFERK_REVOKED_MAX	1024

/* Capabilities the handshake announces (struct xferk_conn.peer_caps). */
#define XFERK_CAP_REVOKE	BIT_ULL(0)	/* windows, REVOKE, REVOKE_ACK */
#define XFERK_CAP_NOTIFY	BIT_ULL(1)	/* NOTIFY */

/* States of a revoke this end sent (struct xferk_revoke.state). */
enum xferk_revoke_state {
	XFERK_REVOKE_FREE,	/* slot unused */
	XFERK_REVOKE_WAITING,	/* sent; its CLOSE waits for the answer */
	XFERK_REVOKE_ANSWERED,	/* answered; its CLOSE takes the slot back */
	XFERK_REVOKE_LOST,	/* its path died first; likewise */
	/* its CLOSE gave up: taken until the answer comes or the path dies */
	XFERK_REVOKE_ABANDONED,
};

/**
 * struct xferk_revoke - a revoke this end sent, or one it must answer
 * @id: the export's id in the session
 * @gen: the export's generation
 * @sent: when it was sent (sender)
 * @answered: when its answer came (sender)
 * @state: enum xferk_revoke_state (sender)
 */
struct xferk_revoke {
	u64 id;
	u64 gen;
	ktime_t sent;
	ktime_t answered;
	u8 state;
};

/**
 * struct xferk_transport - what differs between the RDMA and null peers
 * @name: for tables
 * @post: hand @n chunks (at most XFERK_POST_BATCH) to the device in one
 *	call, in order; called with conn->lock held, with a free send slot
 *	for each (conn->credits). Return: how many were posted, always the
 *	first ones of @chs; when fewer than @n, *@error (-ENOMEM or -EIO)
 *	says why the next one was not, and nothing after it was posted; or
 *	0: the transport has no room now (its QPs' send queues are full),
 *	the rest waits for a completion
 * @unpost: undo what @post set up (DMA mapping, send slot) once the
 *	chunk's work request is terminal; called with conn->lock held
 * @export: make e->addr..+len of the calling process remotely accessible
 *	on this connection: set e->rkey and e->iova
 * @unexport: revoke what @export made
 * @disconnect: stop every callback of the connection manager and start
 *	flushing everything posted (the path's first teardown step)
 * @quiesce: stop the device: afterwards no posted work request can touch
 *	memory and no completion or QP event callback runs; the path is gone
 * @destroy: free what is left (after exports were revoked)
 * @probe: post a keepalive probe (c->lock held)
 * @send_msg: post a session message of @len <= XFERK_MSG_SIZE bytes
 *	(c->lock held, the connection postable); @seq: a notification's
 *	sequence number (its successful completion calls
 *	xferk_notify_sent()), 0 for other messages; 0, -EAGAIN (no send slot
 *	free) or -EIO (the path dies); NULL: the transport carries none, and
 *	the peer announces no capability
 * @map_region: make @r's DMA map for the connection's device now, from
 *	process context without any connection's lock, so that @post finds
 *	it (NULL: the transport maps nothing ahead; @post maps what it
 *	lacks)
 * @reconnect: start a new path for a RECONNECTING session of an end
 *	this host initiated (NULL: paths are not replaced, their death ends
 *	the session); its outcome arrives as xferk_conn_lane_up() of each
 *	of the path's QPs (then xferk_conn_set_up()) or xferk_conn_path_down()
 */
struct xferk_transport {
	const char *name;
	u32 (*post)(struct xferk_conn *c, struct xferk_chunk **chs, u32 n,
		    int *error);
	void (*unpost)(struct xferk_conn *c, struct xferk_chunk *ch);
	int (*export)(struct xferk_conn *c, struct xferk_export *e);
	void (*unexport)(struct xferk_conn *c, struct xferk_export *e);
	void (*disconnect)(struct xferk_conn *c);
	void (*quiesce)(struct xferk_conn *c);
	void (*destroy)(struct xferk_conn *c);
	int (*probe)(struct xferk_conn *c);	/* -EAGAIN: not now */
	int (*send_msg)(struct xferk_conn *c, const void *msg, u32 len, u64 seq);
	void (*map_region)(struct xferk_conn *c, struct xferk_region *r);
	int (*reconnect)(struct xferk_conn *c);
};

/**
 * struct xferk_conn - one end of a connection to a peer host
 * @ref: xferk_conns list, handles, remotes, exports, ops
 * @node: in xferk_conns (xferk_conns_lock)
 * @peer_node: in the index by namespace and peer address (RDMA ends)
 * @id_node: in the index by @local_id
 * @transport: RDMA or null
 * @id: number for tables
 * @local_id: random, unique among this host's connections; the tokens the
 *	peer exports on this connection name it
 * @peer_id: the peer end's @local_id (XFERK_CONN_F_KEYED)
 * @token_key: the key both ends derive in the handshake (from halves sent
 *	in the clear); authenticates tokens and new paths
 *	(XFERK_CONN_F_KEYED; before, this end's half); never shown to a
 *	process
 * @net: the network namespace it lives in (ref): the key of sharing
 * @active: this end initiated the connection
 * @peer: the peer's address
 * @state: enum xferk_conn_state (@lock; changed only by conn.c's
 *	conn_change_state())
 * @error: why the connection went down or failed to come up (@lock); one
 *	of the errnos documented for CONNECT and for chunks
 * @flags: XFERK_CONN_F_* bits
 * @qp_error: the error the QP event handler recorded for @down_work
 * @qp_cause: and its enum xferk_path_cause
 * @path_live: the session has a path, connecting or up (@lock)
 * @path_gen: paths the session has had (@lock)
 * @attempts: path attempts since the last path was up (@lock)
 * @next_attempt: when the next path attempt may start (@lock)
 * @attempt_deadline: when a path attempt that is not up yet fails (@lock)
 * @path_deaths: paths that died while it was up (@lock)
 * @reconnects: paths that came up after the first (@lock)
 * @reposted: chunks flushed by a path death and queued again (@lock)
 * @last_escalation: when a cancel last killed its path (ns), for
 *	escalation_interval_ms (whoever cancelled)
 * @resume_seq: the sequence number of the last new path's request: that
 *	this end sent (an end we initiated; its cm handler only), or that
 *	it accepted (an end the peer initiated; @lock); a request not newer
 *	is a replay
 * @peer_caps: XFERK_CAP_* the peer announced in the session's handshake
 *	(XFERK_CONN_F_KEYED)
 * @state_wq: woken on every change of @state, and when a revoke this end
 *	sent is answered
 * @creator: the account of the file whose CONNECT started this end (ref),
 *	until it leaves CONNECTING
 * @lock: protects posting state: @state, @pending, @posted, @credits,
 *	the send slots
 * @pending: chunks waiting for a send slot
 * @posted: chunks posted and without completion
 * @credits: free send slots
 * @outstanding: number of chunks on @posted
 * @idle: woken when @outstanding drops to 0
 * @max_chunk_pages: most pages one work request covers (>= 1)
 * @max_chunk_bytes: most bytes one work request carries
 * @remotes: imports of tokens this end's peer exported with an id
 *	(struct xferk_remote.conn_node), for the revokes it sends (@lock)
 * @revokes: revokes this end sent (@lock)
 * @acks_due: revokes the peer sent and this end has yet to answer (@lock)
 * @nr_acks_due: entries of @acks_due in use (@lock)
 * @revoked: ids of exports the peer revoked, the last XFERK_REVOKED_MAX,
 *	a ring (RDMA; NULL: none remembered): an import of one fails with
 *	ESTALE (@lock)
 * @nr_revoked: entries in @revoked (@lock)
 * @revoked_next: where the next goes (@lock)
 * @msgs: the transport's message buffers (RDMA)
 * @next_export_id: id of this end's next export (@exports_lock)
 * @notify_queue: notifications to send, in sequence order (@lock)
 * @notify_posted: notifications sent on the current path whose send has
 *	not completed, in sequence order (@lock)
 * @nr_notify_posted: entries of @notify_posted, at most
 *	XFERK_NOTIFY_SENDS (@lock)
 * @notify_seq: sequence number of the last notification queued (@lock)
 * @notify_seen: sequence number of the last notification the peer sent
 *	that was delivered (@lock)
 * @exports_lock: protects @exports and each export's transport state
 * @exports: live exports on this connection
 * @export_ids: its live exports that have an id, by id (changed under
 *	@exports_lock and the xarray's lock; read under the xarray's lock)
 * @recover_work: the one error-recovery and teardown path: tears a dead
 *	path down, starts the next one, tears a DOWN session down
 * @down_work: takes the connection down for the QP event handler
 * @timer_work: handshake deadline; idle reaping of a passive end
 * @keepalive_work: posts a keepalive probe every keepalive_ms while the
 *	connection is up (RDMA); re-arms itself only under @lock in state UP
 * @keepalive_cqe: the probe's completion (XFERK_CONN_F_PROBING while posted)
 * @cm_lock: guards each lane's cm_id against the QP event handler
 *	(irq-safe)
 * @nr_qps: QPs each path has (@lanes), 1 to XFERK_MAX_QPS: agreed in the
 *	session's first handshake, before it is keyed; 1 for the null peer
 * @lanes: the path's QPs (RDMA); lanes[0] is the handshake's
 * @next_lane: where the search for the least busy lane starts (@lock)
 * @dev: the device its verbs resources live on (ref), NULL until attached
 * @dev_node: in @dev's list (xferk_devs_lock)
 * @pd: protection domain of this connection alone (RDMA)
 * @cq: completion queue of all of the path's QPs (RDMA)
 * @cq_work: polls @cq (rdma.c conn_cq_work()), queued by its event
 * @cq_stopped: @cq is being destroyed: its event and work do nothing
 * @cq_wcs: @cq_work's completions of one poll
 * @sends: XFERK_QP_CTXS send slots per QP asked for (RDMA), the free ones
 *	on @free_sends
 * @free_sends: send slots not in use (@lock)
 * @reg_cqe: completion of an export's registration work request
 * @reg_done: completed by it, or by teardown once the QP is gone
 * @reg_status: its result (0 or -EIO); the three are @exports_lock's
 * @qdev: the admission queue of the connection's device (ref); NULL
 *	until the device is known
 * @sqp: the session's dispatch window in that queue, one QP window per
 *	lane (xferk_queue_lock)
 * @null_delay_ns: delay before a chunk completes (null peer)
 * @null_work: completes due chunks (null peer)
 * @null_completing: @null_work is in its loop and looks at @posted again
 *	before it leaves it, so a post need not queue it (null peer; @lock)
 *
 * Fencing: the rdma_cm handler runs only until teardown destroys @cm_id
 * (rdma_destroy_id() waits for a running one, and teardown first waits
 * for the creator's own call into rdma_cm, each lane's cm_ready); teardown
 * destroys every lane's cm_id first and frees no verbs
 * resource before that, and the handler creates none for a connection
 * that is down. The QP event handler reads a lane's cm_id under @cm_lock and
 * sets bits; it runs until the QP is destroyed, before @down_work is
 * flushed.
 */
struct xferk_conn {
	struct kref ref;
	struct list_head node;
	struct hlist_node peer_node;
	struct hlist_node id_node;
	const struct xferk_transport *transport;
	u32 id;
	u64 local_id;
	u64 peer_id;
	siphash_key_t token_key;
	struct net *net;
	bool active;
	struct sockaddr_storage peer;
	int state;
	int error;
	unsigned long flags;
	int qp_error;
	int qp_cause;
	bool path_live;
	u32 path_gen;
	u32 attempts;
	ktime_t next_attempt;
	ktime_t attempt_deadline;
	u64 path_deaths;
	u64 reconnects;
	u64 reposted;
	atomic64_t last_escalation;
	u64 resume_seq;
	u64 peer_caps;
	wait_queue_head_t state_wq;
	struct xferk_qacct *creator;

	struct mutex lock;	/* posting state, see above */
	struct list_head pending;
	struct list_head posted;
	u32 credits;
	u32 outstanding;
	wait_queue_head_t idle;
	u32 max_chunk_pages;
	u64 max_chunk_bytes;
	struct list_head remotes;
	struct xferk_revoke revokes[XFERK_REVOKES_MAX];
	struct xferk_revoke acks_due[XFERK_REVOKES_MAX];
	u32 nr_acks_due;
	u64 *revoked;
	u32 nr_revoked;
	u32 revoked_next;
	struct xferk_msgs *msgs;
	u64 next_export_id;
	struct list_head notify_queue;
	struct list_head notify_posted;
	u32 nr_notify_posted;
	u64 notify_seq;
	u64 notify_seen;

	struct mutex exports_lock;	/* exports and their keys */
	struct list_head exports;
	struct xarray export_ids;
	struct delayed_work recover_work;
	struct work_struct down_work;
	struct delayed_work timer_work;
	struct delayed_work keepalive_work;
	struct ib_cqe keepalive_cqe;

	spinlock_t cm_lock;	/* lanes' cm_ids vs the QP event handler */
	u32 nr_qps;
	struct xferk_lane lanes[XFERK_MAX_QPS];
	u32 next_lane;
	struct xferk_dev *dev;
	struct list_head dev_node;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct work_struct cq_work;
	bool cq_stopped;
	struct ib_wc cq_wcs[XFERK_CQ_BATCH];
	struct xferk_send *sends;
	struct list_head free_sends;
	struct ib_cqe reg_cqe;
	struct completion reg_done;
	int reg_status;

	struct xferk_qdev *qdev;
	struct xferk_sched_qp sqp;

	u64 null_delay_ns;
	struct delayed_work null_work;
	bool null_completing;
};

/**
 * struct xferk_conn_ref - a file's handle to a (shared) connection
 * @hobj: handle-table entry
 * @conn: the connection (ref)
 */
struct xferk_conn_ref {
	struct xferk_hobj hobj;
	struct xferk_conn *conn;
};

extern struct mutex xferk_conns_lock;
extern struct list_head xferk_conns;
extern struct workqueue_struct *xferk_conn_wq;
extern const struct xferk_transport xferk_null_transport;
extern const struct xferk_transport xferk_rdma_transport;

/* conn.c: the transport-independent connection */
int xferk_conn_module_init(void);
void xferk_conn_shutdown_all(void);
void xferk_conn_module_exit(void);
void xferk_conn_init(struct xferk_conn *c, const struct xferk_transport *t,
		     struct net *net, bool active);
struct xferk_conn *xferk_conn_publish(struct xferk_conn *c, u64 peer_conn_id);
void xferk_conn_get(struct xferk_conn *c);
void xferk_conn_put(struct xferk_conn *c);
void xferk_conn_claim(struct xferk_conn *c);
void xferk_conn_set_up(struct xferk_conn *c);
void xferk_conn_lane_up(struct xferk_conn *c, struct xferk_lane *l);
void xferk_conn_down(struct xferk_conn *c, int error);
void xferk_conn_qp_dead(struct xferk_conn *c, int error, int cause);
void xferk_conn_path_down(struct xferk_conn *c, int error, int cause);
bool xferk_conn_path_attach(struct xferk_conn *c);
struct xferk_conn *xferk_conn_find_resumed(u64 local_id,
					   const struct sockaddr_storage *from);
bool xferk_conn_resume_fresh(struct xferk_conn *c, u64 seq);
void xferk_conn_stale_peer(struct net *net,
			   const struct sockaddr_storage *peer);
void xferk_conn_probe_done(struct xferk_conn *c, int error);
void xferk_conn_arm_timer(struct xferk_conn *c, unsigned int ms);
bool xferk_conn_postable(struct xferk_conn *c);
bool xferk_conn_qp_live(struct xferk_conn *c);
void xferk_conn_flush_posted(struct xferk_conn *c);
bool xferk_conn_token_key(struct xferk_conn *c, u64 *peer_id,
			  siphash_key_t *key);
void xferk_chunks_queue(struct xferk_chunk **chs, u32 n);
void xferk_conn_chunks_succeeded(struct xferk_conn *c,
				 struct xferk_chunk **chs, u32 n);
void xferk_conn_chunk_done(struct xferk_conn *c, struct xferk_chunk *ch,
			   int error);
void xferk_conn_drop_op(struct xferk_conn *c, struct xferk_op *op);
bool xferk_conn_op_posted(struct xferk_conn *c, struct xferk_op *op);
struct xferk_conn *xferk_conn_find_peer(struct net *net,
					const struct sockaddr_storage *peer);
struct xferk_conn *xferk_conn_find_importer(struct xferk_conn *via,
					    u64 conn_id, struct net *net);

/* rdma.c: devices, rdma_cm, QPs, the listener */
void xferk_region_unmap(struct xferk_region *r);
int xferk_rdma_module_init(void);
void xferk_rdma_module_exit(void);
struct xferk_conn *xferk_conn_connect(struct net *net,
				      const struct sockaddr_storage *peer,
				      unsigned int timeout_ms, u32 nr_qps,
				      struct xferk_qacct *acct);

/* nullpeer.c */
struct xferk_conn *xferk_conn_null_create(u64 delay_ns);
int xferk_null_module_init(void);
void xferk_null_module_exit(void);

/* export.c */

/**
 * struct xferk_export - part of a region exposed to one peer
 * @hobj: handle-table entry
 * @ref: handle; the lists do not hold references
 * @conn: the connection whose peer may access it (ref)
 * @region: the exported region (ref)
 * @region_node: in region->exports (region->lock)
 * @conn_node: in conn->exports (conn->exports_lock)
 * @addr: start (user address of the exporting process); a window's first
 *	block's
 * @len: length; a window's is the sum of its blocks'
 * @access: XFERK_ACCESS_REMOTE_*
 * @iova: address the peer uses (transport-defined)
 * @rkey: remote key (transport-defined)
 * @mr: the RDMA memory region, NULL once revoked (conn->exports_lock)
 * @sgt: fast registration: the region's pages it maps, DMA-mapped while
 *	@mr lives (conn->exports_lock)
 * @npages: pages it covers, charged to @acct's max_export_pages_per_file
 * @window_pages: a window's pages, in the order the peer sees them
 *	(@npages of them); NULL for a plain export
 * @id: its id in the session (@conn->next_export_id), 0 when the peer
 *	announced no XFERK_CAP_REVOKE: then the token carries none, and a
 *	CLOSE revokes without asking
 * @gen: its generation, a random nonce the token carries
 * @acct: the exporting file's account (ref)
 * @evq: the exporting file's event queue (ref): notifications for it go
 *	there
 * @live: not yet revoked (conn->exports_lock)
 */
struct xferk_export {
	struct xferk_hobj hobj;
	struct kref ref;
	struct xferk_conn *conn;
	struct xferk_region *region;
	struct list_head region_node;
	struct list_head conn_node;
	u64 addr;
	u64 len;
	u32 access;
	u64 iova;
	u32 rkey;
	struct ib_mr *mr;
	struct sg_table sgt;
	unsigned long npages;
	struct page **window_pages;
	u64 id;
	u64 gen;
	struct xferk_qacct *acct;
	struct xferk_evq *evq;
	bool live;
};

/**
 * struct xferk_remote - an imported token: where fragments go
 * @hobj: handle-table entry
 * @ref: handle + one per chunk using it
 * @conn: the local end that posts to the exporting peer (ref)
 * @iova: the peer's address of the range's start
 * @len: the range's length
 * @rkey: the peer's remote key
 * @access: XFERK_ACCESS_REMOTE_* the peer granted
 * @id: the export's id in the session, 0 if the token has none
 * @gen: the export's generation
 * @conn_node: in @conn->remotes while @id is set (@conn->lock)
 * @error: 0, or why the key is unusable, for good: -ESTALE once the peer
 *	revoked it (REVOKE), -EACCES once the peer refused a work request on
 *	it (a remote access error). Later chunks on it fail with it unposted
 *	(instead of killing a path each), a submit that names it fails with
 *	it. Set under @conn->lock, read locklessly.
 * @rails: NULL, or the rails of a remote handle striped over several
 *	sessions (XFERK_IMPORT_RAIL; rail.c), this one the first; set once,
 *	under its file's lock. A rail is a remote of its own with no handle.
 */
struct xferk_remote {
	struct xferk_hobj hobj;
	struct kref ref;
	struct xferk_conn *conn;
	u64 iova;
	u64 len;
	u32 rkey;
	u32 access;
	u64 id;
	u64 gen;
	struct list_head conn_node;
	int error;
	struct xferk_rails *rails;
};

/**
 * struct xferk_rails - the sessions one remote handle's ops are striped over
 * @nr: rails in @rail, >= 1; only grows, under the handle's file's lock,
 *	published with smp_store_release() after its entry
 * @next: the rail the next chunk cut tries first
 * @rail: [0] is the handle's remote itself (no reference), the others
 *	imports of the same bytes through other sessions (a reference each,
 *	dropped when the handle's remote is freed: after every chunk)
 */
struct xferk_rails {
	u32 nr;
	atomic_t next;
	struct xferk_remote *rail[XFERK_MAX_RAILS];
};

int xferk_ioctl_export(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_import(struct xferk_file *xf, union xferk_ioc_arg *arg);
/* Most pages of one window (256 MiB in 4 KiB pages): E2BIG beyond. */
#define XFERK_WINDOW_MAX_PAGES	65536

int xferk_ioctl_window_open(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_window_close(struct xferk_file *xf, union xferk_ioc_arg *arg);
void xferk_export_put(struct xferk_export *e);
void xferk_export_revoke(struct xferk_export *e);
void xferk_region_revoke_exports(struct xferk_region *r);
void xferk_conn_revoke_exports(struct xferk_conn *c);
void xferk_remote_get(struct xferk_remote *rm);
int xferk_remote_add_rail(struct xferk_remote *rm, struct xferk_remote *rail);
void xferk_remote_put(struct xferk_remote *rm);

/* revoke.c */
bool xferk_export_ask_revoke(struct xferk_export *e, int *slot);
bool xferk_export_await_revoke(struct xferk_export *e, int slot,
			       ktime_t deadline, u64 *ack_ns);
void xferk_msg_received(struct xferk_conn *c, const void *msg, u32 len);
void xferk_msgs_kick_locked(struct xferk_conn *c);
void xferk_msgs_path_lost(struct xferk_conn *c);
int xferk_remote_listen(struct xferk_remote *rm);

/* op.c */

/* Most scatter/gather entries, hence pages, one work request carries. */
#define XFERK_MAX_SGE	32

/**
 * struct xferk_chunk - one work request of an op
 * @node: on conn->pending or conn->posted (conn->lock)
 * @op: the op
 * @region: local region (ref until the op is physically complete)
 * @remote: the fragment's remote handle (ref, likewise); the chunk goes
 *	through its rail @rail (xferk_chunk_remote())
 * @offset: start within @region
 * @remote_addr: the peer's address
 * @len: bytes (at most a work request's, far below 4 GiB)
 * @opcode: XFERK_OP_READ or XFERK_OP_WRITE
 * @frags_done: fragments whose last byte it carries (chunks may carry
 *	bytes of several fragments that follow each other, see op.c)
 * @posted: handed to the device and not yet reclaimed (conn->lock)
 * @sent: was handed to the device and is counted in flight: since its
 *	last post, unless it was queued again (xferk_chunk_unposted())
 * @dispatched: the admission queue let it go (charged to its windows
 *	until it is terminal)
 * @error: why an unposted chunk failed, for the completion path
 * @rail: the rail of @remote it goes through (0: @remote itself); changed
 *	only by whoever holds it off every list (xferk_chunk_reroute())
 * @reroutes: times it moved to another rail (bounded)
 * @sqp: the QP window the admission queue charged it to (dispatched)
 * @dispatched_at: when
 * @due: null peer: when to complete
 * @send: RDMA: the connection's send slot while posted (conn->lock)
 *
 * Kept small: an op holds one per work request, and what a post needs
 * (SGEs, the work request, the DMA mapping) lives in the connection's
 * bounded send slots instead.
 */
struct xferk_chunk {
	struct list_head node;
	struct xferk_op *op;
	struct xferk_region *region;
	struct xferk_remote *remote;
	u64 offset;
	u64 remote_addr;
	u32 len;
	u8 opcode;
	u32 frags_done;
	bool posted;
	bool sent;
	bool dispatched;
	u8 rail;
	u8 reroutes;
	int error;
	struct xferk_sched_qp *sqp;
	ktime_t dispatched_at;
	union {
		ktime_t due;
		struct xferk_send *send;
	};
};

/**
 * struct xferk_op - one submitted batch of fragments
 * @hobj: handle-table entry
 * @ref: handle + one until physically complete (+ one while an io_uring
 *	completion for it is on its way)
 * @node: in xferk_ops (xferk_ops_lock), for debugfs
 * @lock: protects @life and @drain_deadline; taken from the deadline
 *	hrtimer (irq-safe)
 * @life: lifecycle and accounting
 * @wq: waiters for @life changes
 * @deadline: absolute, KTIME_MAX for none
 * @timer: fires at @deadline
 * @owner: tgid of the submitter
 * @user_data: as given at submit
 * @read_bytes: bytes of its READ fragments (the rest are WRITEs)
 * @submit_flags: XFERK_SUBMIT_*
 * @drain_budget_ns: drain budget of the deadline policy
 * @flags: XFERK_OP_* bits
 * @orphaned: its file was closed before it was physically complete
 * @drain_deadline: bound of the background drain (while
 *	XFERK_OP_CANCEL_QUEUED; @lock)
 * @drain_step: its next step, enum xferk_drain_step (its work item only)
 * @drain_timer: when that step is due
 * @cancel_work: the background drain's steps (deadline policy, exit, an
 *	interrupted CANCEL)
 * @ucmd: the parked io_uring SUBMIT command, or NULL; set before the op
 *	is published, completed once (XFERK_OP_UCMD_CLAIMED) when it settles
 * @ucmd_task: the task that submitted @ucmd (ref until claimed)
 * @parked_node: in xferk_parked (xferk_parked_lock) until claimed
 * @expire_work: at the deadline: takes the op off its queue
 * @qdev: the queue the op was admitted to (ref), NULL when bypassed
 * @qacct: its file's account (ref): queue admission, chunk budget
 * @qitem: its entry in @qdev's scheduler (xferk_queue_lock)
 * @dispatch_next: index of its next chunk to dispatch (xferk_queue_lock)
 * @nr_conns: connections in @conns
 * @conns: the distinct connections its chunks use (one ref each), for
 *	cancel; they outlive @chunks
 * @nr_chunks: chunks the op was cut into
 * @chunks: the op's chunks; freed when the op is physically complete
 *	(NULL afterwards): a finished op keeps only its accounting
 * @id: its handle as SUBMIT returned it, its name in traces
 * @group: the group it joined at submit (ref), or NULL
 * @group_node: in @group->ops until the op is freed (@group->lock)
 * @notify: XFERK_SUBMIT_NOTIFY: its notification (@lock), queued (and
 *	NULL) by the chunk that makes the op physically complete, under its
 *	session's lock (op.c chunk_end_count())
 */
struct xferk_op {
	struct xferk_hobj hobj;
	struct kref ref;
	struct list_head node;
	spinlock_t lock;	/* life; irq-safe */
	struct xferk_life life;
	wait_queue_head_t wq;
	ktime_t deadline;
	struct hrtimer timer;
	pid_t owner;
	u64 user_data;
	u64 read_bytes;
	u32 submit_flags;
	u64 drain_budget_ns;
	unsigned long flags;
	bool orphaned;
	ktime_t drain_deadline;
	u8 drain_step;
	struct hrtimer drain_timer;
	struct work_struct cancel_work;
	struct io_uring_cmd *ucmd;
	struct task_struct *ucmd_task;
	struct list_head parked_node;
	struct work_struct expire_work;
	struct xferk_qdev *qdev;
	struct xferk_qacct *qacct;
	struct xferk_sched_item qitem;
	u32 dispatch_next;
	u32 nr_conns;
	struct xferk_conn **conns;
	u32 nr_chunks;
	struct xferk_chunk *chunks;
	u64 id;
	struct xferk_group *group;
	struct list_head group_node;
	struct xferk_notify *notify;
};

/* struct xferk_op.flags */
#define XFERK_OP_CANCEL_QUEUED	0	/* a background drain runs; holds a reference */
#define XFERK_OP_UCMD_CLAIMED	1	/* whoever sets it completes ucmd */
#define XFERK_OP_EXIT_CANCEL	2	/* ucmd_task exited: cancelled, -ECANCELED */

/* Steps of the background drain (struct xferk_op.drain_step). */
enum xferk_drain_step {
	XFERK_DRAIN_BEGIN,	/* cancel, drop unposted chunks */
	XFERK_DRAIN_FORCE,	/* halfway: fail the connections still posting */
	XFERK_DRAIN_EXPIRE,	/* the deadline: QUARANTINED if not physical */
};

extern spinlock_t xferk_ops_lock;
extern struct list_head xferk_ops;

int xferk_op_submit(struct xferk_file *xf, struct xferk_ioc_submit *a,
		    struct io_uring_cmd *ucmd);
int xferk_ioctl_submit(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_wait(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_query(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_cancel(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ops_cancel_drain(struct xferk_op **ops, u32 nr,
			   ktime_t drain_deadline);
void xferk_op_snapshot(struct xferk_op *op, struct xferk_op_snapshot *snap);
void xferk_op_orphan(struct xferk_op *op);
bool xferk_op_physical(struct xferk_op *op);
int xferk_op_module_init(void);
void xferk_op_module_exit(void);
extern unsigned int xferk_exit_drain_ms;
void xferk_chunk_complete(struct xferk_chunk *ch, int error);
void xferk_chunks_succeeded(struct xferk_chunk **chs, u32 n);
bool xferk_chunk_cancelled(struct xferk_chunk *ch);
void xferk_chunk_posted(struct xferk_chunk *ch);
void xferk_chunk_unposted(struct xferk_chunk *ch);
void xferk_op_put(struct xferk_op *op);

/* The remote a chunk goes through: its handle's own, or one of its rails. */
static inline struct xferk_remote *
xferk_chunk_remote(const struct xferk_chunk *ch)
{
	return ch->rail ? ch->remote->rails->rail[ch->rail] : ch->remote;
}

/* rail.c */
void xferk_remote_free_rails(struct xferk_remote *rm);
void xferk_remote_limits(struct xferk_remote *rm, u32 *pages, u64 *bytes);
u32 xferk_remote_nr_rails(struct xferk_remote *rm);
struct xferk_conn *xferk_remote_rail_conn(struct xferk_remote *rm, u32 i);
u8 xferk_remote_pick_rail(struct xferk_remote *rm);
bool xferk_chunk_may_reroute(const struct xferk_chunk *ch);
bool xferk_chunk_reroute(struct xferk_chunk *ch);

int xferk_ioctl_mr_reg(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_connect(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_conn_query(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_drop(struct xferk_file *xf, struct xferk_ioc_handle *a, u8 kind);
struct xferk_hobj *xferk_take_handle(struct xferk_file *xf, u64 handle, u8 kind);
int xferk_drop_handle(struct xferk_file *xf, u64 handle, u8 kind);
void xferk_unpublish_handle(struct xferk_file *xf, u64 handle, u8 kind);
int xferk_drop_op_handle(struct xferk_file *xf, struct xferk_op *op,
			 u64 handle);

/* group.c */

/**
 * struct xferk_group - ops of one request, aborted together
 * @hobj: handle-table entry
 * @ref: handle + one per op that joined
 * @lock: guards @ops, @nr_listed, @nr_physical, @gone, @gone_error and
 *	@aborted_notes; @closed, @nr_ops and @targets change only under it
 *	and the file's lock (joins and aborts run under the latter)
 * @wq: woken when an op of it becomes physically complete
 * @ops: its ops that are not yet freed (struct xferk_op.group_node)
 * @nr_ops: ops that joined
 * @nr_listed: of them, still on @ops
 * @nr_physical: of them, physically complete
 * @closed: aborted: no op joins any more, @targets no longer change
 * @gone: the sum of the snapshots of its ops that were freed
 * @gone_error: the first error among them
 * @aborted_notes: the ABORTED notifications of its targets, made as they
 *	joined, sent once it is closed and every op is physically complete
 *	(struct xferk_notify.node)
 * @nr_targets: entries of @targets
 * @targets: the distinct remote handles its ops used (a reference each)
 * @gen: random non-zero nonce
 * @tag: the tag of its ABORTED notifications
 */
struct xferk_group {
	struct xferk_hobj hobj;
	struct kref ref;
	spinlock_t lock;	/* see above */
	wait_queue_head_t wq;
	struct list_head ops;
	u32 nr_ops;
	u32 nr_listed;
	u32 nr_physical;
	bool closed;
	struct xferk_group_snapshot gone;
	int gone_error;
	struct list_head aborted_notes;
	u32 nr_targets;
	struct xferk_remote *targets[XFERK_GROUP_MAX_TARGETS];
	u64 gen;
	u64 tag;
};

struct xferk_group *xferk_group_create(u64 tag);
void xferk_group_put(struct xferk_group *g);
int xferk_group_join(struct xferk_group *g, struct xferk_op *op,
		     struct xferk_remote *const *remotes, u32 nr,
		     struct xferk_qacct *acct);
void xferk_group_op_physical(struct xferk_group *g);
void xferk_group_op_gone(struct xferk_op *op);
void xferk_group_sum_add(struct xferk_group_snapshot *sum,
			 const struct xferk_op_snapshot *s);
void xferk_group_snapshot(struct xferk_group *g,
			  struct xferk_group_snapshot *snap);
int xferk_group_wait(struct xferk_group *g, bool physical, ktime_t deadline);
int xferk_group_abort(struct xferk_group *g, struct xferk_file *xf,
		      ktime_t drain_deadline);
int xferk_ioctl_group_create(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_group_abort(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_group_wait(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_group_query(struct xferk_file *xf, union xferk_ioc_arg *arg);

/* notify.c */

/**
 * struct xferk_notify - a notification on its way to a target
 * @node: on the list of whoever owns it: a group's @aborted_notes, or its
 *	session's @notify_queue / @notify_posted (conn->lock)
 * @conn: the session it goes on; whoever holds it before it is queued
 *	keeps the session alive (an op's connections, a group's targets)
 * @acct: the account charged one work request for it (ref)
 * @seq: its sequence number in the session, from when it is queued
 * @id: the target export's id in the session
 * @tag: its tag
 * @bytes: DATA: bytes the op transferred
 * @type: XFERK_EVENT_*
 * @flags: XFERK_EVENT_INCOMPLETE
 */
struct xferk_notify {
	struct list_head node;
	struct xferk_conn *conn;
	struct xferk_qacct *acct;
	u64 seq;
	u64 id;
	u64 tag;
	u64 bytes;
	u8 type;
	u8 flags;
};

/**
 * struct xferk_evq - a file's queue of events
 * @ref: its file, each of its exports
 * @lock: guards @head, @count, @dropped and @ring (bh-safe)
 * @read_lock: one reader at a time: events are peeked, written out, then
 *	taken
 * @wq: woken when an event arrives
 * @size: entries of @ring
 * @head: index of the oldest event
 * @count: events queued
 * @dropped: events dropped since the last take (the queue was full)
 * @taking: events the reader holding @read_lock wrote out, to take once
 *	its command's output is written too (@read_lock)
 * @taking_dropped: the drops it reported (@read_lock)
 * @ring: the events
 */
struct xferk_evq {
	struct kref ref;
	spinlock_t lock;	/* bh-safe */
	struct mutex read_lock;
	wait_queue_head_t wq;
	u32 size;
	u32 head;
	u32 count;
	u64 dropped;
	u32 taking;
	u64 taking_dropped;
	struct xferk_event ring[];
};

extern unsigned int xferk_events_per_file;
struct xferk_notify *xferk_notify_alloc(struct xferk_remote *rm,
					struct xferk_qacct *acct, u8 type,
					u64 tag);
void xferk_notify_free(struct xferk_notify *n);
void xferk_notify_free_list(struct list_head *list);
bool xferk_notify_queue_locked(struct xferk_notify *n);
void xferk_notify_send(struct xferk_notify *n);
void xferk_notify_send_list(struct list_head *list);
void xferk_notify_kick_locked(struct xferk_conn *c);
void xferk_notify_sent(struct xferk_conn *c, u64 seq);
void xferk_notify_path_lost(struct xferk_conn *c);
void xferk_notify_conn_gone(struct xferk_conn *c);
void xferk_notify_conn_down(struct xferk_conn *c);
bool xferk_notify_received(struct xferk_conn *c,
			   const struct xferk_wire_notify *m);
struct xferk_evq *xferk_evq_create(void);
void xferk_evq_put(struct xferk_evq *q);
void xferk_evq_post(struct xferk_evq *q, const struct xferk_event *ev);
u32 xferk_evq_peek(struct xferk_evq *q, struct xferk_event *out, u32 max);
u64 xferk_evq_dropped(struct xferk_evq *q);
void xferk_evq_take(struct xferk_evq *q, u32 n, u64 dropped);
struct xferk_evq *xferk_file_evq(struct xferk_file *xf);
int xferk_ioctl_notify(struct xferk_file *xf, union xferk_ioc_arg *arg);
int xferk_ioctl_events(struct xferk_file *xf, union xferk_ioc_arg *arg);
void xferk_events_done(struct xferk_file *xf, bool written);

/* uring.c */
int xferk_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);
void xferk_uring_park(struct xferk_op *op, struct io_uring_cmd *cmd,
		      u64 handle);
void xferk_uring_op_settled(struct xferk_op *op, u32 state);
void xferk_uring_module_exit(void);

/* queue.c */

/**
 * struct xferk_qdev - the admission queue of one RDMA device
 * @node: in xferk_qdevs (xferk_queue_lock)
 * @ref: its device (struct xferk_dev), connections on it, ops admitted
 *	to it; outlives the device while ops hold it
 * @name: the device's name, for tables ("null" for the null peers')
 * @sched: the scheduler state (xferk_queue_lock)
 * @kicking: a context is dispatching (xferk_queue_lock)
 * @rekick: it should look again before it stops (xferk_queue_lock)
 * @kick_work: continues a dispatch that ran long (holds a reference)
 */
struct xferk_qdev {
	struct list_head node;
	struct kref ref;
	char name[IB_DEVICE_NAME_MAX];
	struct xferk_sched sched;
	bool kicking;
	bool rekick;
	struct work_struct kick_work;
};

/**
 * struct xferk_qacct - what one open file has in flight, wherever it goes
 * @a: its share of the admission queues (xferk_queue_lock)
 * @ref: the file and each of its ops
 * @chunks: chunks of its ops that are not physically complete, against
 *	max_chunks_per_file
 * @connecting: connections its CONNECTs started that are not yet up or
 *	down, against max_conns_per_file
 * @export_pages: pages its exports cover, against max_export_pages_per_file
 * @last_escalation: when one of its cancels last killed a path (ns), for
 *	escalation_interval_ms
 */
struct xferk_qacct {
	struct xferk_sched_account a;
	struct kref ref;
	atomic_long_t chunks;
	atomic_long_t connecting;
	atomic_long_t export_pages;
	atomic64_t last_escalation;
};

extern spinlock_t xferk_queue_lock;
extern struct list_head xferk_qdevs;
extern struct xferk_sched_limits xferk_queue_limits;
extern bool xferk_queue_bypass;

struct xferk_qdev *xferk_qdev_create(const char *name);
struct xferk_qdev *xferk_qdev_get_null(void);
void xferk_qdev_get(struct xferk_qdev *q);
void xferk_qdev_put(struct xferk_qdev *q);
struct xferk_qacct *xferk_qacct_create(void);
void xferk_qacct_put(struct xferk_qacct *a);
int xferk_queue_admit(struct xferk_op *op, struct xferk_qacct *acct,
		      const struct xferk_ioc_submit *a,
		      struct xferk_remote *const *remotes);
void xferk_queue_unadmit(struct xferk_op *op);
void xferk_queue_start(struct xferk_op *op);
void xferk_queue_drop(struct xferk_op *op);
void xferk_queue_chunk_done(struct xferk_chunk *ch, int error);
void xferk_queue_chunks_succeeded(struct xferk_chunk **chs, u32 n);
ktime_t xferk_queue_now(void);
int xferk_queue_module_init(void);
void xferk_queue_module_exit(void);

/* sysfs.c */
extern const struct attribute_group *xferk_dev_groups[];

/* debugfs.c, conn.c, rdma.c: fault injection (Documentation/fault-injection.md) */
extern u16 xferk_fault_connect_version;
extern atomic_t xferk_fault_swallow;
extern atomic_t xferk_fault_delay;
extern u32 xferk_fault_delay_ms;
extern atomic_t xferk_fault_fail_post;
extern atomic_t xferk_fault_fail_qp;
extern atomic_t xferk_fault_qp_error;
extern atomic_t xferk_fault_refuse_chain;
extern bool xferk_fault_no_caps;
extern atomic_t xferk_fault_ignore_revokes;
void xferk_debugfs_init(void);
void xferk_debugfs_exit(void);

#endif /* XFERK_H */
