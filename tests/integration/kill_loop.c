// SPDX-License-Identifier: GPL-2.0
/*
 * kill -9 of processes with ops in flight, 100 times: each child registers
 * memory, submits an RDMA WRITE and is killed. The kernel cancels and
 * drains their ops in the background; afterwards no page is pinned and no
 * op is live (and the harness unloads the module cleanly).
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define KILLS	100
#define LEN	(1UL << 20)

static void child(const struct xferk_token *tok, int ready)
{
	uint64_t conn, mr, remote, op;
	struct xferk_frag f;
	struct xferk *x;
	uint8_t *src = t_map(LEN);

	if (xferk_open(&x) || xferk_connect(x, t_peer(), 0, 10000, &conn) ||
	    xferk_import(x, conn, tok, &remote) ||
	    xferk_mr_reg(x, src, LEN, XFERK_ACCESS_LOCAL_SRC, &mr))
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
	long long pinned, live, drained = t_stat("ops_drained_after_exit");
	uint64_t conn, mr, exp;
	struct xferk_token tok;
	struct xferk *x;
	uint8_t *dst;
	int i, p[2], killed = 0;

	if (xferk_open(&x))
		return T_SKIP;
	dst = t_map(LEN + 4096);
	if (xferk_connect(x, t_peer(), 0, 10000, &conn) ||
	    xferk_mr_reg(x, dst, LEN + 4096, XFERK_ACCESS_REMOTE_WRITE, &mr) ||
	    xferk_export(x, conn, mr, 0, LEN + 4096, XFERK_ACCESS_REMOTE_WRITE,
			 &tok, &exp) || pipe(p))
		return T_FAIL;
	pinned = t_stat("pinned_pages");
	live = t_stat("ops_live");
	for (i = 0; i < KILLS; i++) {
		pid_t pid = fork();
		char c;
		int status;

		if (pid == 0)
			child(&tok, p[1]);
		if (read(p[0], &c, 1) == 1) {
			kill(pid, SIGKILL);
			killed++;
		}
		waitpid(pid, &status, 0);
	}
	T_EXPECT(killed == KILLS, "%d of %d children got their op started",
		 killed, KILLS);
	for (i = 0; i < 300 && (t_stat("pinned_pages") != pinned ||
				t_stat("ops_live") != live); i++)
		usleep(100000);
	T_EXPECT(t_stat("pinned_pages") == pinned, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), pinned);
	T_EXPECT(t_stat("ops_live") == live, "ops_live %lld, was %lld",
		 t_stat("ops_live"), live);
	printf("%d kills; ops drained after exit: %lld\n", killed,
	       t_stat("ops_drained_after_exit") - drained);
	xferk_close(x);
	return t_result();
}
