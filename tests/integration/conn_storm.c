// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_cm handlers against teardown: 8 processes loop CONNECT with 1-30 ms
 * timeouts, to the listener, to ports nobody listens on (rejected after the
 * route resolved and the QP was created) and to an address nobody has,
 * sometimes through io_uring, while the parent SIGKILLs them at random
 * (only workers that finished an attempt since they were spawned, so that
 * the storm progresses however slow the machine) and passive ends are
 * reaped every 100 ms (so loopback pairs keep coming and going). At least
 * 1000 attempts. Then the device is deleted: every
 * connection goes, nothing stays pinned or live, and the device comes back
 * and works. The harness fails the run on any KASAN, lockdep, refcount or
 * kmemleak report.
 *
 * Regression: the active handler created PD, CQ and QP on a connection
 * that teardown was freeing (use-after-free in rdma_create_qp and
 * addr_resolve); a failed accept freed a published connection.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "test.h"

#define WORKERS		8
#define ATTEMPTS	1000

/* Shared: [0] all attempts, [1 + i] those of worker slot i's current worker. */
static long *attempts;

static const struct target {
	const char *ip;
	uint16_t port;
} targets[] = {
	{ "10.99.0.1", 0 }, { "10.99.0.2", 0 },
	{ "10.99.0.1", 19001 }, { "10.99.0.2", 19002 },
	{ "10.99.0.77", 0 },
};

static int ring_connect(struct io_uring *ring, struct xferk *x,
			const struct target *t, unsigned int ms)
{
	struct xferk_ioc_connect a = { .size = sizeof(a), .family = AF_INET,
				       .port = t->port, .timeout_ms = ms };
	uint64_t ud;
	int res;

	inet_pton(AF_INET, t->ip, a.addr);
	io_uring_prep_xferk_cmd(t_sqe(ring), xferk_fd(x), XFERK_IOC_CONNECT, &a);
	io_uring_submit(ring);
	return t_cqe(ring, 30000, &res, &ud) ? -ETIME : res;
}

static void worker(unsigned int slot, unsigned int seed)
{
	struct io_uring ring;

	srand(seed);
	t_ring(&ring, 4, 0, 0);
	for (;;) {
		const struct target *t = &targets[rand() % 5];
		unsigned int ms = 1 + rand() % 30;
		struct xferk *x;
		uint64_t conn;
		int ret;

		if (xferk_open(&x))
			_exit(T_FAIL);
		if (rand() % 4)
			ret = xferk_connect(x, t->ip, t->port, ms, &conn);
		else
			ret = ring_connect(&ring, x, t, ms);
		/* Anything but a documented CONNECT errno is a failure. */
		if (ret && ret != -ETIMEDOUT && ret != -ECONNREFUSED &&
		    ret != -EHOSTUNREACH && ret != -ECONNRESET &&
		    ret != -EINTR && ret != -EPROTO && ret != -ENOMEM &&
		    ret != -EIO) {
			fprintf(stderr, "connect %s:%u: %d\n", t->ip, t->port, ret);
			_exit(T_FAIL);
		}
		__atomic_add_fetch(&attempts[0], 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&attempts[1 + slot], 1, __ATOMIC_RELAXED);
		xferk_close(x);
	}
}

static pid_t spawn(unsigned int slot, unsigned int seed)
{
	pid_t pid;

	__atomic_store_n(&attempts[1 + slot], 0, __ATOMIC_RELAXED);
	pid = fork();
	if (pid == 0)
		worker(slot, seed);
	return pid;
}

static int run_cmd(const char *cmd)
{
	int ret = system(cmd);

	T_EXPECT(ret == 0, "%s: %d", cmd, ret);
	return ret;
}

int main(void)
{
	struct t_counters base;
	long long idle;
	pid_t pids[WORKERS];
	time_t end = time(NULL) + 300;
	int i, status, failed = 0, kills = 0;
	struct xferk *x;
	uint64_t conn;

	attempts = t_storm_begin(&base, &idle);
	for (i = 0; i < WORKERS; i++)
		pids[i] = spawn(i, rand());
	while (__atomic_load_n(&attempts[0], __ATOMIC_RELAXED) < ATTEMPTS &&
	       time(NULL) < end) {
		i = rand() % WORKERS;
		usleep(2000 + rand() % 20000);
		/* A worker that has not finished an attempt yet lives on. */
		if (!__atomic_load_n(&attempts[1 + i], __ATOMIC_RELAXED))
			continue;
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
		failed += WIFEXITED(status) && WEXITSTATUS(status) != 0;
		kills++;
		pids[i] = spawn(i, rand());
	}
	for (i = 0; i < WORKERS; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
		failed += WIFEXITED(status) && WEXITSTATUS(status) != 0;
	}
	if (idle > 0)
		t_set_param("passive_idle_ms", idle);
	fprintf(stderr, "%ld attempts, %d kills\n", *attempts, kills);
	T_EXPECT(*attempts >= ATTEMPTS, "only %ld attempts", *attempts);
	T_EXPECT(!failed, "%d workers saw an undocumented errno", failed);

	/* The device goes: every connection with it, nothing left behind. */
	if (run_cmd("rdma link delete rxe0"))
		return T_FAIL;
	for (i = 0; i < 300 && t_peers_matching("rdma", NULL) > 0; i++)
		usleep(t_debug_kernel() ? 400000 : 100000);
	T_EXPECT(t_peers_matching("rdma", NULL) == 0, "%d connections left",
		 t_peers_matching("rdma", NULL));
	T_EXPECT(t_stat("peers_connected") == 0, "peers_connected %lld",
		 t_stat("peers_connected"));
	T_EXPECT(t_drained(&base), "ops or pages left behind");
	if (run_cmd("rdma link add rxe0 type rxe netdev dummy0"))
		return T_FAIL;
	T_EXPECT(xferk_open(&x) == 0 &&
		 xferk_connect(x, t_peer(), 0, t_debug_kernel() ? 60000 : 20000,
			       &conn) == 0,
		 "connect after the device came back");
	xferk_close(x);
	return t_result();
}
