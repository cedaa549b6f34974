// SPDX-License-Identifier: GPL-2.0
/*
 * The fault knobs over soft-RoCE (Documentation/fault-injection.md): a
 * failed post fails the op with EIO without touching the device; delayed
 * completions delay the op, not its outcome, and a release of the held
 * completions (release_delays) ends a hold of a minute at once; a failed
 * QP fails the op once its work requests are flushed; a chain of work
 * requests the device takes only half of (bad_wr in its middle) fails the
 * op with ENOMEM once the half it took completed, and the connection goes
 * on posting. Pages come back every time.
 */
#include "test.h"

#define MS	1000000ULL
#define FAULT	"/sys/kernel/debug/xferk/fault/"

int main(void)
{
	long long pinned = t_stat("pinned_pages");
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	struct t_loop l;
	uint64_t op, t0;
	int i, ret;

	t_loop_open(&l, 1 << 20, 1 << 20);
	f = (struct xferk_frag) { .mr = l.src_mr, .len = 4096, .remote = l.remote,
				  .opcode = XFERK_OP_WRITE };

	T_EXPECT(t_write_file(FAULT "fail_post", "1") == 0, "fail_post");
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_FAILED && s.first_error == -EIO &&
		 s.buffer_reusable && s.transferred_bytes == 0,
		 "fail_post: %d err %d", ret, s.first_error);

	/*
	 * A completion held for minutes is handled at once when the held
	 * completions are released (release_delays): the op then succeeds
	 * within a bound far below the hold.
	 */
	T_EXPECT(t_quiet() == 0, "other ops are live");
	ret = t_submit_held(l.x, &f, 1, 60000, &op);
	T_EXPECT(ret == 0, "a held op");
	if (!ret) {
		T_EXPECT(xferk_query(l.x, op, &s) == 0 &&
			 s.state == XFERK_STATE_IN_PROGRESS,
			 "held op: %s", xferk_state_name(s.state));
		T_EXPECT(t_release_held() == 0, "release_delays");
		ret = xferk_wait(l.x, op, xferk_now_ns() +
				 t_scaled_ms(10000) * MS, XFERK_WAIT_PHYSICAL,
				 &s);
		T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED,
			 "released op: %d %s", ret, xferk_state_name(s.state));
		xferk_release(l.x, op);
	}

	T_EXPECT(t_write_file(FAULT "delay_ms", "300") == 0 &&
		 t_write_file(FAULT "delay_completions", "1") == 0, "delay");
	t0 = xferk_now_ns();
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && xferk_now_ns() - t0 >= 300 * MS,
		 "delayed completion: %d after %llu ms", ret,
		 (unsigned long long)(xferk_now_ns() - t0) / MS);

	/*
	 * 512 KiB: several chunks (128 KiB on rxe), dispatched as one chain
	 * (not ending at the region's end: Documentation/testing.md, rxe).
	 */
	f.len = 512 << 10;
	T_EXPECT(t_write_file(FAULT "refuse_chain", "1") == 0, "refuse_chain");
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(t_read_number(FAULT "refuse_chain") == 0, "refuse_chain unused");
	T_EXPECT(ret == XFERK_STATE_FAILED && s.first_error == -ENOMEM &&
		 s.buffer_reusable && s.in_flight_bytes == 0 &&
		 s.transferred_bytes > 0 && s.transferred_bytes < f.len,
		 "refuse_chain: %d err %d, %llu bytes", ret, s.first_error,
		 (unsigned long long)s.transferred_bytes);
	for (i = 0; i < 8; i++)
		T_EXPECT(t_run(l.x, &f, 1, &s) == XFERK_STATE_SUCCEEDED,
			 "after refuse_chain: op %d: err %d", i, s.first_error);
	f.len = 4096;

	T_EXPECT(t_write_file(FAULT "fail_qp", "1") == 0, "fail_qp");
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_FAILED && s.buffer_reusable &&
		 s.first_error == -EIO, "fail_qp: %d err %d", ret, s.first_error);
	/* The failed connection is gone; a new one works. */
	xferk_close(l.x);
	T_EXPECT(t_loop_connect(&l) == 0, "reconnect");
	f.mr = l.src_mr;
	f.remote = l.remote;
	T_EXPECT(t_run(l.x, &f, 1, &s) == XFERK_STATE_SUCCEEDED, "after fail_qp");
	xferk_close(l.x);
	T_EXPECT(t_stat("pinned_pages") == pinned, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), pinned);
	return t_result();
}
