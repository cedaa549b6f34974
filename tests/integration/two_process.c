// SPDX-License-Identifier: GPL-2.0
/*
 * Two processes over soft-RoCE, as in disaggregated serving: a "decode"
 * process registers and exports a buffer and hands the token over a pipe;
 * a "prefill" process imports it and writes into it with RDMA WRITE. Both
 * verify the data. Also: a token exported on another connection is
 * refused. Prints the transfer's throughput (make demo shows it).
 *
 *   two_process [BYTES]     default 64 MiB, 8 MiB on the debug kernel
 *                           (whose rxe is about 28 times slower)
 */
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/*
 * Linux 6.1's rxe reads one pointer past its page map when an access ends
 * exactly at the end of an MR of a multiple of 256 pages (rxe_mr_copy();
 * rewritten in 6.3); KASAN reports it. The decode side exports one page
 * more than the prefill side writes so that tests stay clean on rxe.
 */
#define RXE_MAP_SLACK	4096

static int decode(uint64_t len, int token_fd, int done_fd)
{
	char hex[XFERK_TOKEN_HEX_LEN + 1], c;
	struct xferk_token tok;
	uint64_t conn, mr, exp;
	struct xferk *x;
	uint8_t *dst;
	long bad;

	dst = t_map(len + RXE_MAP_SLACK);
	memset(dst, 0, len);
	if (xferk_open(&x) ||
	    xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn) ||
	    xferk_mr_reg(x, dst, len + RXE_MAP_SLACK, XFERK_ACCESS_REMOTE_WRITE,
			 &mr) ||
	    xferk_export(x, conn, mr, 0, len + RXE_MAP_SLACK,
			 XFERK_ACCESS_REMOTE_WRITE, &tok, &exp)) {
		fprintf(stderr, "decode: setup failed\n");
		return T_FAIL;
	}
	xferk_token_format(&tok, hex, sizeof(hex));
	strcat(hex, "\n");
	if (write(token_fd, hex, strlen(hex)) != (ssize_t)strlen(hex) ||
	    read(done_fd, &c, 1) != 1 || c != 'D')
		return T_FAIL;
	bad = t_check(dst, len, 2024);
	if (bad >= 0) {
		fprintf(stderr, "decode: byte %ld differs\n", bad);
		return T_FAIL;
	}
	printf("decode: verified %llu bytes written by the prefill process\n",
	       (unsigned long long)len);
	fflush(stdout);
	xferk_close(x);
	return T_PASS;
}

/* A token of a null peer is bound to that connection, not to @conn. */
static void foreign_token(struct xferk *x, uint64_t conn)
{
	uint64_t np, exp, remote, mr;
	struct xferk_token tok;

	T_EXPECT(xferk_mr_reg(x, t_map(4096), 4096, XFERK_ACCESS_REMOTE_WRITE,
			      &mr) == 0, "reg");
	T_EXPECT(xferk_connect_null(x, 0, &np) == 0 &&
		 xferk_export(x, np, mr, 0, 4096, XFERK_ACCESS_REMOTE_WRITE, &tok,
			      &exp) == 0, "null peer export");
	T_EXPECT_ERR(xferk_import(x, conn, &tok, &remote), EACCES);
	xferk_disconnect(x, np);
	xferk_mr_dereg(x, mr);
}

int main(int argc, char **argv)
{
	uint64_t len = argc > 1 ? strtoull(argv[1], NULL, 0) :
		       t_debug_kernel() ? 8ULL << 20 : 64ULL << 20;
	int to_prefill[2], to_decode[2], status;
	char hex[XFERK_TOKEN_HEX_LEN + 1] = "";
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	uint64_t conn, remote, mr, op, t0, t1;
	struct xferk_frag f;
	struct xferk *x;
	uint8_t *src;
	ssize_t n;
	pid_t pid;
	int ret;

	if (xferk_open(&x))
		return T_SKIP;
	xferk_close(x);
	if (pipe(to_prefill) || pipe(to_decode))
		return T_FAIL;
	pid = fork();
	if (pid == 0)
		_exit(decode(len, to_prefill[1], to_decode[0]));

	src = t_map(len);
	t_fill(src, len, 2024);
	n = read(to_prefill[0], hex, XFERK_TOKEN_HEX_LEN);
	T_EXPECT(n == XFERK_TOKEN_HEX_LEN, "no token from decode (%zd)", n);
	hex[XFERK_TOKEN_HEX_LEN - 1] = '\0';
	ret = xferk_open(&x);
	if (!ret)
		ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn);
	if (!ret)
		ret = xferk_token_parse(hex, &tok);
	if (!ret)
		ret = xferk_import(x, conn, &tok, &remote);
	if (!ret)
		ret = xferk_mr_reg(x, src, len, XFERK_ACCESS_LOCAL_SRC, &mr);
	T_EXPECT(ret == 0, "prefill setup: %s", strerror(-ret));
	if (!ret) {
		f = (struct xferk_frag) { .mr = mr, .len = len, .remote = remote,
					  .opcode = XFERK_OP_WRITE };
		t0 = xferk_now_ns();
		ret = xferk_submit(x, &f, 1, t0 + 120000000000ULL, 0, &op);
		if (!ret)
			ret = xferk_wait(x, op, XFERK_DEADLINE_NONE,
					 XFERK_WAIT_PHYSICAL, &s);
		t1 = xferk_now_ns();
		T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED &&
			 s.transferred_bytes == len, "write: %d %s err %d", ret,
			 xferk_state_name(s.state), s.first_error);
		printf("prefill: wrote %llu bytes in %.3f s: %.1f MB/s\n",
		       (unsigned long long)len, (t1 - t0) / 1e9,
		       len / ((t1 - t0) / 1e9) / 1e6);
		foreign_token(x, conn);
	}
	T_EXPECT(write(to_decode[1], "D", 1) == 1, "signal decode");
	waitpid(pid, &status, 0);
	T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "decode process failed (%d)", WEXITSTATUS(status));
	xferk_close(x);
	return t_result();
}
