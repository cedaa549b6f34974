// SPDX-License-Identifier: GPL-2.0
/* KUnit suite "xferk_frag": bounds checks and splitting (kmod/frag.c). */
#include <kunit/test.h>
#include <linux/mm.h>
#include <linux/sizes.h>

#include "../../kmod/frag.h"

struct range_case {
	u64 offset, len, size;
	int expected;
};

static void frag_range_check(struct kunit *test)
{
	static const struct range_case cases[] = {
		{ 0, 1, 1, 0 },
		{ 0, 4096, 4096, 0 },
		{ 4095, 1, 4096, 0 },
		{ 0, 0, 4096, -EINVAL },
		{ 4096, 0, 4096, -EINVAL },
		{ 4096, 1, 4096, -ERANGE },
		{ 4095, 2, 4096, -ERANGE },
		{ 0, 4097, 4096, -ERANGE },
		{ U64_MAX, 2, 4096, -ERANGE },
		{ 1, U64_MAX, U64_MAX, -ERANGE },
		{ 0, U64_MAX, U64_MAX, 0 },
		{ 8, U64_MAX - 7, U64_MAX, -ERANGE },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		KUNIT_EXPECT_EQ_MSG(test, xferk_range_check(cases[i].offset,
							    cases[i].len,
							    cases[i].size),
				    cases[i].expected, "case %d", i);
}

static void frag_chunk_len(struct kunit *test)
{
	/* Page-aligned start: max_pages whole pages. */
	KUNIT_EXPECT_EQ(test, xferk_chunk_len(0x10000, SZ_1M, 32, SZ_1M),
			(u64)32 * PAGE_SIZE);
	/* Unaligned start: the first chunk ends on a page boundary. */
	KUNIT_EXPECT_EQ(test, xferk_chunk_len(0x10000 + 100, SZ_1M, 32, SZ_1M),
			(u64)32 * PAGE_SIZE - 100);
	/* Byte limit below the page limit. */
	KUNIT_EXPECT_EQ(test, xferk_chunk_len(0, SZ_1M, 1024, SZ_64K), (u64)SZ_64K);
	/* Short tail. */
	KUNIT_EXPECT_EQ(test, xferk_chunk_len(7, 1, 32, SZ_1M), 1ULL);
	/* A device that claims 0 SGEs: one page, never 0 or a wrapped room. */
	KUNIT_EXPECT_EQ(test, xferk_chunk_len(0, SZ_1M, 0, SZ_1M), (u64)PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, xferk_chunk_len(100, SZ_1M, 0, SZ_1M),
			(u64)PAGE_SIZE - 100);
	KUNIT_EXPECT_EQ(test, xferk_chunk_len(0, SZ_1M, 32, 0), 1ULL);
}

struct count_case {
	u64 addr, len;
	u32 max_pages;
	u64 max_bytes;
	u64 expected;
};

static void frag_chunk_count(struct kunit *test)
{
	static const struct count_case cases[] = {
		{ 0, 1, 32, SZ_1M, 1 },
		{ 0, 32 * PAGE_SIZE, 32, SZ_1M, 1 },
		{ 0, 32 * PAGE_SIZE + 1, 32, SZ_1M, 2 },
		{ 1, 32 * PAGE_SIZE, 32, SZ_1M, 2 },
		{ 0, SZ_64M, 32, SZ_8M, SZ_64M / (32 * PAGE_SIZE) },
		{ 0, SZ_64M, 4096, SZ_1M, 64 },
		{ PAGE_SIZE - 1, 2, 1, SZ_1M, 2 },
		{ 0, 3 * PAGE_SIZE, 0, SZ_1M, 3 },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		KUNIT_EXPECT_EQ_MSG(test, xferk_chunk_count(cases[i].addr,
							    cases[i].len,
							    cases[i].max_pages,
							    cases[i].max_bytes,
							    U64_MAX - 1),
				    cases[i].expected, "case %d", i);
}

/*
 * Counting stops past the limit, whatever the fragment: 4 GiB at one page
 * per chunk would be a million steps (and, summed over 4096 fragments, a
 * 32-bit count would wrap).
 */
static void frag_chunk_count_bounded(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, xferk_chunk_count(0, SZ_4G, 1, SZ_1M, 65536),
			65537ULL);
	KUNIT_EXPECT_EQ(test, xferk_chunk_count(0, SZ_4G, 0, SZ_1M, 10), 11ULL);
	KUNIT_EXPECT_EQ(test, xferk_chunk_count(0, 3 * PAGE_SIZE, 1, SZ_1M, 3),
			3ULL);
	KUNIT_EXPECT_EQ(test, xferk_chunk_count(0, SZ_1M, 1, SZ_1M, 0), 1ULL);
}

/* Chunks cover the fragment exactly and never exceed either limit. */
static void frag_chunks_cover(struct kunit *test)
{
	u64 addr = 12345, len = 5 * SZ_1M + 77, done = 0;

	while (done < len) {
		u64 c = xferk_chunk_len(addr + done, len - done, 8, SZ_16K + 3);

		KUNIT_ASSERT_GT(test, c, 0ULL);
		KUNIT_EXPECT_LE(test, c, (u64)SZ_16K + 3);
		KUNIT_EXPECT_LE(test, DIV_ROUND_UP(offset_in_page(addr + done) + c,
						   PAGE_SIZE), 8ULL);
		done += c;
	}
	KUNIT_EXPECT_EQ(test, done, len);
}

static struct kunit_case frag_cases[] = {
	KUNIT_CASE(frag_range_check),
	KUNIT_CASE(frag_chunk_len),
	KUNIT_CASE(frag_chunk_count),
	KUNIT_CASE(frag_chunk_count_bounded),
	KUNIT_CASE(frag_chunks_cover),
	{}
};

static struct kunit_suite frag_suite = {
	.name = "xferk_frag",
	.test_cases = frag_cases,
};

kunit_test_suite(frag_suite);
