// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_uapi: a seeded, bounded fuzzer of the whole uAPI, ioctl and io_uring.
 *
 *   fuzz_uapi [-s SEED] [-n ITERATIONS] [-t SECONDS] [-v] [-R | -U]
 *
 * Every command (XFERK_IOC_INFO .. XFERK_IOC_EVENTS, unknown numbers, wrong
 * directions and types) goes through ioctl() and through IORING_OP_URING_CMD
 * in rings with and without IORING_SETUP_SQE128 and _CQE32, with argument
 * structs of every size class (below the first version, an older caller's,
 * exact, a newer caller's with a zero and a non-zero tail, at and above
 * XFERK_ARG_MAX_SIZE), random flags and reserved fields, handles (valid, of
 * the wrong kind, stale, bit-flipped, 0, another file's, a closed file's),
 * fragment arrays (0, 1, random, XFERK_MAX_FRAGS and more elements, every
 * element size, huge lengths, offsets near 2^64, overlaps), bad pointers
 * (NULL, unmapped, PROT_NONE, read-only for outputs, kernel and
 * non-canonical addresses, structs running into a guard page), real and
 * mutated tokens, deadlines in the past, now, soon and never.
 *
 * Mixed in are real operations, so the fuzzed calls meet deep states:
 * regions over real buffers, null-peer and soft-RoCE loopback connections
 * (t_peer() and 10.99.0.2), exports and imports, small ops that run, waits,
 * queries, cancels with short drain deadlines, releases, deregistration of
 * regions under running ops, request groups that ops join and that are
 * aborted, waited for and queried, notifications to the file's own exports
 * and the events they become, files and rings closed with work in flight,
 * an export from another process (EPERM), signals during calls. A child
 * that dropped its privileges (t_become_user(1)) fuzzes alongside for part
 * of the budget.
 *
 * The oracle, for every call: 0 or an errno the table below documents for
 * the command (never EAGAIN or a kernel-internal errno through io_uring);
 * a failed call writes nothing back and a successful one nothing beyond
 * min(size, sizeof); every snapshot satisfies the lifecycle's invariants
 * and agrees with what was submitted and with what was seen of the op
 * before; WAIT and CANCEL return what their snapshot says; every group
 * snapshot sums its ops consistently and names its group, and GROUP_WAIT
 * and GROUP_ABORT return 0 only when it shows what they promise; events
 * are well formed and written nowhere beyond what EVENTS reports; every
 * SQE gets exactly one CQE within its bound (a parked SUBMIT: a settled
 * state or -ECANCELED, and its handle in CQE32's big_cqe[0]); no handle is
 * ever handed out twice; no call takes longer than WATCHDOG_SECS. At the end,
 * with everything closed, the module's counters return to their values at
 * the start. The unprivileged child must get EPERM for a null peer and for
 * the internal priority class.
 *
 * Defaults (make check): the seed comes from the clock and is printed
 * first; the iteration budget is sized for about 30 s on the stock kernel
 * and about 60 s on the debug kernel, and -t bounds the time as well:
 * whichever ends first stops the run. On a failure the program prints the
 * last calls and the command line that replays it (-R: root only, -U: the
 * unprivileged part only, with the whole budget). -v prints every call.
 *
 * Module parameters and fault knobs are only read, never changed.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

#include "test.h"
#include "vgem.h"

#define US		1000ULL
#define MS		1000000ULL
#define SEC		1000000000ULL
#define PG		4096UL

/* Budget. */
#define DEF_ITERS	15000UL		/* stock kernel: about 9 s */
#define DEF_SECS	30U
#define DEBUG_ITERS	6000UL		/* debug kernel: about 10 s */
#define DEBUG_SECS	60U
#define USER_ITER_DIV	4		/* the unprivileged child: a quarter */
#define USER_SECS_DIV	3		/* and a third of the time */
#define WATCHDOG_SECS	120U		/* longest any one call may take */
#define SETTLE_SECS	60U		/* counters back at the end within */

/* Objects. */
#define NFILES		3
#define NRINGS		4
#define RING_SQ		32
#define RING_CQ		256
#define RING_INFLIGHT	24
#define MAX_PENDING	(NRINGS * RING_INFLIGHT)
#define NOBJ		160
#define NDEAD		48
#define NFOREIGN	32
#define NTOKENS		32
#define NCHAINS		6
#define NSEEN		32768
#define MAX_SLOTS	1024
#define TRACE_N		48
#define MAX_REPORTED	25

/* Memory. */
#define REGION_AREA	(256 * 1024UL)	/* every region lives here: < 256 pages */
#define ARG_BUF		(XFERK_ARG_MAX_SIZE + 128)
#define FRAG_BYTES	(66 * PG)	/* > (XFERK_MAX_FRAGS + 2) * 64 */

#define FRAG_SIZE	((uint32_t)sizeof(struct xferk_frag))
#define RW_REMOTE	(XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE)
#define RW_LOCAL	(XFERK_ACCESS_LOCAL_SRC | XFERK_ACCESS_LOCAL_DST)
#define KTIME_MAX_NS	((uint64_t)INT64_MAX)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* The run                                                             */
/* ------------------------------------------------------------------ */

static struct {
	uint64_t seed;
	unsigned long iters;
	unsigned int secs;
	bool verbose;
	char only;		/* 'R' root only, 'U' unprivileged only */
} opt;

static const char *prog = "fuzz_uapi";
static const char *role = "root";
static bool unpriv;		/* this process dropped its privileges */
static bool debug_kernel;
static unsigned long my_iters;
static unsigned int my_secs;
static unsigned long iter;
static uint64_t t_start, t_hard_stop;
static unsigned int nfail;
static unsigned int listen_port = 18515;
static uint64_t flush_timeout_ns = 5 * SEC;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	uint64_t until = now_ns() + ns;
	struct timespec ts = { .tv_sec = (time_t)(until / SEC),
			       .tv_nsec = (long)(until % SEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* splitmix64: the one source of randomness, seeded from -s. */
static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t rnd32(void)
{
	return (uint32_t)rnd();
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* lo..hi inclusive. */
static uint64_t range(uint64_t lo, uint64_t hi)
{
	return hi <= lo ? lo : lo + below(hi - lo + 1);
}

static bool chance(unsigned int pct)
{
	return below(100) < pct;
}

/* ---- errno names ---- */

static const struct {
	int e;
	const char *name;
} errnames[] = {
#define E(x) { x, #x }
	E(EPERM), E(ENOENT), E(ESRCH), E(EINTR), E(EIO), E(ENXIO), E(E2BIG),
	E(EBADF), E(EAGAIN), E(ENOMEM), E(EACCES), E(EFAULT), E(EBUSY),
	E(EEXIST), E(EXDEV), E(ENODEV), E(EINVAL), E(EMFILE), E(ENOTTY),
	E(ENOSPC), E(ERANGE), E(ENOSYS), E(EPROTO), E(EOVERFLOW),
	E(EOPNOTSUPP), E(EAFNOSUPPORT), E(EADDRNOTAVAIL), E(ENETUNREACH),
	E(ENOTCONN), E(ESHUTDOWN), E(ETIMEDOUT), E(ECONNREFUSED),
	E(ECONNRESET), E(EHOSTUNREACH), E(EPROTONOSUPPORT), E(ESTALE),
	E(EDQUOT), E(ECANCELED), E(EREMOTEIO), E(ETIME),
#undef E
};

static const char *errname(int e)
{
	static char buf[4][16];
	static unsigned int n;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(errnames); i++)
		if (errnames[i].e == e)
			return errnames[i].name;
	n = (n + 1) % 4;
	snprintf(buf[n], sizeof(buf[n]), "errno %d", e);
	return buf[n];
}

static const char *state_name(int s)
{
	return s >= 0 && s < XFERK_STATE_COUNT ? xferk_state_name((uint32_t)s) : "?";
}

/* A result as text: 0, an errno name, or (parked SUBMIT) a state. */
static const char *res_name(int res, bool parked)
{
	if (parked && res >= 0)
		return state_name(res);
	if (res == 0)
		return "0";
	if (res < 0)
		return errname(-res);
	return "positive";
}

/* ---- trace, failures, reproduction ---- */

static char trace_buf[TRACE_N][240];
static unsigned int trace_pos;

static void trace(const char *fmt, ...)
{
	char *line = trace_buf[trace_pos++ % TRACE_N];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(trace_buf[0]), "%6lu ", iter);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(trace_buf[0]) - (size_t)n, fmt, ap);
	va_end(ap);
	if (opt.verbose)
		printf("[%s] %s\n", role, line);
}

static void print_trace(void)
{
	unsigned int i, n = trace_pos < TRACE_N ? trace_pos : TRACE_N;

	fprintf(stderr, "[%s] the last %u calls:\n", role, n);
	for (i = trace_pos - n; i != trace_pos; i++)
		fprintf(stderr, "  %s\n", trace_buf[i % TRACE_N]);
}

static void print_repro(FILE *f)
{
	fprintf(f, "[%s] reproduce: %s -s %#" PRIx64 " -n %lu -t %u %s\n", role,
		prog, opt.seed, iter ? iter : 1, my_secs, unpriv ? "-U" : "-R");
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	nfail++;
	t_failures++;
	if (nfail > MAX_REPORTED) {
		if (nfail == MAX_REPORTED + 1)
			fprintf(stderr, "FAIL [%s]: more failures, not shown\n",
				role);
		return;
	}
	fprintf(stderr, "FAIL [%s] iteration %lu: ", role, iter);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (nfail == 1) {
		print_trace();
		print_repro(stderr);
	}
}

/* ---- watchdog: no call takes longer than WATCHDOG_SECS ---- */

static struct {
	uint64_t since;		/* 0: not inside a call */
	char what[200];
} wd;

static void wd_begin(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(wd.what, sizeof(wd.what), fmt, ap);
	va_end(ap);
	__atomic_store_n(&wd.since, now_ns(), __ATOMIC_RELEASE);
}

static void wd_end(void)
{
	__atomic_store_n(&wd.since, 0, __ATOMIC_RELEASE);
}

static void *watchdog(void *arg)
{
	for (;;) {
		uint64_t since, now;

		sleep(1);
		since = __atomic_load_n(&wd.since, __ATOMIC_ACQUIRE);
		now = now_ns();
		if (since && now - since > WATCHDOG_SECS * SEC) {
			fprintf(stderr, "FAIL [%s] watchdog: %s has not returned after %u s\n",
				role, wd.what, WATCHDOG_SECS);
			print_trace();
			print_repro(stderr);
			_exit(T_FAIL);
		}
		if (now > t_hard_stop) {
			fprintf(stderr, "FAIL [%s]: the run did not end in time (in: %s)\n",
				role, since ? wd.what : "no call");
			print_trace();
			print_repro(stderr);
			_exit(T_FAIL);
		}
	}
	return NULL;
}

static void watchdog_start(void)
{
	sigset_t all, old;
	pthread_t t;

	/* Signals stay with the main thread: SIGALRM interrupts its calls. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, NULL, watchdog, NULL)) {
		perror("pthread_create");
		exit(T_FAIL);
	}
	pthread_detach(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- signals during calls: EINTR and restarts ---- */

static volatile sig_atomic_t nsignals;
static bool alarm_armed;

static void on_alarm(int sig)
{
	nsignals++;
}

/* Sometimes a SIGALRM arrives during the next call, with or without SA_RESTART. */
static void maybe_arm_signal(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	if (!chance(6))
		return;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = chance(50) ? SA_RESTART : 0;
	sigaction(SIGALRM, &sa, NULL);
	it.it_value.tv_usec = (suseconds_t)range(100, 20000);
	setitimer(ITIMER_REAL, &it, NULL);
	alarm_armed = true;
}

static void disarm_signal(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	if (!alarm_armed)
		return;
	setitimer(ITIMER_REAL, &it, NULL);
	alarm_armed = false;
}

/* ------------------------------------------------------------------ */
/* The documented errnos (the contract being documented now)           */
/* ------------------------------------------------------------------ */

/*
 *   every command (argument rules)   EFAULT, EINVAL, E2BIG
 *   an unknown command               ENOTTY (and nothing else)
 *   below: each command's own; through io_uring the same, never EAGAIN
 *   or a kernel-internal errno (>= 512); a parked SUBMIT's CQE carries a
 *   settled state (SUCCEEDED, FAILED, TIMED_OUT, DRAINED, QUARANTINED) or
 *   -ECANCELED.
 */
static const int errs_none[] = { 0 };
static const int errs_mr_reg[] = { EOVERFLOW, ENOMEM, EOPNOTSUPP, EINTR, EDQUOT,
				   EMFILE, EBADF, ERANGE, EACCES, 0 };
static const int errs_drop[] = { EBADF, ESTALE, 0 };
static const int errs_connect[] = { EAFNOSUPPORT, EPERM, EMFILE, ENOMEM,
				    EHOSTUNREACH, ECONNREFUSED, ETIMEDOUT,
				    EPROTONOSUPPORT, EPROTO, ECONNRESET, ENODEV,
				    EIO, EINTR, 0 };
static const int errs_export[] = { EBADF, ESTALE, ERANGE, EACCES, EPERM, EMFILE,
				   ENOMEM, ENOTCONN, ECONNRESET, EIO, 0 };
static const int errs_window[] = { EBADF, ESTALE, ERANGE, EACCES, EPERM, EMFILE,
				   ENOMEM, ENOTCONN, ECONNRESET, EIO,
				   EOPNOTSUPP, 0 };
static const int errs_import[] = { EBADF, ESTALE, EACCES, EMFILE, ENOMEM, EEXIST, 0 };
static const int errs_submit[] = { EPERM, ETIMEDOUT, EMFILE, ENOMEM, EBADF,
				   ESTALE, ERANGE, EACCES, EBUSY, EXDEV,
				   ESHUTDOWN, EOPNOTSUPP, 0 };
static const int errs_wait[] = { EBADF, ESTALE, ETIMEDOUT, EINTR, 0 };
static const int errs_query[] = { EBADF, ESTALE, 0 };
static const int errs_cancel[] = { EBADF, ESTALE, ETIMEDOUT, EINTR, 0 };
static const int errs_group_create[] = { EMFILE, ENOMEM, 0 };
static const int errs_group_abort[] = { EBADF, ESTALE, ETIMEDOUT, EINTR, ENOMEM, 0 };
static const int errs_notify[] = { EBADF, ESTALE, EOPNOTSUPP, ENOTCONN, EBUSY, ENOMEM, 0 };
static const int errs_events[] = { ETIMEDOUT, EINTR, ENOMEM, 0 };

/* ------------------------------------------------------------------ */
/* Objects: what each open file holds, as far as this program knows     */
/* ------------------------------------------------------------------ */

enum kind { K_NONE, K_REGION, K_CONN, K_EXPORT, K_REMOTE, K_OP, K_GROUP, K_COUNT };

static const char *const kind_name[K_COUNT] = {
	"none", "region", "conn", "export", "remote", "op", "group",
};

/* Live objects of each kind per file before the oldest are dropped. */
static const unsigned int kind_cap[K_COUNT] = { 0, 12, 8, 12, 12, 40, 8 };

/* What is known of an op, and facts about it with the time they were learnt. */
struct op_rec {
	uint64_t user_data, total_bytes;
	uint32_t nr_frags;
	bool ring;		/* submitted through io_uring (parked) */
	bool auto_release;	/* the kernel may drop the handle */
	bool bg_cancel;		/* a background or concurrent cancel may run */
	uint64_t park_end;	/* ring: deadline + drain budget */
	uint64_t chain;		/* id of the chain it runs on, 0 if none */
	uint64_t group;		/* the group it named at submit, 0 if none */
	uint64_t src_mr;	/* its local region (real ops) */
	uint64_t phys_at;	/* known physically complete since */
	uint64_t final_at;	/* known final (final_state) since */
	uint32_t final_state;
	uint64_t err_at;	/* first_error known since */
	int32_t first_error;
	bool have_last;
	struct xferk_op_snapshot last;	/* the last ioctl snapshot */
};

/* What is known of a group. */
struct group_rec {
	uint64_t gen, tag;	/* as GROUP_CREATE returned and was given */
	uint64_t aborted_at;	/* known aborted (closed) since */
	bool ring_joined;	/* a ring SUBMIT named it: ops it cannot see */
};

struct obj {
	bool live;
	uint8_t kind;
	uint8_t drops_pending;	/* ring commands in flight that may drop it */
	uint64_t h;
	uint64_t seq;
	/* region */
	uint64_t addr, len;
	uint32_t access;
	/* conn; for exports and remotes: the class of their connection */
	bool null, rdma;
	uint64_t delay;
	/* export: conn, mr; remote: conn */
	uint64_t conn, mr;
	uint8_t token[XFERK_TOKEN_SIZE];
	struct op_rec op;
	struct group_rec grp;
};

/* A connection, an export of the file's destination region on it, its import. */
struct chain {
	bool used, healthy, rdma;
	uint64_t id;
	uint64_t conn, exp, remote, mr;
};

struct fz_file {
	int fd;
	unsigned int gen;	/* incarnation: bumped on every reopen */
	struct obj obj[NOBJ];
	uint64_t dead[NDEAD];	/* stale handles */
	unsigned int ndead;
	uint64_t *seen;		/* every handle this incarnation handed out */
	unsigned int nseen;
	struct chain chain[NCHAINS];
	uint64_t src_mr, dst_mr;
};

static struct fz_file files[NFILES];
static uint64_t foreign[NFOREIGN];	/* handles of closed files */
static unsigned int nforeign;
static uint64_t obj_seq, chain_seq;

/* Tokens seen, live or not, with what their export covered. */
static struct tok {
	bool used;
	uint8_t b[XFERK_TOKEN_SIZE];
	uint64_t len;
	uint32_t access;
	bool null, rdma;
	int fi;
	unsigned int gen;
} toks[NTOKENS];
static unsigned int ntoks;

/* ------------------------------------------------------------------ */
/* Memory: regions' area, read-only and PROT_NONE pages, argument slots */
/* ------------------------------------------------------------------ */

static uint8_t *area;		/* REGION_AREA between two PROT_NONE pages */
static uint8_t *ro_page;	/* PROT_READ */
static uint8_t *none_page;	/* PROT_NONE */
/* vgem dma-bufs (-1 without vgem): read-write, read-only; their size */
static int dmabuf_fd = -1, dmabuf_ro_fd = -1;
static size_t dmabuf_size;

/*
 * Where one call's argument struct and fragment array live until the call
 * is over (its CQE, for io_uring): two pages and a guard page, and
 * FRAG_BYTES and a guard page. A slot of a ring closed with the call in
 * flight is retired until the call's due time: the kernel may still
 * read or write it until then.
 */
struct slot {
	uint8_t *arg;
	uint8_t *frags;
	bool busy, retired, ro;
	uint64_t retired_until;
};

static struct slot slots[MAX_SLOTS];
static unsigned int nslots;

static void *map_or_die(size_t len, int prot, int flags)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags,
		       -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(T_FAIL);
	}
	return p;
}

static void map_memory(void)
{
	uint8_t *p = map_or_die(REGION_AREA + 2 * PG, PROT_READ | PROT_WRITE, 0);

	mprotect(p, PG, PROT_NONE);
	mprotect(p + PG + REGION_AREA, PG, PROT_NONE);
	area = p + PG;
	t_fill(area, REGION_AREA, opt.seed);
	ro_page = map_or_die(PG, PROT_READ | PROT_WRITE, 0);
	memset(ro_page, 0xa5, PG);
	mprotect(ro_page, PG, PROT_READ);
	none_page = map_or_die(PG, PROT_NONE, 0);
}

/* Two small vgem dma-bufs for MR_REG with XFERK_MR_DMABUF, if vgem is there. */
static void make_dmabufs(void)
{
	struct t_vgem_buf rw, ro;
	int dev = t_vgem_open();

	if (dev < 0)
		return;
	if (!t_vgem_create(dev, 4 * PG, 0, &rw)) {
		dmabuf_fd = rw.fd;
		dmabuf_size = rw.size;
	}
	if (!t_vgem_create(dev, 4 * PG, 1, &ro))
		dmabuf_ro_fd = ro.fd;
	close(dev);
}

static void slot_put(struct slot *s);

static struct slot *slot_get(void)
{
	uint64_t now = now_ns();
	struct slot *s;
	unsigned int i;

	for (i = 0; i < nslots; i++) {
		s = &slots[i];
		if (s->retired && now > s->retired_until) {
			s->retired = false;
			slot_put(s);
		}
		if (!s->busy)
			break;
	}
	if (i == nslots) {
		if (nslots == MAX_SLOTS) {
			fail("out of argument slots");
			exit(T_FAIL);
		}
		s = &slots[nslots++];
		s->arg = map_or_die(3 * PG, PROT_READ | PROT_WRITE, 0);
		mprotect(s->arg + 2 * PG, PG, PROT_NONE);
		s->frags = map_or_die(FRAG_BYTES + PG, PROT_READ | PROT_WRITE,
				      MAP_NORESERVE);
		mprotect(s->frags + FRAG_BYTES, PG, PROT_NONE);
	}
	s = &slots[i];
	s->busy = true;
	return s;
}

static void slot_put(struct slot *s)
{
	if (s->ro)
		mprotect(s->arg, 2 * PG, PROT_READ | PROT_WRITE);
	s->ro = false;
	s->busy = false;
}

/* Where an argument struct is placed. */
enum place {
	PL_NORMAL,	/* writable memory */
	PL_UNALIGNED,	/* writable, at an odd address */
	PL_STRADDLE,	/* runs into a PROT_NONE page */
	PL_RO,		/* read-only: the write-back faults */
	PL_NONE,	/* a PROT_NONE page */
	PL_NULL,
	PL_LOW,		/* the first page */
	PL_KERNEL,	/* a kernel address */
	PL_NONCANON,	/* a non-canonical address */
	PL_COUNT
};

static const char *const place_name[PL_COUNT] = {
	"normal", "unaligned", "straddle", "read-only", "prot-none", "null",
	"low", "kernel", "non-canonical",
};

static enum place pick_place(void)
{
	unsigned int r = (unsigned int)below(1000);

	if (r < 850)
		return PL_NORMAL;
	if (r < 880)
		return PL_UNALIGNED;
	if (r < 905)
		return PL_STRADDLE;
	if (r < 940)
		return PL_RO;
	if (r < 955)
		return PL_NONE;
	if (r < 965)
		return PL_NULL;
	if (r < 972)
		return PL_LOW;
	if (r < 988)
		return PL_KERNEL;
	return PL_NONCANON;
}

static uint64_t bad_address(enum place p)
{
	switch (p) {
	case PL_NONE:
		return (uintptr_t)none_page + below(PG);
	case PL_LOW:
		return 8 * range(1, 511);
	case PL_KERNEL:
		return chance(50) ? 0xffff888000000000ULL + below(1 << 20) * PG :
				    0xffffffff81000000ULL + below(PG);
	case PL_NONCANON:
		return chance(50) ? 0x0000800000000000ULL + 8 * below(1 << 20) :
				    0x8000000000000000ULL + 8 * below(1 << 20);
	default:
		return 0;
	}
}

/* ------------------------------------------------------------------ */
/* Calls                                                               */
/* ------------------------------------------------------------------ */

/* Indexed like the command numbers: numbers from NCMD on are unknown. */
enum {
	C_INFO, C_MR_REG, C_MR_DEREG, C_CONNECT, C_DISCONNECT, C_EXPORT,
	C_UNEXPORT, C_IMPORT, C_UNIMPORT, C_SUBMIT, C_WAIT, C_QUERY,
	C_RELEASE, C_CANCEL, C_CONN_QUERY, C_WINDOW_OPEN, C_WINDOW_CLOSE,
	C_GROUP_CREATE, C_GROUP_ABORT, C_GROUP_WAIT, C_GROUP_QUERY,
	C_GROUP_RELEASE, C_NOTIFY, C_EVENTS, NCMD
};

_Static_assert(C_WINDOW_CLOSE == _IOC_NR(XFERK_IOC_WINDOW_CLOSE) &&
	       C_GROUP_CREATE == _IOC_NR(XFERK_IOC_GROUP_CREATE) &&
	       C_EVENTS == _IOC_NR(XFERK_IOC_EVENTS),
	       "C_* indexes are the command numbers");

struct call;

struct rsv {
	uint16_t off, len;
};

/* One command of the uAPI: what the fuzzer knows about it. */
struct cmd {
	const char *name;
	unsigned int nr;	/* XFERK_IOC_* */
	uint32_t size;		/* sizeof its struct in this header */
	uint32_t min_size;	/* its first version's size */
	uint32_t flags;		/* the flag bits it knows */
	uint8_t kind;		/* the handle it takes (drops, op commands) */
	const int *errs;	/* its documented errnos */
	struct rsv rsv[3];	/* reserved fields */
	void (*gen)(struct call *c, uint8_t *a);
	void (*done)(struct call *c, int res, bool same);
};

static const struct cmd cmds[NCMD];

/* One call, through ioctl() or a ring: what was sent and how it went. */
struct call {
	const struct cmd *cmd;		/* NULL: an unknown command */
	unsigned int nr;		/* the ioctl number or cmd_op sent */
	int fi;				/* target file */
	unsigned int fgen;		/* its incarnation */
	bool ring, async;
	int ri;
	uint64_t ud;			/* the SQE's user_data */
	bool payload_clean;		/* the ring payload was well formed */
	struct slot *slot;
	enum place place;
	uint8_t *uarg;			/* where the struct is */
	uint32_t size;			/* its size field */
	uint32_t span;			/* bytes placed there */
	bool rw;			/* normal writable memory */
	bool have_before;
	bool real;			/* a real action, not a fuzzed call */
	bool expect_set;
	int expect;			/* the exact result a real action expects */
	bool quiet;			/* no signal, no ring completion could interrupt */
	bool overdue;
	/* what the generator chose */
	uint64_t h, h2;			/* handle arguments */
	uint32_t flags;			/* flags as sent */
	uint64_t deadline, budget;
	uint32_t prio;
	uint64_t user_data, total_bytes;
	uint32_t nr_frags;
	uint64_t chain, src_mr;
	uint64_t group;			/* SUBMIT: the group named */
	uint64_t evp;			/* EVENTS: the array's address */
	uint32_t max_events;
	bool ev_alone;			/* EVENTS: no other EVENTS was in flight */
	uint32_t conn_timeout;
	/* results */
	int res;
	uint64_t t0, t1, due;
	uint64_t big0;			/* CQE32 big_cqe[0] */
	uint64_t op_h;			/* ring SUBMIT: the op handle learnt */
	uint64_t out_h;
	uint8_t out_token[XFERK_TOKEN_SIZE];
	uint8_t before[ARG_BUF];	/* the bytes placed, before the call */
};

static unsigned int cmd_index(const struct cmd *cmd)
{
	return cmd ? (unsigned int)(cmd - cmds) : NCMD;
}

static bool is_cmd(const struct call *c, unsigned int ci)
{
	return c->cmd && cmd_index(c->cmd) == ci;
}

/* ---- rings ---- */

struct fz_ring {
	struct io_uring ring;
	bool live;
	unsigned int flags;
	unsigned int inflight;
};

static const unsigned int ring_setup[NRINGS] = {
	0, IORING_SETUP_SQE128, IORING_SETUP_CQE32,
	IORING_SETUP_SQE128 | IORING_SETUP_CQE32,
};

static struct fz_ring rings[NRINGS];
static struct call *pending[MAX_PENDING];
static unsigned int npending, npending_submits, npending_events;
static uint64_t retired_due;	/* closed rings' submits may complete until */
static uint64_t retired_events_due;	/* closed rings' EVENTS may run until */
static uint64_t ud_seq;

/* ---- statistics ---- */

#define NRES		240
#define RES_STATE	200	/* + state: a parked SUBMIT's CQE */
#define RES_OTHER	(NRES - 1)

static unsigned long counts[2][NCMD + 1][NRES];
static unsigned long states_seen[XFERK_STATE_COUNT];

static struct {
	unsigned long real_submits, real_submits_ok, chains_null, chains_rdma;
	unsigned long rdma_connect_failed, deregs_busy, reopens, ring_reopens;
	unsigned long foreign_exports, quarantined, overdue, late_cqes;
	unsigned long retired;
	unsigned long events[XFERK_EVENT_ABORTED + 1], events_dropped;
	unsigned long groups_aborted;
} st;

static unsigned int res_slot(int res, bool parked)
{
	if (parked && res >= 0)
		return res < XFERK_STATE_COUNT ? RES_STATE + (unsigned int)res : RES_OTHER;
	if (res == 0)
		return 0;
	if (res < 0 && -res < RES_STATE)
		return (unsigned int)-res;
	return RES_OTHER;
}

static const char *slot_name(unsigned int s)
{
	if (s == 0)
		return "0";
	if (s >= RES_STATE && s < RES_STATE + XFERK_STATE_COUNT)
		return state_name((int)(s - RES_STATE));
	if (s == RES_OTHER)
		return "other";
	return errname((int)s);
}

/* ------------------------------------------------------------------ */
/* The object pool                                                     */
/* ------------------------------------------------------------------ */

static bool seen_add(struct fz_file *F, uint64_t h)
{
	unsigned int i = (unsigned int)((h * 0x9e3779b97f4a7c15ULL) >> 49) % NSEEN;

	if (F->nseen >= NSEEN * 3 / 4)
		return true;	/* full: no longer checked */
	while (F->seen[i]) {
		if (F->seen[i] == h)
			return false;
		i = (i + 1) % NSEEN;
	}
	F->seen[i] = h;
	F->nseen++;
	return true;
}

static struct obj *obj_find(struct fz_file *F, uint64_t h)
{
	unsigned int i;

	if (!h)
		return NULL;
	for (i = 0; i < NOBJ; i++)
		if (F->obj[i].live && F->obj[i].h == h)
			return &F->obj[i];
	return NULL;
}

static struct obj *obj_find_kind(struct fz_file *F, uint64_t h, int kind)
{
	struct obj *o = obj_find(F, h);

	return o && o->kind == kind ? o : NULL;
}

static unsigned int obj_count(struct fz_file *F, int kind)
{
	unsigned int i, n = 0;

	for (i = 0; i < NOBJ; i++)
		n += F->obj[i].live && F->obj[i].kind == kind;
	return n;
}

/* A random live object of @kind (any kind: 0) that @ok accepts, or NULL. */
static struct obj *obj_random(struct fz_file *F, int kind,
			      bool (*ok)(const struct obj *))
{
	struct obj *cand[NOBJ];
	unsigned int i, n = 0;

	for (i = 0; i < NOBJ; i++) {
		struct obj *o = &F->obj[i];

		if (o->live && (!kind || o->kind == kind) && (!ok || ok(o)))
			cand[n++] = o;
	}
	return n ? cand[below(n)] : NULL;
}

/* A handle the kernel just handed out: new, never seen before on the file. */
static struct obj *obj_add(struct fz_file *F, int kind, uint64_t h)
{
	struct obj *o = NULL, *oldest = NULL;
	unsigned int i;

	if (!h) {
		fail("a successful call handed out a %s handle 0", kind_name[kind]);
		return NULL;
	}
	if (!seen_add(F, h))
		fail("%s handle %#" PRIx64 " was handed out before on this file: "
		     "a handle names a newer object", kind_name[kind], h);
	for (i = 0; i < NOBJ && !o; i++)
		if (!F->obj[i].live)
			o = &F->obj[i];
	/* Full: forget the oldest; the kernel drops it when the file closes. */
	for (i = 0; i < NOBJ && !o; i++)
		if (!oldest || F->obj[i].seq < oldest->seq)
			oldest = &F->obj[i];
	if (!o)
		o = oldest;
	memset(o, 0, sizeof(*o));
	o->live = true;
	o->kind = (uint8_t)kind;
	o->h = h;
	o->seq = ++obj_seq;
	return o;
}

static void dead_push(struct fz_file *F, uint64_t h)
{
	F->dead[F->ndead++ % NDEAD] = h;
}

/* The handle is gone in the kernel. */
static void obj_kill(struct fz_file *F, uint64_t h)
{
	struct obj *o = obj_find(F, h);

	if (o)
		o->live = false;
	if (h)
		dead_push(F, h);
}

static void tok_add(const uint8_t *b, uint64_t len, uint32_t access, bool null,
		    bool rdma, int fi)
{
	struct tok *t = &toks[ntoks++ % NTOKENS];

	t->used = true;
	memcpy(t->b, b, XFERK_TOKEN_SIZE);
	t->len = len;
	t->access = access;
	t->null = null;
	t->rdma = rdma;
	t->fi = fi;
	t->gen = files[fi].gen;
}

static struct tok *tok_find(const uint8_t *b)
{
	unsigned int i;

	for (i = 0; i < NTOKENS; i++)
		if (toks[i].used && !memcmp(toks[i].b, b, XFERK_TOKEN_SIZE))
			return &toks[i];
	return NULL;
}

static bool tok_live(int fi, const struct tok *t)
{
	struct fz_file *F = &files[fi];
	unsigned int i;

	if (t->fi != fi || t->gen != F->gen)
		return false;
	for (i = 0; i < NOBJ; i++)
		if (F->obj[i].live && F->obj[i].kind == K_EXPORT &&
		    !memcmp(F->obj[i].token, t->b, XFERK_TOKEN_SIZE))
			return true;
	return false;
}

/* Mostly a token of a live export of file @fi; else any seen. */
static struct tok *tok_random(int fi)
{
	struct tok *cand[NTOKENS];
	unsigned int i, n = 0;

	if (chance(80))
		for (i = 0; i < NTOKENS; i++)
			if (toks[i].used && tok_live(fi, &toks[i]))
				cand[n++] = &toks[i];
	if (!n)
		for (i = 0; i < NTOKENS; i++)
			if (toks[i].used)
				cand[n++] = &toks[i];
	return n ? cand[below(n)] : NULL;
}

static struct chain *chain_by_id(struct fz_file *F, uint64_t id)
{
	unsigned int i;

	for (i = 0; id && i < NCHAINS; i++)
		if (F->chain[i].used && F->chain[i].id == id)
			return &F->chain[i];
	return NULL;
}

static void chain_hurt(int fi, uint64_t id)
{
	struct chain *ch = chain_by_id(&files[fi], id);

	if (ch)
		ch->healthy = false;
}

/*
 * A GROUP_ABORT of @group may run: every op that named it may be
 * cancelled (in the background, through a ring or after a signal), and
 * their connections forced into the error state.
 */
static void group_aborting(int fi, uint64_t group)
{
	struct fz_file *F = &files[fi];
	unsigned int i;

	for (i = 0; group && i < NOBJ; i++) {
		struct obj *o = &F->obj[i];

		if (o->live && o->kind == K_OP && o->op.group == group) {
			o->op.bg_cancel = true;
			chain_hurt(fi, o->op.chain);
		}
	}
}

/* ---- handles for fuzzed calls ---- */

static bool not_kind_op(const struct obj *o)
{
	return o->kind != K_OP;
}

/*
 * A handle for a field that takes @kind: mostly a live one of the file,
 * else one of the wrong kind, stale, another file's, a closed file's,
 * bit-flipped, 0 or random.
 */
static uint64_t pick_handle(struct call *c, int kind)
{
	struct fz_file *F = &files[c->fi];
	int other = (c->fi + 1 + (int)below(NFILES - 1)) % NFILES;
	unsigned int r = (unsigned int)below(100);
	struct obj *live = obj_random(F, kind, NULL);
	struct obj *o = NULL;

	if (r < 64 && live)
		return live->h;
	if (r < 71)
		o = obj_random(F, 0, kind == K_OP ? not_kind_op : NULL);
	if (o && o->kind != kind)
		return o->h;
	if (r < 79 && F->ndead)
		return F->dead[below(min64(F->ndead, NDEAD))];
	o = r < 86 ? obj_random(&files[other], kind, NULL) : NULL;
	if (o)
		return o->h;
	if (r < 89 && nforeign)
		return foreign[below(min64(nforeign, NFOREIGN))];
	o = live ? live : obj_random(F, 0, NULL);
	if (r < 95 && o)
		return o->h ^ (1ULL << below(64));
	if (r < 97)
		return 0;
	return rnd();
}

/* ------------------------------------------------------------------ */
/* Deadlines                                                           */
/* ------------------------------------------------------------------ */

enum { DL_SUBMIT, DL_WAIT, DL_CANCEL };

static uint64_t gen_deadline(struct call *c, int what)
{
	uint64_t now = now_ns();
	unsigned int r = (unsigned int)below(100);
	uint64_t edge;

	if (r < 5)
		return 0;
	if (r < 12)
		return now - min64(now - 1, range(1, 10 * SEC));
	if (r < 16)
		return now;
	if (r < 48)
		return now + range(US, 5 * MS);
	if (r < 72)
		return now + range(5 * MS, 100 * MS);
	if (r < 80)
		return now + range(100 * MS, SEC);
	if (r < 84 && c->ring && what != DL_WAIT) {
		/* At the park bound, a little inside or outside. */
		edge = now + XFERK_URING_MAX_PARK_NS -
		       (what == DL_SUBMIT ? min64(c->budget, XFERK_URING_MAX_PARK_NS) : 0);
		return chance(50) ? edge - range(0, 2 * MS) : edge + range(MS, 10 * MS);
	}
	if (r < 91)
		return XFERK_DEADLINE_NONE;
	if (r < 94)
		return KTIME_MAX_NS + below(2);
	if (r < 97)
		return now + range(SEC, 3 * SEC);
	return rnd();
}

static uint64_t gen_budget(void)
{
	unsigned int r = (unsigned int)below(100);

	if (r < 50)
		return 0;
	if (r < 82)
		return range(0, 50 * MS);
	if (r < 92)
		return range(50 * MS, SEC);
	if (r < 96)
		return XFERK_URING_MAX_PARK_NS + range(1, SEC);
	return rnd();
}

/* ------------------------------------------------------------------ */
/* Generators: one per argument struct                                 */
/* ------------------------------------------------------------------ */

static void gen_info(struct call *c, uint8_t *a)
{
	struct xferk_ioc_info *x = (void *)a;

	if (chance(10)) {	/* outputs: the kernel ignores what is there */
		x->abi_version = rnd32();
		x->features = rnd();
	}
}

static void gen_mr_reg(struct call *c, uint8_t *a)
{
	struct xferk_ioc_mr_reg *x = (void *)a;
	unsigned int r = (unsigned int)below(100);
	uint64_t off;

	x->access = (uint32_t)range(1, XFERK_ACCESS_ALL);
	if (r < 60) {
		/* Within the area, any alignment. */
		off = below(REGION_AREA - 1);
		x->addr = (uintptr_t)area + off;
		x->len = range(1, min64(REGION_AREA - off, 64 * 1024));
	} else if (r < 65) {
		/* Into the guard page after the area. */
		off = REGION_AREA - range(1, 2 * PG);
		x->addr = (uintptr_t)area + off;
		x->len = REGION_AREA - off + range(1, PG);
	} else if (r < 71) {
		/* Read-only memory: fine for a source, EFAULT for the NIC to write. */
		off = below(PG);
		x->addr = (uintptr_t)ro_page + off;
		x->len = range(1, PG - off);
		if (chance(50))
			x->access = (uint32_t)(chance(50) ? XFERK_ACCESS_LOCAL_SRC :
					       XFERK_ACCESS_LOCAL_SRC | XFERK_ACCESS_REMOTE_READ);
	} else if (r < 74) {
		x->addr = (uintptr_t)none_page;
		x->len = range(1, PG);
	} else if (r < 77) {
		x->addr = chance(50) ? 0 : bad_address(PL_LOW);
		x->len = range(1, 2 * PG);
	} else if (r < 80) {
		x->addr = bad_address(chance(70) ? PL_KERNEL : PL_NONCANON);
		x->len = range(1, 2 * PG);
	} else if (r < 84) {
		/* addr + len wraps, or its page end does. */
		x->addr = ~0ULL - below(2 * PG);
		x->len = chance(50) ? range(1, 4 * PG) : ~0ULL - below(16);
	} else if (r < 88) {
		/* Huge: more than the machine has, or wrapping. */
		x->addr = (uintptr_t)area + below(PG);
		x->len = 1ULL << range(33, 63);
	} else if (r < 91) {
		x->addr = (uintptr_t)area;
		x->len = 0;
	} else if (r < 95) {
		x->addr = (uintptr_t)area;
		x->len = PG;
		x->access = chance(50) ? 0 : x->access | 1U << range(4, 31);
	} else if (r < 98) {
		/* A dma-buf (vgem's, read-write or read-only), or not one. */
		x->flags = XFERK_MR_DMABUF;
		x->dmabuf_fd = chance(60) ? dmabuf_fd : chance(50) ?
			       dmabuf_ro_fd : chance(50) ? 0 : (int)rnd32();
		x->addr = chance(70) ? below(dmabuf_size + 1) : rnd();
		x->len = chance(70) ? range(1, dmabuf_size + 1) : rnd();
	} else {
		x->addr = rnd();
		x->len = rnd() >> below(64);
	}
	if (chance(5))
		x->handle = rnd();
}

/* Drop commands: one handle. */
static void gen_handle(struct call *c, uint8_t *a)
{
	struct xferk_ioc_handle *x = (void *)a;

	x->handle = pick_handle(c, c->cmd->kind);
	c->h = x->handle;
}

/* WINDOW_CLOSE: an export's handle, a deadline mostly near. */
static void gen_window_close(struct call *c, uint8_t *a)
{
	struct xferk_ioc_window_close *x = (void *)a;

	gen_handle(c, a);
	x->deadline_ns = chance(20) ? rnd() : now_ns() + below(20 * MS);
}

/* WINDOW_OPEN: blocks of a region of the file, or bad ones. */
static void gen_window_open(struct call *c, uint8_t *a)
{
	static struct xferk_block blocks[8];
	struct xferk_ioc_window_open *x = (void *)a;
	uint32_t i, n = (uint32_t)range(1, 8);
	struct obj *r;

	x->conn = pick_handle(c, K_CONN);
	x->mr = pick_handle(c, K_REGION);
	r = obj_find_kind(&files[c->fi], x->mr, K_REGION);
	x->access = r && chance(80) ? r->access & RW_REMOTE : rnd32() & 0xf;
	for (i = 0; i < n; i++) {
		uint64_t pages = r && r->len >= PG ? r->len / PG : 1;

		blocks[i].offset = below(pages) * PG;
		blocks[i].len = PG;
		if (chance(5))
			blocks[i].offset += below(PG);
		if (chance(5))
			blocks[i].len = rnd();
	}
	x->blocks = (uintptr_t)blocks;
	x->nr_blocks = n;
	if (chance(5))
		x->nr_blocks = chance(50) ? 0 : XFERK_WINDOW_MAX_BLOCKS + 1;
	if (chance(3))
		x->blocks = rnd();
}

static void set_v4(uint8_t *addr, const char *ip)
{
	inet_pton(AF_INET, ip, addr);
}

static void gen_connect(struct call *c, uint8_t *a)
{
	static const char *const bad4[] = {
		"10.99.0.3", "10.99.0.77", "10.99.0.254", "127.0.0.1",
		"0.0.0.0", "255.255.255.255", "224.0.0.1", "192.0.2.1",
	};
	static const char *const bad6[] = {
		"::1", "::", "fe80::1", "::ffff:10.99.0.1", "2001:db8::1",
	};
	struct xferk_ioc_connect *x = (void *)a;
	unsigned int r = (unsigned int)below(100);
	/* Unreachable peers take their timeout: mostly through the ring. */
	bool slow = c->ring ? chance(30) : chance(3);

	/* QPs of a new session, 0 to one too many (EINVAL for a null peer). */
	if (chance(20))
		x->nr_qps = (uint32_t)below(XFERK_MAX_QPS + 2);

	if (r < 35) {
		x->flags = XFERK_CONNECT_NULL_PEER;
		r = (unsigned int)below(100);
		x->null_delay_ns = r < 40 ? 0 : r < 90 ? range(US, 20 * MS) :
				   r < 95 ? range(SEC, 3600 * SEC) : rnd();
		if (chance(50)) {	/* ignored for a null peer */
			x->family = (uint16_t)rnd32();
			x->port = (uint16_t)rnd32();
			x->timeout_ms = rnd32();
			x->addr[below(16)] = (uint8_t)rnd32();
		}
	} else if (r < 65 || (!slow && r < 90)) {
		x->family = AF_INET;
		set_v4(x->addr, chance(80) ? t_peer() : "10.99.0.2");
		x->port = chance(50) ? 0 : (uint16_t)listen_port;
		x->timeout_ms = chance(30) ? 0 : (uint32_t)range(3000, 10000);
	} else if (r < 90) {
		r = (unsigned int)below(100);
		x->timeout_ms = (uint32_t)range(200, 1000);
		if (r < 50) {
			x->family = AF_INET;
			set_v4(x->addr, bad4[below(ARRAY_SIZE(bad4))]);
			x->port = chance(50) ? 0 : (uint16_t)rnd32();
		} else if (r < 75) {
			/* Our peer, but a port nobody listens on. */
			x->family = AF_INET;
			set_v4(x->addr, t_peer());
			x->port = (uint16_t)range(1, 65535);
			if (x->port == listen_port)
				x->port++;
			x->timeout_ms = (uint32_t)range(500, 2000);
		} else {
			x->family = AF_INET6;
			inet_pton(AF_INET6, bad6[below(ARRAY_SIZE(bad6))], x->addr);
		}
	} else {
		x->timeout_ms = (uint32_t)range(200, 1000);
		x->family = AF_INET;
		set_v4(x->addr, t_peer());
		switch (below(3)) {
		case 0:		/* EAFNOSUPPORT */
			do
				x->family = (uint16_t)rnd32();
			while (x->family == AF_INET || x->family == AF_INET6);
			if (chance(50))
				x->family = AF_UNIX;
			break;
		case 1:		/* IPv4 with bytes beyond the address */
			x->addr[4 + below(12)] = (uint8_t)range(1, 255);
			break;
		default:	/* a delay without the null peer */
			x->null_delay_ns = range(1, SEC);
			break;
		}
	}
	if (chance(5))
		x->handle = rnd();
	c->conn_timeout = x->timeout_ms;
}

static void gen_export(struct call *c, uint8_t *a)
{
	struct xferk_ioc_export *x = (void *)a;
	struct obj *r;

	x->conn = pick_handle(c, K_CONN);
	x->mr = pick_handle(c, K_REGION);
	r = obj_find_kind(&files[c->fi], x->mr, K_REGION);
	if (r && chance(75)) {
		x->len = range(1, r->len);
		x->offset = below(r->len - x->len + 1);
		x->access = r->access & RW_REMOTE;
		if (!x->access || chance(5))
			x->access = (uint32_t)range(1, 3) << 2;
	} else {
		x->offset = below(PG);
		x->len = range(1, PG);
		x->access = RW_REMOTE;
		switch (below(7)) {
		case 0:
			x->offset = ~0ULL - below(PG);
			x->len = range(1, 2 * PG);
			break;
		case 1:
			x->len = 0;
			break;
		case 2:
			x->len = 1ULL << range(32, 63);
			break;
		case 3:
			x->offset = r ? r->len : PG;
			x->len = 1;
			break;
		case 4:
			x->access = chance(50) ? 0 : (uint32_t)below(16) | RW_LOCAL;
			break;
		case 5:
			x->access = rnd32();
			break;
		default:
			x->offset = below(1 << 20);
			x->len = range(1, 1 << 20);
			break;
		}
	}
	if (chance(5)) {
		x->handle = rnd();
		x->token[below(XFERK_TOKEN_SIZE)] = (uint8_t)rnd32();
	}
	c->h = x->conn;
	c->h2 = x->mr;
}

static void gen_import(struct call *c, uint8_t *a)
{
	struct xferk_ioc_import *x = (void *)a;
	struct tok *t = tok_random(c->fi);
	unsigned int r = (unsigned int)below(100), i;
	struct obj *o;

	x->conn = pick_handle(c, K_CONN);
	if (t)
		memcpy(x->token, t->b, XFERK_TOKEN_SIZE);
	if (!t || r >= 92) {
		/* Zeros or noise. */
		if (chance(50))
			for (i = 0; i < XFERK_TOKEN_SIZE; i++)
				x->token[i] = (uint8_t)rnd32();
		else
			memset(x->token, 0, XFERK_TOKEN_SIZE);
	} else if (r < 55) {
		/* As exported. */
	} else if (r < 72) {
		/* One bit flipped anywhere. */
		x->token[below(XFERK_TOKEN_SIZE)] ^= (uint8_t)(1U << below(8));
	} else if (r < 80) {
		/* The header, a zero length or access, or reserved bytes. */
		switch (below(4)) {
		case 0:
			x->token[below(8)] ^= (uint8_t)range(1, 255);
			break;
		case 1:
			memset(x->token + 24, 0, 8);
			break;
		case 2:
			memset(x->token + 36, 0, 4);
			break;
		default:
			x->token[40 + below(16)] = (uint8_t)range(1, 255);
			break;
		}
	} else if (r < 86) {
		/* Several bytes changed. */
		for (i = 0; i < 4; i++)
			x->token[below(XFERK_TOKEN_SIZE)] = (uint8_t)rnd32();
	} else {
		/* As exported, through another live connection of the file. */
		o = obj_random(&files[c->fi], K_CONN, NULL);
		if (o)
			x->conn = o->h;
	}
	if (chance(5))
		x->handle = rnd();
	c->h = x->conn;
}

/* The number of fragments, and their element size. */
static uint32_t gen_nr_frags(void)
{
	unsigned int r = (unsigned int)below(100);

	if (r < 3)
		return 0;
	if (r < 42)
		return 1;
	if (r < 75)
		return (uint32_t)range(2, 16);
	if (r < 86)
		return (uint32_t)range(17, 256);
	if (r < 89)
		return (uint32_t)range(257, XFERK_MAX_FRAGS - 1);
	if (r < 93)
		return XFERK_MAX_FRAGS;
	if (r < 96)
		return XFERK_MAX_FRAGS + (uint32_t)range(1, 2);
	return rnd32();
}

static uint32_t gen_frag_size(bool *tail)
{
	unsigned int r = (unsigned int)below(100);

	*tail = false;
	if (r < 80)
		return FRAG_SIZE;
	if (r < 84)
		return (uint32_t)below(FRAG_SIZE);
	if (r < 91)
		return FRAG_SIZE + 8 * (uint32_t)range(1, 10);
	if (r < 94) {
		*tail = true;
		return FRAG_SIZE + (uint32_t)range(1, 80);
	}
	if (r < 96)
		return XFERK_ARG_MAX_SIZE;
	if (r < 98)
		return XFERK_ARG_MAX_SIZE + (uint32_t)range(1, PG);
	return rnd32();
}

static bool remote_usable(const struct obj *o)
{
	return o->len && (o->access & RW_REMOTE);
}

static bool region_writes(const struct obj *o)
{
	return o->access & XFERK_ACCESS_LOCAL_SRC;
}

static bool region_reads(const struct obj *o)
{
	return o->access & XFERK_ACCESS_LOCAL_DST;
}

/* Remotes of one connection class (null or RDMA), for fragments of one op. */
static int frag_class;

static bool remote_of_class(const struct obj *o)
{
	return remote_usable(o) && (frag_class ? o->rdma : o->null);
}

/*
 * One fragment: mostly valid against the file's objects (so the submit
 * runs), sometimes with one field broken.
 */
static void gen_frag(struct call *c, struct xferk_frag *f, bool mix,
		     uint64_t cap, const struct xferk_frag *prev)
{
	struct fz_file *F = &files[c->fi];
	struct obj *rm, *lr;
	uint64_t maxlen;

	memset(f, 0, sizeof(*f));
	if (prev && chance(8)) {	/* overlapping: the same range again */
		*f = *prev;
		return;
	}
	rm = obj_random(F, K_REMOTE, mix ? remote_usable : remote_of_class);
	if (!rm) {
		f->mr = pick_handle(c, K_REGION);
		f->remote = pick_handle(c, K_REMOTE);
		f->len = range(1, PG);
		f->opcode = (uint32_t)below(2);
		return;
	}
	f->opcode = (rm->access & XFERK_ACCESS_REMOTE_WRITE) &&
		    (!(rm->access & XFERK_ACCESS_REMOTE_READ) || chance(50)) ?
		    XFERK_OP_WRITE : XFERK_OP_READ;
	lr = obj_random(F, K_REGION, f->opcode == XFERK_OP_WRITE ? region_writes :
							       region_reads);
	if (!lr)
		lr = obj_random(F, K_REGION, NULL);
	f->remote = rm->h;
	f->mr = lr ? lr->h : pick_handle(c, K_REGION);
	maxlen = min64(cap, min64(lr ? lr->len : PG, rm->len));
	f->len = range(1, max64(maxlen, 1));
	f->offset = lr ? below(lr->len - min64(f->len, lr->len) + 1) : 0;
	f->remote_offset = below(rm->len - min64(f->len, rm->len) + 1);
	if (!chance(12))
		return;
	switch (below(12)) {
	case 0:
		f->len = 0;
		break;
	case 1:
		f->len = 1ULL << range(31, 63);
		break;
	case 2:
		f->len = ~0ULL - below(2);
		break;
	case 3:
		f->offset = ~0ULL - below(PG);
		break;
	case 4:
		f->offset = lr ? lr->len : PG;
		break;
	case 5:
		f->remote_offset = ~0ULL - below(16);
		break;
	case 6:
		f->remote_offset = rm->len;
		break;
	case 7:
		f->opcode = (uint32_t)range(2, 0xffffffff);
		break;
	case 8:
		f->reserved = rnd32() | 1;
		break;
	case 9:
		f->mr = pick_handle(c, K_REGION);
		break;
	case 10:
		f->remote = pick_handle(c, K_REMOTE);
		break;
	default:
		f->opcode ^= 1;	/* maybe a direction nobody granted */
		break;
	}
}

/* Places the fragment array: mostly where it was built, sometimes not. */
static uint64_t frag_ptr(struct call *c, uint8_t *base, uint64_t bytes)
{
	unsigned int r = (unsigned int)below(100);
	uint64_t k, cut;

	if (r < 88 || !bytes)
		return (uintptr_t)base;
	if (r < 91 && bytes + 8 <= FRAG_BYTES) {
		k = range(1, 7);
		memmove(base + k, base, bytes);
		return (uintptr_t)(base + k);
	}
	if (r < 94) {
		/* The array runs into the guard page. */
		cut = range(1, min64(bytes, 256));
		memmove(base + FRAG_BYTES - (bytes - cut), base, bytes - cut);
		return (uintptr_t)(base + FRAG_BYTES - (bytes - cut));
	}
	if (r < 96)
		return (uintptr_t)none_page;
	if (r < 98)
		return 0;
	return bad_address(PL_KERNEL);
}

static void gen_submit(struct call *c, uint8_t *a)
{
	struct xferk_ioc_submit *x = (void *)a;
	struct xferk_frag f, prev;
	uint8_t *base = c->slot->frags;
	uint64_t bytes, total = 0, cap;
	uint32_t nr, fsz, nfill, i;
	bool tail, mix = chance(4), poison;
	unsigned int r;

	frag_class = unpriv ? 1 : (int)below(2);
	nr = gen_nr_frags();
	fsz = gen_frag_size(&tail);
	nfill = (uint32_t)min64(nr, XFERK_MAX_FRAGS + 2);
	if (fsz && (uint64_t)nfill * fsz > FRAG_BYTES)
		nfill = FRAG_BYTES / fsz;
	if (fsz <= XFERK_ARG_MAX_SIZE && nr <= XFERK_MAX_FRAGS && nr > nfill)
		nr = nfill ? nfill : 1;
	bytes = (uint64_t)nfill * fsz;
	/* Small transfers; the debug kernel's RDMA is slow. */
	cap = (debug_kernel ? 8 : 32) * 1024 / max64(nfill, 1);
	/* Many fragments over the slow RDMA of the debug kernel: never valid. */
	poison = debug_kernel && frag_class && nfill > 64;
	memset(base, 0, bytes);
	for (i = 0; i < nfill; i++) {
		gen_frag(c, &f, mix, cap, i ? &prev : NULL);
		if (poison && i == nfill - 1)
			f.mr = 0;
		memcpy(base + (uint64_t)i * fsz, &f, min64(fsz, FRAG_SIZE));
		total += f.len;
		prev = f;
	}
	if (tail && nfill)
		base[(uint64_t)below(nfill) * fsz + FRAG_SIZE +
		     below(fsz - FRAG_SIZE)] = (uint8_t)range(1, 255);
	x->frags = frag_ptr(c, base, bytes);
	x->nr_frags = nr;
	x->frag_size = fsz;

	r = (unsigned int)below(100);
	x->flags = r < 50 ? 0 : r < 75 ? XFERK_SUBMIT_CANCEL_ON_DEADLINE :
		   r < 90 ? XFERK_SUBMIT_CANCEL_ON_DEADLINE | XFERK_SUBMIT_AUTO_RELEASE :
		   r < 95 ? XFERK_SUBMIT_AUTO_RELEASE : rnd32();
	x->drain_budget_ns = gen_budget();
	if (!c->ring && !(x->flags & XFERK_SUBMIT_CANCEL_ON_DEADLINE) && chance(80))
		x->drain_budget_ns = 0;
	c->budget = x->drain_budget_ns;
	x->deadline_ns = gen_deadline(c, DL_SUBMIT);
	x->user_data = rnd();
	r = (unsigned int)below(100);
	x->priority = r < 80 ? (uint32_t)below(3) : r < 88 ? XFERK_PRIO_INTERNAL :
		      r < 95 ? (uint32_t)range(XFERK_PRIO_COUNT, 16) : rnd32();
	if (chance(15)) {
		x->window_bytes = chance(50) ? range(1, 16384) : rnd();
		x->window_chunks = chance(50) ? (uint32_t)range(1, 8) : rnd32();
	}
	/* ABI 8: a group to join, a notification once physical. */
	if (chance(25)) {
		struct obj *g;

		x->group = pick_handle(c, K_GROUP);
		g = obj_find_kind(&files[c->fi], x->group, K_GROUP);
		if (g && c->ring)
			g->grp.ring_joined = true;
	}
	r = (unsigned int)below(100);
	if (r < 15) {
		x->flags |= XFERK_SUBMIT_NOTIFY;
		x->notify_tag = chance(10) ? 0 : rnd();
	} else if (r < 18) {
		x->notify_tag = rnd() | 1;	/* without the flag */
	}
	x->op = 0;	/* an output: a ring submit's handle shows up here */

	c->group = x->group;
	c->deadline = x->deadline_ns;
	c->user_data = x->user_data;
	c->total_bytes = total;
	c->nr_frags = nr;
	c->prio = x->priority;
}

static void gen_snap_garbage(struct xferk_op_snapshot *s)
{
	if (chance(10))
		memset(s, (int)range(1, 255), sizeof(*s));
}

static void gen_wait(struct call *c, uint8_t *a)
{
	struct xferk_ioc_wait *x = (void *)a;
	unsigned int r = (unsigned int)below(100);

	x->op = pick_handle(c, K_OP);
	x->flags = r < 50 ? XFERK_WAIT_PHYSICAL : r < 95 ? 0 : rnd32();
	x->deadline_ns = gen_deadline(c, DL_WAIT);
	/* A live op: short waits, mostly. */
	if (obj_find(&files[c->fi], x->op) && chance(60))
		x->deadline_ns = now_ns() + range(0, 5 * MS);
	gen_snap_garbage(&x->snap);
	c->h = x->op;
	c->deadline = x->deadline_ns;
}

static void gen_conn_query(struct call *c, uint8_t *a)
{
	struct xferk_ioc_conn_query *x = (void *)a;
	unsigned int i;

	x->conn = pick_handle(c, K_CONN);
	if (chance(5))
		x->flags = rnd32();
	for (i = 0; i < sizeof(x->info); i++)
		((uint8_t *)&x->info)[i] = (uint8_t)rnd32();
	c->h = x->conn;
}

static void gen_query(struct call *c, uint8_t *a)
{
	struct xferk_ioc_query *x = (void *)a;

	x->op = pick_handle(c, K_OP);
	if (chance(5))
		x->flags = rnd32();
	gen_snap_garbage(&x->snap);
	c->h = x->op;
}

static void gen_cancel(struct call *c, uint8_t *a)
{
	struct xferk_ioc_cancel *x = (void *)a;

	x->op = pick_handle(c, K_OP);
	if (chance(5))
		x->flags = rnd32();
	x->drain_deadline_ns = gen_deadline(c, DL_CANCEL);
	gen_snap_garbage(&x->snap);
	c->h = x->op;
	c->deadline = x->drain_deadline_ns;
}

/* GROUP_CREATE: a tag; the outputs sometimes not 0 (the kernel ignores them). */
static void gen_group_create(struct call *c, uint8_t *a)
{
	struct xferk_ioc_group_create *x = (void *)a;

	x->tag = chance(20) ? 0 : rnd();
	if (chance(5)) {
		x->handle = rnd();
		x->generation = rnd();
	}
}

/*
 * GROUP_ABORT, _WAIT, _QUERY: a group handle; deadlines bounded as WAIT's
 * and CANCEL's, mostly near for a live group (its ops run on their own).
 */
static void gen_group(struct call *c, uint8_t *a)
{
	struct xferk_ioc_group *x = (void *)a;
	unsigned int r = (unsigned int)below(100);
	bool live;

	x->group = pick_handle(c, K_GROUP);
	live = obj_find_kind(&files[c->fi], x->group, K_GROUP);
	switch (cmd_index(c->cmd)) {
	case C_GROUP_WAIT:
		x->flags = r < 50 ? XFERK_WAIT_PHYSICAL : r < 95 ? 0 : rnd32();
		x->deadline_ns = gen_deadline(c, DL_WAIT);
		if (live && chance(60))
			x->deadline_ns = now_ns() + range(0, 5 * MS);
		break;
	case C_GROUP_ABORT:
		if (chance(5))
			x->flags = rnd32();
		x->deadline_ns = gen_deadline(c, DL_CANCEL);
		if (live && chance(60))
			x->deadline_ns = now_ns() + range(0, 20 * MS);
		group_aborting(c->fi, x->group);
		break;
	default:	/* QUERY: the deadline must be 0 */
		if (chance(5))
			x->flags = rnd32();
		if (chance(5))
			x->deadline_ns = rnd() | 1;
		break;
	}
	if (chance(10))
		memset(&x->snap, (int)range(1, 255), sizeof(x->snap));
	c->h = x->group;
	c->deadline = x->deadline_ns;
}

/* NOTIFY: a remote handle (mostly live: its target is one of our files). */
static void gen_notify(struct call *c, uint8_t *a)
{
	struct xferk_ioc_notify *x = (void *)a;

	x->remote = pick_handle(c, K_REMOTE);
	x->tag = rnd();
	c->h = x->remote;
}

/* Bytes of an event array EVENTS must not write. */
#define EV_POISON	0xa5

/*
 * EVENTS: room for max_events in the slot's fragment area (filled with
 * EV_POISON), or a bad pointer (never a random one: the kernel writes
 * there); a deadline that is never far: nothing may ever come.
 */
static void gen_events(struct call *c, uint8_t *a)
{
	struct xferk_ioc_events *x = (void *)a;
	const uint64_t esz = sizeof(struct xferk_event);
	uint8_t *base = c->slot->frags;
	unsigned int r = (unsigned int)below(100);
	uint64_t now = now_ns(), room;

	x->max_events = r < 60 ? (uint32_t)range(1, 16) :
			r < 80 ? (uint32_t)range(17, XFERK_EVENTS_MAX - 1) :
			r < 86 ? XFERK_EVENTS_MAX : r < 91 ? 0 :
			r < 96 ? XFERK_EVENTS_MAX + (uint32_t)range(1, 64) : rnd32();
	/* Up to 7 bytes more: the array may start unaligned, below. */
	room = (min64(x->max_events, XFERK_EVENTS_MAX) + 1) * esz + 8;
	memset(base, EV_POISON, room);
	r = (unsigned int)below(100);
	if (r < 80) {
		x->events = (uintptr_t)base;
	} else if (r < 83) {
		x->events = (uintptr_t)base + range(1, 7);
	} else if (r < 87) {
		/* Fewer than max_events fit before the guard page. */
		x->events = (uintptr_t)base + FRAG_BYTES -
			    esz * below(min64(x->max_events, XFERK_EVENTS_MAX));
	} else if (r < 90) {
		x->events = (uintptr_t)ro_page;
	} else if (r < 93) {
		x->events = (uintptr_t)none_page;
	} else if (r < 95) {
		x->events = 0;
	} else {
		x->events = bad_address(chance(50) ? PL_KERNEL :
					chance(50) ? PL_LOW : PL_NONCANON);
	}
	r = (unsigned int)below(100);
	x->deadline_ns = r < 40 ? 0 : r < 50 ? now - min64(now - 1, range(1, SEC)) :
			 r < 55 ? now : r < 90 ? now + range(US, 5 * MS) :
			 now + range(5 * MS, 50 * MS);
	if (chance(5)) {
		x->nr_events = rnd32();
		x->dropped = rnd();
	}
	c->evp = x->events;
	c->max_events = x->max_events;
	c->deadline = x->deadline_ns;
	c->ev_alone = !npending_events && now > retired_events_due;
}

/* ------------------------------------------------------------------ */
/* Checks                                                              */
/* ------------------------------------------------------------------ */

static bool errno_documented(const struct cmd *cmd, int e)
{
	const int *p;

	if (!cmd)
		return e == ENOTTY;
	if (e == EFAULT || e == EINVAL || e == E2BIG)
		return true;
	for (p = cmd->errs; *p; p++)
		if (*p == e)
			return true;
	return false;
}

#define B(s)	(1U << XFERK_STATE_##s)

/* The lifecycle's transitions (Documentation/lifecycle.md). */
static const uint16_t next_states[XFERK_STATE_COUNT] = {
	[XFERK_STATE_SUBMITTED] = B(IN_PROGRESS) | B(SUCCEEDED) | B(FAILED) |
				  B(TIMED_OUT) | B(CANCEL_REQUESTED),
	[XFERK_STATE_IN_PROGRESS] = B(SUCCEEDED) | B(FAILED) | B(TIMED_OUT) |
				    B(CANCEL_REQUESTED),
	[XFERK_STATE_TIMED_OUT] = B(CANCEL_REQUESTED),
	[XFERK_STATE_CANCEL_REQUESTED] = B(DRAINING) | B(DRAINED),
	[XFERK_STATE_DRAINING] = B(DRAINED) | B(QUARANTINED),
	[XFERK_STATE_QUARANTINED] = B(DRAINING) | B(DRAINED),
};

static uint16_t reachable[XFERK_STATE_COUNT];

static void reachable_init(void)
{
	unsigned int i, j, k;

	for (i = 0; i < XFERK_STATE_COUNT; i++)
		reachable[i] = (uint16_t)(1U << i | next_states[i]);
	for (k = 0; k < XFERK_STATE_COUNT; k++)
		for (i = 0; i < XFERK_STATE_COUNT; i++)
			for (j = 0; j < XFERK_STATE_COUNT; j++)
				if (reachable[i] & (1U << j))
					reachable[i] |= reachable[j];
}

static bool is_final(uint32_t s)
{
	return s == XFERK_STATE_SUCCEEDED || s == XFERK_STATE_FAILED ||
	       s == XFERK_STATE_DRAINED;
}

static bool is_settled(uint32_t s)
{
	return s != XFERK_STATE_SUBMITTED && s != XFERK_STATE_IN_PROGRESS;
}

/* The states a parked SUBMIT's CQE may carry. */
static bool is_cqe_state(int s)
{
	return s == XFERK_STATE_SUCCEEDED || s == XFERK_STATE_FAILED ||
	       s == XFERK_STATE_TIMED_OUT || s == XFERK_STATE_DRAINED ||
	       s == XFERK_STATE_QUARANTINED;
}

static void call_desc(const struct call *c, char *buf, size_t len)
{
	if (c->ring)
		snprintf(buf, len,
			 "%s (ring %d%s%s, cmd_op %#x, size %u, %s, op/handle %#" PRIx64 ")",
			 c->cmd ? c->cmd->name : "unknown", c->ri,
			 rings[c->ri].flags & IORING_SETUP_SQE128 ? " SQE128" : "",
			 rings[c->ri].flags & IORING_SETUP_CQE32 ? " CQE32" : "",
			 c->nr, c->size, place_name[c->place], c->h);
	else
		snprintf(buf, len, "%s (ioctl %#x, size %u, %s, op/handle %#" PRIx64 ")",
			 c->cmd ? c->cmd->name : "unknown", c->nr, c->size,
			 place_name[c->place], c->h);
}

static bool snap_bad(const struct call *c, const struct xferk_op_snapshot *s,
		     const char *why)
{
	char d[200];

	call_desc(c, d, sizeof(d));
	fail("%s: snapshot %s: state %s first_error %d bytes %llu/%llu in flight %llu "
	     "quarantined %llu fragments %u/%u physical %u reusable %u timeouts %u "
	     "cancels %u drains %u quarantines %u", d, why, state_name((int)s->state),
	     s->first_error, (unsigned long long)s->transferred_bytes,
	     (unsigned long long)s->total_bytes, (unsigned long long)s->in_flight_bytes,
	     (unsigned long long)s->quarantined_bytes, s->completed_fragments,
	     s->total_fragments, s->physical_complete, s->buffer_reusable,
	     s->deadline_timeouts, s->cancel_requests, s->drain_attempts,
	     s->quarantine_events);
	return false;
}

/* What every snapshot must satisfy (lifecycle.md, uapi/xferk.h). */
static bool snap_invariants(const struct call *c, const struct xferk_op_snapshot *s)
{
	bool phys = s->physical_complete;
	uint32_t st_ = s->state;

	if (st_ >= XFERK_STATE_COUNT)
		return snap_bad(c, s, "has no valid state");
	if (s->buffer_reusable != s->physical_complete || s->physical_complete > 1)
		return snap_bad(c, s, "buffer_reusable differs from physical_complete");
	if (s->transferred_bytes > s->total_bytes ||
	    s->in_flight_bytes > s->total_bytes - s->transferred_bytes)
		return snap_bad(c, s, "transferred + in flight exceed total_bytes");
	if (!s->total_fragments || s->total_fragments > XFERK_MAX_FRAGS ||
	    s->total_bytes < s->total_fragments || s->total_bytes > XFERK_MAX_OP_BYTES)
		return snap_bad(c, s, "fragments or bytes out of bounds");
	if (s->completed_fragments > s->total_fragments)
		return snap_bad(c, s, "more fragments completed than submitted");
	if (s->deadline_timeouts > 1)
		return snap_bad(c, s, "the deadline expired more than once");
	if (s->first_error > 0 || s->first_error < -4095)
		return snap_bad(c, s, "first_error is not a negative errno");
	if (is_final(st_) && !phys)
		return snap_bad(c, s, "a final state without physical completion");
	if (phys && !is_final(st_) && st_ != XFERK_STATE_TIMED_OUT)
		return snap_bad(c, s, "physically complete in a non-terminal state");
	if (phys && (s->in_flight_bytes || s->completed_fragments != s->total_fragments))
		return snap_bad(c, s, "physically complete with work outstanding");
	if (!phys && s->submit_to_physical_ns)
		return snap_bad(c, s, "submit_to_physical_ns before physical completion");
	if (st_ == XFERK_STATE_SUCCEEDED &&
	    (s->first_error || s->transferred_bytes != s->total_bytes))
		return snap_bad(c, s, "SUCCEEDED with an error or bytes missing");
	if ((st_ == XFERK_STATE_FAILED || st_ == XFERK_STATE_TIMED_OUT ||
	     st_ >= XFERK_STATE_CANCEL_REQUESTED) && s->first_error >= 0)
		return snap_bad(c, s, "a failed, timed-out or cancelled op without first_error");
	if (st_ == XFERK_STATE_TIMED_OUT && s->deadline_timeouts != 1)
		return snap_bad(c, s, "TIMED_OUT without its deadline expiring");
	if (st_ >= XFERK_STATE_CANCEL_REQUESTED && !s->cancel_requests)
		return snap_bad(c, s, "cancelled without a cancel request");
	if (st_ == XFERK_STATE_QUARANTINED &&
	    (!s->quarantine_events || s->quarantined_bytes != s->in_flight_bytes))
		return snap_bad(c, s, "QUARANTINED without its event or bytes");
	if (st_ != XFERK_STATE_QUARANTINED && s->quarantined_bytes)
		return snap_bad(c, s, "quarantined bytes outside QUARANTINED");
	if (s->failure > XFERK_FAILURE_CANCEL ||
	    (s->failure == XFERK_FAILURE_NONE) != (s->first_error == 0))
		return snap_bad(c, s, "failure does not match first_error");
	if (s->reserved[0] || s->reserved[1])
		return snap_bad(c, s, "reserved fields are not 0");
	return true;
}

/*
 * A snapshot of an op: the invariants, then, if the handle names an op this
 * program submitted on this file, what it submitted and what it saw of the
 * op before (facts learnt before the call was made; for ioctls, the last
 * snapshot: states only move forward, counters only grow).
 */
static void op_snapshot(struct call *c, const struct xferk_op_snapshot *s, bool same)
{
	struct obj *o;
	struct op_rec *r;

	if (!snap_invariants(c, s))
		return;
	states_seen[s->state]++;
	o = same ? obj_find_kind(&files[c->fi], c->h, K_OP) : NULL;
	if (!o)
		return;
	r = &o->op;
	if (s->user_data != r->user_data || s->total_bytes != r->total_bytes ||
	    s->total_fragments != r->nr_frags) {
		snap_bad(c, s, "does not match the op submitted");
		fail("  submitted: user_data %#" PRIx64 " (snapshot %#llx), %" PRIu64
		     " bytes, %u fragments", r->user_data,
		     (unsigned long long)s->user_data, r->total_bytes, r->nr_frags);
		return;
	}
	if (r->phys_at && r->phys_at <= c->t0 && !s->physical_complete)
		snap_bad(c, s, "no longer physically complete");
	if (r->final_at && r->final_at <= c->t0 && s->state != r->final_state)
		snap_bad(c, s, "left a final state");
	if (r->err_at && r->err_at <= c->t0 && s->first_error != r->first_error)
		snap_bad(c, s, "first_error changed");
	if (!c->ring && r->have_last) {
		const struct xferk_op_snapshot *l = &r->last;

		if (!(reachable[l->state] & (1U << s->state)))
			snap_bad(c, s, "moved to a state not reachable from the last one");
		else if (s->transferred_bytes < l->transferred_bytes ||
			 s->completed_fragments < l->completed_fragments ||
			 s->deadline_timeouts < l->deadline_timeouts ||
			 s->cancel_requests < l->cancel_requests ||
			 s->drain_attempts < l->drain_attempts ||
			 s->quarantine_events < l->quarantine_events ||
			 s->late_completions < l->late_completions)
			snap_bad(c, s, "a counter went down");
		else if (l->submit_to_physical_ns &&
			 s->submit_to_physical_ns != l->submit_to_physical_ns)
			snap_bad(c, s, "submit_to_physical_ns changed");
	}
	if (!c->ring) {
		r->last = *s;
		r->have_last = true;
	}
	if (s->physical_complete && !r->phys_at)
		r->phys_at = c->t1;
	if (is_final(s->state) && !r->final_at) {
		r->final_at = c->t1;
		r->final_state = s->state;
	}
	if (s->first_error && !r->err_at) {
		r->err_at = c->t1;
		r->first_error = s->first_error;
	}
	if (s->state == XFERK_STATE_FAILED || s->state >= XFERK_STATE_DRAINING)
		chain_hurt(c->fi, r->chain);
}

/* The struct as placed is well formed (what reaches the handler's own checks). */
static bool args_clean(const struct call *c)
{
	const struct cmd *cmd = c->cmd;
	uint32_t flags, i, n;

	if (!cmd || !c->have_before || c->span < cmd->size ||
	    (c->ring && !c->payload_clean))
		return false;
	if (c->place != PL_NORMAL && c->place != PL_UNALIGNED && c->place != PL_RO)
		return false;
	if (c->size < cmd->min_size || c->size > XFERK_ARG_MAX_SIZE)
		return false;
	for (i = cmd->size; i < c->size; i++)
		if (c->before[i])
			return false;
	memcpy(&flags, c->before + 4, 4);
	if (flags & ~cmd->flags)
		return false;
	for (i = 0; i < 3 && cmd->rsv[i].len; i++)
		for (n = 0; n < cmd->rsv[i].len; n++)
			if (cmd->rsv[i].off + n < c->size &&
			    c->before[cmd->rsv[i].off + n])
				return false;
	return true;
}

/*
 * The unprivileged process: a null peer and the internal class need
 * CAP_SYS_ADMIN: never 0, and EPERM when nothing else is wrong.
 */
static void unpriv_checks(struct call *c, int res, bool parked)
{
	char d[200];

	if (is_cmd(c, C_CONNECT) && (c->flags & XFERK_CONNECT_NULL_PEER)) {
		uint32_t nr_qps;

		memcpy(&nr_qps, c->before +
		       offsetof(struct xferk_ioc_connect, nr_qps),
		       sizeof(nr_qps));
		call_desc(c, d, sizeof(d));
		if (res == 0)
			fail("%s: an unprivileged null-peer CONNECT succeeded", d);
		/* More QPs than any session has is EINVAL for anyone. */
		else if (args_clean(c) && c->flags == XFERK_CONNECT_NULL_PEER &&
			 nr_qps <= XFERK_MAX_QPS && res != -EPERM)
			fail("%s: an unprivileged null-peer CONNECT got %s, want EPERM",
			     d, errname(-res));
	}
	if (is_cmd(c, C_SUBMIT) && c->prio == XFERK_PRIO_INTERNAL) {
		struct xferk_ioc_submit s;
		bool clean;

		call_desc(c, d, sizeof(d));
		if (res == 0 || parked) {
			fail("%s: an unprivileged SUBMIT of the internal class succeeded", d);
			return;
		}
		if (!args_clean(c) || c->size < offsetof(struct xferk_ioc_submit, window_bytes))
			return;
		memcpy(&s, c->before, sizeof(s));
		clean = !s.reserved && (c->size < sizeof(s) || !s.reserved2) &&
			(c->ring || (s.flags & XFERK_SUBMIT_CANCEL_ON_DEADLINE) ||
			 !s.drain_budget_ns) &&
			(c->ring || !(s.flags & XFERK_SUBMIT_AUTO_RELEASE)) &&
			/* A group or a notification may fail first (ABI 8). */
			!(s.flags & XFERK_SUBMIT_NOTIFY) &&
			(c->size <= offsetof(struct xferk_ioc_submit, group) ||
			 (!s.group && !s.notify_tag));
		/* Through the ring the deadline is checked first. */
		if (c->ring)
			clean = clean && s.deadline_ns < KTIME_MAX_NS &&
				s.drain_budget_ns < 10 * SEC &&
				(s.deadline_ns < c->t0 || s.deadline_ns - c->t0 < 30 * SEC);
		if (clean && res != -EPERM)
			fail("%s: an unprivileged SUBMIT of the internal class got %s, want EPERM",
			     d, errname(-res));
	}
}

/* Commands whose output goes back with ETIMEDOUT too (EVENTS: may). */
static bool out_on_timeout(const struct call *c)
{
	return is_cmd(c, C_WAIT) || is_cmd(c, C_CANCEL) || is_cmd(c, C_GROUP_ABORT) ||
	       is_cmd(c, C_GROUP_WAIT) || is_cmd(c, C_EVENTS);
}

/*
 * A failed call writes nothing back; a successful one nothing beyond
 * min(size, sizeof); a parked ring SUBMIT only its op handle.
 */
static void check_writeback(struct call *c, int res, bool parked)
{
	uint32_t from = 0, i;
	bool success = res == 0 || parked || (res == -ETIMEDOUT && out_on_timeout(c));
	size_t op_off = offsetof(struct xferk_ioc_submit, op);
	char d[200];

	if (!c->rw || !c->have_before)
		return;
	if (c->cmd && success && !parked)
		from = (uint32_t)min64(c->size, c->cmd->size);
	for (i = from; i < c->span; i++) {
		if (parked && i >= op_off && i < op_off + 8)
			continue;
		if (c->uarg[i] != c->before[i]) {
			call_desc(c, d, sizeof(d));
			fail("%s returned %s and changed byte %u of its argument (%#x -> %#x)",
			     d, res_name(res, parked), i, c->before[i], c->uarg[i]);
			return;
		}
	}
}

/* Every call ends here: count, check, learn. */
static void finish(struct call *c, int res)
{
	struct fz_file *F = &files[c->fi];
	bool same = F->fd >= 0 && F->gen == c->fgen;
	bool parked = c->ring && is_cmd(c, C_SUBMIT) && (res >= 0 || res == -ECANCELED);
	char d[200];

	c->res = res;
	counts[c->ring][cmd_index(c->cmd)][res_slot(res, parked)]++;
	call_desc(c, d, sizeof(d));
	trace("%s -> %s%s", d, res_name(res, parked), c->real ? " (real)" : "");
	if (parked && res >= 0 && !is_cqe_state(res))
		fail("%s: a parked SUBMIT completed with %d (%s), not a settled state",
		     d, res, state_name(res));
	if (!parked && res > 0)
		fail("%s returned %d", d, res);
	if (!parked && res < 0) {
		int e = -res;

		if (c->ring && e == EAGAIN)
			fail("%s: EAGAIN through io_uring", d);
		else if (e >= 512)
			fail("%s: kernel-internal errno %d leaked", d, e);
		else if (!errno_documented(c->cmd, e))
			fail("%s: %s is not documented for %s", d, errname(e),
			     c->cmd ? c->cmd->name : "an unknown command");
	}
	if (c->expect_set && res != c->expect)
		fail("%s: got %s, want %s", d, res_name(res, parked),
		     res_name(c->expect, false));
	if (unpriv)
		unpriv_checks(c, res, parked);
	if (c->cmd && c->cmd->done)
		c->cmd->done(c, res, same);
	check_writeback(c, res, parked);
}

/* ------------------------------------------------------------------ */
/* What each command's result teaches                                   */
/* ------------------------------------------------------------------ */

static void real_drop(int fi, struct obj *o, bool ring_ok);

static void done_info(struct call *c, int res, bool same)
{
	struct xferk_ioc_info x;
	char d[200];

	if (res || !c->rw)
		return;
	memcpy(&x, c->uarg, sizeof(x));
	if (x.abi_version != XFERK_ABI_VERSION || !(x.features & XFERK_FEAT_INFO)) {
		call_desc(c, d, sizeof(d));
		fail("%s: abi_version %u, features %#llx", d, x.abi_version,
		     (unsigned long long)x.features);
	}
}

static void done_mr_reg(struct call *c, int res, bool same)
{
	struct xferk_ioc_mr_reg x;
	struct obj *o;

	if (res || !c->rw)
		return;
	memcpy(&x, c->uarg, sizeof(x));
	c->out_h = x.handle;
	o = same ? obj_add(&files[c->fi], K_REGION, x.handle) : NULL;
	if (!o)
		return;
	o->addr = x.addr;
	o->len = x.len;
	o->access = x.access;
}

/*
 * MR_DEREG, DISCONNECT, UNEXPORT, UNIMPORT, RELEASE. With a read-only
 * struct the command ran and only its write-back failed (EFAULT).
 */
static void done_drop(struct call *c, int res, bool same)
{
	if (same && (res == 0 || (res == -EFAULT && c->place == PL_RO)))
		obj_kill(&files[c->fi], c->h);
}

static void done_connect(struct call *c, int res, bool same)
{
	struct xferk_ioc_connect x;
	struct obj *o;

	if (res || !c->rw)
		return;
	memcpy(&x, c->uarg, sizeof(x));
	c->out_h = x.handle;
	o = same ? obj_add(&files[c->fi], K_CONN, x.handle) : NULL;
	if (!o)
		return;
	o->null = x.flags & XFERK_CONNECT_NULL_PEER;
	o->rdma = !o->null;
	o->delay = x.null_delay_ns;
	/* A slow null peer would hold every op on it: gone at once. */
	if (o->null && o->delay > 50 * MS)
		real_drop(c->fi, o, false);
}

/* An export or a window was made: its token and its object. */
static void export_made(struct call *c, bool same, uint64_t conn, uint64_t mr,
			uint64_t handle, uint64_t len, uint32_t access,
			const uint8_t *token)
{
	struct obj *o, *cn;

	c->out_h = handle;
	memcpy(c->out_token, token, XFERK_TOKEN_SIZE);
	cn = same ? obj_find_kind(&files[c->fi], conn, K_CONN) : NULL;
	if (same)
		tok_add(token, len, access, cn && cn->null, cn && cn->rdma, c->fi);
	o = same ? obj_add(&files[c->fi], K_EXPORT, handle) : NULL;
	if (!o)
		return;
	o->conn = conn;
	o->mr = mr;
	o->len = len;
	o->access = access;
	o->null = cn && cn->null;
	o->rdma = cn && cn->rdma;
	memcpy(o->token, token, XFERK_TOKEN_SIZE);
}

static void done_export(struct call *c, int res, bool same)
{
	struct xferk_ioc_export x;

	if (res || !c->rw)
		return;
	memcpy(&x, c->uarg, sizeof(x));
	export_made(c, same, x.conn, x.mr, x.handle, x.len, x.access, x.token);
}

static void done_window_open(struct call *c, int res, bool same)
{
	struct xferk_ioc_window_open x;

	if (res || !c->rw)
		return;
	memcpy(&x, c->uarg, sizeof(x));
	export_made(c, same, x.conn, x.mr, x.handle, x.len, x.access, x.token);
}

static void done_import(struct call *c, int res, bool same)
{
	struct xferk_ioc_import x;
	struct obj *o;
	struct tok *t;

	if (res || !c->rw)
		return;
	memcpy(&x, c->uarg, sizeof(x));
	c->out_h = x.handle;
	o = same ? obj_add(&files[c->fi], K_REMOTE, x.handle) : NULL;
	if (!o)
		return;
	o->conn = x.conn;
	memcpy(o->token, x.token, XFERK_TOKEN_SIZE);
	t = tok_find(x.token);
	if (t) {
		o->len = t->len;
		o->access = t->access;
		o->null = t->null;
		o->rdma = t->rdma;
	}
}

static struct obj *register_op(struct call *c, uint64_t h)
{
	struct obj *o = obj_add(&files[c->fi], K_OP, h);

	if (!o)
		return NULL;
	o->op.user_data = c->user_data;
	o->op.total_bytes = c->total_bytes;
	o->op.nr_frags = c->nr_frags;
	o->op.ring = c->ring;
	o->op.auto_release = c->ring && (c->flags & XFERK_SUBMIT_AUTO_RELEASE);
	o->op.bg_cancel = c->ring || (c->flags & XFERK_SUBMIT_CANCEL_ON_DEADLINE);
	o->op.park_end = c->ring ? c->deadline + min64(c->budget, XFERK_URING_MAX_PARK_NS) : 0;
	o->op.chain = c->chain;
	o->op.group = c->group;
	o->op.src_mr = c->src_mr;
	return o;
}

static void done_submit(struct call *c, int res, bool same)
{
	struct fz_file *F = &files[c->fi];
	bool parked = c->ring && (res >= 0 || res == -ECANCELED);
	struct xferk_ioc_submit x;
	uint64_t h = 0;
	struct obj *o;
	char d[200];

	if (c->real && (c->ring ? parked : res == 0))
		st.real_submits_ok++;
	if (!c->ring) {
		if (res || !c->rw)
			return;
		memcpy(&x, c->uarg, sizeof(x));
		c->out_h = x.op;
		if (same)
			register_op(c, x.op);
		return;
	}
	if (!parked)
		return;
	/*
	 * A parked submit: the handle went back at issue, before the CQE
	 * posts, also when issued from io-wq (IOSQE_ASYNC, or re-issued after
	 * waiting for a dma-buf's exporter); and in CQE32.
	 */
	call_desc(c, d, sizeof(d));
	if (c->rw) {
		memcpy(&h, c->uarg + offsetof(struct xferk_ioc_submit, op), 8);
		if (!h)
			fail("%s: parked, but no op handle was written back", d);
		else if (h && c->op_h && h != c->op_h)
			fail("%s: the op handle changed from %#" PRIx64 " to %#" PRIx64,
			     d, c->op_h, h);
	}
	if (rings[c->ri].flags & IORING_SETUP_CQE32) {
		if (!c->big0)
			fail("%s: big_cqe[0] of a parked SUBMIT is 0", d);
		else if (h && c->big0 != h)
			fail("%s: big_cqe[0] %#" PRIx64 " is not the op handle %#" PRIx64,
			     d, c->big0, h);
		if (!h)
			h = c->big0;
	}
	c->out_h = h;
	if (!same || !h)
		return;
	/* A struct the handle could not go into: the op was taken back. */
	o = obj_find_kind(F, h, K_OP);
	if (!o && !c->op_h && c->rw)
		o = register_op(c, h);
	if (res == -ECANCELED)
		return;
	if (o && res != XFERK_STATE_QUARANTINED && !o->op.phys_at)
		o->op.phys_at = c->t1;
	if (o && is_final((uint32_t)res) && !o->op.final_at) {
		o->op.final_at = c->t1;
		o->op.final_state = (uint32_t)res;
	}
	if (res == XFERK_STATE_FAILED || res >= XFERK_STATE_DRAINING)
		chain_hurt(c->fi, c->chain);
	if (res == XFERK_STATE_QUARANTINED)
		st.quarantined++;
	else if (c->flags & XFERK_SUBMIT_AUTO_RELEASE)
		obj_kill(F, h);
}

static void done_wait(struct call *c, int res, bool same)
{
	bool phys = c->flags & XFERK_WAIT_PHYSICAL, cond;
	struct xferk_op_snapshot s;
	char d[200];

	if ((res != 0 && res != -ETIMEDOUT) || !c->rw)
		return;
	memcpy(&s, c->uarg + offsetof(struct xferk_ioc_wait, snap), sizeof(s));
	op_snapshot(c, &s, same);
	call_desc(c, d, sizeof(d));
	cond = phys ? s.buffer_reusable : is_settled(s.state);
	if (!res != cond)
		fail("%s returned %s, but its snapshot is %s and %s%s", d,
		     res_name(res, false), state_name((int)s.state),
		     s.buffer_reusable ? "reusable" : "not reusable",
		     phys ? " (XFERK_WAIT_PHYSICAL)" : "");
	if (res == -ETIMEDOUT && c->deadline > KTIME_MAX_NS)
		fail("%s: ETIMEDOUT without a deadline", d);
	else if (res == -ETIMEDOUT && c->t1 < c->deadline)
		fail("%s: ETIMEDOUT %" PRIu64 " ns before its deadline", d,
		     c->deadline - c->t1);
}

/* A connection's state: in range, the reserved fields 0. */
static void done_conn_query(struct call *c, int res, bool same)
{
	struct xferk_conn_info i;

	if (res || !c->rw)
		return;
	memcpy(&i, c->uarg + offsetof(struct xferk_ioc_conn_query, info),
	       sizeof(i));
	if (i.state > XFERK_CONN_STATE_DOWN || i.initiator > 1 ||
	    i.nr_qps < 1 || i.nr_qps > XFERK_MAX_QPS ||
	    i.reserved[0] || i.reserved[1] ||
	    i.error > 0 || (i.state == XFERK_CONN_STATE_UP && !i.path_gen) ||
	    i.reconnects > i.path_deaths)
		fail("CONN_QUERY: state %u error %d path_gen %u reconnects %llu deaths %llu initiator %u nr_qps %u",
		     i.state, i.error, i.path_gen,
		     (unsigned long long)i.reconnects,
		     (unsigned long long)i.path_deaths, i.initiator, i.nr_qps);
}

static void done_query(struct call *c, int res, bool same)
{
	struct xferk_op_snapshot s;

	if (res || !c->rw)
		return;
	memcpy(&s, c->uarg + offsetof(struct xferk_ioc_query, snap), sizeof(s));
	op_snapshot(c, &s, same);
}

/*
 * CANCEL returns 0 exactly when its snapshot is reusable, and ETIMEDOUT
 * when it is not: QUARANTINED at the drain deadline, unless another
 * cancel (the deadline policy, a ring command, an interrupted CANCEL
 * going on in the background) retried the drain meanwhile.
 */
static void done_cancel(struct call *c, int res, bool same)
{
	struct obj *o = same ? obj_find_kind(&files[c->fi], c->h, K_OP) : NULL;
	struct xferk_op_snapshot s;
	uint64_t until = c->deadline;
	char d[200];

	/* An interrupted CANCEL goes on in the background. */
	if (o && res == -EINTR) {
		o->op.bg_cancel = true;
		chain_hurt(c->fi, o->op.chain);
	}
	if ((res != 0 && res != -ETIMEDOUT) || !c->rw)
		return;
	memcpy(&s, c->uarg + offsetof(struct xferk_ioc_cancel, snap), sizeof(s));
	op_snapshot(c, &s, same);
	call_desc(c, d, sizeof(d));
	if (!res != !!s.buffer_reusable)
		fail("%s returned %s, but its snapshot is %s and %s", d,
		     res_name(res, false), state_name((int)s.state),
		     s.buffer_reusable ? "reusable" : "not reusable");
	else if (!s.cancel_requests)
		fail("%s: no cancel request counted", d);
	else if (res == 0 && !is_final(s.state))
		fail("%s returned 0 with the op %s", d, state_name((int)s.state));
	if (res != -ETIMEDOUT)
		return;
	st.quarantined++;
	if (s.state != XFERK_STATE_QUARANTINED && s.state != XFERK_STATE_DRAINING &&
	    s.state != XFERK_STATE_CANCEL_REQUESTED)
		fail("%s returned ETIMEDOUT with the op %s", d, state_name((int)s.state));
	else if (s.state != XFERK_STATE_QUARANTINED && o && !o->op.bg_cancel && c->quiet)
		fail("%s returned ETIMEDOUT with the op %s, not QUARANTINED", d,
		     state_name((int)s.state));
	if (o && o->op.ring)
		until = min64(until, o->op.park_end);
	if (o && until <= KTIME_MAX_NS && c->t1 < until)
		fail("%s: ETIMEDOUT %" PRIu64 " ns before the drain deadline", d,
		     until - c->t1);
}

static void done_group_create(struct call *c, int res, bool same)
{
	struct xferk_ioc_group_create x;
	struct obj *o;
	char d[200];

	if (res || !c->rw)
		return;
	memcpy(&x, c->uarg, sizeof(x));
	c->out_h = x.handle;
	if (!x.generation) {
		call_desc(c, d, sizeof(d));
		fail("%s: a group with generation 0", d);
	}
	o = same ? obj_add(&files[c->fi], K_GROUP, x.handle) : NULL;
	if (!o)
		return;
	o->grp.gen = x.generation;
	o->grp.tag = x.tag;
}

static bool group_snap_bad(const struct call *c, const struct xferk_group_snapshot *s,
			   const char *why)
{
	char d[200];

	call_desc(c, d, sizeof(d));
	fail("%s: group snapshot %s: ops %u physical %u (submitted %u in progress %u "
	     "succeeded %u failed %u timed out %u cancel requested %u draining %u "
	     "drained %u quarantined %u) aborted %u first_error %d bytes %llu/%llu "
	     "in flight %llu quarantined %llu quarantines %u", d, why, s->ops,
	     s->ops_physical, s->ops_in_state[XFERK_STATE_SUBMITTED],
	     s->ops_in_state[XFERK_STATE_IN_PROGRESS],
	     s->ops_in_state[XFERK_STATE_SUCCEEDED], s->ops_in_state[XFERK_STATE_FAILED],
	     s->ops_in_state[XFERK_STATE_TIMED_OUT],
	     s->ops_in_state[XFERK_STATE_CANCEL_REQUESTED],
	     s->ops_in_state[XFERK_STATE_DRAINING], s->ops_in_state[XFERK_STATE_DRAINED],
	     s->ops_in_state[XFERK_STATE_QUARANTINED], s->aborted, s->first_error,
	     (unsigned long long)s->transferred_bytes,
	     (unsigned long long)s->total_bytes, (unsigned long long)s->in_flight_bytes,
	     (unsigned long long)s->quarantined_bytes, s->quarantine_events);
	return false;
}

#define IN(s, st)	((uint64_t)(s)->ops_in_state[XFERK_STATE_##st])

/*
 * What every group snapshot must satisfy: the sums of op snapshots that
 * each satisfy snap_invariants(), and the group it names.
 */
static bool group_snap_invariants(const struct call *c, const struct xferk_group_snapshot *s,
				  const struct obj *g)
{
	uint64_t n = 0, errs;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(s->ops_in_state); i++) {
		if (i >= XFERK_STATE_COUNT && s->ops_in_state[i])
			return group_snap_bad(c, s, "counts ops in no valid state");
		n += s->ops_in_state[i];
	}
	if (n != s->ops)
		return group_snap_bad(c, s, "ops_in_state does not add up to ops");
	if (s->ops_physical > IN(s, SUCCEEDED) + IN(s, FAILED) + IN(s, DRAINED) +
			      IN(s, TIMED_OUT) ||
	    s->ops_physical < IN(s, SUCCEEDED) + IN(s, FAILED) + IN(s, DRAINED))
		return group_snap_bad(c, s, "ops_physical does not match the ops' states");
	if (s->aborted > 1)
		return group_snap_bad(c, s, "aborted is neither 0 nor 1");
	if (s->first_error > 0 || s->first_error < -4095)
		return group_snap_bad(c, s, "first_error is not a negative errno");
	errs = IN(s, FAILED) + IN(s, TIMED_OUT) + IN(s, CANCEL_REQUESTED) +
	       IN(s, DRAINING) + IN(s, DRAINED) + IN(s, QUARANTINED);
	if (errs && !s->first_error)
		return group_snap_bad(c, s, "failed or cancelled ops without first_error");
	if (s->transferred_bytes > s->total_bytes ||
	    s->in_flight_bytes > s->total_bytes - s->transferred_bytes ||
	    s->quarantined_bytes > s->in_flight_bytes)
		return group_snap_bad(c, s, "byte sums out of order");
	if (s->total_bytes < s->ops || s->total_bytes > s->ops * XFERK_MAX_OP_BYTES)
		return group_snap_bad(c, s, "total_bytes out of bounds for its ops");
	if (IN(s, QUARANTINED) > s->quarantine_events)
		return group_snap_bad(c, s, "QUARANTINED ops without their events");
	if (!s->generation)
		return group_snap_bad(c, s, "generation is 0");
	if (s->reserved[0] || s->reserved[1])
		return group_snap_bad(c, s, "reserved fields are not 0");
	if (g && (s->generation != g->grp.gen || s->tag != g->grp.tag))
		return group_snap_bad(c, s, "does not name the group created");
	if (g && g->grp.aborted_at && g->grp.aborted_at <= c->t0 && !s->aborted)
		return group_snap_bad(c, s, "is no longer aborted");
	return true;
}

/*
 * GROUP_ABORT, _WAIT, _QUERY. An abort that returned its snapshot closed
 * the group for good. With 0, the snapshot shows what was promised: every
 * op physically complete (ABORT, WAIT with XFERK_WAIT_PHYSICAL) or settled
 * (WAIT). Whether an ETIMEDOUT snapshot shows the opposite is not checked:
 * unlike WAIT's, the group's snapshot is taken after the result was
 * decided. An abort's ETIMEDOUT may come before its deadline when ops of
 * the group were parked in a ring (their own drain ended first, as for
 * CANCEL): checked only for groups no ring SUBMIT named.
 */
static void done_group(struct call *c, int res, bool same)
{
	struct obj *g = same ? obj_find_kind(&files[c->fi], c->h, K_GROUP) : NULL;
	bool abort = is_cmd(c, C_GROUP_ABORT), phys, cond;
	struct xferk_group_snapshot s;
	char d[200];

	if (abort && (res == 0 || res == -ETIMEDOUT ||
		      (res == -EFAULT && c->place == PL_RO))) {
		if (g && !g->grp.aborted_at)
			g->grp.aborted_at = c->t1;
		st.groups_aborted++;
	}
	if ((res != 0 && !(res == -ETIMEDOUT && out_on_timeout(c))) || !c->rw)
		return;
	memcpy(&s, c->uarg + offsetof(struct xferk_ioc_group, snap), sizeof(s));
	if (!group_snap_invariants(c, &s, g))
		return;
	call_desc(c, d, sizeof(d));
	if (abort && !s.aborted)
		fail("%s returned %s, but its snapshot is not aborted", d,
		     res_name(res, false));
	if (is_cmd(c, C_GROUP_QUERY))
		return;
	phys = abort || (c->flags & XFERK_WAIT_PHYSICAL);
	cond = phys ? s.ops_physical == s.ops :
		      !IN(&s, SUBMITTED) && !IN(&s, IN_PROGRESS);
	if (!res && !cond)
		group_snap_bad(c, &s, phys ? "returned 0 with ops not physically complete" :
					     "returned 0 with ops not settled");
	if (res != -ETIMEDOUT || (abort && (!g || g->grp.ring_joined)))
		return;
	if (c->deadline > KTIME_MAX_NS)
		fail("%s: ETIMEDOUT without a deadline", d);
	else if (c->t1 < c->deadline)
		fail("%s: ETIMEDOUT %" PRIu64 " ns before its deadline", d,
		     c->deadline - c->t1);
}

/*
 * EVENTS: 0 with 1 .. max_events well-formed events and nothing written
 * beyond them; ETIMEDOUT with none, not before the deadline (unless
 * another EVENTS of the file may have taken them meanwhile).
 */
static void done_events(struct call *c, int res, bool same)
{
	const uint64_t esz = sizeof(struct xferk_event);
	uint8_t *base = c->slot->frags;
	bool in_slot = c->evp >= (uintptr_t)base &&
		       c->evp + (min64(c->max_events, XFERK_EVENTS_MAX) + 1) * esz <=
		       (uintptr_t)base + FRAG_BYTES;
	const uint8_t *evs = (const uint8_t *)(uintptr_t)c->evp;
	struct xferk_ioc_events x, b;
	uint64_t i, n = 0, room;
	char d[200];

	if ((res != 0 && res != -ETIMEDOUT) || !c->rw)
		return;
	call_desc(c, d, sizeof(d));
	memcpy(&x, c->uarg, sizeof(x));
	memcpy(&b, c->before, sizeof(b));
	if (res == -ETIMEDOUT) {
		if ((x.nr_events != b.nr_events && x.nr_events) ||
		    (x.dropped != b.dropped && x.dropped))
			fail("%s: ETIMEDOUT, with %u events and %llu dropped written back",
			     d, x.nr_events, (unsigned long long)x.dropped);
		if (c->t1 < c->deadline && !c->ring && c->ev_alone)
			fail("%s: ETIMEDOUT %" PRIu64 " ns before its deadline", d,
			     c->deadline - c->t1);
	} else {
		n = x.nr_events;
		st.events_dropped += x.dropped;
		if (!n || n > c->max_events) {
			fail("%s returned 0 with %" PRIu64 " events (max_events %u)", d, n,
			     c->max_events);
			return;
		}
	}
	if (!in_slot)
		return;
	for (i = 0; i < n; i++) {
		struct xferk_event e;

		memcpy(&e, evs + i * esz, sizeof(e));
		if (!e.export_handle || e.type < XFERK_EVENT_DATA || e.type > XFERK_EVENT_ABORTED ||
		    (e.flags & ~XFERK_EVENT_INCOMPLETE) ||
		    (e.type != XFERK_EVENT_DATA && (e.flags || e.bytes))) {
			fail("%s: event %" PRIu64 " of %" PRIu64 ": export %#llx tag %#llx "
			     "bytes %llu type %u flags %#x", d, i, n,
			     (unsigned long long)e.export_handle, (unsigned long long)e.tag,
			     (unsigned long long)e.bytes, e.type, e.flags);
			return;
		}
		st.events[e.type]++;
	}
	room = (min64(c->max_events, XFERK_EVENTS_MAX) + 1) * esz;
	for (i = n * esz; i < room; i++)
		if (evs[i] != EV_POISON) {
			struct xferk_event e;

			memcpy(&e, evs + i / esz * esz, sizeof(e));
			fail("%s returned %s with %" PRIu64 " events and wrote byte %" PRIu64
			     " of the array (%#x; there: export %#llx tag %#llx bytes %llu type %u flags %#x; max_events %u)",
			     d, res_name(res, false), n, i, evs[i],
			     (unsigned long long)e.export_handle, (unsigned long long)e.tag,
			     (unsigned long long)e.bytes, e.type, e.flags, c->max_events);
			return;
		}
}

/* ------------------------------------------------------------------ */
/* The commands                                                        */
/* ------------------------------------------------------------------ */

#define RSV(type, field)	{ offsetof(type, field), sizeof(((type *)0)->field) }
#define SZ(type)		sizeof(type)

static const struct cmd cmds[NCMD] = {
	[C_INFO] = {
		.name = "INFO", .nr = XFERK_IOC_INFO,
		.size = SZ(struct xferk_ioc_info), .min_size = SZ(struct xferk_ioc_info),
		.errs = errs_none,
		.rsv = { RSV(struct xferk_ioc_info, reserved0),
			 RSV(struct xferk_ioc_info, reserved) },
		.gen = gen_info, .done = done_info,
	},
	[C_MR_REG] = {
		.name = "MR_REG", .nr = XFERK_IOC_MR_REG,
		.size = SZ(struct xferk_ioc_mr_reg), .min_size = SZ(struct xferk_ioc_mr_reg),
		.errs = errs_mr_reg,
		.rsv = { RSV(struct xferk_ioc_mr_reg, reserved0),
			 RSV(struct xferk_ioc_mr_reg, reserved) },
		.gen = gen_mr_reg, .done = done_mr_reg,
	},
	[C_MR_DEREG] = {
		.name = "MR_DEREG", .nr = XFERK_IOC_MR_DEREG,
		.size = SZ(struct xferk_ioc_handle), .min_size = SZ(struct xferk_ioc_handle),
		.kind = K_REGION, .errs = errs_drop,
		.rsv = { RSV(struct xferk_ioc_handle, reserved) },
		.gen = gen_handle, .done = done_drop,
	},
	[C_CONNECT] = {
		.name = "CONNECT", .nr = XFERK_IOC_CONNECT,
		.size = SZ(struct xferk_ioc_connect), .min_size = SZ(struct xferk_ioc_connect),
		.flags = XFERK_CONNECT_NULL_PEER, .errs = errs_connect,
		.rsv = { RSV(struct xferk_ioc_connect, reserved0),
			 RSV(struct xferk_ioc_connect, reserved) },
		.gen = gen_connect, .done = done_connect,
	},
	[C_DISCONNECT] = {
		.name = "DISCONNECT", .nr = XFERK_IOC_DISCONNECT,
		.size = SZ(struct xferk_ioc_handle), .min_size = SZ(struct xferk_ioc_handle),
		.kind = K_CONN, .errs = errs_drop,
		.rsv = { RSV(struct xferk_ioc_handle, reserved) },
		.gen = gen_handle, .done = done_drop,
	},
	[C_EXPORT] = {
		.name = "EXPORT", .nr = XFERK_IOC_EXPORT,
		.size = SZ(struct xferk_ioc_export), .min_size = SZ(struct xferk_ioc_export),
		.errs = errs_export,
		.rsv = { RSV(struct xferk_ioc_export, reserved0),
			 RSV(struct xferk_ioc_export, reserved) },
		.gen = gen_export, .done = done_export,
	},
	[C_UNEXPORT] = {
		.name = "UNEXPORT", .nr = XFERK_IOC_UNEXPORT,
		.size = SZ(struct xferk_ioc_handle), .min_size = SZ(struct xferk_ioc_handle),
		.kind = K_EXPORT, .errs = errs_drop,
		.rsv = { RSV(struct xferk_ioc_handle, reserved) },
		.gen = gen_handle, .done = done_drop,
	},
	[C_IMPORT] = {
		.name = "IMPORT", .nr = XFERK_IOC_IMPORT,
		.size = SZ(struct xferk_ioc_import), .min_size = SZ(struct xferk_ioc_import),
		.errs = errs_import,
		.rsv = { RSV(struct xferk_ioc_import, reserved) },
		.gen = gen_import, .done = done_import,
	},
	[C_UNIMPORT] = {
		.name = "UNIMPORT", .nr = XFERK_IOC_UNIMPORT,
		.size = SZ(struct xferk_ioc_handle), .min_size = SZ(struct xferk_ioc_handle),
		.kind = K_REMOTE, .errs = errs_drop,
		.rsv = { RSV(struct xferk_ioc_handle, reserved) },
		.gen = gen_handle, .done = done_drop,
	},
	[C_SUBMIT] = {
		.name = "SUBMIT", .nr = XFERK_IOC_SUBMIT,
		/*
		 * ABI 4 appended window_bytes, window_chunks, reserved2;
		 * ABI 8 group and notify_tag.
		 */
		.size = SZ(struct xferk_ioc_submit),
		.min_size = offsetof(struct xferk_ioc_submit, window_bytes),
		.flags = XFERK_SUBMIT_CANCEL_ON_DEADLINE | XFERK_SUBMIT_AUTO_RELEASE |
			 XFERK_SUBMIT_NOTIFY,
		.errs = errs_submit,
		.rsv = { RSV(struct xferk_ioc_submit, reserved),
			 RSV(struct xferk_ioc_submit, reserved2) },
		.gen = gen_submit, .done = done_submit,
	},
	[C_WAIT] = {
		.name = "WAIT", .nr = XFERK_IOC_WAIT,
		.size = SZ(struct xferk_ioc_wait), .min_size = SZ(struct xferk_ioc_wait),
		.flags = XFERK_WAIT_PHYSICAL, .kind = K_OP, .errs = errs_wait,
		.gen = gen_wait, .done = done_wait,
	},
	[C_QUERY] = {
		.name = "QUERY", .nr = XFERK_IOC_QUERY,
		.size = SZ(struct xferk_ioc_query), .min_size = SZ(struct xferk_ioc_query),
		.kind = K_OP, .errs = errs_query,
		.gen = gen_query, .done = done_query,
	},
	[C_RELEASE] = {
		.name = "RELEASE", .nr = XFERK_IOC_RELEASE,
		.size = SZ(struct xferk_ioc_handle), .min_size = SZ(struct xferk_ioc_handle),
		.kind = K_OP, .errs = errs_drop,
		.rsv = { RSV(struct xferk_ioc_handle, reserved) },
		.gen = gen_handle, .done = done_drop,
	},
	[C_CANCEL] = {
		.name = "CANCEL", .nr = XFERK_IOC_CANCEL,
		.size = SZ(struct xferk_ioc_cancel), .min_size = SZ(struct xferk_ioc_cancel),
		.kind = K_OP, .errs = errs_cancel,
		.gen = gen_cancel, .done = done_cancel,
	},
	[C_CONN_QUERY] = {
		.name = "CONN_QUERY", .nr = XFERK_IOC_CONN_QUERY,
		.size = SZ(struct xferk_ioc_conn_query),
		.min_size = SZ(struct xferk_ioc_conn_query),
		.kind = K_CONN, .errs = errs_query,
		.gen = gen_conn_query, .done = done_conn_query,
	},
	[C_WINDOW_OPEN] = {
		.name = "WINDOW_OPEN", .nr = XFERK_IOC_WINDOW_OPEN,
		.size = SZ(struct xferk_ioc_window_open),
		.min_size = SZ(struct xferk_ioc_window_open),
		.errs = errs_window,
		.rsv = { RSV(struct xferk_ioc_window_open, reserved) },
		.gen = gen_window_open, .done = done_window_open,
	},
	[C_WINDOW_CLOSE] = {
		.name = "WINDOW_CLOSE", .nr = XFERK_IOC_WINDOW_CLOSE,
		.size = SZ(struct xferk_ioc_window_close),
		.min_size = SZ(struct xferk_ioc_window_close),
		.kind = K_EXPORT, .errs = errs_drop,
		.rsv = { RSV(struct xferk_ioc_window_close, reserved0),
			 RSV(struct xferk_ioc_window_close, reserved) },
		.gen = gen_window_close, .done = done_drop,
	},
	[C_GROUP_CREATE] = {
		.name = "GROUP_CREATE", .nr = XFERK_IOC_GROUP_CREATE,
		.size = SZ(struct xferk_ioc_group_create),
		.min_size = SZ(struct xferk_ioc_group_create),
		.errs = errs_group_create,
		.rsv = { RSV(struct xferk_ioc_group_create, reserved) },
		.gen = gen_group_create, .done = done_group_create,
	},
	[C_GROUP_ABORT] = {
		.name = "GROUP_ABORT", .nr = XFERK_IOC_GROUP_ABORT,
		.size = SZ(struct xferk_ioc_group), .min_size = SZ(struct xferk_ioc_group),
		.kind = K_GROUP, .errs = errs_group_abort,
		.gen = gen_group, .done = done_group,
	},
	[C_GROUP_WAIT] = {
		.name = "GROUP_WAIT", .nr = XFERK_IOC_GROUP_WAIT,
		.size = SZ(struct xferk_ioc_group), .min_size = SZ(struct xferk_ioc_group),
		.flags = XFERK_WAIT_PHYSICAL, .kind = K_GROUP, .errs = errs_wait,
		.gen = gen_group, .done = done_group,
	},
	[C_GROUP_QUERY] = {
		.name = "GROUP_QUERY", .nr = XFERK_IOC_GROUP_QUERY,
		.size = SZ(struct xferk_ioc_group), .min_size = SZ(struct xferk_ioc_group),
		.kind = K_GROUP, .errs = errs_query,
		/* Its deadline must be 0, as a reserved field. */
		.rsv = { RSV(struct xferk_ioc_group, deadline_ns) },
		.gen = gen_group, .done = done_group,
	},
	[C_GROUP_RELEASE] = {
		.name = "GROUP_RELEASE", .nr = XFERK_IOC_GROUP_RELEASE,
		.size = SZ(struct xferk_ioc_handle), .min_size = SZ(struct xferk_ioc_handle),
		.kind = K_GROUP, .errs = errs_drop,
		.rsv = { RSV(struct xferk_ioc_handle, reserved) },
		.gen = gen_handle, .done = done_drop,
	},
	[C_NOTIFY] = {
		.name = "NOTIFY", .nr = XFERK_IOC_NOTIFY,
		.size = SZ(struct xferk_ioc_notify), .min_size = SZ(struct xferk_ioc_notify),
		.errs = errs_notify,
		.rsv = { RSV(struct xferk_ioc_notify, reserved) },
		.gen = gen_notify,
	},
	[C_EVENTS] = {
		.name = "EVENTS", .nr = XFERK_IOC_EVENTS,
		.size = SZ(struct xferk_ioc_events), .min_size = SZ(struct xferk_ioc_events),
		.errs = errs_events,
		.rsv = { RSV(struct xferk_ioc_events, reserved) },
		.gen = gen_events, .done = done_events,
	},
};

static bool is_drop(const struct call *c)
{
	return c->cmd && c->cmd->done == done_drop;
}

/*
 * Size, flags and reserved fields around what the generator built: the
 * argument rules of uapi/xferk.h.
 */
static void envelope(struct call *c, uint8_t *a)
{
	const struct cmd *cmd = c->cmd;
	uint32_t ksize = cmd->size, first = cmd->min_size, size = ksize, flags;
	unsigned int r = (unsigned int)below(1000), nrsv;
	const struct rsv *rv;

	if (r < 700) {
		size = ksize;
	} else if (r < 750) {
		/* An older caller's. */
		size = ksize > first ? (uint32_t)range(first, ksize - 1) : ksize;
	} else if (r < 810) {
		/* A newer caller's, zero tail. */
		size = ksize + 8 * (uint32_t)range(1, 16);
	} else if (r < 830) {
		size = ksize + (uint32_t)range(1, 7);
	} else if (r < 860) {
		/* A newer caller's, non-zero tail. */
		size = ksize + (uint32_t)range(1, 64);
		a[ksize + below(size - ksize)] = (uint8_t)range(1, 255);
	} else if (r < 880) {
		size = XFERK_ARG_MAX_SIZE;
	} else if (r < 890) {
		size = XFERK_ARG_MAX_SIZE;
		a[ksize + below(XFERK_ARG_MAX_SIZE - ksize)] = (uint8_t)range(1, 255);
	} else if (r < 930) {
		switch (below(4)) {
		case 0:
			size = XFERK_ARG_MAX_SIZE + 1;
			break;
		case 1:
			size = XFERK_ARG_MAX_SIZE + (uint32_t)range(2, PG);
			break;
		case 2:
			size = 0xffffffffU;
			break;
		default:
			size = 0x80000000U | rnd32();
			break;
		}
	} else {
		switch (below(5)) {
		case 0:
			size = 0;
			break;
		case 1:
			size = 4;
			break;
		case 2:
			size = first - 1;
			break;
		case 3:
			size = first - 8;
			break;
		default:
			size = (uint32_t)below(first);
			break;
		}
	}
	memcpy(a, &size, 4);

	memcpy(&flags, a + 4, 4);
	r = (unsigned int)below(100);
	if (r < 6)
		flags |= 1U << below(32);
	else if (r < 8)
		flags = rnd32();
	memcpy(a + 4, &flags, 4);

	for (nrsv = 0; nrsv < 3 && cmd->rsv[nrsv].len; nrsv++)
		;
	if (nrsv && chance(7)) {
		rv = &cmd->rsv[below(nrsv)];
		a[rv->off + below(rv->len)] = (uint8_t)range(1, 255);
	}
}

/* Unknown commands: numbers past the table, wrong directions, other types. */
static void gen_unknown(struct call *c, uint8_t *a)
{
	/* Types the VFS handles itself (FIOCLEX, FIFREEZE, FIGETBSZ, ...). */
	static const unsigned int vfs_types[] = { 0x00, 'T', 'X', 'f', 0x94 };
	static const unsigned int dirs[] = { _IOC_NONE, _IOC_READ, _IOC_WRITE };
	struct xferk_ioc_info *x = (void *)a;
	unsigned int dir, type, nr, i;
	bool vfs;

	x->size = sizeof(*x);
	if (chance(30))
		for (i = 0; i < 64; i++)
			a[i] = (uint8_t)rnd32();
	switch (below(c->ring ? 4 : 3)) {
	case 0:
		type = XFERK_IOC_MAGIC;
		nr = (unsigned int)range(NCMD, 255);
		dir = (unsigned int)below(4);
		break;
	case 1:
		type = XFERK_IOC_MAGIC;
		nr = (unsigned int)below(NCMD);
		dir = dirs[below(3)];
		break;
	case 2:
		do {
			type = (unsigned int)below(256);
			vfs = false;
			for (i = 0; i < ARRAY_SIZE(vfs_types); i++)
				vfs |= type == vfs_types[i];
		} while (vfs || type == XFERK_IOC_MAGIC);
		nr = (unsigned int)below(256);
		dir = (unsigned int)below(4);
		break;
	default:
		/* Any cmd_op: io_uring has no commands of its own here. */
		do
			c->nr = rnd32();
		while (_IOC_TYPE(c->nr) == XFERK_IOC_MAGIC && _IOC_NR(c->nr) < NCMD &&
		       _IOC_DIR(c->nr) == (_IOC_READ | _IOC_WRITE));
		return;
	}
	c->nr = _IOC(dir, type, nr, rnd32() & _IOC_SIZEMASK);
}

/* ------------------------------------------------------------------ */
/* Issuing calls                                                       */
/* ------------------------------------------------------------------ */

static struct call *call_new(int ci, int fi)
{
	struct call *c = calloc(1, sizeof(*c));

	if (!c) {
		perror("calloc");
		exit(T_FAIL);
	}
	c->cmd = ci >= 0 && ci < NCMD ? &cmds[ci] : NULL;
	c->nr = c->cmd ? c->cmd->nr : 0;
	c->fi = fi;
	c->fgen = files[fi].gen;
	c->slot = slot_get();
	c->place = PL_NORMAL;
	c->ri = -1;
	c->payload_clean = true;
	return c;
}

static void call_free(struct call *c)
{
	if (c->slot && !c->slot->retired)
		slot_put(c->slot);
	free(c);
}

/* Puts the struct where c->place says. */
static void place_arg(struct call *c, const uint8_t *a)
{
	struct slot *s = c->slot;
	uint32_t len = c->cmd ? c->cmd->size : sizeof(struct xferk_ioc_info);

	memcpy(&c->size, a, 4);
	memcpy(&c->flags, a + 4, 4);
	if (c->size > len)
		len = (uint32_t)min64(c->size, ARG_BUF);
	switch (c->place) {
	case PL_NORMAL:
	case PL_UNALIGNED:
		c->uarg = s->arg + (c->place == PL_UNALIGNED ? range(1, 7) : 0);
		memcpy(c->uarg, a, len);
		memcpy(c->before, a, len);
		c->span = len;
		c->rw = true;
		c->have_before = true;
		break;
	case PL_STRADDLE: {
		uint32_t cut = (uint32_t)below(len);	/* readable before the guard */

		c->uarg = s->arg + 2 * PG - cut;
		memcpy(c->uarg, a, cut);
		break;
	}
	case PL_RO:
		c->uarg = s->arg;
		memcpy(c->uarg, a, len);
		memcpy(c->before, a, len);
		c->span = len;
		c->have_before = true;
		mprotect(s->arg, 2 * PG, PROT_READ);
		s->ro = true;
		break;
	case PL_NULL:
		c->uarg = NULL;
		break;
	default:
		c->uarg = (uint8_t *)(uintptr_t)bad_address(c->place);
		break;
	}
}

static void ioctl_issue(struct call *c)
{
	char d[200];
	int ret, err;

	call_desc(c, d, sizeof(d));
	/*
	 * Nothing may interrupt (and so restart) it: no signal, no parked
	 * ring submit whose completion runs as task work in this task.
	 */
	c->quiet = !npending_submits && now_ns() > retired_due;
	if (!c->real)
		maybe_arm_signal();
	if (alarm_armed)
		c->quiet = false;
	c->t0 = now_ns();
	wd_begin("%s", d);
	ret = ioctl(files[c->fi].fd, c->nr, c->uarg);
	err = errno;
	wd_end();
	c->t1 = now_ns();
	disarm_signal();
	finish(c, ret < 0 ? -err : ret);
}

/* When the CQE must have come by: the call's own bound and a margin. */
static uint64_t due_of(const struct call *c)
{
	uint64_t wait = 0, margin = (debug_kernel ? 60 : 20) * SEC;
	uint64_t dl = c->deadline;

	switch (cmd_index(c->cmd)) {
	case C_SUBMIT:
		if (dl > c->t0 && dl <= KTIME_MAX_NS)
			wait = min64(dl - c->t0, 2 * XFERK_URING_MAX_PARK_NS) +
			       min64(c->budget, XFERK_URING_MAX_PARK_NS) + flush_timeout_ns;
		break;
	case C_WAIT:
	case C_GROUP_WAIT:
	case C_EVENTS:
		wait = dl > KTIME_MAX_NS ? 90 * SEC : dl > c->t0 ? min64(dl - c->t0, 90 * SEC) : 0;
		break;
	case C_CANCEL:
	case C_GROUP_ABORT:
		wait = dl > c->t0 ? min64(dl - c->t0, XFERK_URING_MAX_PARK_NS) : 0;
		break;
	case C_CONNECT:
		wait = c->conn_timeout ? min64(c->conn_timeout * MS, 60 * SEC) : 5 * SEC;
		break;
	default:
		break;
	}
	return c->t0 + wait + margin;
}

static int ring_pick(void)
{
	unsigned int start = (unsigned int)below(NRINGS), k;

	for (k = 0; k < NRINGS; k++) {
		unsigned int ri = (start + k) % NRINGS;

		if (rings[ri].live && rings[ri].inflight < RING_INFLIGHT)
			return (int)ri;
	}
	return -1;
}

/*
 * One SQE: IORING_OP_URING_CMD with the payload pointing at the struct;
 * the payload and, in a 128-byte SQE, its second half sometimes not zero.
 */
static void ring_issue(struct call *c)
{
	struct fz_ring *r = &rings[c->ri];
	struct xferk_uring_cmd pl = { .arg = (uintptr_t)c->uarg };
	struct io_uring_sqe *sqe;
	struct obj *o;
	unsigned int idx, tries = 0;
	char d[200];
	int ret;

	for (idx = 0; idx < MAX_PENDING && pending[idx]; idx++)
		;
	sqe = io_uring_get_sqe(&r->ring);
	if (!sqe || idx == MAX_PENDING) {
		fail("no SQE or no room for one (ring %d)", c->ri);
		call_free(c);
		return;
	}
	memset(sqe, 0, (r->flags & IORING_SETUP_SQE128) ? 128 : 64);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, files[c->fi].fd, NULL, 0, 0);
	sqe->cmd_op = c->nr;
	if (!c->real && chance(3)) {
		pl.flags = 1U << below(32);
		c->payload_clean = false;
	}
	if (!c->real && chance(3)) {
		pl.reserved = rnd32() | 1;
		c->payload_clean = false;
	}
	memcpy(sqe->cmd, &pl, sizeof(pl));
	if (!c->real && (r->flags & IORING_SETUP_SQE128) && chance(4)) {
		sqe->cmd[sizeof(pl) + below(64)] = (uint8_t)range(1, 255);
		c->payload_clean = false;
	}
	if (chance(8)) {
		sqe->flags |= IOSQE_ASYNC;
		c->async = true;
	}
	c->ud = (++ud_seq << 8) | idx;
	sqe->user_data = c->ud;
	pending[idx] = c;
	r->inflight++;
	npending++;
	if (is_cmd(c, C_SUBMIT))
		npending_submits++;
	if (is_cmd(c, C_EVENTS))
		npending_events++;
	o = obj_find(&files[c->fi], c->h);
	if (o && is_drop(c))
		o->drops_pending++;
	if (o && o->kind == K_OP && is_cmd(c, C_CANCEL))
		o->op.bg_cancel = true;
	call_desc(c, d, sizeof(d));
	c->t0 = now_ns();
	c->due = due_of(c);
	wd_begin("io_uring_submit: %s", d);
	do
		ret = io_uring_submit(&r->ring);
	while ((ret == -EINTR || ret == -EAGAIN || ret == -EBUSY) && ++tries < 1000);
	wd_end();
	if (ret != 1)
		fail("io_uring_submit of %s: %d", d, ret);
	/* Issued inline: a parked submit's handle is there already. */
	if (is_cmd(c, C_SUBMIT) && c->rw && !c->async &&
	    files[c->fi].gen == c->fgen) {
		uint64_t h;

		memcpy(&h, c->uarg + offsetof(struct xferk_ioc_submit, op), 8);
		if (h && register_op(c, h))
			c->op_h = h;
	}
}

/* Fire and forget: ioctl now, or a ring whose CQE is checked when it comes. */
static void issue(struct call *c, const uint8_t *a)
{
	place_arg(c, a);
	if (c->ring) {
		ring_issue(c);
		return;
	}
	ioctl_issue(c);
	call_free(c);
}

/* An ioctl whose outputs the caller reads; the caller frees @c. */
static int run_ioctl(struct call *c, const uint8_t *a)
{
	place_arg(c, a);
	ioctl_issue(c);
	return c->res;
}

static void cqe_arrived(int ri, const struct io_uring_cqe *cqe, uint64_t big0)
{
	unsigned int idx = (unsigned int)(cqe->user_data & 0xff);
	struct call *c = idx < MAX_PENDING ? pending[idx] : NULL;
	struct obj *o;

	if (!c || c->ud != cqe->user_data || c->ri != ri) {
		fail("ring %d: a CQE (user_data %#llx, res %d) for no outstanding SQE: "
		     "a second CQE for one SQE? (slot: %#llx ring %d)", ri,
		     (unsigned long long)cqe->user_data, cqe->res,
		     c ? (unsigned long long)c->ud : 0ULL, c ? c->ri : -1);
		return;
	}
	pending[idx] = NULL;
	rings[ri].inflight--;
	npending--;
	if (is_cmd(c, C_SUBMIT))
		npending_submits--;
	if (is_cmd(c, C_EVENTS))
		npending_events--;
	c->t1 = now_ns();
	c->big0 = big0;
	if (c->overdue)
		st.late_cqes++;
	o = files[c->fi].gen == c->fgen ? obj_find(&files[c->fi], c->h) : NULL;
	if (o && is_drop(c) && o->drops_pending)
		o->drops_pending--;
	finish(c, cqe->res);
	call_free(c);
}

static void reap_ring(int ri, unsigned int wait_ms)
{
	struct fz_ring *r = &rings[ri];
	struct io_uring_cqe *cqe, copy;
	uint64_t big0;
	int ret;

	if (!r->live)
		return;
	for (;;) {
		if (wait_ms) {
			struct __kernel_timespec ts = {
				.tv_sec = wait_ms / 1000,
				.tv_nsec = (long long)(wait_ms % 1000) * 1000000,
			};

			ret = io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
			wait_ms = 0;
		} else {
			ret = io_uring_peek_cqe(&r->ring, &cqe);
		}
		if (ret == -EINTR)
			continue;
		if (ret)
			return;
		copy = *cqe;
		big0 = (r->flags & IORING_SETUP_CQE32) ? cqe->big_cqe[0] : 0;
		io_uring_cqe_seen(&r->ring, cqe);
		cqe_arrived(ri, &copy, big0);
	}
}

static void reap_all(unsigned int wait_ms)
{
	int ri;

	for (ri = 0; ri < NRINGS; ri++)
		reap_ring(ri, wait_ms);
}

/* Every SQE gets its CQE by its due time. */
static void check_overdue(void)
{
	uint64_t now = now_ns();
	unsigned int i;
	char d[200];

	for (i = 0; i < MAX_PENDING; i++) {
		struct call *c = pending[i];

		if (!c || c->overdue || now <= c->due)
			continue;
		c->overdue = true;
		st.overdue++;
		call_desc(c, d, sizeof(d));
		fail("%s: no CQE %.1f s after it was submitted", d,
		     (double)(now - c->t0) / SEC);
	}
}

static void ring_open(int ri)
{
	t_ring(&rings[ri].ring, RING_SQ, RING_CQ, ring_setup[ri]);
	rings[ri].flags = ring_setup[ri];
	rings[ri].live = true;
	rings[ri].inflight = 0;
}

/* Closes a ring with commands in flight; their slots are never reused. */
static void ring_close(int ri)
{
	unsigned int i;

	for (i = 0; i < MAX_PENDING; i++) {
		struct call *c = pending[i];

		if (!c || c->ri != ri)
			continue;
		pending[i] = NULL;
		npending--;
		if (is_cmd(c, C_SUBMIT)) {
			npending_submits--;
			retired_due = max64(retired_due, c->due);
		}
		if (is_cmd(c, C_EVENTS)) {
			npending_events--;
			retired_events_due = max64(retired_events_due,
						   max64(c->deadline, c->t0) + SEC);
		}
		c->slot->retired = true;
		c->slot->retired_until = c->due;
		/*
		 * An io-wq worker that ran past its cancel still writes the
		 * events it took into the slot: well after the ring is gone
		 * on a slow machine.
		 */
		if (is_cmd(c, C_EVENTS))
			c->slot->retired_until = max64(c->due, max64(c->deadline, c->t0) +
							       5 * SEC);
		st.retired++;
		free(c);
	}
	wd_begin("closing ring %d", ri);
	io_uring_queue_exit(&rings[ri].ring);
	wd_end();
	rings[ri].live = false;
	rings[ri].inflight = 0;
}

static void file_open(int fi)
{
	struct fz_file *F = &files[fi];

	F->fd = open(XFERK_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (F->fd < 0) {
		fail("open %s: %s", XFERK_DEVICE_PATH, strerror(errno));
		exit(T_FAIL);
	}
}

/* Closes a file with whatever it holds in flight; its handles become foreign. */
static void file_close(int fi)
{
	struct fz_file *F = &files[fi];
	unsigned int i;

	for (i = 0; i < NOBJ; i++)
		if (F->obj[i].live && chance(30))
			foreign[nforeign++ % NFOREIGN] = F->obj[i].h;
	wd_begin("closing file %d", fi);
	close(F->fd);
	wd_end();
	F->fd = -1;
	F->gen++;
	memset(F->obj, 0, sizeof(F->obj));
	memset(F->chain, 0, sizeof(F->chain));
	memset(F->seen, 0, NSEEN * sizeof(*F->seen));
	F->nseen = 0;
	F->ndead = 0;
	F->src_mr = 0;
	F->dst_mr = 0;
}

/* ------------------------------------------------------------------ */
/* Real actions: the deep states the fuzzed calls meet                  */
/* ------------------------------------------------------------------ */

static bool have_rdma = true;
static uint64_t rdma_backoff;

static const char *second_peer(void)
{
	return strcmp(t_peer(), "10.99.0.1") ? t_peer() : "10.99.0.2";
}

static struct call *real_call(int ci, int fi)
{
	struct call *c = call_new(ci, fi);

	c->real = true;
	return c;
}

/* Through a ring if one has room and @pct says so, else ioctl. */
static void real_via(struct call *c, unsigned int pct)
{
	int ri = chance(pct) ? ring_pick() : -1;

	if (ri >= 0) {
		c->ring = true;
		c->ri = ri;
	}
}

/* Issues @c; an ioctl's result is returned (a ring's: 1, pending). */
static int real_issue(struct call *c, const void *a)
{
	int res;

	if (c->ring) {
		issue(c, a);
		return 1;
	}
	res = run_ioctl(c, a);
	call_free(c);
	return res;
}

/* Nothing but this program's ioctl can drop it: the result is exact. */
static bool exactable(const struct obj *o)
{
	return !o->drops_pending && !(o->kind == K_OP && o->op.auto_release);
}

static const int drop_cmd[K_COUNT] = {
	[K_REGION] = C_MR_DEREG, [K_CONN] = C_DISCONNECT, [K_EXPORT] = C_UNEXPORT,
	[K_REMOTE] = C_UNIMPORT, [K_OP] = C_RELEASE, [K_GROUP] = C_GROUP_RELEASE,
};

static void real_drop(int fi, struct obj *o, bool ring_ok)
{
	struct xferk_ioc_handle x = { .size = sizeof(x), .handle = o->h };
	struct call *c = real_call(drop_cmd[o->kind], fi);

	c->h = o->h;
	if (ring_ok)
		real_via(c, 25);
	if (!c->ring && exactable(o)) {
		c->expect_set = true;
		c->expect = 0;
	}
	real_issue(c, &x);
}

static uint64_t real_mr_reg(int fi, uint8_t *addr, uint64_t len, uint32_t access)
{
	struct xferk_ioc_mr_reg x = { .size = sizeof(x), .addr = (uintptr_t)addr,
				      .len = len, .access = access };
	struct call *c = real_call(C_MR_REG, fi);
	uint64_t h = run_ioctl(c, (uint8_t *)&x) ? 0 : c->out_h;

	call_free(c);
	return h;
}

static uint64_t real_connect(int fi, bool rdma, uint64_t delay)
{
	struct xferk_ioc_connect x = { .size = sizeof(x) };
	struct call *c = real_call(C_CONNECT, fi);
	uint64_t h;

	if (rdma) {
		x.family = AF_INET;
		set_v4(x.addr, chance(80) ? t_peer() : second_peer());
		x.timeout_ms = debug_kernel ? 30000 : 10000;
	} else {
		x.flags = XFERK_CONNECT_NULL_PEER;
		x.null_delay_ns = delay;
	}
	c->conn_timeout = x.timeout_ms;
	h = run_ioctl(c, (uint8_t *)&x) ? 0 : c->out_h;
	call_free(c);
	return h;
}

static uint64_t real_export(int fi, uint64_t conn, const struct obj *mr,
			    uint8_t *token)
{
	struct xferk_ioc_export x = { .size = sizeof(x), .conn = conn, .mr = mr->h,
				      .len = mr->len, .access = RW_REMOTE };
	struct call *c = real_call(C_EXPORT, fi);
	uint64_t h = 0;

	c->h = conn;
	c->h2 = mr->h;
	if (!run_ioctl(c, (uint8_t *)&x)) {
		h = c->out_h;
		memcpy(token, c->out_token, XFERK_TOKEN_SIZE);
	}
	call_free(c);
	return h;
}

static uint64_t real_import(int fi, uint64_t conn, const uint8_t *token)
{
	struct xferk_ioc_import x = { .size = sizeof(x), .conn = conn };
	struct call *c = real_call(C_IMPORT, fi);
	uint64_t h;

	memcpy(x.token, token, XFERK_TOKEN_SIZE);
	c->h = conn;
	h = run_ioctl(c, (uint8_t *)&x) ? 0 : c->out_h;
	call_free(c);
	return h;
}

/* The file's source (local) or destination (exported) region. */
static struct obj *ensure_region(int fi, bool dst)
{
	struct fz_file *F = &files[fi];
	uint64_t *hp = dst ? &F->dst_mr : &F->src_mr;
	struct obj *o = obj_find_kind(F, *hp, K_REGION);
	uint64_t off = (dst ? 128 * 1024 : 0) + below(32 * 1024);
	uint32_t access = dst || chance(30) ? XFERK_ACCESS_ALL : RW_LOCAL;

	if (o && !o->drops_pending)
		return o;
	*hp = real_mr_reg(fi, area + off, range(8 * 1024, 64 * 1024), access);
	return obj_find_kind(F, *hp, K_REGION);
}

static bool chain_live(struct fz_file *F, const struct chain *ch)
{
	const uint64_t hs[4] = { ch->conn, ch->exp, ch->remote, ch->mr };
	unsigned int i;

	if (!ch->used)
		return false;
	for (i = 0; i < 4; i++) {
		struct obj *o = obj_find(F, hs[i]);

		if (!o || o->drops_pending)
			return false;
	}
	return true;
}

static bool chain_member(struct fz_file *F, uint64_t h)
{
	unsigned int i;

	for (i = 0; i < NCHAINS; i++) {
		struct chain *ch = &F->chain[i];

		if (ch->used && (h == ch->conn || h == ch->exp || h == ch->remote ||
				 h == ch->mr))
			return true;
	}
	return h == F->src_mr || h == F->dst_mr;
}

static void chain_teardown(int fi, struct chain *ch)
{
	struct fz_file *F = &files[fi];
	const uint64_t hs[3] = { ch->remote, ch->exp, ch->conn };
	unsigned int i;

	for (i = 0; i < 3; i++) {
		struct obj *o = obj_find(F, hs[i]);

		if (o && !o->drops_pending)
			real_drop(fi, o, false);
	}
	ch->used = false;
}

/* A connection, an export of the destination region on it, and its import. */
static struct chain *chain_build(int fi, bool rdma)
{
	static const uint64_t delays[] = { 0, 0, 100 * US, MS, 5 * MS, 20 * MS };
	struct fz_file *F = &files[fi];
	uint8_t token[XFERK_TOKEN_SIZE];
	struct chain *ch = NULL;
	uint64_t conn, exp, rem;
	struct obj *dst, *o;
	unsigned int i;

	if (rdma && (!have_rdma || now_ns() < rdma_backoff))
		return NULL;
	for (i = 0; i < NCHAINS && !ch; i++)
		if (!F->chain[i].used)
			ch = &F->chain[i];
	/* Full: the oldest broken chain goes, else the oldest. */
	for (i = 0; i < NCHAINS && !ch; i++)
		if (!F->chain[i].healthy || !chain_live(F, &F->chain[i]))
			ch = &F->chain[i];
	if (!ch)
		for (ch = &F->chain[0], i = 1; i < NCHAINS; i++)
			if (F->chain[i].id < ch->id)
				ch = &F->chain[i];
	if (ch->used)
		chain_teardown(fi, ch);
	dst = ensure_region(fi, true);
	if (!dst)
		return NULL;
	conn = real_connect(fi, rdma, delays[below(ARRAY_SIZE(delays))]);
	if (!conn) {
		if (rdma) {
			st.rdma_connect_failed++;
			rdma_backoff = now_ns() + 2 * SEC;
		}
		return NULL;
	}
	exp = real_export(fi, conn, dst, token);
	rem = exp ? real_import(fi, conn, token) : 0;
	if (!rem) {
		o = obj_find(F, exp);
		if (o)
			real_drop(fi, o, false);
		o = obj_find(F, conn);
		if (o)
			real_drop(fi, o, false);
		return NULL;
	}
	*ch = (struct chain) {
		.used = true, .healthy = true, .rdma = rdma, .id = ++chain_seq,
		.conn = conn, .exp = exp, .remote = rem, .mr = dst->h,
	};
	if (rdma)
		st.chains_rdma++;
	else
		st.chains_null++;
	return ch;
}

static struct chain *chain_get(int fi, bool rdma)
{
	struct fz_file *F = &files[fi];
	struct chain *cand[NCHAINS];
	unsigned int i, n = 0;

	for (i = 0; i < NCHAINS; i++) {
		struct chain *ch = &F->chain[i];

		if (ch->used && ch->rdma == rdma && ch->healthy && chain_live(F, ch))
			cand[n++] = ch;
	}
	return n ? cand[below(n)] : chain_build(fi, rdma);
}

static bool group_open(const struct obj *o)
{
	return !o->drops_pending && !o->grp.aborted_at;
}

/* A small op on a healthy chain, through ioctl or a ring. */
static void real_submit(int fi)
{
	struct xferk_ioc_submit x = { .size = sizeof(x), .frag_size = FRAG_SIZE };
	struct fz_file *F = &files[fi];
	bool rdma = unpriv || (have_rdma && chance(50));
	uint64_t total = 0, maxlen, now;
	struct obj *src, *rem;
	struct xferk_frag *f;
	struct chain *ch;
	struct call *c;
	unsigned int r;
	uint32_t i, n;

	ch = chain_get(fi, rdma);
	if (!ch && rdma && !unpriv)
		ch = chain_get(fi, false);
	if (!ch)
		return;
	src = ensure_region(fi, false);
	rem = obj_find_kind(F, ch->remote, K_REMOTE);
	if (!src || !rem || !rem->len)
		return;
	c = real_call(C_SUBMIT, fi);
	f = (struct xferk_frag *)c->slot->frags;
	n = (uint32_t)range(1, ch->rdma && debug_kernel ? 2 : 6);
	maxlen = ch->rdma && debug_kernel ? 1024 : 4096;
	for (i = 0; i < n; i++) {
		bool w = (src->access & XFERK_ACCESS_LOCAL_SRC) &&
			 (!(src->access & XFERK_ACCESS_LOCAL_DST) || chance(50));
		uint64_t len = range(1, min64(maxlen, min64(src->len, rem->len)));

		f[i] = (struct xferk_frag) {
			.mr = src->h, .offset = below(src->len - len + 1), .len = len,
			.remote = rem->h, .remote_offset = below(rem->len - len + 1),
			.opcode = w ? XFERK_OP_WRITE : XFERK_OP_READ,
		};
		total += len;
	}
	x.frags = (uintptr_t)f;
	x.nr_frags = n;
	x.user_data = rnd();
	x.priority = chance(5) ? XFERK_PRIO_INTERNAL : (uint32_t)below(3);
	if (chance(10)) {
		x.window_bytes = range(1, 8192);
		x.window_chunks = (uint32_t)range(0, 4);
	}
	real_via(c, 40);
	now = now_ns();
	r = (unsigned int)below(100);
	if (c->ring) {
		x.deadline_ns = now + range(2 * MS, (debug_kernel ? 3000 : 1500) * MS);
		x.drain_budget_ns = range(0, 300 * MS);
		x.flags = (chance(50) ? XFERK_SUBMIT_AUTO_RELEASE : 0) |
			  (chance(50) ? XFERK_SUBMIT_CANCEL_ON_DEADLINE : 0);
	} else {
		x.deadline_ns = r < 25 ? XFERK_DEADLINE_NONE :
				r < 75 ? now + range(2 * MS, 300 * MS) :
					 now + range(300 * MS, 3 * SEC);
		if (chance(30)) {
			x.flags = XFERK_SUBMIT_CANCEL_ON_DEADLINE;
			x.drain_budget_ns = range(0, 200 * MS);
		}
	}
	if (unpriv && x.priority == XFERK_PRIO_INTERNAL) {
		c->expect_set = true;
		c->expect = -EPERM;
	} else {
		/* Into an open group; a DATA event for our own export. */
		struct obj *g = chance(20) ? obj_random(F, K_GROUP, group_open) : NULL;

		if (g) {
			x.group = g->h;
			g->grp.ring_joined |= c->ring;
		}
		if (ch->rdma && chance(15)) {
			x.flags |= XFERK_SUBMIT_NOTIFY;
			x.notify_tag = rnd();
		}
	}
	c->deadline = x.deadline_ns;
	c->budget = x.drain_budget_ns;
	c->user_data = x.user_data;
	c->total_bytes = total;
	c->nr_frags = n;
	c->prio = x.priority;
	c->chain = ch->id;
	c->group = x.group;
	c->src_mr = src->h;
	st.real_submits++;
	real_issue(c, &x);
}

static bool op_pickable(const struct obj *o)
{
	return !o->drops_pending;
}

static uint64_t past(uint64_t now)
{
	return now - min64(now - 1, range(1, SEC));
}

static void real_wait(int fi)
{
	struct obj *o = obj_random(&files[fi], K_OP, op_pickable);
	struct xferk_ioc_wait x = { .size = sizeof(x) };
	unsigned int r = (unsigned int)below(100);
	uint64_t now = now_ns();
	struct call *c;

	if (!o)
		return;
	x.op = o->h;
	x.flags = chance(50) ? XFERK_WAIT_PHYSICAL : 0;
	x.deadline_ns = r < 60 ? now + range(0, 10 * MS) :
			r < 85 ? now + range(10 * MS, 100 * MS) :
			r < 92 ? past(now) : XFERK_DEADLINE_NONE;
	c = real_call(C_WAIT, fi);
	c->h = x.op;
	c->deadline = x.deadline_ns;
	real_via(c, 35);
	real_issue(c, &x);
}

static void real_query(int fi)
{
	struct obj *o = obj_random(&files[fi], K_OP, op_pickable);
	struct xferk_ioc_query x = { .size = sizeof(x) };
	struct call *c;

	if (!o)
		return;
	x.op = o->h;
	c = real_call(C_QUERY, fi);
	c->h = x.op;
	real_via(c, 35);
	real_issue(c, &x);
}

/* Short drain deadlines: drops, forced flushes, quarantine. */
static void real_cancel(int fi)
{
	struct fz_file *F = &files[fi];
	struct obj *o = obj_random(F, K_OP, op_pickable);
	struct xferk_ioc_cancel x = { .size = sizeof(x) };
	unsigned int r = (unsigned int)below(100);
	uint64_t now, scale;
	struct chain *ch;
	struct call *c;

	if (!o)
		return;
	ch = chain_by_id(F, o->op.chain);
	scale = ch && ch->rdma && debug_kernel ? 4 : 1;
	c = real_call(C_CANCEL, fi);
	real_via(c, 30);
	now = now_ns();
	x.op = o->h;
	x.drain_deadline_ns = r < 30 ? now + range(0, 5 * MS) :
			      r < 70 ? now + scale * range(5 * MS, 50 * MS) :
			      r < 90 ? now + scale * range(50 * MS, 300 * MS) :
			      r < 95 ? past(now) :
			      c->ring ? now + SEC : XFERK_DEADLINE_NONE;
	c->h = x.op;
	c->deadline = x.drain_deadline_ns;
	real_issue(c, &x);
}

/* Release; then, sometimes, the handle must be stale. */
static void real_release(int fi)
{
	struct fz_file *F = &files[fi];
	struct obj *o = obj_random(F, K_OP, op_pickable);
	struct xferk_ioc_query q = { .size = sizeof(q) };
	bool exact;
	struct call *c;
	uint64_t h;

	if (!o)
		return;
	h = o->h;
	exact = exactable(o);
	if (!exact || chance(30)) {
		real_drop(fi, o, true);
		return;
	}
	real_drop(fi, o, false);
	if (obj_find(F, h) || !chance(30))
		return;
	q.op = h;
	c = real_call(C_QUERY, fi);
	c->h = h;
	c->expect_set = true;
	c->expect = -ESTALE;
	real_issue(c, &q);
}

static bool op_has_src(const struct obj *o)
{
	return o->op.src_mr && !o->drops_pending;
}

/* Deregister a region while ops on it may run; drop exports, imports, conns. */
static void real_teardown(int fi)
{
	struct fz_file *F = &files[fi];
	unsigned int r = (unsigned int)below(100);
	struct obj *o = NULL, *op;

	if (r < 40) {
		op = obj_random(F, K_OP, op_has_src);
		o = op ? obj_find_kind(F, op->op.src_mr, K_REGION) : NULL;
		if (o && !o->drops_pending && !op->op.phys_at)
			st.deregs_busy++;
	} else if (r < 60) {
		o = obj_random(F, K_EXPORT, NULL);
	} else if (r < 80) {
		o = obj_random(F, K_REMOTE, NULL);
	} else {
		o = obj_random(F, K_CONN, NULL);
	}
	if (o && !o->drops_pending)
		real_drop(fi, o, true);
}

static bool exportable(const struct obj *o)
{
	return !o->drops_pending && (o->access & RW_REMOTE);
}

static bool conn_pickable(const struct obj *o)
{
	return !o->drops_pending;
}

/* An export of the file's region by another process (a fork): EPERM. */
static void real_foreign_export(int fi)
{
	struct fz_file *F = &files[fi];
	struct obj *r = obj_random(F, K_REGION, exportable);
	struct obj *cn = obj_random(F, K_CONN, conn_pickable);
	struct xferk_ioc_export x = { .size = sizeof(x) };
	struct call *c;
	int status = 0, code;
	pid_t pid;

	if (!r || !cn)
		return;
	x.conn = cn->h;
	x.mr = r->h;
	x.len = min64(r->len, PG);
	x.access = r->access & RW_REMOTE;
	c = real_call(C_EXPORT, fi);
	c->h = x.conn;
	c->h2 = x.mr;
	c->expect_set = true;
	c->expect = -EPERM;
	place_arg(c, (uint8_t *)&x);
	c->rw = false;	/* the child writes into its own copy */
	wd_begin("EXPORT from a forked process");
	c->t0 = now_ns();
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		wd_end();
		fail("fork: %s", strerror(errno));
		call_free(c);
		return;
	}
	if (pid == 0) {
		int ret = ioctl(F->fd, XFERK_IOC_EXPORT, c->uarg);

		_exit(ret < 0 ? errno & 0x7f : 0xff);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	wd_end();
	c->t1 = now_ns();
	st.foreign_exports++;
	if (!WIFEXITED(status)) {
		fail("the process doing a foreign EXPORT died of signal %d",
		     WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		call_free(c);
		return;
	}
	code = WEXITSTATUS(status);
	finish(c, code == 0xff ? 0 : -code);
	call_free(c);
}

static bool group_pickable(const struct obj *o)
{
	return !o->drops_pending;
}

/*
 * Groups: created (real ops join them), aborted with short drain
 * deadlines, waited for briefly, queried.
 */
static void real_group(int fi)
{
	struct fz_file *F = &files[fi];
	struct obj *g = obj_random(F, K_GROUP, group_pickable);
	unsigned int r = (unsigned int)below(100);
	struct xferk_ioc_group x = { .size = sizeof(x) };
	uint64_t now = now_ns();
	struct call *c;

	if (!g || (r < 35 && obj_count(F, K_GROUP) < kind_cap[K_GROUP])) {
		struct xferk_ioc_group_create gc = { .size = sizeof(gc), .tag = rnd() };

		c = real_call(C_GROUP_CREATE, fi);
		real_via(c, 20);
		real_issue(c, &gc);
		return;
	}
	x.group = g->h;
	if (r < 60) {
		c = real_call(C_GROUP_ABORT, fi);
		r = (unsigned int)below(100);
		x.deadline_ns = r < 40 ? now + range(0, 5 * MS) :
				r < 80 ? now + range(5 * MS, 50 * MS) :
				r < 95 ? now + range(50 * MS, 300 * MS) : past(now);
		group_aborting(fi, g->h);
	} else if (r < 88) {
		c = real_call(C_GROUP_WAIT, fi);
		x.flags = chance(50) ? XFERK_WAIT_PHYSICAL : 0;
		x.deadline_ns = chance(80) ? now + range(0, 10 * MS) : past(now);
	} else {
		c = real_call(C_GROUP_QUERY, fi);
	}
	real_via(c, 30);
	c->h = x.group;
	c->deadline = x.deadline_ns;
	real_issue(c, &x);
}

static void real_reopen_file(int fi)
{
	trace("file %d: closed with its objects in flight, reopened", fi);
	file_close(fi);
	file_open(fi);
	st.reopens++;
}

static void real_reopen_ring(int ri)
{
	trace("ring %d: closed with %u commands in flight, reopened", ri,
	      rings[ri].inflight);
	ring_close(ri);
	ring_open(ri);
	st.ring_reopens++;
}

/* ------------------------------------------------------------------ */
/* The loop                                                            */
/* ------------------------------------------------------------------ */

static const unsigned int cmd_weight[NCMD + 1] = {
	[C_INFO] = 4, [C_MR_REG] = 8, [C_MR_DEREG] = 4, [C_CONNECT] = 6,
	[C_DISCONNECT] = 4, [C_EXPORT] = 8, [C_UNEXPORT] = 4, [C_IMPORT] = 8,
	[C_UNIMPORT] = 4, [C_SUBMIT] = 18, [C_WAIT] = 9, [C_QUERY] = 7,
	[C_RELEASE] = 6, [C_CANCEL] = 9, [C_CONN_QUERY] = 3,
	[C_WINDOW_OPEN] = 4, [C_WINDOW_CLOSE] = 3, [C_GROUP_CREATE] = 4,
	[C_GROUP_ABORT] = 3, [C_GROUP_WAIT] = 3, [C_GROUP_QUERY] = 3,
	[C_GROUP_RELEASE] = 2, [C_NOTIFY] = 4, [C_EVENTS] = 4, [NCMD] = 6,
};

/* One fuzzed call: a command, its struct, its placement, ioctl or ring. */
static void fuzz_one(int fi)
{
	uint8_t a[ARG_BUF] __attribute__((aligned(8)));
	unsigned int total = 0, ci, r;
	int ri = chance(40) ? ring_pick() : -1;
	struct call *c;

	for (ci = 0; ci <= NCMD; ci++)
		total += cmd_weight[ci];
	r = (unsigned int)below(total);
	for (ci = 0; r >= cmd_weight[ci]; ci++)
		r -= cmd_weight[ci];
	c = call_new((int)ci, fi);
	c->ring = ri >= 0;
	c->ri = ri;
	memset(a, 0, sizeof(a));
	if (!c->cmd) {
		gen_unknown(c, a);
	} else {
		/* The size bits of the number are not used: any will do. */
		if (chance(5))
			c->nr = (c->nr & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
				(rnd32() & _IOC_SIZEMASK) << _IOC_SIZESHIFT;
		memcpy(a, &c->cmd->size, 4);
		c->cmd->gen(c, a);
		envelope(c, a);
	}
	c->place = pick_place();
	issue(c, a);
}

/* Keeps the pools bounded: the oldest objects beyond the caps are dropped. */
static void trim(int fi)
{
	struct fz_file *F = &files[fi];
	unsigned int k, i;

	for (k = K_REGION; k < K_COUNT; k++) {
		while (obj_count(F, (int)k) > kind_cap[k]) {
			struct obj *o = NULL;

			for (i = 0; i < NOBJ; i++) {
				struct obj *p = &F->obj[i];

				if (!p->live || p->kind != k || p->drops_pending)
					continue;
				if (!o || (chain_member(F, o->h) && !chain_member(F, p->h)) ||
				    (chain_member(F, o->h) == chain_member(F, p->h) &&
				     p->seq < o->seq))
					o = p;
			}
			if (!o)
				break;
			real_drop(fi, o, false);
			if (o->live) {	/* not droppable: forget it */
				o->live = false;
				dead_push(F, o->h);
			}
		}
	}
}

static void step(void)
{
	int fi = (int)below(NFILES);
	unsigned int r = (unsigned int)below(1000);

	reap_all(0);
	check_overdue();
	trim(fi);
	if (r < 470)
		fuzz_one(fi);
	else if (r < 640)
		real_submit(fi);
	else if (r < 720)
		real_wait(fi);
	else if (r < 770)
		real_query(fi);
	else if (r < 830)
		real_cancel(fi);
	else if (r < 875)
		real_release(fi);
	else if (r < 905)
		real_teardown(fi);
	else if (r < 965)
		sleep_ns(range(100 * US, 3 * MS));	/* let work progress */
	else if (r < 972)
		real_reopen_file(fi);
	else if (r < 975)
		real_reopen_ring((int)below(NRINGS));
	else if (r < 978)
		real_foreign_export(fi);
	else if (r < 990)
		real_group(fi);
	else
		fuzz_one(fi);
}

/* Waits for every outstanding CQE (each bounded by its due time). */
static void drain_rings(void)
{
	for (;;) {
		unsigned int i, waiting = 0;

		for (i = 0; i < MAX_PENDING; i++)
			waiting += pending[i] && !pending[i]->overdue;
		if (!waiting)
			break;
		wd_begin("waiting for the CQEs of %u commands", waiting);
		reap_all(20);
		check_overdue();
	}
	wd_end();
}

static void summary(bool by_time, uint64_t elapsed, unsigned long done)
{
	static const char *const path[2] = { "ioctl", "io_uring" };
	unsigned long calls[2] = { 0, 0 };
	double secs = (double)elapsed / SEC;
	unsigned int p, ci, s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	for (p = 0; p < 2; p++)
		for (ci = 0; ci <= NCMD; ci++)
			for (s = 0; s < NRES; s++)
				calls[p] += counts[p][ci][s];
	fprintf(f, "[%s] %lu iterations in %.1f s (%.0f/s), ended by the %s; seed %#" PRIx64 "\n",
		role, done, secs, (double)done / (secs + 1e-9),
		by_time ? "time limit" : "iteration budget", opt.seed);
	fprintf(f, "[%s] %lu ioctl calls, %lu io_uring commands, %u failures\n",
		role, calls[0], calls[1], nfail);
	for (p = 0; p < 2; p++) {
		fprintf(f, "[%s] %-8s %-10s %7s  results\n", role, path[p], "command", "calls");
		for (ci = 0; ci <= NCMD; ci++) {
			unsigned long n = 0;

			for (s = 0; s < NRES; s++)
				n += counts[p][ci][s];
			if (!n)
				continue;
			fprintf(f, "[%s]          %-10s %7lu ", role,
				ci < NCMD ? cmds[ci].name : "unknown", n);
			for (s = 0; s < NRES; s++)
				if (counts[p][ci][s])
					fprintf(f, " %s:%lu", slot_name(s), counts[p][ci][s]);
			fputc('\n', f);
		}
	}
	fprintf(f, "[%s] snapshot states:", role);
	for (s = 0; s < XFERK_STATE_COUNT; s++)
		fprintf(f, " %s:%lu", state_name((int)s), states_seen[s]);
	fputc('\n', f);
	fprintf(f, "[%s] real: %lu submits (%lu accepted), chains %lu null + %lu RDMA "
		"(%lu RDMA connects failed), %lu regions deregistered under ops, "
		"%lu files and %lu rings reopened (%lu commands in flight), "
		"%lu exports from another process, %lu quarantined, %d signals, "
		"%lu CQEs overdue (%lu came late)\n", role, st.real_submits,
		st.real_submits_ok, st.chains_null, st.chains_rdma,
		st.rdma_connect_failed, st.deregs_busy, st.reopens, st.ring_reopens,
		st.retired, st.foreign_exports, st.quarantined, (int)nsignals,
		st.overdue, st.late_cqes);
	fprintf(f, "[%s] groups: %lu aborted; events taken: %lu DATA, %lu NOTE, %lu ABORTED "
		"(%lu dropped)\n", role, st.groups_aborted, st.events[XFERK_EVENT_DATA],
		st.events[XFERK_EVENT_NOTE], st.events[XFERK_EVENT_ABORTED],
		st.events_dropped);
	fclose(f);
	fwrite(buf, 1, len, stdout);
	fflush(stdout);
	free(buf);
}

/* One fuzzing process (root, or the unprivileged child). */
static void fuzz_main(void)
{
	uint64_t stop, elapsed;
	unsigned long done = 0;
	bool by_time = false;
	int i;

	t_start = now_ns();
	t_hard_stop = t_start + (my_secs + 420ULL) * SEC;
	reachable_init();
	watchdog_start();
	map_memory();
	make_dmabufs();
	for (i = 0; i < NFILES; i++) {
		files[i].seen = calloc(NSEEN, sizeof(*files[i].seen));
		if (!files[i].seen) {
			perror("calloc");
			exit(T_FAIL);
		}
		file_open(i);
	}
	for (i = 0; i < NRINGS; i++)
		ring_open(i);
	if (unpriv) {
		/* Without the null peer everything runs over RDMA: check it is there. */
		if (!chain_get(0, true))
			printf("[%s] no RDMA connection to %s: no data moves\n",
			       role, t_peer());
	} else if (!chain_get(0, true)) {
		printf("[%s] no RDMA connection to %s: fuzzing on the null peer only\n",
		       role, t_peer());
		have_rdma = false;
	}
	stop = t_start + (uint64_t)my_secs * SEC;
	for (iter = 1; iter <= my_iters; iter++) {
		if (now_ns() >= stop) {
			by_time = true;
			break;
		}
		step();
		done++;
	}
	elapsed = now_ns() - t_start;
	iter = done;
	drain_rings();
	for (i = 0; i < NRINGS; i++)
		ring_close(i);
	for (i = 0; i < NFILES; i++)
		file_close(i);
	summary(by_time, elapsed, done);
}

/* ------------------------------------------------------------------ */
/* main: the root process, the unprivileged child, the final counters   */
/* ------------------------------------------------------------------ */

static const char *const stat_names[] = {
	"ops_live", "pinned_pages", "quarantined_pages", "regions", "exports",
	"uring_parked",
};

#define NSTATS	ARRAY_SIZE(stat_names)

static void read_stats(long long *v)
{
	unsigned int i;

	for (i = 0; i < NSTATS; i++)
		v[i] = t_stat(stat_names[i]);
}

/* The counters at the start, once an earlier test's leftovers settled. */
static void baseline(long long *v)
{
	uint64_t until = now_ns() + 10 * SEC;
	long long w[NSTATS];
	int stable = 0;

	read_stats(v);
	while (stable < 2 && now_ns() < until) {
		sleep_ns(300 * MS);
		read_stats(w);
		if (memcmp(v, w, sizeof(w))) {
			memcpy(v, w, sizeof(w));
			stable = 0;
		} else {
			stable++;
		}
	}
}

/* Everything closed: the counters return to where they were. */
static void settle(const long long *base)
{
	uint64_t t0 = now_ns(), until = t0 + SETTLE_SECS * SEC;
	long long v[NSTATS];
	unsigned int i;

	for (;;) {
		read_stats(v);
		if (!memcmp(v, base, sizeof(v))) {
			printf("counters back to their start values after %.1f s\n",
			       (double)(now_ns() - t0) / SEC);
			return;
		}
		if (now_ns() > until)
			break;
		sleep_ns(200 * MS);
	}
	for (i = 0; i < NSTATS; i++)
		if (v[i] != base[i])
			fail("stats/%s is %lld %d s after everything closed, %lld at the start%s",
			     stat_names[i], v[i], SETTLE_SECS, base[i],
			     v[i] < base[i] ? " (lower: leftovers of an earlier test went?)" : "");
}

static void user_main(void)
{
	struct rlimit rl;

	role = "user";
	unpriv = true;
	/* Room for the regions of the unprivileged part (the limit still applies). */
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (16UL << 20)) {
		rl.rlim_cur = 16UL << 20;
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < rl.rlim_cur)
			rl.rlim_max = rl.rlim_cur;
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
	t_become_user(1);
	my_iters = opt.only == 'U' ? opt.iters : opt.iters / USER_ITER_DIV + 1;
	my_secs = opt.only == 'U' ? opt.secs :
		  (unsigned int)max64(opt.secs / USER_SECS_DIV, 5);
	rng = opt.seed ^ 0x5bd1e9955bd1e995ULL;
	fuzz_main();
	exit(t_result());
}

static void wait_child(pid_t child)
{
	unsigned int secs = opt.only == 'U' ? opt.secs : opt.secs / USER_SECS_DIV;
	uint64_t until = now_ns() + (secs + 480ULL) * SEC;
	int status = 0;
	pid_t r;

	for (;;) {
		r = waitpid(child, &status, WNOHANG);
		if (r == child)
			break;
		if (r < 0 && errno != EINTR) {
			fail("waitpid: %s", strerror(errno));
			return;
		}
		if (now_ns() > until) {
			fail("the unprivileged child did not finish; killing it");
			kill(child, SIGKILL);
			while (waitpid(child, &status, 0) < 0 && errno == EINTR)
				;
			return;
		}
		sleep_ns(100 * MS);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != T_PASS)
		fail("the unprivileged child failed (%s %d): see its output",
		     WIFEXITED(status) ? "exit" : "signal",
		     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

static void usage(void)
{
	fprintf(stderr, "usage: %s [-s SEED] [-n ITERATIONS] [-t SECONDS] [-v] [-R | -U]\n"
		"  -s  seed (default: from the clock)\n"
		"  -n  iterations (default %lu; %lu on the debug kernel)\n"
		"  -t  seconds, whichever ends first (default %u; %u on the debug kernel)\n"
		"  -v  print every call\n"
		"  -R  fuzz as root only; -U  as the unprivileged user only\n",
		prog, DEF_ITERS, DEBUG_ITERS, DEF_SECS, DEBUG_SECS);
}

int main(int argc, char **argv)
{
	struct xferk_ioc_info info = { .size = sizeof(info) };
	const uint64_t need = XFERK_FEAT_DATAPATH | XFERK_FEAT_NULL_PEER |
			      XFERK_FEAT_CANCEL | XFERK_FEAT_URING | XFERK_FEAT_QUEUE |
			      XFERK_FEAT_SESSIONS;
	bool set_iters = false, set_secs = false;
	long long base[NSTATS], v;
	pid_t child = -1;
	int o, fd;

	prog = argv[0];
	opt.seed = now_ns() ^ ((uint64_t)getpid() << 40);
	while ((o = getopt(argc, argv, "s:n:t:vRUh")) != -1) {
		switch (o) {
		case 's':
			opt.seed = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			opt.iters = strtoul(optarg, NULL, 0);
			set_iters = true;
			break;
		case 't':
			opt.secs = (unsigned int)strtoul(optarg, NULL, 0);
			set_secs = true;
			break;
		case 'v':
			opt.verbose = true;
			break;
		case 'R':
		case 'U':
			opt.only = (char)o;
			break;
		default:
			usage();
			return T_FAIL;
		}
	}
	debug_kernel = t_debug_kernel();
	if (!set_iters)
		opt.iters = debug_kernel ? DEBUG_ITERS : DEF_ITERS;
	if (!set_secs)
		opt.secs = debug_kernel ? DEBUG_SECS : DEF_SECS;
	setvbuf(stdout, NULL, _IOLBF, 0);

	fd = open(XFERK_DEVICE_PATH, O_RDWR);
	if (fd < 0) {
		printf("%s: %s\n", XFERK_DEVICE_PATH, strerror(errno));
		return errno == ENOENT ? T_SKIP : T_FAIL;
	}
	if (ioctl(fd, XFERK_IOC_INFO, &info) || (info.features & need) != need) {
		printf("XFERK_IOC_INFO: features %#llx, need %#llx\n",
		       (unsigned long long)info.features, (unsigned long long)need);
		return T_FAIL;
	}
	close(fd);
	v = t_param("listen_port");
	if (v > 0)
		listen_port = (unsigned int)v;
	v = t_param("flush_timeout_ms");
	if (v > 0)
		flush_timeout_ns = (uint64_t)v * MS;

	printf("%s: seed %#" PRIx64 ", %lu iterations, %u s, %s kernel\n"
	       "reproduce: %s -s %#" PRIx64 " -n %lu -t %u\n", prog, opt.seed,
	       opt.iters, opt.secs, debug_kernel ? "debug" : "stock", prog,
	       opt.seed, opt.iters, opt.secs);
	baseline(base);

	if (opt.only != 'R') {
		if (!getgrnam("xferk")) {
			printf("no group xferk: the unprivileged part is skipped\n");
			if (opt.only == 'U')
				return T_SKIP;
		} else {
			fflush(NULL);
			child = fork();
			if (child < 0) {
				perror("fork");
				return T_FAIL;
			}
			if (child == 0)
				user_main();
		}
	}
	if (opt.only != 'U') {
		my_iters = opt.iters;
		my_secs = opt.secs;
		rng = opt.seed;
		fuzz_main();
	}
	if (child > 0)
		wait_child(child);
	settle(base);
	printf("%s: %s (seed %#" PRIx64 ")\n", prog, t_failures ? "FAIL" : "PASS",
	       opt.seed);
	if (t_failures)
		printf("reproduce: %s -s %#" PRIx64 " -n %lu -t %u%s\n", prog,
		       opt.seed, opt.iters, opt.secs,
		       opt.only ? (opt.only == 'R' ? " -R" : " -U") : "");
	return t_result();
}
