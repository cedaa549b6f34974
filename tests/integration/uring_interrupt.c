// SPDX-License-Identifier: GPL-2.0
/*
 * Ring commands that wait run in io_uring's worker threads and are
 * interrupted when their ring goes away, whatever bound they were given:
 *  - CONNECT to an address on the VM's subnet where nobody answers, with a
 *    60 s timeout: a process that exits 1 s into it is reaped well within
 *    the timeout; a process that closes its ring and its file 1 s into it
 *    and lives on sees the file released (a region registered in it is
 *    unpinned) well within the timeout.
 *  - CANCEL of an op whose completion is swallowed (over soft-RoCE), with
 *    a drain deadline 50 s ahead: a process that exits 1 s into it is
 *    reaped well before the deadline. The drain goes on in the background
 *    and the connection's teardown ends it: the op's pages are released.
 *
 * Regression: the CONNECT wait was only killable and the CANCEL wait
 * uninterruptible, so a closed ring, or an exiting process, waited the
 * whole timeout or drain.
 */
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "test.h"

#define MS		1000000ULL
#define KB		1024UL
#define FAULT		"/sys/kernel/debug/xferk/fault/"
#define NOBODY		"10.99.0.77"	/* on dummy0's subnet, no such host */
#define PORT_EXIT	18598		/* one connection attempt per case */
#define PORT_CLOSE	18599
#define LONG_MS		60000		/* the CONNECT timeout */
#define DRAIN_S		50		/* the CANCEL drain deadline, from now */
#define BOUND_S		20		/* "well within" */

static void restore(void)
{
	t_restore_params();
	t_write_file(FAULT "swallow_completions", "0");
}

static long long read_number(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static double now_s(void)
{
	return xferk_now_ns() / 1e9;
}

/* Sends a ring CONNECT to NOBODY:@port; io_uring hands it to a worker. */
static void connect_nobody(struct io_uring *ring, struct xferk *x,
			   struct xferk_ioc_connect *a, uint16_t port)
{
	*a = (struct xferk_ioc_connect) {
		.size = sizeof(*a), .family = AF_INET, .port = port,
		.timeout_ms = LONG_MS,
	};
	inet_pton(AF_INET, NOBODY, a->addr);
	io_uring_prep_xferk_cmd(t_sqe(ring), xferk_fd(x), XFERK_IOC_CONNECT, a);
	if (io_uring_submit(ring) != 1) {
		fprintf(stderr, "ring CONNECT not submitted\n");
		_exit(T_FAIL);
	}
}

/* 'P' if the ring's command is still pending, else 'D' (and its result). */
static char pending(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;

	if (io_uring_peek_cqe(ring, &cqe))
		return 'P';
	fprintf(stderr, "command done early: %d (%s)\n", cqe->res,
		strerror(-cqe->res));
	return 'D';
}

/*
 * Runs @child in a child process that writes one byte to its pipe right
 * before it exits. Return: seconds from that byte until the child was
 * reaped; the byte in @report (0 if none came).
 */
static double reap_time(void (*child)(int fd), char *report)
{
	int fds[2], status;
	double t0;
	pid_t pid;

	if (pipe(fds))
		exit(T_FAIL);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(fds[1]);
		_exit(T_FAIL);
	}
	close(fds[1]);
	if (read(fds[0], report, 1) != 1)
		*report = 0;
	t0 = now_s();
	waitpid(pid, &status, 0);
	close(fds[0]);
	return now_s() - t0;
}

static void report(int fd, char c)
{
	if (write(fd, &c, 1) != 1)
		_exit(T_FAIL);
	_exit(0);
}

/* Child: exits with a ring CONNECT waiting in io_uring's worker. */
static void connect_then_exit(int fd)
{
	struct xferk_ioc_connect a;
	struct io_uring ring;
	struct xferk *x;

	if (xferk_open(&x))
		_exit(T_FAIL);
	t_ring(&ring, 4, 0, 0);
	connect_nobody(&ring, x, &a, PORT_EXIT);
	sleep(1);
	report(fd, pending(&ring));
}

static void connect_exit(void)
{
	char r;
	double t = reap_time(connect_then_exit, &r);

	T_EXPECT(r == 'P', "CONNECT child: %s", r == 'D' ?
		 "CONNECT ended within 1 s" : "no report");
	T_EXPECT(t < BOUND_S,
		 "reaped %.1f s after exiting with a ring CONNECT (timeout %d s)",
		 t, LONG_MS / 1000);
}

/* Child: closes ring and file with a ring CONNECT waiting, and lives on. */
static int connect_then_close(void)
{
	long long pinned = t_stat("pinned_pages");
	uint8_t *buf = t_map(64 * KB);
	struct xferk_ioc_connect a;
	struct io_uring ring;
	struct xferk *x;
	uint64_t mr;
	double t0;
	int i;

	if (xferk_open(&x) ||
	    xferk_mr_reg(x, buf, 64 * KB, XFERK_ACCESS_LOCAL_SRC, &mr))
		return T_FAIL;
	T_EXPECT(t_stat("pinned_pages") > pinned, "region not pinned");
	t_ring(&ring, 4, 0, 0);
	connect_nobody(&ring, x, &a, PORT_CLOSE);
	sleep(1);
	T_EXPECT(pending(&ring) == 'P', "CONNECT ended within 1 s");
	/* Now the command holds the file's last reference. */
	io_uring_queue_exit(&ring);
	xferk_close(x);
	t0 = now_s();
	for (i = 0; i < BOUND_S * 10 && t_stat("pinned_pages") != pinned; i++)
		usleep(100000);
	T_EXPECT(t_stat("pinned_pages") == pinned,
		 "file not released %.1f s after its ring was closed (CONNECT timeout %d s)",
		 now_s() - t0, LONG_MS / 1000);
	return t_result();
}

static void connect_close(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(connect_then_close());
	waitpid(pid, &status, 0);
	T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == T_PASS,
		 "ring-close child: status %#x", status);
}

/* Child: exits with a ring CANCEL draining an op that cannot drain. */
static void cancel_then_exit(int fd)
{
	struct xferk_ioc_cancel c = { .size = sizeof(c) };
	struct xferk_op_snapshot s = { .state = XFERK_STATE_COUNT };
	struct io_uring ring;
	struct xferk_frag f;
	struct t_loop l;
	uint64_t op;
	int i;

	t_loop_open(&l, 64 * KB, 64 * KB + 4096);
	t_ring(&ring, 4, 0, 0);
	f = (struct xferk_frag) { .mr = l.src_mr, .len = 4096, .remote = l.remote,
				  .opcode = XFERK_OP_WRITE };
	if (t_swallow(1) ||
	    xferk_submit(l.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op))
		_exit(T_FAIL);
	/* Posted, and its completion swallowed: only a forced drain ends it. */
	for (i = 0; i < 100 && read_number(FAULT "swallow_completions"); i++)
		usleep(100000);
	if (xferk_query(l.x, op, &s) || s.state != XFERK_STATE_IN_PROGRESS) {
		fprintf(stderr, "op not stuck in flight: %s\n",
			xferk_state_name(s.state));
		_exit(T_FAIL);
	}
	c.op = op;
	c.drain_deadline_ns = xferk_now_ns() + DRAIN_S * 1000 * MS;
	io_uring_prep_xferk_cancel(t_sqe(&ring), xferk_fd(l.x), &c);
	if (io_uring_submit(&ring) != 1)
		_exit(T_FAIL);
	sleep(1);
	report(fd, pending(&ring));
}

static void cancel_exit(void)
{
	long long pinned = t_stat("pinned_pages"), live = t_stat("ops_live");
	double t;
	char r;
	int i;

	/* The teardown that ends the drain destroys the QP after 1 s. */
	T_EXPECT(t_param_scoped("flush_timeout_ms", 1000) == 0, "flush_timeout_ms");
	t = reap_time(cancel_then_exit, &r);
	T_EXPECT(r == 'P', "CANCEL child: %s", r == 'D' ?
		 "CANCEL ended within 1 s" : "setup failed");
	T_EXPECT(t < BOUND_S,
		 "reaped %.1f s after exiting with a ring CANCEL (drain %d s)",
		 t, DRAIN_S);
	T_EXPECT(t_write_file(FAULT "swallow_completions", "0") == 0, "knob");

	/* Without the process the drain goes on, to the deadline at most. */
	for (i = 0; i < 1200 && (t_stat("pinned_pages") != pinned ||
				 t_stat("ops_live") != live); i++)
		usleep(100000);
	T_EXPECT(t_stat("pinned_pages") == pinned, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), pinned);
	T_EXPECT(t_stat("ops_live") == live, "ops_live %lld, was %lld",
		 t_stat("ops_live"), live);
}

int main(void)
{
	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	atexit(restore);
	/* Its children swallow completions (t_swallow()): off for all of it. */
	T_EXPECT(t_param_scoped("lost_completion_ms", 0) == 0,
		 "lost_completion_ms");

	connect_exit();
	connect_close();
	cancel_exit();
	restore();
	return t_result();
}
