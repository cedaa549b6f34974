// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite "xferk_notify": notifications (kmod/notify.c) between two
 * connection ends whose transport only records the messages it is given,
 * and the bounded event queue of a target's file.
 */
#include <asm/unaligned.h>
#include <kunit/test.h>

#include "../../kmod/conn.h"
#include "../../kmod/conn_state.h"
#include "../../kmod/evq.h"
#include "../../kmod/export.h"
#include "../../kmod/notify.h"
#include "../../kmod/queue.h"
#include "../../kmod/ready.h"
#include "../../kmod/stats.h"
#include "../../kmod/transport.h"
#include "../../kmod/wire.h"

#define MSGS	64

static u8 sent[MSGS][XFERK_MSG_SIZE];
static u64 sent_seq[MSGS];
static unsigned int nr_sent;

static int fake_send_msg(struct xferk_path *p, const void *msg, u32 len,
			 u64 seq)
{
	if (nr_sent == MSGS)
		return -EAGAIN;
	sent_seq[nr_sent] = seq;
	memcpy(sent[nr_sent++], msg, len);
	return 0;
}

static const struct xferk_transport fake_transport = {
	.name = "fake",
	.send_msg = fake_send_msg,
};

/* @from sends to @to; @to exports export 9 of @from's remote @rm. */
struct notify_fixture {
	struct xferk_conn from;
	struct xferk_conn to;
	struct xferk_remote rm;
	struct xferk_export e;
	struct xferk_qacct acct;
};

static void conn_init(struct notify_fixture *f, struct xferk_conn *c)
{
	mutex_init(&c->lock);
	mutex_init(&c->exports_lock);
	INIT_LIST_HEAD(&c->pending);
	INIT_LIST_HEAD(&c->posted);
	INIT_LIST_HEAD(&c->remotes);
	INIT_LIST_HEAD(&c->exports);
	xa_init(&c->export_ids);
	INIT_LIST_HEAD(&c->notify_queue);
	INIT_LIST_HEAD(&c->notify_posted);
	init_waitqueue_head(&c->state_wq);
	c->transport = &fake_transport;
	c->state = XFERK_CONN_UP;
	c->peer_caps = XFERK_CAP_REVOKE | XFERK_CAP_NOTIFY;
	/* A live path: the code only looks whether there is a QP. */
	c->path.lanes[0].qp = (struct ib_qp *)f;
}

static int notify_init(struct kunit *test)
{
	struct notify_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	struct xferk_ready *ready;

	KUNIT_ASSERT_NOT_NULL(test, f);
	conn_init(f, &f->from);
	conn_init(f, &f->to);
	/* The fixture keeps a reference: puts never free it. */
	kref_init(&f->acct.ref);
	f->rm = (struct xferk_remote) { .conn = &f->from, .id = 9, .gen = 1 };
	f->e = (struct xferk_export) { .conn = &f->to, .id = 9, .live = true };
	f->e.hobj.handle = 0x1234;
	ready = xferk_ready_create();
	KUNIT_ASSERT_NOT_NULL(test, ready);
	f->e.evq = xferk_evq_create(ready);
	xferk_ready_put(ready);		/* the queue holds its own */
	KUNIT_ASSERT_NOT_NULL(test, f->e.evq);
	KUNIT_ASSERT_EQ(test, xa_insert(&f->to.export_ids, 9, &f->e,
					GFP_KERNEL), 0);
	nr_sent = 0;
	test->priv = f;
	return 0;
}

static void notify_exit(struct kunit *test)
{
	struct notify_fixture *f = test->priv;

	xferk_notify_conn_gone(&f->from);
	xa_destroy(&f->to.export_ids);
	xferk_evq_put(f->e.evq);
}

static void send_note(struct kunit *test, u64 tag)
{
	struct notify_fixture *f = test->priv;
	struct xferk_notify *n;

	n = xferk_notify_alloc(&f->rm, &f->acct, XFERK_EVENT_NOTE, tag);
	KUNIT_ASSERT_FALSE(test, IS_ERR(n));
	xferk_notify_send(n);
}

/*
 * Sent in order; a path's death sends again what was not known delivered;
 * the target delivers each once, in order, and drops the copies.
 */
static void notify_exactly_once(struct kunit *test)
{
	struct notify_fixture *f = test->priv;
	s64 dups = atomic64_read(&xferk_stats.notifies_duplicate);
	struct xferk_event ev[8];
	unsigned int i;

	send_note(test, 10);
	send_note(test, 11);
	send_note(test, 12);
	KUNIT_ASSERT_EQ(test, nr_sent, 3U);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->acct.chunks), 3L);
	/* The first one's send completed; the path dies before the others'. */
	xferk_notify_sent(&f->from, sent_seq[0]);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->acct.chunks), 2L);
	mutex_lock(&f->from.lock);
	xferk_msgs_path_lost(&f->from);
	xferk_msgs_kick_locked(&f->from);
	mutex_unlock(&f->from.lock);
	KUNIT_ASSERT_EQ(test, nr_sent, 5U);
	KUNIT_EXPECT_EQ(test, sent_seq[3], sent_seq[1]);
	KUNIT_EXPECT_EQ(test, sent_seq[4], sent_seq[2]);
	/* A late completion of the dead path's send ends it all the same. */
	xferk_notify_sent(&f->from, sent_seq[1]);
	xferk_notify_sent(&f->from, sent_seq[4]);
	xferk_notify_sent(&f->from, sent_seq[3]);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->acct.chunks), 0L);

	/* The target got every copy. */
	for (i = 0; i < nr_sent; i++)
		xferk_msg_received(&f->to, sent[i], XFERK_MSG_SIZE);
	KUNIT_EXPECT_EQ(test, atomic64_read(&xferk_stats.notifies_duplicate),
			dups + 2);
	KUNIT_ASSERT_EQ(test, xferk_evq_peek(f->e.evq, ev, ARRAY_SIZE(ev)), 3U);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_EQ(test, ev[i].tag, 10ULL + i);
		KUNIT_EXPECT_EQ(test, ev[i].export_handle, 0x1234ULL);
		KUNIT_EXPECT_EQ(test, ev[i].type, (u32)XFERK_EVENT_NOTE);
	}
	KUNIT_EXPECT_EQ(test, xferk_evq_dropped(f->e.evq), 0ULL);
	xferk_evq_take(f->e.evq, 3, 0);
}

/* At most XFERK_NOTIFY_SENDS are posted; completions let the rest go. */
static void notify_posted_bounded(struct kunit *test)
{
	struct notify_fixture *f = test->priv;
	unsigned int i;

	for (i = 0; i < XFERK_NOTIFY_SENDS + 4; i++)
		send_note(test, i);
	KUNIT_EXPECT_EQ(test, nr_sent, (unsigned int)XFERK_NOTIFY_SENDS);
	nr_sent = 0;
	xferk_notify_sent(&f->from, 1);
	xferk_notify_sent(&f->from, 2);
	mutex_lock(&f->from.lock);
	xferk_msgs_kick_locked(&f->from);
	mutex_unlock(&f->from.lock);
	KUNIT_EXPECT_EQ(test, nr_sent, 2U);
	KUNIT_EXPECT_EQ(test, sent_seq[0], (u64)XFERK_NOTIFY_SENDS + 1);
}

/* The count of recorded message @i if it is a CREDIT, else 0. */
static u32 credit_count(unsigned int i)
{
	const struct xferk_wire_credit *m = (const void *)sent[i];

	return m->type == XFERK_MSG_CREDIT ? le32_to_cpu(m->count) : 0;
}

/*
 * With XFERK_CAP_CREDIT: at most XFERK_NOTIFY_CREDITS NOTIFYs are sent and
 * not credited back, even once their sends completed; the target credits
 * them back XFERK_CREDIT_BATCH at a time as they arrive, and each CREDIT
 * lets as many more go. A new path starts with a full ring, and owes
 * nothing for NOTIFYs handled during the old one's teardown. A CREDIT out
 * of bounds, or unannounced, kills the path; one for more than is
 * outstanding is taken as a bound.
 */
static void notify_credited_flow(struct kunit *test)
{
	struct notify_fixture *f = test->priv;
	s64 invalid = atomic64_read(&xferk_stats.msgs_invalid);
	struct xferk_wire_credit bad;
	u8 m[XFERK_MSG_SIZE] = {};
	unsigned int i;

	f->from.peer_caps |= XFERK_CAP_CREDIT;
	f->to.peer_caps |= XFERK_CAP_CREDIT;
	for (i = 0; i < XFERK_NOTIFY_CREDITS + 8; i++)
		send_note(test, i);
	KUNIT_ASSERT_EQ(test, nr_sent, (unsigned int)XFERK_NOTIFY_CREDITS);
	/* Their sends complete: the target's device took them, not its kernel. */
	for (i = 0; i < XFERK_NOTIFY_CREDITS; i++)
		xferk_notify_sent(&f->from, sent_seq[i]);
	mutex_lock(&f->from.lock);
	xferk_msgs_kick_locked(&f->from);
	mutex_unlock(&f->from.lock);
	KUNIT_EXPECT_EQ(test, nr_sent, (unsigned int)XFERK_NOTIFY_CREDITS);

	/* The target credits them back a batch at a time. */
	for (i = 0; i < XFERK_CREDIT_BATCH - 1; i++)
		xferk_msg_received(&f->to, sent[i], XFERK_MSG_SIZE);
	KUNIT_EXPECT_EQ(test, nr_sent, (unsigned int)XFERK_NOTIFY_CREDITS);
	xferk_msg_received(&f->to, sent[i], XFERK_MSG_SIZE);
	KUNIT_ASSERT_EQ(test, nr_sent, XFERK_NOTIFY_CREDITS + 1U);
	KUNIT_EXPECT_EQ(test, credit_count(XFERK_NOTIFY_CREDITS),
			(u32)XFERK_CREDIT_BATCH);
	xferk_msg_received(&f->from, sent[XFERK_NOTIFY_CREDITS],
			   sizeof(struct xferk_wire_credit));
	KUNIT_ASSERT_EQ(test, nr_sent,
			XFERK_NOTIFY_CREDITS + 1U + XFERK_CREDIT_BATCH);
	KUNIT_EXPECT_EQ(test, sent_seq[nr_sent - 1],
			(u64)XFERK_NOTIFY_CREDITS + XFERK_CREDIT_BATCH);

	/* A new path: the posted ones and the rest of the queue go again. */
	nr_sent = 0;
	mutex_lock(&f->from.lock);
	xferk_msgs_path_lost(&f->from);
	xferk_msgs_kick_locked(&f->from);
	mutex_unlock(&f->from.lock);
	KUNIT_EXPECT_EQ(test, nr_sent, 8U);
	KUNIT_EXPECT_EQ(test, sent_seq[0], XFERK_NOTIFY_CREDITS + 1ULL);

	/* A dead path's CREDIT, for more than is uncredited now: a bound. */
	bad = (struct xferk_wire_credit) {
		.magic = cpu_to_le32(XFERK_MSG_MAGIC),
		.type = XFERK_MSG_CREDIT,
		.count = cpu_to_le32(XFERK_NOTIFY_CREDITS),
	};
	xferk_msg_received(&f->from, &bad, sizeof(bad));
	xferk_msg_received(&f->from, &bad, sizeof(bad));
	KUNIT_EXPECT_EQ(test, atomic64_read(&xferk_stats.msgs_invalid), invalid);
	KUNIT_EXPECT_EQ(test, f->from.notify_uncredited, 0U);

	/*
	 * NOTIFYs handled while the target's path is torn down: their buffers
	 * were not posted again, and the next path owes nothing for them.
	 */
	f->to.path_state = XFERK_PATH_DEAD;
	mutex_lock(&f->to.lock);
	xferk_msgs_path_lost(&f->to);
	mutex_unlock(&f->to.lock);
	for (i = 0; i < XFERK_CREDIT_BATCH; i++)
		xferk_msg_received(&f->to, sent[i], XFERK_MSG_SIZE);
	f->to.path_state = XFERK_PATH_LIVE;
	mutex_lock(&f->to.lock);
	xferk_msgs_kick_locked(&f->to);
	mutex_unlock(&f->to.lock);
	KUNIT_EXPECT_EQ(test, nr_sent, 8U);
	KUNIT_EXPECT_EQ(test, f->to.notify_owed, 0U);

	/*
	 * A peer past its credits: 16 NOTIFYs owed (no send slot to credit
	 * them back), a 17th breaks the protocol and is not delivered.
	 */
	memcpy(m, sent[0], sizeof(m));
	nr_sent = MSGS;
	for (i = 0; i < XFERK_NOTIFY_CREDITS; i++) {
		put_unaligned_le64(100 + i, m + 32);
		KUNIT_EXPECT_TRUE(test, xferk_notify_received(&f->to, (void *)m));
	}
	put_unaligned_le64(100 + i, m + 32);
	KUNIT_EXPECT_FALSE(test, xferk_notify_received(&f->to, (void *)m));
	KUNIT_EXPECT_EQ(test, f->to.notify_owed, (u32)XFERK_NOTIFY_CREDITS);
	nr_sent = 8;

	f->from.path_state = XFERK_PATH_DEAD;
	bad.count = 0;
	xferk_msg_received(&f->from, &bad, sizeof(bad));
	bad.count = cpu_to_le32(XFERK_NOTIFY_CREDITS + 1);
	xferk_msg_received(&f->from, &bad, sizeof(bad));
	bad.count = cpu_to_le32(1);
	bad.reserved1 = cpu_to_le32(1);
	xferk_msg_received(&f->from, &bad, sizeof(bad));
	bad.reserved1 = 0;
	memcpy(m, &bad, sizeof(bad));
	xferk_msg_received(&f->from, m, sizeof(m));	/* 48 bytes */
	f->from.peer_caps &= ~XFERK_CAP_CREDIT;
	xferk_msg_received(&f->from, &bad, sizeof(bad));	/* unannounced */
	KUNIT_EXPECT_EQ(test, atomic64_read(&xferk_stats.msgs_invalid),
			invalid + 5);
	xferk_evq_take(f->e.evq, 2 * XFERK_CREDIT_BATCH + XFERK_NOTIFY_CREDITS, 0);
}

/* Without XFERK_CAP_CREDIT on either end: no CREDIT, no credit bound. */
static void notify_uncredited_peer(struct kunit *test)
{
	struct notify_fixture *f = test->priv;
	unsigned int i;

	for (i = 0; i < XFERK_NOTIFY_SENDS + 4; i++)
		send_note(test, i);
	for (i = 0; i < XFERK_NOTIFY_SENDS; i++) {
		xferk_notify_sent(&f->from, sent_seq[i]);
		xferk_msg_received(&f->to, sent[i], XFERK_MSG_SIZE);
	}
	mutex_lock(&f->from.lock);
	xferk_msgs_kick_locked(&f->from);
	mutex_unlock(&f->from.lock);
	KUNIT_EXPECT_EQ(test, nr_sent, XFERK_NOTIFY_SENDS + 4U);
	for (i = 0; i < nr_sent; i++)
		KUNIT_EXPECT_EQ(test, credit_count(i), 0U);
	xferk_evq_take(f->e.evq, XFERK_NOTIFY_SENDS, 0);
}

/* A peer without the capability, a token without an id: refused. */
static void notify_refused(struct kunit *test)
{
	struct notify_fixture *f = test->priv;
	struct xferk_notify *n;

	f->from.peer_caps = XFERK_CAP_REVOKE;
	n = xferk_notify_alloc(&f->rm, &f->acct, XFERK_EVENT_NOTE, 1);
	KUNIT_EXPECT_EQ(test, PTR_ERR(n), -EOPNOTSUPP);
	f->from.peer_caps |= XFERK_CAP_NOTIFY;
	f->rm.id = 0;
	n = xferk_notify_alloc(&f->rm, &f->acct, XFERK_EVENT_NOTE, 1);
	KUNIT_EXPECT_EQ(test, PTR_ERR(n), -EOPNOTSUPP);
	f->rm.id = 9;
	f->rm.error = -ESTALE;
	n = xferk_notify_alloc(&f->rm, &f->acct, XFERK_EVENT_NOTE, 1);
	KUNIT_EXPECT_EQ(test, PTR_ERR(n), -ESTALE);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&f->acct.chunks), 0L);
}

/*
 * A notification that breaks the protocol kills the path, counted; a
 * valid one for an export not yet published is dropped, counted.
 */
static void notify_invalid(struct kunit *test)
{
	struct notify_fixture *f = test->priv;
	s64 invalid = atomic64_read(&xferk_stats.msgs_invalid), unclaimed;
	struct xferk_event ev;
	u8 m[XFERK_MSG_SIZE];

	f->to.path_state = XFERK_PATH_DEAD;
	send_note(test, 1);
	memcpy(m, sent[0], sizeof(m));
	xferk_msg_received(&f->to, m, sizeof(m) - 8);	/* short */
	m[5] = 9;					/* unknown event */
	xferk_msg_received(&f->to, m, sizeof(m));
	memcpy(m, sent[0], sizeof(m));
	m[6] = 2;					/* unknown flag */
	xferk_msg_received(&f->to, m, sizeof(m));
	memcpy(m, sent[0], sizeof(m));
	memset(m + 32, 0, 8);				/* sequence 0 */
	xferk_msg_received(&f->to, m, sizeof(m));
	memcpy(m, sent[0], sizeof(m));
	m[24] = 1;					/* a NOTE with bytes */
	xferk_msg_received(&f->to, m, sizeof(m));
	memcpy(m, sent[0], sizeof(m));
	m[6] = XFERK_EVENT_INCOMPLETE;			/* a NOTE incomplete */
	xferk_msg_received(&f->to, m, sizeof(m));
	KUNIT_EXPECT_EQ(test, atomic64_read(&xferk_stats.msgs_invalid),
			invalid + 6);
	KUNIT_EXPECT_EQ(test, xferk_evq_peek(f->e.evq, &ev, 1), 0U);
	/* A valid one for an export whose handle is not published: dropped. */
	f->e.hobj.handle = 0;
	unclaimed = atomic64_read(&xferk_stats.notifies_unclaimed);
	xferk_msg_received(&f->to, sent[0], sizeof(m));
	KUNIT_EXPECT_EQ(test, atomic64_read(&xferk_stats.notifies_unclaimed),
			unclaimed + 1);
	KUNIT_EXPECT_EQ(test, xferk_evq_peek(f->e.evq, &ev, 1), 0U);
}

/*
 * A full queue drops and counts; the count is reported once. Every event
 * posted, dropped ones included, is one wakeup of the file's readiness.
 */
static void evq_overflow_counted(struct kunit *test)
{
	unsigned int saved = xferk_events_per_file;
	struct xferk_event ev = { .tag = 1 }, out[16];
	struct xferk_ready *ready;
	struct xferk_evq *q;
	unsigned int i;

	ready = xferk_ready_create();
	KUNIT_ASSERT_NOT_NULL(test, ready);
	xferk_events_per_file = 16;
	q = xferk_evq_create(ready);
	xferk_events_per_file = saved;
	KUNIT_ASSERT_NOT_NULL(test, q);
	for (i = 0; i < 20; i++) {
		ev.tag = i;
		xferk_evq_post(q, &ev);
	}
	KUNIT_EXPECT_EQ(test, xferk_ready_take(ready), 20ULL);
	KUNIT_EXPECT_EQ(test, xferk_ready_take(ready), 0ULL);
	xferk_ready_untake(ready, 3);
	KUNIT_EXPECT_EQ(test, xferk_ready_take(ready), 3ULL);
	KUNIT_ASSERT_EQ(test, xferk_evq_peek(q, out, 16), 16U);
	KUNIT_EXPECT_EQ(test, out[0].tag, 0ULL);
	KUNIT_EXPECT_EQ(test, out[15].tag, 15ULL);
	/* Peeking takes nothing. */
	KUNIT_EXPECT_EQ(test, xferk_evq_peek(q, out, 4), 4U);
	KUNIT_EXPECT_EQ(test, xferk_evq_dropped(q), 4ULL);
	/* A drop after the reader looked stays for the next take. */
	xferk_evq_post(q, &ev);
	xferk_evq_take(q, 10, 4);
	KUNIT_EXPECT_EQ(test, xferk_evq_dropped(q), 1ULL);
	KUNIT_EXPECT_EQ(test, xferk_evq_peek(q, out, 16), 6U);
	KUNIT_EXPECT_EQ(test, out[0].tag, 10ULL);
	xferk_evq_take(q, 6, 1);
	KUNIT_EXPECT_EQ(test, xferk_evq_dropped(q), 0ULL);
	/* The ring wraps. */
	ev.tag = 99;
	xferk_evq_post(q, &ev);
	KUNIT_EXPECT_EQ(test, xferk_evq_peek(q, out, 16), 1U);
	KUNIT_EXPECT_EQ(test, out[0].tag, 99ULL);
	KUNIT_EXPECT_EQ(test, xferk_ready_take(ready), 2ULL);
	xferk_evq_put(q);
	xferk_ready_put(ready);
}

static struct kunit_case notify_cases[] = {
	KUNIT_CASE(notify_exactly_once),
	KUNIT_CASE(notify_posted_bounded),
	KUNIT_CASE(notify_credited_flow),
	KUNIT_CASE(notify_uncredited_peer),
	KUNIT_CASE(notify_refused),
	KUNIT_CASE(notify_invalid),
	KUNIT_CASE(evq_overflow_counted),
	{}
};

static struct kunit_suite notify_suite = {
	.name = "xferk_notify",
	.init = notify_init,
	.exit = notify_exit,
	.test_cases = notify_cases,
};

kunit_test_suite(notify_suite);
