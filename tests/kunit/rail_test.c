// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite "xferk_rail": a remote handle's rails (kmod/rail.c) on
 * connections that are only states and limits: who may become a rail,
 * the work request every rail takes, the rotation over the rails that
 * are up, where a chunk whose rail failed may move, and when the fence of
 * the path that carried it holds it back.
 */
#include <kunit/test.h>

#include "../../kmod/conn.h"
#include "../../kmod/conn_state.h"
#include "../../kmod/export.h"
#include "../../kmod/op.h"
#include "../../kmod/rail.h"
#include "../../kmod/region.h"

#define NCONN	(XFERK_MAX_RAILS + 1)

struct rail_fixture {
	struct xferk_conn c[NCONN];
	struct xferk_remote rm[NCONN];	/* rm[i] through c[i]; rm[0] the handle's */
	struct xferk_conn *held[NCONN];
	struct xferk_op op;
	struct xferk_region r;
	struct xferk_chunk ch;
};

static int rail_init(struct kunit *test)
{
	struct rail_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, f);
	for (i = 0; i < NCONN; i++) {
		f->c[i].state = XFERK_CONN_UP;
		f->c[i].path.max_chunk_pages = 32;
		f->c[i].path.max_chunk_bytes = SZ_1M;
		f->rm[i] = (struct xferk_remote) { .conn = &f->c[i],
						   .iova = 0x10000 * (i + 1),
						   .len = 1 << 20, .access = 3 };
		f->held[i] = &f->c[i];
	}
	f->op.conns = f->held;
	f->op.nr_conns = NCONN;
	f->r.addr = 0x100000;
	f->ch = (struct xferk_chunk) { .op = &f->op, .remote = &f->rm[0],
				       .wr = { .region = &f->r, .len = 4096 } };
	test->priv = f;
	return 0;
}

/* The rails struct only: the fixture's remotes are not refcounted. */
static void rail_exit(struct kunit *test)
{
	struct rail_fixture *f = test->priv;

	kfree(f->rm[0].rails);
}

static void rail_add_checks(struct kunit *test)
{
	struct rail_fixture *f = test->priv;
	struct xferk_remote other_len = f->rm[1], other_access = f->rm[1];
	int i;

	other_len.len++;
	other_access.access = 1;
	KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0], &other_len), -EINVAL);
	KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0], &other_access), -EINVAL);
	KUNIT_EXPECT_NULL(test, f->rm[0].rails);
	/* Its own session is taken. */
	f->rm[1].conn = &f->c[0];
	KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0], &f->rm[1]), -EEXIST);
	f->rm[1].conn = &f->c[1];
	for (i = 1; i < XFERK_MAX_RAILS; i++)
		KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0], &f->rm[i]), 0);
	KUNIT_ASSERT_NOT_NULL(test, f->rm[0].rails);
	KUNIT_EXPECT_EQ(test, f->rm[0].rails->nr, (u32)XFERK_MAX_RAILS);
	KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0], &f->rm[2]), -EEXIST);
	KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0],
						    &f->rm[XFERK_MAX_RAILS]), -E2BIG);
}

static void rail_limits_smallest(struct kunit *test)
{
	struct rail_fixture *f = test->priv;
	u64 bytes;
	u32 pages;

	f->c[1].path.max_chunk_pages = 1;
	f->c[2].path.max_chunk_bytes = SZ_64K;
	xferk_remote_limits(&f->rm[0], &pages, &bytes);
	KUNIT_EXPECT_EQ(test, pages, 32U);	/* no rails yet */
	KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0], &f->rm[1]), 0);
	KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0], &f->rm[2]), 0);
	xferk_remote_limits(&f->rm[0], &pages, &bytes);
	KUNIT_EXPECT_EQ(test, pages, 1U);
	KUNIT_EXPECT_EQ(test, bytes, (u64)SZ_64K);
}

static void rail_pick_rotates_over_up(struct kunit *test)
{
	struct rail_fixture *f = test->priv;
	unsigned int seen[3] = {}, i;

	KUNIT_EXPECT_EQ(test, xferk_remote_pick_rail(&f->rm[0]), 0);
	KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0], &f->rm[1]), 0);
	KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0], &f->rm[2]), 0);
	for (i = 0; i < 30; i++)
		seen[xferk_remote_pick_rail(&f->rm[0])]++;
	KUNIT_EXPECT_EQ(test, seen[0], 10U);
	KUNIT_EXPECT_EQ(test, seen[1], 10U);
	KUNIT_EXPECT_EQ(test, seen[2], 10U);
	/* Down, dead QP, refused key: skipped. */
	f->c[1].state = XFERK_CONN_RECONNECTING;
	f->c[2].path_state = XFERK_PATH_DEAD;
	for (i = 0; i < 10; i++)
		KUNIT_EXPECT_EQ(test, xferk_remote_pick_rail(&f->rm[0]), 0);
	f->c[2].path_state = XFERK_PATH_LIVE;
	f->rm[0].error = -EACCES;
	for (i = 0; i < 10; i++)
		KUNIT_EXPECT_EQ(test, xferk_remote_pick_rail(&f->rm[0]), 2);
	/* None up: the handle's own, which waits or fails as without rails. */
	f->c[2].state = XFERK_CONN_DOWN;
	KUNIT_EXPECT_EQ(test, xferk_remote_pick_rail(&f->rm[0]), 0);
}

static void rail_reroute_targets(struct kunit *test)
{
	struct rail_fixture *f = test->priv;

	/* No other rail. */
	KUNIT_EXPECT_FALSE(test, xferk_chunk_may_reroute(&f->ch));
	KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0], &f->rm[1]), 0);
	KUNIT_EXPECT_TRUE(test, xferk_chunk_may_reroute(&f->ch));
	/* Only to a session that is up... */
	f->c[1].state = XFERK_CONN_RECONNECTING;
	KUNIT_EXPECT_FALSE(test, xferk_chunk_may_reroute(&f->ch));
	f->c[1].state = XFERK_CONN_UP;
	/* ...that its op holds... */
	f->op.nr_conns = 1;
	KUNIT_EXPECT_FALSE(test, xferk_chunk_may_reroute(&f->ch));
	f->op.nr_conns = NCONN;
	/* ...whose device takes it in one work request... */
	f->ch.wr.len = 8192;
	f->c[1].path.max_chunk_pages = 1;
	KUNIT_EXPECT_FALSE(test, xferk_chunk_may_reroute(&f->ch));
	f->c[1].path.max_chunk_pages = 2;
	KUNIT_EXPECT_TRUE(test, xferk_chunk_may_reroute(&f->ch));
	f->c[1].path.max_chunk_bytes = 4096;
	KUNIT_EXPECT_FALSE(test, xferk_chunk_may_reroute(&f->ch));
	f->c[1].path.max_chunk_bytes = SZ_1M;
	/* ...and a bounded number of times. */
	f->ch.reroutes = 2 * XFERK_MAX_RAILS;
	KUNIT_EXPECT_FALSE(test, xferk_chunk_may_reroute(&f->ch));
	f->ch.reroutes = 0;
	/* From rail 1, back to the handle's own. */
	f->ch.rail = 1;
	KUNIT_EXPECT_PTR_EQ(test, xferk_chunk_remote(&f->ch), &f->rm[1]);
	KUNIT_EXPECT_TRUE(test, xferk_chunk_may_reroute(&f->ch));
	f->c[0].state = XFERK_CONN_DOWN;
	KUNIT_EXPECT_FALSE(test, xferk_chunk_may_reroute(&f->ch));
}

/*
 * A chunk a path carried moves only once the peer fenced that path; the
 * fence is asked through the rail it would move to, if its peer knows it.
 */
static void rail_reroute_fenced(struct kunit *test)
{
	struct rail_fixture *f = test->priv;

	KUNIT_EXPECT_EQ(test, xferk_remote_add_rail(&f->rm[0], &f->rm[1]), 0);
	f->ch.fence_path = 3;		/* posted on path 2 of c[0] */
	KUNIT_EXPECT_FALSE(test, xferk_chunk_may_reroute(&f->ch));
	KUNIT_EXPECT_FALSE(test, xferk_chunk_reroute(&f->ch));
	KUNIT_EXPECT_EQ(test, f->ch.rail, 0);
	/* Not through a peer without the capability: nothing to wait for. */
	KUNIT_EXPECT_FALSE(test, xferk_chunk_fence_blocks(&f->ch));
	KUNIT_EXPECT_NULL(test, xferk_chunk_fence_via(&f->ch));
	f->c[1].peer_caps = XFERK_CAP_FENCE;
	KUNIT_EXPECT_TRUE(test, xferk_chunk_fence_blocks(&f->ch));
	kref_init(&f->c[1].ref);
	KUNIT_EXPECT_PTR_EQ(test, xferk_chunk_fence_via(&f->ch), &f->c[1]);
	KUNIT_EXPECT_EQ(test, kref_read(&f->c[1].ref), 2U);
	/* An older path's fence does not cover it. */
	f->c[0].fence.fenced = 2;
	KUNIT_EXPECT_FALSE(test, xferk_chunk_may_reroute(&f->ch));
	f->c[0].fence.fenced = 3;
	KUNIT_EXPECT_TRUE(test, xferk_chunk_may_reroute(&f->ch));
	KUNIT_EXPECT_FALSE(test, xferk_chunk_fence_blocks(&f->ch));
	/* Without another rail, nothing waits for the fence. */
	f->c[0].fence.fenced = 0;
	f->c[1].state = XFERK_CONN_DOWN;
	KUNIT_EXPECT_FALSE(test, xferk_chunk_fence_blocks(&f->ch));
	KUNIT_EXPECT_NULL(test, xferk_chunk_fence_via(&f->ch));
}

static struct kunit_case rail_cases[] = {
	KUNIT_CASE(rail_add_checks),
	KUNIT_CASE(rail_limits_smallest),
	KUNIT_CASE(rail_pick_rotates_over_up),
	KUNIT_CASE(rail_reroute_targets),
	KUNIT_CASE(rail_reroute_fenced),
	{}
};

static struct kunit_suite rail_suite = {
	.name = "xferk_rail",
	.init = rail_init,
	.exit = rail_exit,
	.test_cases = rail_cases,
};

kunit_test_suite(rail_suite);
