// SPDX-License-Identifier: GPL-2.0
/*
 * Fragments that follow each other on both sides (same region, remote and
 * opcode) are carried as one range: over soft-RoCE, 300 contiguous
 * fragments of odd sizes are written and read back in far fewer work
 * requests than fragments (the queue's "dispatched" count), every byte
 * right and every fragment counted complete; the same fragments with a
 * one-byte gap on the remote side take one work request each; a run
 * broken every tenth fragment takes at least one per piece.
 */
#include "test.h"

#define N	300
#define BUF	(1UL << 20)
#define SLACK	4096	/* see RXE_MAP_SLACK in two_process.c */

static struct t_loop l;

/*
 * N fragments of 1000 to 1006 bytes from offset 0 on both sides; each
 * @gap_every-th one (0: none) starts one byte after the previous one ends,
 * remotely. Return: the bytes the local side spans.
 */
static uint64_t layout(struct xferk_frag *f, uint8_t opcode, int gap_every)
{
	uint64_t off = 0, roff = 0;
	int i;

	for (i = 0; i < N; i++) {
		uint32_t len = 1000 + i % 7;

		if (gap_every && i && i % gap_every == 0)
			roff++;
		f[i] = (struct xferk_frag) {
			.mr = l.src_mr, .offset = off, .len = len,
			.remote = l.remote, .remote_offset = roff,
			.opcode = opcode,
		};
		off += len;
		roff += len;
	}
	return off;
}

/* Runs @f, checks the outcome; returns the work requests it took. */
static long long run(struct xferk_frag *f, const char *what)
{
	long long before = t_queue_stat("dispatched");
	struct xferk_op_snapshot s;
	int ret = t_run(l.x, f, N, &s);

	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && s.completed_fragments == N &&
		 s.physical_complete && s.buffer_reusable,
		 "%s: state %d, %u of %d fragments complete", what, ret,
		 s.completed_fragments, N);
	return t_queue_stat("dispatched") - before;
}

/* Every fragment's bytes arrived where it says, the gaps untouched. */
static void check(const struct xferk_frag *f, uint64_t seed, const char *what)
{
	long bad = -1;
	int i;

	for (i = 0; i < N && bad < 0; i++) {
		bad = t_check(l.dst + f[i].remote_offset, f[i].len,
			      seed + f[i].offset);
		if (bad < 0 && i && f[i].remote_offset !=
		    f[i - 1].remote_offset + f[i - 1].len)
			bad = l.dst[f[i].remote_offset - 1] == 0xee ? -1 : 0;
	}
	T_EXPECT(bad < 0, "%s: fragment %d wrong at byte %ld", what, i - 1, bad);
}

/* Fills each fragment's source with its own pattern. */
static void fill(const struct xferk_frag *f, uint64_t seed)
{
	int i;

	for (i = 0; i < N; i++)
		t_fill(l.src + f[i].offset, f[i].len, seed + f[i].offset);
}

int main(void)
{
	static struct xferk_frag f[N];
	uint64_t span;
	long long wrs;
	int i;

	t_loop_open(&l, BUF, BUF + SLACK);

	/* One run: at most one work request per page it spans, plus one. */
	span = layout(f, XFERK_OP_WRITE, 0);
	fill(f, 1);
	memset(l.dst, 0xee, BUF + SLACK);
	wrs = run(f, "contiguous WRITE");
	check(f, 1, "contiguous WRITE");
	T_EXPECT(wrs >= 1 && wrs <= (long long)(span / 4096 + 2),
		 "contiguous WRITE: %lld work requests for %d fragments", wrs, N);

	/* Read it back into a cleared source: the same run, READ. */
	layout(f, XFERK_OP_READ, 0);
	memset(l.src, 0, span);
	wrs = run(f, "contiguous READ");
	for (i = 0; i < N; i++)
		T_EXPECT(t_check(l.src + f[i].offset, f[i].len, 1 + f[i].offset) < 0,
			 "contiguous READ: fragment %d wrong", i);
	T_EXPECT(wrs <= (long long)(span / 4096 + 2),
		 "contiguous READ: %lld work requests", wrs);

	/* A gap after every fragment: nothing to carry together. */
	layout(f, XFERK_OP_WRITE, 1);
	fill(f, 2);
	memset(l.dst, 0xee, BUF + SLACK);
	wrs = run(f, "gapped WRITE");
	check(f, 2, "gapped WRITE");
	T_EXPECT(wrs >= N, "gapped WRITE: %lld work requests for %d fragments",
		 wrs, N);

	/* A gap every tenth fragment: at least one per piece of ten. */
	layout(f, XFERK_OP_WRITE, 10);
	fill(f, 3);
	memset(l.dst, 0xee, BUF + SLACK);
	wrs = run(f, "runs of ten");
	check(f, 3, "runs of ten");
	T_EXPECT(wrs >= N / 10 && wrs < N, "runs of ten: %lld work requests",
		 wrs);

	xferk_close(l.x);
	return t_result();
}
