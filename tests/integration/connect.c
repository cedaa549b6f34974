// SPDX-License-Identifier: GPL-2.0
/*
 * Connections: shared host-wide (a second process gets the same one), the
 * handshake's version check (forced through debugfs), an unreachable
 * address, an unsupported family. Errors are specific and leave no
 * connection behind.
 */
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define FAULT_VERSION	"/sys/kernel/debug/xferk/fault/connect_version"

int main(void)
{
	struct xferk_ioc_connect raw = { .size = sizeof(raw) };
	long long peers;
	struct xferk *x;
	uint64_t conn;
	pid_t pid;
	int i, ret, status;

	if (xferk_open(&x))
		return T_SKIP;
	ret = xferk_connect(x, t_peer(), 0, 10000, &conn);
	T_EXPECT(ret == 0, "connect: %s", strerror(-ret));
	/* The accepting end comes up on its own ESTABLISHED event: give it time. */
	for (i = 0; i < 100 && t_stat("peers_connected") < 2; i++)
		usleep(50000);
	peers = t_stat("peers_connected");
	T_EXPECT(peers >= 2, "peers_connected %lld (both ends of loopback)", peers);

	/* Another process connecting to the same peer shares the connection. */
	pid = fork();
	if (pid == 0) {
		struct xferk *y;
		uint64_t c;

		if (xferk_open(&y) || xferk_connect(y, t_peer(), 0, 10000, &c))
			_exit(1);
		_exit(t_stat("peers_connected") == peers ? 0 : 2);
	}
	waitpid(pid, &status, 0);
	T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "second process: status %d", WEXITSTATUS(status));

	/* A peer that refuses our protocol version: a clear errno. */
	T_EXPECT(t_write_file(FAULT_VERSION, "99") == 0, "set fault: %s",
		 strerror(errno));
	ret = xferk_connect(x, "10.99.0.2", 0, 10000, &conn);
	T_EXPECT_ERR(ret, EPROTONOSUPPORT);
	T_EXPECT(t_write_file(FAULT_VERSION, "0") == 0, "clear fault");
	T_EXPECT(t_stat("peers_connected") == peers, "refused connection counted");

	/* The same address works once the versions agree. */
	ret = xferk_connect(x, "10.99.0.2", 0, 10000, &conn);
	T_EXPECT(ret == 0, "connect .2: %s", strerror(-ret));
	T_EXPECT(xferk_disconnect(x, conn) == 0, "disconnect");

	/* Nobody at this address: resolution fails within the timeout. */
	ret = xferk_connect(x, "10.99.0.77", 0, 2000, &conn);
	T_EXPECT(ret == -EHOSTUNREACH || ret == -ETIMEDOUT || ret == -ENETUNREACH,
		 "unreachable: %d %s", ret, strerror(-ret));
	T_EXPECT_ERR(xferk_connect(x, "not-an-address", 0, 2000, &conn), EINVAL);
	raw.family = 99;
	T_EXPECT(ioctl(xferk_fd(x), XFERK_IOC_CONNECT, &raw) < 0 &&
		 errno == EAFNOSUPPORT, "family 99: %s", strerror(errno));
	raw.family = 2;
	raw.addr[5] = 1;	/* IPv4 with bytes past the address */
	T_EXPECT(ioctl(xferk_fd(x), XFERK_IOC_CONNECT, &raw) < 0 &&
		 errno == EINVAL, "stray IPv4 bytes: %s", strerror(errno));
	xferk_close(x);
	return t_result();
}
