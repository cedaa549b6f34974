// SPDX-License-Identifier: GPL-2.0
/*
 * xferk-bench: benchmarks of /dev/xferk.
 *
 *   xferk-bench ctrl [--quick] [--json FILE]
 *   xferk-bench qos [--quick] [--json FILE] [--peer IP]
 *   xferk-bench bw [--quick] [--json FILE] [--peer IP]
 *   xferk-bench kernel [--quick] [--json FILE] [--peer IP] [--hogs N]
 *   xferk-bench moderation [--quick] [--json FILE] [--peer IP]
 *
 * ctrl: the control-plane cost of an op, on the scripted null peer (no
 * data moves; needs CAP_SYS_ADMIN). For 1, 16, 256 and 4096 fragments of
 * 64 bytes per op it measures
 *   ioctl      XFERK_IOC_SUBMIT + XFERK_IOC_WAIT (physical) + RELEASE
 *   io_uring   B parked SUBMITs (auto-release) per io_uring_enter, B = 1,
 *              16, 64, until all B CQEs are reaped
 *   nop        B IORING_OP_NOPs per io_uring_enter: the ring's floor
 * and prints the median and 95th percentile per op and per fragment, as a
 * table and as JSON (stdout, or FILE). The fragments follow each other
 * (layout "contig": the kernel carries a run of them in shared chunks);
 * "scatter" rows (ioctl, and io_uring batch 16) repeat 16, 256 and 4096
 * fragments with a 64-byte gap between them: one chunk each. Every op must succeed: exit 0, or 1
 * on any failure. --quick is a smoke run of every path with few ops.
 *
 * qos: the admission queue over a real RDMA device (PEER, default
 * 10.99.0.1: loopback over the test VM's soft-RoCE). The latency (median,
 * p99) of a critical-class 64 KiB WRITE alone; then while bulk-class
 * processes keep the device saturated (1 MiB WRITEs, BULK_DEPTH each in
 * flight), with the queue (its qp_window, and 4) and with queue_bypass;
 * and the bulk throughput of 1, 2, 4 and 8 processes with both windows.
 * Needs root (queue_bypass, qp_window).
 *
 * bw: the data path over a real RDMA device (rxe0, PEER as for qos) next
 * to perftest in the same run. For WRITE and READ, 4 KiB, 64 KiB, 1 MiB
 * and 16 MiB messages and queue depths 1, 8 and 64 (not 16 MiB x 64): one
 * process keeps DEPTH single-fragment ops in flight through io_uring for
 * 2 s (after a 0.5 s warm-up), and ib_write_bw/ib_read_bw runs with the
 * same -s and -t (one QP) for about as many messages. Each row reports
 * MB/s (10^6 bytes), thousand messages per second and the busy CPU
 * seconds of the whole machine (user, system, irq, softirq from
 * /proc/stat) per GiB moved, the ratios xferk/perftest, and the p99 and
 * slowest of xferk's op latencies. All rows run in three passes, the
 * second with perftest first; the tables print medians over the passes,
 * and for MB/s and the bandwidth ratio (xferk / perftest in the same pass)
 * the least and the most as well. Then QPs per session: 4 KiB and 64 KiB
 * WRITEs, 64 in flight, over sessions of 1, 2 and 4 QPs (each
 * count but 1 a session of its own to an address of this host that bw
 * adds to dummy0, 10.99.0.102 and .104; only with the default peer), next
 * to perftest with -q QPS sharing the same depth. Then 1, 2, 4 and 8
 * processes, each with its own file and 4 x 1 MiB WRITEs in flight, share
 * the host's connection: aggregate MB/s and Jain's fairness index. The
 * admission queue's windows are opened for the run (qp_window 124,
 * qp_window_bytes_min and _max, dev_window_bytes, op_window_bytes 1 GiB,
 * op_window_chunks 1024) and
 * restored after it; qos measures the queue's policy. Without perftest
 * only xferk's rows are printed. --quick: 4 KiB and 1 MiB, depths 1 and 64,
 * 1 and 4 QPs at 4 KiB, one pass of 0.5 s rows. Needs root (the queue's windows,
 * the addresses).
 *
 * moderation: completion moderation on and off in turn, over scattered
 * 4 KiB and 16 KiB fragments (see bench_moderation()). --quick: 4 KiB,
 * one pass of 0.5 s rows. Needs root (moderate_completions).
 *
 * kernel: xferk next to nvme-rdma, the kernel's own consumer of the same
 * device, in the same boot (see bench_kernel()): 4 KiB and 64 KiB ops at
 * depths 1 and 8, RDMA WRITE and READ, three passes of 5 s rows; each row's rate, p50
 * and p99 latency, busy CPU per op and rxe's retransmissions, then the
 * medians, spreads and the ratio xferk / nvme-rdma per pass. --hogs N runs
 * N busy loops at nice 19 meanwhile. Needs root, fio, null_blk,
 * nvmet-rdma and nvme-rdma; exits 77 without them. --quick: one pass of
 * 1 s rows, 4 KiB only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <liburing.h>

#include "libxferk.h"
#include "xferk_uring.h"

#define MAX_FRAGS	4096
#define FRAG_LEN	64
#define MAX_BATCH	64
#define SEC		1000000000ULL
#define MAX_SAMPLES	20000
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

enum method { M_IOCTL, M_URING, M_NOP };
static const char *const method_names[] = { "ioctl", "io_uring", "nop" };

struct result {
	enum method method;
	int scatter;
	unsigned int batch;
	unsigned int frags;
	unsigned int samples;
	double op_median_ns;
	double op_p95_ns;
};

struct bench {
	struct xferk *x;
	struct io_uring ring;
	struct xferk_frag contig[MAX_FRAGS];
	struct xferk_frag scatter[MAX_FRAGS];
	struct xferk_frag *frags;	/* the layout measured */
	struct xferk_ioc_submit subs[MAX_BATCH];
	double *samples;
	struct result results[64];
	unsigned int nr_results;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double percentile(double *v, unsigned int n, double p)
{
	return v[(unsigned int)(p * (n - 1) + 0.5)];
}

/*
 * The median of @n values (sorted in place); of an even number of them,
 * the mean of the middle two.
 */
static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(double), cmp_double);
	if (!n)
		return 0;
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Where a benchmark's JSON goes: the file @json, or stdout without one. */
static FILE *json_open(const char *json)
{
	FILE *f = json ? fopen(json, "w") : stdout;

	if (!f)
		perror(json);
	return f;
}

/* One ioctl op: submit, wait until physically complete, release. */
static int run_ioctl(struct bench *b, unsigned int frags)
{
	struct xferk_op_snapshot snap;
	uint64_t op;
	int ret;

	ret = xferk_submit(b->x, b->frags, frags, XFERK_DEADLINE_NONE, 0, &op);
	if (ret)
		return ret;
	ret = xferk_wait(b->x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL,
			 &snap);
	if (!ret && snap.state != XFERK_STATE_SUCCEEDED)
		ret = -EIO;
	xferk_release(b->x, op);
	return ret;
}

/* @batch SQEs (submits or NOPs) in one io_uring_enter, then their CQEs. */
static int run_ring(struct bench *b, enum method m, unsigned int frags,
		    unsigned int batch)
{
	uint64_t deadline = xferk_now_ns() + 10 * SEC;
	struct io_uring_cqe *cqe;
	unsigned int i, seen = 0;
	int ret = 0;

	for (i = 0; i < batch; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);

		if (m == M_NOP) {
			io_uring_prep_nop(sqe);
			continue;
		}
		b->subs[i] = (struct xferk_ioc_submit) {
			.size = sizeof(b->subs[i]),
			.flags = XFERK_SUBMIT_AUTO_RELEASE,
			.frags = (uintptr_t)b->frags, .nr_frags = frags,
			.frag_size = sizeof(b->frags[0]),
			.deadline_ns = deadline,
		};
		io_uring_prep_xferk_submit(sqe, xferk_fd(b->x), &b->subs[i]);
	}
	ret = io_uring_submit_and_wait(&b->ring, batch);
	if (ret < 0)
		return ret;
	for (ret = 0; seen < batch; seen++) {
		int r = io_uring_wait_cqe(&b->ring, &cqe);

		if (r)
			return r;
		if (cqe->res != (m == M_NOP ? 0 : XFERK_STATE_SUCCEEDED))
			ret = cqe->res < 0 ? cqe->res : -EIO;
		io_uring_cqe_seen(&b->ring, cqe);
	}
	return ret;
}

static int measure(struct bench *b, enum method m, unsigned int frags,
		   unsigned int batch, unsigned int ops)
{
	unsigned int n = (ops + batch - 1) / batch, i;
	struct result *r = &b->results[b->nr_results++];
	int ret;

	/* Warm up, then measure. */
	for (i = 0; i < n / 10 + 1; i++) {
		ret = m == M_IOCTL ? run_ioctl(b, frags) : run_ring(b, m, frags, batch);
		if (ret)
			goto fail;
	}
	for (i = 0; i < n; i++) {
		uint64_t t0 = xferk_now_ns();

		ret = m == M_IOCTL ? run_ioctl(b, frags) : run_ring(b, m, frags, batch);
		if (ret)
			goto fail;
		b->samples[i] = (double)(xferk_now_ns() - t0) / batch;
	}
	qsort(b->samples, n, sizeof(double), cmp_double);
	*r = (struct result) {
		.method = m, .scatter = b->frags == b->scatter,
		.batch = batch, .frags = frags, .samples = n,
		.op_median_ns = percentile(b->samples, n, 0.5),
		.op_p95_ns = percentile(b->samples, n, 0.95),
	};
	return 0;
fail:
	fprintf(stderr, "%s batch %u, %u fragments: %s\n", method_names[m],
		batch, frags, strerror(-ret));
	return ret;
}

static const struct result *find(const struct bench *b, enum method m,
				 unsigned int frags, unsigned int batch)
{
	unsigned int i;

	for (i = 0; i < b->nr_results; i++)
		if (b->results[i].method == m && b->results[i].batch == batch &&
		    !b->results[i].scatter &&
		    (m == M_NOP || b->results[i].frags == frags))
			return &b->results[i];
	return NULL;
}

static void print_table(const struct bench *b)
{
	unsigned int i;

	printf("%-9s %-7s %5s %5s %8s %12s %12s %12s %12s %8s %9s\n", "method",
	       "layout", "batch", "frags", "samples", "op_med_ns", "op_p95_ns",
	       "frag_med_ns", "frag_p95_ns", "vs_nop", "vs_ioctl");
	for (i = 0; i < b->nr_results; i++) {
		const struct result *r = &b->results[i];
		const struct result *nop = find(b, M_NOP, 0, r->batch);
		const struct result *ioc = find(b, M_IOCTL, r->frags, 1);
		unsigned int frags = r->method == M_NOP ? 1 : r->frags;

		printf("%-9s %-7s %5u %5u %8u %12.0f %12.0f %12.1f %12.1f ",
		       method_names[r->method],
		       r->method == M_NOP ? "-" : r->scatter ? "scatter" : "contig",
		       r->batch,
		       r->method == M_NOP ? 0 : r->frags, r->samples,
		       r->op_median_ns, r->op_p95_ns, r->op_median_ns / frags,
		       r->op_p95_ns / frags);
		if (r->method == M_URING && nop && !r->scatter)
			printf("%8.1f ", r->op_median_ns / nop->op_median_ns);
		else
			printf("%8s ", "-");
		if (r->method == M_URING && ioc && !r->scatter)
			printf("%9.2f\n", r->op_median_ns / ioc->op_median_ns);
		else
			printf("%9s\n", "-");
	}
}

static void print_json(const struct bench *b, FILE *f)
{
	unsigned int i;

	fprintf(f, "{\"benchmark\": \"ctrl\", \"peer\": \"null\", \"results\": [\n");
	for (i = 0; i < b->nr_results; i++) {
		const struct result *r = &b->results[i];
		unsigned int frags = r->method == M_NOP ? 1 : r->frags;

		fprintf(f, "  {\"method\": \"%s\", \"layout\": \"%s\", \"batch\": %u, \"frags\": %u, "
			"\"samples\": %u, \"op_median_ns\": %.0f, "
			"\"op_p95_ns\": %.0f, \"frag_median_ns\": %.1f, "
			"\"frag_p95_ns\": %.1f}%s\n", method_names[r->method],
			r->method == M_NOP ? "-" : r->scatter ? "scatter" : "contig",
			r->batch, r->method == M_NOP ? 0 : r->frags, r->samples,
			r->op_median_ns, r->op_p95_ns, r->op_median_ns / frags,
			r->op_p95_ns / frags, i + 1 < b->nr_results ? "," : "");
	}
	fprintf(f, "]}\n");
}

static int setup(struct bench *b)
{
	static uint8_t local[2 * MAX_FRAGS * FRAG_LEN];
	static uint8_t remote[2 * MAX_FRAGS * FRAG_LEN];
	uint64_t conn, mr, rmr, exp, rem;
	struct xferk_token tok;
	unsigned int i;
	int ret;

	ret = xferk_open(&b->x);
	if (!ret)
		ret = xferk_connect_null(b->x, 0, &conn);
	if (!ret)
		ret = xferk_mr_reg(b->x, local, sizeof(local),
				   XFERK_ACCESS_LOCAL_SRC, &mr);
	if (!ret)
		ret = xferk_mr_reg(b->x, remote, sizeof(remote),
				   XFERK_ACCESS_REMOTE_WRITE, &rmr);
	if (!ret)
		ret = xferk_export(b->x, conn, rmr, 0, sizeof(remote),
				   XFERK_ACCESS_REMOTE_WRITE, &tok, &exp);
	if (!ret)
		ret = xferk_import(b->x, conn, &tok, &rem);
	if (!ret)
		ret = io_uring_queue_init(2 * MAX_BATCH, &b->ring, 0);
	if (ret) {
		fprintf(stderr, "setup: %s\n", strerror(-ret));
		return ret;
	}
	for (i = 0; i < MAX_FRAGS; i++) {
		b->contig[i] = (struct xferk_frag) {
			.mr = mr, .offset = i * FRAG_LEN, .len = FRAG_LEN,
			.remote = rem, .remote_offset = i * FRAG_LEN,
			.opcode = XFERK_OP_WRITE,
		};
		b->scatter[i] = b->contig[i];
		b->scatter[i].offset = 2 * i * FRAG_LEN;
		b->scatter[i].remote_offset = 2 * i * FRAG_LEN;
	}
	b->frags = b->contig;
	return 0;
}

static int bench_ctrl(int quick, const char *json)
{
	static const unsigned int frag_counts[] = { 1, 16, 256, 4096 };
	static const unsigned int batches[] = { 1, 16, 64 };
	static struct bench b;
	unsigned int i, j, scale = quick ? 100 : 1;
	FILE *f;

	if (setup(&b))
		return 1;
	b.samples = calloc(MAX_SAMPLES, sizeof(double));
	if (!b.samples)
		return 1;
	for (j = 0; j < 3; j++)
		if (measure(&b, M_NOP, 0, batches[j], 20000 / scale))
			return 1;
	/* --quick: a smoke run (every path, few ops, at most 256 fragments). */
	for (i = 0; i < (quick ? 3 : 4); i++) {
		/* About the same number of fragments for every size. */
		unsigned int ops = 256 * 1024 / (frag_counts[i] + 64) + 64;

		if (ops < 8 * MAX_BATCH)
			ops = 8 * MAX_BATCH;	/* at least 8 samples per batch */
		if (quick)
			ops = 2 * MAX_BATCH;

		if (measure(&b, M_IOCTL, frag_counts[i], 1, ops))
			return 1;
		for (j = 0; j < 3; j++)
			if (measure(&b, M_URING, frag_counts[i], batches[j], ops))
				return 1;
		if (!i)
			continue;
		b.frags = b.scatter;
		if (measure(&b, M_IOCTL, frag_counts[i], 1, ops) ||
		    measure(&b, M_URING, frag_counts[i], 16, ops))
			return 1;
		b.frags = b.contig;
	}
	print_table(&b);
	f = json_open(json);
	if (!f)
		return 1;
	print_json(&b, f);
	if (f != stdout)
		fclose(f);
	io_uring_queue_exit(&b.ring);
	xferk_close(b.x);
	return 0;
}

/*
 * qos, bw: a loopback transfer setup of @len bytes over PEER: a local
 * region (source of WRITEs, destination of READs) and an imported remote
 * range of the same length (written and read).
 */
struct qos_end {
	struct xferk *x;
	uint64_t mr;
	uint64_t remote;
};

/* @qps: QPs per path of a session this makes (0: qps_per_session). */
static int qos_setup(struct qos_end *e, const char *peer, unsigned int qps,
		     size_t len)
{
	const uint32_t local = XFERK_ACCESS_LOCAL_SRC | XFERK_ACCESS_LOCAL_DST;
	const uint32_t remote = XFERK_ACCESS_REMOTE_WRITE |
				XFERK_ACCESS_REMOTE_READ;
	uint8_t *src = mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	/* One extra page: Documentation/testing.md (rxe). */
	uint8_t *dst = mmap(NULL, len + 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	uint64_t conn, dst_mr, exp;
	struct xferk_token tok;
	int ret;

	if (src == MAP_FAILED || dst == MAP_FAILED)
		return -ENOMEM;
	ret = xferk_open(&e->x);
	if (!ret)
		ret = xferk_connect_qps(e->x, peer, 0, 10000, qps, &conn);
	if (!ret)
		ret = xferk_mr_reg(e->x, src, len, local, &e->mr);
	if (!ret)
		ret = xferk_mr_reg(e->x, dst, len + 4096, remote, &dst_mr);
	if (!ret)
		ret = xferk_export(e->x, conn, dst_mr, 0, len + 4096, remote,
				   &tok, &exp);
	if (!ret)
		ret = xferk_import(e->x, conn, &tok, &e->remote);
	if (ret)
		fprintf(stderr, "setup: %s\n", strerror(-ret));
	return ret;
}

#define BULK_LEN	(1UL << 20)
#define BULK_DEPTH	4
#define MAX_WORKERS	8
#define MAX_DEPTH	64

/*
 * A stream: DEPTH ops of one LEN-byte fragment each (all at offset 0) kept
 * in flight through io_uring, auto-released. Each op in flight holds a
 * slot (its SQE's user_data) with its submit time; with @lat set, each
 * completion adds its op's latency (ns) there while there is room.
 */
struct stream {
	struct qos_end e;
	struct io_uring ring;
	struct xferk_frag frag;
	struct xferk_ioc_submit subs[MAX_DEPTH];
	uint64_t sent[MAX_DEPTH];
	unsigned int free_slots[MAX_DEPTH];
	unsigned int nr_free;
	unsigned int depth;
	unsigned int inflight;
	uint8_t prio;
	double *lat;
	unsigned int nr_lat;
	unsigned int max_lat;
};

static int stream_init(struct stream *st, const char *peer, unsigned int qps,
		       size_t len, unsigned int depth, uint8_t opcode,
		       uint8_t prio)
{
	int ret = qos_setup(&st->e, peer, qps, len);

	if (!ret)
		ret = io_uring_queue_init(2 * MAX_DEPTH, &st->ring, 0);
	st->frag = (struct xferk_frag) {
		.mr = st->e.mr, .len = len, .remote = st->e.remote,
		.opcode = opcode,
	};
	st->depth = depth;
	st->inflight = 0;
	st->prio = prio;
	st->lat = NULL;
	st->nr_lat = 0;
	st->max_lat = 0;
	for (st->nr_free = 0; st->nr_free < depth; st->nr_free++)
		st->free_slots[st->nr_free] = st->nr_free;
	return ret;
}

static void stream_exit(struct stream *st)
{
	io_uring_queue_exit(&st->ring);
	xferk_close(st->e.x);
}

/*
 * Tops the stream up to its depth (unless @stop), in one io_uring_enter,
 * waits for a completion and reaps every one that is there. The kernel is
 * done with a submit argument when io_uring_submit() returns.
 * Return: the completions reaped, 0 when nothing is in flight, or a
 * negative errno.
 */
static int stream_step(struct stream *st, int stop)
{
	unsigned int n = stop ? 0 : st->depth - st->inflight, i, slot;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	uint64_t now;
	int ok, ret;

	now = xferk_now_ns();
	for (i = 0; i < n; i++) {
		slot = st->free_slots[--st->nr_free];
		st->sent[slot] = now;
		st->subs[i] = (struct xferk_ioc_submit) {
			.size = sizeof(st->subs[i]),
			.flags = XFERK_SUBMIT_AUTO_RELEASE,
			.frags = (uintptr_t)&st->frag, .nr_frags = 1,
			.frag_size = sizeof(st->frag),
			.deadline_ns = now + 50 * SEC,
			.priority = st->prio,
		};
		sqe = io_uring_get_sqe(&st->ring);
		io_uring_prep_xferk_submit(sqe, xferk_fd(st->e.x), &st->subs[i]);
		io_uring_sqe_set_data64(sqe, slot);
	}
	if (n) {
		ret = io_uring_submit(&st->ring);
		if (ret < 0 || (unsigned int)ret != n)
			return ret < 0 ? ret : -EIO;
		st->inflight += n;
	}
	if (!st->inflight)
		return 0;
	ret = io_uring_wait_cqe(&st->ring, &cqe);
	now = st->lat ? xferk_now_ns() : 0;
	for (n = 0, ok = 1; !ret; n++) {
		ok &= xferk_cqe_succeeded(cqe);
		if (cqe->user_data < st->depth) {
			slot = (unsigned int)cqe->user_data;
			if (st->lat && st->nr_lat < st->max_lat)
				st->lat[st->nr_lat++] = (double)(now - st->sent[slot]);
			st->free_slots[st->nr_free++] = slot;
		} else {
			ok = 0;
		}
		io_uring_cqe_seen(&st->ring, cqe);
		st->inflight--;
		ret = io_uring_peek_cqe(&st->ring, &cqe);
	}
	if (!ok)
		return -EIO;
	return n ? (int)n : ret;
}

struct qos_shared {
	volatile int stop;
	volatile uint64_t bytes[MAX_WORKERS];
	size_t len;
	unsigned int depth;
	uint8_t opcode;
	uint8_t prio;
};

/* A worker process: a stream as @sh says, until told to stop. */
static void bulk_worker(const char *peer, struct qos_shared *sh, int id,
			int ready)
{
	struct stream st;
	int ret;

	if (stream_init(&st, peer, 0, sh->len, sh->depth, sh->opcode,
			sh->prio) ||
	    write(ready, "R", 1) != 1)
		_exit(1);
	while ((ret = stream_step(&st, sh->stop)) > 0)
		sh->bytes[id] += ret * sh->len;
	_exit(ret ? 1 : 0);
}

/* @n workers of (@len, @depth, @opcode, @prio); returns once all are ready. */
static int start_workers(const char *peer, struct qos_shared *sh, int n,
			 pid_t *pids)
{
	int i;

	sh->stop = 0;
	for (i = 0; i < n; i++) {
		int p[2];
		char c;

		sh->bytes[i] = 0;
		if (pipe(p))
			return -errno;
		pids[i] = fork();
		if (pids[i] == 0) {
			close(p[0]);
			bulk_worker(peer, sh, i, p[1]);
		}
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			return -EIO;
		close(p[0]);
	}
	return 0;
}

static int stop_workers(struct qos_shared *sh, int n, pid_t *pids)
{
	int i, status, ret = 0;

	sh->stop = 1;
	for (i = 0; i < n; i++) {
		waitpid(pids[i], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			ret = -EIO;
	}
	return ret;
}

/* @n critical 64 KiB WRITEs, one at a time: median and p99 in ns. */
static int critical_latency(struct qos_end *e, unsigned int n, double *med,
			    double *p99)
{
	struct xferk_submit_opts opts = { .priority = XFERK_PRIO_CRITICAL };
	struct xferk_frag f = { .mr = e->mr, .len = 64 << 10,
				.remote = e->remote, .opcode = XFERK_OP_WRITE };
	double v[1024];
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct xferk_op_snapshot snap;
		uint64_t op, t0 = xferk_now_ns();
		int ret = xferk_submit_ex(e->x, &f, 1, XFERK_DEADLINE_NONE, &opts, &op);

		if (!ret)
			ret = xferk_wait(e->x, op, XFERK_DEADLINE_NONE,
					 XFERK_WAIT_PHYSICAL, &snap);
		if (!ret && snap.state != XFERK_STATE_SUCCEEDED)
			ret = -EIO;
		if (ret)
			return ret;
		v[i] = (double)(xferk_now_ns() - t0);
		xferk_release(e->x, op);
	}
	qsort(v, n, sizeof(double), cmp_double);
	*med = percentile(v, n, 0.5);
	*p99 = percentile(v, n, 0.99);
	return 0;
}

static int write_text(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno ?: -EIO;
	close(fd);
	return ret;
}

static int write_number(const char *path, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	return write_text(path, buf);
}

static long long read_number(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v = -1;

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

#define BYPASS		"/sys/module/xferk/parameters/queue_bypass"
#define QP_WINDOW	"/sys/class/misc/xferk/queue/qp_window"

/* A latency scenario: bulk load or not, through the queue or around it. */
struct qos_scenario {
	const char *name;
	int bulk;
	int bypass;
	int qp_window;		/* 0: as configured */
};

static int bench_qos(int quick, const char *json, const char *peer)
{
	const struct qos_scenario sc[] = {
		{ "alone", 0, 0, 0 },
		{ "bulk, queue", 1, 0, 0 },
		{ "bulk, queue, qp_window 4", 1, 0, 4 },
		{ "bulk, bypass", 1, 1, 0 },
	};
	const unsigned int nsc = ARRAY_SIZE(sc), bypass = nsc - 1;
	long long window = read_number(QP_WINDOW);
	unsigned int samples = quick ? 10 : 50, i;
	int workers = quick ? 2 : 4, secs = quick ? 1 : 3, ret;
	double med[ARRAY_SIZE(sc)], p99[ARRAY_SIZE(sc)], mbs[8];
	pid_t pids[MAX_WORKERS];
	struct qos_shared *sh;
	struct qos_end e;
	FILE *f;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || window < 0 || qos_setup(&e, peer, 0, 64 << 10))
		return 1;
	sh->len = BULK_LEN;
	sh->depth = BULK_DEPTH;
	sh->opcode = XFERK_OP_WRITE;
	sh->prio = XFERK_PRIO_BULK;
	for (i = 0, ret = 0; i < nsc && !ret; i++) {
		ret = write_number(BYPASS, sc[i].bypass);
		if (!ret)
			ret = write_number(QP_WINDOW, sc[i].qp_window ?: window);
		if (!ret && sc[i].bulk)
			ret = start_workers(peer, sh, workers, pids);
		if (!ret) {
			if (sc[i].bulk)
				sleep(1);	/* saturate */
			ret = critical_latency(&e, samples, &med[i], &p99[i]);
		}
		if (sc[i].bulk && stop_workers(sh, workers, pids) && !ret)
			ret = -EIO;
	}
	write_number(BYPASS, 0);
	/* Throughput with the configured QP window, then with a window of 4. */
	for (i = 0; i < 8 && !ret; i++) {
		int n = 1 << (i % 4), w;
		uint64_t b0 = 0, b1 = 0, t0, t1;

		ret = write_number(QP_WINDOW, i < 4 ? window : 4);
		if (!ret)
			ret = start_workers(peer, sh, n, pids);
		if (!ret) {
			usleep(500000);
			for (w = 0; w < n; w++)
				b0 += sh->bytes[w];
			t0 = xferk_now_ns();
			sleep(secs);
			for (w = 0; w < n; w++)
				b1 += sh->bytes[w];
			t1 = xferk_now_ns();
			mbs[i] = (double)(b1 - b0) * 1000 / (double)(t1 - t0);
		}
		if (stop_workers(sh, n, pids) && !ret)
			ret = -EIO;
	}
	write_number(QP_WINDOW, window);
	if (ret) {
		fprintf(stderr, "qos: %s\n", strerror(-ret));
		return 1;
	}
	printf("critical 64 KiB WRITE, %u samples; %d bulk processes x %d x 1 MiB in flight; qp_window %lld\n",
	       samples, workers, BULK_DEPTH, window);
	printf("%-26s %12s %12s %12s %12s\n", "scenario", "median_us", "p99_us",
	       "med/alone", "bypass/this");
	for (i = 0; i < nsc; i++)
		printf("%-26s %12.0f %12.0f %12.2f %12.2f\n", sc[i].name,
		       med[i] / 1000, p99[i] / 1000, med[i] / med[0],
		       med[bypass] / med[i]);
	printf("%-26s %12s %12s\n", "bulk processes (queue)", "MB/s",
	       "MB/s qp_w 4");
	for (i = 0; i < 4; i++)
		printf("%-26d %12.1f %12.1f\n", 1 << i, mbs[i], mbs[i + 4]);
	f = json_open(json);
	if (!f)
		return 1;
	fprintf(f, "{\"benchmark\": \"qos\", \"samples\": %u, \"bulk_processes\": %d, \"qp_window\": %lld, \"latency\": [\n",
		samples, workers, window);
	for (i = 0; i < nsc; i++)
		fprintf(f, "  {\"scenario\": \"%s\", \"median_ns\": %.0f, \"p99_ns\": %.0f}%s\n",
			sc[i].name, med[i], p99[i], i + 1 < nsc ? "," : "");
	fprintf(f, "], \"throughput\": [\n");
	for (i = 0; i < 8; i++)
		fprintf(f, "  {\"processes\": %d, \"qp_window\": %lld, \"mb_per_s\": %.1f}%s\n",
			1 << (i % 4), i < 4 ? window : 4, mbs[i], i < 7 ? "," : "");
	fprintf(f, "]}\n");
	if (f != stdout)
		fclose(f);
	xferk_close(e.x);
	return 0;
}

/*
 * bw: bandwidth and message rate of one stream (an io_uring queue of
 * single-fragment ops) next to perftest over the same device and depth,
 * with the whole machine's busy CPU time per GiB moved; then 1 to 8
 * processes sharing the host's connection.
 */
struct bw_row {
	const char *who;	/* "xferk" or "perftest" */
	uint8_t opcode;
	size_t len;
	unsigned int depth;	/* in all, over all QPs */
	unsigned int qps;	/* 0: the session's (one) */
	const char *peer;	/* NULL: bw_opts.peer */
	int ok;
	double mb_s;		/* 10^6 bytes per second */
	double kmps;		/* thousand messages per second */
	double cpu_s_gib;	/* busy CPU seconds per GiB moved */
	double cpu_us_op;	/* busy CPU microseconds per message */
	double p50_us;		/* latency of a message, submit to completion */
	double p99_us;
	double max_us;		/* the slowest message's latency */
	long long resent;	/* rxe's retransmission events meanwhile */
};

struct bw_opts {
	const char *peer;
	const char *dev;
	double seconds;
	int quick;
	unsigned int port;
};

#define GIB		(1024.0 * 1024 * 1024)
#define QUEUE_DIR	"/sys/class/misc/xferk/queue/"

/*
 * The admission queue's windows, opened for bw: perftest keeps DEPTH
 * messages in flight whole, and so may xferk (the queue's policy is
 * measured by qos). 124: the most a QP's window may be.
 */
static const struct { const char *name; long long bw; } bw_tunables[] = {
	{ "qp_window", 124 },
	{ "qp_window_bytes_min", 1LL << 30 },
	{ "qp_window_bytes_max", 1LL << 30 },
	{ "dev_window_bytes", 1LL << 30 },
	{ "op_window_bytes", 1LL << 30 },
	{ "op_window_chunks", 1024 },
};

/*
 * Busy CPU time of the whole machine so far: user, system, irq, softirq.
 * Not nice: the benchmarks run at nice 0, kernel threads count as system,
 * and kernel --hogs burns CPU at nice 19.
 */
static double cpu_busy_s(void)
{
	unsigned long long v[7] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int n = 0;

	if (f) {
		n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0],
			   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]);
		fclose(f);
	}
	if (n != 7)
		return -1;
	return (double)(v[0] + v[2] + v[5] + v[6]) / sysconf(_SC_CLK_TCK);
}

/*
 * The device's counters of packets lost and sent again, summed (rxe's
 * hw_counters; both ends of the loopback count on the one device), or -1.
 */
static long long rxe_resent(const char *dev)
{
	static const char *const names[] = { "completer_retry_err",
		"rcvd_seq_err", "out_of_seq_request", "duplicate_request" };
	long long sum = 0, v;
	unsigned int i;
	char path[160];

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev,
			 names[i]);
		v = read_number(path);
		if (v < 0)
			return -1;
		sum += v;
	}
	return sum;
}

#define MAX_LAT		(1U << 20)

/*
 * One xferk row: a warm-up of a quarter of the time, then the measurement,
 * with each op's latency (the first MAX_LAT of them).
 */
static int bw_xferk(const struct bw_opts *o, struct bw_row *r)
{
	uint64_t n = 0, t0 = 0, t1 = 0, end;
	struct stream st;
	long long n0 = 0;
	double c0 = 0, c1;
	int ret;

	ret = stream_init(&st, r->peer ?: o->peer, r->qps, r->len, r->depth,
			  r->opcode, XFERK_PRIO_NORMAL);
	st.lat = malloc(MAX_LAT * sizeof(*st.lat));
	if (!st.lat && !ret)
		ret = -ENOMEM;
	/* Its pages faulted in now, not in the measured time. */
	if (st.lat)
		memset(st.lat, 0, MAX_LAT * sizeof(*st.lat));
	end = xferk_now_ns() + (uint64_t)(o->seconds * SEC / 4);
	while (!ret) {
		ret = stream_step(&st, 0);
		if (ret <= 0)
			break;
		n += ret;
		ret = 0;
		t1 = xferk_now_ns();
		if (!t0 && t1 >= end) {
			t0 = t1;
			c0 = cpu_busy_s();
			n0 = rxe_resent(o->dev);
			n = 0;
			st.nr_lat = 0;
			st.max_lat = MAX_LAT;
			end = t0 + (uint64_t)(o->seconds * SEC);
		} else if (t0 && t1 >= end) {
			break;
		}
	}
	c1 = cpu_busy_s();
	r->resent = n0 < 0 ? -1 : rxe_resent(o->dev) - n0;
	st.max_lat = 0;
	while (!ret && st.inflight)
		ret = stream_step(&st, 1) < 0 ? -EIO : 0;
	stream_exit(&st);
	if (!ret && (!n || !st.nr_lat))
		ret = -EIO;
	if (!ret) {
		r->kmps = n * 1e6 / (double)(t1 - t0);
		r->mb_s = r->kmps * r->len / 1e3;
		r->cpu_s_gib = (c1 - c0) / (n * r->len / GIB);
		r->cpu_us_op = (c1 - c0) * 1e6 / n;
		qsort(st.lat, st.nr_lat, sizeof(double), cmp_double);
		r->p50_us = percentile(st.lat, st.nr_lat, 0.5) / 1e3;
		r->p99_us = percentile(st.lat, st.nr_lat, 0.99) / 1e3;
		r->max_us = st.lat[st.nr_lat - 1] / 1e3;
		r->ok = 1;
	}
	free(st.lat);
	return ret;
}

/* Is a TCP socket listening on @port (any address)? */
static int tcp_listening(unsigned int port)
{
	char line[256];
	unsigned int p, st;
	FILE *f = fopen("/proc/net/tcp", "r");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, " %*u: %*x:%x %*x:%*x %x", &p, &st) == 2 &&
			p == port && st == 0x0a;
	fclose(f);
	return found;
}

static pid_t spawn(char *const argv[], int out_fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		dup2(out_fd, 1);
		dup2(out_fd, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/*
 * One perftest row: its server and client on this host, the client's
 * lines as they come (stdbuf): the busy CPU time from its result header to
 * its result line, @iters messages (per QP) in between. A run without a
 * result leaves the row empty and says why on stderr (its exit status and
 * last line): perftest's own failure is not xferk's, the table shows "-".
 */
static int bw_perftest(const struct bw_opts *o, struct bw_row *r,
		       unsigned long iters)
{
	const char *tool = r->opcode == XFERK_OP_WRITE ? "ib_write_bw" :
							  "ib_read_bw";
	char len[32], depth[16], n[32], port[16], qps[16], line[512];
	char last[512] = "";
	/* -q QPS last, only for several (one QP is perftest's default). */
	char *srv[] = { "timeout", "120", (char *)tool, "-d", (char *)o->dev,
			"-x", "1", "-F", "-s", len, "-t", depth, "-n", n,
			"-p", port, "-q", qps, NULL };
	char *cli[] = { "timeout", "120", "stdbuf", "-oL", (char *)tool, "-d",
			(char *)o->dev, "-x", "1", "-F", "-s", len, "-t", depth,
			"-n", n, "-p", port, (char *)o->peer, "-q", qps, NULL };
	unsigned int q = r->qps ?: 1;
	int null = open("/dev/null", O_WRONLY), p[2], i, st, found = 0;
	double c0 = -1, c1 = -1, peak, avg, mpps;
	long long n0 = -1, n1 = -1;
	uint64_t t0 = 0, t1 = 0;
	unsigned long bytes, it;
	pid_t server, client;
	FILE *f;

	/* perftest's depth and iterations are per QP. */
	snprintf(len, sizeof(len), "%zu", r->len);
	snprintf(depth, sizeof(depth), "%u", r->depth / q);
	snprintf(n, sizeof(n), "%lu", iters / q + 1);
	snprintf(port, sizeof(port), "%u", o->port);
	snprintf(qps, sizeof(qps), "%u", q);
	if (q == 1) {
		srv[ARRAY_SIZE(srv) - 3] = NULL;
		cli[ARRAY_SIZE(cli) - 3] = NULL;
	}
	if (null < 0 || pipe(p))
		return -errno;
	server = spawn(srv, null);
	for (i = 0; i < 300 && !tcp_listening(o->port); i++)
		usleep(100000);
	client = spawn(cli, p[1]);
	close(p[1]);
	f = fdopen(p[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (strstr(line, "#bytes") && strstr(line, "MsgRate"))
			c0 = cpu_busy_s(), t0 = xferk_now_ns(),
			n0 = rxe_resent(o->dev);
		else if (c0 >= 0 && c1 < 0 &&
			 sscanf(line, "%lu %lu %lf %lf %lf", &bytes, &it, &peak,
				&avg, &mpps) == 5 && bytes == r->len) {
			c1 = cpu_busy_s(), t1 = xferk_now_ns(),
			n1 = rxe_resent(o->dev);
			found = 1;
		} else if (line[strspn(line, " -\t\n")]) {
			snprintf(last, sizeof(last), "%s", line);
		}
	}
	if (f)
		fclose(f);
	close(null);
	waitpid(client, &st, 0);
	waitpid(server, NULL, 0);
	if (!found || mpps <= 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "%s -s %zu -t %u -q %u: no result (status %d): %s",
			tool, r->len, r->depth, q, st, last[0] ? last : "\n");
		return 0;
	}
	r->kmps = mpps * 1e3;
	r->mb_s = mpps * r->len;
	r->resent = n0 < 0 || n1 < 0 ? -1 : n1 - n0;
	/* What it moved while the CPU time was read: its rate, that long. */
	r->cpu_s_gib = (c1 - c0) / (r->mb_s * 1e6 * (t1 - t0) / SEC / GIB);
	r->ok = 1;
	return 0;
}

static const char *op_name(uint8_t opcode)
{
	return opcode == XFERK_OP_WRITE ? "WRITE" : "READ";
}

/*
 * One row of a pass, as @spec says: xferk's run in @r[0] and, with
 * perftest, perftest's in @r[1]. Pass @pass (from 0) runs perftest first
 * when it is odd (the second of three), so that
 * neither always has the other's wake behind it. perftest runs about as
 * many messages as xferk moves in a row: at xferk's rate in this pass, or
 * in @prev (the row's xferk run of the pass before) when it goes first.
 */
static int bw_pair(struct bw_opts *o, const struct bw_row *spec,
		   struct bw_row r[2], const struct bw_row *prev,
		   unsigned int pass, int have_perftest)
{
	const struct bw_row *rate = pass % 2 ? prev : &r[0];
	unsigned int k;
	int ret = 0;

	r[0] = *spec;
	r[0].who = "xferk";
	r[1] = *spec;
	r[1].who = "perftest";
	for (k = 0; k < 2 && !ret; k++) {
		if ((k + pass) % 2 == 0) {
			ret = bw_xferk(o, &r[0]);
		} else if (have_perftest) {
			o->port++;
			ret = bw_perftest(o, &r[1],
					  (unsigned long)(rate->kmps * 1e3 *
							  o->seconds) +
					  2 * spec->depth + 5);
		}
	}
	return ret;
}

static const size_t bw_lens[] = { 4096, 64 << 10, 1 << 20, 16 << 20 };
static const unsigned int bw_depths[] = { 1, 8, 64 };
static const uint8_t bw_opcodes[] = { XFERK_OP_WRITE, XFERK_OP_READ };

/*
 * QPs per session: each count but 1 gets a session of its own, to an
 * address of this host added for it (sessions are per peer address).
 * Only over the test VM's loopback (the default peer on dummy0).
 */
#define QPS_DEPTH	64
static const unsigned int qp_counts[] = { 1, 2, 4 };
static const size_t qp_lens[] = { 4096, 64 << 10 };

#define BW_PASSES	3
#define BW_ROWS		(ARRAY_SIZE(bw_opcodes) * ARRAY_SIZE(bw_lens) * \
			 ARRAY_SIZE(bw_depths) + \
			 ARRAY_SIZE(qp_counts) * ARRAY_SIZE(qp_lens))

/*
 * The rows bw measures, in order, as specs (who and results unset): one
 * stream per op, length and depth, then the QP counts. Adds the QP
 * counts' addresses to dummy0 now, so that every pass runs with the same
 * addresses. Returns the number of rows, or -EIO.
 */
static int bw_specs(const struct bw_opts *o, struct bw_row *specs)
{
	static char addrs[ARRAY_SIZE(qp_counts)][32];
	unsigned int nr = 0, i, j, k;
	char cmd[128];

	for (i = 0; i < ARRAY_SIZE(bw_opcodes); i++)
		for (j = 0; j < ARRAY_SIZE(bw_lens); j++)
			for (k = 0; k < ARRAY_SIZE(bw_depths); k++) {
				/* 16 MiB x 64 in flight: no room in the VM. */
				if (bw_lens[j] * bw_depths[k] > (256UL << 20))
					continue;
				if (o->quick && (j == 1 || j == 3 || k == 1))
					continue;
				specs[nr++] = (struct bw_row) {
					.opcode = bw_opcodes[i],
					.len = bw_lens[j],
					.depth = bw_depths[k] };
			}
	if (strcmp(o->peer, "10.99.0.1")) {
		printf("QPs per session: only over the test VM's loopback\n");
		return nr;
	}
	for (i = 0; i < ARRAY_SIZE(qp_counts); i++) {
		if (o->quick && qp_counts[i] == 2)
			continue;
		if (qp_counts[i] > 1) {
			snprintf(addrs[i], sizeof(addrs[i]), "10.99.0.%u",
				 100 + qp_counts[i]);
			snprintf(cmd, sizeof(cmd),
				 "ip addr replace %s/24 dev dummy0", addrs[i]);
			if (system(cmd))
				return -EIO;
		}
		for (j = 0; j < ARRAY_SIZE(qp_lens); j++) {
			if (o->quick && j)
				continue;
			specs[nr++] = (struct bw_row) {
				.opcode = XFERK_OP_WRITE, .len = qp_lens[j],
				.depth = QPS_DEPTH, .qps = qp_counts[i],
				.peer = qp_counts[i] > 1 ? addrs[i] : NULL };
		}
	}
	return nr;
}

/* A run of a row, once its pair ran: its pass, what it was, who, MB/s, k/s. */
static void bw_row_print(unsigned int pass, const struct bw_row *r)
{
	printf("pass %u: %-5s %9zu %5u %4u %-8s %8.1f MB/s %8.2f k/s\n", pass,
	       op_name(r->opcode), r->len, r->depth, r->qps ?: 1, r->who,
	       r->mb_s, r->kmps);
	fflush(stdout);
}

/* A sum of retransmission counts, -1 (unknown) if either is. */
static long long resent_add(long long sum, long long n)
{
	return sum < 0 || n < 0 ? -1 : sum + n;
}

/* A median of the @n values in @v, then their least and most. */
static void print_spread(const char *fmt, double *v, unsigned int n)
{
	double med = median(v, n);

	printf(fmt, med, v[0], v[n - 1]);
}

/*
 * The rows of @nr specs over @passes passes (those of a QP count, @qps,
 * or not): each value a median over the passes; MB/s and the bandwidth
 * ratio with their least and most. perftest's values and the ratios count
 * the passes in which perftest gave a result ("-" if none did), its
 * retransmissions too; xferk's count every pass.
 */
static void bw_print(struct bw_row (*rows)[BW_ROWS][2], unsigned int nr,
		     unsigned int passes, int qps)
{
	unsigned int i, p, n;

	for (i = 0; i < nr; i++) {
		const struct bw_row *spec = &rows[0][i][0];
		double x_mbs[BW_PASSES], p_mbs[BW_PASSES], bw[BW_PASSES];
		double x_k[BW_PASSES], p_k[BW_PASSES], msg[BW_PASSES];
		double x_cpu[BW_PASSES], p_cpu[BW_PASSES], p99[BW_PASSES];
		long long x_resent = 0, p_resent = 0;
		double max_us = 0;

		if (!spec->qps != !qps)
			continue;
		for (p = 0, n = 0; p < passes; p++) {
			const struct bw_row *x = &rows[p][i][0];
			const struct bw_row *t = &rows[p][i][1];

			x_mbs[p] = x->mb_s;
			x_k[p] = x->kmps;
			x_cpu[p] = x->cpu_s_gib;
			p99[p] = x->p99_us;
			max_us = x->max_us > max_us ? x->max_us : max_us;
			x_resent = resent_add(x_resent, x->resent);
			if (!t->ok)
				continue;
			p_mbs[n] = t->mb_s;
			p_k[n] = t->kmps;
			p_cpu[n] = t->cpu_s_gib;
			bw[n] = x->mb_s / t->mb_s;
			msg[n++] = x->kmps / t->kmps;
			p_resent = resent_add(p_resent, t->resent);
		}
		printf("%-5s %9zu %5u ", op_name(spec->opcode), spec->len,
		       spec->depth);
		if (qps)
			printf("%4u ", spec->qps);
		print_spread("%7.1f [%5.1f-%5.1f] ", x_mbs, passes);
		if (n) {
			print_spread("%7.1f [%5.1f-%5.1f] ", p_mbs, n);
			print_spread("%5.2f [%4.2f-%4.2f] ", bw, n);
			printf("%8.2f %8.2f %6.2f %8.2f %8.2f %8lld %8lld",
			       median(x_k, passes), median(p_k, n),
			       median(msg, n), median(x_cpu, passes),
			       median(p_cpu, n), x_resent, p_resent);
		} else {
			printf("%21s %17s %8.2f %8s %6s %8.2f %8s %8lld %8s",
			       "-", "-", median(x_k, passes), "-", "-",
			       median(x_cpu, passes), "-", x_resent, "-");
		}
		printf(" %8.1f %8.1f\n", median(p99, passes) / 1e3,
		       max_us / 1e3);
	}
}

static int bench_bw(int quick, const char *json, const char *peer)
{
	struct bw_opts o = { .peer = peer, .dev = "rxe0", .port = 18700,
			     .seconds = quick ? 0.5 : 2, .quick = quick };
	static struct bw_row rows[BW_PASSES][BW_ROWS][2];
	struct bw_row specs[BW_ROWS];
	unsigned int passes = quick ? 1 : BW_PASSES, nr = 0, i, k, p, w;
	long long saved[ARRAY_SIZE(bw_tunables)];
	double scale_mbs[4], fairness[4];
	int have_perftest = !system("command -v ib_write_bw >/dev/null");
	struct qos_shared *sh;
	pid_t pids[MAX_WORKERS];
	FILE *f;
	int ret = 0;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	if (!have_perftest)
		printf("perftest (ib_write_bw) not installed: xferk rows only\n");
	for (i = 0; i < ARRAY_SIZE(bw_tunables); i++) {
		char path[128];

		snprintf(path, sizeof(path), QUEUE_DIR "%s", bw_tunables[i].name);
		saved[i] = read_number(path);
		if (saved[i] < 0 && !ret)
			ret = -EIO;
	}
	for (i = 0; i < ARRAY_SIZE(bw_tunables) && !ret; i++) {
		char path[128];

		snprintf(path, sizeof(path), QUEUE_DIR "%s", bw_tunables[i].name);
		ret = write_number(path, bw_tunables[i].bw);
	}
	if (!ret) {
		ret = bw_specs(&o, specs);
		nr = ret < 0 ? 0 : ret;
		ret = ret < 0 ? ret : 0;
	}
	for (p = 0; p < passes && !ret; p++)
		for (i = 0; i < nr && !ret; i++) {
			ret = bw_pair(&o, &specs[i], rows[p][i],
				      p ? &rows[p - 1][i][0] : NULL, p,
				      have_perftest);
			for (k = 0; k < 2 && !ret; k++)
				if (rows[p][i][k].ok)
					bw_row_print(p + 1, &rows[p][i][k]);
		}
	/* 1 to 8 processes, 1 MiB WRITEs, 4 each in flight, one connection. */
	sh->len = BULK_LEN;
	sh->depth = BULK_DEPTH;
	sh->opcode = XFERK_OP_WRITE;
	sh->prio = XFERK_PRIO_NORMAL;
	for (i = 0; i < 4 && !ret; i++) {
		int n = 1 << i;
		uint64_t b0[MAX_WORKERS], t0, t1;
		double sum = 0, sq = 0;

		ret = start_workers(peer, sh, n, pids);
		if (!ret) {
			usleep(500000);
			for (w = 0; w < (unsigned int)n; w++)
				b0[w] = sh->bytes[w];
			t0 = xferk_now_ns();
			usleep((useconds_t)(o.seconds * 1e6));
			t1 = xferk_now_ns();
			for (w = 0; w < (unsigned int)n; w++) {
				double b = (double)(sh->bytes[w] - b0[w]);

				sum += b;
				sq += b * b;
			}
			scale_mbs[i] = sum * 1e3 / (double)(t1 - t0);
			/* Jain's index: 1 is a fair share for everyone. */
			fairness[i] = sq > 0 ? sum * sum / (n * sq) : 0;
		}
		if (stop_workers(sh, n, pids) && !ret)
			ret = -EIO;
	}
	for (i = ARRAY_SIZE(bw_tunables); i-- > 0; ) {
		char path[128];

		snprintf(path, sizeof(path), QUEUE_DIR "%s", bw_tunables[i].name);
		if (saved[i] >= 0)
			write_number(path, saved[i]);
	}
	if (ret) {
		fprintf(stderr, "bw: %s\n", strerror(-ret));
		return 1;
	}
	printf("queue windows opened:");
	for (i = 0; i < ARRAY_SIZE(bw_tunables); i++)
		printf(" %s %lld", bw_tunables[i].name, bw_tunables[i].bw);
	printf("\n");
	printf("one stream of single-fragment ops vs perftest (-s LEN -t DEPTH -q 1) over %s, %.1f s per row, %u pass%s; MB/s and bw_ratio (xferk / perftest in the same pass): median [least-most]; the rest: medians over the passes, but resent (rxe's retransmission events, summed) and x_max (the slowest); CPU: whole machine, busy s/GiB; x_p99, x_max: xferk's op latency, ms\n",
	       o.dev, o.seconds, passes,
	       passes > 1 ? "es (the second: perftest first)" : "");
	printf("%-5s %9s %5s %21s %21s %17s %8s %8s %6s %8s %8s %8s %8s %8s %8s\n",
	       "op", "len", "depth", "xferk_MB/s", "pt_MB/s", "bw_ratio",
	       "xferk_k/s", "pt_k/s", "msg", "xferk_cpu", "pt_cpu",
	       "x_resent", "pt_resent", "x_p99", "x_max");
	bw_print(rows, nr, passes, 0);
	printf("QPs per session (-q QPS for perftest, the depth shared by its QPs):\n");
	printf("%-5s %9s %5s %4s %21s %21s %17s %8s %8s %6s %8s %8s %8s %8s %8s %8s\n",
	       "op", "len", "depth", "qps", "xferk_MB/s", "pt_MB/s",
	       "bw_ratio", "xferk_k/s", "pt_k/s", "msg", "xferk_cpu",
	       "pt_cpu", "x_resent", "pt_resent", "x_p99", "x_max");
	bw_print(rows, nr, passes, 1);
	printf("%-10s %10s %10s  (1 MiB WRITEs, %u in flight each, one connection)\n",
	       "processes", "MB/s", "fairness", BULK_DEPTH);
	for (i = 0; i < 4; i++)
		printf("%-10d %10.1f %10.3f\n", 1 << i, scale_mbs[i], fairness[i]);
	f = json_open(json);
	if (!f)
		return 1;
	fprintf(f, "{\"benchmark\": \"bw\", \"device\": \"%s\", \"seconds\": %.1f, \"passes\": %u, \"rows\": [\n",
		o.dev, o.seconds, passes);
	for (p = 0, w = 0; p < passes; p++)
		for (i = 0; i < nr; i++)
			for (k = 0; k < 2; k++) {
				const struct bw_row *r = &rows[p][i][k];

				if (!r->ok)
					continue;
				fprintf(f, "%s  {\"pass\": %u, \"who\": \"%s\", \"op\": \"%s\", \"len\": %zu, \"depth\": %u, \"qps\": %u, \"mb_per_s\": %.1f, \"kmsg_per_s\": %.3f, \"cpu_s_per_gib\": %.3f, \"rxe_resent\": %lld}",
					w++ ? ",\n" : "", p + 1, r->who,
					op_name(r->opcode), r->len, r->depth,
					r->qps ?: 1, r->mb_s, r->kmps,
					r->cpu_s_gib, r->resent);
			}
	fprintf(f, "\n], \"processes\": [\n");
	for (i = 0; i < 4; i++)
		fprintf(f, "  {\"processes\": %d, \"mb_per_s\": %.1f, \"fairness\": %.3f}%s\n",
			1 << i, scale_mbs[i], fairness[i], i < 3 ? "," : "");
	fprintf(f, "]}\n");
	if (f != stdout)
		fclose(f);
	return 0;
}

/*
 * kernel: xferk next to nvme-rdma, the kernel's own consumer of the same
 * RDMA device, in the same boot. nvmet-rdma exports null_blk's nullb0 at
 * PEER port 4420 with inline data off (a host's 4 KiB write is then the
 * target's RDMA READ, not data in the command), nvme-rdma connects to it,
 * and fio drives the namespace (io_uring, O_DIRECT, 4 and 64 KiB random).
 * Rows are named by the verb that moves the data: for nvme an RDMA WRITE
 * is a host read (the target writes into the host), an RDMA READ a host
 * write; each nvme op also sends a command and a response.
 */
#define NVMET_DIR	"/sys/kernel/config/nvmet"
#define KBENCH_NQN	"xferk-bench"
#define KBENCH_SUBSYS	NVMET_DIR "/subsystems/" KBENCH_NQN
#define KBENCH_NS	KBENCH_SUBSYS "/namespaces/1"
#define KBENCH_DEV	"/dev/nullb0"
#define KBENCH_SVCID	"4420"
#define KBENCH_PASSES	3
#define MAX_HOGS	16

/* The rows (verb, bytes, depth): 4 KiB first, for --quick. */
static const struct {
	uint8_t opcode;
	size_t len;
	unsigned int depth;
} kbench_rows[] = {
	{ XFERK_OP_WRITE, 4096, 1 }, { XFERK_OP_WRITE, 4096, 8 },
	{ XFERK_OP_READ, 4096, 1 }, { XFERK_OP_READ, 4096, 8 },
	{ XFERK_OP_WRITE, 65536, 1 }, { XFERK_OP_WRITE, 65536, 8 },
	{ XFERK_OP_READ, 65536, 1 }, { XFERK_OP_READ, 65536, 8 },
};

#define KBENCH_ROWS	ARRAY_SIZE(kbench_rows)

/* What nvme_setup() made, for nvme_teardown() to undo. */
struct nvme_target {
	unsigned int port;	/* the target's port number, or 0 */
	int subsys;		/* the subsystem exists */
	int ns;			/* its namespace exists */
	int linked;		/* the port exports the subsystem */
	int ctrl;		/* the host's controller instance, or -1 */
	char disk[64];		/* the namespace's block device */
};

static int read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* The block device whose wwid names the namespace @uuid (not a path's). */
static int nvme_find_disk(struct nvme_target *t, const char *uuid)
{
	char path[300], wwid[128];
	struct dirent *e;
	DIR *d = opendir("/sys/block");

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		/* nvmeXcYnZ is one path of a multipath head nvmeXnZ. */
		if (strncmp(e->d_name, "nvme", 4) || strchr(e->d_name + 4, 'c'))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/wwid", e->d_name);
		if (strlen(e->d_name) < 32 &&
		    !read_text(path, wwid, sizeof(wwid)) &&
		    !strncmp(wwid, "uuid.", 5) && !strcmp(wwid + 5, uuid)) {
			snprintf(t->disk, sizeof(t->disk), "/dev/%.32s", e->d_name);
			if (access(t->disk, R_OK | W_OK))
				t->disk[0] = 0;
			break;
		}
	}
	closedir(d);
	return t->disk[0] ? 0 : -ENOENT;
}

static void nvme_teardown(struct nvme_target *t)
{
	char path[160];

	if (t->ctrl >= 0) {
		snprintf(path, sizeof(path), "/sys/class/nvme/nvme%d/delete_controller",
			 t->ctrl);
		write_text(path, "1");
	}
	snprintf(path, sizeof(path), NVMET_DIR "/ports/%u", t->port);
	if (t->linked) {
		snprintf(path, sizeof(path), NVMET_DIR "/ports/%u/subsystems/"
			 KBENCH_NQN, t->port);
		unlink(path);
		snprintf(path, sizeof(path), NVMET_DIR "/ports/%u", t->port);
	}
	if (t->port)
		rmdir(path);
	if (t->ns) {
		write_text(KBENCH_NS "/enable", "0");
		rmdir(KBENCH_NS);
	}
	if (t->subsys)
		rmdir(KBENCH_SUBSYS);
}

/*
 * The target (subsystem, namespace, port at @addr), then the host's
 * controller, and its block device. On failure, what was made stays in @t.
 */
static int nvme_setup(struct nvme_target *t, const char *addr)
{
	static const char *const port_attrs[][2] = {
		{ "addr_trtype", "rdma" }, { "addr_adrfam", "ipv4" },
		{ "addr_traddr", NULL }, { "addr_trsvcid", KBENCH_SVCID },
		{ "param_inline_data_size", "0" },
	};
	static const char *const needs[][2] = {
		{ KBENCH_DEV, "null_blk (nr_devices=1, its default)" },
		{ "/sys/module/nvmet_rdma", "nvmet-rdma" },
		{ NVMET_DIR, "configfs mounted at /sys/kernel/config" },
		{ "/sys/module/nvme_rdma", "nvme-rdma" },
		{ "/dev/nvme-fabrics", "nvme-fabrics" },
	};
	char path[160], uuid[64], opts[256];
	unsigned int i;
	ssize_t len;
	int fd, ret;

	*t = (struct nvme_target) { .ctrl = -1 };
	if (access("/sys/module/null_blk", F_OK) ||
	    access("/sys/module/nvmet_rdma", F_OK) ||
	    access("/sys/module/nvme_rdma", F_OK))
		ret = system("modprobe -a -q null_blk nvmet-rdma nvme-rdma");
	for (i = 0; i < ARRAY_SIZE(needs); i++) {
		if (access(needs[i][0], F_OK)) {
			printf("kernel: no %s: needs %s\n", needs[i][0], needs[i][1]);
			return -ENODEV;
		}
	}
	if (mkdir(KBENCH_SUBSYS, 0755)) {
		if (errno == EEXIST)
			printf("kernel: %s exists: an earlier run did not finish; remove its controller (nvme disconnect -n %s), port link, port, namespace and subsystem\n",
			       KBENCH_SUBSYS, KBENCH_NQN);
		return -errno;
	}
	t->subsys = 1;
	ret = write_text(KBENCH_SUBSYS "/attr_allow_any_host", "1");
	if (!ret && mkdir(KBENCH_NS, 0755))
		ret = -errno;
	t->ns = !ret;
	if (!ret)
		ret = write_text(KBENCH_NS "/device_path", KBENCH_DEV);
	if (!ret)
		ret = write_text(KBENCH_NS "/enable", "1");
	if (!ret)
		ret = read_text(KBENCH_NS "/device_uuid", uuid, sizeof(uuid));
	if (!ret && !uuid[0])
		ret = -EPROTO;
	/* The first free port number. */
	for (i = 1; !ret && !t->port && i <= 100; i++) {
		snprintf(path, sizeof(path), NVMET_DIR "/ports/%u", i);
		if (!mkdir(path, 0755))
			t->port = i;
		else if (errno != EEXIST)
			ret = -errno;
	}
	if (!ret && !t->port)
		ret = -EBUSY;
	for (i = 0; !ret && i < ARRAY_SIZE(port_attrs); i++) {
		snprintf(path, sizeof(path), NVMET_DIR "/ports/%u/%s", t->port,
			 port_attrs[i][0]);
		ret = write_text(path, port_attrs[i][1] ?: addr);
	}
	if (!ret) {
		snprintf(path, sizeof(path), NVMET_DIR "/ports/%u/subsystems/"
			 KBENCH_NQN, t->port);
		ret = symlink(KBENCH_SUBSYS, path) ? -errno : 0;
		t->linked = !ret;
	}
	if (ret)
		return ret;
	/* The host: the fabrics device answers with the controller's instance. */
	fd = open("/dev/nvme-fabrics", O_RDWR);
	if (fd < 0)
		return -errno;
	snprintf(opts, sizeof(opts), "transport=rdma,traddr=%s,trsvcid=%s,nqn=%s",
		 addr, KBENCH_SVCID, KBENCH_NQN);
	if (write(fd, opts, strlen(opts)) != (ssize_t)strlen(opts)) {
		ret = -errno;
	} else {
		len = read(fd, opts, sizeof(opts) - 1);
		opts[len > 0 ? len : 0] = 0;
		if (sscanf(opts, "instance=%d", &t->ctrl) != 1)
			ret = -EPROTO;
	}
	close(fd);
	/* The namespace is scanned after the connect returns. */
	for (i = 0; !ret && i < 300 && nvme_find_disk(t, uuid); i++)
		usleep(100000);
	if (!ret && !t->disk[0])
		ret = -ENOENT;
	return ret;
}

/* The number after "@key" : in @s, before @end (0: not there). */
static double json_number(const char *s, const char *end, const char *key)
{
	const char *p = strstr(s, key);

	if (!p || p >= end)
		return 0;
	p = strchr(p + strlen(key), ':');
	return p && p < end ? strtod(p + 1, NULL) : 0;
}

/*
 * fio's JSON report of its one job: the section of @dir ("read" or
 * "write"): its ops, rate and total latency percentiles (lat_ns).
 */
static int fio_parse(const char *s, const char *dir, uint64_t *ops,
		     struct bw_row *r)
{
	char key[16];
	const char *sec, *end, *lat, *pct;

	snprintf(key, sizeof(key), "\"%s\" : {", dir);
	sec = strstr(s, key);
	if (!sec || json_number(s, sec, "\"error\"") != 0)
		return -EIO;
	end = strstr(sec + 1, "\"trim\" : {") ?: sec + strlen(sec);
	if (!strcmp(dir, "read"))
		end = strstr(sec, "\"write\" : {") ?: end;
	*ops = (uint64_t)json_number(sec, end, "\"total_ios\"");
	r->kmps = json_number(sec, end, "\"iops\"") / 1e3;
	lat = strstr(sec, "\"lat_ns\" : {");
	pct = lat ? strstr(lat, "\"percentile\"") : NULL;
	if (!pct || pct >= end || memchr(lat, '}', pct - lat))
		return -EIO;
	r->p50_us = json_number(pct, end, "\"50.000000\"") / 1e3;
	r->p99_us = json_number(pct, end, "\"99.000000\"") / 1e3;
	return *ops && r->kmps > 0 && r->p50_us > 0 ? 0 : -EIO;
}

/*
 * One nvme row: fio for @o->seconds, in a directory of its own (its
 * report, and the files fio sends its prerun and postrun commands' output
 * to). Those commands mark the job's start and end on fd 3, a pipe (the
 * group's own redirect goes past fio's), where the CPU time and rxe's
 * counters are read: the window has fio's job start in it, and no warm-up.
 */
static int nvme_fio(const struct nvme_target *t, const struct bw_opts *o,
		    struct bw_row *r)
{
	static const char *const files[] = { "report.json",
		"xferk-bench.prerun.txt", "xferk-bench.postrun.txt" };
	char file[80], bs[32], depth[32], runtime[32], line[64], path[64];
	char limit[32];
	char dir[] = "/tmp/xferk-bench.XXXXXX";
	char report[1 << 17];
	/* The row's time and a minute: a stalled fio ends the row. */
	char *argv[] = { "timeout", limit, "fio", "--name=xferk-bench", file,
			 "--ioengine=io_uring", "--direct=1", NULL, bs, depth,
			 "--time_based", runtime,
			 "--lat_percentiles=1", "--output-format=json",
			 "--output=report.json",
			 "--exec_prerun={ echo start >&3; }",
			 "--exec_postrun={ echo end >&3; }", NULL };
	double c[2] = { -1, -1 };
	long long n[2] = { -1, -1 };
	int m[2], fd, st = 0, marks = 0, ret = -EIO;
	unsigned int i;
	uint64_t ops = 0;
	ssize_t len;
	pid_t pid;
	FILE *f;

	if (!mkdtemp(dir))
		return -errno;
	snprintf(file, sizeof(file), "--filename=%s", t->disk);
	argv[7] = r->opcode == XFERK_OP_WRITE ? "--rw=randread" : "--rw=randwrite";
	snprintf(limit, sizeof(limit), "%.0f", o->seconds + 60);
	snprintf(bs, sizeof(bs), "--bs=%zu", r->len);
	snprintf(depth, sizeof(depth), "--iodepth=%u", r->depth);
	snprintf(runtime, sizeof(runtime), "--runtime=%.0fms", o->seconds * 1e3);
	if (pipe(m)) {
		ret = -errno;
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		close(m[0]);
		dup2(m[1], 3);
		if (m[1] != 3)
			close(m[1]);
		dup2(null, 1);
		close(null);
		if (chdir(dir))
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(m[1]);
	if (pid < 0) {
		ret = -errno;
		close(m[0]);
		goto out;
	}
	f = fdopen(m[0], "r");
	while (f && marks < 2 && fgets(line, sizeof(line), f)) {
		c[marks] = cpu_busy_s();
		n[marks++] = rxe_resent(o->dev);
	}
	if (f)
		fclose(f);
	else
		close(m[0]);
	waitpid(pid, &st, 0);
	snprintf(path, sizeof(path), "%s/%s", dir, files[0]);
	fd = open(path, O_RDONLY);
	if (fd >= 0 && WIFEXITED(st) && !WEXITSTATUS(st) && marks == 2) {
		len = read(fd, report, sizeof(report));
		/* A report that fills the buffer may be cut short. */
		report[len > 0 && len < (ssize_t)sizeof(report) ? len : 0] = 0;
		ret = fio_parse(report, r->opcode == XFERK_OP_WRITE ? "read" :
			       "write", &ops, r);
	}
	if (fd >= 0)
		close(fd);
	if (ret) {
		fprintf(stderr, "fio %s %s %s: no result (status %d)\n", argv[7],
			depth, t->disk, st);
		goto out;
	}
	r->mb_s = r->kmps * r->len / 1e3;
	r->cpu_us_op = (c[1] - c[0]) * 1e6 / ops;
	r->cpu_s_gib = (c[1] - c[0]) / (ops * r->len / GIB);
	r->resent = n[0] < 0 || n[1] < 0 ? -1 : n[1] - n[0];
	r->ok = 1;
out:
	for (i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
	return ret;
}

static void kernel_row_print(unsigned int pass, const struct bw_row *r)
{
	printf("%4u  %-10s %6zu %5u  %-5s %8.2f %8.0f %8.0f %9.0f %7lld\n", pass,
	       r->opcode == XFERK_OP_WRITE ? "RDMA_WRITE" : "RDMA_READ",
	       r->len, r->depth, r->who, r->kmps, r->p50_us, r->p99_us, r->cpu_us_op,
	       r->resent);
}

/* @n processes at nice 19 that only burn CPU, until stop_hogs(). */
static int start_hogs(pid_t *pids, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return -errno;
		if (pids[i] == 0) {
			/* Not beyond the benchmark, however it ends. */
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) ||
			    getppid() == 1 || nice(19) < 0)
				_exit(1);
			for (;;)
				;
		}
	}
	return 0;
}

static void stop_hogs(pid_t *pids, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
	}
}

static int bench_kernel(int quick, const char *json, const char *peer,
			unsigned int hogs)
{
	pid_t hog_pids[MAX_HOGS] = { 0 };
	struct bw_opts o = { .peer = peer, .dev = "rxe0",
			     .seconds = quick ? 1 : 5, .quick = quick };
	unsigned int passes = quick ? 1 : KBENCH_PASSES, p, i, k;
	/* --quick: the 4 KiB rows. */
	unsigned int nr = quick ? KBENCH_ROWS / 2 : KBENCH_ROWS;
	struct bw_row rows[KBENCH_PASSES][KBENCH_ROWS][2];
	struct nvme_target t;
	FILE *f;
	int ret;

	if (system("command -v fio >/dev/null")) {
		printf("kernel: fio is not installed\n");
		return 77;
	}
	ret = nvme_setup(&t, peer);
	if (ret == -ENODEV)
		return 77;
	if (!ret)
		printf("kernel: nvme-rdma on %s (nvmet-rdma, %s, %s:%s, inline data off)\n",
		       t.disk, KBENCH_DEV, peer, KBENCH_SVCID);
	if (!ret && hogs)
		ret = start_hogs(hog_pids, hogs);
	/* Passes alternate which of the two goes first. */
	for (p = 0; p < passes && !ret; p++)
		for (i = 0; i < nr && !ret; i++)
			for (k = 0; k < 2 && !ret; k++) {
				int nvme = (k + p) % 2;
				struct bw_row *r = &rows[p][i][nvme];

				*r = (struct bw_row) {
					.who = nvme ? "nvme" : "xferk",
					.opcode = kbench_rows[i].opcode,
					.len = kbench_rows[i].len,
					.depth = kbench_rows[i].depth };
				ret = nvme ? nvme_fio(&t, &o, r) :
						    bw_xferk(&o, r);
				if (!ret)
					kernel_row_print(p + 1, r);
			}
	stop_hogs(hog_pids, hogs);
	nvme_teardown(&t);
	if (ret) {
		fprintf(stderr, "kernel: %s\n", strerror(-ret));
		return 1;
	}
	if (hogs)
		printf("with %u busy loops at nice 19 on this machine\n", hogs);
	printf("ops over %s at %s, %.0f s per row, %u passes: xferk (io_uring, auto-release) vs nvme-rdma (fio io_uring O_DIRECT); k/s: median [min-max]; ratio: xferk / nvme in the same pass; p50, p99 (us), CPU (the whole machine's busy us per op): medians\n",
	       o.dev, peer, o.seconds, passes);
	printf("%-10s %6s %5s %21s %21s %17s %6s %6s %6s %6s %6s %6s\n", "verb",
	       "len", "depth", "xferk_k/s", "nvme_k/s", "ratio", "x_p50", "n_p50",
	       "x_p99", "n_p99", "x_cpu", "n_cpu");
	for (i = 0; i < nr; i++) {
		double v[9][KBENCH_PASSES];
		unsigned int j;

		for (p = 0; p < passes; p++) {
			const struct bw_row *x = &rows[p][i][0], *n = &rows[p][i][1];

			v[0][p] = x->kmps;
			v[1][p] = n->kmps;
			v[2][p] = x->kmps / n->kmps;
			v[3][p] = x->p50_us;
			v[4][p] = n->p50_us;
			v[5][p] = x->p99_us;
			v[6][p] = n->p99_us;
			v[7][p] = x->cpu_us_op;
			v[8][p] = n->cpu_us_op;
		}
		printf("%-10s %6zu %5u ", kbench_rows[i].opcode == XFERK_OP_WRITE ?
		       "RDMA_WRITE" : "RDMA_READ", kbench_rows[i].len,
		       kbench_rows[i].depth);
		print_spread("%7.2f [%5.2f-%5.2f] ", v[0], passes);
		print_spread("%7.2f [%5.2f-%5.2f] ", v[1], passes);
		print_spread("%5.2f [%4.2f-%4.2f] ", v[2], passes);
		for (j = 3; j < 9; j++)
			printf("%6.0f%s", median(v[j], passes), j < 8 ? " " : "\n");
	}
	f = json_open(json);
	if (!f)
		return 1;
	fprintf(f, "{\"benchmark\": \"kernel\", \"device\": \"%s\", \"seconds\": %.1f, \"hogs\": %u, \"rows\": [\n",
		o.dev, o.seconds, hogs);
	for (p = 0; p < passes; p++)
		for (i = 0; i < nr; i++)
			for (k = 0; k < 2; k++) {
				const struct bw_row *r = &rows[p][i][k];

				fprintf(f, "  {\"pass\": %u, \"who\": \"%s\", \"verb\": \"RDMA_%s\", \"len\": %zu, \"depth\": %u, \"kmsg_per_s\": %.3f, \"p50_us\": %.1f, \"p99_us\": %.1f, \"cpu_us_per_op\": %.1f, \"rxe_resent\": %lld}%s\n",
					p + 1, r->who, op_name(r->opcode), r->len,
					r->depth, r->kmps, r->p50_us, r->p99_us,
					r->cpu_us_op, r->resent,
					p + 1 == passes && i + 1 == nr &&
					k ? "" : ",");
			}
	fprintf(f, "]}\n");
	if (f != stdout)
		fclose(f);
	return 0;
}

/*
 * moderation: completion moderation's effect on scattered fragments over a
 * real RDMA device (PEER as for qos). MOD_DEPTH ops of MOD_FRAGS fragments
 * each (4 KiB, or 16 KiB: a 64 KiB one is signaled either way), with a gap
 * between them on both sides (each its own work request), kept in flight
 * by submit and wait for MOD_SECONDS, with moderate_completions Y and N
 * in turn (passes alternate which goes first). Each reports work requests
 * per second, the machine's busy CPU per work request and the share of
 * work requests that completed without a completion of their own; then
 * the medians and Y / N.
 */
#define MODERATE	"/sys/module/xferk/parameters/moderate_completions"
#define MODERATED	"/sys/class/misc/xferk/stats/completions_moderated"
#define MOD_FRAGS	64
#define MOD_DEPTH	8
#define MOD_PASSES	3

struct mod_row {
	double wr_per_s;
	double cpu_us_wr;
	double moderated;	/* completions_moderated per work request */
};

/* One measurement of @len-byte fragments of @opcode on @e. */
static int mod_run(struct qos_end *e, size_t len, uint8_t opcode,
		   double seconds, struct mod_row *r)
{
	static struct xferk_frag frags[MOD_DEPTH][MOD_FRAGS];
	long long moderated = read_number(MODERATED);
	struct xferk_op_snapshot snap;
	uint64_t ops[MOD_DEPTH], t0, wrs = 0;
	double cpu0 = cpu_busy_s(), elapsed;
	unsigned int d, i;
	int ret;

	for (d = 0; d < MOD_DEPTH; d++)
		for (i = 0; i < MOD_FRAGS; i++)
			frags[d][i] = (struct xferk_frag) {
				.mr = e->mr, .len = len, .remote = e->remote,
				.offset = (d * MOD_FRAGS + i) * 2 * len,
				.remote_offset = (d * MOD_FRAGS + MOD_FRAGS - 1 - i) *
						 2 * len,
				.opcode = opcode,
			};
	t0 = xferk_now_ns();
	while (xferk_now_ns() - t0 < seconds * SEC) {
		for (d = 0; d < MOD_DEPTH; d++) {
			ret = xferk_submit(e->x, frags[d], MOD_FRAGS,
					   xferk_now_ns() + 50 * SEC, 0, &ops[d]);
			if (ret)
				return ret;
		}
		for (d = 0; d < MOD_DEPTH; d++) {
			ret = xferk_wait(e->x, ops[d], XFERK_DEADLINE_NONE,
					 XFERK_WAIT_PHYSICAL, &snap);
			xferk_release(e->x, ops[d]);
			if (ret || snap.state != XFERK_STATE_SUCCEEDED)
				return ret ?: -EIO;
		}
		wrs += MOD_DEPTH * MOD_FRAGS;
	}
	elapsed = (double)(xferk_now_ns() - t0) / SEC;
	r->wr_per_s = wrs / elapsed;
	r->cpu_us_wr = (cpu_busy_s() - cpu0) / wrs * 1e6;
	r->moderated = (double)(read_number(MODERATED) - moderated) / wrs;
	return 0;
}

static int bench_moderation(int quick, const char *json, const char *peer)
{
	static const size_t lens[] = { 4096, 16 << 10 };
	static const uint8_t opcodes[] = { XFERK_OP_WRITE, XFERK_OP_READ };
	unsigned int nr_lens = quick ? 1 : 2, passes = quick ? 1 : MOD_PASSES;
	struct mod_row rows[2][2][2][MOD_PASSES];	/* len, op, Y/N, pass */
	double seconds = quick ? 0.5 : 2, v[2][3][MOD_PASSES];
	struct qos_end e[2];
	unsigned int l, o, m, pass, k;
	char was[4] = "";
	FILE *f;
	int ret = 0;

	f = fopen(MODERATE, "r");
	if (!f || !fgets(was, sizeof(was), f) || (was[0] != 'Y' && was[0] != 'N')) {
		fprintf(stderr, "%s: not readable (module not loaded?)\n", MODERATE);
		if (f)
			fclose(f);
		return 1;
	}
	fclose(f);
	was[1] = 0;
	for (l = 0; l < nr_lens; l++)
		if (qos_setup(&e[l], peer, 0, 2 * MOD_DEPTH * MOD_FRAGS * lens[l]))
			return 1;
	printf("%u ops of %u scattered fragments in flight, %.1f s per row\n",
	       MOD_DEPTH, MOD_FRAGS, seconds);
	for (pass = 0; pass < passes && !ret; pass++) {
		for (k = 0; k < 2 && !ret; k++) {
			m = (pass + k) % 2;	/* 0: Y, 1: N */
			ret = write_text(MODERATE, m ? "N" : "Y");
			for (l = 0; l < nr_lens && !ret; l++) {
				for (o = 0; o < 2 && !ret; o++) {
					struct mod_row *r = &rows[l][o][m][pass];

					ret = mod_run(&e[l], lens[l], opcodes[o],
						      seconds, r);
					if (ret)
						break;
					printf("pass %u moderate %c: %-5s %6zu: %7.2f k WR/s %7.1f us CPU/WR %4.2f moderated\n",
					       pass + 1, m ? 'N' : 'Y',
					       o ? "READ" : "WRITE", lens[l],
					       r->wr_per_s / 1e3, r->cpu_us_wr,
					       r->moderated);
				}
			}
		}
	}
	write_text(MODERATE, was);
	for (l = 0; l < nr_lens; l++)
		xferk_close(e[l].x);
	if (ret) {
		fprintf(stderr, "moderation: %s\n", strerror(-ret));
		return 1;
	}
	printf("%-5s %6s %10s %10s %6s %10s %10s %6s\n", "op", "len", "Y k WR/s",
	       "N k WR/s", "Y/N", "Y us/WR", "N us/WR", "Y/N");
	for (l = 0; l < nr_lens; l++) {
		for (o = 0; o < 2; o++) {
			for (m = 0; m < 2; m++) {
				for (pass = 0; pass < passes; pass++) {
					v[m][0][pass] = rows[l][o][m][pass].wr_per_s;
					v[m][1][pass] = rows[l][o][m][pass].cpu_us_wr;
				}
				v[m][0][0] = median(v[m][0], passes);
				v[m][1][0] = median(v[m][1], passes);
			}
			printf("%-5s %6zu %10.2f %10.2f %6.2f %10.1f %10.1f %6.2f\n",
			       o ? "READ" : "WRITE", lens[l], v[0][0][0] / 1e3,
			       v[1][0][0] / 1e3, v[0][0][0] / v[1][0][0],
			       v[0][1][0], v[1][1][0], v[0][1][0] / v[1][1][0]);
		}
	}
	f = json_open(json);
	if (!f)
		return 1;
	fprintf(f, "{\"benchmark\": \"moderation\", \"frags\": %u, \"depth\": %u, \"rows\": [\n",
		MOD_FRAGS, MOD_DEPTH);
	for (l = 0; l < nr_lens; l++)
		for (o = 0; o < 2; o++)
			for (m = 0; m < 2; m++)
				for (pass = 0; pass < passes; pass++) {
					struct mod_row *r = &rows[l][o][m][pass];

					fprintf(f, "  {\"op\": \"%s\", \"len\": %zu, \"moderate\": %s, \"pass\": %u, \"wr_per_s\": %.0f, \"cpu_us_wr\": %.2f, \"moderated\": %.3f}%s\n",
						o ? "READ" : "WRITE", lens[l],
						m ? "false" : "true", pass + 1,
						r->wr_per_s, r->cpu_us_wr,
						r->moderated,
						l == nr_lens - 1 && o == 1 &&
						m == 1 && pass == passes - 1 ?
						"" : ",");
				}
	fprintf(f, "]}\n");
	if (f != stdout)
		fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	const char *json = NULL, *peer = "10.99.0.1";
	unsigned int hogs = 0;
	int i, quick = 0;
	char c;

	if (argc < 2 || (strcmp(argv[1], "ctrl") && strcmp(argv[1], "qos") &&
			 strcmp(argv[1], "bw") && strcmp(argv[1], "kernel") &&
			 strcmp(argv[1], "moderation"))) {
		fprintf(stderr, "usage: %s ctrl|qos|bw|kernel|moderation [--quick] [--json FILE] [--peer IP] [--hogs N]\n",
			argv[0]);
		return 2;
	}
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else if (!strcmp(argv[i], "--peer") && i + 1 < argc)
			peer = argv[++i];
		else if (!strcmp(argv[i], "--hogs") && i + 1 < argc &&
			 sscanf(argv[i + 1], "%u%c", &hogs, &c) == 1 &&
			 hogs <= MAX_HOGS)
			i++;
		else
			return fprintf(stderr, "unknown option %s\n", argv[i]), 2;
	}
	if (!strcmp(argv[1], "qos"))
		return bench_qos(quick, json, peer);
	if (!strcmp(argv[1], "bw"))
		return bench_bw(quick, json, peer);
	if (!strcmp(argv[1], "kernel"))
		return bench_kernel(quick, json, peer, hogs);
	if (!strcmp(argv[1], "moderation"))
		return bench_moderation(quick, json, peer);
	return bench_ctrl(quick, json);
}
