// SPDX-License-Identifier: GPL-2.0
/* KUnit suite "xferk_handle": per-file handle tables (kmod/handle.c). */
#include <kunit/test.h>

#include "../../kmod/handle.h"

#define LIMIT	XFERK_HANDLES_MAX

struct handle_fixture {
	struct xferk_handles a, b;
	struct xferk_hobj obj[3];
};

static int handle_init(struct kunit *test)
{
	struct handle_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	xferk_handles_init(&f->a);
	xferk_handles_init(&f->b);
	test->priv = f;
	return 0;
}

static void handle_exit(struct kunit *test)
{
	struct handle_fixture *f = test->priv;

	while (xferk_handle_pop(&f->a))
		;
	while (xferk_handle_pop(&f->b))
		;
	xferk_handles_destroy(&f->a);
	xferk_handles_destroy(&f->b);
}

static void handle_add_lookup_remove(struct kunit *test)
{
	struct handle_fixture *f = test->priv;
	u64 h;

	KUNIT_ASSERT_EQ(test, xferk_handle_add(&f->a, &f->obj[0], XFERK_H_REGION, LIMIT), 0);
	h = f->obj[0].handle;
	KUNIT_EXPECT_NE(test, h, 0ULL);
	KUNIT_EXPECT_PTR_EQ(test, xferk_handle_lookup(&f->a, h, XFERK_H_REGION),
			    &f->obj[0]);
	KUNIT_EXPECT_PTR_EQ(test, xferk_handle_remove(&f->a, h, XFERK_H_REGION),
			    &f->obj[0]);
	KUNIT_EXPECT_EQ(test, f->obj[0].handle, 0ULL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(xferk_handle_lookup(&f->a, h, XFERK_H_REGION)),
			(long)-ESTALE);
	KUNIT_EXPECT_EQ(test, PTR_ERR(xferk_handle_remove(&f->a, h, XFERK_H_REGION)),
			(long)-ESTALE);
}

/* A slot is reused, its handle is not: the old handle stays stale. */
static void handle_generation_reuse(struct kunit *test)
{
	struct handle_fixture *f = test->priv;
	u64 old;

	KUNIT_ASSERT_EQ(test, xferk_handle_add(&f->a, &f->obj[0], XFERK_H_OP, LIMIT), 0);
	old = f->obj[0].handle;
	xferk_handle_remove(&f->a, old, XFERK_H_OP);
	KUNIT_ASSERT_EQ(test, xferk_handle_add(&f->a, &f->obj[1], XFERK_H_OP, LIMIT), 0);
	KUNIT_EXPECT_EQ(test, f->obj[1].handle & 0xffff, old & 0xffff);
	KUNIT_EXPECT_NE(test, f->obj[1].handle, old);
	KUNIT_EXPECT_EQ(test, PTR_ERR(xferk_handle_lookup(&f->a, old, XFERK_H_OP)),
			(long)-ESTALE);
	KUNIT_EXPECT_PTR_EQ(test, xferk_handle_lookup(&f->a, f->obj[1].handle,
						      XFERK_H_OP), &f->obj[1]);
}

static void handle_wrong_kind_and_malformed(struct kunit *test)
{
	struct handle_fixture *f = test->priv;
	u64 h;

	KUNIT_ASSERT_EQ(test, xferk_handle_add(&f->a, &f->obj[0], XFERK_H_CONN, LIMIT), 0);
	h = f->obj[0].handle;
	KUNIT_EXPECT_EQ(test, PTR_ERR(xferk_handle_lookup(&f->a, h, XFERK_H_OP)),
			(long)-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(xferk_handle_remove(&f->a, h, XFERK_H_OP)),
			(long)-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(xferk_handle_lookup(&f->a, 0, XFERK_H_CONN)),
			(long)-EINVAL);
	/* Slot 0 is never handed out. */
	KUNIT_EXPECT_EQ(test, PTR_ERR(xferk_handle_lookup(&f->a, h & ~0xffffULL,
							  XFERK_H_CONN)),
			(long)-EINVAL);
	/* The object is still there after the failed calls. */
	KUNIT_EXPECT_PTR_EQ(test, xferk_handle_lookup(&f->a, h, XFERK_H_CONN),
			    &f->obj[0]);
}

static void handle_foreign_file(struct kunit *test)
{
	struct handle_fixture *f = test->priv;
	u64 h;

	KUNIT_EXPECT_NE(test, f->a.tag, f->b.tag);
	KUNIT_ASSERT_EQ(test, xferk_handle_add(&f->a, &f->obj[0], XFERK_H_REGION, LIMIT), 0);
	KUNIT_ASSERT_EQ(test, xferk_handle_add(&f->b, &f->obj[1], XFERK_H_REGION, LIMIT), 0);
	h = f->obj[0].handle;
	KUNIT_EXPECT_EQ(test, PTR_ERR(xferk_handle_lookup(&f->b, h, XFERK_H_REGION)),
			(long)-EBADF);
	KUNIT_EXPECT_EQ(test, PTR_ERR(xferk_handle_remove(&f->b, h, XFERK_H_REGION)),
			(long)-EBADF);
	KUNIT_EXPECT_PTR_EQ(test, xferk_handle_lookup(&f->b, f->obj[1].handle,
						      XFERK_H_REGION), &f->obj[1]);
}

static void handle_pop_empties(struct kunit *test)
{
	struct handle_fixture *f = test->priv;
	int i, popped = 0;

	for (i = 0; i < 3; i++)
		KUNIT_ASSERT_EQ(test, xferk_handle_add(&f->a, &f->obj[i],
						       XFERK_H_REMOTE, LIMIT), 0);
	while (xferk_handle_pop(&f->a))
		popped++;
	KUNIT_EXPECT_EQ(test, popped, 3);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, f->obj[i].handle, 0ULL);
}

/* Each kind is counted against its own limit; removal makes room again. */
static void handle_limit_per_kind(struct kunit *test)
{
	struct handle_fixture *f = test->priv;

	KUNIT_ASSERT_EQ(test, xferk_handle_add(&f->a, &f->obj[0], XFERK_H_OP, 2),
			0);
	KUNIT_ASSERT_EQ(test, xferk_handle_add(&f->a, &f->obj[1], XFERK_H_OP, 2),
			0);
	KUNIT_EXPECT_FALSE(test, xferk_handle_room(&f->a, XFERK_H_OP, 2));
	KUNIT_EXPECT_EQ(test, xferk_handle_add(&f->a, &f->obj[2], XFERK_H_OP, 2),
			-EMFILE);
	KUNIT_EXPECT_EQ(test, f->obj[2].handle, 0ULL);
	/* Another kind has its own count. */
	KUNIT_EXPECT_TRUE(test, xferk_handle_room(&f->a, XFERK_H_REGION, 2));
	KUNIT_EXPECT_EQ(test, xferk_handle_add(&f->a, &f->obj[2], XFERK_H_REGION, 2),
			0);
	xferk_handle_remove(&f->a, f->obj[0].handle, XFERK_H_OP);
	KUNIT_EXPECT_TRUE(test, xferk_handle_room(&f->a, XFERK_H_OP, 2));
	KUNIT_EXPECT_EQ(test, xferk_handle_add(&f->a, &f->obj[0], XFERK_H_OP, 2), 0);
}

/*
 * A kernel-initiated release (io_uring auto-release) drops its own
 * object's handle only: not one the caller released, even if the slot
 * holds a newer object now.
 */
static void handle_remove_obj_identity(struct kunit *test)
{
	struct handle_fixture *f = test->priv;
	u64 old;

	KUNIT_ASSERT_EQ(test, xferk_handle_add(&f->a, &f->obj[0], XFERK_H_OP,
					       LIMIT), 0);
	old = f->obj[0].handle;
	KUNIT_EXPECT_PTR_EQ(test, xferk_handle_remove(&f->a, old, XFERK_H_OP),
			    &f->obj[0]);
	KUNIT_ASSERT_EQ(test, xferk_handle_add(&f->a, &f->obj[1], XFERK_H_OP,
					       LIMIT), 0);
	/* Force the newer object to carry the very same handle value. */
	f->obj[1].handle = old;
	KUNIT_EXPECT_EQ(test, xferk_handle_remove_obj(&f->a, old, &f->obj[0]),
			-ESTALE);
	KUNIT_EXPECT_PTR_EQ(test, xferk_handle_lookup(&f->a, old, XFERK_H_OP),
			    &f->obj[1]);
	KUNIT_EXPECT_EQ(test, xferk_handle_remove_obj(&f->a, old, &f->obj[1]), 0);
	KUNIT_EXPECT_EQ(test, f->obj[1].handle, 0ULL);
}

static struct kunit_case handle_cases[] = {
	KUNIT_CASE(handle_add_lookup_remove),
	KUNIT_CASE(handle_generation_reuse),
	KUNIT_CASE(handle_wrong_kind_and_malformed),
	KUNIT_CASE(handle_foreign_file),
	KUNIT_CASE(handle_pop_empties),
	KUNIT_CASE(handle_limit_per_kind),
	KUNIT_CASE(handle_remove_obj_identity),
	{}
};

static struct kunit_suite handle_suite = {
	.name = "xferk_handle",
	.init = handle_init,
	.exit = handle_exit,
	.test_cases = handle_cases,
};

kunit_test_suite(handle_suite);
