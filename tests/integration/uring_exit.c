// SPDX-License-Identifier: GPL-2.0
/*
 * Parked submits outlive their ring and their process safely, over
 * soft-RoCE:
 *  - ring closed: four ops whose completions are swallowed are parked when
 *    the ring is closed and their region is deregistered. Until each op is
 *    physically complete its pages stay pinned (checked on every poll);
 *    all four complete through the deadline policy and the teardown.
 *  - process killed: 60 children each park eight ops (every tenth child
 *    one with a swallowed completion) and are killed with SIGKILL. No
 *    exit hangs; the exit monitor cancels the ops of dead submitters; in
 *    the end no op is live, no command parked and no page pinned.
 * Fault knobs are armed only while no other op is live on the host (a
 * stuck child first waits until the drains of the children killed before
 * it are over), so the ops meant to be stuck are the ones that are; a
 * stuck child checks its op is held in flight before it reports ready.
 * The harness then unloads the module.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdbool.h>

#include "test.h"

#define MS		1000000ULL
#define FAULT		"/sys/kernel/debug/xferk/fault/"
#define PARAM		"/sys/module/xferk/parameters/"
#define KILLS		60
#define OPS		8
#define LEN		(64UL << 10)

static void ring_closed(void)
{
	long long pinned0, completed;
	uint64_t conn, src_mr, dst_mr, remote;
	struct xferk_ioc_submit s[4];
	struct xferk_frag f[4];
	struct io_uring ring;
	uint8_t *src = t_map(LEN), *dst = t_map(LEN + 4096);
	struct xferk *x;
	long long pinned;
	int i, physical = 0, early = 0;

	t_settle(NULL);
	pinned0 = t_stat("pinned_pages");
	completed = t_stat("uring_completed");
	if (xferk_open(&x) ||
	    t_setup(x, src, LEN, dst, LEN + 4096, &conn, &src_mr, &dst_mr, &remote)) {
		T_EXPECT(0, "setup");
		return;
	}
	t_ring(&ring, 8, 0, 0);
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_swallow(4) == 0, "fault");
	for (i = 0; i < 4; i++) {
		struct io_uring_sqe *sqe = t_sqe(&ring);

		f[i] = (struct xferk_frag) { .mr = src_mr, .offset = i * 4096,
					     .len = 4096, .remote = remote,
					     .remote_offset = i * 4096,
					     .opcode = XFERK_OP_WRITE };
		s[i] = (struct xferk_ioc_submit) {
			.size = sizeof(s[i]), .frags = (uintptr_t)&f[i],
			.nr_frags = 1, .frag_size = sizeof(f[i]),
			.deadline_ns = xferk_now_ns() + 1000 * MS,
			.drain_budget_ns = 500 * MS,
		};
		io_uring_prep_xferk_submit(sqe, xferk_fd(x), &s[i]);
	}
	T_EXPECT(io_uring_submit(&ring) == 4, "submit");
	T_EXPECT(t_fault_taken("swallow_completions", t_scaled_ms(10000)) == 0,
		 "completions not swallowed");
	io_uring_queue_exit(&ring);
	T_EXPECT(xferk_mr_dereg(x, src_mr) == 0, "dereg");
	pinned = t_stat("pinned_pages");

	/* Every 20 ms: an op not physically complete keeps its pages. */
	for (i = 0; i < 1500 && physical < 4; i++) {
		struct xferk_op_snapshot snap;
		int j;

		physical = 0;
		for (j = 0; j < 4; j++) {
			/*
			 * The counter first: an op is physically complete
			 * before its pages go, so pages seen gone and then an
			 * op seen in flight is an early unpin; the other order
			 * would blame an op that completed in between.
			 */
			bool unpinned = t_stat("pinned_pages") < pinned;

			if (xferk_query(x, s[j].op, &snap))
				continue;
			physical += snap.physical_complete;
			early += !snap.physical_complete && unpinned;
		}
		usleep(20000);
	}
	T_EXPECT(physical == 4, "%d of 4 ops physically complete", physical);
	T_EXPECT(!early, "pages unpinned before their op was complete");
	T_EXPECT(t_stat_wait("uring_completed", completed + 4,
			     t_scaled_ms(10000)) == completed + 4,
		 "parked commands completed: %lld",
		 t_stat("uring_completed") - completed);
	t_fault_clear();
	xferk_close(x);
	T_EXPECT(t_stat_wait("pinned_pages", pinned0, t_scaled_ms(10000)) == pinned0,
		 "pinned_pages %lld, was %lld", t_stat("pinned_pages"), pinned0);
}

static void child(int ready, int stuck)
{
	uint64_t conn, mr, dst_mr, remote;
	uint8_t *src = t_map(OPS * LEN), *dst = t_map(OPS * LEN + 4096);
	struct xferk_op_snapshot snap = { .state = XFERK_STATE_COUNT };
	struct xferk_ioc_submit s[OPS];
	struct xferk_frag f[OPS];
	struct io_uring ring;
	struct xferk *x;
	int i, ret = -1;

	/*
	 * A stuck child first waits until the ops of the children killed
	 * before it are gone: their completions would use its knob, and
	 * their drains may take the shared connection down under it.
	 */
	if (stuck && t_quiet())
		_exit(1);
	/* Another child's drain may take the shared connection down. */
	if (t_open_setup_retry(&x, src, OPS * LEN, dst, OPS * LEN + 4096,
			       &conn, &mr, &dst_mr, &remote))
		_exit(1);
	t_ring(&ring, OPS, 0, 0);
	for (i = 0; i < OPS; i++) {
		f[i] = (struct xferk_frag) { .mr = mr, .offset = i * LEN,
					     .len = LEN, .remote = remote,
					     .remote_offset = i * LEN,
					     .opcode = i % 2 };
		s[i] = (struct xferk_ioc_submit) {
			.size = sizeof(s[i]), .flags = XFERK_SUBMIT_AUTO_RELEASE,
			.frags = (uintptr_t)&f[i], .nr_frags = 1,
			.frag_size = sizeof(f[i]),
			.deadline_ns = xferk_now_ns() + 30000 * MS,
			.drain_budget_ns = 5000 * MS,
		};
	}
	/*
	 * A stuck child parks op 0 alone first and checks that its completion
	 * was swallowed: then it is parked when the child dies, whatever else
	 * happens.
	 */
	if (stuck) {
		s[0].flags = 0;		/* queried below */
		s[0].deadline_ns = xferk_now_ns() + 30000 * MS;
		if (t_swallow(1))
			_exit(1);
		io_uring_prep_xferk_submit(t_sqe(&ring), xferk_fd(x), &s[0]);
		ret = io_uring_submit(&ring) == 1 ? 0 : -EIO;
		if (!ret)
			ret = t_fault_taken("swallow_completions",
					    t_scaled_ms(10000)) ? -ETIME : 0;
		if (!ret)
			ret = xferk_query(x, s[0].op, &snap);
		if (ret || snap.state != XFERK_STATE_IN_PROGRESS) {
			fprintf(stderr, "stuck child: op not held in flight: %d %s\n",
				ret, xferk_state_name(snap.state));
			_exit(1);
		}
	}
	for (i = stuck ? 1 : 0; i < OPS; i++)
		io_uring_prep_xferk_submit(t_sqe(&ring), xferk_fd(x), &s[i]);
	if (io_uring_submit(&ring) != OPS - !!stuck || write(ready, "R", 1) != 1)
		_exit(1);
	pause();
	_exit(0);
}

static void killed(void)
{
	long long pinned, live, exits;
	struct t_counters base;
	int i, started = 0;

	t_settle(&base);
	pinned = base.pinned_pages;
	live = base.ops_live;
	exits = t_stat("uring_exit_cancels");
	T_EXPECT(t_write_file(PARAM "exit_drain_ms", "400") == 0, "exit_drain_ms");
	for (i = 0; i < KILLS; i++) {
		int p[2], status;
		pid_t pid;
		char c;

		if (pipe(p)) {
			T_EXPECT(0, "pipe");
			return;
		}
		pid = fork();
		if (pid == 0) {
			close(p[0]);
			child(p[1], i % 10 == 0);
		}
		close(p[1]);
		if (read(p[0], &c, 1) == 1)
			started++;
		kill(pid, SIGKILL);
		close(p[0]);
		waitpid(pid, &status, 0);
	}
	T_EXPECT(started == KILLS, "%d of %d children parked their ops",
		 started, KILLS);
	for (i = 0; i < 600 && (t_stat("pinned_pages") != pinned ||
				t_stat("ops_live") != live ||
				t_stat("uring_parked") != base.uring_parked); i++)
		usleep(100000);
	T_EXPECT(t_stat("uring_parked") == base.uring_parked, "uring_parked %lld",
		 t_stat("uring_parked"));
	T_EXPECT(t_stat("ops_live") == live, "ops_live %lld, was %lld",
		 t_stat("ops_live"), live);
	T_EXPECT(t_stat("pinned_pages") == pinned, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), pinned);
	/* At least the stuck ones were still parked when their task died. */
	T_EXPECT(t_stat("uring_exit_cancels") - exits >= KILLS / 10,
		 "exit cancels %lld", t_stat("uring_exit_cancels") - exits);
	printf("%d kills; exit cancels: %lld\n", started,
	       t_stat("uring_exit_cancels") - exits);
	T_EXPECT(t_fault_get("swallow_completions") == 0, "swallow knob left armed");
	t_fault_clear();
	T_EXPECT(t_write_file(PARAM "exit_drain_ms", "5000") == 0, "exit_drain_ms");
}

static long long saved_flush = -1, saved_exit_drain = -1;

static void restore(void)
{
	t_fault_clear();
	if (saved_flush > 0)
		t_set_param("flush_timeout_ms", saved_flush);
	if (saved_exit_drain > 0)
		t_set_param("exit_drain_ms", saved_exit_drain);
}

int main(void)
{
	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	saved_flush = t_param("flush_timeout_ms");
	saved_exit_drain = t_param("exit_drain_ms");
	atexit(restore);
	/* Its children swallow completions (t_swallow()): off for all of it. */
	T_EXPECT(t_param_scoped("lost_completion_ms", 0) == 0,
		 "lost_completion_ms");
	/*
	 * Each stuck op ends only when its drain kills the path: no kill may
	 * be refused for following the one before within the interval (the
	 * op would stay QUARANTINED, its completion never coming).
	 */
	T_EXPECT(t_param_scoped("escalation_interval_ms", 0) == 0,
		 "escalation_interval_ms");
	/*
	 * A teardown waits this long for the swallowed completions only: its
	 * drain has handled every completion the device made.
	 */
	T_EXPECT(t_write_file(PARAM "flush_timeout_ms", "200") == 0, "flush timeout");
	ring_closed();
	killed();
	restore();
	return t_result();
}
