// SPDX-License-Identifier: GPL-2.0
/*
 * Windows and CLOSE over soft-RoCE (loopback):
 * 1. A scattered window of 1000 one-page blocks of a pool, in random
 *    order (500 if the device maps fewer pages in one registration: E2BIG
 *    names that), and one of 100 blocks of 1-3 pages: a WRITE of the
 *    whole window lands exactly where the block list says and nowhere
 *    else in the pool; a READ of the window brings the same bytes back.
 *    A window over a region that starts and ends mid-page reaches both
 *    edges and no byte beyond them; misaligned edges between blocks are
 *    refused.
 * 2. CLOSE of an imported window and of a plain export, both idle: the
 *    peer's kernel answers (cooperative, counted, ack time reported); the
 *    import then fails a submit with ESTALE before anything is posted, and
 *    the handle is gone (ESTALE).
 *    Eight windows closed at once through io_uring: eight CQEs, each 0
 *    and cooperative, their imports stale.
 * 3. Bad input: each fails with its documented errno and publishes
 *    nothing (the export count is unchanged).
 * 4. A peer without the capability (fault knob no_caps, on a fresh
 *    session): WINDOW_OPEN and NOTIFY fail with EOPNOTSUPP; CLOSE of a plain export
 *    is forced and returns; a write through the closed export then fails
 *    at the device (EACCES) and lands nowhere; the session's path, killed
 *    by the access error, is replaced (both ends reconnect).
 * 5. CLOSE of an imported export with a deadline that passed: forced (or
 *    cooperative if the answer was already in when it looked), and it
 *    returns at once, but the peer is asked all the same: its kernel
 *    answers (revokes_answered), the import then fails a submit with
 *    ESTALE before anything is posted, and no path dies.
 *
 * Regression: a transfer is posted only while its import is usable (the
 * kernel reads the revoke under the lock that posts).
 * Regression (5): a forced CLOSE sent no REVOKE, so the import kept the
 * export's key and address, which a later registration in the session's
 * PD could match.
 */
#include <sys/ioctl.h>
#include <unistd.h>

#include "test.h"
#include "xferk_uring.h"

#define PAGE		4096UL
#define POOL_PAGES	2048UL
#define RW		(XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE)

static struct xferk *x;
static uint8_t *pool, *src;
static uint64_t conn, pool_mr, src_mr;

static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/*
 * Bytes of the pool outside the blocks of the region at @at in it that
 * are not 0xee: -1 if none, else an offset.
 */
static long untouched_outside(uint64_t at, const struct xferk_block *b,
			      uint32_t n)
{
	static uint8_t in[POOL_PAGES * PAGE];
	uint64_t i;
	uint32_t k;

	memset(in, 0, sizeof(in));
	for (k = 0; k < n; k++)
		memset(in + at + b[k].offset, 1, b[k].len);
	for (i = 0; i < POOL_PAGES * PAGE; i++)
		if (!in[i] && pool[i] != 0xee)
			return (long)i;
	return -1;
}

/*
 * WRITE the whole window of region @mr (at @at in the pool), check every
 * block and the rest of the pool; READ it back.
 */
static void roundtrip(uint64_t mr, uint64_t at, const struct xferk_block *b,
		      uint32_t n, uint64_t seed)
{
	struct xferk_token tok;
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	uint64_t win, rm, len, gen = 0, done = 0;
	static uint64_t last_gen;
	uint32_t k, how;
	long bad;
	int ret;

	memset(pool, 0xee, POOL_PAGES * PAGE);
	ret = xferk_window_open_gen(x, conn, mr, b, n, RW, &tok, &win, &len,
				    &gen);
	T_EXPECT(ret == 0, "window of %u blocks: %s", n, strerror(-ret));
	if (ret)
		return;
	/* A nonce: never 0, not the previous window's. */
	T_EXPECT(gen && gen != last_gen, "generation %#llx", (unsigned long long)gen);
	last_gen = gen;
	ret = xferk_import(x, conn, &tok, &rm);
	T_EXPECT(ret == 0, "import: %s", strerror(-ret));
	t_fill(src, len, seed);
	f = (struct xferk_frag) { .mr = src_mr, .len = len, .remote = rm,
				  .opcode = XFERK_OP_WRITE };
	ret = t_run(x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "write %u blocks: %d err %d", n,
		 ret, s.first_error);
	for (k = 0; k < n; k++) {
		if (memcmp(pool + at + b[k].offset, src + done, b[k].len)) {
			T_EXPECT(0, "block %u (pool offset %llu) differs", k,
				 (unsigned long long)b[k].offset);
			break;
		}
		done += b[k].len;
	}
	T_EXPECT(done == len || k < n, "window length %llu, blocks %llu",
		 (unsigned long long)len, (unsigned long long)done);
	bad = untouched_outside(at, b, n);
	T_EXPECT(bad < 0, "pool byte %ld outside the window was written", bad);

	memset(src, 0, len);
	f.opcode = XFERK_OP_READ;
	ret = t_run(x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(src, len, seed) < 0,
		 "read back %u blocks: %d", n, ret);

	ret = xferk_window_close(x, win, xferk_now_ns() + 5000000000ULL, &how,
				 NULL);
	T_EXPECT(ret == 0 && how == XFERK_CLOSE_COOPERATIVE,
		 "close: %d how %u", ret, how);
	T_EXPECT_ERR(xferk_unimport(x, rm), 0);
}

static void scattered(void)
{
	static struct xferk_block b[1000];
	static uint32_t perm[POOL_PAGES];
	long long opened = t_stat("windows_opened");
	struct xferk_token tok;
	uint32_t i, n = 1000, pages = 0;
	uint64_t win;
	int ret;

	for (i = 0; i < POOL_PAGES; i++)
		perm[i] = i;
	for (i = POOL_PAGES - 1; i > 0; i--) {
		uint32_t j = rnd() % (i + 1), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (i = 0; i < n; i++)
		b[i] = (struct xferk_block) { perm[i] * PAGE, PAGE };
	ret = xferk_window_open(x, conn, pool_mr, b, n, RW, &tok, &win, NULL);
	if (ret == -E2BIG) {
		n = 500;
		printf("# the device maps fewer than 1000 pages in one registration: %u blocks\n",
		       n);
	} else {
		T_EXPECT(ret == 0, "1000 blocks: %s", strerror(-ret));
		if (!ret)
			xferk_unexport(x, win);
	}
	roundtrip(pool_mr, 0, b, n, 1);

	/* 100 blocks of 1-3 pages, disjoint, in random order. */
	for (i = 0; i < 100; i++) {
		uint32_t len = 1 + rnd() % 3;

		b[i] = (struct xferk_block) { (uint64_t)pages * PAGE, len * PAGE };
		pages += len + 1;
	}
	for (i = 99; i > 0; i--) {
		uint32_t j = rnd() % (i + 1);
		struct xferk_block t = b[i];

		b[i] = b[j];
		b[j] = t;
	}
	roundtrip(pool_mr, 0, b, 100, 2);
	T_EXPECT(t_stat("windows_opened") >= opened + 2,
		 "windows_opened %lld, was %lld", t_stat("windows_opened"), opened);
}

/*
 * A region that starts and ends mid-page (at EDGE bytes into the pool,
 * EDGE bytes short of its end): a window may reach both edges, its first
 * block starting and its last ending mid-page, and nothing beyond them
 * lands; a misaligned edge between two blocks is refused (EINVAL).
 */
static void edges(void)
{
	const uint64_t EDGE = 100, len = POOL_PAGES * PAGE - 2 * EDGE;
	struct xferk_block b[3] = {
		{ 0, PAGE - EDGE },			/* to the first page's end */
		{ 5 * PAGE - EDGE, 2 * PAGE },		/* whole pages */
		{ len - (PAGE - EDGE), PAGE - EDGE },	/* the last page's start on */
	};
	struct xferk_block one = { 10, 20 };		/* within one page */
	struct xferk_token tok;
	uint64_t mr, win;

	if (!(xferk_features(x) & XFERK_FEAT_WINDOW_EDGES)) {
		T_EXPECT(0, "no XFERK_FEAT_WINDOW_EDGES");
		return;
	}
	T_EXPECT_ERR(xferk_mr_reg(x, pool + EDGE, len, XFERK_ACCESS_ALL, &mr), 0);
	roundtrip(mr, EDGE, b, 3, 3);
	roundtrip(mr, EDGE, &one, 1, 4);
	/* Misaligned where two meet: each case alone. */
	b[1].len += 1;		/* a middle block ends mid-page */
	T_EXPECT_ERR(xferk_window_open(x, conn, mr, b, 3, RW, &tok, &win, NULL),
		     EINVAL);
	b[1].len -= 1;
	b[0].len += 1;		/* the first block ends mid-page */
	T_EXPECT_ERR(xferk_window_open(x, conn, mr, b, 3, RW, &tok, &win, NULL),
		     EINVAL);
	b[0].len -= 1;
	b[2].offset -= 1;	/* the last block starts mid-page */
	b[2].len += 1;
	T_EXPECT_ERR(xferk_window_open(x, conn, mr, b, 3, RW, &tok, &win, NULL),
		     EINVAL);
	T_EXPECT_ERR(xferk_mr_dereg(x, mr), 0);
}

/* An idle import's CLOSE is answered; the import is stale afterwards. */
static void close_export(void)
{
	long long coop = t_stat("closes_cooperative");
	long long answered = t_stat("revokes_answered");
	struct xferk_token tok;
	struct xferk_frag f;
	uint64_t exp, rm, op, ack = 0;
	uint32_t how = 0;
	int ret;

	ret = xferk_export(x, conn, pool_mr, 0, 8 * PAGE, RW, &tok, &exp);
	if (!ret)
		ret = xferk_import(x, conn, &tok, &rm);
	T_EXPECT(ret == 0, "export, import: %s", strerror(-ret));
	if (ret)
		return;
	f = (struct xferk_frag) { .mr = src_mr, .len = PAGE, .remote = rm,
				  .opcode = XFERK_OP_WRITE };
	ret = xferk_window_close(x, exp, xferk_now_ns() + 5000000000ULL, &how,
				 &ack);
	T_EXPECT(ret == 0 && how == XFERK_CLOSE_COOPERATIVE && ack > 0,
		 "close: %d how %u ack %llu ns", ret, how,
		 (unsigned long long)ack);
	printf("# cooperative close of an idle export: answered in %llu us\n",
	       (unsigned long long)ack / 1000);
	T_EXPECT_ERR(xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op), ESTALE);
	T_EXPECT_ERR(xferk_window_close(x, exp, 0, &how, NULL), ESTALE);
	T_EXPECT(t_stat("closes_cooperative") == coop + 1 &&
		 t_stat("revokes_answered") == answered + 1,
		 "closes_cooperative %lld (was %lld), revokes_answered %lld (was %lld)",
		 t_stat("closes_cooperative"), coop, t_stat("revokes_answered"),
		 answered);
	T_EXPECT(t_stat("close_ack_ns_max") > 0, "close_ack_ns_max 0");
	/* Both loopback ends: every capability, nothing unanswered or owed. */
	T_EXPECT(t_peers_matching(" 0x1f 0 0 ", NULL) >= 2,
		 "debugfs peers: %d ends with the capability and no revoke left",
		 t_peers_matching(" 0x1f 0 0 ", NULL));
	xferk_unimport(x, rm);
}

/*
 * 5: a CLOSE that does not wait still fences the peer's import. It is
 * forced, or cooperative if the answer was already there when it looked (a
 * loopback peer can answer that fast).
 */
static void close_forced(void)
{
	long long closes = t_stat("closes_forced") + t_stat("closes_cooperative");
	long long answered = t_stat("revokes_answered");
	long long deaths = t_stat("path_deaths_qp");
	struct xferk_token tok;
	struct xferk_frag f;
	uint64_t exp, rm, op, ack = 0;
	uint32_t how = 0;
	int ret;

	ret = xferk_export(x, conn, pool_mr, 0, 8 * PAGE, RW, &tok, &exp);
	if (!ret)
		ret = xferk_import(x, conn, &tok, &rm);
	T_EXPECT(ret == 0, "export, import: %s", strerror(-ret));
	if (ret)
		return;
	ret = xferk_window_close(x, exp, 0, &how, &ack);
	T_EXPECT(ret == 0 && ((how == XFERK_CLOSE_FORCED && ack == 0) ||
			      (how == XFERK_CLOSE_COOPERATIVE && ack > 0)),
		 "close: %d how %u ack %llu ns", ret, how,
		 (unsigned long long)ack);
	T_EXPECT(t_stat("closes_forced") + t_stat("closes_cooperative") ==
		 closes + 1, "closes_forced + closes_cooperative %lld, was %lld",
		 t_stat("closes_forced") + t_stat("closes_cooperative"), closes);
	T_EXPECT(t_stat_wait("revokes_answered", answered + 1,
			     t_scaled_ms(10000)) == answered + 1,
		 "the peer was not asked: revokes_answered %lld, was %lld",
		 t_stat("revokes_answered"), answered);
	f = (struct xferk_frag) { .mr = src_mr, .len = PAGE, .remote = rm,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT_ERR(xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op), ESTALE);
	T_EXPECT(t_stat("path_deaths_qp") == deaths, "a path died");
	xferk_unimport(x, rm);
}

/* Eight windows with imports, closed at once through a ring. */
static void close_ring(void)
{
	struct xferk_ioc_window_close c[8];
	struct io_uring_sqe *sqe;
	struct xferk_block b;
	struct xferk_token tok;
	struct xferk_frag f;
	struct io_uring ring;
	uint64_t win[8], rm[8], op, ud;
	int i, n = 0, res, ret;

	t_ring(&ring, 8, 0, 0);
	for (i = 0; i < 8; i++) {
		b = (struct xferk_block) { (uint64_t)(16 + i) * PAGE, PAGE };
		ret = xferk_window_open(x, conn, pool_mr, &b, 1, RW, &tok,
					&win[i], NULL);
		if (!ret)
			ret = xferk_import(x, conn, &tok, &rm[i]);
		T_EXPECT(ret == 0, "window %d: %s", i, strerror(-ret));
		if (ret)
			return;
		c[i] = (struct xferk_ioc_window_close) {
			.size = sizeof(c[i]), .handle = win[i],
			.deadline_ns = xferk_now_ns() + 5000000000ULL,
		};
		sqe = t_sqe(&ring);
		io_uring_prep_xferk_window_close(sqe, xferk_fd(x), &c[i]);
		io_uring_sqe_set_data64(sqe, i);
	}
	io_uring_submit(&ring);
	while (n < 8 && !t_cqe(&ring, t_scaled_ms(10000), &res, &ud)) {
		T_EXPECT(res == 0 && ud < 8 &&
			 c[ud].how == XFERK_CLOSE_COOPERATIVE,
			 "ring close %llu: %d how %u", (unsigned long long)ud,
			 res, ud < 8 ? c[ud].how : 0);
		n++;
	}
	T_EXPECT(n == 8, "%d CQEs of 8", n);
	for (i = 0; i < 8; i++) {
		f = (struct xferk_frag) { .mr = src_mr, .len = PAGE,
					  .remote = rm[i],
					  .opcode = XFERK_OP_WRITE };
		T_EXPECT_ERR(xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &op),
			     ESTALE);
		xferk_unimport(x, rm[i]);
	}
	io_uring_queue_exit(&ring);
}

static int open_raw(struct xferk_ioc_window_open *a)
{
	return ioctl(xferk_fd(x), XFERK_IOC_WINDOW_OPEN, a) ? -errno : 0;
}

static int close_raw(struct xferk_ioc_window_close *c)
{
	return ioctl(xferk_fd(x), XFERK_IOC_WINDOW_CLOSE, c) ? -errno : 0;
}

static void bad_input(void)
{
	struct xferk_block b[2] = { { 0, PAGE }, { 4 * PAGE, 2 * PAGE } };
	struct xferk_block *many;
	struct xferk_ioc_window_open a;
	struct xferk_ioc_window_close c;
	long long exports = t_stat("exports");
	uint32_t i;

	/* Each case: the usual request with one thing changed. */
#define CHECK_OPEN(err, change)						\
	do {								\
		int r_;							\
									\
		a = (struct xferk_ioc_window_open) {			\
			.size = sizeof(a), .conn = conn, .mr = pool_mr,	\
			.blocks = (uintptr_t)b, .nr_blocks = 2,		\
			.access = RW,					\
		};							\
		change;							\
		r_ = open_raw(&a);					\
		T_EXPECT_ERR(r_, err);					\
	} while (0)
	CHECK_OPEN(EINVAL, a.nr_blocks = 0);
	CHECK_OPEN(EINVAL, a.nr_blocks = XFERK_WINDOW_MAX_BLOCKS + 1);
	CHECK_OPEN(EINVAL, a.flags = 1);
	CHECK_OPEN(EINVAL, a.access = 0);
	CHECK_OPEN(EINVAL, a.access = XFERK_ACCESS_LOCAL_SRC);
	CHECK_OPEN(EINVAL, a.reserved[0] = 1);
	CHECK_OPEN(EFAULT, a.blocks = 8);
	CHECK_OPEN(EACCES, a.mr = src_mr);
	CHECK_OPEN(EINVAL, a.conn = pool_mr);
	b[1].offset = 4 * PAGE + 1;
	CHECK_OPEN(EINVAL, (void)0);
	b[1].offset = 4 * PAGE;
	b[0].len = PAGE + 1;
	CHECK_OPEN(EINVAL, (void)0);
	b[0].len = PAGE;
	b[1].len = 0;
	CHECK_OPEN(EINVAL, (void)0);
	b[1] = (struct xferk_block) { (POOL_PAGES - 1) * PAGE, 2 * PAGE };
	CHECK_OPEN(ERANGE, (void)0);
	b[1] = (struct xferk_block) { 4 * PAGE, 2 * PAGE };
	/* More pages than a window maps: refused before anything is made. */
	many = calloc(XFERK_WINDOW_MAX_BLOCKS, sizeof(*many));
	for (i = 0; many && i < XFERK_WINDOW_MAX_BLOCKS; i++)
		many[i] = (struct xferk_block) { 0, 8 * PAGE };
	CHECK_OPEN(E2BIG, (a.blocks = (uintptr_t)many,
			   a.nr_blocks = XFERK_WINDOW_MAX_BLOCKS));
	free(many);
#undef CHECK_OPEN
	T_EXPECT(t_stat("exports") == exports, "exports %lld, was %lld",
		 t_stat("exports"), exports);

	c = (struct xferk_ioc_window_close) { .size = sizeof(c), .handle = 0 };
	T_EXPECT_ERR(close_raw(&c), EINVAL);
	c = (struct xferk_ioc_window_close) { .size = sizeof(c),
					      .handle = pool_mr };
	T_EXPECT_ERR(close_raw(&c), EINVAL);
	c = (struct xferk_ioc_window_close) { .size = sizeof(c), .flags = 1 };
	T_EXPECT_ERR(close_raw(&c), EINVAL);
}

/*
 * A session made while this host announces no capability (a peer without
 * it): whatever session CONNECT finds is ended until the one it makes
 * refuses windows. 0 with @l set up on it.
 */
static int session_without_caps(struct t_loop *l)
{
	struct xferk_block b = { 0, PAGE };
	struct xferk_token tok;
	uint64_t win;
	int tries, ret = -1;

	for (tries = 0; tries < 5; tries++) {
		if (t_end_session())
			return -1;
		t_loop_open(l, PAGE, 4 * PAGE);
		ret = xferk_window_open(l->x, l->conn, l->dst_mr, &b, 1, RW,
					&tok, &win, NULL);
		if (ret == -EOPNOTSUPP)
			return 0;
		xferk_close(l->x);
	}
	fprintf(stderr, "WINDOW_OPEN on a session without the capability: %d\n",
		ret);
	return -1;
}

/*
 * Rows of debugfs peers that are up without the capability, once both
 * ends of the session are (10 s scaled). The passive end is up when its
 * ESTABLISHED event is handled, which may come after CONNECT returned,
 * and nothing before asks the peer anything (the debug kernel once read
 * one row).
 */
static int ends_up_without_caps(void)
{
	uint64_t until = t_now_ms() + t_scaled_ms(10000);

	while (t_peers_matching(" up ", " 0x0 0 0 ") < 2 &&
	       t_now_ms() < until)
		usleep(20000);
	return t_peers_matching(" up ", " 0x0 0 0 ");
}

/* A peer that announced no capability: windows refused, CLOSE forced. */
static void old_peer(void)
{
	long long forced = t_stat("closes_forced"), reconnects;
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	struct xferk_frag f;
	struct t_loop l;
	uint64_t exp, rm;
	uint32_t how = 0;
	int ret;

	T_EXPECT(t_fault_set("no_caps", 1) == 0, "no_caps: %s", strerror(errno));
	if (session_without_caps(&l)) {
		T_EXPECT(0, "no session without the capability");
		return;
	}
	memset(l.dst, 0xee, 4 * PAGE);
	ret = xferk_export(l.x, l.conn, l.dst_mr, 0, PAGE, RW, &tok, &exp);
	if (!ret)
		ret = xferk_import(l.x, l.conn, &tok, &rm);
	T_EXPECT(ret == 0, "export, import: %s", strerror(-ret));
	/* Nor notifications: refused before anything is queued. */
	T_EXPECT_ERR(xferk_notify(l.x, rm, 1), EOPNOTSUPP);
	ret = xferk_window_close(l.x, exp, xferk_now_ns() + 5000000000ULL,
				 &how, NULL);
	T_EXPECT(ret == 0 && how == XFERK_CLOSE_FORCED, "close: %d how %u",
		 ret, how);
	T_EXPECT(t_stat("closes_forced") == forced + 1, "closes_forced %lld, was %lld",
		 t_stat("closes_forced"), forced);
	ret = ends_up_without_caps();
	T_EXPECT(ret >= 2, "debugfs peers: %d ends up without the capability",
		 ret);
	/* Nobody told the importer: the device refuses the write. */
	t_fill(l.src, PAGE, 9);
	f = (struct xferk_frag) { .mr = l.src_mr, .len = PAGE, .remote = rm,
				  .opcode = XFERK_OP_WRITE };
	reconnects = t_stat("reconnects");
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_FAILED && s.first_error == -EACCES,
		 "write through a forced-closed export: %d err %d", ret,
		 s.first_error);
	T_EXPECT(l.dst[0] == 0xee && l.dst[PAGE - 1] == 0xee,
		 "the write landed");
	/*
	 * The access error killed the importer's path: both ends of the
	 * session reconnect. Waited for, so that no path's death is still on
	 * its way when the session is ended below (regression: the initiating
	 * end learned of it after CONNECT had returned it to t_end_session(),
	 * which had set reconnect_ms 0, and its EXPORT failed ENOTCONN).
	 */
	T_EXPECT(t_stat_wait("reconnects", reconnects + 2, t_scaled_ms(10000)) ==
		 reconnects + 2, "reconnects %lld, was %lld", t_stat("reconnects"),
		 reconnects);
	xferk_close(l.x);
	t_fault_set("no_caps", 0);
	/* Later tests get a session with the capability again. */
	T_EXPECT(t_end_session() == 0, "could not end the session");
}

static void restore(void)
{
	t_fault_clear();
	t_fault_set("no_caps", 0);
}

int main(void)
{
	uint64_t rm;
	int ret;

	if (xferk_open(&x))
		return T_SKIP;
	if (!(xferk_features(x) & XFERK_FEAT_WINDOWS)) {
		fprintf(stderr, "the module has no windows\n");
		return T_FAIL;
	}
	atexit(restore);
	pool = t_map(POOL_PAGES * PAGE);
	src = t_map(POOL_PAGES * PAGE);
	ret = t_setup(x, src, POOL_PAGES * PAGE, pool, POOL_PAGES * PAGE,
		      &conn, &src_mr, &pool_mr, &rm);
	if (ret)
		return T_FAIL;
	xferk_unimport(x, rm);
	scattered();
	edges();
	close_export();
	close_forced();
	close_ring();
	bad_input();
	xferk_close(x);
	old_peer();
	return t_result();
}
