// SPDX-License-Identifier: GPL-2.0
/*
 * A connection whose QP left the ready-to-send state is dead at once: the
 * fault knob qp_error moves the QP to the error state right before a post,
 * as a peer's access error does to its QP. The op whose work request was
 * flushed fails with ECONNRESET; the connection is down immediately
 * (debugfs marks its QP dead, CONNECT never hands it out again), so the
 * next CONNECT gets a new connection on which a new export, import and
 * transfer succeed: no later work is posted to the dead QP.
 *
 * The knob is armed while no other op is live on the host: the post it
 * takes is this test's.
 *
 * Regression: flush completions were not fatal and there was no QP event
 * handler, so the connection stayed "up", CONNECT kept handing it out and
 * every later op on it failed with ECANCELED until the peer disconnected.
 */
#include "test.h"

#define FAULT	"/sys/kernel/debug/xferk/fault/qp_error"
#define LEN	8192

/* Connections debugfs shows up although their QP died. */
static int up_but_dead(void)
{
	char line[512], state[16], dead[16];
	int n = 0;
	FILE *f = fopen("/sys/kernel/debug/xferk/peers", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += sscanf(line, "%*s %*s %*s %15s %*s %*s %*s %*s %15s",
			    state, dead) == 2 &&
		     !strcmp(state, "up") && !strcmp(dead, "1");
	fclose(f);
	return n;
}

static int write_once(struct t_loop *l, struct xferk_op_snapshot *s)
{
	struct xferk_frag f = { .mr = l->src_mr, .len = LEN, .remote = l->remote,
				.opcode = XFERK_OP_WRITE };

	return t_run(l->x, &f, 1, s);
}

static void restore(void)
{
	t_fault_clear();
}

int main(void)
{
	long long errors = t_stat("qp_errors");
	struct t_loop l;
	struct xferk_op_snapshot s;
	uint64_t until;
	int ret;

	t_loop_open(&l, LEN, LEN + 4096);
	atexit(restore);
	t_fill(l.src, LEN, 3);
	ret = write_once(&l, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "warm-up: %d", ret);

	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_write_file(FAULT, "1") == 0, "fault: %s", strerror(errno));
	ret = write_once(&l, &s);
	T_EXPECT(t_fault_get("qp_error") == 0, "the op's post did not take the knob");
	t_write_file(FAULT, "0");
	T_EXPECT(ret == XFERK_STATE_FAILED && s.first_error == -ECONNRESET,
		 "op on the failed QP: state %d first_error %d", ret,
		 s.first_error);
	/* The connection is down at once, not when the peer says so. */
	until = t_now_ms() + t_scaled_ms(5000);
	while (up_but_dead() && t_now_ms() < until)
		usleep(50000);
	T_EXPECT(up_but_dead() == 0, "a connection with a dead QP is still up");
	T_EXPECT(t_stat("qp_errors") > errors, "qp_errors %lld, was %lld",
		 t_stat("qp_errors"), errors);

	/* A fresh connection: the same calls now work. */
	xferk_close(l.x);
	ret = t_loop_connect(&l);
	T_EXPECT(ret == 0, "setup on a new connection: %s", strerror(-ret));
	if (!ret) {
		ret = write_once(&l, &s);
		T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(l.dst, LEN, 3) < 0,
			 "transfer on the new connection: %d", ret);
		xferk_close(l.x);
	}
	return t_result();
}
