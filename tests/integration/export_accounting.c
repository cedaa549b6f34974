// SPDX-License-Identifier: GPL-2.0
/*
 * Exports and what they are counted and charged as:
 *  - the exports counter counts live exports: an EXPORT that fails after
 *    its validation, at the file's export limit (EMFILE) or on a
 *    connection that went down (ENOTCONN; fail_qp on a null peer), leaves
 *    it unchanged, and it never reads negative;
 *  - read-only memory (a PROT_READ mapping registered REMOTE_READ) can be
 *    exported for REMOTE_READ, and an RDMA READ of it over soft-RoCE
 *    returns its bytes;
 *  - an export's pages are charged to RLIMIT_MEMLOCK once: an
 *    unprivileged process whose limit is exactly the size of its two
 *    regions exports all of one, writes 1 MiB into it and reads it back,
 *    and its VmPin shows every page once throughout; for a region the
 *    device fast-registers (1 MiB) and for one longer than soft-RoCE's
 *    fast-registration page list (4 MiB: registered as user memory, whose
 *    own check of the limit needs room for its pages while it registers,
 *    so the limit has that much more).
 *
 * Regression: a failed export decremented a counter it had not
 * incremented (it read negative); a read-only export asked for local
 * write access (EFAULT); the export's registration charged its pages a
 * second time (ENOMEM, and VmPin counted them twice), for a range
 * registered as user memory until issue 27's defect 8 was fixed (VmPin
 * counted its pages twice).
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include "test.h"

#define FAULT	"/sys/kernel/debug/xferk/fault/"
#define KB	1024UL
#define SRC_LEN	(1UL << 20)
/* Plus rxe's page-map slack (two_process.c). */
#define DST_LEN		((1UL << 20) + 4096)	/* fast registration */
#define DST_LONG	((4UL << 20) + 4096)	/* 1025 pages: rxe maps 512 */

static long long saved_limit = -1;

static void restore(void)
{
	if (saved_limit > 0)
		t_set_param("max_exports_per_file", saved_limit);
	t_write_file(FAULT "fail_qp", "0");
}

static void check_exports(long long want, const char *when)
{
	long long n = t_stat("exports");

	T_EXPECT(n == want && n >= 0, "%s: exports %lld, want %lld", when, n,
		 want);
}

/* (a) The counter, around two failures after validation. */
static void counter(void)
{
	const uint32_t rw = XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE;
	long long base = t_stat("exports");
	uint64_t mr, conn, exp[3], remote;
	uint8_t *buf = t_map(64 * KB);
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	struct xferk_frag f;
	struct xferk *x;
	int i, ret;

	T_EXPECT(base >= 0, "exports %lld before", base);
	if (xferk_open(&x)) {
		T_EXPECT(0, "open");
		return;
	}
	ret = xferk_mr_reg(x, buf, 64 * KB, XFERK_ACCESS_ALL, &mr);
	if (!ret)
		ret = xferk_connect_null(x, 0, &conn);
	for (i = 0; i < 2 && !ret; i++)
		ret = xferk_export(x, conn, mr, 0, 64 * KB, rw, &tok, &exp[i]);
	if (!ret)
		ret = xferk_import(x, conn, &tok, &remote);
	T_EXPECT(ret == 0, "setup: %s", strerror(-ret));
	if (ret) {
		xferk_close(x);
		return;
	}
	check_exports(base + 2, "two exports");

	/* The file holds as many exports as it may: EMFILE. */
	T_EXPECT(t_set_param("max_exports_per_file", 2) == 0, "set limit: %s",
		 strerror(errno));
	T_EXPECT_ERR(xferk_export(x, conn, mr, 0, 64 * KB, rw, &tok, &exp[2]),
		     EMFILE);
	T_EXPECT(t_set_param("max_exports_per_file", saved_limit) == 0,
		 "restore limit");
	check_exports(base + 2, "after EMFILE");

	/* The next chunk handed to the connection fails it: ENOTCONN. */
	f = (struct xferk_frag) { .mr = mr, .len = 64, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	T_EXPECT(t_write_file(FAULT "fail_qp", "1") == 0, "fail_qp");
	ret = t_run(x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_FAILED, "op on the failing connection: %d",
		 ret);
	t_write_file(FAULT "fail_qp", "0");
	T_EXPECT_ERR(xferk_export(x, conn, mr, 0, 64 * KB, rw, &tok, &exp[2]),
		     ENOTCONN);
	check_exports(base + 2, "after ENOTCONN");

	T_EXPECT(xferk_unexport(x, exp[0]) == 0, "unexport");
	check_exports(base + 1, "after an unexport");
	xferk_close(x);
	check_exports(base, "after close");
	munmap(buf, 64 * KB);
}

/* (b) Read-only memory, exported for reading and read over rxe. */
static void read_only(void)
{
	const size_t len = 64 * KB;
	uint8_t *ro = t_map(len), *dst = t_map(len);
	uint64_t conn, ro_mr, dst_mr, exp, remote;
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	struct xferk_frag f;
	struct xferk *x;
	long bad;
	int ret;

	t_fill(ro, len, 7);
	if (mprotect(ro, len, PROT_READ) || xferk_open(&x)) {
		T_EXPECT(0, "mprotect, open");
		return;
	}
	ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn);
	T_EXPECT(ret == 0, "connect: %s", strerror(-ret));
	if (!ret) {
		ret = xferk_mr_reg(x, ro, len, XFERK_ACCESS_REMOTE_READ, &ro_mr);
		T_EXPECT(ret == 0, "register read-only memory: %s",
			 strerror(-ret));
	}
	if (!ret) {
		ret = xferk_export(x, conn, ro_mr, 0, len,
				   XFERK_ACCESS_REMOTE_READ, &tok, &exp);
		T_EXPECT(ret == 0, "export read-only memory for reading: %s",
			 strerror(-ret));
	}
	if (!ret) {
		ret = xferk_import(x, conn, &tok, &remote);
		if (!ret)
			ret = xferk_mr_reg(x, dst, len, XFERK_ACCESS_LOCAL_DST,
					   &dst_mr);
		T_EXPECT(ret == 0, "import, destination: %s", strerror(-ret));
	}
	if (!ret) {
		f = (struct xferk_frag) { .mr = dst_mr, .len = len,
					  .remote = remote,
					  .opcode = XFERK_OP_READ };
		ret = t_run(x, &f, 1, &s);
		T_EXPECT(ret == XFERK_STATE_SUCCEEDED && s.transferred_bytes == len,
			 "READ of the read-only export: %d, %llu bytes", ret,
			 (unsigned long long)s.transferred_bytes);
		bad = t_check(dst, len, 7);
		T_EXPECT(bad < 0, "READ: byte %ld differs", bad);
	}
	xferk_close(x);
	munmap(ro, len);
	munmap(dst, len);
}

/* VmPin of this process in kB, or -1. */
static long vm_pin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * (c) In a child: RLIMIT_MEMLOCK is both regions (the second one @dst_len
 * long) and @room, no privileges.
 */
static int memlock_child(size_t dst_len, size_t room)
{
	const long want = (SRC_LEN + dst_len) / KB;
	struct rlimit rl = { SRC_LEN + dst_len + room,
			     SRC_LEN + dst_len + room };
	uint8_t *src = t_map(SRC_LEN), *dst = t_map(dst_len);
	uint64_t conn, src_mr, dst_mr, exp, remote;
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	struct xferk_frag f;
	struct xferk *x;
	long bad;
	int ret;

	if (setrlimit(RLIMIT_MEMLOCK, &rl)) {
		perror("setrlimit");
		return T_FAIL;
	}
	t_become_user(1);
	if (xferk_open(&x))
		return T_FAIL;
	T_EXPECT(vm_pin_kb() == 0, "VmPin %ld kB at start", vm_pin_kb());
	ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn);
	if (!ret)
		ret = xferk_mr_reg(x, src, SRC_LEN, XFERK_ACCESS_LOCAL_SRC |
				   XFERK_ACCESS_LOCAL_DST, &src_mr);
	if (!ret)
		ret = xferk_mr_reg(x, dst, dst_len, XFERK_ACCESS_REMOTE_WRITE,
				   &dst_mr);
	T_EXPECT(ret == 0, "connect, two regions: %s", strerror(-ret));
	if (ret)
		return T_FAIL;
	T_EXPECT(vm_pin_kb() == want, "VmPin %ld kB after MR_REG, want %ld",
		 vm_pin_kb(), want);

	ret = xferk_export(x, conn, dst_mr, 0, dst_len,
			   XFERK_ACCESS_REMOTE_WRITE, &tok, &exp);
	T_EXPECT(ret == 0, "export of a whole region within RLIMIT_MEMLOCK: %s",
		 strerror(-ret));
	if (ret)
		return T_FAIL;
	T_EXPECT(vm_pin_kb() == want, "VmPin %ld kB with the export, want %ld",
		 vm_pin_kb(), want);

	ret = xferk_import(x, conn, &tok, &remote);
	T_EXPECT(ret == 0, "import: %s", strerror(-ret));
	if (ret)
		return T_FAIL;
	t_fill(src, SRC_LEN, 11);
	memset(dst, 0, dst_len);
	f = (struct xferk_frag) { .mr = src_mr, .len = SRC_LEN, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	ret = t_run(x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "WRITE 1 MiB: %d err %d", ret,
		 s.first_error);
	bad = t_check(dst, SRC_LEN, 11);
	T_EXPECT(bad < 0, "WRITE: byte %ld differs", bad);
	T_EXPECT(vm_pin_kb() == want, "VmPin %ld kB after the WRITE, want %ld",
		 vm_pin_kb(), want);

	/* The region keeps its own charge; the last reference returns it. */
	T_EXPECT(xferk_unexport(x, exp) == 0, "unexport");
	T_EXPECT(vm_pin_kb() == want, "VmPin %ld kB after unexport, want %ld",
		 vm_pin_kb(), want);
	xferk_close(x);
	T_EXPECT(vm_pin_kb() == 0, "VmPin %ld kB after close", vm_pin_kb());
	return t_result();
}

static void memlock(size_t dst_len, size_t room)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid == 0)
		_exit(memlock_child(dst_len, room));
	waitpid(pid, &status, 0);
	T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == T_PASS,
		 "memlock child, %zu bytes exported: status %#x", dst_len,
		 status);
}

int main(void)
{
	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	saved_limit = t_param("max_exports_per_file");
	if (saved_limit <= 0) {
		fprintf(stderr, "no parameter max_exports_per_file\n");
		return T_FAIL;
	}
	atexit(restore);

	counter();
	read_only();

	memlock(DST_LEN, 0);
	memlock(DST_LONG, DST_LONG);
	return t_result();
}
