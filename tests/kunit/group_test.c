// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite "xferk_group": who may join a request group (kmod/group.c)
 * and how its snapshot sums its ops.
 */
#include <kunit/test.h>

#include "../../kmod/export.h"
#include "../../kmod/op.h"
#include "../../kmod/queue.h"

#define REMOTES	(XFERK_GROUP_MAX_TARGETS + 1)

struct group_fixture {
	struct xferk_group *g;
	struct xferk_op op[3];
	struct xferk_remote rm[REMOTES];
	struct xferk_remote *rmp[REMOTES];
	struct xferk_qacct acct;
};

static int group_init(struct kunit *test)
{
	struct group_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, f);
	/* The fixture keeps a reference on each: the group's puts free none. */
	for (i = 0; i < REMOTES; i++) {
		kref_init(&f->rm[i].ref);
		f->rmp[i] = &f->rm[i];
	}
	kref_init(&f->acct.ref);
	f->g = xferk_group_create(42);
	KUNIT_ASSERT_NOT_NULL(test, f->g);
	test->priv = f;
	return 0;
}

static void group_exit(struct kunit *test)
{
	struct group_fixture *f = test->priv;

	/* The ops never lived: take them off by hand, with their references. */
	while (f->g->nr_ops) {
		list_del(&f->op[--f->g->nr_ops].group_node);
		f->g->nr_listed--;
		xferk_group_put(f->g);
	}
	xferk_group_put(f->g);
}

/* Op @i joins with @nr remote handles (without ids: no notifications). */
static int join(struct group_fixture *f, int i, struct xferk_remote **rm,
		u32 nr)
{
	return xferk_group_join(f->g, &f->op[i], rm, nr, &f->acct);
}

/* Ops join an open group; the remote handles they use are kept once. */
static void group_join_targets(struct kunit *test)
{
	struct group_fixture *f = test->priv;
	struct xferk_remote *twice[3] = { &f->rm[0], &f->rm[1], &f->rm[0] };

	KUNIT_EXPECT_NE(test, f->g->gen, 0ULL);
	KUNIT_ASSERT_EQ(test, join(f, 0, twice, 3), 0);
	KUNIT_EXPECT_EQ(test, f->g->nr_targets, 2U);
	KUNIT_EXPECT_EQ(test, kref_read(&f->rm[0].ref), 2U);
	KUNIT_EXPECT_PTR_EQ(test, f->op[0].group, f->g);
	KUNIT_ASSERT_EQ(test, join(f, 1, f->rmp, 2), 0);
	KUNIT_EXPECT_EQ(test, f->g->nr_targets, 2U);
	KUNIT_EXPECT_EQ(test, f->g->nr_ops, 2U);
}

/* Beyond XFERK_GROUP_MAX_TARGETS distinct remote handles: nothing joins. */
static void group_targets_bounded(struct kunit *test)
{
	struct group_fixture *f = test->priv;

	KUNIT_EXPECT_EQ(test, join(f, 0, f->rmp, REMOTES), -E2BIG);
	KUNIT_EXPECT_EQ(test, f->g->nr_targets, 0U);
	KUNIT_EXPECT_EQ(test, f->g->nr_ops, 0U);
	KUNIT_EXPECT_EQ(test, kref_read(&f->rm[0].ref), 1U);
	KUNIT_ASSERT_EQ(test, join(f, 0, f->rmp,
				   XFERK_GROUP_MAX_TARGETS), 0);
	KUNIT_EXPECT_EQ(test, join(f, 1, &f->rmp[XFERK_GROUP_MAX_TARGETS], 1),
			-E2BIG);
	/* Known ones still may. */
	KUNIT_EXPECT_EQ(test, join(f, 1, f->rmp, 1), 0);
}

/* A closed group refuses every op, and changes nothing. */
static void group_closed_refuses(struct kunit *test)
{
	struct group_fixture *f = test->priv;

	KUNIT_ASSERT_EQ(test, join(f, 0, f->rmp, 1), 0);
	f->g->closed = true;
	KUNIT_EXPECT_EQ(test, join(f, 1, f->rmp, 2), -ESHUTDOWN);
	KUNIT_EXPECT_EQ(test, f->g->nr_ops, 1U);
	KUNIT_EXPECT_EQ(test, f->g->nr_targets, 1U);
	KUNIT_EXPECT_NULL(test, f->op[1].group);
}

/* The snapshot is the sum of its ops'. */
static void group_sums(struct kunit *test)
{
	struct xferk_group_snapshot sum = {};
	struct xferk_op_snapshot a = {
		.state = XFERK_STATE_SUCCEEDED, .buffer_reusable = 1,
		.total_bytes = 100, .transferred_bytes = 100,
	}, b = {
		.state = XFERK_STATE_QUARANTINED, .total_bytes = 50,
		.transferred_bytes = 10, .in_flight_bytes = 40,
		.quarantined_bytes = 40, .quarantine_events = 1,
		.late_completions = 2,
	};

	xferk_group_sum_add(&sum, &a);
	xferk_group_sum_add(&sum, &b);
	xferk_group_sum_add(&sum, &a);
	KUNIT_EXPECT_EQ(test, sum.ops, 3U);
	KUNIT_EXPECT_EQ(test, sum.ops_physical, 2U);
	KUNIT_EXPECT_EQ(test, sum.ops_in_state[XFERK_STATE_SUCCEEDED], 2U);
	KUNIT_EXPECT_EQ(test, sum.ops_in_state[XFERK_STATE_QUARANTINED], 1U);
	KUNIT_EXPECT_EQ(test, sum.total_bytes, 250ULL);
	KUNIT_EXPECT_EQ(test, sum.transferred_bytes, 210ULL);
	KUNIT_EXPECT_EQ(test, sum.in_flight_bytes, 40ULL);
	KUNIT_EXPECT_EQ(test, sum.quarantined_bytes, 40ULL);
	KUNIT_EXPECT_EQ(test, sum.quarantine_events, 1U);
	KUNIT_EXPECT_EQ(test, sum.late_completions, 2U);
}

static struct kunit_case group_cases[] = {
	KUNIT_CASE(group_join_targets),
	KUNIT_CASE(group_targets_bounded),
	KUNIT_CASE(group_closed_refuses),
	KUNIT_CASE(group_sums),
	{}
};

static struct kunit_suite group_suite = {
	.name = "xferk_group",
	.init = group_init,
	.exit = group_exit,
	.test_cases = group_cases,
};

kunit_test_suite(group_suite);
