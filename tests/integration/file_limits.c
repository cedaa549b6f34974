// SPDX-License-Identifier: GPL-2.0
/*
 * What one open file may make the kernel hold, hit by an unprivileged
 * process (Documentation/security.md): each kind of handle has its limit
 * (EMFILE, and room again once one is dropped), so do the pages its
 * exports cover and its connection attempts in progress (EMFILE), the
 * chunks of a file's unfinished ops have theirs (EBUSY until they
 * finish), regions are bounded
 * by RLIMIT_MEMLOCK and by the machine's memory before anything is
 * allocated (ENOMEM, EOVERFLOW; no warning in the kernel log), and the
 * limits themselves only take values in their range.
 *
 * Regression: a file could hold 2^20 handles, an op any number of chunks,
 * and MR_REG allocated its page array before checking RLIMIT_MEMLOCK, so
 * an unprivileged 2^40-byte MR_REG warned in kvmalloc and could take 2 GiB
 * of kernel memory per call.
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include "test.h"

#define FAULT	"/sys/kernel/debug/xferk/fault/"
#define KB	1024UL

static const char *const params[] = {
	"max_regions_per_file", "max_conns_per_file", "max_exports_per_file",
	"max_imports_per_file", "max_ops_per_file", "max_chunks_per_file",
	"max_export_pages_per_file",
};
#define NPARAMS	(sizeof(params) / sizeof(params[0]))

static long long saved[NPARAMS];

static void restore(void)
{
	unsigned int i;

	for (i = 0; i < NPARAMS; i++)
		if (saved[i] > 0)
			t_set_param(params[i], saved[i]);
	t_write_file(FAULT "delay_completions", "0");
	t_write_file(FAULT "delay_ms", "100");
}

/* A one-byte WRITE, waited for until physical; the handle is kept. */
static int small_op(struct xferk *x, uint64_t src_mr, uint64_t remote,
		    uint64_t *op)
{
	struct xferk_frag f = { .mr = src_mr, .len = 1, .remote = remote,
				.opcode = XFERK_OP_WRITE };
	struct xferk_op_snapshot s;
	int ret = xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, op);

	if (!ret)
		ret = xferk_wait(x, *op, XFERK_DEADLINE_NONE,
				 XFERK_WAIT_PHYSICAL, &s);
	return ret;
}

/* The handle limits, set to 3 regions, 2 of everything else, 3 ops. */
static int handles_child(void)
{
	const uint32_t rw = XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE;
	uint64_t mr[4], conn[3], exp[3], remote[3], op[4];
	uint8_t *buf = t_map(64 * KB);
	struct xferk_token tok;
	struct xferk *x;
	int i;

	t_become_user(1);
	if (xferk_open(&x))
		return T_FAIL;
	T_EXPECT(xferk_mr_reg(x, buf, 4 * KB, XFERK_ACCESS_ALL, &mr[0]) == 0 &&
		 xferk_mr_reg(x, buf + 8 * KB, 8 * KB, XFERK_ACCESS_ALL, &mr[1]) == 0 &&
		 xferk_mr_reg(x, buf + 32 * KB, 4 * KB, XFERK_ACCESS_ALL, &mr[2]) == 0,
		 "three regions");
	T_EXPECT_ERR(xferk_mr_reg(x, buf + 48 * KB, 4 * KB, XFERK_ACCESS_ALL,
				  &mr[3]), EMFILE);
	T_EXPECT(xferk_mr_dereg(x, mr[2]) == 0 &&
		 xferk_mr_reg(x, buf + 48 * KB, 4 * KB, XFERK_ACCESS_ALL,
			      &mr[2]) == 0, "room again after a dereg");

	T_EXPECT(xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn[0]) == 0 &&
		 xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn[1]) == 0,
		 "two connection handles");
	T_EXPECT_ERR(xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn[2]),
		     EMFILE);

	for (i = 0; i < 2; i++)
		T_EXPECT(xferk_export(x, conn[0], mr[1], 0, 8 * KB, rw, &tok,
				      &exp[i]) == 0, "export %d", i);
	T_EXPECT_ERR(xferk_export(x, conn[0], mr[1], 0, 8 * KB, rw, &tok,
				  &exp[2]), EMFILE);
	for (i = 0; i < 2; i++)
		T_EXPECT(xferk_import(x, conn[0], &tok, &remote[i]) == 0,
			 "import %d", i);
	T_EXPECT_ERR(xferk_import(x, conn[0], &tok, &remote[2]), EMFILE);

	/* Finished ops count until they are released. */
	for (i = 0; i < 3; i++)
		T_EXPECT(small_op(x, mr[0], remote[0], &op[i]) == 0, "op %d", i);
	T_EXPECT_ERR(small_op(x, mr[0], remote[0], &op[3]), EMFILE);
	T_EXPECT(xferk_release(x, op[0]) == 0 &&
		 small_op(x, mr[0], remote[0], &op[3]) == 0,
		 "room again after a release");
	xferk_close(x);
	return t_result();
}

/*
 * The chunk budget, set to 20: an op of 16 work requests in flight (its
 * first completion held back 3 s) leaves no room for a second one.
 */
static int chunks_child(void)
{
	const size_t len = 2UL << 20;	/* 16 work requests of 128 KiB */
	uint8_t *src = t_map(len), *dst = t_map(len + 4096);
	struct xferk_op_snapshot s;
	uint64_t conn, src_mr, dst_mr, remote, a, b;
	struct xferk_frag f;
	struct xferk *x;
	int ret;

	t_become_user(1);
	if (xferk_open(&x) ||
	    t_setup(x, src, len, dst, len + 4096, &conn, &src_mr, &dst_mr, &remote))
		return T_FAIL;
	f = (struct xferk_frag) { .mr = src_mr, .len = len, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	ret = xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &a);
	T_EXPECT(ret == 0, "first op: %s", strerror(-ret));
	T_EXPECT_ERR(xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &b), EBUSY);
	T_EXPECT(xferk_wait(x, a, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s) == 0,
		 "first op physical");
	ret = xferk_submit(x, &f, 1, XFERK_DEADLINE_NONE, 0, &b);
	T_EXPECT(ret == 0, "second op once the first finished: %s",
		 strerror(-ret));
	if (!ret)
		xferk_wait(x, b, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &s);
	xferk_close(x);
	return t_result();
}

/*
 * The pages a file's exports cover (4 here), and its connection attempts
 * in progress (1 here): two attempts to addresses nobody answers, one
 * through the ring and one through the ioctl; whichever starts second is
 * refused, whatever the scheduling.
 */
static int exports_attempts_child(int unused)
{
	const uint32_t rw = XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE;
	struct xferk_ioc_connect a = { .size = sizeof(a), .family = AF_INET,
				       .timeout_ms = 3000,
				       .addr = { 10, 99, 0, 78 } };
	uint8_t *buf = t_map(16 * KB);
	uint64_t conn, mr, exp[3], c2, ud;
	struct xferk_token tok;
	struct io_uring ring;
	struct xferk *x;
	int res, ret, refused;

	t_become_user(1);
	if (xferk_open(&x))
		return T_FAIL;
	/* No handle yet: only the attempts count. */
	t_ring(&ring, 4, 0, 0);
	io_uring_prep_xferk_cmd(t_sqe(&ring), xferk_fd(x), XFERK_IOC_CONNECT, &a);
	io_uring_submit(&ring);
	ret = xferk_connect(x, "10.99.0.79", 0, 3000, &c2);
	if (t_cqe(&ring, 30000, &res, &ud))
		res = -ETIME;
	refused = (ret == -EMFILE) + (res == -EMFILE);
	T_EXPECT(refused == 1, "attempts: ioctl %d, ring %d; want one EMFILE",
		 ret, res);

	if (xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn) ||
	    xferk_mr_reg(x, buf, 16 * KB, XFERK_ACCESS_ALL, &mr))
		return T_FAIL;
	T_EXPECT(xferk_export(x, conn, mr, 0, 8 * KB, rw, &tok, &exp[0]) == 0 &&
		 xferk_export(x, conn, mr, 8 * KB, 8 * KB, rw, &tok, &exp[1]) == 0,
		 "two exports of two pages");
	T_EXPECT_ERR(xferk_export(x, conn, mr, 0, 4 * KB, rw, &tok, &exp[2]),
		     EMFILE);
	T_EXPECT(xferk_unexport(x, exp[0]) == 0 &&
		 xferk_export(x, conn, mr, 0, 4 * KB, rw, &tok, &exp[2]) == 0,
		 "room again after an unexport");
	io_uring_queue_exit(&ring);
	xferk_close(x);
	return t_result();
}

/* Huge lengths: refused before anything is allocated. */
static int lengths_child(int unprivileged)
{
	uint8_t *buf = t_map(64 * KB);
	struct xferk *x;
	uint64_t mr;

	if (unprivileged)
		t_become_user(1);
	if (xferk_open(&x))
		return T_FAIL;
	T_EXPECT_ERR(xferk_mr_reg(x, buf, 1ULL << 40, XFERK_ACCESS_LOCAL_SRC, &mr),
		     ENOMEM);
	T_EXPECT_ERR(xferk_mr_reg(x, buf, 1ULL << 62, XFERK_ACCESS_LOCAL_SRC, &mr),
		     ENOMEM);
	T_EXPECT_ERR(xferk_mr_reg(x, buf, UINT64_MAX - (uintptr_t)buf,
				  XFERK_ACCESS_LOCAL_SRC, &mr), EOVERFLOW);
	if (unprivileged)
		/* RLIMIT_MEMLOCK is 1 MiB. */
		T_EXPECT_ERR(xferk_mr_reg(x, t_map(2 << 20), 2 << 20,
					  XFERK_ACCESS_LOCAL_SRC, &mr), ENOMEM);
	xferk_close(x);
	return t_result();
}

static void run(const char *what, int (*fn)(int), int arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		t_failures = 0;	/* the parent's are not the child's */
		exit(fn(arg));
	}
	waitpid(pid, &status, 0);
	T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == T_PASS,
		 "%s: status %#x", what, status);
}

static int handles(int unused)
{
	return handles_child();
}

static int chunks(int unused)
{
	return chunks_child();
}

int main(void)
{
	struct rlimit rl = { 1 << 20, 1 << 20 };
	long long rejects = t_stat("limit_rejects");
	long long events, flush;
	unsigned int i;

	if (access("/dev/xferk", F_OK))
		return T_SKIP;
	for (i = 0; i < NPARAMS; i++) {
		saved[i] = t_param(params[i]);
		T_EXPECT(saved[i] > 0, "parameter %s", params[i]);
	}
	/* Out of range: refused, unchanged. */
	T_EXPECT(t_set_param("max_ops_per_file", 0) < 0 && errno == EINVAL,
		 "max_ops_per_file 0 accepted");
	T_EXPECT(t_set_param("max_regions_per_file", 65536) < 0 && errno == EINVAL,
		 "max_regions_per_file 65536 accepted");
	T_EXPECT(t_param("max_ops_per_file") == saved[4], "changed by a refused write");
	/* Regression: these two took any value. */
	events = t_param("events_per_file");
	T_EXPECT(t_set_param("events_per_file", 15) < 0 && errno == EINVAL &&
		 t_set_param("events_per_file", 65537) < 0 && errno == EINVAL &&
		 t_param("events_per_file") == events,
		 "events_per_file out of 16..65536 accepted");
	flush = t_param("flush_timeout_ms");
	T_EXPECT(t_set_param("flush_timeout_ms", 600001) < 0 && errno == EINVAL &&
		 t_set_param("flush_timeout_ms", 4294967295LL) < 0 &&
		 errno == EINVAL && t_param("flush_timeout_ms") == flush,
		 "flush_timeout_ms above 600000 accepted");
	if (t_failures) {
		restore();
		return T_FAIL;
	}
	setrlimit(RLIMIT_MEMLOCK, &rl);

	t_set_param("max_regions_per_file", 3);
	t_set_param("max_conns_per_file", 2);
	t_set_param("max_exports_per_file", 2);
	t_set_param("max_imports_per_file", 2);
	t_set_param("max_ops_per_file", 3);
	run("handle limits", handles, 0);
	restore();

	t_set_param("max_chunks_per_file", 20);
	t_write_file(FAULT "delay_ms", "3000");
	t_write_file(FAULT "delay_completions", "1");
	rl.rlim_cur = rl.rlim_max = 8 << 20;
	setrlimit(RLIMIT_MEMLOCK, &rl);
	run("chunk budget", chunks, 0);
	restore();

	t_set_param("max_export_pages_per_file", 4);
	t_set_param("max_conns_per_file", 1);
	run("export pages, connection attempts", exports_attempts_child, 0);
	restore();

	rl.rlim_cur = rl.rlim_max = 1 << 20;
	setrlimit(RLIMIT_MEMLOCK, &rl);
	run("lengths, unprivileged", lengths_child, 1);
	run("lengths, root", lengths_child, 0);
	T_EXPECT(t_stat("limit_rejects") >= rejects + 8, "limit_rejects %lld, was %lld",
		 t_stat("limit_rejects"), rejects);
	return t_result();
}
