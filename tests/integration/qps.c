// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions of several QPs (xferk_ioc_connect.nr_qps): a new session to the
 * loopback peer with 4 RC QPs per path.
 *
 *  - bad counts fail with EINVAL and make nothing: more than
 *    XFERK_MAX_QPS, any for the null peer;
 *  - the accepting end grants at most max_peer_qps (3 asked 4);
 *  - the session has 4 QPs on both ends (conn query, debugfs), every one
 *    of them joins the path; a second CONNECT asking for 1 shares it as
 *    it is;
 *  - a striped WRITE and READ put work requests on every QP of the end
 *    that posts them, every byte is right;
 *  - a QP that joined the path dies (fault qp_error on the post that goes
 *    to it, steered there by the QPs' turns): the path dies with it, its
 *    work request is posted again on the session's next path, which has
 *    its 4 QPs again, and the op succeeds with every byte.
 */
#include <sys/ioctl.h>

#include "test.h"

#define NR_QPS	4
#define RW	(XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE)
#define SLACK	4096	/* see RXE_MAP_SLACK in two_process.c */

/* An end's row of the peers table: its QP counts and posts per QP. */
struct lanes {
	unsigned int qps, live;
	unsigned long long posts[XFERK_MAX_QPS];
};

/*
 * The up session's row on @side ("active" or "passive") of the peers
 * table; 0, or -1 if there is none.
 */
static int lanes_read(const char *side, struct lanes *l)
{
	FILE *f = fopen("/sys/kernel/debug/xferk/peers", "r");
	char line[512], *tok, *save, *p;
	int found = -1, i;

	if (!f)
		return -1;
	while (found && fgets(line, sizeof(line), f)) {
		char *fields[32];
		int n = 0;

		for (tok = strtok_r(line, " \n", &save); tok && n < 32;
		     tok = strtok_r(NULL, " \n", &save))
			fields[n++] = tok;
		if (n < 21 || strcmp(fields[1], "rdma") ||
		    strcmp(fields[2], side) || strcmp(fields[3], "up"))
			continue;
		memset(l, 0, sizeof(*l));
		l->qps = strtoul(fields[18], NULL, 10);
		l->live = strtoul(fields[19], NULL, 10);
		p = fields[20];
		for (i = 0; i < XFERK_MAX_QPS && *p; i++) {
			l->posts[i] = strtoull(p, &p, 10);
			if (*p == ',')
				p++;
		}
		found = 0;
	}
	fclose(f);
	return found;
}

/* Both ends have all @n QPs of a path up (30 s scaled); 0 or -1. */
static int lanes_up_n(unsigned int n)
{
	uint64_t until = t_now_ms() + t_scaled_ms(30000);
	struct lanes a, p;

	while (lanes_read("active", &a) || lanes_read("passive", &p) ||
	       a.qps != n || p.qps != n || a.live != n || p.live != n) {
		if (t_now_ms() > until)
			return -1;
		usleep(20000);
	}
	return 0;
}

static int lanes_up(void)
{
	return lanes_up_n(NR_QPS);
}

static void bad_counts(struct xferk *x)
{
	struct xferk_ioc_connect a = {
		.size = sizeof(a),
		.flags = XFERK_CONNECT_NULL_PEER,
		.nr_qps = 2,
	};
	uint64_t conn;

	T_EXPECT_ERR(xferk_connect_qps(x, t_peer(), 0, t_connect_ms(),
				       XFERK_MAX_QPS + 1, &conn), EINVAL);
	T_EXPECT_ERR(ioctl(xferk_fd(x), XFERK_IOC_CONNECT, &a) ? -errno : 0,
		     EINVAL);
	a.nr_qps = 0;
	a.reserved0 = 1;
	T_EXPECT_ERR(ioctl(xferk_fd(x), XFERK_IOC_CONNECT, &a) ? -errno : 0,
		     EINVAL);
}

/* Work requests posted on all QPs of @l. */
static unsigned long long lanes_total(const struct lanes *l)
{
	unsigned long long n = 0;
	int i;

	for (i = 0; i < XFERK_MAX_QPS; i++)
		n += l->posts[i];
	return n;
}

/*
 * Both ends' rows. On loopback the end that posts a remote handle's work
 * requests is the one whose peer exported it: not necessarily the one
 * CONNECT returned.
 */
struct ends {
	struct lanes e[2];
};

static const char *const side[2] = { "active", "passive" };

static int ends_read(struct ends *e)
{
	return lanes_read(side[0], &e->e[0]) || lanes_read(side[1], &e->e[1]);
}

/* The end that posted since @before (the one whose posts grew), or -1. */
static int posting_end(const struct ends *before, const struct ends *after)
{
	int i;

	for (i = 0; i < 2; i++)
		if (lanes_total(&after->e[i]) > lanes_total(&before->e[i]))
			return i;
	return -1;
}

/* Every QP of the end that posts took work requests since @before. */
static int every_lane_posted(const struct ends *before, const char *what)
{
	struct ends after;
	int i, end;

	if (ends_read(&after)) {
		T_EXPECT(0, "%s: no rows", what);
		return -1;
	}
	end = posting_end(before, &after);
	T_EXPECT(end >= 0, "%s: no end posted", what);
	if (end < 0)
		return -1;
	for (i = 0; i < NR_QPS; i++)
		T_EXPECT(after.e[end].posts[i] > before->e[end].posts[i],
			 "%s: %s QP %d took no work request (%llu)", what,
			 side[end], i, after.e[end].posts[i]);
	return end;
}

/*
 * One op of @len bytes at offset 0: it must succeed, and every QP of the
 * end that posts took work requests. That end's index, or -1.
 */
static int striped(struct xferk *x, uint64_t mr, uint64_t remote,
		   uint64_t len, uint8_t opcode)
{
	struct xferk_frag f = { .mr = mr, .len = len, .remote = remote,
				.opcode = opcode };
	const char *what = opcode == XFERK_OP_WRITE ? "write" : "read";
	struct xferk_op_snapshot s = { 0 };
	struct ends before;

	if (ends_read(&before)) {
		T_EXPECT(0, "%s: no rows", what);
		return -1;
	}
	T_EXPECT(t_run(x, &f, 1, &s) == XFERK_STATE_SUCCEEDED, "%s: %s", what,
		 xferk_state_name(s.state));
	return every_lane_posted(&before, what);
}

/* The one QP that took the one work request posted from @b to @a, or -1. */
static int lane_taken(const struct lanes *b, const struct lanes *a)
{
	int i, lane = -1;

	for (i = 0; i < NR_QPS; i++) {
		if (a->posts[i] == b->posts[i])
			continue;
		if (lane >= 0 || a->posts[i] != b->posts[i] + 1)
			return -1;
		lane = i;
	}
	return lane;
}

/* One 4 KiB WRITE at @slot of the buffers; its final state. */
static int write_4k(struct xferk *x, uint64_t src_mr, uint64_t remote,
		    uint8_t *src, uint8_t *dst, unsigned int slot)
{
	struct xferk_frag f = { .mr = src_mr, .len = 4096, .remote = remote,
				.opcode = XFERK_OP_WRITE };
	struct xferk_op_snapshot s;
	int ret;

	f.remote_offset = f.offset = 4096ULL * slot;
	t_fill(src + f.offset, 4096, 100 + slot);
	ret = t_run(x, &f, 1, &s);
	if (t_check(dst + f.remote_offset, 4096, 100 + slot) >= 0)
		return -EIO;
	return ret;
}

/*
 * A QP that joined the path dies: fault qp_error kills the post of a 4 KiB
 * WRITE that goes to one, and the op must succeed on the next path. On an
 * idle path with every QP up the QPs take turns: plain WRITEs show where
 * the turn is (the QP each one went to), until the next turn is not the
 * path's first QP.
 */
static void joined_lane_dies(struct xferk *x, uint64_t conn, uint64_t src_mr,
			     uint64_t remote, uint8_t *src, uint8_t *dst,
			     int end)
{
	struct xferk_conn_info before, after;
	long long reposted = t_stat("chunks_reposted");
	struct lanes l0, l1;
	unsigned int slot = 0;
	int lane = NR_QPS - 1, ret;

	T_EXPECT(t_param_scoped("reconnect_ms", 600000) == 0, "reconnect_ms");
	while (lane == NR_QPS - 1 && slot < 3) {
		if (lanes_up() || t_quiet() || lanes_read(side[end], &l0)) {
			T_EXPECT(0, "path not up");
			return;
		}
		T_EXPECT(write_4k(x, src_mr, remote, src, dst, slot) ==
			 XFERK_STATE_SUCCEEDED, "write %u", slot);
		slot++;
		if (lanes_read(side[end], &l1))
			return;
		lane = lane_taken(&l0, &l1);
		T_EXPECT(lane >= 0, "write %u: no one QP took it", slot);
		if (lane < 0)
			return;
	}
	T_EXPECT(lane != NR_QPS - 1, "the turn stays at the first QP");
	if (lanes_up() || t_quiet() || lanes_read(side[end], &l0) ||
	    xferk_conn_query(x, conn, &before))
		return;
	t_fault_set("qp_error", 1);
	ret = write_4k(x, src_mr, remote, src, dst, slot);
	t_fault_set("qp_error", 0);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "write on a dying QP: %d", ret);
	T_EXPECT(lanes_up() == 0, "the next path has not its %d QPs", NR_QPS);
	T_EXPECT(lanes_read(side[end], &l1) == 0 &&
		 l1.posts[lane + 1] > l0.posts[lane + 1],
		 "QP %d took no work request", lane + 1);
	T_EXPECT(xferk_conn_query(x, conn, &after) == 0 &&
		 after.path_deaths == before.path_deaths + 1 &&
		 after.reconnects == before.reconnects + 1 &&
		 after.nr_qps == NR_QPS,
		 "path_deaths %llu, reconnects %llu, nr_qps %u",
		 (unsigned long long)after.path_deaths,
		 (unsigned long long)after.reconnects, after.nr_qps);
	T_EXPECT(t_stat("chunks_reposted") > reposted, "not posted again");
	t_restore_params();
}

int main(void)
{
	const uint64_t len = t_debug_kernel() ? 4 << 20 : 32 << 20;
	uint64_t conn, conn2, src_mr, dst_mr, remote, exp;
	struct xferk_conn_info info;
	struct xferk_token tok;
	struct xferk *x, *x2;
	uint8_t *src, *dst;
	int ret, end;

	if (xferk_open(&x))
		return T_SKIP;
	if (!(xferk_features(x) & XFERK_FEAT_QPS))
		return T_SKIP;
	bad_counts(x);
	T_EXPECT(t_end_session() == 0, "ending the session");

	/* The accepting end grants at most max_peer_qps. */
	T_EXPECT(t_param_scoped("max_peer_qps", 3) == 0, "max_peer_qps");
	T_EXPECT(xferk_connect_qps(x, t_peer(), 0, t_connect_ms(), NR_QPS,
				   &conn) == 0 &&
		 xferk_conn_query(x, conn, &info) == 0 && info.nr_qps == 3,
		 "granted: nr_qps %u", info.nr_qps);
	T_EXPECT(lanes_up_n(3) == 0, "not every granted QP joined the path");
	xferk_disconnect(x, conn);
	/* Which also restores max_peer_qps (t_restore_params()). */
	T_EXPECT(t_end_session() == 0, "ending the session");

	src = t_map(len);
	dst = t_map(len + SLACK);
	ret = xferk_connect_qps(x, t_peer(), 0, t_connect_ms(), NR_QPS, &conn);
	if (!ret)
		ret = xferk_mr_reg(x, src, len, XFERK_ACCESS_LOCAL_SRC |
				   XFERK_ACCESS_LOCAL_DST, &src_mr);
	if (!ret)
		ret = xferk_mr_reg(x, dst, len + SLACK, RW, &dst_mr);
	if (!ret)
		ret = xferk_export(x, conn, dst_mr, 0, len + SLACK, RW, &tok,
				   &exp);
	if (!ret)
		ret = xferk_import(x, conn, &tok, &remote);
	if (ret) {
		T_EXPECT(0, "setup: %s", strerror(-ret));
		return t_result();
	}
	T_EXPECT(xferk_conn_query(x, conn, &info) == 0 &&
		 info.nr_qps == NR_QPS, "nr_qps %u", info.nr_qps);
	T_EXPECT(lanes_up() == 0, "not every QP joined the path");

	/* Another file asking for one QP shares the session as it is. */
	T_EXPECT(xferk_open(&x2) == 0 &&
		 xferk_connect_qps(x2, t_peer(), 0, t_connect_ms(), 1,
				   &conn2) == 0 &&
		 xferk_conn_query(x2, conn2, &info) == 0 &&
		 info.nr_qps == NR_QPS, "shared: nr_qps %u", info.nr_qps);
	xferk_close(x2);

	/* Striped over the QPs, both directions, every byte. */
	t_fill(src, len, 1);
	end = striped(x, src_mr, remote, len, XFERK_OP_WRITE);
	T_EXPECT(t_check(dst, len, 1) < 0, "written bytes");
	t_fill(dst, len, 2);
	T_EXPECT(striped(x, src_mr, remote, len, XFERK_OP_READ) == end,
		 "read: other end");
	T_EXPECT(t_check(src, len, 2) < 0, "read bytes");

	if (end >= 0)
		joined_lane_dies(x, conn, src_mr, remote, src, dst, end);

	xferk_close(x);
	return t_result();
}
