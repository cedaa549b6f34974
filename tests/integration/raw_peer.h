/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A "raw peer" for the integration programs: a userspace librdmacm end that
 * plays a remote host speaking xferk's rdma_cm wire format (protocol
 * version 2, kmod/wire.h), so a test can send what a real xferk never
 * would, or stop half way through a handshake.
 *
 *   connect request and accept: struct raw_msg (40 bytes, big-endian)
 *   reject:                     struct raw_rej (12 bytes, big-endian)
 *
 * Include after test.h. Event waits are bounded: every helper fails with
 * -ETIME rather than block.
 */
#ifndef XFERK_RAW_PEER_H
#define XFERK_RAW_PEER_H

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define RAW_MAGIC	0x5846524bU	/* "XFRK" */
#define RAW_VERSION	2
#define RAW_LISTEN_PORT	18515		/* xferk's listen_port default */
#define RAW_CAPS_KNOWN	31ULL		/* the capability bits xferk knows */
/* What a raw peer announces: not CREDIT, whose messages it does not send. */
#define RAW_CAPS	7ULL

/* Reject reasons xferk sends (struct raw_rej.reason). */
#define RAW_REJ_VERSION		1
#define RAW_REJ_MALFORMED	2
#define RAW_REJ_BUSY		3
#define RAW_REJ_RESOURCES	4
#define RAW_REJ_STALE		5
#define RAW_REJ_RETRY		6

/* IB CM reject reason of rdma_reject(): consumer defined (IB spec 12.6.7). */
#define RAW_IB_REJ_CONSUMER	28

/*
 * Connect request and accept private data: a new session's QPs per path
 * (0 means 1, as from a peer before sessions of several QPs), the index of
 * a QP joining a path (0 in a new session's request).
 */
struct raw_msg {
	uint32_t magic;
	uint16_t version;
	uint8_t nr_qps;
	uint8_t lane;
	uint64_t caps;
	uint64_t conn_id;
	uint8_t key_half[16];
};

/* Reject private data. */
struct raw_rej {
	uint32_t magic;
	uint16_t version;
	uint16_t reserved;
	uint32_t reason;
};

/*
 * A request for a session's new path: struct raw_msg with nr_qps 0, the
 * path's sequence number in the first 8 bytes of key_half (the rest 0),
 * the acceptor's connection id, and SipHash-2-4 of the 48 bytes before
 * mac under the session's token key. An accept of it has the same form.
 */
struct raw_resume {
	struct raw_msg msg;
	uint64_t resume_id;
	uint64_t mac;
};

_Static_assert(sizeof(struct raw_msg) == 40, "raw_msg wire size");
_Static_assert(sizeof(struct raw_rej) == 12, "raw_rej wire size");
_Static_assert(sizeof(struct raw_resume) == 56, "raw_resume wire size");

/* A valid version-2 request from connection @conn_id. */
static inline void raw_msg_init(struct raw_msg *m, uint64_t conn_id)
{
	int i;

	memset(m, 0, sizeof(*m));
	m->magic = htobe32(RAW_MAGIC);
	m->version = htobe16(RAW_VERSION);
	m->conn_id = htobe64(conn_id);
	for (i = 0; i < 16; i++)
		m->key_half[i] = (uint8_t)rand();
}

static inline uint64_t raw_rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define RAW_SIPROUND(v0, v1, v2, v3) do {				\
	v0 += v1; v1 = raw_rotl(v1, 13); v1 ^= v0; v0 = raw_rotl(v0, 32); \
	v2 += v3; v3 = raw_rotl(v3, 16); v3 ^= v2;			\
	v0 += v3; v3 = raw_rotl(v3, 21); v3 ^= v0;			\
	v2 += v1; v1 = raw_rotl(v1, 17); v1 ^= v2; v2 = raw_rotl(v2, 32); \
} while (0)

/* SipHash-2-4 of @len bytes (a multiple of 8), as the kernel's siphash(). */
static inline uint64_t raw_siphash(const void *data, size_t len,
				   const uint64_t key[2])
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ key[0];
	uint64_t v1 = 0x646f72616e646f6dULL ^ key[1];
	uint64_t v2 = 0x6c7967656e657261ULL ^ key[0];
	uint64_t v3 = 0x7465646279746573ULL ^ key[1];
	uint64_t b = (uint64_t)len << 56, m;
	const uint8_t *p = data;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&m, p + i, 8);
		m = le64toh(m);
		v3 ^= m;
		RAW_SIPROUND(v0, v1, v2, v3);
		RAW_SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	v3 ^= b;
	RAW_SIPROUND(v0, v1, v2, v3);
	RAW_SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	RAW_SIPROUND(v0, v1, v2, v3);
	RAW_SIPROUND(v0, v1, v2, v3);
	RAW_SIPROUND(v0, v1, v2, v3);
	RAW_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* The token key of a session whose two ends sent key halves @a and @b. */
static inline void raw_session_key(const uint8_t a[16], const uint8_t b[16],
				   uint64_t key[2])
{
	uint8_t k[16];
	int i;

	for (i = 0; i < 16; i++)
		k[i] = a[i] ^ b[i];
	memcpy(&key[0], k, 8);
	memcpy(&key[1], k + 8, 8);
	key[0] = le64toh(key[0]);
	key[1] = le64toh(key[1]);
}

/* The MAC a new path's request or accept @m carries under @key. */
static inline uint64_t raw_resume_mac(const struct raw_resume *m,
				      const uint64_t key[2])
{
	return raw_siphash(m, offsetof(struct raw_resume, mac), key);
}

/*
 * A request from connection @conn_id for path @seq of the session whose
 * accepting end is @resume_id, under @key.
 */
static inline void raw_resume_init(struct raw_resume *m, uint64_t conn_id,
				   uint64_t resume_id, uint64_t seq,
				   const uint64_t key[2])
{
	uint64_t be_seq = htobe64(seq);

	memset(m, 0, sizeof(*m));
	m->msg.magic = htobe32(RAW_MAGIC);
	m->msg.version = htobe16(RAW_VERSION);
	m->msg.caps = htobe64(RAW_CAPS);
	m->msg.conn_id = htobe64(conn_id);
	memcpy(m->msg.key_half, &be_seq, sizeof(be_seq));
	m->resume_id = htobe64(resume_id);
	m->mac = htobe64(raw_resume_mac(m, key));
}

static inline void raw_rej_init(struct raw_rej *r, uint32_t magic,
				uint32_t reason)
{
	memset(r, 0, sizeof(*r));
	r->magic = htobe32(magic);
	r->version = htobe16(RAW_VERSION);
	r->reason = htobe32(reason);
}

static inline uint64_t raw_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An event channel whose reads never block (see raw_get_event()). */
static inline struct rdma_event_channel *raw_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch) {
		perror("rdma_create_event_channel");
		return NULL;
	}
	if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK)) {
		perror("O_NONBLOCK");
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	return ch;
}

/*
 * The next event of @ch within @ms milliseconds: 0 and *@ev (the caller
 * acks it), -ETIME if none came, another negative errno on failure.
 */
static inline int raw_get_event(struct rdma_event_channel *ch, unsigned int ms,
				struct rdma_cm_event **ev)
{
	uint64_t until = raw_now_ms() + ms;

	for (;;) {
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };
		uint64_t now = raw_now_ms();

		if (!rdma_get_cm_event(ch, ev))
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (now >= until)
			return -ETIME;
		if (poll(&p, 1, (int)(until - now)) < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * Waits for event @want on @ch (other events are logged and acked): 0 and
 * *@ev; -EPROTO and *@ev if another event that ends a connection attempt
 * came first; -ETIME or another negative errno and *@ev NULL. An event
 * returned in *@ev is still to be acked (raw_ack()).
 */
static inline int raw_expect_event(struct rdma_event_channel *ch,
				   enum rdma_cm_event_type want, unsigned int ms,
				   struct rdma_cm_event **ev)
{
	uint64_t until = raw_now_ms() + ms;
	int ret;

	for (;;) {
		uint64_t now = raw_now_ms();

		*ev = NULL;
		ret = raw_get_event(ch, now < until ? until - now : 0, ev);
		if (ret)
			return ret;
		if ((*ev)->event == want)
			return 0;
		switch ((*ev)->event) {
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_REJECTED:
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			fprintf(stderr, "raw peer: %s (status %d) while waiting for %s\n",
				rdma_event_str((*ev)->event), (*ev)->status,
				rdma_event_str(want));
			return -EPROTO;
		default:
			fprintf(stderr, "raw peer: ignoring %s\n",
				rdma_event_str((*ev)->event));
			rdma_ack_cm_event(*ev);
		}
	}
}

/* Acks the event raw_expect_event() returned, if it returned one. */
static inline void raw_ack(struct rdma_cm_event *ev)
{
	if (ev)
		rdma_ack_cm_event(ev);
}

/* An IPv4 address and port; 0 or -EINVAL. */
static inline int raw_sockaddr(struct sockaddr_in *sin, const char *ip,
			       uint16_t port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	return inet_pton(AF_INET, ip, &sin->sin_addr) == 1 ? 0 : -EINVAL;
}

/* The local end of @id as "a.b.c.d:port", as debugfs prints peers. */
static inline void raw_local_name(struct rdma_cm_id *id, char *buf, size_t len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)rdma_get_local_addr(id);
	char ip[INET_ADDRSTRLEN] = "?";

	inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(rdma_get_src_port(id)));
}

/*
 * The state of the passive end whose peer is @name ("a.b.c.d:port") in
 * debugfs xferk/peers: 1 and @state, 0 if there is none, -1 without the
 * file.
 */
static inline int raw_passive_state(const char *name, char state[16])
{
	char line[512], side[16], st[16], peer[64];
	FILE *f = fopen("/sys/kernel/debug/xferk/peers", "r");
	int found = 0;

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*u %*s %15s %15s %63s", side, st, peer) == 3 &&
		    !strcmp(side, "passive") && !strcmp(peer, name)) {
			memcpy(state, st, 16);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* A raw active end with a QP, address and route resolved. */
struct raw_conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int has_qp;
};

static inline void raw_conn_close(struct raw_conn *r)
{
	if (r->has_qp)
		rdma_destroy_qp(r->id);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->id)
		rdma_destroy_id(r->id);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	memset(r, 0, sizeof(*r));
}

/*
 * Resolves @ip:@port and creates an RC QP on the device it resolved to, so
 * that the request carries a real QP number and librdmacm completes the
 * handshake (RTU) when the caller reads the accept. 0 or a negative errno;
 * on failure everything is released.
 */
static inline int raw_conn_open(struct raw_conn *r, const char *ip,
				uint16_t port, unsigned int ms)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rdma_cm_event *ev;
	struct sockaddr_in dst;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = raw_sockaddr(&dst, ip, port);
	if (ret)
		return ret;
	r->ch = raw_channel();
	if (!r->ch)
		return -ENOMEM;
	if (rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP)) {
		ret = -errno;
		r->id = NULL;
		goto fail;
	}
	if (rdma_resolve_addr(r->id, NULL, (struct sockaddr *)&dst, ms)) {
		ret = -errno;
		goto fail;
	}
	ret = raw_expect_event(r->ch, RDMA_CM_EVENT_ADDR_RESOLVED, ms + 1000, &ev);
	raw_ack(ev);
	if (ret)
		goto fail;
	if (rdma_resolve_route(r->id, ms)) {
		ret = -errno;
		goto fail;
	}
	ret = raw_expect_event(r->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, ms + 1000, &ev);
	raw_ack(ev);
	if (ret)
		goto fail;
	r->pd = ibv_alloc_pd(r->id->verbs);
	r->cq = r->pd ? ibv_create_cq(r->id->verbs, 4, NULL, NULL, 0) : NULL;
	if (!r->cq) {
		ret = -ENOMEM;
		goto fail;
	}
	qa.send_cq = r->cq;
	qa.recv_cq = r->cq;
	if (rdma_create_qp(r->id, r->pd, &qa)) {
		ret = -errno;
		goto fail;
	}
	r->has_qp = 1;
	return 0;
fail:
	fprintf(stderr, "raw peer: cannot reach %s:%u: %s\n", ip, port,
		strerror(-ret));
	raw_conn_close(r);
	return ret;
}

/* Sends a connect request carrying @priv (at most 56 bytes over RoCE). */
static inline int raw_conn_connect(struct raw_conn *r, const void *priv,
				   uint8_t len)
{
	struct rdma_conn_param p = {
		.private_data = priv,
		.private_data_len = len,
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 6,
		.rnr_retry_count = 6,
	};

	return rdma_connect(r->id, &p) ? -errno : 0;
}

#endif /* XFERK_RAW_PEER_H */
