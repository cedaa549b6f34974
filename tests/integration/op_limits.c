// SPDX-License-Identifier: GPL-2.0
/*
 * The bounds of one op, XFERK_MAX_OP_BYTES and XFERK_MAX_OP_WRS: an op
 * beyond either fails with E2BIG at once and publishes nothing, whatever
 * its fragments (overlapping, over a region of 1 GiB of address space);
 * an op at the bound runs.
 *
 * Regression: the kernel summed the work requests of 4096 fragments in 32
 * bits and sized its chunk array from that sum (a heap overflow once it
 * wrapped), or asked kvcalloc for gigabytes (a WARNING in the log), and
 * counted them under the file's lock without bound.
 *
 *  - null peer: 4096 fragments of 1 MiB (4 GiB) run; one byte more is E2BIG;
 *  - rxe: 4096 fragments, each all of a 1 GiB region (the address space
 *    of one 2 MiB memfd mapped 512 times), is E2BIG, with a clean log;
 *  - siw (debug kernel, one page per work request): 65536 work requests
 *    are accepted, 65537 are E2BIG.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "test.h"

#define NFRAGS		4096
#define MEMFD_LEN	(2UL << 20)
#define BIG_LEN		(1UL << 30)

static struct xferk_frag frags[NFRAGS];

static int submit(struct xferk *x, uint32_t n, uint64_t deadline, uint64_t *op)
{
	struct xferk_ioc_submit s = {
		.size = sizeof(s), .frags = (uintptr_t)frags, .nr_frags = n,
		.frag_size = sizeof(frags[0]), .deadline_ns = deadline,
	};
	int ret = ioctl(xferk_fd(x), XFERK_IOC_SUBMIT, &s);

	*op = s.op;
	return ret ? -errno : 0;
}

static void fill(uint64_t mr, uint64_t remote, uint64_t len, uint32_t opcode)
{
	int i;

	for (i = 0; i < NFRAGS; i++)
		frags[i] = (struct xferk_frag) { .mr = mr, .len = len,
						 .remote = remote,
						 .opcode = opcode };
}

/* Import of a whole region exported over @conn. */
static int loop_remote(struct xferk *x, uint64_t conn, uint64_t mr,
		       uint64_t len, uint64_t *remote)
{
	const uint32_t rw = XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE;
	struct xferk_token tok;
	uint64_t exp;

	return xferk_export(x, conn, mr, 0, len, rw, &tok, &exp) ?:
	       xferk_import(x, conn, &tok, remote);
}

static void null_peer_bytes(struct xferk *x)
{
	long long live = t_stat("ops_live");
	struct xferk_op_snapshot s;
	uint8_t *buf = t_map(4UL << 20);
	uint64_t conn, mr, remote, op;
	int ret;

	if (xferk_connect_null(x, 0, &conn) ||
	    xferk_mr_reg(x, buf, 4UL << 20, XFERK_ACCESS_ALL, &mr) ||
	    loop_remote(x, conn, mr, 4UL << 20, &remote)) {
		T_EXPECT(0, "null peer setup");
		return;
	}
	fill(mr, remote, 1UL << 20, XFERK_OP_WRITE);
	ret = submit(x, NFRAGS, XFERK_DEADLINE_NONE, &op);
	T_EXPECT(ret == 0, "4 GiB op: %s", strerror(-ret));
	if (!ret) {
		ret = xferk_wait(x, op, XFERK_DEADLINE_NONE,
				 XFERK_WAIT_PHYSICAL, &s);
		T_EXPECT(!ret && s.state == XFERK_STATE_SUCCEEDED &&
			 s.total_bytes == XFERK_MAX_OP_BYTES,
			 "4 GiB op: %d state %u bytes %llu", ret, s.state,
			 (unsigned long long)s.total_bytes);
		xferk_release(x, op);
	}
	frags[7].len++;
	T_EXPECT_ERR(submit(x, NFRAGS, XFERK_DEADLINE_NONE, &op), E2BIG);
	/* The released op's last reference may go just after the wait. */
	T_EXPECT(t_stat_wait("ops_live", live, t_scaled_ms(10000)) == live,
		 "ops_live %lld, was %lld", t_stat("ops_live"), live);
	xferk_disconnect(x, conn);
	munmap(buf, 4UL << 20);
}

/* @len bytes of address space backed by one small memfd, mapped repeatedly. */
static uint8_t *repeated_map(uint64_t len)
{
	int fd = memfd_create("xferk-op-limits", 0);
	uint8_t *base;
	uint64_t off;

	if (fd < 0 || ftruncate(fd, MEMFD_LEN))
		return NULL;
	base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	for (off = 0; off < len; off += MEMFD_LEN)
		if (mmap(base + off, MEMFD_LEN, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
			return NULL;
	close(fd);
	return base;
}

static void overlapping_gigabyte(struct xferk *x)
{
	long long live = t_stat("ops_live");
	uint64_t conn, mr, remote, op;
	uint8_t *big = repeated_map(BIG_LEN);

	if (!big || xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn) ||
	    xferk_mr_reg(x, big, BIG_LEN, XFERK_ACCESS_ALL, &mr) ||
	    loop_remote(x, conn, mr, BIG_LEN, &remote)) {
		T_EXPECT(0, "1 GiB setup: %s", strerror(errno));
		return;
	}
	fill(mr, remote, BIG_LEN, XFERK_OP_WRITE);
	T_EXPECT_ERR(submit(x, NFRAGS, XFERK_DEADLINE_NONE, &op), E2BIG);
	fill(mr, remote, BIG_LEN, XFERK_OP_READ);
	T_EXPECT_ERR(submit(x, NFRAGS, XFERK_DEADLINE_NONE, &op), E2BIG);
	T_EXPECT(t_stat("ops_live") == live, "ops_live %lld, was %lld",
		 t_stat("ops_live"), live);
	T_EXPECT(xferk_mr_dereg(x, mr) == 0, "dereg");
}

/* A siw device on its own dummy netdev; 0 if there is one now. */
static int siw_up(void)
{
	return system("ip link add xfsiw0 type dummy 2>/dev/null; "
		      "ip addr add 10.98.0.1/24 dev xfsiw0 && "
		      "ip link set xfsiw0 up && "
		      "rdma link add xfsiw type siw netdev xfsiw0 >/dev/null 2>&1");
}

static void siw_down(void)
{
	if (system("rdma link delete xfsiw >/dev/null 2>&1; "
		   "ip link delete xfsiw0 >/dev/null 2>&1"))
		return;
}

/* One page per work request: the work-request bound is the one that binds. */
static void one_page_wrs(struct xferk *x)
{
	long long live = t_stat("ops_live");
	uint64_t conn, mr, remote, op;
	uint8_t *buf = t_map(65536 + 8192);
	int ret;

	if (siw_up()) {
		fprintf(stderr, "no siw device: work-request bound not tested\n");
		siw_down();
		return;
	}
	if (xferk_connect(x, "10.98.0.1", 0, 60000, &conn) ||
	    xferk_mr_reg(x, buf, 65536 + 8192, XFERK_ACCESS_ALL, &mr) ||
	    loop_remote(x, conn, mr, 65536 + 8192, &remote)) {
		T_EXPECT(0, "siw setup");
		siw_down();
		return;
	}
	/* 16 pages a fragment: 65536 work requests of one page each. */
	fill(mr, remote, 65536, XFERK_OP_WRITE);
	ret = submit(x, NFRAGS, xferk_now_ns() + 60000000000ULL, &op);
	T_EXPECT(ret == 0, "65536 work requests: %s", strerror(-ret));
	if (!ret) {
		struct xferk_op_snapshot s;

		ret = xferk_cancel_drain(x, op, xferk_now_ns() + 30000000000ULL,
					 &s);
		T_EXPECT(s.buffer_reusable, "cancel: %d", ret);
		xferk_release(x, op);
	}
	frags[9].len++;
	T_EXPECT_ERR(submit(x, NFRAGS, XFERK_DEADLINE_NONE, &op), E2BIG);
	T_EXPECT(t_stat_wait("ops_live", live, t_scaled_ms(30000)) == live,
		 "ops_live %lld, was %lld", t_stat("ops_live"), live);
	xferk_close(x);
	siw_down();
}

int main(void)
{
	struct t_counters base;
	struct xferk *x;

	if (xferk_open(&x))
		return T_SKIP;
	t_settle(&base);
	null_peer_bytes(x);
	overlapping_gigabyte(x);
	xferk_close(x);
	T_EXPECT(t_stat_wait("pinned_pages", base.pinned_pages, t_scaled_ms(10000)) ==
		 base.pinned_pages, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), base.pinned_pages);
	/* siw exists on the debug kernel only. */
	if (t_debug_kernel() && !xferk_open(&x))
		one_page_wrs(x);
	return t_result();
}
