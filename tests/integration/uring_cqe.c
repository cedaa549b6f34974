// SPDX-License-Identifier: GPL-2.0
/*
 * Exactly one CQE per parked submit, over soft-RoCE:
 *  - deadline: a work request whose completion is swallowed; the op times
 *    out, is cancelled and drained, and is QUARANTINED at its drain
 *    deadline: one CQE with res QUARANTINED (buffers not reusable; the
 *    teardown that ends it waits flush_timeout_ms 5 s, so the pages are
 *    checked while it is still quarantined). A WAIT command then reports
 *    DRAINED once the teardown destroyed the QP, and the submit posts
 *    nothing more.
 *  - cancel: a CANCEL command on an op whose completion is delayed by
 *    seconds: one CQE for the CANCEL (0, snapshot DRAINED) and one for the
 *    submit (DRAINED).
 * The fault knobs are armed while no other op is live on the host, so
 * these ops use them; each is checked to be used before it is relied on.
 *  - QUERY and RELEASE commands run inline; a second RELEASE is ESTALE.
 *  - auto-release: once the CQE is posted the handle is gone, and a QUERY
 *    or CANCEL of it is ESTALE (Documentation/uapi.md: "settled").
 *  - handle before CQE: a submit issued from io-wq (IOSQE_ASYNC) writes its
 *    handle back after the op is published. With the struct's page
 *    write-protected by userfaultfd, that write blocks while the op settles
 *    (uring_completed counts its claim): no CQE until the protection is
 *    lifted and the handle is in the struct. Skipped where the kernel has
 *    no userfaultfd write-protection (the debug kernel).
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#include "test.h"

#define MS		1000000ULL
#define FAULT		"/sys/kernel/debug/xferk/fault/"
#define FLUSH_TIMEOUT	"/sys/module/xferk/parameters/flush_timeout_ms"

static long long saved_flush = -1, saved_delay_ms = -1;

static void restore(void)
{
	t_fault_clear();
	if (saved_delay_ms >= 0)
		t_fault_set("delay_ms", saved_delay_ms);
	if (saved_flush > 0)
		t_set_param("flush_timeout_ms", saved_flush);
}

static struct xferk_ioc_submit submit_one(struct io_uring *ring, int fd,
					  struct xferk_frag *f, uint64_t deadline,
					  uint64_t budget, uint64_t user_data)
{
	struct xferk_ioc_submit s = {
		.size = sizeof(s), .frags = (uintptr_t)f, .nr_frags = 1,
		.frag_size = sizeof(*f), .deadline_ns = deadline,
		.drain_budget_ns = budget, .user_data = user_data,
	};
	struct io_uring_sqe *sqe = t_sqe(ring);

	io_uring_prep_xferk_submit(sqe, fd, &s);
	io_uring_sqe_set_data64(sqe, user_data);
	T_EXPECT(io_uring_submit(ring) == 1, "submit");
	T_EXPECT(s.op != 0, "op handle written back");
	return s;
}

/* Sends one command and returns its CQE's res; -ETIME if none came. */
static int run_cmd(struct io_uring *ring, int fd, unsigned int cmd_op,
		   void *arg, uint64_t user_data, unsigned int ms)
{
	struct io_uring_sqe *sqe = t_sqe(ring);
	uint64_t ud;
	int res, ret;

	io_uring_prep_xferk_cmd(sqe, fd, cmd_op, arg);
	io_uring_sqe_set_data64(sqe, user_data);
	io_uring_submit(ring);
	ret = t_cqe(ring, ms, &res, &ud);
	if (ret)
		return ret;
	T_EXPECT(ud == user_data, "CQE for %llu, want %llu",
		 (unsigned long long)ud, (unsigned long long)user_data);
	return res;
}

static void deadline_expiry(struct io_uring *ring, struct xferk *x,
			    struct xferk_frag *f)
{
	long long pinned;
	struct xferk_ioc_submit s;
	struct xferk_ioc_wait w = { .size = sizeof(w), .flags = XFERK_WAIT_PHYSICAL };
	struct xferk_op_snapshot snap = { .state = XFERK_STATE_COUNT };
	uint64_t ud;
	int res;

	/* Long enough to look at the quarantined op before the QP goes. */
	T_EXPECT(t_write_file(FLUSH_TIMEOUT, "5000") == 0, "flush timeout");
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_swallow(1) == 0, "fault");
	s = submit_one(ring, xferk_fd(x), f, xferk_now_ns() + 200 * MS,
		       500 * MS, 1);
	/* Its completion, swallowed: a TIMED_OUT op cannot complete now. */
	T_EXPECT(t_fault_taken("swallow_completions", t_scaled_ms(10000)) == 0 &&
		 xferk_query(x, s.op, &snap) == 0 && !snap.physical_complete,
		 "completion not swallowed: %s", xferk_state_name(snap.state));
	T_EXPECT(t_cqe(ring, t_scaled_ms(10000), &res, &ud) == 0 && ud == 1,
		 "deadline CQE");
	T_EXPECT(res == XFERK_STATE_QUARANTINED, "res %d (%s)", res,
		 xferk_state_name(res));
	/* Deregistered, but the quarantined op keeps the pages pinned. */
	pinned = t_stat("pinned_pages");
	T_EXPECT(xferk_mr_dereg(x, f->mr) == 0, "dereg");
	T_EXPECT(t_stat("pinned_pages") == pinned, "unpinned while quarantined");

	/* The teardown destroys the QP after flush_timeout_ms. */
	w.op = s.op;
	w.deadline_ns = xferk_now_ns() + 30000 * MS;
	res = run_cmd(ring, xferk_fd(x), XFERK_IOC_WAIT, &w, 2, 35000);
	T_EXPECT(res == 0 && w.snap.state == XFERK_STATE_DRAINED &&
		 w.snap.buffer_reusable && w.snap.deadline_timeouts == 1,
		 "WAIT: %d %s", res, xferk_state_name(w.snap.state));
	T_EXPECT(t_stat_wait("pinned_pages", pinned - 256, t_scaled_ms(10000)) <
		 pinned, "drained pages still pinned");
	T_EXPECT(t_cqe(ring, 300, &res, &ud) == -ETIME,
		 "second CQE for %llu: %d", (unsigned long long)ud, res);
	T_EXPECT(xferk_release(x, s.op) == 0, "release");
	restore();
}

static void cancel(struct io_uring *ring, struct xferk *x, struct xferk_frag *f)
{
	const unsigned int delay_ms = t_debug_kernel() ? 5000 : 2000;
	/* Half of it well beyond the delay; with the deadline, within 60 s. */
	const unsigned int drain_ms = t_debug_kernel() ? 20000 : 10000;
	struct xferk_ioc_cancel c = { .size = sizeof(c) };
	struct xferk_ioc_query q = { .size = sizeof(q) };
	struct xferk_ioc_handle h = { .size = sizeof(h) };
	struct xferk_op_snapshot snap = { .state = XFERK_STATE_COUNT };
	struct io_uring_sqe *sqe;
	struct xferk_ioc_submit s;
	int res, got = 0, i;
	char v[32];
	uint64_t ud;

	snprintf(v, sizeof(v), "%u", delay_ms);
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_write_file(FAULT "delay_ms", v) == 0 &&
		 t_write_file(FAULT "delay_completions", "1") == 0, "fault");
	/* The op's deadline lies beyond the drain: only the cancel ends it. */
	s = submit_one(ring, xferk_fd(x), f,
		       xferk_now_ns() + (drain_ms + 5000ULL) * MS, 0, 3);
	/* Its completion is being handled delay_ms late: still in flight. */
	T_EXPECT(t_fault_taken("delay_completions", t_scaled_ms(10000)) == 0 &&
		 xferk_query(x, s.op, &snap) == 0 &&
		 snap.state == XFERK_STATE_IN_PROGRESS,
		 "completion not delayed: %s", xferk_state_name(snap.state));
	c.op = s.op;
	/* The op drains on its own, within the first half of the budget. */
	c.drain_deadline_ns = xferk_now_ns() + drain_ms * MS;
	sqe = t_sqe(ring);
	io_uring_prep_xferk_cancel(sqe, xferk_fd(x), &c);
	io_uring_sqe_set_data64(sqe, 4);
	io_uring_submit(ring);
	for (i = 0; i < 2; i++) {
		if (t_cqe(ring, drain_ms + 10000, &res, &ud))
			break;
		got |= ud == 3 ? 1 : 2;
		if (ud == 3)
			T_EXPECT(res == XFERK_STATE_DRAINED, "submit res %d", res);
		else
			T_EXPECT(res == 0 && c.snap.state == XFERK_STATE_DRAINED &&
				 c.snap.cancel_requests == 1,
				 "CANCEL: %d %s", res, xferk_state_name(c.snap.state));
	}
	T_EXPECT(got == 3, "CQEs seen: %#x", got);
	T_EXPECT(t_cqe(ring, 300, &res, &ud) == -ETIME, "extra CQE %llu",
		 (unsigned long long)ud);

	q.op = s.op;
	res = run_cmd(ring, xferk_fd(x), XFERK_IOC_QUERY, &q, 5, 5000);
	T_EXPECT(res == 0 && q.snap.state == XFERK_STATE_DRAINED &&
		 q.snap.user_data == 3, "QUERY: %d %s", res,
		 xferk_state_name(q.snap.state));
	h.handle = s.op;
	T_EXPECT(run_cmd(ring, xferk_fd(x), XFERK_IOC_RELEASE, &h, 6, 5000) == 0,
		 "RELEASE");
	res = run_cmd(ring, xferk_fd(x), XFERK_IOC_RELEASE, &h, 7, 5000);
	T_EXPECT_ERR(res, ESTALE);
	restore();
}

static void auto_release(struct io_uring *ring, struct xferk *x,
			 struct xferk_frag *f)
{
	struct xferk_ioc_submit s = {
		.size = sizeof(s), .frags = (uintptr_t)f, .nr_frags = 1,
		.frag_size = sizeof(*f), .deadline_ns = xferk_now_ns() + 20000 * MS,
		.flags = XFERK_SUBMIT_AUTO_RELEASE,
	};
	struct xferk_op_snapshot snap;
	uint64_t ud;
	int res;

	io_uring_prep_xferk_submit(t_sqe(ring), xferk_fd(x), &s);
	io_uring_submit(ring);
	T_EXPECT(t_cqe(ring, 15000, &res, &ud) == 0 &&
		 res == XFERK_STATE_SUCCEEDED, "auto-release CQE: %d", res);
	T_EXPECT_ERR(xferk_query(x, s.op, &snap), ESTALE);
	T_EXPECT_ERR(xferk_cancel_drain(x, s.op, xferk_now_ns() + 1000 * MS,
					&snap), ESTALE);
}

/* A userfaultfd whose write-protect faults the caller handles; -1 if none. */
static int uffd_wp_open(void)
{
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	int uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (uffd < 0)
		return -1;
	/* A kernel without write-protection clears the feature bit. */
	if (ioctl(uffd, UFFDIO_API, &api) ||
	    !(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
		close(uffd);
		errno = EOPNOTSUPP;
		return -1;
	}
	return uffd;
}

static int uffd_protect(int uffd, void *p, size_t len, bool on)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = (uintptr_t)p, .len = len },
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return ioctl(uffd, UFFDIO_WRITEPROTECT, &wp);
}

static void handle_before_cqe(struct io_uring *ring, struct xferk *x,
			      struct xferk_frag *f)
{
	const size_t page = sysconf(_SC_PAGESIZE);
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_WP };
	struct pollfd pfd = { .events = POLLIN };
	struct xferk_ioc_submit *s = t_map(page);
	struct io_uring_sqe *sqe;
	struct uffd_msg msg;
	long long claimed;
	uint64_t ud;
	int res;

	pfd.fd = uffd_wp_open();
	if (pfd.fd < 0) {
		fprintf(stderr, "handle before CQE: skipped, no userfaultfd write-protection: %s\n",
			strerror(errno));
		munmap(s, page);
		return;
	}
	*s = (struct xferk_ioc_submit) {
		.size = sizeof(*s), .frags = (uintptr_t)f, .nr_frags = 1,
		.frag_size = sizeof(*f), .user_data = 8,
		.deadline_ns = xferk_now_ns() + t_scaled_ms(20000) * MS,
	};
	reg.range.start = (uintptr_t)s;
	reg.range.len = page;
	T_EXPECT(ioctl(pfd.fd, UFFDIO_REGISTER, &reg) == 0 &&
		 uffd_protect(pfd.fd, s, page, true) == 0,
		 "write-protect: %s", strerror(errno));
	claimed = t_stat("uring_completed");
	sqe = t_sqe(ring);
	io_uring_prep_xferk_submit(sqe, xferk_fd(x), s);
	sqe->flags |= IOSQE_ASYNC;
	io_uring_sqe_set_data64(sqe, 8);
	T_EXPECT(io_uring_submit(ring) == 1, "submit");

	/* The worker's write-back of the handle faults and waits. */
	T_EXPECT(poll(&pfd, 1, t_scaled_ms(10000)) == 1 &&
		 read(pfd.fd, &msg, sizeof(msg)) == sizeof(msg) &&
		 msg.event == UFFD_EVENT_PAGEFAULT &&
		 (msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP),
		 "no write-protect fault on the submit struct");
	T_EXPECT(t_stat_wait("uring_completed", claimed + 1, t_scaled_ms(10000)) ==
		 claimed + 1, "the op did not settle");
	T_EXPECT(t_cqe(ring, 500, &res, &ud) == -ETIME,
		 "CQE %llu (res %d) posted before the handle was written back",
		 (unsigned long long)ud, res);

	T_EXPECT(uffd_protect(pfd.fd, s, page, false) == 0, "unprotect: %s",
		 strerror(errno));
	T_EXPECT(t_cqe(ring, t_scaled_ms(10000), &res, &ud) == 0 && ud == 8 &&
		 res == XFERK_STATE_SUCCEEDED, "CQE: %d", res);
	T_EXPECT(s->op != 0, "no op handle in the struct at its CQE");
	T_EXPECT(xferk_release(x, s->op) == 0, "release");
	close(pfd.fd);
	munmap(s, page);
}

int main(void)
{
	struct t_counters base;
	struct io_uring ring;
	struct xferk_frag f;
	struct t_loop l;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	saved_flush = t_param("flush_timeout_ms");
	saved_delay_ms = t_fault_get("delay_ms");
	if (saved_flush <= 0 || saved_delay_ms < 0) {
		fprintf(stderr, "no parameter flush_timeout_ms or knob delay_ms\n");
		return T_FAIL;
	}
	atexit(restore);
	t_settle(&base);
	t_loop_open(&l, 1 << 20, 1 << 20);
	t_ring(&ring, 64, 0, 0);
	f = (struct xferk_frag) { .mr = l.src_mr, .len = 4096, .remote = l.remote,
				  .opcode = XFERK_OP_WRITE };
	deadline_expiry(&ring, l.x, &f);

	/* The drain took the connection down: a new one for the next op. */
	xferk_close(l.x);
	if (t_loop_connect(&l))
		return T_FAIL;
	f.mr = l.src_mr;
	f.remote = l.remote;
	cancel(&ring, l.x, &f);
	auto_release(&ring, l.x, &f);
	handle_before_cqe(&ring, l.x, &f);

	io_uring_queue_exit(&ring);
	xferk_close(l.x);
	restore();
	T_EXPECT(t_stat_wait("pinned_pages", base.pinned_pages, t_scaled_ms(10000)) ==
		 base.pinned_pages, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), base.pinned_pages);
	T_EXPECT(t_stat_wait("ops_live", base.ops_live, t_scaled_ms(10000)) ==
		 base.ops_live, "ops_live %lld, was %lld", t_stat("ops_live"),
		 base.ops_live);
	return t_result();
}
