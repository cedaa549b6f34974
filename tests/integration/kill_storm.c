// SPDX-License-Identifier: GPL-2.0
/*
 * A kill storm with transfers in flight. Four workers each set up their own
 * loopback transfer and loop RDMA WRITEs and READs of 4 KiB-256 KiB, some
 * through the ioctl and some through io_uring, some with short deadlines;
 * the parent SIGKILLs a worker while it has ops in flight and spawns a new
 * one, 300 times. Killed files cancel and drain their ops, escalation kills
 * paths under the other workers' traffic, and passive ends are reaped every
 * 100 ms, so QPs are torn down while their loopback siblings still send to
 * them. Then 600 kills of processes in the middle of CONNECT. Afterwards no
 * page is pinned and no op is live, and a new transfer works. The harness
 * fails the run on any KASAN, lockdep, refcount or kmemleak report.
 *
 * Regression (issue 27, defect 1): on the debug kernel, KASAN reported a
 * use-after-free in soft-RoCE's receive path under such a storm.
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "test.h"

#define WORKERS		4
#define XFER_KILLS	300
#define CONNECT_KILLS	600
#define LEN		(1UL << 20)
#define DEPTH		4

/* Shared with the workers: per slot, whether ops are in flight now. */
static int *inflight;

static struct xferk_frag random_frag(uint64_t mr, uint64_t remote)
{
	uint32_t len = 4096U << (rand() % 7);

	return (struct xferk_frag) {
		.mr = mr, .offset = (uint64_t)(rand() % (LEN / len)) * len,
		.len = len, .remote = remote,
		.remote_offset = (uint64_t)(rand() % (LEN / len)) * len,
		.opcode = rand() % 2 ? XFERK_OP_READ : XFERK_OP_WRITE,
	};
}

/* No deadline, or one 1-50 ms away (the op may end quarantined). */
static uint64_t random_deadline(void)
{
	if (rand() % 2)
		return XFERK_DEADLINE_NONE;
	return xferk_now_ns() + (1 + rand() % 50) * 1000000ULL;
}

/*
 * Loops batches of up to DEPTH ops through the ioctl and DEPTH through
 * io_uring, until killed. Any outcome of an op is fine here (a path may
 * die under it): what is checked is the kernel's.
 */
static void transfer_worker(unsigned int slot, unsigned int seed)
{
	struct xferk_frag ring_frags[DEPTH];
	struct xferk_ioc_submit subs[DEPTH];
	uint8_t *src = t_map(LEN), *dst = t_map(LEN);
	uint64_t conn, mr, dst_mr, remote, ops[DEPTH];
	struct xferk_op_snapshot snap;
	struct io_uring ring;
	struct xferk *x;
	int i, n, res;
	uint64_t ud;

	srand(seed);
	t_ring(&ring, 2 * DEPTH, 4 * DEPTH, IORING_SETUP_CQE32);
	if (t_open_setup_retry(&x, src, LEN, dst, LEN, &conn, &mr, &dst_mr,
			       &remote))
		_exit(T_FAIL);
	for (;;) {
		struct xferk_frag f;

		for (i = 0; i < DEPTH; i++) {
			ring_frags[i] = random_frag(mr, remote);
			subs[i] = (struct xferk_ioc_submit) {
				.size = sizeof(subs[i]),
				.flags = XFERK_SUBMIT_AUTO_RELEASE,
				.frags = (uintptr_t)&ring_frags[i],
				.nr_frags = 1, .frag_size = sizeof(ring_frags[i]),
				.deadline_ns = random_deadline(),
				.user_data = i,
			};
			io_uring_prep_xferk_submit(t_sqe(&ring), xferk_fd(x),
						   &subs[i]);
		}
		if (io_uring_submit(&ring) != DEPTH)
			_exit(T_FAIL);
		for (n = 0; n < DEPTH; n++) {
			f = random_frag(mr, remote);
			if (xferk_submit(x, &f, 1, random_deadline(), 0, &ops[n]))
				break;
		}
		__atomic_store_n(&inflight[slot], 1, __ATOMIC_RELAXED);
		for (i = 0; i < n; i++) {
			xferk_wait(x, ops[i], XFERK_DEADLINE_NONE,
				   XFERK_WAIT_PHYSICAL, &snap);
			xferk_release(x, ops[i]);
		}
		for (i = 0; i < DEPTH; i++)
			if (t_cqe(&ring, 600000, &res, &ud))
				_exit(T_FAIL);
		__atomic_store_n(&inflight[slot], 0, __ATOMIC_RELAXED);
	}
}

/* Opens and connects until killed. */
static void connect_worker(unsigned int seed)
{
	static const char *const addrs[] = { "10.99.0.1", "10.99.0.2" };
	struct xferk *x;
	uint64_t conn;

	srand(seed);
	for (;;) {
		if (xferk_open(&x))
			_exit(T_FAIL);
		xferk_connect(x, addrs[rand() % 2], 0, t_connect_ms(), &conn);
		xferk_close(x);
	}
}

static pid_t spawn(unsigned int slot, bool transfers)
{
	unsigned int seed = rand();
	pid_t pid;

	__atomic_store_n(&inflight[slot], 0, __ATOMIC_RELAXED);
	pid = fork();
	if (pid == 0) {
		if (transfers)
			transfer_worker(slot, seed);
		connect_worker(seed);
	}
	return pid;
}

/* Kills and reaps @pid; 1 if it had failed on its own before. */
static int reap(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) != 0;
}

/* @kills kills of workers, in transfer or connect mode; failed workers. */
static int storm(bool transfers, int kills)
{
	pid_t pids[WORKERS];
	int i, done = 0, failed = 0;

	for (i = 0; i < WORKERS; i++)
		pids[i] = spawn(i, transfers);
	while (done < kills) {
		i = rand() % WORKERS;
		usleep(transfers ? 2000 + rand() % 20000 : rand() % 30000);
		/* Transfer workers die only with ops in flight. */
		if (transfers &&
		    !__atomic_load_n(&inflight[i], __ATOMIC_RELAXED))
			continue;
		failed += reap(pids[i]);
		done++;
		pids[i] = spawn(i, transfers);
	}
	for (i = 0; i < WORKERS; i++)
		failed += reap(pids[i]);
	return failed;
}

int main(void)
{
	uint8_t *src = t_map(LEN), *dst = t_map(LEN);
	uint64_t conn, mr, dst_mr, remote;
	struct xferk_op_snapshot snap;
	struct t_counters base;
	struct xferk_frag f;
	struct xferk *x;
	long long idle;
	int failed;

	inflight = t_storm_begin(&base, &idle);
	failed = storm(true, XFER_KILLS);
	T_EXPECT(!failed, "%d transfer workers failed on their own", failed);
	failed = storm(false, CONNECT_KILLS);
	T_EXPECT(!failed, "%d connect workers failed on their own", failed);
	if (idle > 0)
		t_set_param("passive_idle_ms", idle);

	/* Every killed op drains; then the device still moves data. */
	T_EXPECT(t_drained(&base), "the killed ops did not drain");
	t_fill(src, LEN, 27);
	if (t_open_setup_retry(&x, src, LEN, dst, LEN, &conn, &mr, &dst_mr,
			       &remote)) {
		T_EXPECT(0, "setup after the storm");
		return t_result();
	}
	f = (struct xferk_frag) { .mr = mr, .len = LEN, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT(t_run(x, &f, 1, &snap) == XFERK_STATE_SUCCEEDED &&
		 t_check(dst, LEN, 27) < 0, "write after the storm: state %u",
		 snap.state);
	xferk_close(x);
	return t_result();
}
