// SPDX-License-Identifier: GPL-2.0
/*
 * One end of a two-host test (the scripts in tests/twohost run it in
 * either VM; the peer's address comes from XFERK_TEST_PEER). Tokens and
 * signals pass through files in the control share, /ctl/x/ in both VMs.
 *
 *   xfer export TOKEN LEN          the target (decode): connects to the
 *        peer, registers LEN bytes filled with pattern 1, exports them for
 *        READ and WRITE and writes the token to TOKEN; then waits for
 *        TOKEN.done and checks that its memory holds the pattern named
 *        there ("verify SEED"), or just holds the export ("hold").
 *   xfer roundtrip TOKEN LEN       the initiator (prefill): READs the
 *        target's LEN bytes and checks pattern 1; for sizes from 1 B to
 *        LEN, through ioctl and io_uring, WRITEs a pattern and READs it
 *        back; WRITEs pattern 2 over LEN and tells the target to verify.
 *   xfer bw TOKEN LEN COUNT        COUNT WRITEs of LEN bytes, one at a
 *        time, then pattern 2 verified by the target; prints MB/s.
 *   xfer flood TOKEN NOPS BYTES DEADLINE_MS DRAIN_MS
 *        NOPS WRITE ops of BYTES each, all in flight, deadline DEADLINE_MS
 *        from submission, cancel and drain DRAIN_MS at the deadline;
 *        creates TOKEN.flood once they are submitted (the ops write
 *        pattern 2 over the target's first NOPS * BYTES bytes). With
 *        XFERK_FLOOD_GATE=PATH set, creates TOKEN.ready once connected
 *        and submits only once PATH exists. Checks that every
 *        op settles by its deadline plus its drain budget (the kernel's
 *        own submit-to-physical time, not when this loop saw it), that no
 *        snapshot says buffer_reusable before physical completion, and
 *        that the host's counters go back to where they were. The harness
 *        creates TOKEN.killing just before it takes the peer down (the ops
 *        not settled then are counted) and TOKEN.killed once the peer is
 *        gone; then a new op on the old connection must not succeed. With
 *        XFERK_FLOOD_VERIFY=1 every op must succeed and the target
 *        verifies the data. With XFERK_FLOOD_STALE=PATH, once PATH exists
 *        (the peer is back as a new instance; waited for
 *        XFERK_FLOOD_BACK_MS, default 120 s) ops on the old import must
 *        fail with ESTALE (failure PATH) within 60 s: the session learns
 *        that the peer does not know it.
 *   xfer cross DIR                 both hosts at once: waits for DIR.go,
 *        connects to the peer, exports 4 KiB (pattern 3 on host a, 4 on
 *        b) and writes the token to DIR.HOST.tok, imports the peer's and
 *        READs and checks its pattern; then the host must have exactly one
 *        RDMA connection (debugfs peers): two hosts that connect to each
 *        other at the same moment keep one session.
 *   xfer quiesce-target DIR LEN ROUNDS   the seed-002 experiment's target:
 *        exports LEN bytes (DIR.big.tok) and 4 KiB whose export it revokes
 *        at once (DIR.small.tok: every write to it is refused); for each
 *        of the 2 * ROUNDS rounds, once DIR.rN.written exists, counts the
 *        8-byte words of the LEN bytes that hold the initiator's
 *        post-return pattern, writes the count to DIR.rN.count and clears.
 *   xfer quiesce DIR LEN ROUNDS    its initiator: each round a batch of a
 *        4 KiB WRITE the target refuses and a LEN WRITE; right after the
 *        call returns the source is overwritten with the post-return
 *        pattern. Alternating rounds: a naive wrapper (two ops, return at
 *        the first failure) and xferk_transfer_sync(). Prints the rounds in
 *        which the target saw post-return data; sync must have none and
 *        naive some (or the experiment could not see the bug).
 *   xfer hold TOKEN                imports the token, WRITEs 4 KiB, creates
 *        TOKEN.held and keeps the import; once TOKEN.back exists (the
 *        peer is back as a new instance), ops on the import must fail
 *        with ESTALE, as flood's with XFERK_FLOOD_STALE.
 *   xfer stale TOKEN               a token of a peer instance that is gone
 *        is refused on a new connection to the peer's new instance.
 *
 * With XFERK_XFER_DMABUF=1, export and roundtrip register vgem dma-bufs
 * (tests/integration/vgem.h) instead of anonymous memory: their data is
 * written and checked through the buffers' own CPU mappings.
 *
 * Prints "metric NAME VALUE" lines the harness collects.
 */
#include <liburing.h>
#include <xferk_uring.h>

#include "test.h"
#include "vgem.h"

/* See two_process.c: rxe reads past a 256-page-multiple MR's end. */
#define RXE_MAP_SLACK	4096
#define SETUP_WAIT_MS	120000

static void metric(const char *name, double value)
{
	printf("metric %s %.6g\n", name, value);
	fflush(stdout);
}

/* Waits until @path exists; 0, or -1 after @ms. */
static int wait_file(const char *path, unsigned int ms)
{
	uint64_t until = t_now_ms() + ms;

	while (access(path, F_OK)) {
		if (t_now_ms() > until)
			return -1;
		usleep(50000);
	}
	return 0;
}

/* Writes @text to @path atomically (the other VM polls for it). */
static void put_file(const char *path, const char *text)
{
	char tmp[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path)) {
		perror(path);
		exit(T_FAIL);
	}
}

static void put_suffixed(const char *token, const char *suffix,
			 const char *text)
{
	char path[512];

	snprintf(path, sizeof(path), "%s.%s", token, suffix);
	put_file(path, text);
}

/* Waits for the peer's token in @path. */
static int read_token(const char *path, struct xferk_token *tok)
{
	if (wait_file(path, SETUP_WAIT_MS)) {
		fprintf(stderr, "no token at %s\n", path);
		return -1;
	}
	return t_read_token(path, tok);
}

/* Writes @tok's hex form to @path for the peer. */
static void put_token(const char *path, const struct xferk_token *tok)
{
	char hex[XFERK_TOKEN_HEX_LEN + 2];

	xferk_token_format(tok, hex, sizeof(hex));
	strcat(hex, "\n");
	put_file(path, hex);
}

/*
 * @len bytes for a region with @access, registered: anonymous memory, or
 * with XFERK_XFER_DMABUF=1 a vgem dma-buf, whose CPU mapping is returned.
 * NULL (and *@err) if it could not be made.
 */
static uint8_t *buf_reg(struct xferk *x, uint64_t len, uint32_t access,
			uint64_t *mr, int *err)
{
	const char *dmabuf = getenv("XFERK_XFER_DMABUF");
	static int vgem = -1;
	struct t_vgem_buf b;
	uint8_t *mem;

	if (!dmabuf || strcmp(dmabuf, "1")) {
		mem = t_map(len);
		*err = xferk_mr_reg(x, mem, len, access, mr);
		return *err ? NULL : mem;
	}
	if (vgem < 0)
		vgem = t_vgem_open();
	if (vgem < 0 || t_vgem_create(vgem, len, 0, &b)) {
		fprintf(stderr, "vgem buffer of %llu bytes: %s\n",
			(unsigned long long)len, strerror(errno));
		*err = -ENODEV;
		return NULL;
	}
	*err = xferk_mr_reg_dmabuf(x, b.fd, 0, len, access, mr);
	return *err ? NULL : b.map;
}

static int cmd_export(const char *token, uint64_t len)
{
	char path[512], what[64] = "";
	uint32_t acc = XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE;
	unsigned int seed;
	struct xferk_token tok;
	uint64_t conn, mr, exp;
	struct xferk *x;
	uint8_t *buf;
	long bad;
	FILE *f;
	int ret;

	ret = xferk_open(&x);
	if (ret)
		return T_SKIP;
	ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn);
	if (!ret) {
		buf = buf_reg(x, len + RXE_MAP_SLACK, acc, &mr, &ret);
		if (buf)
			t_fill(buf, len, 1);
	}
	if (!ret)
		ret = xferk_export(x, conn, mr, 0, len + RXE_MAP_SLACK, acc,
				   &tok, &exp);
	if (ret) {
		fprintf(stderr, "export: setup: %s\n", strerror(-ret));
		return T_FAIL;
	}
	put_token(token, &tok);
	printf("export: %llu bytes exported to %s, token in %s\n",
	       (unsigned long long)len, t_peer(), token);
	fflush(stdout);

	snprintf(path, sizeof(path), "%s.done", token);
	if (wait_file(path, 3600 * 1000))
		return T_FAIL;
	f = fopen(path, "r");
	if (!f || !fgets(what, sizeof(what), f))
		return T_FAIL;
	fclose(f);
	if (sscanf(what, "verify %u", &seed) != 1)
		return T_PASS;
	bad = t_check(buf, len, seed);
	T_EXPECT(bad < 0, "byte %ld of %llu differs from pattern %u", bad,
		 (unsigned long long)len, seed);
	if (bad < 0)
		printf("export: verified %llu bytes of pattern %u written by the peer\n",
		       (unsigned long long)len, seed);
	xferk_close(x);
	return t_result();
}

/* The initiator's side: connection, import and local buffers. */
struct initiator {
	struct xferk *x;
	uint64_t conn, remote, src_mr, dst_mr, len;
	uint8_t *src, *dst;
};

static int initiator_open(struct initiator *in, const char *token,
			  uint64_t len)
{
	struct xferk_token tok;
	int ret;

	in->len = len;
	if (xferk_open(&in->x))
		return T_SKIP;
	ret = read_token(token, &tok);
	if (!ret)
		ret = xferk_connect(in->x, t_peer(), 0, t_connect_ms(),
				    &in->conn);
	if (!ret)
		ret = xferk_import(in->x, in->conn, &tok, &in->remote);
	if (!ret)
		in->src = buf_reg(in->x, len, XFERK_ACCESS_LOCAL_SRC,
				  &in->src_mr, &ret);
	if (!ret)
		in->dst = buf_reg(in->x, len, XFERK_ACCESS_LOCAL_DST,
				  &in->dst_mr, &ret);
	if (ret) {
		fprintf(stderr, "initiator: setup: %d %s\n", ret,
			strerror(-ret));
		return T_FAIL;
	}
	return T_PASS;
}

static struct xferk_frag frag(struct initiator *in, uint32_t opcode,
			      uint64_t off, uint64_t len)
{
	return (struct xferk_frag) {
		.mr = opcode == XFERK_OP_WRITE ? in->src_mr : in->dst_mr,
		.offset = off, .len = len, .remote = in->remote,
		.remote_offset = off, .opcode = opcode,
	};
}

/* One op through XFERK_IOC_SUBMIT + WAIT; 0 when it succeeded. */
static int run_ioctl(struct initiator *in, const struct xferk_frag *f)
{
	struct xferk_op_snapshot s;
	int ret;

	ret = xferk_transfer_sync(in->x, f, 1, xferk_now_ns() + 120000000000ULL,
				  1000000000ULL, &s);
	if (ret || s.state != XFERK_STATE_SUCCEEDED) {
		fprintf(stderr, "ioctl op: %d %s err %d\n", ret,
			xferk_state_name(s.state), s.first_error);
		return -1;
	}
	return 0;
}

/* One op through an io_uring SUBMIT that parks until the op settles. */
static int run_uring(struct initiator *in, struct io_uring *ring,
		     const struct xferk_frag *f)
{
	struct xferk_ioc_submit s = {
		.size = sizeof(s), .flags = XFERK_SUBMIT_AUTO_RELEASE,
		.frags = (uintptr_t)f, .nr_frags = 1, .frag_size = sizeof(*f),
		/* A parked op's deadline and drain: 60 s at most. */
		.deadline_ns = xferk_now_ns() + 50000000000ULL,
		.drain_budget_ns = 1000000000ULL,
	};
	uint64_t ud;
	int res = 0;

	io_uring_prep_xferk_submit(t_sqe(ring), xferk_fd(in->x), &s);
	io_uring_submit(ring);
	if (t_cqe(ring, 180000, &res, &ud) || res != XFERK_STATE_SUCCEEDED) {
		fprintf(stderr, "io_uring op: res %d\n", res);
		return -1;
	}
	return 0;
}

static double mbs(uint64_t bytes, uint64_t ns)
{
	return ns ? bytes / (ns / 1e9) / 1e6 : 0;
}

static int cmd_roundtrip(const char *token, uint64_t len)
{
	static const uint64_t sizes[] = { 1, 4095, 4096, 65539, 1 << 20,
					  16 << 20, 64 << 20 };
	struct xferk_frag w, r;
	struct initiator in;
	struct io_uring ring;
	uint64_t t0, t1, t2;
	unsigned int i, m;
	int ret;
	long bad;

	ret = initiator_open(&in, token, len);
	if (ret)
		return ret;
	t_ring(&ring, 8, 0, IORING_SETUP_CQE32);

	r = frag(&in, XFERK_OP_READ, 0, len);
	T_EXPECT(run_ioctl(&in, &r) == 0, "READ of the target's %llu bytes",
		 (unsigned long long)len);
	bad = t_check(in.dst, len, 1);
	T_EXPECT(bad < 0, "READ: byte %ld differs from the target's pattern",
		 bad);
	printf("%10s %-8s %12s %12s\n", "bytes", "via", "WRITE MB/s",
	       "READ MB/s");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]) &&
		    sizes[i] <= len; i++) {
		for (m = 0; m < 2; m++) {
			unsigned int seed = 100 + 2 * i + m;

			t_fill(in.src, sizes[i], seed);
			memset(in.dst, 0, sizes[i]);
			w = frag(&in, XFERK_OP_WRITE, 0, sizes[i]);
			r = frag(&in, XFERK_OP_READ, 0, sizes[i]);
			t0 = xferk_now_ns();
			ret = m ? run_uring(&in, &ring, &w) :
				  run_ioctl(&in, &w);
			t1 = xferk_now_ns();
			if (!ret)
				ret = m ? run_uring(&in, &ring, &r) :
					  run_ioctl(&in, &r);
			t2 = xferk_now_ns();
			T_EXPECT(ret == 0, "%llu bytes via %s failed",
				 (unsigned long long)sizes[i],
				 m ? "io_uring" : "ioctl");
			bad = t_check(in.dst, sizes[i], seed);
			T_EXPECT(bad < 0, "%llu bytes via %s: byte %ld read back differs",
				 (unsigned long long)sizes[i],
				 m ? "io_uring" : "ioctl", bad);
			printf("%10llu %-8s %12.1f %12.1f\n",
			       (unsigned long long)sizes[i],
			       m ? "io_uring" : "ioctl",
			       mbs(sizes[i], t1 - t0), mbs(sizes[i], t2 - t1));
		}
	}
	t_fill(in.src, len, 2);
	w = frag(&in, XFERK_OP_WRITE, 0, len);
	T_EXPECT(run_ioctl(&in, &w) == 0, "final WRITE");
	put_suffixed(token, "done", "verify 2\n");
	io_uring_queue_exit(&ring);
	xferk_close(in.x);
	return t_result();
}

static int cmd_bw(const char *token, uint64_t len, unsigned int count)
{
	struct initiator in;
	struct xferk_frag w;
	uint64_t t0, t1;
	unsigned int i;
	int ret;

	ret = initiator_open(&in, token, len);
	if (ret)
		return ret;
	t_fill(in.src, len, 2);
	w = frag(&in, XFERK_OP_WRITE, 0, len);
	t0 = xferk_now_ns();
	for (i = 0; i < count && !ret; i++)
		ret = run_ioctl(&in, &w);
	t1 = xferk_now_ns();
	T_EXPECT(ret == 0, "WRITE %u of %u failed", i, count);
	printf("xferk: %u WRITEs of %llu bytes: %.1f MB/s\n", count,
	       (unsigned long long)len, mbs(len * count, t1 - t0));
	metric("xferk_write_mbs", mbs(len * count, t1 - t0));
	put_suffixed(token, "done", "verify 2\n");
	xferk_close(in.x);
	return t_result();
}

static bool settled(const struct xferk_op_snapshot *s)
{
	return s->state == XFERK_STATE_SUCCEEDED ||
	       s->state == XFERK_STATE_FAILED ||
	       s->state == XFERK_STATE_TIMED_OUT ||
	       s->state == XFERK_STATE_DRAINED ||
	       s->state == XFERK_STATE_QUARANTINED;
}

/*
 * The peer came back as a new instance (@back exists): an op on the old
 * import fails with ESTALE once the session's next path attempt reaches it,
 * and never writes into the new instance's memory.
 */
static void flood_stale(struct initiator *in, const char *back, uint64_t bytes,
			const struct xferk_submit_opts *o)
{
	struct xferk_frag f = frag(in, XFERK_OP_WRITE, 0, bytes);
	struct xferk_op_snapshot s = { 0 };
	const char *wait_ms = getenv("XFERK_FLOOD_BACK_MS");
	struct xferk_conn_info info;
	uint64_t t0, op;
	int ret = -1;

	char *end = NULL;
	unsigned long ms = wait_ms ? strtoul(wait_ms, &end, 10) : 0;

	/* At most reconnect_ms's own bound, ten minutes. */
	if (!wait_ms || !*wait_ms || *end || !ms || ms > 600000)
		ms = SETUP_WAIT_MS;
	T_EXPECT(wait_file(back, ms) == 0, "no %s", back);
	t0 = t_now_ms();
	while (t_now_ms() - t0 < 60000) {
		ret = xferk_submit_ex(in->x, &f, 1,
				      xferk_now_ns() + 2000000000ULL, o, &op);
		if (ret)
			break;
		ret = xferk_wait(in->x, op, XFERK_DEADLINE_NONE,
				 XFERK_WAIT_PHYSICAL, &s);
		xferk_release(in->x, op);
		T_EXPECT(ret == 0 && s.state != XFERK_STATE_SUCCEEDED,
			 "an op on the old import: %d %s", ret,
			 xferk_state_name(s.state));
		if (s.first_error == -ESTALE)
			break;
		usleep(200000);
	}
	printf("flood: an op on the old import after the peer came back: %s, %s, error %d, failure %u\n",
	       strerror(-ret), ret ? "-" : xferk_state_name(s.state),
	       s.first_error, s.failure);
	if (!xferk_conn_query(in->x, in->conn, &info))
		printf("flood: the old connection: state %u error %d path_gen %u deaths %llu reconnects %llu initiator %u\n",
		       info.state, info.error, info.path_gen,
		       (unsigned long long)info.path_deaths,
		       (unsigned long long)info.reconnects, info.initiator);
	metric("stale_after_peer_back_ms", t_now_ms() - t0);
	T_EXPECT(!ret && s.first_error == -ESTALE &&
		 s.failure == XFERK_FAILURE_PATH,
		 "the old import did not fail with ESTALE: %d, error %d, failure %u",
		 ret, s.first_error, s.failure);
}

static int cmd_flood(const char *token, unsigned int nops, uint64_t bytes,
		     unsigned int deadline_ms, unsigned int drain_ms)
{
	struct xferk_submit_opts o = {
		.flags = XFERK_SUBMIT_CANCEL_ON_DEADLINE,
		.drain_budget_ns = drain_ms * 1000000ULL,
	};
	bool verify = getenv("XFERK_FLOOD_VERIFY") &&
		      atoi(getenv("XFERK_FLOOD_VERIFY"));
	unsigned int i, left, at_kill = 0, states[XFERK_STATE_COUNT] = { 0 };
	uint64_t *ops, *deadline, *settled_at, now, at, t0, worst = 0, last = 0;
	char killing[512], killed[512];
	struct xferk_op_snapshot s;
	struct t_counters base, end;
	struct initiator in;
	struct xferk_frag f;
	bool seen_kill = false;
	int ret, bad_reusable = 0, late = 0;

	t_settle(&base);
	ret = initiator_open(&in, token, nops * bytes);
	if (ret)
		return ret;
	snprintf(killing, sizeof(killing), "%s.killing", token);
	snprintf(killed, sizeof(killed), "%s.killed", token);
	ops = calloc(nops, sizeof(*ops));
	deadline = calloc(nops, sizeof(*deadline));
	settled_at = calloc(nops, sizeof(*settled_at));
	t_fill(in.src, nops * bytes, 2);
	if (getenv("XFERK_FLOOD_GATE")) {
		put_suffixed(token, "ready", "connected\n");
		T_EXPECT(wait_file(getenv("XFERK_FLOOD_GATE"), SETUP_WAIT_MS) == 0,
			 "no %s", getenv("XFERK_FLOOD_GATE"));
	}
	t0 = xferk_now_ns();
	for (i = 0; i < nops; i++) {
		f = frag(&in, XFERK_OP_WRITE, i * bytes, bytes);
		deadline[i] = xferk_now_ns() + deadline_ms * 1000000ULL;
		ret = xferk_submit_ex(in.x, &f, 1, deadline[i], &o, &ops[i]);
		T_EXPECT(ret == 0, "submit %u: %s", i, strerror(-ret));
		if (ret)
			return t_result();
	}
	put_suffixed(token, "flood", "submitted\n");
	printf("flood: %u ops of %llu bytes submitted\n", nops,
	       (unsigned long long)bytes);
	fflush(stdout);

	for (left = nops; left;) {
		now = xferk_now_ns();
		if (!seen_kill && !access(killing, F_OK)) {
			seen_kill = true;
			at_kill = left;
		}
		for (i = 0; i < nops; i++) {
			if (settled_at[i])
				continue;
			ret = xferk_query(in.x, ops[i], &s);
			if (ret) {
				T_EXPECT(0, "query op %u: %s", i, strerror(-ret));
				return t_result();
			}
			if (s.buffer_reusable && !s.physical_complete)
				bad_reusable++;
			if (!settled(&s))
				continue;
			/* When it settled: by the kernel's clock if physical. */
			at = now;
			if (s.physical_complete)
				at = deadline[i] - deadline_ms * 1000000ULL +
				     s.submit_to_physical_ns;
			settled_at[i] = at;
			states[s.state]++;
			left--;
			if (at > deadline[i] + o.drain_budget_ns + 2000000000ULL)
				late++;
			if (at > deadline[i] && at - deadline[i] > worst)
				worst = at - deadline[i];
			if (at - t0 > last)
				last = at - t0;
		}
		usleep(20000);
	}
	if (!seen_kill && !access(killing, F_OK))
		seen_kill = true;
	printf("flood: settled:");
	for (i = 0; i < XFERK_STATE_COUNT; i++)
		if (states[i])
			printf(" %s %u", xferk_state_name(i), states[i]);
	printf("\n");
	if (seen_kill)
		metric("ops_in_flight_at_kill", at_kill);
	metric("ops_settled_late", late);
	metric("worst_settle_after_deadline_ms", worst / 1e6);
	metric("last_settle_after_submit_ms", last / 1e6);
	T_EXPECT(!late, "%d ops settled after deadline + drain budget + 2 s",
		 late);
	T_EXPECT(!bad_reusable, "%d snapshots said buffer_reusable before physical completion",
		 bad_reusable);
	if (verify)
		T_EXPECT(states[XFERK_STATE_SUCCEEDED] == nops,
			 "%u of %u ops succeeded", states[XFERK_STATE_SUCCEEDED],
			 nops);
	for (i = 0; i < nops; i++) {
		ret = xferk_wait(in.x, ops[i], xferk_now_ns() + 30000000000ULL,
				 XFERK_WAIT_PHYSICAL, &s);
		T_EXPECT(ret == 0 && s.buffer_reusable,
			 "op %u not reusable 30 s after settling: %d %s", i,
			 ret, xferk_state_name(s.state));
		xferk_release(in.x, ops[i]);
	}
	if (seen_kill) {
		uint64_t op;

		T_EXPECT(wait_file(killed, SETUP_WAIT_MS) == 0, "no %s", killed);
		/* Whatever the path's death looks like, a write cannot succeed. */
		f = frag(&in, XFERK_OP_WRITE, 0, bytes);
		s.state = XFERK_STATE_SUCCEEDED;
		ret = xferk_submit_ex(in.x, &f, 1, xferk_now_ns() + 1000000000ULL,
				      &o, &op);
		if (!ret) {
			ret = xferk_wait(in.x, op, XFERK_DEADLINE_NONE,
					 XFERK_WAIT_PHYSICAL, &s);
			xferk_release(in.x, op);
		}
		printf("flood: a new op on the old connection: %s, %s, error %d\n",
		       strerror(-ret), ret ? "-" : xferk_state_name(s.state),
		       ret ? 0 : s.first_error);
		T_EXPECT(ret || s.state != XFERK_STATE_SUCCEEDED,
			 "a new op on the dead connection succeeded");
	}
	if (seen_kill && getenv("XFERK_FLOOD_STALE"))
		flood_stale(&in, getenv("XFERK_FLOOD_STALE"), bytes, &o);
	if (verify)
		put_suffixed(token, "done", "verify 2\n");
	xferk_close(in.x);
	t_settle(&end);
	T_EXPECT(end.ops_live == base.ops_live &&
		 end.pinned_pages == base.pinned_pages &&
		 end.quarantined_pages == base.quarantined_pages,
		 "counters not back: ops_live %lld/%lld pinned %lld/%lld quarantined %lld/%lld",
		 end.ops_live, base.ops_live, end.pinned_pages,
		 base.pinned_pages, end.quarantined_pages,
		 base.quarantined_pages);
	return t_result();
}

#define QUIESCE_POISON	0xababababababababULL

static void dir_path(char *path, size_t size, const char *dir, const char *what,
		     unsigned int round)
{
	if (round)
		snprintf(path, size, "%s.r%u.%s", dir, round, what);
	else
		snprintf(path, size, "%s.%s", dir, what);
}

static int cmd_quiesce_target(const char *dir, uint64_t len, unsigned int rounds)
{
	const uint32_t rw = XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE;
	char path[512], count[32];
	uint64_t conn, big_mr, small_mr, exp, i, hits;
	struct xferk_token tok;
	uint8_t *big, *small;
	struct xferk *x;
	unsigned int r;
	int ret;

	big = t_map(len + RXE_MAP_SLACK);
	small = t_map(4096 + RXE_MAP_SLACK);
	if (xferk_open(&x))
		return T_SKIP;
	ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn);
	if (!ret)
		ret = xferk_mr_reg(x, big, len + RXE_MAP_SLACK, rw, &big_mr);
	if (!ret)
		ret = xferk_mr_reg(x, small, 4096 + RXE_MAP_SLACK, rw, &small_mr);
	if (!ret)
		ret = xferk_export(x, conn, small_mr, 0, 4096, rw, &tok, &exp);
	if (!ret)
		ret = xferk_unexport(x, exp);
	if (!ret) {
		dir_path(path, sizeof(path), dir, "small.tok", 0);
		put_token(path, &tok);
		ret = xferk_export(x, conn, big_mr, 0, len + RXE_MAP_SLACK, rw,
				   &tok, &exp);
	}
	T_EXPECT(ret == 0, "target setup: %s", strerror(-ret));
	if (ret)
		return t_result();
	dir_path(path, sizeof(path), dir, "big.tok", 0);
	put_token(path, &tok);
	for (r = 1; r <= 2 * rounds; r++) {
		dir_path(path, sizeof(path), dir, "written", r);
		if (wait_file(path, SETUP_WAIT_MS)) {
			T_EXPECT(0, "no %s", path);
			break;
		}
		for (hits = 0, i = 0; i < len / 8; i++)
			hits += ((uint64_t *)big)[i] == QUIESCE_POISON;
		memset(big, 0, len);
		snprintf(count, sizeof(count), "%llu\n", (unsigned long long)hits);
		dir_path(path, sizeof(path), dir, "count", r);
		put_file(path, count);
	}
	xferk_close(x);
	return t_result();
}

/* One round of the experiment; returns the target's count of poison words. */
static long quiesce_round(struct initiator *in, const struct xferk_token *small,
			  const char *dir, unsigned int round, bool naive)
{
	uint64_t deadline = xferk_now_ns() + 120000000000ULL, bad, op_bad, op_big;
	struct xferk_frag f[2];
	struct xferk_op_snapshot s;
	char path[512], count[32] = "";
	FILE *fp;
	int ret;

	ret = xferk_import(in->x, in->conn, small, &bad);
	T_EXPECT(ret == 0, "import of the refused range: %s", strerror(-ret));
	if (ret)
		return -1;
	memset(in->src, 0x11, in->len);
	f[0] = (struct xferk_frag) { .mr = in->src_mr, .len = 4096,
				     .remote = bad, .opcode = XFERK_OP_WRITE };
	f[1] = frag(in, XFERK_OP_WRITE, 0, in->len);
	if (naive) {
		/* Free on the first failure: return when the small one fails. */
		ret = xferk_submit(in->x, &f[0], 1, deadline, 0, &op_bad);
		if (!ret)
			ret = xferk_submit(in->x, &f[1], 1, deadline, 0, &op_big);
		T_EXPECT(ret == 0, "naive submit: %s", strerror(-ret));
		if (ret)
			return -1;
		xferk_wait(in->x, op_bad, deadline, 0, &s);
		T_EXPECT(s.state == XFERK_STATE_FAILED && s.first_error == -EACCES &&
			 s.failure == XFERK_FAILURE_OWN,
			 "naive: the refused write: %s %d", xferk_state_name(s.state),
			 s.first_error);
	} else {
		ret = xferk_transfer_sync(in->x, f, 2, deadline, 10000000000ULL, &s);
		T_EXPECT(ret < 0 && ret != XFERK_COMPLETION_UNKNOWN &&
			 s.first_error == -EACCES,
			 "transfer_sync: %d, %s error %d failure %u cancels %u timeouts %u transferred %llu of %llu",
			 ret, xferk_state_name(s.state), s.first_error,
			 s.failure, s.cancel_requests, s.deadline_timeouts,
			 (unsigned long long)s.transferred_bytes,
			 (unsigned long long)s.total_bytes);
	}
	/* The caller reuses the source right after the return. */
	memset(in->src, 0xab, in->len);
	if (naive) {
		xferk_wait(in->x, op_big, deadline, XFERK_WAIT_PHYSICAL, NULL);
		xferk_release(in->x, op_big);
		xferk_release(in->x, op_bad);
	}
	xferk_unimport(in->x, bad);
	dir_path(path, sizeof(path), dir, "written", round);
	put_file(path, "written\n");
	dir_path(path, sizeof(path), dir, "count", round);
	if (wait_file(path, SETUP_WAIT_MS))
		return -1;
	fp = fopen(path, "r");
	if (!fp || !fgets(count, sizeof(count), fp))
		return -1;
	fclose(fp);
	return atol(count);
}

static int cmd_quiesce(const char *dir, uint64_t len, unsigned int rounds)
{
	unsigned int r, naive_hits = 0, sync_hits = 0;
	struct xferk_token small;
	struct initiator in;
	char path[512];
	long hits;
	int ret;

	dir_path(path, sizeof(path), dir, "big.tok", 0);
	ret = initiator_open(&in, path, len);
	if (ret)
		return ret;
	dir_path(path, sizeof(path), dir, "small.tok", 0);
	if (read_token(path, &small))
		return T_FAIL;
	for (r = 1; r <= 2 * rounds; r++) {
		hits = quiesce_round(&in, &small, dir, r, r % 2);
		T_EXPECT(hits >= 0, "round %u", r);
		if (r % 2)
			naive_hits += hits > 0;
		else
			sync_hits += hits > 0;
	}
	printf("%-42s %s\n", "wrapper (4 KiB refused + valid WRITE)",
	       "rounds with post-return data at the remote");
	printf("%-42s %u/%u\n", "naive: return at first failure", naive_hits,
	       rounds);
	printf("%-42s %u/%u\n", "xferk_transfer_sync()", sync_hits, rounds);
	metric("seed002_naive_corrupted_rounds", naive_hits);
	metric("seed002_sync_corrupted_rounds", sync_hits);
	metric("seed002_rounds", rounds);
	T_EXPECT(sync_hits == 0, "transfer_sync let post-return data through");
	T_EXPECT(naive_hits > 0, "the experiment did not detect the naive bug");
	xferk_close(in.x);
	return t_result();
}

/* RDMA connections debugfs lists that are not down. */
static int rdma_sessions(void)
{
	return t_peers_matching(" rdma ", NULL) -
	       t_peers_matching(" rdma ", " down ");
}

static int cmd_cross(const char *dir)
{
	const uint32_t acc = XFERK_ACCESS_REMOTE_READ;
	const char *host = getenv("XFERK_HOST") ?: "a";
	const char *peer = strcmp(host, "a") ? "a" : "b";
	unsigned int mine = strcmp(host, "a") ? 4 : 3;
	char path[512];
	uint64_t conn, mr, dmr, exp, remote;
	struct xferk_frag f = { .len = 4096, .opcode = XFERK_OP_READ };
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	uint8_t *buf, *dst;
	struct xferk *x;
	int ret, n;

	buf = t_map(4096 + RXE_MAP_SLACK);
	dst = t_map(4096 + RXE_MAP_SLACK);
	t_fill(buf, 4096, mine);
	if (xferk_open(&x))
		return T_SKIP;
	ret = xferk_mr_reg(x, buf, 4096 + RXE_MAP_SLACK, acc, &mr);
	if (!ret)
		ret = xferk_mr_reg(x, dst, 4096 + RXE_MAP_SLACK,
				   XFERK_ACCESS_LOCAL_DST, &dmr);
	snprintf(path, sizeof(path), "%s.go", dir);
	T_EXPECT(!ret && wait_file(path, SETUP_WAIT_MS) == 0, "setup: %d", ret);
	ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn);
	T_EXPECT(ret == 0, "connect: %s", strerror(-ret));
	if (!ret)
		ret = xferk_export(x, conn, mr, 0, 4096 + RXE_MAP_SLACK, acc,
				   &tok, &exp);
	T_EXPECT(ret == 0, "export: %s", strerror(-ret));
	if (ret)
		return t_result();
	snprintf(path, sizeof(path), "%s.%s.tok", dir, host);
	put_token(path, &tok);
	snprintf(path, sizeof(path), "%s.%s.tok", dir, peer);
	ret = read_token(path, &tok);
	if (!ret)
		ret = xferk_import(x, conn, &tok, &remote);
	T_EXPECT(ret == 0, "import the peer's token: %d", ret);
	if (!ret) {
		f.mr = dmr;
		f.remote = remote;
		ret = t_run(x, &f, 1, &s);
		T_EXPECT(ret == XFERK_STATE_SUCCEEDED &&
			 t_check(dst, 4096, mine == 3 ? 4 : 3) < 0,
			 "READ of the peer's pattern: %d", ret);
	}
	n = rdma_sessions();
	printf("cross: %d RDMA connection(s) on host %s\n", n, host);
	metric("rdma_sessions", n);
	T_EXPECT(n == 1, "%d RDMA connections, not one", n);
	/* Neither closes before the other has read. */
	snprintf(path, sizeof(path), "%s.%s.done", dir, host);
	put_file(path, "done\n");
	snprintf(path, sizeof(path), "%s.%s.done", dir, peer);
	T_EXPECT(wait_file(path, SETUP_WAIT_MS) == 0, "no %s", path);
	xferk_close(x);
	return t_result();
}

static int cmd_hold(const char *token)
{
	struct xferk_submit_opts o = {
		.flags = XFERK_SUBMIT_CANCEL_ON_DEADLINE,
		.drain_budget_ns = 1000000000ULL,
	};
	struct xferk_frag f;
	struct initiator in;
	char back[512];
	int ret;

	ret = initiator_open(&in, token, 4096);
	if (ret)
		return ret;
	f = frag(&in, XFERK_OP_WRITE, 0, 4096);
	T_EXPECT(run_ioctl(&in, &f) == 0, "a WRITE while the peer is up");
	put_suffixed(token, "held", "up\n");
	snprintf(back, sizeof(back), "%s.back", token);
	flood_stale(&in, back, 4096, &o);
	xferk_close(in.x);
	return t_result();
}

static int cmd_stale(const char *token)
{
	struct xferk_token tok;
	uint64_t conn, remote;
	struct xferk *x;
	int ret;

	if (xferk_open(&x))
		return T_SKIP;
	T_EXPECT(read_token(token, &tok) == 0, "old token");
	ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn);
	T_EXPECT(ret == 0, "connect to the peer's new instance: %s",
		 strerror(-ret));
	ret = xferk_import(x, conn, &tok, &remote);
	printf("stale: the old instance's token on the new connection: %s\n",
	       strerror(-ret));
	T_EXPECT(ret == -EACCES || ret == -ESTALE,
		 "import of the old token: %d %s", ret, strerror(-ret));
	xferk_close(x);
	return t_result();
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 2 ? argv[1] : "";

	if (!strcmp(cmd, "export") && argc == 4)
		return cmd_export(argv[2], strtoull(argv[3], NULL, 0));
	if (!strcmp(cmd, "roundtrip") && argc == 4)
		return cmd_roundtrip(argv[2], strtoull(argv[3], NULL, 0));
	if (!strcmp(cmd, "bw") && argc == 5)
		return cmd_bw(argv[2], strtoull(argv[3], NULL, 0),
			      atoi(argv[4]));
	if (!strcmp(cmd, "flood") && argc == 7)
		return cmd_flood(argv[2], atoi(argv[3]),
				 strtoull(argv[4], NULL, 0), atoi(argv[5]),
				 atoi(argv[6]));
	if (!strcmp(cmd, "hold") && argc == 3)
		return cmd_hold(argv[2]);
	if (!strcmp(cmd, "stale") && argc == 3)
		return cmd_stale(argv[2]);
	if (!strcmp(cmd, "cross") && argc == 3)
		return cmd_cross(argv[2]);
	if (!strcmp(cmd, "quiesce-target") && argc == 5)
		return cmd_quiesce_target(argv[2], strtoull(argv[3], NULL, 0),
					  atoi(argv[4]));
	if (!strcmp(cmd, "quiesce") && argc == 5)
		return cmd_quiesce(argv[2], strtoull(argv[3], NULL, 0),
				   atoi(argv[4]));
	fprintf(stderr, "usage: see the comment at the top of %s\n", __FILE__);
	return T_FAIL;
}
