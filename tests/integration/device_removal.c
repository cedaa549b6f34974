// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA device goes away under a transfer (rdma link delete): every
 * connection on it is torn down in order, the op in flight fails with a
 * connection errno once nothing can touch its pages, the pages are
 * unpinned, and after the device comes back new connections work.
 *
 * The op is surely in flight when the device goes: the completion of one
 * of its work requests is swallowed (fault knob swallow_completions, armed
 * while no other op is live on the host, so the op itself uses it), and
 * only the teardown of its connection can end that work request.
 */
#include <unistd.h>

#include "test.h"

#define LEN	(64UL << 20)
#define SLACK	4096	/* see RXE_MAP_SLACK in two_process.c */

static int sh(const char *cmd)
{
	int ret = system(cmd);

	T_EXPECT(ret == 0, "%s: %d", cmd, ret);
	return ret;
}

static int setup(struct xferk *x, uint8_t *src, uint8_t *dst, uint64_t *conn,
		 uint64_t *mr_src, uint64_t *remote)
{
	uint64_t mr_dst;

	return t_setup(x, src, LEN, dst, LEN + SLACK, conn, mr_src, &mr_dst, remote);
}

static void restore(void)
{
	t_fault_clear();
}

int main(void)
{
	uint64_t conn, mr_src, remote, op;
	struct xferk_op_snapshot s;
	struct t_counters base;
	struct xferk_frag f;
	struct xferk *x;
	uint8_t *src, *dst;
	int ret;

	if (xferk_open(&x))
		return T_SKIP;
	atexit(restore);
	t_settle(&base);
	src = t_map(LEN);
	dst = t_map(LEN + SLACK);
	if (setup(x, src, dst, &conn, &mr_src, &remote))
		return T_FAIL;
	f = (struct xferk_frag) { .mr = mr_src, .len = LEN, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_fault_set("swallow_completions", 1) == 0, "fault knob");
	ret = xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op);
	T_EXPECT(ret == 0, "submit: %s", strerror(-ret));
	/* One work request of the op completed on the device, unreported. */
	T_EXPECT(t_fault_taken("swallow_completions", t_scaled_ms(30000)) == 0 &&
		 xferk_query(x, op, &s) == 0 && s.state == XFERK_STATE_IN_PROGRESS,
		 "op not held in flight: %s", xferk_state_name(s.state));
	sh("rdma link delete rxe0");

	ret = xferk_wait(x, op, xferk_now_ns() + 120000000000ULL,
			 XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.physical_complete, "wait: %d", ret);
	T_EXPECT(s.state == XFERK_STATE_FAILED, "state %s",
		 xferk_state_name(s.state));
	T_EXPECT(s.first_error == -ENODEV || s.first_error == -ECANCELED ||
		 s.first_error == -ECONNRESET || s.first_error == -EREMOTEIO,
		 "first_error %d", s.first_error);
	T_EXPECT(s.transferred_bytes < LEN && s.in_flight_bytes == 0,
		 "transferred %llu in flight %llu",
		 (unsigned long long)s.transferred_bytes,
		 (unsigned long long)s.in_flight_bytes);
	restore();
	T_EXPECT(t_stat_wait("peers_connected", 0, t_scaled_ms(10000)) == 0,
		 "peers_connected %lld", t_stat("peers_connected"));
	xferk_close(x);
	T_EXPECT(t_stat_wait("pinned_pages", base.pinned_pages, t_scaled_ms(10000)) ==
		 base.pinned_pages, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), base.pinned_pages);

	/* The device comes back; so do connections. */
	if (sh("rdma link add rxe0 type rxe netdev dummy0"))
		return T_FAIL;
	T_EXPECT(xferk_open(&x) == 0, "reopen");
	ret = setup(x, src, dst, &conn, &mr_src, &remote);
	T_EXPECT(ret == 0, "setup after re-add: %d", ret);
	t_fill(src, 4096, 9);
	f = (struct xferk_frag) { .mr = mr_src, .len = 4096, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	ret = ret ? ret : t_run(x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(dst, 4096, 9) < 0,
		 "write after re-add: %d", ret);
	xferk_close(x);
	return t_result();
}
