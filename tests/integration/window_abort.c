// SPDX-License-Identifier: GPL-2.0
/*
 * The decode side's abort, at scale (the experiment of the seeds' fix for
 * the target side): a decode process opens a window per request over
 * scattered pages of its KV pool and hands the token to a prefill process,
 * which writes into every window it holds, continuously. Decode aborts
 * each request at a random moment (before, during or after the writes),
 * closes its window and at once reuses the pages for a victim request
 * filled with a canary. Before a victim's pages are used again, and at the
 * end, its canary is checked: a byte that changed is a foreign write.
 *
 * Three runs of ITERS aborts (1000; 100 on the debug kernel):
 *  cooperative  the prefill kernel answers every revoke: every CLOSE is
 *               cooperative;
 *  forced       the prefill kernel never answers (fault knob
 *               ignore_revokes): every CLOSE is forced at its deadline,
 *               late writes fail at the device (the session recovers);
 *               prefill writes each window once (every late write costs
 *               a path, and soft-RoCE's CQ teardown races with its own
 *               completion tasklet under heavy QP churn), ITERS / 10
 *               aborts;
 *  killed       cooperative, and the prefill process is killed (SIGKILL)
 *               mid-write every 50 aborts and started again.
 * Each must show 0 foreign canaries (and the cooperative ones no path
 * death: no write ever reaches a closed key); the run prints aborts, probes,
 * canaries, how CLOSE went, the answer's median and p99, and how many
 * windows had been written before their abort.
 *
 * Usage: window_abort [cooperative|killed|forced]  (default: all three)
 *
 * Across two hosts (tests/twohost/90_windows.sh) each side runs its part,
 * and requests travel as files in a directory both see (DIR/t.N, the N-th
 * request's token and length; DIR/ready once prefill is connected;
 * DIR/stop when decode is done):
 *   window_abort decode DIR MODE ITERS
 *   window_abort prefill DIR MODE   (killed: kills and restarts its own
 *                                    writer every 50 requests; forced: sets
 *                                    its host's ignore_revokes)
 */
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define PAGE		4096UL
#define POOL_PAGES	1024U
#define WIN_PAGES	8U
#define MAX_REMOTES	64U
#define MAX_OPS		16U
#define RW		(XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE)
#define CANARY		0xc3
#define PREFILL_BYTE	0x5a

/*
 * Forced runs last: revokes it leaves unanswered keep their slots (16 at
 * most, by design) until the path dies, and the closes of a run after it
 * would be forced until then.
 */
enum mode { COOPERATIVE, KILLED, FORCED };
static const char *const mode_name[] = { "cooperative", "killed", "forced" };

/* What decode sends prefill: a window to write into. */
struct req_msg {
	struct xferk_token tok;
	uint64_t len;
};

/*
 * How requests go from decode to prefill: a socket pair on one host, or
 * files in @dir on two.
 * @sock: one host: this side's end (-1 on two hosts)
 * @dir: two hosts: the directory
 * @next: two hosts: the number of the next request (decode: to write;
 *	prefill: to read)
 */
struct channel {
	int sock;
	const char *dir;
	unsigned int next;
};

static void chan_path(const struct channel *ch, char *path, size_t len,
		      const char *name, unsigned int n)
{
	if (name)
		snprintf(path, len, "%s/%s", ch->dir, name);
	else
		snprintf(path, len, "%s/t.%u", ch->dir, n);
}

static int chan_exists(const struct channel *ch, const char *name,
		       unsigned int n)
{
	char path[512];

	chan_path(ch, path, sizeof(path), name, n);
	return !access(path, F_OK);
}

/* Creates DIR/@name (n-th request when @name is NULL) with @text. */
static void chan_put(const struct channel *ch, const char *name,
		     unsigned int n, const char *text)
{
	char path[512], tmp[520];
	FILE *f;

	chan_path(ch, path, sizeof(path), name, n);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path)) {
		perror(path);
		exit(T_FAIL);
	}
}

static void chan_send(struct channel *ch, const struct req_msg *m)
{
	char text[XFERK_TOKEN_HEX_LEN + 32];

	if (!ch->dir) {
		/* A prefill that does not keep up misses requests. */
		send(ch->sock, m, sizeof(*m), MSG_DONTWAIT);
		return;
	}
	xferk_token_format(&m->tok, text, sizeof(text));
	snprintf(text + strlen(text), 32, " %llu\n",
		 (unsigned long long)m->len);
	chan_put(ch, NULL, ch->next++, text);
}

/* The next request: 1, 0 if none yet, -1 when decode is done. */
static int chan_recv(struct channel *ch, struct req_msg *m)
{
	char path[512], hex[XFERK_TOKEN_HEX_LEN + 2];
	unsigned long long len;
	ssize_t n;
	FILE *f;

	if (!ch->dir) {
		n = recv(ch->sock, m, sizeof(*m), MSG_DONTWAIT);
		if (n == sizeof(*m))
			return 1;
		return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ?
		       0 : -1;
	}
	chan_path(ch, path, sizeof(path), NULL, ch->next);
	f = fopen(path, "r");
	if (!f)
		return chan_exists(ch, "stop", 0) ? -1 : 0;
	n = fscanf(f, "%129s %llu", hex, &len);
	fclose(f);
	ch->next++;
	if (n != 2 || xferk_token_parse(hex, &m->tok))
		return 0;
	m->len = len;
	return 1;
}

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* ---- prefill: writes into every window it holds until it is stale ---- */

struct remote {
	uint64_t rm, len;
	int ops;	/* ops in flight on it */
	int live;
};

struct op {
	uint64_t op;
	int remote;
};

/* Imports the requests that came; -1 when decode is done. */
static int take_requests(struct xferk *x, uint64_t conn, struct channel *ch,
			 struct remote *r)
{
	struct req_msg m;
	int i, ret;

	while ((ret = chan_recv(ch, &m)) > 0) {
		for (i = 0; i < (int)MAX_REMOTES && (r[i].live || r[i].ops); i++)
			;
		if (i == (int)MAX_REMOTES)
			continue;	/* too many: this request is not written */
		/* ESTALE: decode closed it already. */
		if (xferk_import(x, conn, &m.tok, &r[i].rm))
			continue;
		r[i].len = m.len;
		r[i].live = 1;
	}
	return ret;
}

static void drop_remote(struct xferk *x, struct remote *r)
{
	if (r->live)
		xferk_unimport(x, r->rm);
	r->live = 0;
}

/* @once: each window is written once, not until it is stale. */
static void prefill(struct channel *ch, int once)
{
	struct remote r[MAX_REMOTES] = { 0 };
	struct op ops[MAX_OPS];
	unsigned int head = 0, nops = 0, next = 0;
	struct xferk_op_snapshot s;
	struct xferk *x;
	uint64_t conn, mr;
	uint8_t *src = t_map(WIN_PAGES * PAGE);
	int i, ret;

	memset(src, PREFILL_BYTE, WIN_PAGES * PAGE);
	if (xferk_open(&x) ||
	    xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn) ||
	    xferk_mr_reg(x, src, WIN_PAGES * PAGE, XFERK_ACCESS_LOCAL_SRC, &mr))
		_exit(2);
	/* Ready: decode starts its requests. */
	if (ch->dir)
		chan_put(ch, "ready", 0, "");
	else if (send(ch->sock, "r", 1, 0) != 1)
		_exit(2);
	for (;;) {
		if (take_requests(x, conn, ch, r))
			_exit(0);	/* decode is gone: done */
		/* One more write into the next live window, if there is room. */
		for (i = 0; i < (int)MAX_REMOTES && nops < MAX_OPS; i++) {
			struct remote *w = &r[(next + i) % MAX_REMOTES];
			struct xferk_frag f = {
				.mr = mr, .len = w->len, .remote = w->rm,
				.opcode = XFERK_OP_WRITE,
			};
			struct op *o = &ops[(head + nops) % MAX_OPS];

			if (!w->live)
				continue;
			ret = xferk_submit(x, &f, 1, xferk_now_ns() +
					   10000000000ULL, 0, &o->op);
			if (ret) {
				/* ESTALE: decode closed it. */
				drop_remote(x, w);
				continue;
			}
			o->remote = w - r;
			w->ops++;
			nops++;
			if (once)
				drop_remote(x, w);
			next = (next + i + 1) % MAX_REMOTES;
			break;
		}
		if (!nops) {
			struct pollfd p = { .fd = ch->sock, .events = POLLIN };

			poll(&p, 1, ch->dir ? 1 : 10);
			continue;
		}
		/* The oldest write: once it is physical, its remote's fate. */
		if (nops == MAX_OPS || !(rnd() & 3)) {
			struct op *o = &ops[head];

			xferk_wait(x, o->op, XFERK_DEADLINE_NONE,
				   XFERK_WAIT_PHYSICAL, &s);
			xferk_release(x, o->op);
			r[o->remote].ops--;
			if (s.first_error)
				drop_remote(x, &r[o->remote]);
			head = (head + 1) % MAX_OPS;
			nops--;
		}
	}
}

/* One host: prefill in a child, connected once this returns. */
static pid_t start_prefill(struct channel *ch, int once)
{
	struct channel child = { .sock = -1 };
	int sv[2];
	char c;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		rnd_state ^= getpid();
		child.sock = sv[1];
		prefill(&child, once);
		_exit(0);
	}
	close(sv[1]);
	ch->sock = sv[0];
	if (pid < 0 || recv(ch->sock, &c, 1, 0) != 1)
		return -1;
	return pid;
}

static void stop_prefill(pid_t pid, struct channel *ch, int kill_it)
{
	if (kill_it)
		kill(pid, SIGKILL);
	close(ch->sock);
	waitpid(pid, NULL, 0);
}

/* Path deaths of this host, whatever their cause. */
static long long path_deaths(void)
{
	return t_stat("path_deaths_qp") + t_stat("path_deaths_peer") +
	       t_stat("path_deaths_keepalive") + t_stat("path_deaths_cancel");
}

/* ---- decode: windows, aborts, victims ---- */

struct result {
	unsigned int aborts, probes, foreign, cooperative, forced, written;
	unsigned int nacks;
	uint64_t acks[1000];
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Pages that changed since they were filled with the canary. */
static int foreign_pages(const uint8_t *pool, const uint32_t *pages,
			 unsigned int n)
{
	unsigned int k, i, bad = 0;

	for (k = 0; k < n; k++)
		for (i = 0; i < PAGE; i++)
			if (pool[pages[k] * PAGE + i] != CANARY) {
				bad++;
				break;
			}
	return bad;
}

/*
 * Decode's side of one run; @dir: two hosts (prefill runs there), NULL:
 * prefill is a child of this process.
 */
static void run(enum mode mode, unsigned int iters, const char *dir)
{
	static uint8_t state[POOL_PAGES];	/* 0 free, 1 window, 2 victim */
	static uint32_t victims[POOL_PAGES];
	struct result *res = calloc(1, sizeof(*res));
	uint64_t close_ns = mode == FORCED ? 2000000ULL :
			    t_scaled_ms(5000) * 1000000ULL;
	long long deaths = path_deaths();
	struct channel ch = { .sock = -1, .dir = dir };
	uint64_t start = t_now_ms();
	struct xferk_block b[WIN_PAGES];
	uint32_t pages[WIN_PAGES];
	struct xferk *x;
	struct req_msg m;
	uint64_t conn, mr, win;
	unsigned int i, k, nvictims = 0;
	uint8_t *pool;
	pid_t pid = 0;
	int ret;

	if (xferk_open(&x) ||
	    xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn)) {
		T_EXPECT(0, "%s: open, connect", mode_name[mode]);
		return;
	}
	pool = t_map(POOL_PAGES * PAGE);
	memset(state, 0, sizeof(state));
	T_EXPECT(xferk_mr_reg(x, pool, POOL_PAGES * PAGE, RW, &mr) == 0,
		 "%s: pool", mode_name[mode]);
	if (dir) {
		ret = 0;
		while (!chan_exists(&ch, "ready", 0) && ret++ < 120000)
			usleep(1000);
	} else {
		if (mode == FORCED)
			t_fault_set("ignore_revokes", 1000000000);
		pid = start_prefill(&ch, mode == FORCED);
		T_EXPECT(pid > 0, "%s: prefill did not start", mode_name[mode]);
		if (pid <= 0)
			return;
	}

	for (i = 0; i < iters; i++) {
		uint64_t until = t_now_ms() + t_scaled_ms(30000), ack = 0;
		uint32_t how = 0;

		/* Pages for the request: free ones, or victims checked first. */
		for (k = 0; k < WIN_PAGES; k++) {
			uint32_t p;

			do {
				p = rnd() % POOL_PAGES;
			} while (state[p] == 1);
			if (state[p] == 2) {
				res->foreign += foreign_pages(pool, &p, 1);
				res->probes++;
			}
			state[p] = 1;
			pages[k] = p;
			memset(pool + p * PAGE, 0, PAGE);
			b[k] = (struct xferk_block) { p * PAGE, PAGE };
		}
		/*
		 * A session that recovers from a late write has no path yet,
		 * or loses it under the registration.
		 */
		while (((ret = xferk_window_open(x, conn, mr, b, WIN_PAGES, RW,
						 &m.tok, &win, &m.len)) ==
			-ENOTCONN || ret == -ECONNRESET) && t_now_ms() < until)
			usleep(5000);
		T_EXPECT(ret == 0, "%s: window %u: %s", mode_name[mode], i,
			 strerror(-ret));
		if (ret)
			break;
		chan_send(&ch, &m);
		/*
		 * Abort before, during or after the writes (across hosts a
		 * request takes prefill longer to see: a file in a share).
		 */
		usleep(rnd() % (dir ? 30000 : 3000));
		ret = xferk_window_close(x, win, xferk_now_ns() + close_ns, &how,
					 &ack);
		T_EXPECT(ret == 0, "%s: close %u: %s", mode_name[mode], i,
			 strerror(-ret));
		res->aborts++;
		if (how == XFERK_CLOSE_COOPERATIVE) {
			res->cooperative++;
			if (res->nacks < 1000)
				res->acks[res->nacks++] = ack;
		} else {
			res->forced++;
		}
		/* Immediate reuse: the victim's canary. */
		res->written += pool[pages[0] * PAGE] == PREFILL_BYTE;
		for (k = 0; k < WIN_PAGES; k++) {
			memset(pool + pages[k] * PAGE, CANARY, PAGE);
			state[pages[k]] = 2;
		}
		if (i % 100 == 99)
			printf("# %s: %u aborts, %u forced, %llu ms\n",
			       mode_name[mode], i + 1, res->forced,
			       (unsigned long long)(t_now_ms() - start));
		if (!dir && mode == KILLED && i % 50 == 49) {
			stop_prefill(pid, &ch, 1);
			pid = start_prefill(&ch, 0);
			T_EXPECT(pid > 0, "prefill did not restart");
			if (pid <= 0)
				break;
		}
	}
	if (dir)
		chan_put(&ch, "stop", 0, "");
	else if (pid > 0)
		stop_prefill(pid, &ch, 0);
	/* Late writes had their time: every victim still holds its canary. */
	usleep(100000);
	for (k = 0; k < POOL_PAGES; k++)
		if (state[k] == 2)
			victims[nvictims++] = k;
	res->foreign += foreign_pages(pool, victims, nvictims);
	res->probes += nvictims;
	t_fault_set("ignore_revokes", 0);

	qsort(res->acks, res->nacks, sizeof(res->acks[0]), cmp_u64);
	printf("# %s: %u aborts in %llu ms, %u victim probes, %u foreign canaries; closes %u cooperative, %u forced; answer median %llu us, p99 %llu us; %u windows written before their abort; %lld path deaths\n",
	       mode_name[mode], res->aborts,
	       (unsigned long long)(t_now_ms() - start), res->probes,
	       res->foreign,
	       res->cooperative, res->forced,
	       res->nacks ? (unsigned long long)res->acks[res->nacks / 2] / 1000 : 0,
	       res->nacks ? (unsigned long long)res->acks[res->nacks * 99 / 100] / 1000 : 0,
	       res->written, path_deaths() - deaths);
	T_EXPECT(res->aborts == iters, "%s: %u aborts of %u", mode_name[mode],
		 res->aborts, iters);
	T_EXPECT(res->foreign == 0, "%s: %u foreign canaries", mode_name[mode],
		 res->foreign);
	if (mode == FORCED) {
		T_EXPECT(res->forced == res->aborts, "forced: %u cooperative",
			 res->cooperative);
	} else {
		T_EXPECT(res->cooperative == res->aborts, "%s: %u forced",
			 mode_name[mode], res->forced);
		T_EXPECT(res->written > 0,
			 "%s: no window was written before its abort",
			 mode_name[mode]);
		/* No write ever reached a closed window's key. */
		T_EXPECT(path_deaths() == deaths, "%s: %lld paths died",
			 mode_name[mode], path_deaths() - deaths);
	}
	xferk_close(x);
	free(res);
}

static void restore(void)
{
	t_fault_set("ignore_revokes", 0);
}

static int mode_of(const char *name)
{
	int m;

	for (m = COOPERATIVE; m <= FORCED; m++)
		if (!strcmp(name, mode_name[m]))
			return m;
	return -1;
}

/*
 * Two hosts, the prefill host: forced sets this host's ignore_revokes;
 * killed runs its writer as a child it kills every 50 requests.
 */
static int prefill_host(const char *dir, int mode)
{
	struct channel ch = { .sock = -1, .dir = dir };
	unsigned int start = 0;
	pid_t pid;

	if (mode == FORCED)
		t_fault_set("ignore_revokes", 1000000000);
	do {
		pid = fork();
		if (pid == 0) {
			ch.next = start;
			prefill(&ch, mode == FORCED);
		}
		if (mode == KILLED) {
			start += 50;
			while (!chan_exists(&ch, NULL, start) &&
			       !chan_exists(&ch, "stop", 0))
				usleep(1000);
			kill(pid, SIGKILL);
		}
		waitpid(pid, NULL, 0);
	} while (mode == KILLED && !chan_exists(&ch, "stop", 0));
	t_fault_set("ignore_revokes", 0);
	return T_PASS;
}

int main(int argc, char **argv)
{
	unsigned int iters = t_debug_kernel() ? 100 : 1000;
	struct xferk *x;
	int m;

	if (xferk_open(&x))
		return T_SKIP;
	xferk_close(x);
	atexit(restore);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	rnd_state = xferk_now_ns() | 1;
	if (argc >= 4)
		mkdir(argv[2], 0777);	/* whichever side comes first */
	if (argc == 4 && !strcmp(argv[1], "prefill") && mode_of(argv[3]) >= 0)
		return prefill_host(argv[2], mode_of(argv[3]));
	printf("# seed %llu\n", (unsigned long long)rnd_state);
	if (argc == 5 && !strcmp(argv[1], "decode") && mode_of(argv[3]) >= 0) {
		run(mode_of(argv[3]), atoi(argv[4]), argv[2]);
		return t_result();
	}
	for (m = COOPERATIVE; m <= FORCED; m++)
		if (argc < 2 || !strcmp(argv[1], mode_name[m]))
			run(m, m == FORCED ? iters / 10 : iters, NULL);
	return t_result();
}
