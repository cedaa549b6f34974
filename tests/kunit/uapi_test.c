// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite "xferk_uapi": the layout of uapi/xferk.h as the kernel
 * compiles it, and the argument rules every command follows.
 */
#include <kunit/test.h>
#include <linux/module.h>

#include "../../kmod/front.h"
#include "uapi_layout.h"

/* The same table tests/unit/uapi_layout.c checks in userspace. */
static void uapi_layout(struct kunit *test)
{
	const struct layout_case *cases = xferk_layout_cases;
	int i;

	for (i = 0; i < ARRAY_SIZE(xferk_layout_cases); i++)
		KUNIT_EXPECT_EQ_MSG(test, cases[i].actual, cases[i].expected,
				    "%s", cases[i].what);
}

static void uapi_lookup_known(struct kunit *test)
{
	const struct xferk_ioctl_desc *desc = xferk_ioctl_lookup(XFERK_IOC_INFO);

	KUNIT_ASSERT_NOT_NULL(test, desc);
	KUNIT_EXPECT_EQ(test, desc->cmd, XFERK_IOC_INFO);
	KUNIT_EXPECT_EQ(test, desc->size, (u32)sizeof(struct xferk_ioc_info));
	KUNIT_EXPECT_EQ(test, desc->min_size, (u32)sizeof(struct xferk_ioc_info));
}

/* A struct that grew keeps its command number: size bits are ignored. */
static void uapi_lookup_ignores_size_bits(struct kunit *test)
{
	unsigned int grown = _IOWR(XFERK_IOC_MAGIC, _IOC_NR(XFERK_IOC_INFO),
				   char[128]);

	KUNIT_EXPECT_PTR_EQ(test, xferk_ioctl_lookup(grown),
			    xferk_ioctl_lookup(XFERK_IOC_INFO));
}

/*
 * Through io_uring, only commands that never wait run inline: a WAIT or
 * CANCEL there would block the submitting task.
 */
static void uapi_ring_inline_commands(struct kunit *test)
{
	static const unsigned int inline_cmds[] = {
		XFERK_IOC_INFO, XFERK_IOC_SUBMIT, XFERK_IOC_QUERY,
		XFERK_IOC_RELEASE, XFERK_IOC_CONN_QUERY, XFERK_IOC_GROUP_CREATE,
		XFERK_IOC_GROUP_QUERY, XFERK_IOC_GROUP_RELEASE, XFERK_IOC_NOTIFY,
	};
	unsigned int nr, i, inline_found = 0;

	for (nr = 0; nr < 64; nr++) {
		const struct xferk_ioctl_desc *desc =
			xferk_ioctl_lookup(_IOWR(XFERK_IOC_MAGIC, nr, u64));
		bool want = false;

		if (!desc)
			continue;
		for (i = 0; i < ARRAY_SIZE(inline_cmds); i++)
			want |= desc->cmd == inline_cmds[i];
		KUNIT_EXPECT_EQ_MSG(test, desc->nonblock, want, "command %u", nr);
		inline_found += desc->nonblock;
	}
	KUNIT_EXPECT_EQ(test, inline_found, (unsigned int)ARRAY_SIZE(inline_cmds));
}

static void uapi_lookup_unknown(struct kunit *test)
{
	unsigned int nr = _IOC_NR(XFERK_IOC_INFO);

	KUNIT_EXPECT_NULL(test, xferk_ioctl_lookup(_IOWR('x', nr,
							 struct xferk_ioc_info)));
	KUNIT_EXPECT_NULL(test, xferk_ioctl_lookup(_IOWR(XFERK_IOC_MAGIC, 0xff,
							 struct xferk_ioc_info)));
	KUNIT_EXPECT_NULL(test, xferk_ioctl_lookup(_IOR(XFERK_IOC_MAGIC, nr,
							struct xferk_ioc_info)));
	KUNIT_EXPECT_NULL(test, xferk_ioctl_lookup(_IO(XFERK_IOC_MAGIC, nr)));
	KUNIT_EXPECT_NULL(test, xferk_ioctl_lookup(0));
}

struct size_case {
	u32 usize;
	u32 min_size;
	int expected;
};

static void uapi_size_check(struct kunit *test)
{
	static const struct size_case cases[] = {
		{ 0, 56, -EINVAL },
		{ 4, 56, -EINVAL },
		{ 55, 56, -EINVAL },
		{ 56, 56, 0 },
		{ 64, 56, 0 },
		{ XFERK_ARG_MAX_SIZE, 56, 0 },
		{ XFERK_ARG_MAX_SIZE + 1, 56, -E2BIG },
		{ U32_MAX, 56, -E2BIG },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		KUNIT_EXPECT_EQ_MSG(test, xferk_arg_size_check(cases[i].usize,
							       cases[i].min_size),
				    cases[i].expected, "usize %u", cases[i].usize);
}

static void uapi_is_zeroed(struct kunit *test)
{
	u64 reserved[4] = {};

	KUNIT_EXPECT_TRUE(test, xferk_is_zeroed(reserved, sizeof(reserved)));
	KUNIT_EXPECT_TRUE(test, xferk_is_zeroed(reserved, 0));
	reserved[3] = 1ULL << 63;
	KUNIT_EXPECT_FALSE(test, xferk_is_zeroed(reserved, sizeof(reserved)));
	KUNIT_EXPECT_TRUE(test, xferk_is_zeroed(reserved, 3 * sizeof(u64)));
}

static void uapi_info_handler(struct kunit *test)
{
	union xferk_ioc_arg arg = {};

	arg.info.size = sizeof(arg.info);
	KUNIT_EXPECT_EQ(test, xferk_ioctl_info(NULL, &arg), 0);
	KUNIT_EXPECT_EQ(test, arg.info.abi_version, (u32)XFERK_ABI_VERSION);
	KUNIT_EXPECT_TRUE(test, arg.info.features & XFERK_FEAT_INFO);

	arg.info.flags = 1;
	KUNIT_EXPECT_EQ(test, xferk_ioctl_info(NULL, &arg), -EINVAL);
	arg.info.flags = 0;
	arg.info.reserved[2] = 1;
	KUNIT_EXPECT_EQ(test, xferk_ioctl_info(NULL, &arg), -EINVAL);
	arg.info.reserved[2] = 0;
	arg.info.reserved0 = 1;
	KUNIT_EXPECT_EQ(test, xferk_ioctl_info(NULL, &arg), -EINVAL);
}

static struct kunit_case xferk_uapi_cases[] = {
	KUNIT_CASE(uapi_layout),
	KUNIT_CASE(uapi_lookup_known),
	KUNIT_CASE(uapi_lookup_ignores_size_bits),
	KUNIT_CASE(uapi_lookup_unknown),
	KUNIT_CASE(uapi_ring_inline_commands),
	KUNIT_CASE(uapi_size_check),
	KUNIT_CASE(uapi_is_zeroed),
	KUNIT_CASE(uapi_info_handler),
	{}
};

static struct kunit_suite xferk_uapi_suite = {
	.name = "xferk_uapi",
	.test_cases = xferk_uapi_cases,
};

kunit_test_suite(xferk_uapi_suite);

MODULE_DESCRIPTION("KUnit suites for xferk");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
