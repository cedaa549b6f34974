/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bottom layer (models and resources): every format xferk puts on the
 * wire or reads from it, with the static_asserts that hold their sizes:
 *
 *   struct xferk_cm_msg, xferk_cm_rej  the rdma_cm handshake's private
 *                                      data (conn_handshake.c; the
 *                                      reject: rdma_cm.c; big endian)
 *   struct xferk_wire_msg, _notify,    session messages (revoke.c,
 *          _fence                      notify.c, fence.c; little endian)
 *   struct xferk_token                 an export token (export.c; little
 *                                      endian), which the importer's
 *                                      process carries to its kernel
 *
 * Changing any of them changes the protocol (XFERK_PROTO_VERSION,
 * XFERK_TOKEN_VERSION).
 */
#ifndef XFERK_WIRE_H
#define XFERK_WIRE_H

#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/types.h>
#include "../uapi/xferk.h"

/* The rdma_cm handshake (conn_handshake.c; its reject: rdma_cm.c) */
#define XFERK_CM_MAGIC		0x5846524bU	/* "XFRK" */
#define XFERK_PROTO_VERSION	2

/* Capabilities the handshake announces (struct xferk_conn.peer_caps). */
#define XFERK_CAP_REVOKE	BIT_ULL(0)	/* windows, REVOKE, REVOKE_ACK */
#define XFERK_CAP_NOTIFY	BIT_ULL(1)	/* NOTIFY */
#define XFERK_CAP_FENCE		BIT_ULL(2)	/* FENCE, FENCE_ACK */
#define XFERK_CAP_CREDIT	BIT_ULL(3)	/* CREDIT: NOTIFY is credited */
#define XFERK_CAP_INSTANCE	BIT_ULL(4)	/* conn_id's high half: instance */
#define XFERK_PROTO_CAPS	(XFERK_CAP_REVOKE | XFERK_CAP_NOTIFY | \
				 XFERK_CAP_FENCE | XFERK_CAP_CREDIT | \
				 XFERK_CAP_INSTANCE)

/*
 * The connect request's and the accept's private data (56 bytes fit a
 * request over RoCE; the receiver may see more, zero-padded). With
 * XFERK_CAP_INSTANCE, conn_id's high 32 bits are the same for every id of
 * the sender's module instance (one load), and differ from its other
 * instances'.
 */
struct xferk_cm_msg {
	__be32 magic;
	__be16 version;
	u8 nr_qps;		/* new: asked, accepted: granted (0 means 1) */
	u8 lane;		/* a QP joining a path: its index (1..) */
	__be64 caps;
	__be64 conn_id;		/* the sender's local connection id */
	u8 key_half[16];	/* the sender's half of the token key (new) */
	__be64 resume_id;	/* resume: the acceptor's connection id */
	__be64 mac;		/* resume: SipHash-2-4 of the bytes above */
};

static_assert(sizeof(struct xferk_cm_msg) <= 56);

/* Why we refuse a connect request (struct xferk_cm_rej.reason). */
enum xferk_rej_reason {
	XFERK_REJ_VERSION = 1,		/* protocol version not supported */
	XFERK_REJ_MALFORMED = 2,	/* not a valid xferk request */
	XFERK_REJ_BUSY = 3,		/* max_passive_conns reached */
	XFERK_REJ_RESOURCES = 4,	/* we could not set the end up */
	XFERK_REJ_STALE = 5,		/* resume of a session we do not know */
	XFERK_REJ_RETRY = 6,		/* resume: the old path is going; retry */
	XFERK_REJ_CROSSED = 7,		/* ours to you crosses yours: use ours */
};

struct xferk_cm_rej {
	__be32 magic;
	__be16 version;
	__be16 reserved;
	__be32 reason;		/* enum xferk_rej_reason */
};

/*
 * Session messages (revoke.c and notify.c have the protocols): control
 * messages travel as SENDs of at most XFERK_MSG_SIZE bytes into the
 * peer's ring of XFERK_MSG_RECVS receive buffers. One end has at most
 * XFERK_REVOKES_MAX revokes unanswered (each waits for its answer, which
 * the peer sends once it handled it) and owes at most as many answers.
 * Notifications are not answered: to a peer that announced
 * XFERK_CAP_CREDIT, an end has at most XFERK_NOTIFY_CREDITS of them sent
 * on a path and not credited back; the peer credits them back (CREDIT)
 * once it posted their buffers again, XFERK_CREDIT_BATCH or more at a
 * time, so at most XFERK_CREDIT_SENDS CREDITs are on their way. Those
 * stay within the ring however long the receiving kernel lags. Bounded
 * only by their sends' completions are: the at most XFERK_FENCES_MAX
 * fence messages posted (to a peer that announced XFERK_CAP_FENCE; rare:
 * a rail's path failing), and, to a peer without XFERK_CAP_CREDIT, the at
 * most XFERK_NOTIFY_SENDS notifications posted. A send completes when the
 * peer's device took the message, not its kernel: a lagging kernel's ring
 * can run dry under those, and the device retries the send after an RNR
 * NAK (the QP's minimum RNR timer, which rdma_cm leaves at 655 ms),
 * XFERK_RNR_RETRY times, before the path dies. Nothing that can take
 * long, such as mapping a region, runs under the lock that the receive
 * completions need.
 */
#define XFERK_MSG_SIZE		48
#define XFERK_REVOKES_MAX	16
#define XFERK_NOTIFY_SENDS	16
#define XFERK_NOTIFY_CREDITS	XFERK_NOTIFY_SENDS
#define XFERK_CREDIT_BATCH	4
#define XFERK_CREDIT_SENDS	(XFERK_NOTIFY_CREDITS / XFERK_CREDIT_BATCH)
#define XFERK_FENCES_MAX	8
#define XFERK_MSG_SENDS		(2 * XFERK_REVOKES_MAX + XFERK_NOTIFY_SENDS + \
				 XFERK_FENCES_MAX + XFERK_CREDIT_SENDS)
#define XFERK_MSG_RECVS		(XFERK_MSG_SENDS + 8)

#define XFERK_MSG_MAGIC		0x4b4d4658U	/* "XFMK" */

enum xferk_msg_type {
	XFERK_MSG_REVOKE = 1,		/* stop using (id, gen), then answer */
	XFERK_MSG_REVOKE_ACK = 2,	/* nothing of (id, gen) is posted */
	XFERK_MSG_NOTIFY = 3,		/* an event for export id */
	XFERK_MSG_FENCE = 4,		/* tear down your end of a path */
	XFERK_MSG_FENCE_ACK = 5,	/* my end of that path is torn down */
	XFERK_MSG_CREDIT = 6,		/* your NOTIFYs' buffers are posted */
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

/*
 * A CREDIT on the wire (little endian): @count NOTIFYs that arrived on
 * this path since the last CREDIT have their receive buffers posted again.
 */
struct xferk_wire_credit {
	__le32 magic;
	u8 type;		/* XFERK_MSG_CREDIT */
	u8 reserved0[3];
	__le32 count;		/* 1 .. XFERK_NOTIFY_CREDITS */
	__le32 reserved1;
	__le64 reserved[2];
};

/*
 * A FENCE or FENCE_ACK on the wire (little endian): it travels through
 * one session and names another between the same two hosts, whose key
 * authenticates it (fence.c).
 */
struct xferk_wire_fence {
	__le32 magic;
	u8 type;		/* XFERK_MSG_FENCE or XFERK_MSG_FENCE_ACK */
	u8 reserved0[3];
	__le64 conn_id;		/* the named session: the receiver's end's id */
	__le64 peer_conn_id;	/* ... and the sender's end's id */
	__le64 path;		/* the number of the path (its resume request's) */
	__le64 mac;		/* SipHash-2-4 of the bytes above, its key */
};

static_assert(sizeof(struct xferk_wire_msg) == 32);
static_assert(sizeof(struct xferk_wire_credit) == 32);
static_assert(XFERK_CREDIT_BATCH <= XFERK_NOTIFY_CREDITS);
static_assert(sizeof(struct xferk_wire_fence) <= XFERK_MSG_SIZE);
static_assert(sizeof(struct xferk_wire_notify) == XFERK_MSG_SIZE);

/*
 * An export token (export.c), XFERK_TOKEN_SIZE bytes; the MAC covers
 * every byte before it.
 */
#define XFERK_TOKEN_MAGIC	0x4b544658U	/* "XFTK" */
#define XFERK_TOKEN_VERSION	2

struct xferk_token {
	__le32 magic;
	__le16 version;
	__le16 reserved0;
	__le64 conn_id;		/* the importing end's local id */
	__le64 iova;
	__le64 len;
	__le32 rkey;
	__le32 access;
	__le64 export_id;	/* 0: none (the peer has no XFERK_CAP_REVOKE) */
	__le64 generation;
	__le64 mac;		/* SipHash-2-4 of the bytes above */
};

static_assert(sizeof(struct xferk_token) == XFERK_TOKEN_SIZE);

#endif /* XFERK_WIRE_H */
