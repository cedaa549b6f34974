// SPDX-License-Identifier: GPL-2.0
/*
 * poll(2) and read(2) of /dev/xferk (XFERK_FEAT_POLL): the file is
 * readable once an op of it woke its waiters or an event was queued for
 * it, until xferk_wakeups() takes the count; a waiter that finds its op
 * unfinished and then polls is always woken.
 *
 * First on a null peer (a fragment takes two minutes, so once posted only
 * the deadline and the cancel wake the op): its deadline timer, in
 * hardirq, makes the file readable; then bad reads. Then over rxe: a NOTIFY to the file's own
 * export, and a WRITE waited for by polling alone, as an event loop does.
 */
#include <poll.h>
#include <sys/mman.h>

#include "test.h"

#define MS	1000000ULL

/* Is the file readable within @ms? 1, 0, or -1 (poll failed). */
static int readable(struct xferk *x, int ms)
{
	struct pollfd p = { .fd = xferk_fd(x), .events = POLLIN };
	int n = poll(&p, 1, ms);

	if (n < 0)
		return -1;
	return n == 1 && (p.revents & POLLIN);
}

static uint64_t take(struct xferk *x)
{
	uint64_t n = 0;
	int ret = xferk_wakeups(x, &n);

	T_EXPECT(ret == 0, "xferk_wakeups: %s", strerror(-ret));
	return n;
}

/*
 * Waits for @op to be physically complete (@physical) or settled by
 * polling the file alone, as an event loop does: take the wakeups, query,
 * poll. A wakeup missed is a poll that times out (@poll_ms) with the op
 * still running. Returns the op's last snapshot state, or -1.
 */
static int wait_by_poll(struct xferk *x, uint64_t op, int physical,
			int poll_ms, uint64_t *wakeups)
{
	struct xferk_op_snapshot s;

	for (;;) {
		*wakeups += take(x);
		if (xferk_query(x, op, &s))
			return -1;
		if (physical ? s.buffer_reusable :
			       s.state != XFERK_STATE_SUBMITTED &&
			       s.state != XFERK_STATE_IN_PROGRESS)
			return s.state;
		if (readable(x, poll_ms) != 1) {
			fprintf(stderr, "no wakeup within %d ms; op %s\n", poll_ms,
				xferk_state_name(s.state));
			return -1;
		}
	}
}

static void null_peer_part(void)
{
	uint64_t conn, exp, remote, mr, op, wakeups = 0, n, deadline;
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	struct xferk_frag f;
	struct xferk *x;
	uint8_t *buf;
	char small[4];
	void *bad;
	int ret;

	if (xferk_open(&x))
		exit(T_SKIP);
	T_EXPECT(xferk_features(x) & XFERK_FEAT_POLL, "no XFERK_FEAT_POLL");
	/* A fresh file: nothing happened, not readable. */
	T_EXPECT(readable(x, 0) == 0, "a fresh file is readable");
	T_EXPECT(take(x) == 0, "a fresh file has wakeups");
	/* Bad input: a short buffer. */
	T_EXPECT(read(xferk_fd(x), small, sizeof(small)) < 0 && errno == EINVAL,
		 "read of 4 bytes: not EINVAL");

	buf = t_map(4096);
	bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bad == MAP_FAILED ||
	    xferk_mr_reg(x, buf, 4096, XFERK_ACCESS_ALL, &mr) ||
	    xferk_connect_null(x, 120000 * MS, &conn) ||
	    xferk_export(x, conn, mr, 0, 4096, XFERK_ACCESS_REMOTE_WRITE, &tok,
			 &exp) ||
	    xferk_import(x, conn, &tok, &remote))
		exit(T_FAIL);
	f = (struct xferk_frag) { .mr = mr, .len = 4096, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	deadline = xferk_now_ns() + t_scaled_ms(2000) * MS;
	ret = xferk_submit(x, &f, 1, deadline, 0, &op);
	T_EXPECT(ret == 0, "submit: %s", strerror(-ret));
	/* Posted (its one wakeup before the deadline), then counted. */
	do
		ret = xferk_query(x, op, &s);
	while (!ret && s.state == XFERK_STATE_SUBMITTED &&
	       xferk_now_ns() < deadline);
	take(x);
	if (!ret && s.state == XFERK_STATE_IN_PROGRESS &&
	    xferk_now_ns() + 100 * MS < deadline) {
		/*
		 * Only the deadline timer (hardirq) can wake it now (the
		 * post's wakeup may still be counted: the loop polls again).
		 */
		ret = wait_by_poll(x, op, 0, t_scaled_ms(10000), &wakeups);
		T_EXPECT(ret == XFERK_STATE_TIMED_OUT, "after the deadline: %s",
			 ret < 0 ? "no wakeup" : xferk_state_name(ret));
		T_EXPECT(wakeups >= 1, "the deadline counted no wakeup");
	} else {
		printf("the op was not posted well before its deadline (%s): the deadline's wakeup is not judged\n",
		       ret ? strerror(-ret) : xferk_state_name(s.state));
		wait_by_poll(x, op, 0, t_scaled_ms(10000), &wakeups);
	}

	/*
	 * The cancel wakes it again; a read into bad memory loses nothing.
	 * The drain kills the null peer's path half way, whose teardown ends
	 * the fragment flush_timeout_ms (200 ms) after that: 1 s (7 s on the
	 * debug kernel) before the drain deadline.
	 */
	T_EXPECT(t_param_scoped("flush_timeout_ms", 200) == 0, "flush_timeout_ms");
	take(x);
	ret = xferk_cancel_drain(x, op, xferk_now_ns() +
				 2ULL * (t_scaled_ms(2000) - 800) * MS, &s);
	T_EXPECT(ret == 0 && s.buffer_reusable, "cancel: %d %s", ret,
		 xferk_state_name(s.state));
	t_restore_params();
	T_EXPECT(readable(x, 0) == 1, "not readable after a cancel");
	T_EXPECT(read(xferk_fd(x), bad, 8) < 0 && errno == EFAULT,
		 "read into a bad address: not EFAULT");
	T_EXPECT(readable(x, 0) == 1, "a failed read took the wakeups");
	n = take(x);
	T_EXPECT(n >= 1, "the cancel counted no wakeup");
	T_EXPECT(readable(x, 0) == 0, "readable after the wakeups were taken");
	T_EXPECT(take(x) == 0, "wakeups counted twice");
	xferk_release(x, op);
	xferk_close(x);
}

static void rdma_part(void)
{
	struct xferk_event ev[4];
	uint64_t op, wakeups = 0;
	struct xferk_frag f;
	struct t_loop l;
	uint32_t nr = 0;
	int ret;

	t_loop_open(&l, 1 << 20, 1 << 20);
	take(l.x);
	/* An event for the file's own export makes it readable. */
	ret = xferk_notify(l.x, l.remote, 5);
	T_EXPECT(ret == 0, "notify: %s", strerror(-ret));
	T_EXPECT(readable(l.x, (int)t_scaled_ms(10000)) == 1,
		 "a notification did not make the file readable");
	T_EXPECT(take(l.x) >= 1, "the notification counted no wakeup");
	ret = xferk_events(l.x, ev, 4, 0, &nr, NULL);
	T_EXPECT(ret == 0 && nr == 1 && ev[0].type == XFERK_EVENT_NOTE &&
		 ev[0].tag == 5, "events: %d, %u, type %u tag %llu", ret, nr,
		 nr ? ev[0].type : 0, nr ? (unsigned long long)ev[0].tag : 0ULL);

	/* A WRITE waited for by polling alone. */
	t_fill(l.src, l.src_len, 11);
	f = (struct xferk_frag) { .mr = l.src_mr, .len = l.src_len,
				  .remote = l.remote, .opcode = XFERK_OP_WRITE };
	ret = xferk_submit(l.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op);
	T_EXPECT(ret == 0, "submit: %s", strerror(-ret));
	ret = wait_by_poll(l.x, op, 1, (int)t_scaled_ms(30000), &wakeups);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "write: %s",
		 ret < 0 ? "no wakeup" : xferk_state_name(ret));
	T_EXPECT(wakeups >= 1, "the write counted no wakeup");
	T_EXPECT(t_check(l.dst, l.dst_len, 11) < 0, "data differ at %ld",
		 t_check(l.dst, l.dst_len, 11));
	xferk_release(l.x, op);
	xferk_close(l.x);
}

int main(void)
{
	null_peer_part();
	rdma_part();
	return t_result();
}
