// SPDX-License-Identifier: GPL-2.0
/*
 * Completion moderation over soft-RoCE (module parameter
 * moderate_completions, default Y): a chain's last work request is
 * signaled, and one wherever the chain's bytes since its last signaled one
 * reach 64 KiB; a completion vouches for the unsignaled ones before it.
 *  1. 1 MiB WRITEs and READs (8 chunks of 128 KiB on rxe) move every byte
 *     with and without it, and stats/completions_moderated stays: a chunk
 *     of 64 KiB or more is signaled. Regression: only a chain's last was,
 *     so a chain of large chunks came back as one batch and the queue's
 *     byte limit saw its QP run dry at every batch.
 *  2. Scattered fragments (4 ops of 64 x 4 KiB, each its own work
 *     request) keep their chains long: at least half of their work
 *     requests complete without a completion of their own (7 in 8 with
 *     qp_window 8); none without moderation. Regression: a chain's last
 *     work request completed apart from the ones it vouched for, so the
 *     windows they freed went out as two chains, and chains decayed to
 *     single work requests (5 % moderated).
 *  3. A chain of two 4 KiB fragments the device takes only half of
 *     (fault refuse_chain): the work request it took is unsignaled and
 *     nothing is posted after it, so a marker is. The op fails with ENOMEM
 *     once that half completed, its bytes counted, with no path replaced
 *     and within its deadline (without the marker the half it took never
 *     completed: a keepalive probe found a lost completion and replaced
 *     the path, or the op ran into its deadline).
 *  4. A chain of four 4 KiB fragments whose QP is in the error state when
 *     it is posted (fault qp_error): all four flush; the first one's flush
 *     completion is swallowed (fault swallow_completions), so its chunk
 *     stays posted until the path's teardown reclaims it (once it waited
 *     flush_timeout_ms, 200 ms here, for that completion alone: the
 *     device's others were drained). The op succeeds on the next path
 *     with every byte. Regression: the next flush completion vouched for
 *     it as succeeded, though it never ran, and the op succeeded with its
 *     first fragment never written.
 * No path dies but where the test kills one (a false lost completion:
 * regression, a completion handled before its chain's bookkeeping).
 */
#include "test.h"

#define LEN		(1 << 20)
#define MODERATE	"/sys/module/xferk/parameters/moderate_completions"

static long long path_deaths(void)
{
	return t_stat("path_deaths_qp") + t_stat("path_deaths_peer") +
	       t_stat("path_deaths_keepalive") + t_stat("path_deaths_cancel") +
	       t_stat("path_deaths_lost");
}

#define FRAGS		64
#define OPS		4

/*
 * Fragment @j of @n scattered 4 KiB WRITEs from slot @base: a gap after
 * each and the remote ones in reverse order, so that none merge.
 */
static struct xferk_frag scattered_frag(const struct t_loop *l, int base,
					int n, int j)
{
	return (struct xferk_frag) {
		.mr = l->src_mr, .len = 4096, .offset = (base + j) * 8192ULL,
		.remote = l->remote,
		.remote_offset = (base + n - 1 - j) * 8192ULL,
		.opcode = XFERK_OP_WRITE };
}

/* The first of @n scattered fragments from slot @base whose bytes differ. */
static int scattered_wrong(const struct t_loop *l, int base, int n)
{
	int j;

	for (j = 0; j < n; j++)
		if (memcmp(l->dst + (base + n - 1 - j) * 8192ULL,
			   l->src + (base + j) * 8192ULL, 4096))
			return j;
	return -1;
}

/*
 * @OPS ops of FRAGS scattered fragments each, all in flight. Return: the
 * share of their work requests that stats/completions_moderated counts.
 */
static double scattered(struct t_loop *l)
{
	static struct xferk_frag f[OPS][FRAGS];
	long long before = t_stat("completions_moderated");
	struct xferk_op_snapshot s;
	uint64_t ops[OPS];
	int i, j, ret;

	t_fill(l->src, 2 * LEN, 3);
	for (i = 0; i < OPS; i++)
		for (j = 0; j < FRAGS; j++)
			f[i][j] = scattered_frag(l, i * FRAGS, FRAGS, j);
	for (i = 0; i < OPS; i++)
		T_EXPECT(xferk_submit(l->x, f[i], FRAGS, XFERK_DEADLINE_NONE, 0,
				      &ops[i]) == 0, "scattered submit %d", i);
	for (i = 0; i < OPS; i++) {
		ret = xferk_wait(l->x, ops[i], XFERK_DEADLINE_NONE,
				 XFERK_WAIT_PHYSICAL, &s);
		T_EXPECT(ret == 0 && s.state == XFERK_STATE_SUCCEEDED,
			 "scattered op %d: %d %s", i, ret,
			 xferk_state_name(s.state));
		xferk_release(l->x, ops[i]);
		T_EXPECT(scattered_wrong(l, i * FRAGS, FRAGS) < 0,
			 "scattered op %d: fragment %d", i,
			 scattered_wrong(l, i * FRAGS, FRAGS));
	}
	return (double)(t_stat("completions_moderated") - before) /
	       (OPS * FRAGS);
}

#define SHORT_CHAIN	4

/*
 * One op of @n (at most SHORT_CHAIN) scattered fragments of a fresh
 * pattern, one chain whose work requests but the last are unsignaled.
 * Return: its state once its buffer is reusable (*@s), or -1.
 */
static int short_chain(struct t_loop *l, int n, uint64_t seed,
		       struct xferk_op_snapshot *s)
{
	struct xferk_frag f[SHORT_CHAIN];
	uint64_t op, deadline;
	int j, ret;

	t_fill(l->src, n * 8192ULL, seed);
	memset(l->dst, 0, n * 8192ULL);
	for (j = 0; j < n; j++)
		f[j] = scattered_frag(l, 0, n, j);
	deadline = xferk_now_ns() + t_scaled_ms(60000) * 1000000ULL;
	ret = xferk_submit(l->x, f, n, deadline, 0, &op);
	T_EXPECT(ret == 0, "short chain submit: %d", ret);
	if (ret)
		return -1;
	ret = xferk_wait(l->x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, s);
	xferk_release(l->x, op);
	return ret ? -1 : (int)s->state;
}

static void restore(void)
{
	t_write_file(MODERATE, "Y");
	t_fault_clear();
}

/*
 * A 1 MiB WRITE of a fresh pattern into the export and a READ of it back
 * into the source's second half, both verified. Return: how much
 * stats/completions_moderated grew.
 */
static long long write_read(struct t_loop *l, uint64_t seed)
{
	long long before = t_stat("completions_moderated");
	struct xferk_op_snapshot s;
	struct xferk_frag f = { .mr = l->src_mr, .len = LEN,
				.remote = l->remote, .opcode = XFERK_OP_WRITE };
	int ret;

	t_fill(l->src, LEN, seed);
	memset(l->dst, 0, LEN);
	ret = t_run(l->x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && s.transferred_bytes == LEN,
		 "WRITE: %d err %d", ret, s.first_error);
	T_EXPECT(t_check(l->dst, LEN, seed) < 0, "WRITE's bytes");
	memset(l->src + LEN, 0, LEN);
	f.offset = LEN;
	f.opcode = XFERK_OP_READ;
	ret = t_run(l->x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && s.transferred_bytes == LEN,
		 "READ: %d err %d", ret, s.first_error);
	T_EXPECT(t_check(l->src + LEN, LEN, seed) < 0, "READ's bytes");
	return t_stat("completions_moderated") - before;
}

int main(void)
{
	long long moderated, deaths;
	double share;
	struct xferk_op_snapshot s = { 0 };
	struct t_loop l;
	int ret;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	if (access(T_FAULT_DIR "refuse_chain", W_OK)) {
		fprintf(stderr, "no fault knobs (debugfs)\n");
		return T_SKIP;
	}
	atexit(restore);
	T_EXPECT(t_file_has(MODERATE, "Y"), "moderate_completions is not Y");
	/* A second MiB past each range: no op ends at its region's end. */
	t_loop_open(&l, 3 * LEN, 2 * LEN);
	deaths = path_deaths();

	moderated = write_read(&l, 1);
	T_EXPECT(moderated == 0,
		 "chunks of 128 KiB: completions_moderated grew %lld",
		 moderated);
	share = scattered(&l);
	T_EXPECT(share >= 0.5, "scattered: %.2f of the work requests moderated",
		 share);
	T_EXPECT(t_write_file(MODERATE, "N") == 0, "moderate_completions N");
	moderated = write_read(&l, 2);
	T_EXPECT(moderated == 0,
		 "not moderated: completions_moderated grew %lld", moderated);
	share = scattered(&l);
	T_EXPECT(share == 0, "not moderated: %.2f of the work requests",
		 share);
	T_EXPECT(t_write_file(MODERATE, "Y") == 0, "moderate_completions Y");

	/*
	 * Two fragments as one chain; the device takes the first, the second
	 * fails unposted, and nothing is posted after them.
	 */
	moderated = t_stat("completions_moderated");
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_fault_set("refuse_chain", 1) == 0, "refuse_chain");
	ret = short_chain(&l, 2, 4, &s);
	T_EXPECT(t_fault_get("refuse_chain") == 0, "refuse_chain unused");
	T_EXPECT(ret == XFERK_STATE_FAILED && s.first_error == -ENOMEM &&
		 s.buffer_reusable && s.in_flight_bytes == 0 &&
		 s.transferred_bytes == 4096,
		 "refused half: %d err %d, %llu bytes", ret, s.first_error,
		 (unsigned long long)s.transferred_bytes);
	T_EXPECT(path_deaths() == deaths, "a path died: %lld, was %lld",
		 path_deaths(), deaths);
	T_EXPECT(t_stat("completions_moderated") > moderated,
		 "the marker vouched for nothing");
	/* The session goes on, moderated. */
	share = scattered(&l);
	T_EXPECT(share >= 0.5, "after the marker: %.2f moderated", share);
	T_EXPECT(path_deaths() == deaths, "a path died: %lld, was %lld",
		 path_deaths(), deaths);

	/* Four fragments as one chain, flushed, the first swallowed. */
	T_EXPECT(t_quiet() == 0, "other ops are live");
	T_EXPECT(t_param_scoped("flush_timeout_ms", 200) == 0,
		 "flush_timeout_ms");
	T_EXPECT(t_fault_set("qp_error", 1) == 0 && t_swallow(1) == 0,
		 "qp_error, swallow_completions");
	ret = short_chain(&l, SHORT_CHAIN, 10, &s);
	T_EXPECT(t_fault_get("qp_error") == 0 &&
		 t_fault_get("swallow_completions") == 0, "knobs unused");
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED &&
		 s.transferred_bytes == SHORT_CHAIN * 4096,
		 "flushed chain: %d err %d, %llu bytes", ret, s.first_error,
		 (unsigned long long)s.transferred_bytes);
	T_EXPECT(scattered_wrong(&l, 0, SHORT_CHAIN) < 0,
		 "flushed chain's bytes: fragment %d",
		 scattered_wrong(&l, 0, SHORT_CHAIN));
	xferk_close(l.x);
	return t_result();
}
