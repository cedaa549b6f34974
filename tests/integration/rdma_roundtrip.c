// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA WRITE and READ round trips over soft-RoCE with data verification:
 * 1 B to 64 MiB (1 MiB on the debug kernel), unaligned offsets on both
 * sides, many fragments per op, and bytes next to each transfer left
 * untouched.
 */
#include <unistd.h>

#include "test.h"

#define BUF	(64UL << 20)
#define SLACK	(8UL << 10)

static struct xferk *x;
static uint8_t *src, *dst;
static uint64_t mr_src, mr_dst, remote;

/* WRITE src[so..] -> dst[doff..], then READ it back into src[so..]. */
static void roundtrip(uint64_t so, uint64_t doff, uint64_t len, uint64_t seed)
{
	struct xferk_frag f = {
		.mr = mr_src, .offset = so, .len = len,
		.remote = remote, .remote_offset = doff, .opcode = XFERK_OP_WRITE,
	};
	struct xferk_op_snapshot s;
	long bad;
	int ret;

	t_fill(src + so, len, seed);
	memset(dst, 0xee, BUF + SLACK);
	ret = t_run(x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "write %lu@%lu->%lu: %d err %d",
		 (unsigned long)len, (unsigned long)so, (unsigned long)doff,
		 ret, s.first_error);
	T_EXPECT(s.transferred_bytes == len && s.physical_complete &&
		 s.buffer_reusable && s.completed_fragments == 1,
		 "write snapshot: %llu bytes", (unsigned long long)s.transferred_bytes);
	bad = t_check(dst + doff, len, seed);
	T_EXPECT(bad < 0, "write %lu: byte %ld differs", (unsigned long)len, bad);
	T_EXPECT((doff == 0 || dst[doff - 1] == 0xee) && dst[doff + len] == 0xee,
		 "write %lu: neighbours overwritten", (unsigned long)len);

	memset(src + so, 0, len);
	f.opcode = XFERK_OP_READ;
	ret = t_run(x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "read %lu: %d err %d",
		 (unsigned long)len, ret, s.first_error);
	bad = t_check(src + so, len, seed);
	T_EXPECT(bad < 0, "read %lu: byte %ld differs", (unsigned long)len, bad);
}

/* 256 fragments of odd sizes scattered over both buffers, in one op. */
static void many_fragments(void)
{
	enum { N = 256, STRIDE = 3 * 4096 + 17, LEN = 4096 + 5 };
	struct xferk_frag f[N];
	struct xferk_op_snapshot s;
	int i, ret;

	memset(dst, 0, BUF);
	t_fill(src, BUF, 77);
	for (i = 0; i < N; i++)
		f[i] = (struct xferk_frag) {
			.mr = mr_src, .offset = (uint64_t)i * STRIDE,
			.len = LEN, .remote = remote,
			.remote_offset = (uint64_t)(N - 1 - i) * STRIDE + 3,
			.opcode = XFERK_OP_WRITE,
		};
	ret = t_run(x, f, N, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && s.total_fragments == N &&
		 s.completed_fragments == N && s.transferred_bytes == N * LEN,
		 "many fragments: %d, %u/%u frags", ret, s.completed_fragments,
		 s.total_fragments);
	for (i = 0; i < N; i++) {
		if (memcmp(dst + (N - 1 - i) * STRIDE + 3, src + i * STRIDE, LEN)) {
			T_EXPECT(0, "fragment %d differs", i);
			break;
		}
	}
}

int main(void)
{
	static const uint64_t sizes[] = { 1, 7, 4096, 4097, 65536 + 13,
					  (1 << 20) + 5, BUF };
	struct t_counters base;
	uint64_t conn;
	long long written, read;
	size_t i;

	if (xferk_open(&x))
		return T_SKIP;
	t_settle(&base);
	src = t_map(BUF + SLACK);
	dst = t_map(BUF + SLACK);
	if (t_setup(x, src, BUF + SLACK, dst, BUF + SLACK, &conn, &mr_src,
		    &mr_dst, &remote))
		return T_FAIL;

	written = t_stat("bytes_written");
	read = t_stat("bytes_read");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t len = sizes[i];

		/* The debug kernel's soft-RoCE moves ~3 MB/s: 64 MiB is stock's. */
		if (len == BUF && t_debug_kernel())
			break;
		uint64_t so = len == BUF ? 5 : 4095, doff = len == BUF ? 3 : 123;

		roundtrip(so, doff, len, i);
		if (len < BUF)
			roundtrip(0, 0, len, i + 100);
	}
	many_fragments();
	T_EXPECT(t_stat("bytes_written") > written, "bytes_written did not grow");
	T_EXPECT(t_stat("bytes_read") > read, "bytes_read did not grow");

	/* A fragment past the end of the export is refused before posting. */
	{
		struct xferk_frag f = {
			.mr = mr_src, .len = 2, .remote = remote,
			.remote_offset = BUF + SLACK - 1, .opcode = XFERK_OP_WRITE,
		};
		uint64_t op;

		T_EXPECT_ERR(xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op),
			     ERANGE);
	}

	T_EXPECT(xferk_unimport(x, remote) == 0, "unimport");
	T_EXPECT(xferk_mr_dereg(x, mr_src) == 0 && xferk_mr_dereg(x, mr_dst) == 0,
		 "dereg");
	T_EXPECT(xferk_disconnect(x, conn) == 0, "disconnect");
	xferk_close(x);
	T_EXPECT(t_stat_wait("pinned_pages", base.pinned_pages, t_scaled_ms(10000)) ==
		 base.pinned_pages, "pinned_pages %lld after close, was %lld",
		 t_stat("pinned_pages"), base.pinned_pages);
	return t_result();
}
