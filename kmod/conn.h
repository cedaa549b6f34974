/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sessions layer: a connection end to a peer (struct xferk_conn; conn.c,
 * conn_post.c, conn_timer.c and conn_lookup.c, which share
 * conn_internal.h), a file's handle to one, and the session API. The
 * session state machine is conn_state.h, the revoke protocol's state and
 * entry points revoke.h, the transport's ops table transport.h, the
 * messages' layout wire.h.
 */
#ifndef XFERK_CONN_H
#define XFERK_CONN_H

#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/siphash.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include "conn_state.h"
#include "fence.h"
#include "handle.h"
#include "revoke.h"
#include "sched.h"
#include "transport.h"
#include "wire.h"

struct net;
struct xferk_chunk;
struct xferk_op;
struct xferk_qacct;
struct xferk_qdev;
struct xferk_send;

/*
 * A connection is a session with the peer (its PD, exports, key, ids, its
 * users' handles) over one path at a time (cm_ids, QPs, CQ). When the path
 * of an UP session dies, the session is RECONNECTING until a new path is
 * up (UP again) or it gives up (DOWN). conn_state.h has the state machine;
 * every transition is in conn.c.
 */

/* struct xferk_conn.flags: atomic bits, set from any context */
#define XFERK_CONN_F_CLAIMED	1	/* a local object used it: never reaped */
#define XFERK_CONN_F_KEYED	2	/* @peer_id and @token_key are set */
#define XFERK_CONN_F_PROBING	3	/* a keepalive probe is posted */
#define XFERK_CONN_F_RAIL	4	/* a remote handle's rail (rail.c) */

/**
 * struct xferk_conn - one end of a connection to a peer host
 * @ref: xferk_conns list, handles, remotes, exports, ops
 * @node: in xferk_conns (xferk_conns_lock)
 * @peer_node: in the index by namespace and peer address (RDMA ends)
 * @id_node: in the index by @local_id
 * @transport: RDMA or null
 * @id: number for tables
 * @local_id: unique among this host's connections, the high 32 bits this
 *	module instance's, the low 32 random; the tokens the peer exports on
 *	this connection name it
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
 * @path_state: enum xferk_path_state, changed only by conn_path_change()
 *	(atomically: LIVE -> DEAD from any context, the others under @lock);
 *	read with READ_ONCE() or through xferk_conn_path_dead()
 * @path_gen: paths the session has had (@lock)
 * @attempts: path attempts since the last path was up (@lock)
 * @next_attempt: when the next path attempt may start (@lock)
 * @attempt_deadline: when a path attempt that is not up yet fails (@lock)
 * @path_deaths: paths that died while it was up (@lock)
 * @reconnects: paths that came up after the first (@lock)
 * @reposted: chunks flushed by a path death and queued again (@lock)
 * @users: local objects that use the session: CONNECT handles, exports,
 *	imports (xferk_conn_use()); an end we initiated starts with its
 *	creator's
 * @idle_since: when @users last dropped to 0 (ns): an end we initiated
 *	goes down session_idle_ms later if none came meanwhile
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
 *	the send slots (@path)
 * @pending: chunks waiting for a send slot
 * @posted: chunks posted and without completion
 * @credits: free send slots
 * @outstanding: number of chunks on @posted
 * @idle: woken when @outstanding drops to 0
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
 * @next_export_id: id of this end's next export (@exports_lock)
 * @notify_queue: notifications to send, in sequence order (@lock)
 * @notify_posted: notifications sent on the current path whose send has
 *	not completed, in sequence order (@lock)
 * @nr_notify_posted: entries of @notify_posted, at most
 *	XFERK_NOTIFY_SENDS (@lock)
 * @notify_uncredited: NOTIFYs sent on the current path that the peer (one
 *	that announced XFERK_CAP_CREDIT) did not credit back yet, at most
 *	XFERK_NOTIFY_CREDITS (@lock)
 * @notify_owed: NOTIFYs that arrived on the current path, not credited
 *	back yet (@lock)
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
 * @qdev: the admission queue of the connection's device (ref); NULL
 *	until the device is known
 * @sqp: the session's dispatch window in that queue, one QP window per
 *	lane (xferk_queue_lock)
 * @fence: its part in the rails fence (fence.c)
 * @path: the transport's part: its current path (transport.h)
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
	int path_state;
	u32 path_gen;
	u32 attempts;
	ktime_t next_attempt;
	ktime_t attempt_deadline;
	u64 path_deaths;
	u64 reconnects;
	u64 reposted;
	atomic_t users;
	atomic64_t idle_since;
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
	struct list_head remotes;
	struct xferk_revoke revokes[XFERK_REVOKES_MAX];
	struct xferk_revoke acks_due[XFERK_REVOKES_MAX];
	u32 nr_acks_due;
	u64 *revoked;
	u32 nr_revoked;
	u32 revoked_next;
	u64 next_export_id;
	struct list_head notify_queue;
	struct list_head notify_posted;
	u32 nr_notify_posted;
	u32 notify_uncredited;
	u32 notify_owed;
	u64 notify_seq;
	u64 notify_seen;

	struct mutex exports_lock;	/* exports and their keys */
	struct list_head exports;
	struct xarray export_ids;
	struct delayed_work recover_work;
	struct work_struct down_work;
	struct delayed_work timer_work;
	struct delayed_work keepalive_work;

	struct xferk_qdev *qdev;
	struct xferk_sched_qp sqp;
	struct xferk_fence fence;

	struct xferk_path path;
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
extern unsigned int xferk_lost_completion_ms;
extern unsigned int xferk_passive_idle_ms;
extern unsigned int xferk_reconnect_ms;
extern unsigned int xferk_flush_timeout_ms;
extern unsigned int xferk_keepalive_ms;
extern unsigned int xferk_session_idle_ms;
extern unsigned int xferk_max_passive_conns;
extern unsigned int xferk_max_peer_qps;
extern unsigned int xferk_handshake_timeout_ms;

/* conn.c: a session's life, its state machine, recovery and teardown */
int xferk_conn_module_init(void);
void xferk_conn_module_exit(void);
void xferk_conn_init(struct xferk_conn *c, const struct xferk_transport *t,
		     struct net *net, bool active);
void xferk_conn_get(struct xferk_conn *c);
void xferk_conn_put(struct xferk_conn *c);
void xferk_conn_claim(struct xferk_conn *c);
struct xferk_conn *xferk_conn_null_create(u64 delay_ns);
int xferk_conn_charge_attempt(struct xferk_qacct *acct,
			      unsigned long max_connecting);
void xferk_conn_uncharge_attempt(struct xferk_qacct *acct);
void xferk_conn_set_creator(struct xferk_conn *c, struct xferk_qacct *acct);
void xferk_conn_set_exports_down(void (*exports_down)(struct xferk_conn *c));
void xferk_conn_use(struct xferk_conn *c);
void xferk_conn_unuse(struct xferk_conn *c);
void xferk_conn_set_up(struct xferk_conn *c);
void xferk_conn_lane_up(struct xferk_conn *c, struct xferk_lane *l);
bool xferk_conn_down(struct xferk_conn *c, int error);
void xferk_conn_qp_dead(struct xferk_conn *c, int error, int cause);
void xferk_conn_path_down(struct xferk_conn *c, int error, int cause);
bool xferk_conn_path_attach(struct xferk_conn *c, u64 seq);

/* The session whose transport part @p is. */
static inline struct xferk_conn *xferk_path_conn(struct xferk_path *p)
{
	return container_of(p, struct xferk_conn, path);
}

/* The path cannot take work: not LIVE (QP in error, being torn, none). */
static inline bool xferk_conn_path_dead(const struct xferk_conn *c)
{
	return READ_ONCE(c->path_state) != XFERK_PATH_LIVE;
}

/* conn_timer.c: its deadline and keepalive */
void xferk_conn_arm_timer(struct xferk_conn *c, unsigned int ms);

/* conn_post.c: posting chunks, their completions */
bool xferk_conn_postable(struct xferk_conn *c);
bool xferk_conn_qp_live(struct xferk_conn *c);
void xferk_conn_flush_posted(struct xferk_conn *c);
void xferk_chunks_queue(struct xferk_chunk **chs, u32 n);
void xferk_conn_drop_op(struct xferk_conn *c, struct xferk_op *op);
bool xferk_conn_op_posted(struct xferk_conn *c, struct xferk_op *op);
void xferk_fault_release_delays(void);

/* conn_connect.c: making a session over RDMA, CONNECT */
struct xferk_conn *xferk_conn_alloc_rdma(gfp_t gfp, u32 nr_qps);
void xferk_conn_set_qps(struct xferk_conn *c, u32 nr);
u8 *xferk_conn_key_half(struct xferk_conn *c);
struct xferk_conn *xferk_conn_connect(struct net *net,
				      const struct sockaddr_storage *peer,
				      unsigned int timeout_ms, u32 nr_qps,
				      struct xferk_qacct *acct,
				      unsigned long max_connecting);

/* conn_lookup.c: publishing connections, finding them */
struct xferk_conn *xferk_conn_publish(struct xferk_conn *c, u64 peer_conn_id,
				      u64 peer_caps);
struct xferk_conn *xferk_conn_find_peer(struct net *net,
					const struct sockaddr_storage *peer);
struct xferk_conn *xferk_conn_find_resumed(u64 local_id,
					   const struct sockaddr_storage *from);
bool xferk_conn_resume_fresh(struct xferk_conn *c, u64 seq);
void xferk_conn_stale_peer(struct xferk_conn *fresh);
bool xferk_conn_token_key(struct xferk_conn *c, u64 *peer_id,
			  siphash_key_t *key);
struct xferk_conn *xferk_conn_find_importer(struct xferk_conn *via,
					    u64 conn_id, struct net *net);

#endif /* XFERK_CONN_H */
