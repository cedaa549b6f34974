// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions over IPv6. With xferk loaded with listen_addr=:: (reloaded by
 * this test) while net.ipv6.bindv6only is 1, a CONNECT to an IPv6 address
 * of rxe0's network device (fd99::1/64 on dummy0, which this test adds and
 * removes) comes up, and a WRITE and a READ through a remote handle
 * imported over it move every byte; debugfs peers shows both ends of the
 * session up with that address. The same listener takes IPv4 peers (a
 * WRITE and a READ over 10.99.0.1). With the defaults back (0.0.0.0: IPv4
 * only, rdma_cm's rule), a CONNECT to the IPv6 address is refused:
 * ECONNREFUSED, as documented.
 *
 * Regression: the listener on "::" followed bindv6only, and with it at 1
 * refused every IPv4 peer.
 */
#include "test.h"

#define ADDR	"fd99::1"
#define LEN	(1 << 20)
#define SLACK	4096	/* see RXE_MAP_SLACK in two_process.c */
#define BINDV6ONLY	"/proc/sys/net/ipv6/bindv6only"

static void cleanup(void)
{
	int ret = system("ip addr del " ADDR "/64 dev dummy0 2>/dev/null");

	(void)ret;
}

/* A WRITE and a READ back over a session to @peer; false on any failure. */
static bool round_trip(const char *peer, uint64_t seed)
{
	struct t_loop l = { .src = t_map(LEN), .dst = t_map(LEN + SLACK),
			    .src_len = LEN, .dst_len = LEN + SLACK };
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	int w, r;

	setenv("XFERK_TEST_PEER", peer, 1);
	if (t_loop_connect(&l)) {
		T_EXPECT(0, "%s: setup", peer);
		if (l.x)
			xferk_close(l.x);
		return false;
	}
	f = (struct xferk_frag) { .mr = l.src_mr, .len = LEN, .remote = l.remote,
				  .opcode = XFERK_OP_WRITE };
	t_fill(l.src, LEN, seed);
	w = t_run(l.x, &f, 1, &s);
	T_EXPECT(w == XFERK_STATE_SUCCEEDED && t_check(l.dst, LEN, seed) < 0,
		 "WRITE to %s: %d", peer, w);
	f.opcode = XFERK_OP_READ;
	memset(l.src, 0, LEN);
	r = t_run(l.x, &f, 1, &s);
	T_EXPECT(r == XFERK_STATE_SUCCEEDED && t_check(l.src, LEN, seed) < 0,
		 "READ from %s: %d", peer, r);
	xferk_close(l.x);
	return w == XFERK_STATE_SUCCEEDED && r == XFERK_STATE_SUCCEEDED;
}

int main(void)
{
	long long bindv6only;
	struct xferk *x;
	uint64_t conn;
	char val[32];
	int ret;

	if (!getenv("XFERK_MODDIR") || access("/dev/xferk", F_OK))
		return T_SKIP;
	atexit(cleanup);
	/* nodad: the address is usable at once, not after duplicate detection. */
	if (system("ip addr add " ADDR "/64 dev dummy0 nodad")) {
		T_EXPECT(0, "adding " ADDR " to dummy0");
		return T_FAIL;
	}
	/* The listener is bound at load: the sysctl is back right after. */
	bindv6only = t_read_number(BINDV6ONLY);
	ret = t_sh("rmmod xferk") ||
	      t_write_file(BINDV6ONLY, "1") ||
	      t_load_module("listen_addr=::");
	if (bindv6only >= 0) {
		snprintf(val, sizeof(val), "%lld", bindv6only);
		t_write_file(BINDV6ONLY, val);
	}
	if (ret) {
		T_EXPECT(0, "cannot reload xferk with listen_addr=::");
		t_load_module("");
		return T_FAIL;
	}
	round_trip(ADDR, 6);
	T_EXPECT(t_peers_matching(" up ", "[" ADDR "]:") == 2,
		 "%d session ends up with [" ADDR "], not 2",
		 t_peers_matching(" up ", "[" ADDR "]:"));
	round_trip("10.99.0.1", 7);

	T_EXPECT(t_sh("rmmod xferk") == 0 && t_load_module("") == 0,
		 "reload with defaults");
	ret = xferk_open(&x);
	if (!ret) {
		T_EXPECT_ERR(xferk_connect(x, ADDR, 0, t_connect_ms(), &conn),
			     ECONNREFUSED);
		xferk_close(x);
	}
	T_EXPECT(ret == 0, "open: %s", strerror(-ret));
	return t_result();
}
