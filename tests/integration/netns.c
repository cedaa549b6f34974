// SPDX-License-Identifier: GPL-2.0
/*
 * Connections live in the network namespace of the process that connects,
 * and are shared only within it. The parent (initial namespace) connects
 * to 10.99.0.1. A child in a new network namespace (only lo, up) connects
 * to the same address: there is no route from there, so the connect fails
 * (EHOSTUNREACH, or ETIMEDOUT) instead of handing out the parent's
 * connection. That holds both for a /dev/xferk the child opens in its
 * namespace and for the parent's open file it inherited: what counts is
 * the caller's namespace at connect time. The failures count no
 * connection as up. Skips if the kernel does not let us unshare.
 */
#define _GNU_SOURCE
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* Brings lo up in the current namespace; 0 or -1. */
static int lo_up(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), ret = -1;

	if (fd < 0)
		return -1;
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		ret = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
	return ret;
}

static void expect_unreachable(int ret, const char *which)
{
	T_EXPECT(ret == -EHOSTUNREACH || ret == -ETIMEDOUT,
		 "%s: connect from another namespace: %d (%s)", which, ret,
		 ret ? strerror(-ret) : "got a connection");
}

/* In a new network namespace: nothing reaches 10.99.0.1. */
static int child(struct xferk *inherited)
{
	struct xferk *x;
	uint64_t conn;

	if (unshare(CLONE_NEWNET)) {
		fprintf(stderr, "unshare(CLONE_NEWNET): %s\n", strerror(errno));
		return errno == EPERM || errno == EINVAL ? T_SKIP : T_FAIL;
	}
	T_EXPECT(lo_up() == 0, "lo up: %s", strerror(errno));
	if (xferk_open(&x)) {
		fprintf(stderr, "open /dev/xferk in the new namespace failed\n");
		return T_FAIL;
	}
	expect_unreachable(xferk_connect(x, t_peer(), 0, 3000, &conn), "own file");
	expect_unreachable(xferk_connect(inherited, t_peer(), 0, 3000, &conn),
			   "inherited file");
	xferk_close(x);
	return t_result();
}

int main(void)
{
	long long before, after;
	struct xferk *x;
	int i, ret, status;
	uint64_t conn;
	pid_t pid;

	if (xferk_open(&x))
		return T_SKIP;
	ret = xferk_connect(x, t_peer(), 0, t_debug_kernel() ? 60000 : 10000,
			    &conn);
	T_EXPECT(ret == 0, "connect in the initial namespace: %s", strerror(-ret));

	/*
	 * The accepting end of a new loopback connection comes up on its own
	 * ESTABLISHED event: wait until no passive end is still connecting,
	 * so that the count below is not raised by it.
	 */
	for (i = 0; i < 400 && t_peers_matching("passive", " connecting ") > 0; i++)
		usleep(50000);
	before = t_stat("peers_connected");

	pid = fork();
	if (pid < 0) {
		perror("fork");
		return T_FAIL;
	}
	if (pid == 0)
		_exit(child(x));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		T_EXPECT(0, "child: status %#x", status);
	} else if (WEXITSTATUS(status) == T_SKIP) {
		xferk_close(x);
		return t_failures ? T_FAIL : T_SKIP;
	} else {
		T_EXPECT(WEXITSTATUS(status) == T_PASS, "child failed (%d)",
			 WEXITSTATUS(status));
	}

	/* Unrelated connections may go down meanwhile, none may come up. */
	after = t_stat("peers_connected");
	T_EXPECT(after >= 0 && after <= before, "peers_connected %lld, was %lld",
		 after, before);

	/* The parent's connection still serves the parent. */
	ret = xferk_connect(x, t_peer(), 0, t_debug_kernel() ? 60000 : 10000,
			    &conn);
	T_EXPECT(ret == 0, "connect again in the initial namespace: %s",
		 strerror(-ret));
	xferk_close(x);
	return t_result();
}
