// SPDX-License-Identifier: GPL-2.0
/*
 * The sync-quiesce experiment (Mooncake's sync batch fix): a batch of a
 * 4 KiB WRITE that the target rejects (its key was revoked) and a 64 MiB
 * valid WRITE, on two connections. Right after the call returns, the
 * caller writes new data into the source, as it would when reusing it.
 * Over the rounds, count rounds in which the destination received data
 * written after the return:
 *   naive wrapper: two ops, return at the first failure (the old bug);
 *   xferk_transfer_sync(): must be 0.
 * Both rows are printed; the naive row must show the bug, or the
 * experiment could not detect it. The refused write kills its session's
 * path; each round ends when that session has a new one.
 */
#include <unistd.h>

#include "test.h"

#define MS	1000000ULL
#define POISON	0xababababababababULL

static struct xferk *x;
static uint64_t len, conn_a, conn_b, remote_big, src_mr;
static uint8_t *src, *dst, *small;

/* A remote range on a second connection (conn_b) whose key is revoked. */
static uint64_t rejecting_remote(void)
{
	uint64_t mr, exp, remote;
	struct xferk_token tok;

	if (xferk_connect(x, "10.99.0.2", 0, t_connect_ms(), &conn_b) ||
	    xferk_mr_reg(x, small, 4096, XFERK_ACCESS_REMOTE_WRITE, &mr) ||
	    xferk_export(x, conn_b, mr, 0, 4096, XFERK_ACCESS_REMOTE_WRITE, &tok,
			 &exp) ||
	    xferk_import(x, conn_b, &tok, &remote) || xferk_unexport(x, exp) ||
	    xferk_mr_dereg(x, mr))
		return 0;
	return remote;
}

/*
 * The refused write killed the importer's path; conn_b, the initiating
 * end, hears of it from its peer a little later. True once conn_b has a
 * new path. Otherwise the next round's CONNECT could return it up just
 * before it hears, and EXPORT on it fail ENOTCONN.
 */
static int path_replaced(uint64_t reconnects)
{
	uint64_t until = t_now_ms() + t_scaled_ms(10000);
	struct xferk_conn_info info;

	while (!xferk_conn_query(x, conn_b, &info) && t_now_ms() < until) {
		if (info.state == XFERK_CONN_STATE_UP &&
		    info.reconnects > reconnects)
			return 1;
		usleep(20000);
	}
	return 0;
}

/* Did any 8-byte word of the destination get the post-return poison? */
static int poisoned(void)
{
	const uint64_t *w = (const uint64_t *)dst;
	uint64_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] == POISON)
			return 1;
	return 0;
}

static void batch(struct xferk_frag f[2], uint64_t bad)
{
	f[0] = (struct xferk_frag) { .mr = src_mr, .len = 4096, .remote = bad,
				     .opcode = XFERK_OP_WRITE };
	f[1] = (struct xferk_frag) { .mr = src_mr, .len = len, .remote = remote_big,
				     .opcode = XFERK_OP_WRITE };
}

/* One round; returns 1 if post-return data reached the destination. */
static int round_trip(int naive)
{
	uint64_t bad = rejecting_remote(), op_bad, op_big, deadline;
	struct xferk_conn_info info = {};
	struct xferk_op_snapshot s;
	struct xferk_frag f[2];
	int ret;

	T_EXPECT(bad != 0 && xferk_conn_query(x, conn_b, &info) == 0,
		 "rejecting remote");
	if (!bad)
		return 0;
	memset(dst, 0, len);
	memset(src, 0x11, len);
	batch(f, bad);
	deadline = xferk_now_ns() + 120000 * MS;
	if (naive) {
		/* Free on first failure: return as soon as the small one fails. */
		T_EXPECT(xferk_submit(x, &f[0], 1, deadline, 0, &op_bad) == 0 &&
			 xferk_submit(x, &f[1], 1, deadline, 0, &op_big) == 0,
			 "naive submit");
		xferk_wait(x, op_bad, deadline, 0, &s);
		T_EXPECT(s.state == XFERK_STATE_FAILED, "naive: %s",
			 xferk_state_name(s.state));
	} else {
		ret = xferk_transfer_sync(x, f, 2, deadline, 10000 * MS, &s);
		/* The refused write's own error, not its batch's dropped rest. */
		T_EXPECT(ret == -EACCES && s.first_error == -EACCES &&
			 s.failure == XFERK_FAILURE_OWN,
			 "transfer_sync: %d, first_error %d failure %u", ret,
			 s.first_error, s.failure);
	}
	/* The caller reuses the source right after the return. */
	memset(src, 0xab, len);
	if (naive) {
		xferk_wait(x, op_big, deadline, XFERK_WAIT_PHYSICAL, NULL);
		xferk_release(x, op_big);
		xferk_release(x, op_bad);
	}
	xferk_unimport(x, bad);
	T_EXPECT(path_replaced(info.reconnects),
		 "the refused write's session has no new path");
	xferk_disconnect(x, conn_b);
	return poisoned();
}

int main(void)
{
	int slow = t_debug_kernel();
	int rounds = slow ? 3 : 12, i, naive_hits = 0, sync_hits = 0;
	uint64_t dst_mr;

	len = slow ? 8ULL << 20 : 64ULL << 20;
	if (xferk_open(&x))
		return T_SKIP;
	src = t_map(len);
	dst = t_map(len + 4096);
	small = t_map(4096);
	if (t_setup(x, src, len, dst, len + 4096, &conn_a, &src_mr, &dst_mr,
		    &remote_big))
		return T_FAIL;
	for (i = 0; i < rounds; i++) {
		naive_hits += round_trip(1);
		sync_hits += round_trip(0);
	}
	printf("%-42s %s\n", "wrapper (4 KiB rejected + valid WRITE)",
	       "rounds with post-return data at the destination");
	printf("%-42s %d/%d\n", "naive: return at first failure", naive_hits, rounds);
	printf("%-42s %d/%d\n", "xferk_transfer_sync()", sync_hits, rounds);
	T_EXPECT(sync_hits == 0, "transfer_sync let post-return data through");
	T_EXPECT(naive_hits > 0, "the experiment did not detect the naive bug");
	xferk_close(x);
	return t_result();
}
