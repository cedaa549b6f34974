// SPDX-License-Identifier: GPL-2.0
/*
 * A session that no local object uses goes down (soft-RoCE, loopback),
 * with session_idle_ms at 300 and keepalive_ms at 100 (the keepalive
 * makes the decision, at each probe):
 * 1. An unprivileged loop of open, CONNECT, close, 20 times: afterwards no
 *    session to the peer is up or reconnecting within 20 s, and
 *    stats/sessions_idle grew.
 * 2. A session whose CONNECT handle is closed while the file still holds
 *    an export and an import of it stays up for 1 s, over 3 idle times
 *    (about 7 keepalives come after the first) and serves a WRITE at the
 *    end; once the export and the import go too, it goes down.
 *
 * Regression: an end this host initiated lived as long as its peer
 * answered keepalives, so an unprivileged open, CONNECT, close loop piled
 * up sessions (a PD, a CQ and up to 8 QPs each) that no limit counted.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define RW	(XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE)

static void restore(void)
{
	t_restore_params();
}

/* No session to the peer is live within @ms: 0, else -1. */
static int sessions_gone(unsigned int ms)
{
	uint64_t until = t_now_ms() + ms;

	while (t_peer_session_live() && t_now_ms() < until)
		usleep(50000);
	return t_peer_session_live() ? -1 : 0;
}

/* 1, as an unprivileged user in a child. */
static int connect_loop(void)
{
	struct xferk *x;
	uint64_t conn;
	int i, ret;

	t_become_user(1);
	for (i = 0; i < 20; i++) {
		ret = xferk_open(&x);
		if (!ret)
			ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn);
		if (ret) {
			fprintf(stderr, "round %d: %s\n", i, strerror(-ret));
			return T_FAIL;
		}
		xferk_close(x);
	}
	return T_PASS;
}

static void idle_after_close(void)
{
	long long idle = t_stat("sessions_idle");
	int status = 0;
	pid_t pid;

	pid = fork();
	if (!pid)
		exit(connect_loop());
	T_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid &&
		 WIFEXITED(status) && WEXITSTATUS(status) == T_PASS,
		 "the connect loop failed");
	T_EXPECT(sessions_gone(t_scaled_ms(20000)) == 0,
		 "a session to the peer is still live");
	T_EXPECT(t_stat("sessions_idle") > idle, "sessions_idle %lld, was %lld",
		 t_stat("sessions_idle"), idle);
}

static void used_stays_up(void)
{
	struct xferk_conn_info info = { 0 };
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	struct t_loop l;
	int ret;

	t_loop_open(&l, 4096, 4096);
	/* Only the export and the import (t_setup's) use it now. */
	T_EXPECT(xferk_disconnect(l.x, l.conn) == 0, "close the CONNECT handle");
	usleep(1000 * 1000);
	T_EXPECT(t_peer_session_live(), "the used session went down");
	/* Its handle is gone: the import names the session. */
	f = (struct xferk_frag) { .mr = l.src_mr, .len = 4096,
				  .remote = l.remote, .opcode = XFERK_OP_WRITE };
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "write: %s",
		 ret < 0 ? strerror(-ret) : xferk_state_name(ret));
	(void)info;
	xferk_close(l.x);
	T_EXPECT(sessions_gone(t_scaled_ms(20000)) == 0,
		 "the session outlived its last user");
}

int main(void)
{
	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	atexit(restore);
	if (t_param("session_idle_ms") < 0) {
		fprintf(stderr, "no parameter session_idle_ms\n");
		return T_FAIL;
	}
	T_EXPECT(t_param_scoped("session_idle_ms", 300) == 0 &&
		 t_param_scoped("keepalive_ms", 100) == 0,
		 "session_idle_ms, keepalive_ms");
	idle_after_close();
	used_stays_up();
	restore();
	return t_result();
}
