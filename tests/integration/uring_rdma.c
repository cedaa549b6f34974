// SPDX-License-Identifier: GPL-2.0
/*
 * 10,000 ops in flight through one io_uring ring over soft-RoCE, half
 * RDMA WRITE and half RDMA READ, each on its own 1 KiB slot. Every submit
 * gets its own CQE, which reports SUCCEEDED and (CQE32) the handle the
 * submit wrote back; every byte arrives; auto-release leaves no op, no
 * parked command and no extra pinned page behind.
 *
 * On the debug kernel, where rxe is about 28 times slower, 2,000 ops run
 * in two waves of 1,000, each wave with its own deadline.
 */
#include <unistd.h>

#include "test.h"

#define OPS	10000
#define SLOT	1024UL
#define LEN	(OPS * SLOT)
#define SEC	1000000000ULL

static struct xferk_ioc_submit subs[OPS];
static struct xferk_frag frags[OPS];
static unsigned char seen[OPS];

int main(void)
{
	const int ops = t_debug_kernel() ? 2000 : OPS;
	const int wave = t_debug_kernel() ? 1000 : OPS;
	long long completed;
	uint64_t conn, local_mr, remote_mr, remote, deadline;
	uint8_t *local, *peer;
	struct t_counters base;
	struct io_uring ring;
	struct xferk *x;
	long bad = 0;
	int i, first, ret, res, n = 0;

	if (xferk_open(&x))
		return T_SKIP;
	if (!(xferk_features(x) & XFERK_FEAT_URING))
		return T_FAIL;
	t_settle(&base);
	completed = t_stat("uring_completed");
	local = t_map(LEN);
	peer = t_map(LEN + 4096);	/* the extra page: see testing.md (rxe) */
	for (i = 0; i < ops; i++)
		t_fill(i % 2 ? peer + i * SLOT : local + i * SLOT, SLOT, i);
	if (t_setup(x, local, LEN, peer, LEN + 4096, &conn, &local_mr,
		    &remote_mr, &remote))
		return T_FAIL;
	t_ring(&ring, 16384, 32768, IORING_SETUP_CQE32);

	for (first = 0; first < ops; first += wave) {
		int last = first + wave < ops ? first + wave : ops;

		/* Generous: the debug kernel's rxe is slow; within the 60 s bound. */
		deadline = xferk_now_ns() + 50 * SEC;
		for (i = first; i < last; i++) {
			struct io_uring_sqe *sqe = t_sqe(&ring);

			frags[i] = (struct xferk_frag) {
				.mr = local_mr, .offset = i * SLOT, .len = SLOT,
				.remote = remote, .remote_offset = i * SLOT,
				.opcode = i % 2 ? XFERK_OP_READ : XFERK_OP_WRITE,
			};
			subs[i] = (struct xferk_ioc_submit) {
				.size = sizeof(subs[i]),
				.flags = XFERK_SUBMIT_AUTO_RELEASE,
				.frags = (uintptr_t)&frags[i], .nr_frags = 1,
				.frag_size = sizeof(frags[i]),
				.deadline_ns = deadline, .drain_budget_ns = 5 * SEC,
				.user_data = i,
			};
			io_uring_prep_xferk_submit(sqe, xferk_fd(x), &subs[i]);
			io_uring_sqe_set_data64(sqe, i);
		}
		ret = io_uring_submit(&ring);
		T_EXPECT(ret >= 0, "submit: %s", strerror(-ret));
		printf("submitted ops %d-%d; parked now: %lld\n", first, last - 1,
		       t_stat("uring_parked"));

		for (; n < last; n++) {
			struct io_uring_cqe *cqe;

			ret = io_uring_wait_cqe(&ring, &cqe);
			if (ret) {
				T_EXPECT(0, "wait_cqe: %s", strerror(-ret));
				break;
			}
			i = (int)cqe->user_data;
			res = cqe->res;
			if (i < first || i >= last || seen[i]++ ||
			    !xferk_cqe_succeeded(cqe) ||
			    xferk_cqe_op(cqe) != subs[i].op || !subs[i].op) {
				if (bad++ < 5)
					fprintf(stderr, "cqe %d: res %d op %llx want %llx\n",
						i, res,
						(unsigned long long)xferk_cqe_op(cqe),
						(unsigned long long)(i >= 0 && i < OPS ?
								     subs[i].op : 0));
			}
			io_uring_cqe_seen(&ring, cqe);
		}
		if (n < last)
			break;
	}
	T_EXPECT(n == ops && !bad, "%d CQEs, %ld bad", n, bad);

	for (i = 0; i < ops; i++) {
		long at = t_check(i % 2 ? local + i * SLOT : peer + i * SLOT,
				  SLOT, i);

		if (at >= 0 && bad++ < 5)
			fprintf(stderr, "op %d (%s): byte %ld differs\n", i,
				i % 2 ? "READ" : "WRITE", at);
	}
	T_EXPECT(!bad, "data verification");
	T_EXPECT(t_cqe(&ring, 200, &res, (uint64_t *)&deadline) == -ETIME,
		 "an extra CQE");
	T_EXPECT(t_stat("uring_completed") == completed + ops,
		 "uring_completed %lld, want %lld",
		 t_stat("uring_completed") - completed, (long long)ops);

	io_uring_queue_exit(&ring);
	xferk_close(x);
	T_EXPECT(t_stat_wait("ops_live", base.ops_live, t_scaled_ms(10000)) ==
		 base.ops_live, "ops_live %lld, was %lld", t_stat("ops_live"),
		 base.ops_live);
	T_EXPECT(t_stat_wait("uring_parked", base.uring_parked, t_scaled_ms(10000)) ==
		 base.uring_parked, "uring_parked %lld, was %lld",
		 t_stat("uring_parked"), base.uring_parked);
	T_EXPECT(t_stat_wait("pinned_pages", base.pinned_pages, t_scaled_ms(10000)) ==
		 base.pinned_pages, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), base.pinned_pages);
	return t_result();
}
