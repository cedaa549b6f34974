// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite "xferk_conn_state": the session and path state machines
 * (kmod/conn_state.c). Every transition the session's table allows, and
 * no other;
 * DOWN is left only for CLOSED, and CLOSED never, so a session is torn
 * down once (regression: a path's death racing the session going down
 * queued the recovery work again while it tore the session down, and the
 * second run tore it down again); every state has a name; userspace sees
 * CLOSED as DOWN. A path goes NONE -> LIVE -> DEAD -> NONE and no other
 * way: it dies once however many contexts see it die, is torn down once,
 * and only a torn-down path is replaced.
 */
#include <kunit/test.h>

#include "../../kmod/conn_state.h"

#define CS(x)	XFERK_CONN_##x

static const struct {
	int from, to;
} conn_legal[] = {
	{ CS(CONNECTING), CS(UP) },
	{ CS(CONNECTING), CS(DOWN) },
	{ CS(UP), CS(RECONNECTING) },
	{ CS(UP), CS(DOWN) },
	{ CS(RECONNECTING), CS(UP) },
	{ CS(RECONNECTING), CS(DOWN) },
	{ CS(DOWN), CS(CLOSED) },
};

static void conn_state_table(struct kunit *test)
{
	int from, to, i;

	for (from = -1; from <= XFERK_CONN_NR_STATES; from++) {
		for (to = -1; to <= XFERK_CONN_NR_STATES; to++) {
			bool want = false;

			for (i = 0; i < ARRAY_SIZE(conn_legal); i++)
				if (conn_legal[i].from == from &&
				    conn_legal[i].to == to)
					want = true;
			KUNIT_EXPECT_EQ_MSG(test,
					    xferk_conn_state_allowed(from, to),
					    want, "%s -> %s",
					    xferk_conn_state_name(from),
					    xferk_conn_state_name(to));
		}
	}
}

/* Two racing takers-down: only the first gets DOWN, only one CLOSED. */
static void conn_state_teardown_once(struct kunit *test)
{
	int state = CS(RECONNECTING), closed = 0, n;

	for (n = 0; n < 2; n++)
		if (xferk_conn_state_allowed(state, CS(DOWN)))
			state = CS(DOWN);
	KUNIT_EXPECT_EQ(test, state, CS(DOWN));
	for (n = 0; n < 3; n++) {
		if (xferk_conn_state_allowed(state, CS(CLOSED))) {
			state = CS(CLOSED);
			closed++;
		}
		/* A later path death or CONNECT failure changes nothing. */
		KUNIT_EXPECT_FALSE(test, xferk_conn_state_allowed(state, CS(DOWN)));
		KUNIT_EXPECT_FALSE(test, xferk_conn_state_allowed(state,
								  CS(RECONNECTING)));
	}
	KUNIT_EXPECT_EQ(test, closed, 1);
	KUNIT_EXPECT_TRUE(test, xferk_conn_state_over(state));
	KUNIT_EXPECT_FALSE(test, xferk_conn_state_over(CS(RECONNECTING)));
}

static void conn_state_names(struct kunit *test)
{
	int s;

	for (s = 0; s < XFERK_CONN_NR_STATES; s++)
		KUNIT_EXPECT_STRNEQ(test, xferk_conn_state_name(s), "?");
	KUNIT_EXPECT_STREQ(test, xferk_conn_state_name(XFERK_CONN_NR_STATES), "?");
	KUNIT_EXPECT_STREQ(test, xferk_conn_state_name(CS(CLOSED)), "closed");
}

static void conn_state_uapi(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, xferk_conn_state_uapi(CS(CONNECTING)),
			XFERK_CONN_STATE_CONNECTING);
	KUNIT_EXPECT_EQ(test, xferk_conn_state_uapi(CS(UP)), XFERK_CONN_STATE_UP);
	KUNIT_EXPECT_EQ(test, xferk_conn_state_uapi(CS(RECONNECTING)),
			XFERK_CONN_STATE_RECONNECTING);
	KUNIT_EXPECT_EQ(test, xferk_conn_state_uapi(CS(DOWN)),
			XFERK_CONN_STATE_DOWN);
	KUNIT_EXPECT_EQ(test, xferk_conn_state_uapi(CS(CLOSED)),
			XFERK_CONN_STATE_DOWN);
}

#define PS(x)	XFERK_PATH_##x

static void path_state_table(struct kunit *test)
{
	static const struct {
		int from, to;
	} legal[] = {
		{ PS(NONE), PS(LIVE) },
		{ PS(LIVE), PS(DEAD) },
		{ PS(DEAD), PS(NONE) },
	};
	int from, to, i;

	for (from = -1; from <= XFERK_PATH_NR_STATES; from++) {
		for (to = -1; to <= XFERK_PATH_NR_STATES; to++) {
			bool want = false;

			for (i = 0; i < ARRAY_SIZE(legal); i++)
				if (legal[i].from == from && legal[i].to == to)
					want = true;
			KUNIT_EXPECT_EQ_MSG(test,
					    xferk_path_state_allowed(from, to),
					    want, "%s -> %s",
					    xferk_path_state_name(from),
					    xferk_path_state_name(to));
		}
	}
	for (from = 0; from < XFERK_PATH_NR_STATES; from++)
		KUNIT_EXPECT_STRNEQ(test, xferk_path_state_name(from), "?");
	KUNIT_EXPECT_STREQ(test, xferk_path_state_name(XFERK_PATH_NR_STATES),
			   "?");
	/* A live path is never replaced without its teardown (NONE). */
	KUNIT_EXPECT_FALSE(test, xferk_path_state_allowed(PS(LIVE), PS(LIVE)));
	KUNIT_EXPECT_FALSE(test, xferk_path_state_allowed(PS(DEAD), PS(LIVE)));
}

static struct kunit_case conn_state_cases[] = {
	KUNIT_CASE(conn_state_table),
	KUNIT_CASE(conn_state_teardown_once),
	KUNIT_CASE(conn_state_names),
	KUNIT_CASE(conn_state_uapi),
	KUNIT_CASE(path_state_table),
	{}
};

static struct kunit_suite conn_state_suite = {
	.name = "xferk_conn_state",
	.test_cases = conn_state_cases,
};

kunit_test_suite(conn_state_suite);
