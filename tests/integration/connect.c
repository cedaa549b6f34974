// SPDX-License-Identifier: GPL-2.0
/*
 * Connections: shared host-wide (a second process gets the same one), the
 * handshake's version check (forced through debugfs), an unreachable
 * address, an unsupported family. Errors are specific and leave no
 * connection behind.
 *
 * Connections of earlier tests may go down meanwhile (host-wide counters
 * may drop), so sharing is judged on debugfs xferk/peers: the second
 * process must not add an end while the one it could share stays up.
 */
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define FAULT_VERSION	"/sys/kernel/debug/xferk/fault/connect_version"
#define MAX_ENDS	64

/* An RDMA connection end in debugfs xferk/peers. */
struct end {
	unsigned int id;
	int active;
	int usable;	/* up, and its QP alive */
};

/* The RDMA ends whose peer is host @ip (any port); their number, or -1. */
static int ends_to(const char *ip, struct end *e)
{
	char line[512], transport[16], side[16], state[16], peer[64];
	size_t len = strlen(ip);
	unsigned int id;
	int n = 0, dead;
	FILE *f = fopen("/sys/kernel/debug/xferk/peers", "r");

	if (!f)
		return -1;
	while (n < MAX_ENDS && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%u %15s %15s %15s %63s %*u %*u %*d %d", &id,
			   transport, side, state, peer, &dead) != 6 ||
		    strcmp(transport, "rdma") || strncmp(peer, ip, len) ||
		    peer[len] != ':')
			continue;
		e[n].id = id;
		e[n].active = !strcmp(side, "active");
		e[n].usable = !strcmp(state, "up") && !dead;
		n++;
	}
	fclose(f);
	return n;
}

static const struct end *find_end(const struct end *e, int n, unsigned int id)
{
	int i;

	for (i = 0; i < n; i++)
		if (e[i].id == id)
			return &e[i];
	return NULL;
}

/*
 * The second process: connects to the peer the parent is connected to.
 * Exits 0 if it got a connection that was up already (or the ends changed
 * for another reason meanwhile), 2 if it made a new one while an end it
 * could have shared stayed up, 1 if it could not connect.
 */
static int second_process(void)
{
	struct end a[MAX_ENDS], b[MAX_ENDS];
	const struct end *e;
	int na, nb, i, created = 0, changed = 0;
	struct xferk *y;
	uint64_t c;

	na = ends_to(t_peer(), a);
	if (xferk_open(&y) || xferk_connect(y, t_peer(), 0, t_connect_ms(), &c))
		return 1;
	nb = ends_to(t_peer(), b);
	if (na < 0 || nb < 0)
		return 1;
	/* An end that was not up, or went down: nothing to judge by. */
	for (i = 0; i < na; i++) {
		e = find_end(b, nb, a[i].id);
		changed |= !a[i].usable || !e || !e->usable;
	}
	for (i = 0; i < nb; i++) {
		e = find_end(a, na, b[i].id);
		changed |= !b[i].usable;
		created |= !e && b[i].active;
	}
	if (created && !changed) {
		fprintf(stderr, "second process: a new connection to %s\n",
			t_peer());
		return 2;
	}
	if (changed)
		fprintf(stderr, "note: connections to %s changed meanwhile\n",
			t_peer());
	return 0;
}

int main(void)
{
	struct xferk_ioc_connect raw = { .size = sizeof(raw) };
	struct end ends[MAX_ENDS];
	long long peers;
	struct xferk *x;
	uint64_t conn, until;
	pid_t pid;
	int i, n, ret, status;

	if (xferk_open(&x))
		return T_SKIP;
	ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn);
	T_EXPECT(ret == 0, "connect: %s", strerror(-ret));
	/* The accepting end comes up on its own ESTABLISHED event: give it time. */
	until = t_now_ms() + t_scaled_ms(5000);
	while (t_stat("peers_connected") < 2 && t_now_ms() < until)
		usleep(50000);
	peers = t_stat("peers_connected");
	T_EXPECT(peers >= 2, "peers_connected %lld (both ends of loopback)", peers);
	until = t_now_ms() + t_scaled_ms(5000);
	while (t_peers_matching("passive", " connecting ") > 0 && t_now_ms() < until)
		usleep(50000);

	/* Another process connecting to the same peer shares the connection. */
	pid = fork();
	if (pid == 0)
		_exit(second_process());
	waitpid(pid, &status, 0);
	T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "second process: status %d", WEXITSTATUS(status));

	/* A peer that refuses our protocol version: a clear errno. */
	T_EXPECT(t_write_file(FAULT_VERSION, "99") == 0, "set fault: %s",
		 strerror(errno));
	peers = t_stat("peers_connected");
	ret = xferk_connect(x, "10.99.0.2", 0, t_connect_ms(), &conn);
	T_EXPECT_ERR(ret, EPROTONOSUPPORT);
	T_EXPECT(t_write_file(FAULT_VERSION, "0") == 0, "clear fault");
	/* Others may go down meanwhile; none may come up, none to .2 is up. */
	T_EXPECT(t_stat("peers_connected") <= peers, "refused connection counted");
	n = ends_to("10.99.0.2", ends);
	for (i = 0; i < n; i++)
		T_EXPECT(!ends[i].usable, "connection %u to 10.99.0.2 up after a refusal",
			 ends[i].id);

	/* The same address works once the versions agree. */
	ret = xferk_connect(x, "10.99.0.2", 0, t_connect_ms(), &conn);
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
