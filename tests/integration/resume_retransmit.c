// SPDX-License-Identifier: GPL-2.0
/*
 * A new path's connect request that arrives again is not "stale". A raw
 * librdmacm initiator opens a session to xferk's listener at
 * 10.99.0.1:18515 (it knows the session's token key: both key halves
 * travel in the handshake), drops its path and resumes the session the
 * way xferk's own initiating end does: a request naming both ends' ids and
 * a sequence number, under a SipHash MAC. Then:
 *
 *  - the request of the path xferk accepted, sent again byte for byte (the
 *    initiator's CM sending it again because the answer was lost or late,
 *    which the IB CM hands to xferk as a new request once xferk had
 *    rejected the first), and one of an older path (a replay), are both
 *    rejected with xferk's reason 6 (retry), counted in conns_rejected;
 *  - the session lives on: the next sequence number resumes it.
 *
 * Regression: such a request was rejected as stale (reason 5), and the
 * initiating end took the session down with ESTALE although it was alive
 * (tests/twohost/80_tenant.sh: process A's ops failed with ESTALE after a
 * reconnect under path kills every 100 ms).
 *
 * Between the path's death and its teardown xferk answers a resume with
 * "retry" too: the resumes that must be accepted are tried with a new
 * sequence number each time, within a bound.
 */
#include <unistd.h>

#include "test.h"
#include "raw_peer.h"

#define PEER		"10.99.0.1"
/*
 * The raw end's connection id: the greatest, so that its request never
 * crosses a session this host opened to itself (of two crossed sessions
 * the one whose initiating end has the greater id wins).
 */
#define RAW_ID		UINT64_MAX

/* Bound for each step of a raw connection (resolution, handshake). */
static unsigned int step_ms(void)
{
	return t_debug_kernel() ? 60000 : 10000;
}

/* The session as the raw end knows it. */
static struct {
	uint64_t xferk_id;	/* the accepting end's id */
	uint64_t key[2];	/* the token key */
	uint64_t seq;		/* the last sequence number sent */
} sess;

/* Waits until the passive end from @name is @want: 0, or -ETIME. */
static int wait_state(const char *name, const char *want)
{
	uint64_t start = raw_now_ms();
	char state[16] = "?";

	while (raw_now_ms() - start < step_ms()) {
		if (raw_passive_state(name, state) == 1 && !strcmp(state, want))
			return 0;
		usleep(20000);
	}
	fprintf(stderr, "passive end from %s: %s, not %s\n", name, state, want);
	return -ETIME;
}

/*
 * Sends @m on a new raw connection: 0 and @r open if it was accepted
 * (and the accept is the session's, for the same path), or the reject's
 * reason (> 0), or a negative errno.
 */
static int send_resume(struct raw_conn *r, const struct raw_resume *m)
{
	struct rdma_cm_event *ev = NULL;
	const struct raw_resume *rep;
	const struct raw_rej *rej;
	int ret;

	ret = raw_conn_open(r, PEER, RAW_LISTEN_PORT, step_ms());
	if (ret)
		return ret;
	ret = raw_conn_connect(r, m, sizeof(*m));
	if (!ret)
		ret = raw_expect_event(r->ch, RDMA_CM_EVENT_ESTABLISHED,
				       step_ms(), &ev);
	if (!ret) {
		rep = ev->param.conn.private_data;
		if (!rep || ev->param.conn.private_data_len < sizeof(*rep) ||
		    be64toh(rep->msg.conn_id) != sess.xferk_id ||
		    be64toh(rep->resume_id) != RAW_ID ||
		    memcmp(rep->msg.key_half, m->msg.key_half, 8) ||
		    be64toh(rep->mac) != raw_resume_mac(rep, sess.key)) {
			fprintf(stderr, "the accept is not the session's\n");
			ret = -EPROTO;
		}
	} else if (ret == -EPROTO && ev->event == RDMA_CM_EVENT_REJECTED) {
		rej = ev->param.conn.private_data;
		ret = -EPROTO;
		if (ev->status == RAW_IB_REJ_CONSUMER && rej &&
		    ev->param.conn.private_data_len >= sizeof(*rej) &&
		    be32toh(rej->magic) == RAW_MAGIC)
			ret = be32toh(rej->reason);
	}
	raw_ack(ev);
	if (ret)
		raw_conn_close(r);
	return ret;
}

/*
 * Resumes the session with a new sequence number each time xferk answers
 * "retry" (its old path is still going): 0 and @r open, or what ended it.
 */
static int resume(struct raw_conn *r, struct raw_resume *m)
{
	uint64_t start = raw_now_ms();
	int ret;

	do {
		raw_resume_init(m, RAW_ID, sess.xferk_id, ++sess.seq, sess.key);
		ret = send_resume(r, m);
		if (ret == RAW_REJ_RETRY)
			usleep(50000);
	} while (ret == RAW_REJ_RETRY && raw_now_ms() - start < step_ms());
	return ret;
}

/* @m, sent on a connection of its own, must be answered "retry". */
static void expect_retry(const struct raw_resume *m, const char *what)
{
	struct raw_conn r;
	int ret = send_resume(&r, m);

	T_EXPECT(ret == RAW_REJ_RETRY, "%s: %d, not reason %d (retry)", what,
		 ret, RAW_REJ_RETRY);
	if (!ret)
		raw_conn_close(&r);
}

/* The raw end drops its path: xferk's end waits for a new one. */
static int drop_path(struct raw_conn *r, const char *name)
{
	struct rdma_cm_event *ev = NULL;
	int ret;

	rdma_disconnect(r->id);
	ret = raw_expect_event(r->ch, RDMA_CM_EVENT_DISCONNECTED, step_ms(), &ev);
	raw_ack(ev);
	raw_conn_close(r);
	return ret ?: wait_state(name, "reconnecting");
}

int main(void)
{
	struct rdma_cm_event *ev = NULL;
	struct raw_resume accepted, older, m;
	const struct raw_msg *rep;
	long long rejected;
	uint64_t start, seq;
	char name[64], state[16];
	struct raw_conn r;
	struct raw_msg req;
	int ret;

	if (access("/dev/xferk", F_OK))
		return T_SKIP;
	if (raw_conn_open(&r, PEER, RAW_LISTEN_PORT, step_ms()))
		return T_FAIL;
	raw_local_name(r.id, name, sizeof(name));

	/* A new session: its accept gives xferk's id and key half. */
	raw_msg_init(&req, RAW_ID);
	ret = raw_conn_connect(&r, &req, sizeof(req));
	if (!ret)
		ret = raw_expect_event(r.ch, RDMA_CM_EVENT_ESTABLISHED, step_ms(),
				       &ev);
	rep = ret ? NULL : ev->param.conn.private_data;
	if (!rep || ev->param.conn.private_data_len < sizeof(*rep)) {
		fprintf(stderr, "new session: %s\n", ret ? strerror(-ret) :
			"no accept private data");
		raw_ack(ev);
		raw_conn_close(&r);
		return T_FAIL;
	}
	sess.xferk_id = be64toh(rep->conn_id);
	raw_session_key(req.key_half, rep->key_half, sess.key);
	raw_ack(ev);
	T_EXPECT(wait_state(name, "up") == 0, "the new session is not up");

	/* Its first new path, accepted. */
	ret = drop_path(&r, name);
	T_EXPECT(ret == 0, "drop the first path: %s", strerror(-ret));
	ret = resume(&r, &accepted);
	T_EXPECT(ret == 0, "resume: %d", ret);
	if (ret)
		return t_result();
	T_EXPECT(wait_state(name, "up") == 0, "not up after the resume");
	ret = drop_path(&r, name);
	T_EXPECT(ret == 0, "drop the second path: %s", strerror(-ret));

	/* That request again, and one of an older path: "retry". */
	rejected = t_stat("conns_rejected");
	expect_retry(&accepted, "the accepted request sent again");
	memcpy(&seq, accepted.msg.key_half, sizeof(seq));
	raw_resume_init(&older, RAW_ID, sess.xferk_id, be64toh(seq) - 1,
			sess.key);
	expect_retry(&older, "an older path's request");
	T_EXPECT(t_stat("conns_rejected") >= rejected + 2,
		 "conns_rejected %lld, was %lld", t_stat("conns_rejected"),
		 rejected);
	T_EXPECT(raw_passive_state(name, state) == 1 &&
		 !strcmp(state, "reconnecting"),
		 "the session after the copies: %s", state);

	/*
	 * The next number resumes it. Unclaimed, it is then reaped after
	 * passive_idle_ms, which the kernel reads when its end of the path
	 * comes up (after the raw end saw it established): 1 s until this
	 * program ends, so nothing stays behind.
	 */
	T_EXPECT(t_param_scoped("passive_idle_ms", 1000) == 0,
		 "set passive_idle_ms: %s", strerror(errno));
	ret = resume(&r, &m);
	T_EXPECT(ret == 0, "resume after the copies: %d", ret);
	if (ret)
		return t_result();
	ret = raw_expect_event(r.ch, RDMA_CM_EVENT_DISCONNECTED, step_ms(), &ev);
	raw_ack(ev);
	T_EXPECT(ret == 0, "the unclaimed session was not reaped: %s",
		 strerror(-ret));
	raw_conn_close(&r);
	start = raw_now_ms();
	while (raw_passive_state(name, state) == 1 && strcmp(state, "down") &&
	       strcmp(state, "closed") && raw_now_ms() - start < step_ms())
		usleep(50000);
	T_EXPECT(raw_passive_state(name, state) != 1 || !strcmp(state, "down") ||
		 !strcmp(state, "closed"), "the session stays: %s", state);
	return t_result();
}
