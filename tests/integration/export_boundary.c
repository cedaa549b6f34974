// SPDX-License-Identifier: GPL-2.0
/*
 * Remote accesses that end at the last byte of an export whose pages fill
 * soft-RoCE's maps of 256 exactly (256 and 512 pages, also starting inside
 * a page): RDMA WRITEs and READs of the export's tail, of the whole export
 * and across a map boundary in its middle, each verified byte for byte.
 *
 * Regression: soft-RoCE's rxe_mr_copy() (6.1) reads the pointer after its
 * last map when an access ends at the last page of a full map, 8 bytes
 * past a kmalloc'ed array (KASAN: slab-out-of-bounds in rxe_mr_copy, seen
 * by kill_storm on the debug kernel). The module gives such an MR a spare
 * page-list entry; the debug kernel's log check fails without it.
 */
#include "test.h"

#define MAP_BYTES	(256UL * 4096)

static const struct range {
	size_t offset, len;
} ranges[] = {
	{ 0, MAP_BYTES },
	{ 0, 2 * MAP_BYTES },
	{ 4096, MAP_BYTES },
	{ 100, MAP_BYTES - 100 },
};

/* One op of @len bytes at @off of the export, both ways, verified. */
static void roundtrip(struct t_loop *l, uint64_t remote, size_t off,
		      size_t len, uint64_t seed)
{
	struct xferk_op_snapshot s;
	struct xferk_frag f = { .mr = l->src_mr, .len = len, .remote = remote,
				.remote_offset = off,
				.opcode = XFERK_OP_WRITE };

	t_fill(l->src, len, seed);
	T_EXPECT(t_run(l->x, &f, 1, &s) == XFERK_STATE_SUCCEEDED,
		 "write %zu at %zu: %s", len, off, xferk_state_name(s.state));
	memset(l->src, 0, len);
	f.opcode = XFERK_OP_READ;
	T_EXPECT(t_run(l->x, &f, 1, &s) == XFERK_STATE_SUCCEEDED &&
		 t_check(l->src, len, seed) < 0,
		 "read back %zu at %zu: %s", len, off,
		 xferk_state_name(s.state));
}

int main(void)
{
	const uint32_t rw = XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE;
	struct xferk_token tok;
	uint64_t exp, remote;
	struct t_loop l;
	unsigned int i;
	int ret;

	t_loop_open(&l, 2 * MAP_BYTES, 2 * MAP_BYTES + 4096);
	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		size_t len = ranges[i].len;

		ret = xferk_export(l.x, l.conn, l.dst_mr, ranges[i].offset, len,
				   rw, &tok, &exp);
		T_EXPECT(ret == 0, "export %zu+%zu: %s", ranges[i].offset, len,
			 strerror(-ret));
		if (ret || xferk_import(l.x, l.conn, &tok, &remote)) {
			T_EXPECT(0, "import");
			continue;
		}
		roundtrip(&l, remote, len - 65536, 65536, i);
		roundtrip(&l, remote, len - 4096, 4096, i + 10);
		roundtrip(&l, remote, 0, len, i + 20);
		/* What the export covers is where the writes landed. */
		T_EXPECT(t_check(l.dst + ranges[i].offset, len, i + 20) < 0,
			 "export %zu+%zu: region bytes", ranges[i].offset, len);
		if (len > MAP_BYTES)
			roundtrip(&l, remote, MAP_BYTES - 8192, 8192, i + 30);
		xferk_unimport(l.x, remote);
		xferk_unexport(l.x, exp);
	}
	xferk_close(l.x);
	return t_result();
}
