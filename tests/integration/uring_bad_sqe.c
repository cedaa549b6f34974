// SPDX-License-Identifier: GPL-2.0
/*
 * Bad io_uring commands get a CQE with a clear errno and change nothing:
 * unknown cmd_op (ENOTTY), unmapped argument pointer (EFAULT), non-zero
 * payload flags or reserved bytes, a non-zero second half of a 128-byte
 * SQE, a submit without a deadline or beyond the park bound (EINVAL) or
 * with its deadline past (ETIMEDOUT, as the ioctl), one the admission
 * queue cannot take (EBUSY, never EAGAIN), a stale handle (ESTALE), the io_uring-only flag on the ioctl (EINVAL), a
 * command on a file that is not /dev/xferk (EOPNOTSUPP). Good commands
 * work in both SQE sizes and when issued from io_uring's worker. Runs on the null peer: no RDMA behaviour is
 * claimed here.
 */
#include <unistd.h>

#include "test.h"

#define SEC	1000000000ULL

/* Sends one prepared SQE and returns its CQE's res. */
static int one(struct io_uring *ring, struct io_uring_sqe *sqe)
{
	uint64_t ud;
	int res, ret;

	io_uring_sqe_set_data64(sqe, 42);
	io_uring_submit(ring);
	ret = t_cqe(ring, t_scaled_ms(5000), &res, &ud);
	T_EXPECT(ret == 0 && ud == 42, "no CQE: %d", ret);
	return ret ? ret : res;
}

static int cmd(struct io_uring *ring, int fd, unsigned int op, void *arg)
{
	struct io_uring_sqe *sqe = t_sqe(ring);

	io_uring_prep_xferk_cmd(sqe, fd, op, arg);
	return one(ring, sqe);
}

/* A well-formed submit of @f through the ring (no CQE awaited). */
static struct xferk_ioc_submit sub(struct xferk_frag *f, uint64_t deadline,
				   uint64_t budget)
{
	return (struct xferk_ioc_submit) {
		.size = sizeof(struct xferk_ioc_submit), .frags = (uintptr_t)f,
		.nr_frags = 1, .frag_size = sizeof(*f), .deadline_ns = deadline,
		.drain_budget_ns = budget,
	};
}

static void sqe128(int fd)
{
	struct xferk_ioc_info info = { .size = sizeof(info) };
	struct io_uring_sqe *sqe;
	struct io_uring ring;

	t_ring(&ring, 4, 0, IORING_SETUP_SQE128);
	sqe = t_sqe(&ring);
	memset(sqe, 0, 128);
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_INFO, &info);
	T_EXPECT(one(&ring, sqe) == 0 && info.abi_version == XFERK_ABI_VERSION,
		 "INFO in a 128-byte SQE: abi %u", info.abi_version);
	sqe = t_sqe(&ring);
	memset(sqe, 0, 128);
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_INFO, &info);
	sqe->cmd[79] = 1;
	T_EXPECT_ERR(one(&ring, sqe), EINVAL);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	long long live, submitted;
	struct xferk_ioc_info info = { .size = sizeof(info) };
	struct xferk_ioc_cancel c = { .size = sizeof(c) };
	struct xferk_ioc_wait w = { .size = sizeof(w) };
	uint64_t conn, mr, emr, remote, exp, op, now;
	struct xferk_ioc_submit s;
	struct xferk_token tok;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	struct xferk_frag f, two[2];
	struct xferk *x;
	uint8_t *buf;
	long long max_bytes;
	int fd, pipefd[2];
	char val[24];

	if (xferk_open(&x))
		return T_SKIP;
	t_settle(NULL);
	live = t_stat("ops_live");
	submitted = t_stat("ops_submitted");
	fd = xferk_fd(x);
	buf = t_map(1 << 16);
	if (xferk_connect_null(x, 0, &conn) ||
	    xferk_mr_reg(x, buf, 4096, XFERK_ACCESS_ALL, &mr) ||
	    xferk_mr_reg(x, buf + 8192, 4096, XFERK_ACCESS_ALL, &emr) ||
	    xferk_export(x, conn, emr, 0, 4096, XFERK_ACCESS_REMOTE_READ |
			 XFERK_ACCESS_REMOTE_WRITE, &tok, &exp) ||
	    xferk_import(x, conn, &tok, &remote))
		return T_FAIL;
	f = (struct xferk_frag) { .mr = mr, .len = 512, .remote = remote,
				  .opcode = XFERK_OP_WRITE };
	t_ring(&ring, 8, 0, 0);

	T_EXPECT_ERR(cmd(&ring, fd, 0xdead, &info), ENOTTY);
	T_EXPECT_ERR(cmd(&ring, fd, _IOWR('x', 0, struct xferk_ioc_info), &info),
		     ENOTTY);
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_INFO, (void *)8), EFAULT);
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_SUBMIT, (void *)8), EFAULT);
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_WAIT, (void *)8), EFAULT);

	sqe = t_sqe(&ring);
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_INFO, &info);
	((struct xferk_uring_cmd *)sqe->cmd)->flags = 1;
	T_EXPECT_ERR(one(&ring, sqe), EINVAL);
	sqe = t_sqe(&ring);
	io_uring_prep_xferk_cmd(sqe, fd, XFERK_IOC_INFO, &info);
	((struct xferk_uring_cmd *)sqe->cmd)->reserved = 1;
	T_EXPECT_ERR(one(&ring, sqe), EINVAL);
	T_EXPECT(cmd(&ring, fd, XFERK_IOC_INFO, &info) == 0 &&
		 (info.features & XFERK_FEAT_URING), "INFO");
	info.reserved[0] = 1;
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_INFO, &info), EINVAL);
	sqe128(fd);

	/*
	 * Submits the kernel must refuse before publishing anything. Bounds
	 * far from the 60 s park bound, and deadlines 30 s ahead: however
	 * long the calls take, each case stays on its side.
	 */
	now = xferk_now_ns();
	s = sub(&f, XFERK_DEADLINE_NONE, 0);
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_SUBMIT, &s), EINVAL);
	s = sub(&f, now + 120 * SEC, 0);
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_SUBMIT, &s), EINVAL);
	s = sub(&f, now + 30 * SEC, 90 * SEC);
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_SUBMIT, &s), EINVAL);
	s = sub(&f, now + 30 * SEC, ~0ULL);
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_SUBMIT, &s), EINVAL);
	now = xferk_now_ns();
	s = sub(&f, now + 30 * SEC, 0);
	s.flags = 1U << 7;
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_SUBMIT, &s), EINVAL);
	s = sub(&f, now - SEC, 0);
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_SUBMIT, &s), ETIMEDOUT);
	f.remote = remote + 1;
	s = sub(&f, now + 30 * SEC, 0);
	T_EXPECT(cmd(&ring, fd, XFERK_IOC_SUBMIT, &s) < 0, "bad handle");
	f.remote = remote;
	T_EXPECT_ERR(xferk_submit_ex(x, &f, 1, now + 30 * SEC,
				     &(struct xferk_submit_opts) {
					.flags = XFERK_SUBMIT_AUTO_RELEASE },
				     &op), EINVAL);
	/* Admission refused: EBUSY (never EAGAIN, which would punt and block). */
	max_bytes = t_queue_stat("max_queued_bytes");
	T_EXPECT(t_write_file("/sys/class/misc/xferk/queue/max_queued_bytes",
			      "4096") == 0, "max_queued_bytes");
	two[0] = f;
	two[0].len = 4096;
	two[1] = two[0];
	s = sub(two, xferk_now_ns() + 30 * SEC, 0);
	s.nr_frags = 2;
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_SUBMIT, &s), EBUSY);
	snprintf(val, sizeof(val), "%lld", max_bytes);
	T_EXPECT(t_write_file("/sys/class/misc/xferk/queue/max_queued_bytes",
			      val) == 0, "restore max_queued_bytes");
	T_EXPECT(t_stat("ops_live") == live && t_stat("ops_submitted") == submitted,
		 "a refused submit published an op");

	/* A good one, then commands on it and on a stale handle. */
	s = sub(&f, xferk_now_ns() + 10 * SEC, 0);
	T_EXPECT(cmd(&ring, fd, XFERK_IOC_SUBMIT, &s) == XFERK_STATE_SUCCEEDED,
		 "submit");
	T_EXPECT(xferk_release(x, s.op) == 0, "release");
	/* Issued from io_uring's worker (IOSQE_ASYNC): the same. */
	s = sub(&f, xferk_now_ns() + 10 * SEC, 0);
	sqe = t_sqe(&ring);
	io_uring_prep_xferk_submit(sqe, fd, &s);
	sqe->flags |= IOSQE_ASYNC;
	T_EXPECT(one(&ring, sqe) == XFERK_STATE_SUCCEEDED && s.op, "async submit");
	c.op = s.op;
	c.drain_deadline_ns = XFERK_DEADLINE_NONE;
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_CANCEL, &c), EINVAL);
	T_EXPECT(xferk_release(x, s.op) == 0, "release");
	w.op = s.op;
	w.deadline_ns = xferk_now_ns() + SEC;
	T_EXPECT_ERR(cmd(&ring, fd, XFERK_IOC_WAIT, &w), ESTALE);

	/* (Not /dev/null: it accepts every uring_cmd, for io_uring's tests.) */
	T_EXPECT(pipe(pipefd) == 0, "pipe");
	T_EXPECT_ERR(cmd(&ring, pipefd[0], XFERK_IOC_INFO, &info), EOPNOTSUPP);
	close(pipefd[0]);
	close(pipefd[1]);

	io_uring_queue_exit(&ring);
	xferk_close(x);
	T_EXPECT(t_stat_wait("ops_live", live, t_scaled_ms(10000)) == live,
		 "ops_live %lld, was %lld", t_stat("ops_live"), live);
	return t_result();
}
