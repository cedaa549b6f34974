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
 * only the teardown of its connection can end that work request: after
 * its drain (every completion the device made handled) and
 * flush_timeout_ms, 200 ms here, the wait for that one alone.
 *
 * A region that outlives the device (another file keeps it registered)
 * was DMA-mapped for it by its first post: the device's removal unmaps it,
 * and after the device is back the same region is mapped for the new one
 * and moves the right bytes.
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

/* A write of @len bytes seeded @seed from @l's source to its remote range. */
static int kept_write(struct t_loop *l, size_t len, uint64_t seed)
{
	struct xferk_frag f = { .mr = l->src_mr, .len = len,
				.remote = l->remote, .opcode = XFERK_OP_WRITE };
	struct xferk_op_snapshot s;

	t_fill(l->src, len, seed);
	memset(l->dst, 0, len);
	return t_run(l->x, &f, 1, &s) == XFERK_STATE_SUCCEEDED &&
	       t_check(l->dst, len, seed) < 0 ? 0 : -EIO;
}

int main(void)
{
	const uint32_t rw = XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE;
	uint64_t conn, mr_src, remote, op, exp;
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	struct t_counters base;
	struct xferk_frag f;
	struct t_loop kept;
	struct xferk *x;
	uint8_t *src, *dst;
	int ret;

	if (xferk_open(&x))
		return T_SKIP;
	atexit(restore);
	t_settle(&base);
	t_loop_open(&kept, 1 << 20, (1 << 20) + SLACK);
	T_EXPECT(kept_write(&kept, 1 << 20, 5) == 0, "kept region: first write");
	src = t_map(LEN);
	dst = t_map(LEN + SLACK);
	if (setup(x, src, dst, &conn, &mr_src, &remote))
		return T_FAIL;
	f = (struct xferk_frag) { .mr = mr_src, .len = LEN, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_param_scoped("flush_timeout_ms", 200) == 0,
		 "flush_timeout_ms");
	T_EXPECT(t_swallow(1) == 0, "fault knob");
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
	/* The kept file's two regions stay pinned. */
	base.pinned_pages += 2 * (1 << 20) / 4096 + 1;
	T_EXPECT(t_stat_wait("pinned_pages", base.pinned_pages, t_scaled_ms(10000)) ==
		 base.pinned_pages, "pinned_pages %lld, expected %lld",
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

	/* The kept regions, over a new connection on the new device. */
	ret = xferk_connect(kept.x, t_peer(), 0, t_connect_ms(), &kept.conn);
	if (!ret)
		ret = xferk_export(kept.x, kept.conn, kept.dst_mr, 0,
				   kept.dst_len, rw, &tok, &exp);
	if (!ret)
		ret = xferk_import(kept.x, kept.conn, &tok, &kept.remote);
	T_EXPECT(ret == 0, "kept region: reconnect: %s", strerror(-ret));
	T_EXPECT(!ret && kept_write(&kept, 1 << 20, 6) == 0,
		 "kept region: write after re-add");
	xferk_close(kept.x);
	return t_result();
}
