// SPDX-License-Identifier: GPL-2.0
/*
 * Priority over soft-RoCE, across processes: a bulk process keeps a
 * backlog of RDMA WRITEs on the shared connection; a critical 64 KiB
 * WRITE from another process then overtakes it. With the queue, only what
 * the dispatch windows had let out already finishes while the critical op
 * runs; with queue_bypass the critical op waits behind the whole backlog.
 * The backlog is there by construction, not by timing: the first bulk
 * completion is held (fault knob delay_completions) until well after the
 * critical op was submitted, so no bulk op can finish before it.
 * "Finishes while it runs" is judged on the kernel's own times: each op's
 * submit_to_physical_ns added to when its submit syscall ran (bracketed by
 * the clock before and after it), so nothing else on the host and no
 * delay of the test's own reads can be counted.
 * A windowed large op moves every byte exactly.
 * It runs on a session of its own, of one QP: the window is per QP, and a
 * session an earlier test left (qps: four QPs) would let four times as
 * many chunks out ahead of the critical op.
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "test.h"

#define SEC	1000000000ULL
#define BYPASS	"/sys/module/xferk/parameters/queue_bypass"
#define WINDOW	"/sys/class/misc/xferk/queue/qp_window"
#define QP_WINDOW	4
#define CRIT	(64UL << 10)
#define MAX_BULK	64

static unsigned int nr_bulk;
static unsigned long bulk_len;

/*
 * When each bulk op became physically complete, in CLOCK_MONOTONIC ns: not
 * before lo, not after hi (its submit ran between two clock reads). The
 * bulk process fills it in; shared with the parent.
 */
static struct bulk_times {
	uint64_t lo[MAX_BULK], hi[MAX_BULK];
	uint64_t submitted;	/* before the bulk ops were submitted */
	unsigned int n;
} *times;

/* How long the first bulk completion is held. */
static unsigned int hold_ms;
static long long saved_delay_ms = -1;

static void restore_faults(void)
{
	t_fault_clear();
	if (saved_delay_ms >= 0)
		t_fault_set("delay_ms", saved_delay_ms);
}

/* The bulk process: a backlog of nr_bulk WRITEs, all reaped and timed. */
static void bulk(int ready)
{
	unsigned long len = nr_bulk * bulk_len;
	uint8_t *src = t_map(len), *dst = t_map(len + 4096);
	uint64_t conn, mr, dst_mr, remote, b0, b1;
	struct xferk_ioc_submit s[MAX_BULK];
	struct xferk_frag f[MAX_BULK];
	struct xferk_op_snapshot snap;
	struct io_uring ring;
	struct xferk *x;
	unsigned int i;

	if (xferk_open(&x) ||
	    t_setup(x, src, len, dst, len + 4096, &conn, &mr, &dst_mr, &remote))
		_exit(1);
	t_ring(&ring, MAX_BULK, 0, 0);
	for (i = 0; i < nr_bulk; i++) {
		f[i] = (struct xferk_frag) { .mr = mr, .offset = i * bulk_len,
					     .len = bulk_len, .remote = remote,
					     .remote_offset = i * bulk_len,
					     .opcode = XFERK_OP_WRITE };
		s[i] = (struct xferk_ioc_submit) {
			.size = sizeof(s[i]),
			.frags = (uintptr_t)&f[i], .nr_frags = 1,
			.frag_size = sizeof(f[i]),
			.deadline_ns = xferk_now_ns() + 55 * SEC,
			.priority = XFERK_PRIO_BULK,
		};
		io_uring_prep_xferk_submit(t_sqe(&ring), xferk_fd(x), &s[i]);
	}
	/* All at once: each op starts within [b0, b1]. */
	b0 = xferk_now_ns();
	times->submitted = b0;
	if (io_uring_submit(&ring) != (int)nr_bulk)
		_exit(1);
	b1 = xferk_now_ns();
	if (write(ready, "R", 1) != 1)
		_exit(1);
	for (i = 0; i < nr_bulk; i++) {
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe(&ring, &cqe) || !xferk_cqe_succeeded(cqe))
			_exit(1);
		io_uring_cqe_seen(&ring, cqe);
	}
	for (i = 0; i < nr_bulk; i++) {
		if (xferk_query(x, s[i].op, &snap) || !snap.physical_complete)
			_exit(1);
		times->lo[i] = b0 + snap.submit_to_physical_ns;
		times->hi[i] = b1 + snap.submit_to_physical_ns;
		xferk_release(x, s[i].op);
	}
	times->n = nr_bulk;
	_exit(0);
}

/*
 * One round: how many bulk ops became physically complete between the
 * critical op's submit and its physical completion. Each time is known
 * within an interval; @certain counts only the ops surely in between,
 * otherwise those possibly in between are counted.
 */
static int overtaken(struct xferk *x, uint64_t mr, uint64_t remote,
		     uint8_t *src, uint8_t *dst, int certain)
{
	struct xferk_ioc_submit s;
	struct xferk_op_snapshot snap;
	struct xferk_frag f = { .mr = mr, .len = CRIT, .remote = remote,
				.opcode = XFERK_OP_WRITE };
	uint64_t c0, c1, start_lo, start_hi, end_lo, end_hi;
	int p[2], status, ret, n = 0;
	unsigned int i;
	pid_t pid;
	char c;

	memset(times, 0, sizeof(*times));
	/* No other op live: the knob holds the first bulk completion. */
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_fault_set("delay_ms", hold_ms) == 0 &&
		 t_fault_set("delay_completions", 1) == 0, "delay knobs");
	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		bulk(p[1]);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1) {
		waitpid(pid, &status, 0);
		return -1;
	}
	close(p[0]);
	T_EXPECT(t_fault_taken("delay_completions", t_scaled_ms(10000)) == 0,
		 "no bulk completion held");
	t_fill(src, CRIT, 7);
	memset(dst, 0, CRIT);
	s = (struct xferk_ioc_submit) {
		.size = sizeof(s), .frags = (uintptr_t)&f, .nr_frags = 1,
		.frag_size = sizeof(f), .deadline_ns = XFERK_DEADLINE_NONE,
		.priority = XFERK_PRIO_CRITICAL,
	};
	c0 = xferk_now_ns();
	ret = ioctl(xferk_fd(x), XFERK_IOC_SUBMIT, &s);
	c1 = xferk_now_ns();
	T_EXPECT(ret == 0, "critical submit: %s", strerror(errno));
	/* The hold began after the bulk submit: it still held at c1. */
	T_EXPECT(c1 < times->submitted + hold_ms * 1000000ULL,
		 "critical op submitted %llu ms after the backlog, not within the %u ms hold",
		 (unsigned long long)(c1 - times->submitted) / 1000000, hold_ms);
	/* Submitted behind the held backlog: it may move now. */
	t_release_held();
	ret = xferk_wait(x, s.op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &snap);
	T_EXPECT(ret == 0 && snap.state == XFERK_STATE_SUCCEEDED &&
		 snap.transferred_bytes == CRIT && t_check(dst, CRIT, 7) < 0,
		 "critical op: %s", xferk_state_name(snap.state));
	xferk_release(x, s.op);
	waitpid(pid, &status, 0);
	T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		 times->n == nr_bulk, "bulk process");
	if (ret || !WIFEXITED(status) || WEXITSTATUS(status) || times->n != nr_bulk)
		return -1;

	/* The critical op started in [c0, c1] and ended submit_to_physical later. */
	start_lo = c0;
	start_hi = c1;
	end_lo = c0 + snap.submit_to_physical_ns;
	end_hi = c1 + snap.submit_to_physical_ns;
	for (i = 0; i < times->n; i++) {
		if (certain)
			n += times->lo[i] > start_hi && times->hi[i] < end_lo;
		else
			n += times->hi[i] > start_lo && times->lo[i] < end_hi;
	}
	return n;
}

/* 16 MiB in one op, 256 KiB in flight at a time: every byte, exactly. */
static void windowed(struct xferk *x, uint64_t mr, uint64_t remote,
		     uint8_t *src, uint8_t *dst, unsigned long len)
{
	struct xferk_frag f = { .mr = mr, .len = len, .remote = remote,
				.opcode = XFERK_OP_WRITE };
	struct xferk_ioc_submit s = {
		.size = sizeof(s), .frags = (uintptr_t)&f, .nr_frags = 1,
		.frag_size = sizeof(f), .deadline_ns = xferk_now_ns() + 50 * SEC,
		.window_bytes = 256 << 10, .window_chunks = 4,
	};
	struct xferk_op_snapshot snap;
	int ret;

	t_fill(src, len, 11);
	memset(dst, 0, len);
	ret = ioctl(xferk_fd(x), XFERK_IOC_SUBMIT, &s);
	T_EXPECT(ret == 0, "windowed submit: %s", strerror(errno));
	ret = xferk_wait(x, s.op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, &snap);
	T_EXPECT(ret == 0 && snap.state == XFERK_STATE_SUCCEEDED &&
		 snap.transferred_bytes == len && t_check(dst, len, 11) < 0,
		 "windowed op: %s, %llu of %lu bytes", xferk_state_name(snap.state),
		 (unsigned long long)snap.transferred_bytes, len);
	xferk_release(x, s.op);
}

int main(void)
{
	unsigned long len;
	uint64_t conn, mr, dst_mr, remote;
	struct xferk_conn_info info = { 0 };
	int queued, bypassed;
	char window[24];
	uint8_t *src, *dst;
	struct xferk *x;

	nr_bulk = 48;
	bulk_len = t_debug_kernel() ? 256 << 10 : 1 << 20;
	len = t_debug_kernel() ? 2 << 20 : 16 << 20;
	hold_ms = t_scaled_ms(3000);
	if (xferk_open(&x))
		return T_SKIP;
	saved_delay_ms = t_fault_get("delay_ms");
	if (saved_delay_ms < 0) {
		fprintf(stderr, "no fault knob delay_ms\n");
		return T_FAIL;
	}
	atexit(restore_faults);
	times = mmap(NULL, sizeof(*times), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (times == MAP_FAILED)
		return T_FAIL;
	src = t_map(len);
	dst = t_map(len + 4096);
	if (t_end_session() ||
	    t_setup(x, src, len, dst, len + 4096, &conn, &mr, &dst_mr, &remote))
		return T_FAIL;
	T_EXPECT(xferk_conn_query(x, conn, &info) == 0 && info.nr_qps == 1,
		 "a session of %u QPs", info.nr_qps);

	windowed(x, mr, remote, src, dst, len);
	/* At most QP_WINDOW chunks, hence bulk ops, are ahead of it. */
	snprintf(window, sizeof(window), "%lld", t_queue_stat("qp_window"));
	T_EXPECT(t_write_file(WINDOW, "4") == 0, "qp_window %d", QP_WINDOW);
	/* Counted strictly: an op near either end is not held against it. */
	queued = overtaken(x, mr, remote, src, dst, 1);
	T_EXPECT(t_write_file(WINDOW, window) == 0, "restore qp_window");
	T_EXPECT(t_write_file(BYPASS, "1") == 0, "bypass on");
	/* Counted generously: the control only has to show the backlog. */
	bypassed = overtaken(x, mr, remote, src, dst, 0);
	T_EXPECT(t_write_file(BYPASS, "0") == 0, "bypass off");
	printf("bulk ops finished while the critical one ran: queue %d, bypass %d of %u\n",
	       queued, bypassed, nr_bulk);
	/* And one more that DRR may have picked as the critical one came. */
	T_EXPECT(queued >= 0 && queued <= QP_WINDOW + 1,
		 "with the queue %d of %u bulk ops went first", queued, nr_bulk);
	T_EXPECT(bypassed > queued, "bypass %d, queue %d", bypassed, queued);
	xferk_close(x);
	return t_result();
}
