// SPDX-License-Identifier: GPL-2.0
/*
 * Bad input to the data-path commands gets a specific errno and leaves
 * nothing behind: regions, handles, batches, tokens, memlock. The pinned
 * page and live op counters are back at their baseline at the end.
 */
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static struct xferk *x;

static void regions(void)
{
	uint8_t *rw = t_map(1 << 16), *ro;
	uint64_t mr;

	T_EXPECT_ERR(xferk_mr_reg(x, rw, 0, XFERK_ACCESS_LOCAL_SRC, &mr), EINVAL);
	T_EXPECT_ERR(xferk_mr_reg(x, rw, 4096, 0, &mr), EINVAL);
	T_EXPECT_ERR(xferk_mr_reg(x, rw, 4096, 0x10, &mr), EINVAL);
	T_EXPECT_ERR(xferk_mr_reg(x, (void *)-4096L, 8192, XFERK_ACCESS_LOCAL_SRC,
				  &mr), EOVERFLOW);
	T_EXPECT_ERR(xferk_mr_reg(x, NULL, 4096, XFERK_ACCESS_LOCAL_SRC, &mr),
		     EFAULT);
	/* Past the end of the mapping. */
	munmap(rw + 32768, 32768);
	T_EXPECT_ERR(xferk_mr_reg(x, rw, 1 << 16, XFERK_ACCESS_LOCAL_SRC, &mr),
		     EFAULT);
	/* Read-only memory: a source is fine, a READ destination is not. */
	ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_EXPECT_ERR(xferk_mr_reg(x, ro, 8192, XFERK_ACCESS_LOCAL_DST, &mr), EFAULT);
	T_EXPECT_ERR(xferk_mr_reg(x, ro, 8192, XFERK_ACCESS_REMOTE_WRITE, &mr),
		     EFAULT);
	T_EXPECT(xferk_mr_reg(x, ro, 8192, XFERK_ACCESS_LOCAL_SRC, &mr) == 0 &&
		 xferk_mr_dereg(x, mr) == 0, "read-only source refused");
	/* Any alignment is accepted. */
	T_EXPECT(xferk_mr_reg(x, rw + 3, 5000, XFERK_ACCESS_LOCAL_SRC, &mr) == 0 &&
		 xferk_mr_dereg(x, mr) == 0, "unaligned region refused");
	munmap(rw, 32768);
	munmap(ro, 8192);
}

/* Without CAP_IPC_LOCK, pinning beyond RLIMIT_MEMLOCK fails with ENOMEM. */
static void memlock(void)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct d[2];
		struct rlimit rl = { 64 << 10, 64 << 10 };
		struct xferk *cx;
		uint64_t mr;
		uint8_t *b = t_map(1 << 20);
		int ret;

		syscall(SYS_capget, &h, d);
		d[CAP_IPC_LOCK / 32].effective &= ~(1U << (CAP_IPC_LOCK % 32));
		if (syscall(SYS_capset, &h, d) || setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(2);
		if (xferk_open(&cx))
			_exit(3);
		ret = xferk_mr_reg(cx, b, 1 << 20, XFERK_ACCESS_LOCAL_SRC, &mr);
		if (ret != -ENOMEM)
			_exit(4);
		/* Within the limit it works. */
		ret = xferk_mr_reg(cx, b, 32 << 10, XFERK_ACCESS_LOCAL_SRC, &mr);
		_exit(ret ? 5 : 0);
	}
	waitpid(pid, &status, 0);
	T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "memlock child status %d", WEXITSTATUS(status));
}

static void handles(void)
{
	uint8_t *b = t_map(4096);
	struct xferk *other;
	uint64_t mr, conn, mr_other;

	T_EXPECT(xferk_mr_reg(x, b, 4096, XFERK_ACCESS_ALL, &mr) == 0, "reg");
	T_EXPECT(xferk_connect_null(x, 0, &conn) == 0, "null");
	T_EXPECT_ERR(xferk_mr_dereg(x, 0), EINVAL);
	T_EXPECT_ERR(xferk_mr_dereg(x, 0x1234), EINVAL);
	T_EXPECT_ERR(xferk_mr_dereg(x, conn), EINVAL);		/* wrong kind */
	T_EXPECT_ERR(xferk_release(x, mr), EINVAL);
	T_EXPECT(xferk_open(&other) == 0, "second open");
	T_EXPECT(xferk_mr_reg(other, b, 4096, XFERK_ACCESS_ALL, &mr_other) == 0,
		 "reg other");
	T_EXPECT_ERR(xferk_mr_dereg(x, mr_other), EBADF);	/* foreign */
	T_EXPECT_ERR(xferk_mr_dereg(other, mr), EBADF);
	T_EXPECT(xferk_mr_dereg(x, mr) == 0, "dereg");
	T_EXPECT_ERR(xferk_mr_dereg(x, mr), ESTALE);		/* stale */
	T_EXPECT(xferk_mr_dereg(other, mr_other) == 0, "other's handle still works");
	xferk_close(other);
	xferk_disconnect(x, conn);
	munmap(b, 4096);
}

static void batches(void)
{
	static struct xferk_frag f[XFERK_MAX_FRAGS + 1];
	struct xferk_ioc_submit raw = { .size = sizeof(raw) };
	long long submitted = t_stat("ops_submitted");
	uint64_t mr, mr_dst_only, conn, exp, remote, remote_ro, op, exp2;
	uint8_t *b = t_map(1 << 16);
	struct xferk_token tok;
	int i;

	T_EXPECT(xferk_mr_reg(x, b, 1 << 16, XFERK_ACCESS_ALL, &mr) == 0, "reg");
	T_EXPECT(xferk_mr_reg(x, b, 4096, XFERK_ACCESS_LOCAL_DST, &mr_dst_only) == 0,
		 "reg dst");
	T_EXPECT(xferk_connect_null(x, 0, &conn) == 0, "null");
	T_EXPECT(xferk_export(x, conn, mr, 0, 1 << 16, XFERK_ACCESS_REMOTE_WRITE |
			      XFERK_ACCESS_REMOTE_READ, &tok, &exp) == 0, "export");
	T_EXPECT(xferk_import(x, conn, &tok, &remote) == 0, "import");
	T_EXPECT(xferk_export(x, conn, mr, 0, 4096, XFERK_ACCESS_REMOTE_READ, &tok,
			      &exp2) == 0, "export ro");
	T_EXPECT(xferk_import(x, conn, &tok, &remote_ro) == 0, "import ro");

	for (i = 0; i <= XFERK_MAX_FRAGS; i++)
		f[i] = (struct xferk_frag) { .mr = mr, .len = 16, .remote = remote,
					     .opcode = XFERK_OP_WRITE };
	T_EXPECT_ERR(xferk_submit(x, f, 0, XFERK_DEADLINE_NONE, 0, &op), EINVAL);
	T_EXPECT_ERR(xferk_submit(x, f, XFERK_MAX_FRAGS + 1, XFERK_DEADLINE_NONE, 0,
				  &op), E2BIG);
	T_EXPECT_ERR(xferk_submit(x, NULL, 1, XFERK_DEADLINE_NONE, 0, &op), EFAULT);
	/* Each bad fragment, last in a batch of three: nothing is published. */
	f[2].opcode = 7;
	T_EXPECT_ERR(xferk_submit(x, f, 3, XFERK_DEADLINE_NONE, 0, &op), EINVAL);
	f[2].opcode = XFERK_OP_WRITE;
	f[2].reserved = 1;
	T_EXPECT_ERR(xferk_submit(x, f, 3, XFERK_DEADLINE_NONE, 0, &op), EINVAL);
	f[2].reserved = 0;
	f[2].len = 0;
	T_EXPECT_ERR(xferk_submit(x, f, 3, XFERK_DEADLINE_NONE, 0, &op), EINVAL);
	f[2].len = 16;
	f[2].offset = (1 << 16) - 8;
	T_EXPECT_ERR(xferk_submit(x, f, 3, XFERK_DEADLINE_NONE, 0, &op), ERANGE);
	f[2].offset = 0;
	f[2].remote_offset = UINT64_MAX - 4;
	T_EXPECT_ERR(xferk_submit(x, f, 3, XFERK_DEADLINE_NONE, 0, &op), ERANGE);
	f[2].remote_offset = 0;
	f[2].mr = mr_dst_only;		/* not a WRITE source */
	T_EXPECT_ERR(xferk_submit(x, f, 3, XFERK_DEADLINE_NONE, 0, &op), EACCES);
	f[2].mr = mr;
	f[2].remote = remote_ro;	/* peer did not grant WRITE */
	T_EXPECT_ERR(xferk_submit(x, f, 3, XFERK_DEADLINE_NONE, 0, &op), EACCES);
	f[2].remote = exp;		/* an export is not a remote handle */
	T_EXPECT_ERR(xferk_submit(x, f, 3, XFERK_DEADLINE_NONE, 0, &op), EINVAL);
	f[2].remote = remote;
	T_EXPECT(t_stat("ops_submitted") == submitted, "a bad batch was published");

	/* Element size rules: too small, and a newer caller's non-zero tail. */
	raw.frags = (uintptr_t)f;
	raw.nr_frags = 1;
	raw.frag_size = 8;
	raw.deadline_ns = XFERK_DEADLINE_NONE;
	T_EXPECT(ioctl(xferk_fd(x), XFERK_IOC_SUBMIT, &raw) < 0 && errno == EINVAL,
		 "frag_size 8: %s", strerror(errno));
	raw.frag_size = sizeof(f[0]) + 8;
	T_EXPECT(ioctl(xferk_fd(x), XFERK_IOC_SUBMIT, &raw) < 0 && errno == E2BIG,
		 "non-zero tail: %s", strerror(errno));

	/* Exports: access beyond the region's, range, bad flags. */
	T_EXPECT_ERR(xferk_export(x, conn, mr_dst_only, 0, 4096,
				  XFERK_ACCESS_REMOTE_WRITE, &tok, &exp2), EACCES);
	T_EXPECT_ERR(xferk_export(x, conn, mr, 1, 1 << 16, XFERK_ACCESS_REMOTE_READ,
				  &tok, &exp2), ERANGE);
	T_EXPECT_ERR(xferk_export(x, conn, mr, 0, 16, XFERK_ACCESS_LOCAL_SRC, &tok,
				  &exp2), EINVAL);
	T_EXPECT(t_stat("ops_submitted") == submitted, "published");
	xferk_disconnect(x, conn);
	xferk_mr_dereg(x, mr);
	xferk_mr_dereg(x, mr_dst_only);
	munmap(b, 1 << 16);
}

/* Tokens: malformed, and exported to another peer. */
static void tokens(void)
{
	uint64_t mr, a, b, exp, remote;
	uint8_t *buf = t_map(4096);
	struct xferk_token tok, bad;
	char hex[XFERK_TOKEN_HEX_LEN];

	T_EXPECT(xferk_mr_reg(x, buf, 4096, XFERK_ACCESS_ALL, &mr) == 0, "reg");
	T_EXPECT(xferk_connect_null(x, 0, &a) == 0 &&
		 xferk_connect_null(x, 0, &b) == 0, "null peers");
	T_EXPECT(xferk_export(x, a, mr, 0, 4096, XFERK_ACCESS_REMOTE_WRITE, &tok,
			      &exp) == 0, "export");
	T_EXPECT_ERR(xferk_import(x, b, &tok, &remote), EACCES);
	bad = tok;
	bad.bytes[0] ^= 1;
	T_EXPECT_ERR(xferk_import(x, a, &bad, &remote), EINVAL);
	T_EXPECT(xferk_token_format(&tok, hex, sizeof(hex)) == 0 &&
		 xferk_token_parse(hex, &bad) == 0 &&
		 !memcmp(&bad, &tok, sizeof(tok)), "token text round trip");
	T_EXPECT_ERR(xferk_token_parse("xyz", &bad), EINVAL);
	T_EXPECT(xferk_import(x, a, &tok, &remote) == 0, "import");
	xferk_disconnect(x, a);
	xferk_disconnect(x, b);
	xferk_mr_dereg(x, mr);
	munmap(buf, 4096);
}

int main(void)
{
	long long pinned = t_stat("pinned_pages"), live = t_stat("ops_live");
	long long regions_before = t_stat("regions");

	if (xferk_open(&x))
		return T_SKIP;
	regions();
	memlock();
	handles();
	batches();
	tokens();
	xferk_close(x);
	T_EXPECT(t_stat("pinned_pages") == pinned, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), pinned);
	T_EXPECT(t_stat("regions") == regions_before, "regions %lld",
		 t_stat("regions"));
	T_EXPECT(t_stat("ops_live") == live, "ops_live %lld", t_stat("ops_live"));
	return t_result();
}
