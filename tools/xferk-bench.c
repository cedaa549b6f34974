// SPDX-License-Identifier: GPL-2.0
/*
 * xferk-bench: benchmarks of /dev/xferk.
 *
 *   xferk-bench ctrl [--quick] [--json FILE]
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
 * on any failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <liburing.h>

#include "libxferk.h"
#include "xferk_uring.h"

#define MAX_FRAGS	4096
#define FRAG_LEN	64
#define MAX_BATCH	64
#define SEC		1000000000ULL
#define MAX_SAMPLES	20000

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
	unsigned int i, j, scale = quick ? 20 : 1;
	FILE *f = stdout;

	if (setup(&b))
		return 1;
	b.samples = calloc(MAX_SAMPLES, sizeof(double));
	if (!b.samples)
		return 1;
	for (j = 0; j < 3; j++)
		if (measure(&b, M_NOP, 0, batches[j], 20000 / scale))
			return 1;
	for (i = 0; i < 4; i++) {
		/* About the same number of fragments for every size. */
		unsigned int ops = 256 * 1024 / (frag_counts[i] + 64) / scale + 64;

		if (ops < 8 * MAX_BATCH)
			ops = 8 * MAX_BATCH;	/* at least 8 samples per batch */

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

int main(int argc, char **argv)
{
	const char *json = NULL;
	int i, quick = 0;

	if (argc < 2 || strcmp(argv[1], "ctrl")) {
		fprintf(stderr, "usage: %s ctrl [--quick] [--json FILE]\n", argv[0]);
		return 2;
	}
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else
			return fprintf(stderr, "unknown option %s\n", argv[i]), 2;
	}
	return bench_ctrl(quick, json);
}
