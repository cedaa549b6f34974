// SPDX-License-Identifier: GPL-2.0
/*
 * xferk-bench: benchmarks of /dev/xferk.
 *
 *   xferk-bench ctrl [--quick] [--json FILE]
 *   xferk-bench qos [--quick] [--json FILE] [--peer IP]
 *
 * ctrl: the control-plane cost of an op, on the scripted null peer (no
 * data moves; needs CAP_SYS_ADMIN). For 1, 16, 256 and 4096 fragments per
 * op it measures
 *   ioctl      XFERK_IOC_SUBMIT + XFERK_IOC_WAIT (physical) + RELEASE
 *   io_uring   B parked SUBMITs (auto-release) per io_uring_enter, B = 1,
 *              16, 64, until all B CQEs are reaped
 *   nop        B IORING_OP_NOPs per io_uring_enter: the ring's floor
 * and prints the median and 95th percentile per op and per fragment, as a
 * table and as JSON (stdout, or FILE). Every op must succeed: exit 0, or 1
 * on any failure. --quick is a smoke run of every path with few ops.
 *
 * qos: the admission queue over a real RDMA device (PEER, default
 * 10.99.0.1: loopback over the test VM's soft-RoCE). The latency (median,
 * p99) of a critical-class 64 KiB WRITE alone; then while bulk-class
 * processes keep the device saturated (1 MiB WRITEs, BULK_DEPTH each in
 * flight), with the queue (its qp_window, and 4) and with queue_bypass;
 * and the bulk throughput of 1, 2, 4 and 8 processes with both windows.
 * Needs root (queue_bypass, qp_window).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
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
	unsigned int batch;
	unsigned int frags;
	unsigned int samples;
	double op_median_ns;
	double op_p95_ns;
};

struct bench {
	struct xferk *x;
	struct io_uring ring;
	struct xferk_frag frags[MAX_FRAGS];
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
		.method = m, .batch = batch, .frags = frags, .samples = n,
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
		    (m == M_NOP || b->results[i].frags == frags))
			return &b->results[i];
	return NULL;
}

static void print_table(const struct bench *b)
{
	unsigned int i;

	printf("%-9s %5s %5s %8s %12s %12s %12s %12s %8s %9s\n", "method",
	       "batch", "frags", "samples", "op_med_ns", "op_p95_ns",
	       "frag_med_ns", "frag_p95_ns", "vs_nop", "vs_ioctl");
	for (i = 0; i < b->nr_results; i++) {
		const struct result *r = &b->results[i];
		const struct result *nop = find(b, M_NOP, 0, r->batch);
		const struct result *ioc = find(b, M_IOCTL, r->frags, 1);
		unsigned int frags = r->method == M_NOP ? 1 : r->frags;

		printf("%-9s %5u %5u %8u %12.0f %12.0f %12.1f %12.1f ",
		       method_names[r->method], r->batch,
		       r->method == M_NOP ? 0 : r->frags, r->samples,
		       r->op_median_ns, r->op_p95_ns, r->op_median_ns / frags,
		       r->op_p95_ns / frags);
		if (r->method == M_URING && nop)
			printf("%8.1f ", r->op_median_ns / nop->op_median_ns);
		else
			printf("%8s ", "-");
		if (r->method == M_URING && ioc)
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

		fprintf(f, "  {\"method\": \"%s\", \"batch\": %u, \"frags\": %u, "
			"\"samples\": %u, \"op_median_ns\": %.0f, "
			"\"op_p95_ns\": %.0f, \"frag_median_ns\": %.1f, "
			"\"frag_p95_ns\": %.1f}%s\n", method_names[r->method],
			r->batch, r->method == M_NOP ? 0 : r->frags, r->samples,
			r->op_median_ns, r->op_p95_ns, r->op_median_ns / frags,
			r->op_p95_ns / frags, i + 1 < b->nr_results ? "," : "");
	}
	fprintf(f, "]}\n");
}

static int setup(struct bench *b)
{
	static uint8_t local[MAX_FRAGS * FRAG_LEN], remote[MAX_FRAGS * FRAG_LEN];
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
	for (i = 0; i < MAX_FRAGS; i++)
		b->frags[i] = (struct xferk_frag) {
			.mr = mr, .offset = i * FRAG_LEN, .len = FRAG_LEN,
			.remote = rem, .remote_offset = i * FRAG_LEN,
			.opcode = XFERK_OP_WRITE,
		};
	return 0;
}

static int bench_ctrl(int quick, const char *json)
{
	static const unsigned int frag_counts[] = { 1, 16, 256, 4096 };
	static const unsigned int batches[] = { 1, 16, 64 };
	static struct bench b;
	unsigned int i, j, scale = quick ? 100 : 1;
	FILE *f = stdout;

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
	}
	print_table(&b);
	if (json) {
		f = fopen(json, "w");
		if (!f) {
			perror(json);
			return 1;
		}
	}
	print_json(&b, f);
	if (f != stdout)
		fclose(f);
	io_uring_queue_exit(&b.ring);
	xferk_close(b.x);
	return 0;
}

/* qos: a loopback transfer setup of @len bytes: local source, remote range. */
struct qos_end {
	struct xferk *x;
	uint64_t mr;
	uint64_t remote;
};

static int qos_setup(struct qos_end *e, const char *peer, size_t len)
{
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
		ret = xferk_connect(e->x, peer, 0, 10000, &conn);
	if (!ret)
		ret = xferk_mr_reg(e->x, src, len, XFERK_ACCESS_LOCAL_SRC, &e->mr);
	if (!ret)
		ret = xferk_mr_reg(e->x, dst, len + 4096,
				   XFERK_ACCESS_REMOTE_WRITE, &dst_mr);
	if (!ret)
		ret = xferk_export(e->x, conn, dst_mr, 0, len + 4096,
				   XFERK_ACCESS_REMOTE_WRITE, &tok, &exp);
	if (!ret)
		ret = xferk_import(e->x, conn, &tok, &e->remote);
	if (ret)
		fprintf(stderr, "qos setup: %s\n", strerror(-ret));
	return ret;
}

#define BULK_LEN	(1UL << 20)
#define BULK_DEPTH	4
#define MAX_WORKERS	8

struct qos_shared {
	volatile int stop;
	volatile uint64_t bytes[MAX_WORKERS];
};

/* A bulk process: BULK_DEPTH 1 MiB WRITEs in flight until told to stop. */
static void bulk_worker(const char *peer, struct qos_shared *sh, int id,
			int ready)
{
	struct xferk_ioc_submit subs[BULK_DEPTH];
	struct xferk_frag frags[BULK_DEPTH];
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	struct qos_end e;
	int i, inflight = 0;

	if (qos_setup(&e, peer, BULK_DEPTH * BULK_LEN) ||
	    io_uring_queue_init(2 * BULK_DEPTH, &ring, 0))
		_exit(1);
	for (i = 0; i < BULK_DEPTH; i++)
		frags[i] = (struct xferk_frag) {
			.mr = e.mr, .offset = i * BULK_LEN, .len = BULK_LEN,
			.remote = e.remote, .remote_offset = i * BULK_LEN,
			.opcode = XFERK_OP_WRITE,
		};
	if (write(ready, "R", 1) != 1)
		_exit(1);
	for (i = 0; !sh->stop || inflight; ) {
		while (!sh->stop && inflight < BULK_DEPTH) {
			unsigned int slot = i++ % BULK_DEPTH;

			subs[slot] = (struct xferk_ioc_submit) {
				.size = sizeof(subs[slot]),
				.flags = XFERK_SUBMIT_AUTO_RELEASE,
				.frags = (uintptr_t)&frags[slot], .nr_frags = 1,
				.frag_size = sizeof(frags[slot]),
				.deadline_ns = xferk_now_ns() + 50 * SEC,
				.priority = XFERK_PRIO_BULK,
			};
			io_uring_prep_xferk_submit(io_uring_get_sqe(&ring),
						   xferk_fd(e.x), &subs[slot]);
			inflight++;
		}
		if (io_uring_submit_and_wait(&ring, 1) < 0 ||
		    io_uring_wait_cqe(&ring, &cqe))
			_exit(1);
		if (!xferk_cqe_succeeded(cqe))
			_exit(1);
		io_uring_cqe_seen(&ring, cqe);
		inflight--;
		sh->bytes[id] += BULK_LEN;
	}
	_exit(0);
}

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

static int write_number(const char *path, long long v)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -errno;
	ok = fprintf(f, "%lld", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -EIO;
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
	FILE *f = stdout;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || window < 0 || qos_setup(&e, peer, 64 << 10))
		return 1;
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
	if (json) {
		f = fopen(json, "w");
		if (!f) {
			perror(json);
			return 1;
		}
	}
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

int main(int argc, char **argv)
{
	const char *json = NULL, *peer = "10.99.0.1";
	int i, quick = 0, qos;

	if (argc < 2 || (strcmp(argv[1], "ctrl") && strcmp(argv[1], "qos"))) {
		fprintf(stderr, "usage: %s ctrl|qos [--quick] [--json FILE] [--peer IP]\n",
			argv[0]);
		return 2;
	}
	qos = !strcmp(argv[1], "qos");
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else if (!strcmp(argv[i], "--peer") && i + 1 < argc)
			peer = argv[++i];
		else
			return fprintf(stderr, "unknown option %s\n", argv[i]), 2;
	}
	return qos ? bench_qos(quick, json, peer) : bench_ctrl(quick, json);
}
