// SPDX-License-Identifier: GPL-2.0
/*
 * The io_uring exit monitor cancels the parked submits of a process that
 * exits, not those of a thread that exits. On a null peer (10 s per
 * fragment, 25 s on the debug kernel; the test cancels it when done):
 *  - a second thread submits one op through the process's ring (not
 *    auto-released) and ends with pthread_exit() while the process and the
 *    ring live on. Then a child process parks an op the same way and exits
 *    as a whole; once the monitor has cancelled the child's op (so it has
 *    looked since the thread exited), exactly that one exit cancel was
 *    counted, and the thread's op is untouched (still running, no cancel
 *    request); cancelled by the process then, its CQE says DRAINED or
 *    QUARANTINED (the monitor's would say -ECANCELED).
 *  - control: a child process parks the same op and exits as a whole:
 *    the monitor cancels it (uring_exit_cancels + 1) and the op goes away
 *    (ops_live back to its baseline).
 *
 * Regression: the monitor looked at the submitting thread, so the ops of
 * a thread that exited completed with -ECANCELED although their process
 * and ring lived on.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "test.h"

#define MS		1000000ULL

/*
 * The null peer's time per fragment: far longer than the monitor may take
 * to cancel the control child's op (5 s, 20 s on debug); with the deadline
 * and drain budget below within the 60 s park bound.
 */
static uint64_t delay_ms(void)
{
	return t_debug_kernel() ? 25000 : 10000;
}

/* A file with a null peer, a region exported over it and imported; a ring. */
struct parked {
	struct xferk *x;
	struct io_uring ring;
	struct xferk_frag f;
	struct xferk_ioc_submit s;
	int submitted;
};

static int setup(struct parked *p)
{
	uint8_t *buf = t_map(4096);
	uint64_t conn, mr, exp, remote;
	struct xferk_token tok;
	int ret;

	ret = xferk_open(&p->x);
	if (ret)
		return ret;
	ret = xferk_connect_null(p->x, delay_ms() * MS, &conn);
	if (!ret)
		ret = xferk_mr_reg(p->x, buf, 4096, XFERK_ACCESS_ALL, &mr);
	if (!ret)
		ret = xferk_export(p->x, conn, mr, 0, 4096,
				   XFERK_ACCESS_REMOTE_WRITE, &tok, &exp);
	if (!ret)
		ret = xferk_import(p->x, conn, &tok, &remote);
	if (ret)
		return ret;
	t_ring(&p->ring, 4, 0, 0);
	p->f = (struct xferk_frag) { .mr = mr, .len = 4096, .remote = remote,
				     .opcode = XFERK_OP_WRITE };
	return 0;
}

/* One op through the ring; its handle is written back into p->s.op. */
static void submit(struct parked *p)
{
	struct io_uring_sqe *sqe = t_sqe(&p->ring);

	p->s = (struct xferk_ioc_submit) {
		.size = sizeof(p->s), .frags = (uintptr_t)&p->f, .nr_frags = 1,
		.frag_size = sizeof(p->f),
		/* Beyond the fragment's time; with the budget within 60 s. */
		.deadline_ns = xferk_now_ns() + (delay_ms() + 15000) * MS,
		.drain_budget_ns = 5000 * MS, .user_data = 1,
	};
	io_uring_prep_xferk_submit(sqe, xferk_fd(p->x), &p->s);
	io_uring_sqe_set_data64(sqe, 1);
	p->submitted = io_uring_submit(&p->ring);
}

static void *submitter(void *arg)
{
	submit(arg);
	pthread_exit(NULL);
}

/*
 * A child process parks an op and exits; returns once the monitor counted
 * its exit cancel (uring_exit_cancels above @cancels): 0, or -1 if that
 * did not happen within @ms.
 */
static int child_parks_and_exits(long long cancels, unsigned int ms)
{
	uint64_t until;
	int fds[2], status;
	char c = 0;
	pid_t pid;

	if (pipe(fds)) {
		T_EXPECT(0, "pipe");
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		struct parked p;

		close(fds[0]);
		if (setup(&p))
			_exit(T_FAIL);
		submit(&p);
		if (p.submitted != 1 || !p.s.op || write(fds[1], "R", 1) != 1)
			_exit(T_FAIL);
		_exit(0);
	}
	close(fds[1]);
	T_EXPECT(read(fds[0], &c, 1) == 1 && c == 'R', "child parked no op");
	close(fds[0]);
	waitpid(pid, &status, 0);
	until = t_now_ms() + ms;
	while (t_stat("uring_exit_cancels") == cancels && t_now_ms() < until)
		usleep(20000);
	return t_stat("uring_exit_cancels") > cancels ? 0 : -1;
}

static void thread_exits(void)
{
	long long cancels = t_stat("uring_exit_cancels"), live = t_stat("ops_live");
	struct xferk_op_snapshot snap;
	struct parked p;
	pthread_t t;
	uint64_t ud;
	int ret, res = 0;

	ret = setup(&p);
	T_EXPECT(ret == 0, "setup: %s", strerror(-ret));
	if (ret)
		return;
	T_EXPECT(pthread_create(&t, NULL, submitter, &p) == 0 &&
		 pthread_join(t, NULL) == 0, "submitting thread");
	T_EXPECT(p.submitted == 1 && p.s.op, "submitted %d, op %#llx",
		 p.submitted, (unsigned long long)p.s.op);

	/*
	 * The thread is gone. A process that exits after it gets its op
	 * cancelled: once that is counted, the monitor has looked at the
	 * thread's op too.
	 */
	T_EXPECT(child_parks_and_exits(cancels, t_scaled_ms(5000)) == 0,
		 "the monitor did not cancel an exited process's op within %u ms",
		 t_scaled_ms(5000));
	T_EXPECT(t_stat("uring_exit_cancels") == cancels + 1,
		 "%lld exit cancels after a thread and a process exited, want 1",
		 t_stat("uring_exit_cancels") - cancels);
	ret = xferk_query(p.x, p.s.op, &snap);
	T_EXPECT(ret == 0 && (snap.state == XFERK_STATE_SUBMITTED ||
			      snap.state == XFERK_STATE_IN_PROGRESS) &&
		 snap.cancel_requests == 0,
		 "op after its thread exited: %d %s, %u cancel requests", ret,
		 xferk_state_name(snap.state), snap.cancel_requests);

	/*
	 * Its CQE comes from this process's own cancel, not from the exit
	 * monitor: DRAINED, or QUARANTINED if the null peer's teardown outlasts
	 * the drain; never -ECANCELED.
	 */
	xferk_cancel_drain(p.x, p.s.op, xferk_now_ns() + t_scaled_ms(2000) * MS,
			   &snap);
	ret = t_cqe(&p.ring, t_scaled_ms(30000), &res, &ud);
	T_EXPECT(ret == 0 && ud == 1, "CQE: %d", ret);
	T_EXPECT(res == XFERK_STATE_DRAINED || res == XFERK_STATE_QUARANTINED,
		 "CQE res %d (%s)", res,
		 res < 0 ? strerror(-res) : xferk_state_name(res));
	T_EXPECT(t_stat("uring_exit_cancels") == cancels + 1, "exit cancels %lld",
		 t_stat("uring_exit_cancels") - cancels);
	T_EXPECT(xferk_release(p.x, p.s.op) == 0, "release");
	io_uring_queue_exit(&p.ring);
	xferk_close(p.x);
	/* The child's op drains in the background (exit_drain_ms, teardown). */
	T_EXPECT(t_stat_wait("ops_live", live, t_scaled_ms(60000)) == live,
		 "ops_live %lld, was %lld", t_stat("ops_live"), live);
}

/* Control: the whole process exits with the op parked. */
static void process_exits(void)
{
	long long cancels = t_stat("uring_exit_cancels"), live = t_stat("ops_live");

	T_EXPECT(child_parks_and_exits(cancels, t_scaled_ms(10000)) == 0 &&
		 t_stat("uring_exit_cancels") == cancels + 1,
		 "exit cancels %lld after the process exited, want 1",
		 t_stat("uring_exit_cancels") - cancels);
	T_EXPECT(t_stat_wait("ops_live", live, t_scaled_ms(60000)) == live,
		 "ops_live %lld, was %lld", t_stat("ops_live"), live);
}

int main(void)
{
	struct xferk *x;
	uint64_t conn;
	int ret;

	if (xferk_open(&x))
		return T_SKIP;
	ret = xferk_connect_null(x, 0, &conn);
	xferk_close(x);
	if (ret == -EPERM)
		return T_SKIP;		/* the null peer needs CAP_SYS_ADMIN */
	t_settle(NULL);
	/* The null peer's teardown after a drain: seconds, not the default 5 s. */
	if (t_param_scoped("flush_timeout_ms", 1000) ||
	    t_param_scoped("exit_drain_ms", 1000))
		return T_FAIL;
	thread_exits();
	process_exits();
	return t_result();
}
