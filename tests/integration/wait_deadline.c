// SPDX-License-Identifier: GPL-2.0
/*
 * XFERK_IOC_WAIT never returns before its deadline, returns soon after it,
 * and never cancels the op. Prints the overshoot distribution.
 */
#include <stdlib.h>

#include "test.h"

#define MS	1000000ULL
#define ROUNDS	20
/* Generous: TCG and the debug kernel add scheduling noise. */
#define MAX_OVERSHOOT	(250 * MS)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	uint64_t conn, exp, remote, mr, op, over[ROUNDS];
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	struct xferk_frag f;
	struct xferk *x;
	uint8_t *buf;
	int i, ret;

	if (xferk_open(&x))
		return T_SKIP;
	buf = t_map(4096);
	if (xferk_mr_reg(x, buf, 4096, XFERK_ACCESS_ALL, &mr) ||
	    xferk_connect_null(x, 3000 * MS, &conn) ||
	    xferk_export(x, conn, mr, 0, 4096, XFERK_ACCESS_REMOTE_WRITE, &tok,
			 &exp) ||
	    xferk_import(x, conn, &tok, &remote))
		return T_FAIL;
	f = (struct xferk_frag) { .mr = mr, .len = 4096, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	ret = xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op);
	T_EXPECT(ret == 0, "submit: %s", strerror(-ret));

	for (i = 0; i < ROUNDS; i++) {
		uint64_t deadline = xferk_now_ns() + 20 * MS, now;

		ret = xferk_wait(x, op, deadline, 0, &s);
		now = xferk_now_ns();
		T_EXPECT_ERR(ret, ETIMEDOUT);
		T_EXPECT(now >= deadline, "returned %llu ns early",
			 (unsigned long long)(deadline - now));
		over[i] = now >= deadline ? now - deadline : 0;
		T_EXPECT(over[i] < MAX_OVERSHOOT, "overshoot %llu ns",
			 (unsigned long long)over[i]);
		T_EXPECT(s.state == XFERK_STATE_IN_PROGRESS,
			 "wait changed the op: %s", xferk_state_name(s.state));
	}
	qsort(over, ROUNDS, sizeof(over[0]), cmp_u64);
	printf("wait overshoot over %d waits: min %llu us, median %llu us, p90 %llu us, max %llu us\n",
	       ROUNDS, (unsigned long long)over[0] / 1000,
	       (unsigned long long)over[ROUNDS / 2] / 1000,
	       (unsigned long long)over[ROUNDS * 9 / 10] / 1000,
	       (unsigned long long)over[ROUNDS - 1] / 1000);

	/* A deadline already past: at once, with the snapshot. */
	ret = xferk_wait(x, op, 0, 0, &s);
	T_EXPECT_ERR(ret, ETIMEDOUT);
	T_EXPECT(s.total_bytes == 4096, "snapshot with ETIMEDOUT");

	ret = xferk_wait(x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED,
		 "op finished: %d %s", ret, xferk_state_name(s.state));
	T_EXPECT_ERR(xferk_wait(x, op, 0, 0x80, &s), EINVAL);
	xferk_close(x);
	return t_result();
}
