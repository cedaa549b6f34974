// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite "xferk_revoke": the revoke protocol (kmod/revoke.c) on a
 * connection with a transport that only records the messages it is given.
 */
#include <asm/unaligned.h>
#include <kunit/test.h>

#include "../../kmod/conn.h"
#include "../../kmod/conn_state.h"
#include "../../kmod/export.h"
#include "../../kmod/op.h"
#include "../../kmod/stats.h"
#include "../../kmod/transport.h"
#include "../../kmod/wire.h"

#define MSGS	64

/* A REVOKE or REVOKE_ACK is 32 bytes on the wire. */
#define REVOKE_MSG_SIZE	32

static u8 sent[MSGS][XFERK_MSG_SIZE];
static u32 sent_len[MSGS];
static unsigned int nr_sent;

static int fake_send_msg(struct xferk_path *p, const void *msg, u32 len,
			 u64 seq)
{
	if (nr_sent == MSGS)
		return -EAGAIN;
	sent_len[nr_sent] = len;
	memcpy(sent[nr_sent++], msg, len);
	return 0;
}

static const struct xferk_transport fake_transport = {
	.name = "fake",
	.send_msg = fake_send_msg,
};

struct revoke_fixture {
	struct xferk_conn c;
	struct xferk_export e;
	struct xferk_remote rm[2];
	struct xferk_chunk ch;
};

static int revoke_init(struct kunit *test)
{
	struct revoke_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct xferk_conn *c;

	KUNIT_ASSERT_NOT_NULL(test, f);
	c = &f->c;
	mutex_init(&c->lock);
	INIT_LIST_HEAD(&c->pending);
	INIT_LIST_HEAD(&c->posted);
	INIT_LIST_HEAD(&c->remotes);
	INIT_LIST_HEAD(&c->notify_queue);
	INIT_LIST_HEAD(&c->notify_posted);
	init_waitqueue_head(&c->state_wq);
	c->revoked = kunit_kcalloc(test, XFERK_REVOKED_MAX, sizeof(u64),
				   GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c->revoked);
	c->transport = &fake_transport;
	c->state = XFERK_CONN_UP;
	/* A live path: the code only looks whether there is a QP. */
	c->path.lanes[0].qp = (struct ib_qp *)f;
	f->e = (struct xferk_export) { .conn = c, .id = 5, .gen = 77 };
	nr_sent = 0;
	test->priv = f;
	return 0;
}

/* A message as the peer's kernel would send it: @type, @id, @gen. */
static void wire(u8 *m, u8 type, u64 id, u64 gen)
{
	memset(m, 0, REVOKE_MSG_SIZE);
	put_unaligned_le32(0x4b4d4658, m);
	m[4] = type;
	put_unaligned_le64(id, m + 8);
	put_unaligned_le64(gen, m + 16);
}

static void receive(struct xferk_conn *c, u8 type, u64 id, u64 gen)
{
	u8 m[REVOKE_MSG_SIZE];

	wire(m, type, id, gen);
	xferk_msg_received(c, m, sizeof(m));
}

static bool sent_is(unsigned int i, u8 type, u64 id, u64 gen)
{
	u8 m[REVOKE_MSG_SIZE];

	wire(m, type, id, gen);
	return i < nr_sent && sent_len[i] == sizeof(m) &&
	       !memcmp(sent[i], m, sizeof(m));
}

/* Its export's REVOKE, as CLOSE asks for it. */
static bool ask_revoke(struct revoke_fixture *f, int *slot)
{
	return xferk_revoke_ask(f->e.conn, f->e.id, f->e.gen, slot);
}

static bool await_revoke(struct revoke_fixture *f, int slot, ktime_t deadline,
			 u64 *ack_ns)
{
	return xferk_revoke_await(f->e.conn, slot, deadline, ack_ns);
}

/* REVOKE out, REVOKE_ACK in: the close is cooperative, the slot free. */
static void revoke_cooperative(struct kunit *test)
{
	struct revoke_fixture *f = test->priv;
	u64 ack_ns = ~0ULL;
	int slot = -1;

	KUNIT_ASSERT_TRUE(test, ask_revoke(f, &slot));
	KUNIT_EXPECT_TRUE(test, sent_is(0, 1, 5, 77));
	/* Another export's answer, or another generation's, is not it. */
	receive(&f->c, 2, 5, 78);
	receive(&f->c, 2, 6, 77);
	KUNIT_EXPECT_EQ(test, f->c.revokes[slot].state, XFERK_REVOKE_WAITING);
	receive(&f->c, 2, 5, 77);
	KUNIT_EXPECT_TRUE(test,
			  await_revoke(f, slot, ktime_add_ms(ktime_get(), 10000),
				       &ack_ns));
	KUNIT_EXPECT_LT(test, ack_ns, 10000ULL * NSEC_PER_MSEC);
	KUNIT_EXPECT_EQ(test, f->c.revokes[slot].state, XFERK_REVOKE_FREE);
}

/*
 * Unanswered revokes stay bounded: abandoned ones keep their slots until a
 * late answer or the path's death; beyond XFERK_REVOKES_MAX nothing is sent.
 */
static void revoke_abandoned_bounded(struct kunit *test)
{
	struct revoke_fixture *f = test->priv;
	u64 ack_ns = 0;
	int i, slot;

	for (i = 0; i < XFERK_REVOKES_MAX; i++) {
		f->e.id = 100 + i;
		KUNIT_ASSERT_TRUE(test, ask_revoke(f, &slot));
		KUNIT_EXPECT_FALSE(test,
				   await_revoke(f, slot, ktime_get(), &ack_ns));
		KUNIT_EXPECT_EQ(test, f->c.revokes[slot].state,
				XFERK_REVOKE_ABANDONED);
	}
	f->e.id = 200;
	KUNIT_EXPECT_FALSE(test, ask_revoke(f, &slot));
	KUNIT_EXPECT_EQ(test, nr_sent, (unsigned int)XFERK_REVOKES_MAX);
	/* A late answer frees its slot. */
	receive(&f->c, 2, 103, 77);
	KUNIT_EXPECT_TRUE(test, ask_revoke(f, &slot));
	/* The path's death: waiting is lost, abandoned is free. */
	mutex_lock(&f->c.lock);
	xferk_msgs_path_lost(&f->c);
	mutex_unlock(&f->c.lock);
	KUNIT_EXPECT_EQ(test, f->c.revokes[slot].state, XFERK_REVOKE_LOST);
	for (i = 0; i < XFERK_REVOKES_MAX; i++)
		if (i != slot)
			KUNIT_EXPECT_EQ(test, f->c.revokes[i].state,
					XFERK_REVOKE_FREE);
	/* Its close does not wait for the deadline. */
	KUNIT_EXPECT_FALSE(test,
			   await_revoke(f, slot, ktime_add_ms(ktime_get(), 60000),
					&ack_ns));
	KUNIT_EXPECT_EQ(test, f->c.revokes[slot].state, XFERK_REVOKE_FREE);
	/* Not while the path is down, nor for an export without an id. */
	f->c.state = XFERK_CONN_RECONNECTING;
	KUNIT_EXPECT_FALSE(test, ask_revoke(f, &slot));
	f->c.state = XFERK_CONN_UP;
	f->e.id = 0;
	KUNIT_EXPECT_FALSE(test, ask_revoke(f, &slot));
}

/*
 * The importing end: a revoke makes the import unusable at once, is
 * answered only when none of its work requests is posted, and a later
 * import of the same export is refused.
 */
static void revoke_fences_imports(struct kunit *test)
{
	struct revoke_fixture *f = test->priv;
	struct xferk_remote *rm = &f->rm[0];

	*rm = (struct xferk_remote) { .conn = &f->c, .id = 9, .gen = 3 };
	KUNIT_ASSERT_EQ(test, xferk_remote_listen(rm), 0);
	f->ch.remote = rm;
	list_add_tail(&f->ch.node, &f->c.posted);

	receive(&f->c, 1, 9, 3);
	KUNIT_EXPECT_EQ(test, READ_ONCE(rm->error), -ESTALE);
	KUNIT_EXPECT_EQ(test, nr_sent, 0U);
	KUNIT_EXPECT_EQ(test, f->c.nr_acks_due, 1U);

	mutex_lock(&f->c.lock);
	list_del(&f->ch.node);
	xferk_msgs_kick_locked(&f->c);
	mutex_unlock(&f->c.lock);
	KUNIT_EXPECT_TRUE(test, sent_is(0, 2, 9, 3));
	KUNIT_EXPECT_EQ(test, f->c.nr_acks_due, 0U);

	f->rm[1] = (struct xferk_remote) { .conn = &f->c, .id = 9, .gen = 3 };
	KUNIT_EXPECT_EQ(test, xferk_remote_listen(&f->rm[1]), -ESTALE);
	list_del(&rm->conn_node);
}

/* The last XFERK_REVOKED_MAX revoked ids are remembered, the oldest go. */
static void revoke_remembered_bounded(struct kunit *test)
{
	struct revoke_fixture *f = test->priv;
	u64 id;

	for (id = 1; id <= XFERK_REVOKED_MAX + 1; id++) {
		receive(&f->c, 1, id, 1);
		f->c.nr_acks_due = 0;
	}
	KUNIT_EXPECT_EQ(test, f->c.nr_revoked, (u32)XFERK_REVOKED_MAX);
	f->rm[0] = (struct xferk_remote) { .conn = &f->c, .id = 1, .gen = 1 };
	KUNIT_EXPECT_EQ(test, xferk_remote_listen(&f->rm[0]), 0);
	list_del(&f->rm[0].conn_node);
	f->rm[1] = (struct xferk_remote) { .conn = &f->c, .id = 2, .gen = 1 };
	KUNIT_EXPECT_EQ(test, xferk_remote_listen(&f->rm[1]), -ESTALE);
}

/*
 * What is not a message of the protocol is counted and kills the path
 * (here dead already, so nothing else happens). A revoke a dead path
 * delivers late fences its imports but is not owed an answer; on a live
 * path that cannot send yet, owed answers pile up to the bound.
 */
static void revoke_invalid_messages(struct kunit *test)
{
	struct revoke_fixture *f = test->priv;
	s64 invalid = atomic64_read(&xferk_stats.msgs_invalid);
	struct xferk_remote *rm = &f->rm[0];
	u8 m[REVOKE_MSG_SIZE];
	int i;

	f->c.path_state = XFERK_PATH_DEAD;
	wire(m, 1, 1, 1);
	xferk_msg_received(&f->c, m, sizeof(m) - 1);
	xferk_msg_received(&f->c, m, 0);
	m[0] ^= 1;
	xferk_msg_received(&f->c, m, sizeof(m));
	wire(m, 1, 1, 1);
	m[5] = 1;
	xferk_msg_received(&f->c, m, sizeof(m));
	wire(m, 1, 1, 1);
	m[24] = 1;
	xferk_msg_received(&f->c, m, sizeof(m));
	receive(&f->c, 3, 1, 1);
	receive(&f->c, 0, 1, 1);
	receive(&f->c, 1, 0, 1);	/* ids start at 1 */
	KUNIT_EXPECT_EQ(test, atomic64_read(&xferk_stats.msgs_invalid),
			invalid + 8);
	KUNIT_EXPECT_EQ(test, f->c.nr_acks_due, 0U);

	*rm = (struct xferk_remote) { .conn = &f->c, .id = 7, .gen = 7 };
	KUNIT_ASSERT_EQ(test, xferk_remote_listen(rm), 0);
	receive(&f->c, 1, 7, 7);
	KUNIT_EXPECT_EQ(test, READ_ONCE(rm->error), -ESTALE);
	KUNIT_EXPECT_EQ(test, f->c.nr_acks_due, 0U);
	list_del(&rm->conn_node);

	/* A new path, not up yet: answers are owed, none can go. */
	f->c.path_state = XFERK_PATH_LIVE;
	f->c.state = XFERK_CONN_RECONNECTING;
	for (i = 0; i < XFERK_REVOKES_MAX; i++)
		receive(&f->c, 1, 1000 + i, 1);
	KUNIT_EXPECT_EQ(test, f->c.nr_acks_due, (u32)XFERK_REVOKES_MAX);
	KUNIT_EXPECT_EQ(test, atomic64_read(&xferk_stats.msgs_invalid),
			invalid + 8);
	KUNIT_EXPECT_EQ(test, nr_sent, 0U);
	/* It comes up: every answer goes. */
	f->c.state = XFERK_CONN_UP;
	mutex_lock(&f->c.lock);
	xferk_msgs_kick_locked(&f->c);
	mutex_unlock(&f->c.lock);
	KUNIT_EXPECT_EQ(test, nr_sent, (unsigned int)XFERK_REVOKES_MAX);
	KUNIT_EXPECT_EQ(test, f->c.nr_acks_due, 0U);
}

static struct kunit_case revoke_cases[] = {
	KUNIT_CASE(revoke_cooperative),
	KUNIT_CASE(revoke_abandoned_bounded),
	KUNIT_CASE(revoke_fences_imports),
	KUNIT_CASE(revoke_remembered_bounded),
	KUNIT_CASE(revoke_invalid_messages),
	{}
};

static struct kunit_suite revoke_suite = {
	.name = "xferk_revoke",
	.init = revoke_init,
	.test_cases = revoke_cases,
};

kunit_test_suite(revoke_suite);
