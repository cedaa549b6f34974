// SPDX-License-Identifier: GPL-2.0
/*
 * Tokens are authenticated: only the two kernels of a connection know the
 * key they are MAC'd with. Every single-bit change of a real token, a
 * token spliced from two connections' tokens, and a token with another
 * remote key all fail IMPORT with EACCES (or EINVAL where the change makes
 * the token malformed) before anything is published; the real tokens
 * import and work.
 *
 * Regression: a token was trusted as it came; a tenant that changed the
 * key or the range of a token (32-bit remote keys are easy to guess) could
 * reach another tenant's memory exported to the same peer.
 */
#include "test.h"

#define LEN	8192
#define RW	(XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE)

/* Exports @mr over a connection to @ip: the token. */
static int export_to(struct xferk *x, const char *ip, uint64_t mr,
		     uint64_t *conn, struct xferk_token *tok)
{
	uint64_t exp;

	return xferk_connect(x, ip, 0, t_connect_ms(), conn) ?:
	       xferk_export(x, *conn, mr, 0, LEN, RW, tok, &exp);
}

int main(void)
{
	long long rejected = t_stat("tokens_rejected");
	uint8_t *src = t_map(LEN), *dst = t_map(LEN + 4096);
	uint64_t conn_a, conn_b, src_mr, dst_mr, remote;
	struct xferk_token a, b, t;
	struct xferk_op_snapshot s;
	struct xferk *x;
	int byte, bit, ret, accepted = 0, eacces = 0, other = 0;

	if (xferk_open(&x))
		return T_SKIP;
	if (xferk_mr_reg(x, src, LEN, XFERK_ACCESS_LOCAL_SRC, &src_mr) ||
	    xferk_mr_reg(x, dst, LEN + 4096, RW, &dst_mr) ||
	    export_to(x, "10.99.0.1", dst_mr, &conn_a, &a) ||
	    export_to(x, "10.99.0.2", dst_mr, &conn_b, &b))
		return T_FAIL;

	for (byte = 0; byte < XFERK_TOKEN_SIZE; byte++) {
		for (bit = 0; bit < 8; bit += 3) {
			t = a;
			t.bytes[byte] ^= 1 << bit;
			ret = xferk_import(x, conn_a, &t, &remote);
			accepted += ret == 0;
			eacces += ret == -EACCES;
			other += ret && ret != -EACCES && ret != -EINVAL;
			if (!ret)
				fprintf(stderr, "byte %d bit %d accepted\n", byte, bit);
		}
	}
	T_EXPECT(!accepted, "%d altered tokens imported", accepted);
	T_EXPECT(!other, "%d altered tokens failed with another errno", other);
	/* Id, address, length, key and MAC: 36 of the 64 bytes. */
	T_EXPECT(eacces >= 36 * 3 - 6, "only %d EACCES", eacces);

	/* B's connection id with A's MAC, and A's with B's. */
	t = a;
	memcpy(t.bytes + 8, b.bytes + 8, 8);
	T_EXPECT_ERR(xferk_import(x, conn_a, &t, &remote), EACCES);
	t = b;
	memcpy(t.bytes + 8, a.bytes + 8, 8);
	T_EXPECT_ERR(xferk_import(x, conn_b, &t, &remote), EACCES);
	/* Another remote key on the same connection. */
	t = a;
	t.bytes[32]++;
	T_EXPECT_ERR(xferk_import(x, conn_a, &t, &remote), EACCES);
	T_EXPECT(t_stat("tokens_rejected") > rejected + eacces,
		 "tokens_rejected %lld, was %lld", t_stat("tokens_rejected"),
		 rejected);

	/* The real ones work. */
	t_fill(src, LEN, 11);
	T_EXPECT(xferk_import(x, conn_a, &a, &remote) == 0, "import A");
	{
		struct xferk_frag f = { .mr = src_mr, .len = LEN, .remote = remote,
					.opcode = XFERK_OP_WRITE };

		ret = t_run(x, &f, 1, &s);
		T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(dst, LEN, 11) < 0,
			 "write through A: %d", ret);
	}
	T_EXPECT(xferk_import(x, conn_b, &b, &remote) == 0, "import B");
	xferk_close(x);
	return t_result();
}
