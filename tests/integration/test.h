/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the integration programs. Each program tests one feature and
 * exits T_PASS, T_FAIL or T_SKIP (liburing's convention); the VM harness
 * records the exit code.
 */
#ifndef XFERK_TEST_H
#define XFERK_TEST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_PASS	0
#define T_FAIL	1
#define T_SKIP	77

static int t_failures;

/* Records a failed expectation and goes on. */
#define T_EXPECT(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			t_failures++;					\
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__,	\
				__LINE__, #cond);			\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
		}							\
	} while (0)

/* Expects a negative-errno result to be exactly -err. */
#define T_EXPECT_ERR(ret, err)						\
	T_EXPECT((ret) == -(err), "got %d (%s), want -%s", (int)(ret),	\
		 strerror((int)-(ret)), #err)

static inline int t_result(void)
{
	return t_failures ? T_FAIL : T_PASS;
}

#endif /* XFERK_TEST_H */

#include <grp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <liburing.h>

#include "libxferk.h"
#include "xferk_uring.h"

#include "test_env.h"

/* A ring with @entries SQEs and IORING_SETUP_* @flags; exits on failure. */
static inline void t_ring(struct io_uring *ring, unsigned int entries,
			  unsigned int cq_entries, unsigned int flags)
{
	struct io_uring_params p = { .flags = flags };
	int ret;

	if (cq_entries) {
		p.flags |= IORING_SETUP_CQSIZE;
		p.cq_entries = cq_entries;
	}
	ret = io_uring_queue_init_params(entries, ring, &p);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		exit(ret == -ENOSYS ? T_SKIP : T_FAIL);
	}
}

/* An SQE, submitting what is queued if the ring is full. */
static inline struct io_uring_sqe *t_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe) {
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
	}
	if (!sqe) {
		fprintf(stderr, "no SQE\n");
		exit(T_FAIL);
	}
	return sqe;
}

/* The next CQE within @ms milliseconds: its res and user_data; -ETIME if none. */
static inline int t_cqe(struct io_uring *ring, unsigned int ms, int *res,
			uint64_t *user_data)
{
	struct __kernel_timespec ts = { .tv_sec = ms / 1000,
					.tv_nsec = (ms % 1000) * 1000000LL };
	struct io_uring_cqe *cqe;
	int ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);

	if (ret)
		return ret;
	*res = cqe->res;
	*user_data = cqe->user_data;
	io_uring_cqe_seen(ring, cqe);
	return 0;
}

/* The soft-RoCE address the VM harness sets up (tests/vm/guest.sh). */
static inline const char *t_peer(void)
{
	const char *p = getenv("XFERK_TEST_PEER");

	return p ? p : "10.99.0.1";
}

static inline void *t_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(T_FAIL);
	}
	return p;
}

/* A byte pattern that differs per seed and per position. */
static inline uint8_t t_pattern(uint64_t seed, uint64_t i)
{
	uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ULL ^ i;

	x ^= x >> 29;
	return (uint8_t)(x * 0xbf58476d1ce4e5b9ULL >> 56);
}

static inline void t_fill(uint8_t *p, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = t_pattern(seed, i);
}

/* Index of the first byte that is not the pattern, or -1. */
static inline long t_check(const uint8_t *p, size_t len, uint64_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != t_pattern(seed, i))
			return (long)i;
	return -1;
}

/* The number a (sysfs, debugfs) file holds, or -1. */
static inline long long t_read_number(const char *path)
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

/* A number from /sys/class/misc/xferk/@group/@name, or -1. */
static inline long long t_sysfs_number(const char *group, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/misc/xferk/%s/%s", group, name);
	return t_read_number(path);
}

/* A module counter from /sys/class/misc/xferk/stats. */
static inline long long t_stat(const char *name)
{
	return t_sysfs_number("stats", name);
}

/* An admission queue value from /sys/class/misc/xferk/queue. */
static inline long long t_queue_stat(const char *name)
{
	return t_sysfs_number("queue", name);
}

/* A module parameter, /sys/module/xferk/parameters/@name, or -1. */
static inline long long t_param(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/xferk/parameters/%s", name);
	return t_read_number(path);
}

/* Writes @val to a sysfs/debugfs file; 0 or -1 with errno. */
static inline int t_write_file(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fputs(val, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Sets a module parameter; 0 or -1 with errno (a value out of range: EINVAL). */
static inline int t_set_param(const char *name, long long val)
{
	char path[128], v[32];

	snprintf(path, sizeof(path), "/sys/module/xferk/parameters/%s", name);
	snprintf(v, sizeof(v), "%lld", val);
	return t_write_file(path, v);
}

/*
 * Turns the calling (root) process into an unprivileged user: uid and gid
 * 65534 (nobody), no capabilities, and with @group_access the group that
 * may open /dev/xferk ("xferk", which the harness creates as the udev rule
 * would). Exits T_FAIL if it cannot.
 */
static inline void t_become_user(int group_access)
{
	struct group *g = getgrnam("xferk");
	gid_t groups[1];

	if (group_access && !g) {
		fprintf(stderr, "no group xferk\n");
		exit(T_FAIL);
	}
	groups[0] = g ? g->gr_gid : 65534;
	if (setgroups(group_access ? 1 : 0, groups) || setgid(65534) ||
	    setuid(65534)) {
		perror("drop privileges");
		exit(T_FAIL);
	}
	prctl(PR_SET_DUMPABLE, 1);
}

/* Module parameters t_param_scoped() changed, with their values before. */
static struct {
	const char *name;
	long long val;
} t_saved_params[8];
static int t_nr_saved_params;

static inline void t_restore_params(void)
{
	while (t_nr_saved_params > 0) {
		t_nr_saved_params--;
		t_set_param(t_saved_params[t_nr_saved_params].name,
			    t_saved_params[t_nr_saved_params].val);
	}
}

/*
 * Sets a module parameter for the rest of the test: its value before is
 * put back when the test exits. 0, or -1 with errno.
 */
static inline int t_param_scoped(const char *name, long long val)
{
	long long old = t_param(name);

	if (old < 0 || t_nr_saved_params == 8) {
		errno = ENOENT;
		return -1;
	}
	if (!t_nr_saved_params && atexit(t_restore_params))
		return -1;
	t_saved_params[t_nr_saved_params].name = name;
	t_saved_params[t_nr_saved_params++].val = old;
	return t_set_param(name, val);
}

/* A token from a file holding its hex form (one line); 0 or -errno. */
static inline int t_read_token(const char *path, struct xferk_token *tok)
{
	char hex[XFERK_TOKEN_HEX_LEN + 2] = "";
	FILE *f = fopen(path, "r");
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(hex, sizeof(hex), f))
		ret = -EIO;
	fclose(f);
	hex[strcspn(hex, "\n")] = '\0';
	return ret ?: xferk_token_parse(hex, tok);
}

/* Lines of <debugfs>/xferk/peers containing every one of the words. */
static inline int t_peers_matching(const char *w1, const char *w2)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/sys/kernel/debug/xferk/peers", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += (!w1 || strstr(line, w1)) && (!w2 || strstr(line, w2));
	fclose(f);
	return n;
}

/* Runs @cmd with sh: its exit status, or -1. */
static inline int t_sh(const char *cmd)
{
	int ret = system(cmd);

	return WIFEXITED(ret) ? WEXITSTATUS(ret) : -1;
}

/*
 * Loads xferk ($XFERK_MODDIR/kmod/xferk.ko) with @params, then gives the
 * device to its group. 0, or the shell's status.
 */
static inline int t_load_module(const char *params)
{
	const char *dir = getenv("XFERK_MODDIR");
	char cmd[1024];

	if (!dir)
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "insmod %s/kmod/xferk.ko %s && chgrp xferk /dev/xferk", dir,
		 params);
	return t_sh(cmd);
}

/* Does a (debugfs) file contain @needle? */
static inline int t_file_has(const char *path, const char *needle)
{
	char line[512];
	int found = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/*
 * The usual loopback setup: connect to t_peer(), register @src as a local
 * source and destination and @dst as a remote-readable and -writable
 * range, export all of @dst and import it. 0 or a negative errno.
 */
static inline int t_setup(struct xferk *x, void *src, uint64_t src_len,
			  void *dst, uint64_t dst_len, uint64_t *conn,
			  uint64_t *src_mr, uint64_t *dst_mr, uint64_t *remote)
{
	const uint32_t rw = XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE;
	struct xferk_token tok;
	uint64_t exp;
	int ret;

	ret = xferk_connect(x, t_peer(), 0, t_connect_ms(), conn);
	if (!ret)
		ret = xferk_mr_reg(x, src, src_len, XFERK_ACCESS_LOCAL_SRC |
				   XFERK_ACCESS_LOCAL_DST, src_mr);
	if (!ret)
		ret = xferk_mr_reg(x, dst, dst_len, rw, dst_mr);
	if (!ret)
		ret = xferk_export(x, *conn, *dst_mr, 0, dst_len, rw, &tok, &exp);
	if (!ret)
		ret = xferk_import(x, *conn, &tok, remote);
	if (ret)
		fprintf(stderr, "setup: %s\n", strerror(-ret));
	return ret;
}

/* The buffers and handles of a t_setup() loopback transfer. */
struct t_loop {
	struct xferk *x;
	uint8_t *src, *dst;
	size_t src_len, dst_len;
	uint64_t conn, src_mr, dst_mr, remote;
};

/* Opens /dev/xferk and runs t_setup() on @l's buffers; 0 or an error. */
static inline int t_loop_connect(struct t_loop *l)
{
	int ret;

	l->x = NULL;
	ret = xferk_open(&l->x);
	if (!ret)
		ret = t_setup(l->x, l->src, l->src_len, l->dst, l->dst_len,
			      &l->conn, &l->src_mr, &l->dst_mr, &l->remote);
	return ret;
}

/*
 * Fresh buffers and t_loop_connect(): exits T_SKIP without /dev/xferk,
 * T_FAIL if the setup fails.
 */
static inline void t_loop_open(struct t_loop *l, size_t src_len, size_t dst_len)
{
	int ret;

	l->src = t_map(src_len);
	l->dst = t_map(dst_len);
	l->src_len = src_len;
	l->dst_len = dst_len;
	ret = t_loop_connect(l);
	if (ret)
		exit(l->x ? T_FAIL : T_SKIP);
}

/* Submits and waits; returns the final state, or a negative errno. */
static inline int t_run(struct xferk *x, const struct xferk_frag *f,
			uint32_t n, struct xferk_op_snapshot *snap)
{
	uint64_t op;
	int ret = xferk_submit(x, f, n, XFERK_DEADLINE_NONE, 0, &op);

	if (ret)
		return ret;
	ret = xferk_wait(x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL, snap);
	xferk_release(x, op);
	return ret ? ret : (int)snap->state;
}

/*
 * Time. The debug kernel (KASAN, lockdep) runs everything 3-10 times
 * slower than the stock one, and soft-RoCE about 28 times. A bound that
 * only guards against a hang is scaled with t_scaled_ms(); a test whose
 * timing depends on RDMA picks its own values with t_debug_kernel().
 */
#define T_DEBUG_SLOWDOWN	4

/* @ms on the stock kernel, T_DEBUG_SLOWDOWN times that on the debug one. */
static inline unsigned int t_scaled_ms(unsigned int ms)
{
	return t_debug_kernel() ? ms * T_DEBUG_SLOWDOWN : ms;
}

/* CLOCK_MONOTONIC in milliseconds (the clock of the op deadlines). */
static inline uint64_t t_now_ms(void)
{
	return xferk_now_ns() / 1000000;
}

/*
 * A fresh open file with t_setup() done, tried again every 200 ms for up
 * to 20 s (scaled): another process's drain may take the shared
 * connection down meanwhile. *@xp is NULL on failure.
 */
static inline int t_open_setup_retry(struct xferk **xp, void *src,
				     uint64_t src_len, void *dst,
				     uint64_t dst_len, uint64_t *conn,
				     uint64_t *src_mr, uint64_t *dst_mr,
				     uint64_t *remote)
{
	uint64_t until = t_now_ms() + t_scaled_ms(20000);
	int ret;

	*xp = NULL;
	for (;;) {
		ret = xferk_open(xp);
		if (!ret)
			ret = t_setup(*xp, src, src_len, dst, dst_len, conn,
				      src_mr, dst_mr, remote);
		if (!ret)
			return 0;
		if (*xp)
			xferk_close(*xp);
		*xp = NULL;
		if (t_now_ms() > until)
			return ret;
		usleep(200000);
	}
}

/*
 * Polls stats/@name every 50 ms until it reads @want, for at most @ms
 * milliseconds; returns the value last read. For counters that follow an
 * event with a delay: a waiter woken for an op's physical completion can
 * return before the op's last reference goes (ops_live, pinned pages).
 */
static inline long long t_stat_wait(const char *name, long long want,
				    unsigned int ms)
{
	uint64_t until = t_now_ms() + ms;
	long long v;

	while ((v = t_stat(name)) != want && t_now_ms() < until)
		usleep(50000);
	return v;
}

/* The host-wide counters a test compares at its end with its start. */
struct t_counters {
	long long ops_live, pinned_pages, quarantined_pages, uring_parked;
};

static inline void t_read_counters(struct t_counters *c)
{
	c->ops_live = t_stat("ops_live");
	c->pinned_pages = t_stat("pinned_pages");
	c->quarantined_pages = t_stat("quarantined_pages");
	c->uring_parked = t_stat("uring_parked");
}

/*
 * Waits until what earlier tests left behind is gone: their ops drained
 * in the background after their files closed, connections torn down. That
 * is: no op live on the host, no command parked, and the counters the
 * same over two reads 200 ms apart; at most 30 s (60 s on the debug
 * kernel). @c (may be NULL) gets the counters then: the baseline of the
 * caller's "back to where it was" checks. Does not fail the test: it says
 * so and returns -1 if the counters did not settle (the caller's own
 * checks then decide).
 */
static inline int t_settle(struct t_counters *c)
{
	uint64_t until = t_now_ms() + (t_debug_kernel() ? 60000 : 30000);
	struct t_counters a, b;
	int settled;

	t_read_counters(&a);
	for (;;) {
		usleep(200000);
		t_read_counters(&b);
		settled = !b.ops_live && !b.uring_parked &&
			  !memcmp(&a, &b, sizeof(a));
		if (settled || t_now_ms() > until)
			break;
		a = b;
	}
	if (!settled)
		fprintf(stderr, "note: counters not settled: ops_live %lld, uring_parked %lld, pinned_pages %lld\n",
			b.ops_live, b.uring_parked, b.pinned_pages);
	if (c)
		*c = b;
	return settled ? 0 : -1;
}

/*
 * The start of a storm of killed workers: exits T_SKIP without
 * /dev/xferk; waits for what earlier tests left (t_settle(@base)); maps a
 * page the workers share with the parent (exits T_FAIL without one); sets
 * passive_idle_ms to 100 ms where the parameter exists, its value before
 * in *@idle (the caller puts it back), so that loopback pairs come and go;
 * seeds rand().
 */
static inline void *t_storm_begin(struct t_counters *base, long long *idle)
{
	void *shared;

	if (access("/dev/xferk", F_OK))
		exit(T_SKIP);
	t_settle(base);
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		exit(T_FAIL);
	*idle = t_param("passive_idle_ms");
	if (*idle > 0)
		t_set_param("passive_idle_ms", 100);
	srand(getpid());
	return shared;
}

/*
 * Every op drained and every page unpinned: ops_live and pinned_pages
 * back at @base, each within 60 s (scaled). 1 if so; 0 and why, else.
 */
static inline int t_drained(const struct t_counters *base)
{
	int ok = t_stat_wait("ops_live", base->ops_live,
			     t_scaled_ms(60000)) == base->ops_live &&
		 t_stat_wait("pinned_pages", base->pinned_pages,
			     t_scaled_ms(60000)) == base->pinned_pages;

	if (!ok)
		fprintf(stderr, "ops_live %lld (was %lld), pinned_pages %lld (was %lld)\n",
			t_stat("ops_live"), base->ops_live,
			t_stat("pinned_pages"), base->pinned_pages);
	return ok;
}

/*
 * Fault knobs (Documentation/fault-injection.md): each means "the next N"
 * of its events anywhere on the host. Arm one only once t_quiet() said no
 * other op is live, check with t_fault_taken() that it was used before
 * relying on it, and put every knob back to 0 afterwards (t_fault_clear(),
 * also from atexit).
 */
#define T_FAULT_DIR	"/sys/kernel/debug/xferk/fault/"

/* Sets knob @name to @val; 0 or -1 with errno. */
static inline int t_fault_set(const char *name, long long val)
{
	char path[128], v[32];

	snprintf(path, sizeof(path), T_FAULT_DIR "%s", name);
	snprintf(v, sizeof(v), "%lld", val);
	return t_write_file(path, v);
}

/*
 * Swallows the next @n completions (the op can then end only by its QP's
 * flush or teardown). A swallowed completion stands for one that never
 * comes, so the module's detection of lost completions, which replaces the
 * path at once, is off for the rest of the test. 0 or -1 with errno.
 */
static inline int t_swallow(long long n)
{
	if (t_param("lost_completion_ms") != 0 &&
	    t_param_scoped("lost_completion_ms", 0))
		return -1;
	return t_fault_set("swallow_completions", n);
}

/* Knob @name's value, or -1. */
static inline long long t_fault_get(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), T_FAULT_DIR "%s", name);
	return t_read_number(path);
}

/* Waits (at most @ms) until knob @name reads 0: all of it was used. 0 or -1. */
static inline int t_fault_taken(const char *name, unsigned int ms)
{
	uint64_t until = t_now_ms() + ms;
	long long v;

	while ((v = t_fault_get(name)) > 0 && t_now_ms() < until)
		usleep(10000);
	return v == 0 ? 0 : -1;
}

/* Every counting knob back to 0 (delay_ms is a value, not a count). */
static inline void t_fault_clear(void)
{
	static const char *const knobs[] = {
		"swallow_completions", "delay_completions", "fail_post",
		"fail_qp", "qp_error", "ignore_revokes", "fail_destroy",
		"ignore_disconnects", "refuse_chain", "drop_published",
		"delay_registrations",
	};
	unsigned int i;

	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		t_fault_set(knobs[i], 0);
}

/*
 * Ends every completion delay_completions holds now (fault knob
 * release_delays): a test whose checks of an op in flight are done need
 * not wait out delay_ms, which can then be a generous margin. 0 or -1.
 */
static inline int t_release_held(void)
{
	return t_fault_set("release_delays", 1);
}

/*
 * Waits until no op is live on the host (at most 30 s, 60 s on the debug
 * kernel): a fault knob armed next can then be used only by the caller's
 * own ops (every completion and post belongs to a live op), provided the
 * caller has none live either. 0, or -1 (with a message) if ops stayed.
 */
static inline int t_quiet(void)
{
	unsigned int ms = t_debug_kernel() ? 60000 : 30000;

	if (!t_stat_wait("ops_live", 0, ms))
		return 0;
	fprintf(stderr, "ops_live %lld: other ops could use a fault knob\n",
		t_stat("ops_live"));
	return -1;
}

/*
 * Opens @l (1 MiB each way) and submits a 4 KiB WRITE whose one completion
 * is swallowed (t_swallow()): it is in flight for good, until its QP is
 * flushed or destroyed. flush_timeout_ms is 3 s (5 s on the debug
 * kernel): a teardown destroys the QP that long after the path died.
 * Exits T_SKIP without /dev/xferk. 0 with the op's handle in *@op, or -1
 * (with a message).
 */
static inline int t_swallowed_write(struct t_loop *l, uint64_t *op)
{
	struct xferk_frag f;

	t_loop_open(l, 1 << 20, 1 << 20);
	if (t_param_scoped("flush_timeout_ms", t_debug_kernel() ? 5000 : 3000) ||
	    t_quiet() || t_swallow(1)) {
		fprintf(stderr, "swallowed write: setup\n");
		return -1;
	}
	f = (struct xferk_frag) { .mr = l->src_mr, .len = 4096,
				  .remote = l->remote, .opcode = XFERK_OP_WRITE };
	if (xferk_submit(l->x, &f, 1, XFERK_DEADLINE_NONE, 0, op) ||
	    t_fault_taken("swallow_completions", t_scaled_ms(10000))) {
		fprintf(stderr, "swallowed write: not submitted or not swallowed\n");
		return -1;
	}
	return 0;
}

/*
 * Submits @n fragments as an op whose first completion is held back
 * @hold_ms (fault knobs delay_completions and delay_ms, armed while no
 * other op is live, so the op uses them): once this returns 0 the op is
 * surely in flight for that long. The caller restores delay_ms. 0, or -1
 * (with a message).
 */
static inline int t_submit_held(struct xferk *x, const struct xferk_frag *f,
				uint32_t n, unsigned int hold_ms, uint64_t *op)
{
	int ret;

	if (t_quiet() || t_fault_set("delay_ms", hold_ms) ||
	    t_fault_set("delay_completions", 1))
		return -1;
	ret = xferk_submit(x, f, n, XFERK_DEADLINE_NONE, 0, op);
	if (ret) {
		fprintf(stderr, "submit: %s\n", strerror(-ret));
		return -1;
	}
	if (t_fault_taken("delay_completions", t_scaled_ms(30000))) {
		fprintf(stderr, "no completion of the op was held\n");
		return -1;
	}
	return 0;
}

/*
 * Does the debugfs peers table list an RDMA session end to the peer
 * (either side: on loopback the accepting end's peer is this host too)
 * that is not down (nor closed: being torn down)?
 */
static inline int t_peer_session_live(void)
{
	char line[512], transport[16], state[32], peer[80];
	size_t n = strlen(t_peer());
	FILE *f = fopen("/sys/kernel/debug/xferk/peers", "r");
	int live = 0;

	if (!f)
		return 1;
	while (!live && fgets(line, sizeof(line), f))
		live = sscanf(line, "%*u %15s %*s %31s %79s", transport, state,
			      peer) == 3 &&
		       !strcmp(transport, "rdma") && strcmp(state, "down") &&
		       strcmp(state, "closed") &&
		       !strncmp(peer, t_peer(), n) && peer[n] == ':';
	fclose(f);
	return live;
}

/*
 * Ends the host's sessions to the peer (reconnect_ms 0 and a write on a
 * QP the fault knob kills, for each session a CONNECT shares, until no end
 * to the peer is left but down ones): the next CONNECT makes a new one,
 * with a new handshake. 0 when they are down, both ends of each (on
 * loopback the accepting end goes down after the initiating one). A
 * session that goes down under its setup (EXPORT: ENOTCONN, or ECONNRESET
 * when its registration was flushed; a path's death on its way when
 * CONNECT returned it) is one ended too. Restores every module parameter
 * t_param_scoped() changed.
 */
static inline int t_end_session(void)
{
	uint64_t until = t_now_ms() + t_scaled_ms(20000), settled;
	struct xferk_conn_info info;
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	struct t_loop l;
	int ret, rounds = 0;

	if (t_param_scoped("reconnect_ms", 0) || t_quiet())
		return -1;
	do {
		l = (struct t_loop) { .src = t_map(4096), .dst = t_map(4096),
				      .src_len = 4096, .dst_len = 4096 };
		ret = t_loop_connect(&l);
		if (ret && ret != -ENOTCONN && ret != -ECONNRESET) {
			if (l.x)
				xferk_close(l.x);
			break;
		}
		if (!ret) {
			f = (struct xferk_frag) { .mr = l.src_mr, .len = 4096,
						  .remote = l.remote,
						  .opcode = XFERK_OP_WRITE };
			t_fault_set("qp_error", 1);
			t_run(l.x, &f, 1, &s);
			t_fault_set("qp_error", 0);
		}
		do {
			ret = xferk_conn_query(l.x, l.conn, &info);
		} while (!ret && info.state != XFERK_CONN_STATE_DOWN &&
			 t_now_ms() < until && !usleep(20000));
		xferk_close(l.x);
		if (ret || info.state != XFERK_CONN_STATE_DOWN)
			break;
		/* Its accepting end follows; another session, the next round. */
		settled = t_now_ms() + t_scaled_ms(2000);
		while (t_peer_session_live() && t_now_ms() < settled)
			usleep(20000);
	} while (t_peer_session_live() && ++rounds < 4 && t_now_ms() < until);
	t_restore_params();
	return !ret && info.state == XFERK_CONN_STATE_DOWN &&
	       !t_peer_session_live() ? 0 : -1;
}
