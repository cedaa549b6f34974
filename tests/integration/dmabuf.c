// SPDX-License-Identifier: GPL-2.0
/*
 * Regions of dma-bufs (XFERK_MR_DMABUF), with vgem's page-backed buffers
 * over soft-RoCE (tests/integration/vgem.h):
 *  - data both ways, checked through the vgem buffer's own CPU mapping:
 *    a dma-buf region as the source of a WRITE into an exported host
 *    region and as the destination of a READ from it, at an unaligned
 *    offset, 1 B to 64 MiB (4 MiB on the debug kernel); dma-buf to
 *    dma-buf through an export of a dma-buf region (1 MiB: soft-RoCE
 *    fast-registers 512 pages, and a dma-buf region has no other way);
 *    a window of a dma-buf region, its blocks out of order, written and
 *    read through, then closed: its import is ESTALE, nothing lands;
 *  - an io_uring SUBMIT of a dma-buf region not mapped yet succeeds: its
 *    non-blocking issue returned EAGAIN (stats/uring_submits_deferred)
 *    and io_uring issued it again from its worker;
 *  - lifecycle: a READ into a dma-buf region whose first completion is
 *    held; meanwhile the dma-buf's fd is closed, the region deregistered
 *    and the vgem device closed: the region stays (stats/dmabuf_regions)
 *    and the exporter lists the module's attachment (debugfs
 *    dma_buf/bufinfo), and the file is still charged with its pages
 *    (max_dmabuf_pages_per_file at them: one more page is EMFILE); once
 *    the op is physically complete and released, the region, the
 *    attachment and the charge go;
 *  - cancel and deadline probes: a held READ into a dma-buf region
 *    cancelled with a short drain, or past its deadline with
 *    cancel-on-deadline: while not reusable the exporter lists the
 *    attachment; once physically complete it is reusable and a canary
 *    written then stays intact;
 *  - kill -9 of the process whose dma-buf region a held READ fills: the
 *    region and the attachment stay until the op is physically complete,
 *    then go; a canary written then stays intact;
 *  - bad input, each refused with its errno and nothing made: an fd that
 *    is not open (EBADF) or not a dma-buf (EINVAL), a range past the
 *    buffer's end (ERANGE) or wrapping (EOVERFLOW), len 0 and unknown
 *    flags (EINVAL), a read-only dma-buf for a region the device writes
 *    (EACCES), a range over max_dmabuf_pages_per_file (EMFILE), also for an
 *    unprivileged process.
 */
#include <sys/wait.h>

#include "test.h"
#include "vgem.h"

#define MIB		(1UL << 20)
#define OFF		100	/* an unaligned offset in the buffer */
/* The exporters' table: each dma-buf with the devices attached to it. */
#define BUFINFO		"/sys/kernel/debug/dma_buf/bufinfo"

/* The vgem device, or exit: T_FAIL in a test VM (which loads vgem). */
static int vgem_or_exit(void)
{
	int dev = t_vgem_open();

	if (dev < 0) {
		fprintf(stderr, "no vgem device (modprobe vgem)\n");
		exit(getenv("XFERK_KERNEL") ? T_FAIL : T_SKIP);
	}
	return dev;
}

static void buf_or_exit(int dev, size_t size, int read_only,
			struct t_vgem_buf *b)
{
	if (t_vgem_create(dev, size, read_only, b)) {
		fprintf(stderr, "vgem buffer of %zu bytes: %s\n", size,
			strerror(errno));
		exit(T_FAIL);
	}
}

/* A host region, exported and imported: where the dma-buf's data goes. */
struct host {
	uint8_t *mem;
	uint64_t mr, remote;
};

static int host_setup(struct xferk *x, uint64_t conn, size_t len,
		      struct host *h)
{
	const uint32_t rw = XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE;
	struct xferk_token tok;
	uint64_t exp;
	int ret;

	h->mem = t_map(len);
	ret = xferk_mr_reg(x, h->mem, len, rw, &h->mr);
	if (!ret)
		ret = xferk_export(x, conn, h->mr, 0, len, rw, &tok, &exp);
	if (!ret)
		ret = xferk_import(x, conn, &tok, &h->remote);
	return ret;
}

static int one(struct xferk *x, uint64_t mr, uint64_t off, uint64_t len,
	       uint64_t remote, uint32_t opcode)
{
	struct xferk_frag f = { .mr = mr, .offset = off, .len = len,
				.remote = remote, .opcode = opcode };
	struct xferk_op_snapshot s;

	return t_run(x, &f, 1, &s);
}

/*
 * A window of a dma-buf region: two blocks, the later one first, written
 * through and read back; the rest of the buffer untouched. Once it is
 * closed (the peer told), its import is refused (ESTALE) and nothing
 * lands.
 */
static void window(struct xferk *x, uint64_t conn, uint64_t a_mr,
		   const struct t_vgem_buf *a, uint64_t b_mr,
		   const struct t_vgem_buf *b)
{
	const struct xferk_block blk[] = {
		{ .offset = 8 * 4096, .len = 2 * 4096 },
		{ .offset = 4096, .len = 4096 },
	};
	struct xferk_token tok;
	uint64_t win, wlen, rm;
	uint32_t how = 0;
	size_t i;
	int ret;

	memset(b->map, 0xee, b->size);
	ret = xferk_window_open(x, conn, b_mr, blk, 2, XFERK_ACCESS_REMOTE_READ |
				XFERK_ACCESS_REMOTE_WRITE, &tok, &win, &wlen);
	if (!ret)
		ret = xferk_import(x, conn, &tok, &rm);
	T_EXPECT(ret == 0 && wlen == 3 * 4096,
		 "window of a dma-buf region: %s, %llu bytes", strerror(-ret),
		 (unsigned long long)wlen);
	if (ret)
		return;
	t_fill(a->map, 3 * 4096, 11);
	ret = one(x, a_mr, 0, 3 * 4096, rm, XFERK_OP_WRITE);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED &&
		 !memcmp(b->map + 8 * 4096, a->map, 2 * 4096) &&
		 !memcmp(b->map + 4096, a->map + 2 * 4096, 4096),
		 "dma-buf -> window of a dma-buf: %d", ret);
	for (i = 0; i < b->size; i++)
		if ((i < 4096 || (i >= 2 * 4096 && i < 8 * 4096) ||
		     i >= 10 * 4096) && b->map[i] != 0xee)
			break;
	T_EXPECT(i == b->size, "byte %zu outside the window written", i);
	memset(a->map, 0, 3 * 4096);
	ret = one(x, a_mr, 0, 3 * 4096, rm, XFERK_OP_READ);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED &&
		 !memcmp(a->map, b->map + 8 * 4096, 2 * 4096) &&
		 !memcmp(a->map + 2 * 4096, b->map + 4096, 4096),
		 "dma-buf <- window of a dma-buf: %d", ret);
	ret = xferk_window_close(x, win, xferk_now_ns() + 5000000000ULL, &how,
				 NULL);
	T_EXPECT(ret == 0 && how == XFERK_CLOSE_COOPERATIVE, "close: %d how %u",
		 ret, how);
	memset(b->map, 0xee, 16 * 4096);
	{
		struct xferk_frag f = { .mr = a_mr, .len = 4096, .remote = rm,
					.opcode = XFERK_OP_WRITE };
		uint64_t op;

		T_EXPECT_ERR(xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0,
					  &op), ESTALE);
	}
	T_EXPECT(b->map[8 * 4096] == (uint8_t)0xee && b->map[4096] == 0xee,
		 "a write through the closed window landed");
	xferk_unimport(x, rm);
}

static void data(struct xferk *x, int dev, uint64_t conn)
{
	const size_t big = t_debug_kernel() ? 4 * MIB : 64 * MIB;
	const uint64_t sizes[] = { 1, 4096, 4096 * 3 + 5, MIB, big };
	struct t_vgem_buf a, b;
	uint64_t a_mr, b_mr, b_remote, exp;
	struct xferk_token tok;
	struct host h;
	unsigned int i;
	int ret;

	buf_or_exit(dev, big + 4096, 0, &a);
	ret = xferk_mr_reg_dmabuf(x, a.fd, 0, a.size, XFERK_ACCESS_LOCAL_SRC |
				  XFERK_ACCESS_LOCAL_DST, &a_mr);
	T_EXPECT(ret == 0, "MR_REG of a dma-buf: %s", strerror(-ret));
	ret = ret ?: host_setup(x, conn, big + 4096, &h);
	if (ret) {
		T_EXPECT(0, "setup: %s", strerror(-ret));
		return;
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t len = sizes[i];

		t_fill(a.map + OFF, len, i);
		memset(h.mem, 0, len + 1);
		ret = one(x, a_mr, OFF, len, h.remote, XFERK_OP_WRITE);
		T_EXPECT(ret == XFERK_STATE_SUCCEEDED &&
			 t_check(h.mem, len, i) < 0 && !h.mem[len],
			 "dma-buf -> host, %llu bytes: %d",
			 (unsigned long long)len, ret);
		t_fill(h.mem, len, i + 100);
		memset(a.map, 0, len + OFF + 1);
		ret = one(x, a_mr, OFF, len, h.remote, XFERK_OP_READ);
		T_EXPECT(ret == XFERK_STATE_SUCCEEDED &&
			 t_check(a.map + OFF, len, i + 100) < 0 &&
			 !a.map[OFF - 1] && !a.map[OFF + len],
			 "host -> dma-buf, %llu bytes: %d",
			 (unsigned long long)len, ret);
	}

	/* dma-buf to dma-buf: an export of a dma-buf region. */
	buf_or_exit(dev, MIB + 4096, 0, &b);
	ret = xferk_mr_reg_dmabuf(x, b.fd, 0, b.size, XFERK_ACCESS_REMOTE_READ |
				  XFERK_ACCESS_REMOTE_WRITE, &b_mr);
	if (!ret)
		ret = xferk_export(x, conn, b_mr, 0, MIB,
				   XFERK_ACCESS_REMOTE_READ |
				   XFERK_ACCESS_REMOTE_WRITE, &tok, &exp);
	if (!ret)
		ret = xferk_import(x, conn, &tok, &b_remote);
	T_EXPECT(ret == 0, "export of a dma-buf region: %s", strerror(-ret));
	if (ret)
		return;
	t_fill(a.map, MIB, 7);
	memset(b.map, 0, b.size);
	ret = one(x, a_mr, 0, MIB, b_remote, XFERK_OP_WRITE);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(b.map, MIB, 7) < 0 &&
		 !b.map[MIB], "dma-buf -> dma-buf: %d", ret);
	t_fill(b.map, MIB, 8);
	memset(a.map, 0, MIB);
	ret = one(x, a_mr, 0, MIB, b_remote, XFERK_OP_READ);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(a.map, MIB, 8) < 0,
		 "dma-buf <- dma-buf: %d", ret);
	xferk_unimport(x, b_remote);
	xferk_unexport(x, exp);
	window(x, conn, a_mr, &a, b_mr, &b);
	xferk_mr_dereg(x, b_mr);
	xferk_mr_dereg(x, a_mr);
	t_vgem_free(&a);
	t_vgem_free(&b);
}

/*
 * An io_uring SUBMIT of a dma-buf region not mapped for the device yet:
 * its first, non-blocking issue must not wait for the exporter, so it is
 * issued again from io_uring's worker (-EAGAIN inside); its CQE says
 * SUCCEEDED and the bytes arrived.
 */
static void ring(struct xferk *x, int dev, uint64_t conn)
{
	struct io_uring_cqe *cqe;
	struct xferk_ioc_submit sub;
	long long deferred;
	struct xferk_frag f;
	struct t_vgem_buf a;
	struct io_uring r;
	uint64_t a_mr;
	struct host h;
	int ret;

	buf_or_exit(dev, MIB, 0, &a);
	ret = xferk_mr_reg_dmabuf(x, a.fd, 0, MIB, XFERK_ACCESS_LOCAL_SRC, &a_mr);
	ret = ret ?: host_setup(x, conn, MIB, &h);
	if (ret) {
		T_EXPECT(0, "setup: %s", strerror(-ret));
		return;
	}
	t_fill(a.map, MIB, 21);
	f = (struct xferk_frag) { .mr = a_mr, .len = MIB, .remote = h.remote,
				  .opcode = XFERK_OP_WRITE };
	sub = (struct xferk_ioc_submit) {
		.size = sizeof(sub), .flags = XFERK_SUBMIT_AUTO_RELEASE,
		.frags = (uintptr_t)&f, .nr_frags = 1, .frag_size = sizeof(f),
		.deadline_ns = xferk_now_ns() + 50000000000ULL,
		.drain_budget_ns = 5000000000ULL,
	};
	deferred = t_stat("uring_submits_deferred");
	t_ring(&r, 4, 0, IORING_SETUP_CQE32);
	io_uring_prep_xferk_submit(t_sqe(&r), xferk_fd(x), &sub);
	ret = io_uring_submit(&r);
	T_EXPECT(ret == 1, "io_uring_submit: %d", ret);
	if (ret != 1) {
		io_uring_queue_exit(&r);
		return;
	}
	ret = io_uring_wait_cqe(&r, &cqe);
	T_EXPECT(ret == 0 && xferk_cqe_succeeded(cqe) &&
		 t_check(h.mem, MIB, 21) < 0,
		 "ring SUBMIT of a dma-buf region: %d, res %d", ret,
		 ret ? 0 : cqe->res);
	if (!ret)
		io_uring_cqe_seen(&r, cqe);
	T_EXPECT(t_stat("uring_submits_deferred") == deferred + 1,
		 "the non-blocking issue did not defer: uring_submits_deferred %lld, was %lld",
		 t_stat("uring_submits_deferred"), deferred);
	io_uring_queue_exit(&r);
	xferk_mr_dereg(x, a_mr);
	t_vgem_free(&a);
}

#define MS	1000000ULL
#define CANARY	0xc5
/*
 * How long a held completion keeps an op in flight while the checks that
 * need it there run (scaled); each is released (t_release_held()) as soon
 * as they are done, so this is a margin, not a wait.
 */
#define HOLD_MS	10000

/* Bytes of @p that are not the canary. */
static size_t not_canary(const uint8_t *p, size_t n)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++)
		bad += p[i] != CANARY;
	return bad;
}

/*
 * The cancel and deadline probes of the lifecycle tests, on a dma-buf
 * region: a READ into it whose first completion is held is cancelled
 * with a 200 ms drain, or reaches its 200 ms deadline with
 * cancel-on-deadline and a 100 ms drain. Its region is deregistered as
 * soon as the op is in flight. While the op is not reusable the region
 * and the exporter's attachment stay; the drain kills the path under the
 * held READ (path_deaths_cancel), and only then is the hold released;
 * once the op is physically complete it says reusable, the region and
 * attachment go, and a canary written into the buffer then stays intact.
 */
static void probes(struct xferk *x, int dev, uint64_t conn)
{
	long long delay_ms = t_fault_get("delay_ms"), before, deaths;
	struct xferk_submit_opts o = {
		.flags = XFERK_SUBMIT_CANCEL_ON_DEADLINE,
		.drain_budget_ns = 100 * MS,
	};
	struct xferk_op_snapshot s;
	struct t_vgem_buf a;
	uint64_t a_mr, op;
	struct host h;
	int ret, mode;

	buf_or_exit(dev, MIB + 4096, 0, &a);
	ret = host_setup(x, conn, MIB, &h);
	if (ret) {
		T_EXPECT(0, "setup: %s", strerror(-ret));
		return;
	}
	t_fill(h.mem, MIB, 5);
	/* Each drain kills the path, however soon after the one before. */
	T_EXPECT(t_param_scoped("escalation_interval_ms", 0) == 0,
		 "escalation_interval_ms");
	for (mode = 0; mode < 2; mode++) {
		const char *what = mode ? "deadline" : "cancel";
		struct xferk_frag f = { .len = MIB, .remote = h.remote,
					.opcode = XFERK_OP_READ };

		memset(a.map, 0, MIB);
		if (t_quiet() || t_fault_set("delay_ms", t_scaled_ms(HOLD_MS)) ||
		    t_fault_set("delay_completions", 1)) {
			T_EXPECT(0, "%s: fault knobs", what);
			break;
		}
		before = t_stat("dmabuf_regions");
		deaths = t_stat("path_deaths_cancel");
		ret = xferk_mr_reg_dmabuf(x, a.fd, 0, MIB, XFERK_ACCESS_LOCAL_DST,
					  &a_mr);
		f.mr = a_mr;
		if (!ret)
			ret = mode ? xferk_submit_ex(x, &f, 1, xferk_now_ns() +
						     200 * MS, &o, &op) :
				     xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE,
						  0, &op);
		if (ret || t_fault_taken("delay_completions", t_scaled_ms(30000))) {
			T_EXPECT(0, "%s: a held READ: %s", what, strerror(-ret));
			break;
		}
		xferk_mr_dereg(x, a_mr);
		if (mode)
			xferk_wait(x, op, XFERK_DEADLINE_NONE, 0, &s);
		else
			xferk_cancel_drain(x, op, xferk_now_ns() + 200 * MS, &s);
		printf("%s: %s, reusable %u", what, xferk_state_name(s.state),
		       s.buffer_reusable);
		T_EXPECT(s.buffer_reusable ||
			 (t_stat("dmabuf_regions") == before + 1 &&
			  t_file_has(BUFINFO, "xferk-dma")),
			 "%s: %s, not reusable, but the region (%lld, was %lld) or its attachment went",
			 what, xferk_state_name(s.state),
			 t_stat("dmabuf_regions"), before);
		/* The drain killed the path while the READ was held. */
		T_EXPECT(t_stat_wait("path_deaths_cancel", deaths + 1,
				     t_scaled_ms(10000)) == deaths + 1,
			 "%s: path_deaths_cancel %lld, was %lld", what,
			 t_stat("path_deaths_cancel"), deaths);
		t_release_held();
		ret = xferk_wait(x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL,
				 &s);
		printf("; physically %s\n", xferk_state_name(s.state));
		T_EXPECT(s.buffer_reusable && (s.state == XFERK_STATE_DRAINED ||
					       s.state == XFERK_STATE_TIMED_OUT) &&
			 (!mode || s.deadline_timeouts == 1),
			 "%s: physically: %d %s, reusable %u", what, ret,
			 xferk_state_name(s.state), s.buffer_reusable);
		/* Reused the moment it is reusable: nothing may land later. */
		memset(a.map, CANARY, MIB);
		xferk_release(x, op);
		T_EXPECT(t_stat_wait("dmabuf_regions", before, 10000) == before &&
			 !t_file_has(BUFINFO, "xferk-dma"),
			 "%s: the region (%lld, was %lld) or its attachment stayed",
			 what, t_stat("dmabuf_regions"), before);
		usleep(300 * 1000);
		T_EXPECT(!not_canary(a.map, MIB),
			 "%s: a late access changed %zu canary bytes", what,
			 not_canary(a.map, MIB));
	}
	t_fault_set("delay_ms", delay_ms);
	t_vgem_free(&a);
}

/*
 * kill -9 of the process whose dma-buf region a held READ fills: its file
 * goes, the op does not; the region and its attachment stay until the op
 * is physically complete, then go; a canary written then stays intact.
 * The exit drain (400 ms) kills the path under the held READ before the
 * hold is released.
 */
static void killed(struct xferk *x, int dev, uint64_t conn)
{
	long long delay_ms = t_fault_get("delay_ms"), before, deaths;
	int ready[2], ret;
	struct t_vgem_buf a;
	char c = 0;
	pid_t pid;

	(void)x;
	(void)conn;
	/* No op of this process is live: every earlier region has gone. */
	if (t_quiet())
		T_EXPECT(0, "ops still live before the kill");
	before = t_stat("dmabuf_regions");
	deaths = t_stat("path_deaths_cancel");
	/* The exit drain kills the path 200 ms after the kill. */
	T_EXPECT(t_param_scoped("exit_drain_ms", 400) == 0, "exit_drain_ms");
	buf_or_exit(dev, MIB + 4096, 0, &a);
	if (pipe(ready)) {
		T_EXPECT(0, "pipe");
		return;
	}
	pid = fork();
	if (pid < 0) {
		T_EXPECT(0, "fork: %s", strerror(errno));
		close(ready[0]);
		close(ready[1]);
		t_vgem_free(&a);
		return;
	}
	if (pid == 0) {
		struct xferk *cx;
		uint64_t cconn, mr, op;
		struct host h;
		struct xferk_frag f;

		close(ready[0]);
		if (xferk_open(&cx) ||
		    xferk_connect(cx, t_peer(), 0, t_connect_ms(), &cconn) ||
		    xferk_mr_reg_dmabuf(cx, a.fd, 0, MIB, XFERK_ACCESS_LOCAL_DST,
					&mr) || host_setup(cx, cconn, MIB, &h))
			_exit(1);
		t_fill(h.mem, MIB, 6);
		f = (struct xferk_frag) { .mr = mr, .len = MIB, .remote = h.remote,
					  .opcode = XFERK_OP_READ };
		if (t_submit_held(cx, &f, 1, t_scaled_ms(HOLD_MS), &op))
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ret = read(ready[0], &c, 1);
	close(ready[0]);
	close(a.fd);	/* the child's copy is the only one, until it dies */
	a.fd = -1;
	T_EXPECT(ret == 1 && c == 'r', "the child's held READ");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (ret == 1) {
		T_EXPECT(t_stat("dmabuf_regions") == before + 1,
			 "killed in flight: dmabuf_regions %lld, want %lld",
			 t_stat("dmabuf_regions"), before + 1);
		T_EXPECT(t_file_has(BUFINFO, "xferk-dma"),
			 "killed in flight: the exporter lists no attachment");
		T_EXPECT(t_stat_wait("path_deaths_cancel", deaths + 1,
				     t_scaled_ms(10000)) == deaths + 1,
			 "killed: the exit drain killed no path (%lld, was %lld)",
			 t_stat("path_deaths_cancel"), deaths);
	}
	t_release_held();
	T_EXPECT(t_stat_wait("dmabuf_regions", before, t_scaled_ms(30000)) ==
		 before, "after the op: dmabuf_regions %lld, want %lld",
		 t_stat("dmabuf_regions"), before);
	T_EXPECT(!t_file_has(BUFINFO, "xferk-dma"),
		 "after the op: the exporter still lists xferk-dma attached");
	memset(a.map, CANARY, MIB);
	usleep(300 * 1000);
	T_EXPECT(!not_canary(a.map, MIB), "killed: a late access changed %zu canary bytes",
		 not_canary(a.map, MIB));
	t_fault_set("delay_ms", delay_ms);
	t_vgem_free(&a);
}

/* Everything that could let the dma-buf go, while an op is in flight. */
static void lifecycle(struct xferk *x, uint64_t conn)
{
	const long long before = t_stat("dmabuf_regions");
	long long delay_ms = t_fault_get("delay_ms");
	long long limit = t_param("max_dmabuf_pages_per_file");
	struct xferk_op_snapshot s;
	struct t_vgem_buf a, c;
	int dev = vgem_or_exit();
	uint64_t a_mr, c_mr, op;
	struct host h;
	int ret;

	buf_or_exit(dev, MIB, 0, &a);
	buf_or_exit(dev, 4096, 0, &c);
	ret = xferk_mr_reg_dmabuf(x, a.fd, 0, MIB, XFERK_ACCESS_LOCAL_DST, &a_mr);
	ret = ret ?: host_setup(x, conn, MIB, &h);
	if (ret) {
		T_EXPECT(0, "setup: %s", strerror(-ret));
		return;
	}
	T_EXPECT(t_stat("dmabuf_regions") == before + 1, "dmabuf_regions %lld",
		 t_stat("dmabuf_regions"));
	t_fill(h.mem, MIB, 3);
	memset(a.map, 0, MIB);
	{
		struct xferk_frag f = { .mr = a_mr, .len = MIB,
					.remote = h.remote,
					.opcode = XFERK_OP_READ };

		if (t_submit_held(x, &f, 1, t_scaled_ms(HOLD_MS), &op)) {
			T_EXPECT(0, "a held READ");
			return;
		}
	}
	/* Its fd, its region and the exporter's device go; the op holds it. */
	close(a.fd);
	a.fd = -1;
	T_EXPECT(xferk_mr_dereg(x, a_mr) == 0, "MR_DEREG in flight");
	close(dev);
	T_EXPECT(t_stat("dmabuf_regions") == before + 1,
		 "in flight: dmabuf_regions %lld, want %lld",
		 t_stat("dmabuf_regions"), before + 1);
	T_EXPECT(t_file_has(BUFINFO, "xferk-dma"),
		 "in flight: the exporter lists no attachment of xferk-dma");
	/* The file is still charged with the pages the op holds. */
	T_EXPECT(limit > 0 && !t_set_param("max_dmabuf_pages_per_file",
					   MIB / 4096), "limit to 256 pages");
	T_EXPECT_ERR(xferk_mr_reg_dmabuf(x, c.fd, 0, 4096,
					 XFERK_ACCESS_LOCAL_DST, &c_mr), EMFILE);
	t_release_held();
	ret = xferk_wait(x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED,
		 "the READ: %d, state %u", ret, s.state);
	T_EXPECT(t_check(a.map, MIB, 3) < 0,
		 "the READ landed in the buffer after its fd and region went");
	xferk_release(x, op);
	T_EXPECT(t_stat_wait("dmabuf_regions", before, 10000) == before,
		 "after the op: dmabuf_regions %lld, want %lld",
		 t_stat("dmabuf_regions"), before);
	T_EXPECT(!t_file_has(BUFINFO, "xferk-dma"),
		 "after the op: the exporter still lists xferk-dma attached");
	ret = xferk_mr_reg_dmabuf(x, c.fd, 0, 4096, XFERK_ACCESS_LOCAL_DST,
				  &c_mr);
	T_EXPECT(ret == 0, "after the op, its pages are the file's again: %s",
		 strerror(-ret));
	if (!ret)
		xferk_mr_dereg(x, c_mr);
	t_set_param("max_dmabuf_pages_per_file", limit);
	t_fault_set("delay_ms", delay_ms);
	t_vgem_free(&a);
	t_vgem_free(&c);
}

/*
 * With max_dmabuf_pages_per_file at 1: an unprivileged process (nobody,
 * in the group that may open /dev/xferk) registers one page of @fd and is
 * refused a second (EMFILE), on its own file. 0, or 1 if not so.
 */
static int unprivileged_limit(int fd)
{
	int status = 1;
	pid_t pid = fork();

	if (pid == 0) {
		struct xferk *ux;
		uint64_t mr, mr2;

		t_become_user(1);
		if (xferk_open(&ux) ||
		    xferk_mr_reg_dmabuf(ux, fd, 0, 4096, XFERK_ACCESS_LOCAL_SRC, &mr) ||
		    xferk_mr_reg_dmabuf(ux, fd, 4096, 4096, XFERK_ACCESS_LOCAL_SRC,
					&mr2) != -EMFILE)
			_exit(1);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	return status;
}

static void bad_input(struct xferk *x, int dev)
{
	const long long before = t_stat("dmabuf_regions");
	const uint32_t w = XFERK_ACCESS_LOCAL_DST;
	long long limit = t_param("max_dmabuf_pages_per_file");
	struct t_vgem_buf b, ro;
	uint64_t mr = 0, mr2;
	int fd;

	buf_or_exit(dev, 2 * 4096, 0, &b);
	buf_or_exit(dev, 4096, 1, &ro);
	fd = open("/dev/null", O_RDWR);
	T_EXPECT_ERR(xferk_mr_reg_dmabuf(x, 1000, 0, 4096, w, &mr), EBADF);
	T_EXPECT_ERR(xferk_mr_reg_dmabuf(x, fd, 0, 4096, w, &mr), EINVAL);
	T_EXPECT_ERR(xferk_mr_reg_dmabuf(x, b.fd, 4096, 4097, w, &mr), ERANGE);
	T_EXPECT_ERR(xferk_mr_reg_dmabuf(x, b.fd, 1, b.size, w, &mr), ERANGE);
	T_EXPECT_ERR(xferk_mr_reg_dmabuf(x, b.fd, ~0ULL - 10, 4096, w, &mr),
		     EOVERFLOW);
	T_EXPECT_ERR(xferk_mr_reg_dmabuf(x, b.fd, 0, 0, w, &mr), EINVAL);
	T_EXPECT_ERR(xferk_mr_reg_dmabuf(x, b.fd, 0, 4096, 0, &mr), EINVAL);
	T_EXPECT_ERR(xferk_mr_reg_dmabuf(x, ro.fd, 0, 4096, w, &mr), EACCES);
	T_EXPECT(xferk_mr_reg_dmabuf(x, ro.fd, 0, 4096, XFERK_ACCESS_LOCAL_SRC,
				     &mr) == 0, "a read-only dma-buf as a source");
	xferk_mr_dereg(x, mr);
	{
		struct xferk_ioc_mr_reg a = {
			.size = sizeof(a), .flags = 1U << 31, .len = 4096,
			.access = w, .dmabuf_fd = b.fd,
		};

		T_EXPECT(ioctl(xferk_fd(x), XFERK_IOC_MR_REG, &a) == -1 &&
			 errno == EINVAL, "unknown flags: %s", strerror(errno));
	}
	if (limit > 0 && !t_set_param("max_dmabuf_pages_per_file", 1)) {
		T_EXPECT(xferk_mr_reg_dmabuf(x, b.fd, 0, 4096, w, &mr) == 0,
			 "one page within the limit");
		T_EXPECT_ERR(xferk_mr_reg_dmabuf(x, b.fd, 4096, 4096, w, &mr2),
			     EMFILE);
		xferk_mr_dereg(x, mr);
		T_EXPECT(xferk_mr_reg_dmabuf(x, b.fd, 4096, 4096, w, &mr) == 0,
			 "the page is the file's again after MR_DEREG");
		xferk_mr_dereg(x, mr);
		T_EXPECT(unprivileged_limit(b.fd) == 0,
			 "an unprivileged process past the limit");
		t_set_param("max_dmabuf_pages_per_file", limit);
	} else {
		T_EXPECT(0, "no parameter max_dmabuf_pages_per_file");
	}
	close(fd);
	t_vgem_free(&b);
	t_vgem_free(&ro);
	T_EXPECT(t_stat_wait("dmabuf_regions", before, 10000) == before,
		 "bad input left nothing: dmabuf_regions %lld, want %lld",
		 t_stat("dmabuf_regions"), before);
}

int main(void)
{
	struct xferk *x;
	uint64_t conn;
	int dev, ret;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	if (xferk_open(&x))
		return T_FAIL;
	if (!(xferk_features(x) & XFERK_FEAT_DMABUF)) {
		fprintf(stderr, "the module has no XFERK_FEAT_DMABUF\n");
		return T_FAIL;
	}
	dev = vgem_or_exit();
	ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn);
	if (ret) {
		fprintf(stderr, "connect: %s\n", strerror(-ret));
		return T_FAIL;
	}
	data(x, dev, conn);
	ring(x, dev, conn);
	bad_input(x, dev);
	lifecycle(x, conn);
	probes(x, vgem_or_exit(), conn);
	killed(x, vgem_or_exit(), conn);
	close(dev);
	xferk_close(x);
	return t_result();
}
