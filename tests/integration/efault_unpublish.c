// SPDX-License-Identifier: GPL-2.0
/*
 * A command that creates a handle and then cannot write its output back
 * fails with EFAULT and leaves nothing behind. Each argument struct sits
 * on a page the kernel can read but not write (filled, then mprotect()ed
 * PROT_READ); over soft-RoCE:
 *  - MR_REG: regions and pinned_pages are back at once;
 *  - EXPORT: the exports counter is back at once;
 *  - SUBMIT: the op (in flight: its completion is held back 1 s) is
 *    cancelled and drained in the background, and ops_live comes back;
 *  - SUBMIT through io_uring (no CQE32, no auto-release): the same, and
 *    its one CQE still posts, with the op's final state. Regression: the
 *    op stayed published, its handle never learnt, until the file closed;
 *  - CONNECT, IMPORT: EFAULT, and the process goes on working;
 *  - a rail IMPORT (XFERK_IMPORT_RAIL, through a second session to the
 *    host's other address) writes back the caller's own rail_of: EFAULT,
 *    and that remote handle still carries data and the rail stays added
 *    (the same rail again is EEXIST). Regression: the write-back's undo
 *    dropped rail_of, and with it every rail of that handle.
 * The file's handle table keeps nothing either: with the file's limit for
 * that kind of handle set to what it holds plus one, the same command done
 * normally afterwards still finds room (a leaked handle would make it
 * EMFILE). A control shows the kernel does read such a struct: a bad
 * field in it is EINVAL.
 *
 * Regression: the object stayed published, unreachable for the caller,
 * until the file was closed (regions, exports and ops_live stayed up).
 */
#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "test.h"

#define FAULT	"/sys/kernel/debug/xferk/fault/"
#define KB	1024UL

static const char *const params[] = {
	"max_regions_per_file", "max_conns_per_file", "max_exports_per_file",
	"max_imports_per_file", "max_ops_per_file", "exit_drain_ms",
};
#define NPARAMS	(sizeof(params) / sizeof(params[0]))

static long long saved[NPARAMS];
static long long saved_delay_ms = -1;
static struct t_loop l;

static long long read_number(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Puts back every parameter and knob this program changes (also atexit). */
static void restore(void)
{
	char v[32];
	unsigned int i;

	for (i = 0; i < NPARAMS; i++)
		if (saved[i] >= 0)
			t_set_param(params[i], saved[i]);
	t_write_file(FAULT "delay_completions", "0");
	if (saved_delay_ms >= 0) {
		snprintf(v, sizeof(v), "%lld", saved_delay_ms);
		t_write_file(FAULT "delay_ms", v);
	}
}

static void set_param(const char *name, long long val)
{
	T_EXPECT(t_set_param(name, val) == 0, "%s = %lld: %s", name, val,
		 strerror(errno));
}

/*
 * Runs @cmd with its argument on a page the kernel can read but not
 * write. Return: 0 or -errno.
 */
static int ioctl_ro(unsigned long cmd, const void *arg, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = t_map(page);
	int ret;

	memcpy(p, arg, len);
	if (mprotect(p, page, PROT_READ)) {
		perror("mprotect");
		exit(T_FAIL);
	}
	ret = ioctl(xferk_fd(l.x), cmd, p) ? -errno : 0;
	munmap(p, page);
	return ret;
}

/* The kernel reads a struct on a read-only page: a bad field is EINVAL. */
static void control(void)
{
	struct xferk_ioc_mr_reg a = {
		.size = sizeof(a), .addr = (uintptr_t)l.src, .len = 4096,
		.access = XFERK_ACCESS_LOCAL_SRC, .reserved0 = 1,
	};

	T_EXPECT_ERR(ioctl_ro(XFERK_IOC_MR_REG, &a, sizeof(a)), EINVAL);
}

static void mr_reg(void)
{
	long long regions = t_stat("regions"), pinned = t_stat("pinned_pages");
	uint8_t *buf = t_map(64 * KB);
	struct xferk_ioc_mr_reg a = {
		.size = sizeof(a), .addr = (uintptr_t)buf, .len = 64 * KB,
		.access = XFERK_ACCESS_LOCAL_SRC,
	};
	uint64_t mr;
	int ret;

	set_param("max_regions_per_file", 3);	/* it holds src and dst */
	T_EXPECT_ERR(ioctl_ro(XFERK_IOC_MR_REG, &a, sizeof(a)), EFAULT);
	T_EXPECT(t_stat("regions") == regions, "MR_REG: regions %lld, was %lld",
		 t_stat("regions"), regions);
	T_EXPECT(t_stat("pinned_pages") == pinned,
		 "MR_REG: pinned_pages %lld, was %lld", t_stat("pinned_pages"),
		 pinned);
	ret = xferk_mr_reg(l.x, buf, 64 * KB, XFERK_ACCESS_LOCAL_SRC, &mr);
	T_EXPECT(ret == 0, "MR_REG after the failed one: %s", strerror(-ret));
	T_EXPECT(t_stat("regions") == regions + 1, "regions %lld, want %lld",
		 t_stat("regions"), regions + 1);
	if (!ret)
		T_EXPECT(xferk_mr_dereg(l.x, mr) == 0, "dereg");
	munmap(buf, 64 * KB);
}

static void connect_cmd(void)
{
	struct xferk_ioc_connect a = {
		.size = sizeof(a), .family = AF_INET, .timeout_ms = 10000,
	};
	uint64_t conn;
	int ret;

	T_EXPECT(inet_pton(AF_INET, t_peer(), a.addr) == 1, "address %s",
		 t_peer());
	set_param("max_conns_per_file", 2);	/* it holds one */
	T_EXPECT_ERR(ioctl_ro(XFERK_IOC_CONNECT, &a, sizeof(a)), EFAULT);
	ret = xferk_connect(l.x, t_peer(), 0, t_connect_ms(), &conn);
	T_EXPECT(ret == 0, "CONNECT after the failed one: %s", strerror(-ret));
	if (!ret)
		T_EXPECT(xferk_disconnect(l.x, conn) == 0, "disconnect");
}

static void export_cmd(void)
{
	long long exports = t_stat("exports");
	struct xferk_ioc_export a = {
		.size = sizeof(a), .conn = l.conn, .mr = l.dst_mr, .len = 4096,
		.access = XFERK_ACCESS_REMOTE_WRITE,
	};
	struct xferk_token tok;
	uint64_t exp;
	int ret;

	set_param("max_exports_per_file", 2);	/* it holds t_setup()'s */
	T_EXPECT_ERR(ioctl_ro(XFERK_IOC_EXPORT, &a, sizeof(a)), EFAULT);
	T_EXPECT(t_stat("exports") == exports, "EXPORT: exports %lld, was %lld",
		 t_stat("exports"), exports);
	ret = xferk_export(l.x, l.conn, l.dst_mr, 0, 4096,
			   XFERK_ACCESS_REMOTE_WRITE, &tok, &exp);
	T_EXPECT(ret == 0, "EXPORT after the failed one: %s", strerror(-ret));
	T_EXPECT(t_stat("exports") == exports + 1, "exports %lld, want %lld",
		 t_stat("exports"), exports + 1);
	if (!ret)
		T_EXPECT(xferk_unexport(l.x, exp) == 0, "unexport");
	T_EXPECT(t_stat("exports") == exports, "exports %lld after unexport",
		 t_stat("exports"));
}

static void import_cmd(void)
{
	struct xferk_ioc_import a = { .size = sizeof(a), .conn = l.conn };
	struct xferk_frag f = { .mr = l.src_mr, .len = 4096,
				.opcode = XFERK_OP_WRITE };
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	uint64_t exp, remote;
	int ret;

	ret = xferk_export(l.x, l.conn, l.dst_mr, 0, 64 * KB,
			   XFERK_ACCESS_REMOTE_WRITE, &tok, &exp);
	T_EXPECT(ret == 0, "export: %s", strerror(-ret));
	if (ret)
		return;
	memcpy(a.token, tok.bytes, sizeof(a.token));
	set_param("max_imports_per_file", 2);	/* it holds t_setup()'s */
	T_EXPECT_ERR(ioctl_ro(XFERK_IOC_IMPORT, &a, sizeof(a)), EFAULT);
	ret = xferk_import(l.x, l.conn, &tok, &remote);
	T_EXPECT(ret == 0, "IMPORT after the failed one: %s", strerror(-ret));
	if (!ret) {
		/* And the remote handle carries data. */
		f.remote = remote;
		t_fill(l.src, 4096, 5);
		memset(l.dst, 0, 4096);
		ret = t_run(l.x, &f, 1, &s);
		T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(l.dst, 4096, 5) < 0,
			 "WRITE through the new import: %d", ret);
		T_EXPECT(xferk_unimport(l.x, remote) == 0, "unimport");
	}
	T_EXPECT(xferk_unexport(l.x, exp) == 0, "unexport");
}

static void rail_import_cmd(void)
{
	struct xferk_ioc_import a = {
		.size = sizeof(a), .flags = XFERK_IMPORT_RAIL,
	};
	struct xferk_frag f = { .mr = l.src_mr, .len = 4096,
				.opcode = XFERK_OP_WRITE };
	const uint32_t rw = XFERK_ACCESS_REMOTE_WRITE;
	struct xferk_token tok0, tok1;
	uint64_t c1, exp0, exp1, remote;
	struct xferk_op_snapshot s;
	int ret;

	if (!(xferk_features(l.x) & XFERK_FEAT_RAILS))
		return;
	set_param("max_exports_per_file", 3);	/* t_setup()'s and these two */
	ret = xferk_connect(l.x, "10.99.0.2", 0, t_connect_ms(), &c1);
	if (ret) {
		T_EXPECT(0, "connect to 10.99.0.2: %s", strerror(-ret));
		return;
	}
	ret = xferk_export(l.x, l.conn, l.dst_mr, 0, 64 * KB, rw, &tok0, &exp0);
	if (!ret)
		ret = xferk_export(l.x, c1, l.dst_mr, 0, 64 * KB, rw, &tok1,
				   &exp1);
	if (!ret)
		ret = xferk_import(l.x, l.conn, &tok0, &remote);
	if (ret) {
		T_EXPECT(0, "rail setup: %s", strerror(-ret));
		return;
	}
	a.conn = c1;
	a.rail_of = remote;
	memcpy(a.token, tok1.bytes, sizeof(a.token));
	T_EXPECT_ERR(ioctl_ro(XFERK_IOC_IMPORT, &a, sizeof(a)), EFAULT);
	f.remote = remote;
	t_fill(l.src, 4096, 6);
	memset(l.dst, 0, 4096);
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(l.dst, 4096, 6) < 0,
		 "WRITE through rail_of after the failed rail IMPORT: %d (%s)",
		 ret, ret < 0 ? strerror(-ret) : xferk_state_name(ret));
	T_EXPECT_ERR(xferk_import_rail(l.x, c1, &tok1, remote), EEXIST);
	T_EXPECT(xferk_unimport(l.x, remote) == 0, "unimport");
	T_EXPECT(xferk_unexport(l.x, exp0) == 0 && xferk_unexport(l.x, exp1) == 0,
		 "unexport");
	T_EXPECT(xferk_disconnect(l.x, c1) == 0, "disconnect");
}

static void submit_cmd(void)
{
	long long live, submitted, cancels;
	struct xferk_frag f = { .mr = l.src_mr, .len = 4096, .remote = l.remote,
				.opcode = XFERK_OP_WRITE };
	struct xferk_ioc_submit a = {
		.size = sizeof(a), .frags = (uintptr_t)&f, .nr_frags = 1,
		.frag_size = sizeof(f), .deadline_ns = XFERK_DEADLINE_NONE,
	};
	struct xferk_op_snapshot s;
	int i, ret;

	/*
	 * The baseline once the op of import_cmd()'s transfer is gone: its
	 * last reference may go just after its wait returned.
	 */
	t_settle(NULL);
	live = t_stat("ops_live");
	submitted = t_stat("ops_submitted");
	cancels = t_stat("cancel_requests");
	set_param("max_ops_per_file", 1);	/* it holds none */
	/* The background drain has ample time for a completion 1 s late. */
	set_param("exit_drain_ms", 20000);
	T_EXPECT(t_write_file(FAULT "delay_ms", "1000") == 0 &&
		 t_write_file(FAULT "delay_completions", "1") == 0, "delay knobs");
	T_EXPECT_ERR(ioctl_ro(XFERK_IOC_SUBMIT, &a, sizeof(a)), EFAULT);
	T_EXPECT(t_stat("ops_submitted") == submitted + 1,
		 "the op was not published: ops_submitted %lld, was %lld",
		 t_stat("ops_submitted"), submitted);
	for (i = 0; i < 300 && t_stat("ops_live") != live; i++)
		usleep(100000);
	T_EXPECT(t_stat("ops_live") == live, "SUBMIT: ops_live %lld, was %lld",
		 t_stat("ops_live"), live);
	T_EXPECT(t_stat("cancel_requests") > cancels,
		 "the op was not cancelled: cancel_requests %lld, was %lld",
		 t_stat("cancel_requests"), cancels);
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED, "SUBMIT after the failed one: %d (%s)",
		 ret, ret < 0 ? strerror(-ret) : xferk_state_name(ret));
}

static void ring_submit_cmd(void)
{
	const long page = sysconf(_SC_PAGESIZE);
	struct xferk_frag f = { .mr = l.src_mr, .len = 4096, .remote = l.remote,
				.opcode = XFERK_OP_WRITE };
	struct xferk_ioc_submit *a = t_map(page);
	struct xferk_op_snapshot s;
	struct io_uring_sqe *sqe;
	long long live, cancels;
	struct io_uring ring;
	uint64_t ud = 0;
	int ret, res = 0;

	t_settle(NULL);
	live = t_stat("ops_live");
	cancels = t_stat("cancel_requests");
	set_param("max_ops_per_file", 1);	/* it holds none */
	*a = (struct xferk_ioc_submit) {
		.size = sizeof(*a), .frags = (uintptr_t)&f, .nr_frags = 1,
		.frag_size = sizeof(f), .user_data = 9,
		/* Within XFERK_URING_MAX_PARK_NS on either kernel. */
		.deadline_ns = xferk_now_ns() + 30000 * 1000000ULL,
	};
	if (mprotect(a, page, PROT_READ)) {
		perror("mprotect");
		exit(T_FAIL);
	}
	t_ring(&ring, 4, 0, 0);
	sqe = t_sqe(&ring);
	io_uring_prep_xferk_submit(sqe, xferk_fd(l.x), a);
	io_uring_sqe_set_data64(sqe, 9);
	/* In flight when it is taken back: its completion comes 1 s late. */
	T_EXPECT(t_quiet() == 0 && t_write_file(FAULT "delay_ms", "1000") == 0 &&
		 t_write_file(FAULT "delay_completions", "1") == 0, "delay knobs");
	T_EXPECT(io_uring_submit(&ring) == 1, "ring submit");
	T_EXPECT(t_cqe(&ring, t_scaled_ms(30000), &res, &ud) == 0 && ud == 9 &&
		 res >= 0 && res < XFERK_STATE_COUNT, "ring SUBMIT's CQE: %d", res);
	T_EXPECT(t_fault_get("delay_completions") == 0, "delay knob not used");
	T_EXPECT(t_stat_wait("ops_live", live, t_scaled_ms(10000)) == live,
		 "ring SUBMIT: ops_live %lld, was %lld", t_stat("ops_live"), live);
	T_EXPECT(t_stat("cancel_requests") > cancels,
		 "the ring's op was not cancelled: cancel_requests %lld, was %lld",
		 t_stat("cancel_requests"), cancels);
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED,
		 "SUBMIT after the failed ring SUBMIT: %d (%s)", ret,
		 ret < 0 ? strerror(-ret) : xferk_state_name(ret));
	io_uring_queue_exit(&ring);
	munmap(a, page);
}

int main(void)
{
	long long pinned, regions;
	unsigned int i;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	t_settle(NULL);
	pinned = t_stat("pinned_pages");
	regions = t_stat("regions");
	for (i = 0; i < NPARAMS; i++) {
		saved[i] = t_param(params[i]);
		T_EXPECT(saved[i] >= 0, "no parameter %s", params[i]);
	}
	saved_delay_ms = read_number(FAULT "delay_ms");
	T_EXPECT(saved_delay_ms >= 0, "no knob delay_ms");
	if (t_failures)
		return T_FAIL;
	atexit(restore);

	t_loop_open(&l, 64 * KB, 64 * KB + 4096);
	control();
	mr_reg();
	connect_cmd();
	export_cmd();
	import_cmd();
	rail_import_cmd();
	submit_cmd();
	ring_submit_cmd();
	restore();
	xferk_close(l.x);
	T_EXPECT(t_stat_wait("pinned_pages", pinned, t_scaled_ms(10000)) == pinned,
		 "pinned_pages %lld, was %lld", t_stat("pinned_pages"), pinned);
	T_EXPECT(t_stat_wait("regions", regions, t_scaled_ms(10000)) == regions,
		 "regions %lld, was %lld", t_stat("regions"), regions);
	return t_result();
}
