// SPDX-License-Identifier: GPL-2.0
/*
 * kill -9 of processes with ops in flight, 100 times: each child sets up
 * its own loopback transfer, submits an RDMA WRITE and is killed. The
 * kernel cancels and drains their ops in the background (which may take a
 * shared connection down: the next child connects again); afterwards no
 * page is pinned and no op is live, and the harness unloads the module
 * cleanly.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define KILLS	100
#define LEN	(256UL << 10)

static void child(int ready)
{
	uint64_t conn, mr, dst_mr, remote, op;
	uint8_t *src = t_map(LEN), *dst = t_map(LEN + 4096);
	struct xferk *x;
	struct xferk_frag f;

	/* An earlier child's drain may take the shared connection down. */
	if (t_open_setup_retry(&x, src, LEN, dst, LEN + 4096, &conn, &mr,
			       &dst_mr, &remote))
		_exit(1);
	f = (struct xferk_frag) { .mr = mr, .len = LEN, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	if (xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op))
		_exit(1);
	if (write(ready, "R", 1) != 1)
		_exit(1);
	pause();
	_exit(0);
}

int main(void)
{
	long long pinned, live, drained;
	struct t_counters base;
	int i, killed = 0;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	t_settle(&base);
	pinned = base.pinned_pages;
	live = base.ops_live;
	drained = t_stat("ops_drained_after_exit");
	for (i = 0; i < KILLS; i++) {
		int p[2], status;
		pid_t pid;
		char c;

		if (pipe(p))
			return T_FAIL;
		pid = fork();
		if (pid == 0) {
			close(p[0]);
			child(p[1]);
		}
		close(p[1]);
		/* EOF instead of a byte: the child failed before submitting. */
		if (read(p[0], &c, 1) == 1) {
			kill(pid, SIGKILL);
			killed++;
		}
		close(p[0]);
		waitpid(pid, &status, 0);
	}
	T_EXPECT(killed == KILLS, "%d of %d children got their op started",
		 killed, KILLS);
	for (i = 0; i < 600 && (t_stat("pinned_pages") != pinned ||
				t_stat("ops_live") != live); i++)
		usleep(100000);
	T_EXPECT(t_stat("pinned_pages") == pinned, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), pinned);
	T_EXPECT(t_stat("ops_live") == live, "ops_live %lld, was %lld",
		 t_stat("ops_live"), live);
	printf("%d kills; ops drained after exit: %lld\n", killed,
	       t_stat("ops_drained_after_exit") - drained);
	return t_result();
}
