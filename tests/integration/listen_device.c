// SPDX-License-Identifier: GPL-2.0
/*
 * A listener bound to one address lives on that address's RDMA device.
 * With xferk loaded with listen_addr=10.99.0.1, deleting the device must
 * not wait for xferk (it lets go of its listener), and once the device is
 * back xferk listens again by itself. The module is reloaded with its
 * defaults afterwards.
 *
 * Regression: the listener ignored the removal of its device, and rdma_cm
 * waited for it: `rdma link delete` hung until xferk was unloaded.
 */
#include <signal.h>
#include <sys/wait.h>

#include "test.h"

/*
 * Connects to the listener, trying again every 500 ms until @ms have
 * passed; each attempt may take 10 s (30 s on the debug kernel). 0 or an
 * errno.
 */
static int connect_within(unsigned int ms)
{
	unsigned int attempt_ms = t_debug_kernel() ? 30000 : 10000;
	uint64_t until = t_now_ms() + ms;
	int ret;

	for (;;) {
		struct xferk *x;
		uint64_t conn;

		ret = xferk_open(&x);
		if (!ret) {
			ret = xferk_connect(x, "10.99.0.1", 0, attempt_ms, &conn);
			xferk_close(x);
		}
		if (!ret || t_now_ms() > until)
			return ret;
		usleep(500000);
	}
}

int main(void)
{
	const char *dir = getenv("XFERK_MODDIR");
	unsigned int hang_ms = t_scaled_ms(30000);
	int status, ret, done;
	uint64_t until;
	pid_t pid;

	if (!dir || access("/dev/xferk", F_OK))
		return T_SKIP;
	if (t_sh("rmmod xferk") || t_load_module("listen_addr=10.99.0.1")) {
		fprintf(stderr, "cannot reload xferk\n");
		t_load_module("");
		return T_FAIL;
	}
	ret = connect_within(t_scaled_ms(10000));
	T_EXPECT(ret == 0, "connect to the bound listener: %s", strerror(-ret));

	pid = fork();
	if (pid == 0)
		exit(t_sh("rdma link delete rxe0"));
	/* It takes a moment, not until xferk goes. */
	until = t_now_ms() + hang_ms;
	for (;;) {
		done = waitpid(pid, &status, WNOHANG) == pid;
		if (done || t_now_ms() > until)
			break;
		usleep(100000);
	}
	T_EXPECT(done, "rdma link delete hangs on xferk's listener (%u ms)",
		 hang_ms);
	if (!done) {
		/* Unloading lets go of the listener, and the delete ends. */
		t_sh("rmmod xferk");
		waitpid(pid, &status, 0);
		t_sh("rdma link add rxe0 type rxe netdev dummy0");
		t_load_module("");
		return T_FAIL;
	}
	T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "rdma link delete: status %#x", status);
	T_EXPECT(t_sh("rdma link add rxe0 type rxe netdev dummy0") == 0,
		 "device back");
	ret = connect_within(t_scaled_ms(20000));
	T_EXPECT(ret == 0, "listening again once the device is back: %s",
		 strerror(-ret));

	T_EXPECT(t_sh("rmmod xferk") == 0 && t_load_module("") == 0,
		 "reload with defaults");
	return t_result();
}
