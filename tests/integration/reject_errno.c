// SPDX-License-Identifier: GPL-2.0
/*
 * The peer does not choose our errno. A raw librdmacm listener on
 * 10.99.0.1:18600 (a thread of this program) rejects every connect request
 * xferk sends it, with the private data of one case at a time: xferk's
 * reject with reason 1, 2, 3, 512, 529 or 4095; no private data; four
 * bytes of garbage; another magic. XFERK_IOC_CONNECT, through the ioctl
 * and through io_uring, fails with exactly the documented errno:
 * EPROTONOSUPPORT for reason 1, EPROTO for reason 2, ECONNREFUSED for
 * everything else, never a kernel-internal code (529 is EIOCBQUEUED: a
 * ring CONNECT would never post its CQE). Every attempt reaches the
 * listener with a valid version-2 request, none counts as connected, and
 * no connection to 18600 stays up or connecting.
 *
 * The io_uring attempts run in a child process: should a CQE never come,
 * that process could not exit (the ring waits for the command), and this
 * program must still fail rather than hang.
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "raw_peer.h"

#define PEER		"10.99.0.1"
#define PORT		18600
#define PEER_NAME	"10.99.0.1:18600"	/* as debugfs prints it */
#define NO_CQE		INT_MIN			/* uring child: no CQE in time */
#define BAD_CQE		(INT_MIN + 1)		/* uring child: not our CQE */

struct reject_case {
	const char *name;
	uint32_t magic;		/* of struct raw_rej */
	uint32_t reason;
	uint8_t len;		/* bytes of it sent; 0: no private data */
	int want;		/* the errno CONNECT must fail with */
};

static const struct reject_case cases[] = {
	{ "reason 1 (version)",	    RAW_MAGIC,	RAW_REJ_VERSION,   12, EPROTONOSUPPORT },
	{ "reason 2 (malformed)",   RAW_MAGIC,	RAW_REJ_MALFORMED, 12, EPROTO },
	{ "reason 3 (busy)",	    RAW_MAGIC,	RAW_REJ_BUSY,	   12, ECONNREFUSED },
	{ "reason 512",		    RAW_MAGIC,	512,		   12, ECONNREFUSED },
	{ "reason 529",		    RAW_MAGIC,	529,		   12, ECONNREFUSED },
	{ "reason 4095",	    RAW_MAGIC,	4095,		   12, ECONNREFUSED },
	{ "no private data",	    0,		0,		   0,  ECONNREFUSED },
	{ "4 bytes of garbage",	    0xdeadbeef,	0,		   4,  ECONNREFUSED },
	{ "other magic, reason 1",  0x5846524c,	RAW_REJ_VERSION,   12, ECONNREFUSED },
};

#define NR_CASES	(int)(sizeof(cases) / sizeof(cases[0]))

/* What the listener does with the next request, and what it saw. */
static struct {
	pthread_mutex_t lock;
	int cur;		/* index into cases[] */
	int requests;		/* requests for the current case */
	int bad_requests;	/* ... that were not valid version-2 requests */
	int reject_errors;	/* rdma_reject() failures */
	int fatal;		/* the listener stopped on an error */
	int stop;
} L = { .lock = PTHREAD_MUTEX_INITIALIZER };

/*
 * xferk's request for a new session: its magic, version 2, 1 to 8 QPs, no
 * QP index, no capability bit xferk does not know, and a connection id.
 */
static int request_valid(const struct rdma_cm_event *ev)
{
	const struct raw_msg *m = ev->param.conn.private_data;

	return m && ev->param.conn.private_data_len >= sizeof(*m) &&
	       be32toh(m->magic) == RAW_MAGIC &&
	       be16toh(m->version) == RAW_VERSION &&
	       m->nr_qps >= 1 && m->nr_qps <= 8 && !m->lane &&
	       !(be64toh(m->caps) & ~RAW_CAPS_KNOWN) && m->conn_id;
}

static void *listener(void *arg)
{
	struct rdma_event_channel *ch = arg;
	const struct reject_case *c;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct raw_rej rej;
	int ret, valid, stop = 0;

	while (!stop) {
		ret = raw_get_event(ch, 100, &ev);
		pthread_mutex_lock(&L.lock);
		stop = L.stop;
		if (ret && ret != -ETIME)
			L.fatal = stop = 1;
		pthread_mutex_unlock(&L.lock);
		if (ret)
			continue;
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		id = ev->id;
		valid = request_valid(ev);
		pthread_mutex_lock(&L.lock);
		c = &cases[L.cur];
		L.requests++;
		L.bad_requests += !valid;
		pthread_mutex_unlock(&L.lock);

		raw_rej_init(&rej, c->magic, c->reason);
		ret = rdma_reject(id, c->len ? &rej : NULL, c->len);
		rdma_ack_cm_event(ev);
		rdma_destroy_id(id);
		if (ret) {
			perror("rdma_reject");
			pthread_mutex_lock(&L.lock);
			L.reject_errors++;
			pthread_mutex_unlock(&L.lock);
		}
	}
	return NULL;
}

/* The listener rejects the next requests as case @i says. */
static void select_case(int i)
{
	pthread_mutex_lock(&L.lock);
	L.cur = i;
	L.requests = 0;
	L.bad_requests = 0;
	L.reject_errors = 0;
	pthread_mutex_unlock(&L.lock);
}

/* The listener saw a valid request for the current case and rejected it. */
static void check_listener(int i, const char *via)
{
	pthread_mutex_lock(&L.lock);
	T_EXPECT(L.requests >= 1, "%s via %s: no request reached the listener",
		 cases[i].name, via);
	T_EXPECT(!L.bad_requests, "%s via %s: %d invalid requests",
		 cases[i].name, via, L.bad_requests);
	T_EXPECT(!L.reject_errors, "%s via %s: rdma_reject failed", cases[i].name,
		 via);
	T_EXPECT(!L.fatal, "listener stopped");
	pthread_mutex_unlock(&L.lock);
}

static void check_errno(int i, const char *via, int ret)
{
	T_EXPECT(ret == -cases[i].want, "%s via %s: got %d (%s), want -%d (%s)",
		 cases[i].name, via, ret, ret == NO_CQE ? "no CQE" :
		 ret == BAD_CQE ? "wrong CQE" : strerror(-ret), cases[i].want,
		 strerror(cases[i].want));
}

/*
 * The io_uring side, in its own process: for each case index read from
 * @cmd_fd one CONNECT through the ring, and its CQE's res (or NO_CQE,
 * BAD_CQE) written to @res_fd. First writes 0, T_SKIP or T_FAIL: ready.
 */
static int uring_child(int cmd_fd, int res_fd, unsigned int timeout_ms)
{
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	struct xferk *x;
	int i, res, ready = 0;
	uint64_t ud;

	if (xferk_open(&x)) {
		ready = T_FAIL;
	} else {
		res = io_uring_queue_init(8, &ring, 0);
		if (res)
			ready = res == -ENOSYS ? T_SKIP : T_FAIL;
	}
	if (write(res_fd, &ready, sizeof(ready)) != sizeof(ready))
		return T_FAIL;
	if (ready)	/* the parent knows */
		return ready == T_SKIP ? T_PASS : T_FAIL;
	while (read(cmd_fd, &i, sizeof(i)) == sizeof(i)) {
		struct xferk_ioc_connect a = {
			.size = sizeof(a), .family = AF_INET, .port = PORT,
			.timeout_ms = timeout_ms,
		};

		inet_pton(AF_INET, PEER, a.addr);
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_xferk_cmd(sqe, xferk_fd(x), XFERK_IOC_CONNECT, &a);
		io_uring_sqe_set_data64(sqe, i + 1);
		if (io_uring_submit(&ring) != 1)
			res = BAD_CQE;
		else if (t_cqe(&ring, timeout_ms + 10000, &res, &ud))
			res = NO_CQE;
		else if (ud != (uint64_t)i + 1)
			res = BAD_CQE;
		if (write(res_fd, &res, sizeof(res)) != sizeof(res))
			return T_FAIL;
		/* A command still in flight: exiting may wait for it forever. */
		if (res == NO_CQE)
			_exit(T_FAIL);
	}
	io_uring_queue_exit(&ring);
	xferk_close(x);
	return T_PASS;
}

/* An int from @fd within @ms milliseconds; 0, -ETIME or -EPIPE. */
static int read_int(int fd, int *v, unsigned int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, (int)ms) <= 0)
		return -ETIME;
	return read(fd, v, sizeof(*v)) == sizeof(*v) ? 0 : -EPIPE;
}

/* Reaps the uring child, bounded: one stuck in exit is left behind. */
static void reap_child(pid_t pid)
{
	int i, status = 0;

	for (i = 0; i < 200; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			T_EXPECT(WIFEXITED(status) &&
				 WEXITSTATUS(status) == T_PASS,
				 "uring child: status %#x", status);
			return;
		}
		usleep(50000);
	}
	T_EXPECT(0, "uring child did not exit within 10 s (a command in flight?)");
	kill(pid, SIGKILL);
}

/* Sets up the raw listener on PEER:PORT; NULL on failure. */
static struct rdma_event_channel *listen_raw(struct rdma_cm_id **id)
{
	struct rdma_event_channel *ch = raw_channel();
	struct sockaddr_in sin;

	if (!ch)
		return NULL;
	raw_sockaddr(&sin, PEER, PORT);
	if (rdma_create_id(ch, id, NULL, RDMA_PS_TCP)) {
		perror("rdma_create_id");
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	if (rdma_bind_addr(*id, (struct sockaddr *)&sin) || rdma_listen(*id, 8)) {
		perror("listen on " PEER_NAME);
		rdma_destroy_id(*id);
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	return ch;
}

int main(void)
{
	unsigned int tmo = t_debug_kernel() ? 20000 : 5000;
	long long peers = t_stat("peers_connected"), now;
	int cmd[2], res[2], i, ret, ready = -1, uring = 1;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid;
	struct xferk *x;
	pthread_t thr;
	uint64_t conn;
	pid_t pid;

	if (xferk_open(&x))
		return T_SKIP;
	signal(SIGPIPE, SIG_IGN);	/* a dead child: EPIPE, not death */
	if (pipe(cmd) || pipe(res)) {
		perror("pipe");
		return T_FAIL;
	}
	/* Before the listener thread: the child uses no lock it could hold. */
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return T_FAIL;
	}
	if (pid == 0) {
		close(cmd[1]);
		close(res[0]);
		_exit(uring_child(cmd[0], res[1], tmo));
	}
	close(cmd[0]);
	close(res[1]);
	if (read_int(res[0], &ready, 10000) || ready) {
		fprintf(stderr, "io_uring side not ready (%d): ioctl only\n", ready);
		T_EXPECT(ready == T_SKIP, "uring child: %d", ready);
		uring = 0;
	}

	ch = listen_raw(&lid);
	if (!ch || pthread_create(&thr, NULL, listener, ch)) {
		close(cmd[1]);
		reap_child(pid);
		return T_FAIL;
	}

	for (i = 0; i < NR_CASES; i++) {
		select_case(i);
		conn = 0;
		ret = xferk_connect(x, PEER, PORT, tmo, &conn);
		check_errno(i, "ioctl", ret);
		check_listener(i, "ioctl");
		if (!ret)
			xferk_disconnect(x, conn);
		if (!uring)
			continue;

		select_case(i);
		if (write(cmd[1], &i, sizeof(i)) != sizeof(i) ||
		    read_int(res[0], &ret, tmo + 15000)) {
			T_EXPECT(0, "%s via io_uring: no answer from the child",
				 cases[i].name);
			uring = 0;
			continue;
		}
		check_errno(i, "io_uring", ret);
		check_listener(i, "io_uring");
		if (ret == NO_CQE)
			uring = 0;
	}

	pthread_mutex_lock(&L.lock);
	L.stop = 1;
	pthread_mutex_unlock(&L.lock);
	pthread_join(thr, NULL);
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	close(cmd[1]);
	reap_child(pid);

	/*
	 * Nothing connected. Other connections of the host may go down
	 * meanwhile (an idle passive end of an earlier test is reaped), so
	 * the counter may drop, but a rejected attempt must never raise it.
	 */
	now = t_stat("peers_connected");
	T_EXPECT(now >= 0 && now <= peers, "peers_connected %lld, was %lld", now,
		 peers);
	for (i = 0; i < (t_debug_kernel() ? 600 : 200); i++) {
		if (t_peers_matching(PEER_NAME, NULL) == 0)
			break;
		usleep(50000);
	}
	T_EXPECT(t_peers_matching(PEER_NAME, " up ") == 0 &&
		 t_peers_matching(PEER_NAME, " connecting ") == 0,
		 "a connection to " PEER_NAME " is up or connecting");
	T_EXPECT(t_peers_matching(PEER_NAME, NULL) == 0,
		 "rejected connections to " PEER_NAME " not torn down (%d lines)",
		 t_peers_matching(PEER_NAME, NULL));
	xferk_close(x);
	return t_result();
}
