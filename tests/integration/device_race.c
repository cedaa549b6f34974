// SPDX-License-Identifier: GPL-2.0
/*
 * Device removal against everything at once: while 4 processes connect
 * (new loopback pairs: active and passive ends), export, import and
 * transfer, and another reads every debugfs table, the RDMA device is
 * deleted and added back, twice. Every call returns a documented errno,
 * no process hangs, nothing stays pinned or live, and afterwards the
 * device works. The harness fails the run on any KASAN, lockdep or
 * kmemleak report.
 *
 * Regression: a cm_id that resolved, or a connect request accepted, after
 * the removal scan kept verbs resources past the device's removal; the
 * scan read a cm_id that teardown freed; debugfs read a QP quiesce freed.
 */
#include <signal.h>
#include <sys/wait.h>

#include "test.h"

#define WORKERS	4
#define LEN	(16 << 10)

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	stop = 1;
}

static int documented(int ret)
{
	switch (-ret) {
	case 0: case ETIMEDOUT: case ECONNREFUSED: case EHOSTUNREACH:
	case ECONNRESET: case ENODEV: case ENOTCONN: case EACCES: case EIO:
	case EINTR: case ENOMEM:
		return 1;
	}
	return 0;
}

static int worker(int n)
{
	struct t_loop l = { .src_len = LEN, .dst_len = LEN + 4096 };
	int rounds = 0;

	signal(SIGTERM, on_term);
	l.src = t_map(LEN);
	l.dst = t_map(LEN + 4096);
	while (!stop) {
		struct xferk_frag f;
		struct xferk_op_snapshot s;
		uint64_t op;
		int ret;

		ret = t_loop_connect(&l);
		if (!ret) {
			f = (struct xferk_frag) { .mr = l.src_mr, .len = LEN,
						  .remote = l.remote,
						  .opcode = n & 1 ? XFERK_OP_READ :
								    XFERK_OP_WRITE };
			ret = xferk_submit(l.x, &f, 1, xferk_now_ns() + 3000000000ULL,
					   0, &op);
			if (!ret)
				ret = xferk_wait(l.x, op, XFERK_DEADLINE_NONE,
						 XFERK_WAIT_PHYSICAL, &s);
		}
		if (!documented(ret)) {
			fprintf(stderr, "worker %d: %d (%s)\n", n, ret,
				strerror(-ret));
			return T_FAIL;
		}
		if (l.x)
			xferk_close(l.x);
		/* While the device is gone, every round fails at once. */
		if (ret)
			usleep(50000);
		rounds++;
	}
	fprintf(stderr, "worker %d: %d rounds\n", n, rounds);
	return T_PASS;
}

static int reader(void)
{
	static const char *const tables[] = { "peers", "ops", "queue",
					      "quarantine", "config" };
	char path[128], buf[4096];
	int i = 0;

	signal(SIGTERM, on_term);
	while (!stop) {
		FILE *f;

		snprintf(path, sizeof(path), "/sys/kernel/debug/xferk/%s",
			 tables[i++ % 5]);
		f = fopen(path, "r");
		if (!f)
			return T_FAIL;
		while (fread(buf, 1, sizeof(buf), f) > 0)
			;
		fclose(f);
	}
	return T_PASS;
}

static int run_cmd(const char *cmd)
{
	int ret = system(cmd);

	T_EXPECT(ret == 0, "%s: %d", cmd, ret);
	return ret;
}

int main(void)
{
	long long pinned = t_stat("pinned_pages"), live = t_stat("ops_live");
	pid_t pids[WORKERS + 1];
	struct t_loop l = { .src_len = LEN, .dst_len = LEN + 4096 };
	int i, status, round;

	if (access("/dev/xferk", F_OK))
		return T_SKIP;
	for (i = 0; i < WORKERS + 1; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			exit(i < WORKERS ? worker(i) : reader());
	}
	/* The workers are in the middle of things whenever the device goes. */
	for (round = 0; round < 2; round++) {
		sleep(1);
		run_cmd("rdma link delete rxe0");
		sleep(1);
		run_cmd("rdma link add rxe0 type rxe netdev dummy0");
	}
	sleep(1);
	for (i = 0; i < WORKERS + 1; i++)
		kill(pids[i], SIGTERM);
	for (i = 0; i < WORKERS + 1; i++) {
		waitpid(pids[i], &status, 0);
		T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == T_PASS,
			 "process %d: status %#x", i, status);
	}
	for (i = 0; i < 300 && (t_stat("pinned_pages") != pinned ||
				t_stat("ops_live") != live); i++)
		usleep(100000);
	T_EXPECT(t_stat("pinned_pages") == pinned && t_stat("ops_live") == live,
		 "pinned_pages %lld (was %lld), ops_live %lld (was %lld)",
		 t_stat("pinned_pages"), pinned, t_stat("ops_live"), live);

	/* The device works again. */
	l.src = t_map(LEN);
	l.dst = t_map(LEN + 4096);
	t_fill(l.src, LEN, 7);
	T_EXPECT(t_loop_connect(&l) == 0, "setup after the device came back");
	if (l.x) {
		struct xferk_frag f = { .mr = l.src_mr, .len = LEN,
					.remote = l.remote,
					.opcode = XFERK_OP_WRITE };
		struct xferk_op_snapshot s;

		T_EXPECT(t_run(l.x, &f, 1, &s) == XFERK_STATE_SUCCEEDED &&
			 t_check(l.dst, LEN, 7) < 0, "transfer after the device came back");
		xferk_close(l.x);
	}
	return t_result();
}
