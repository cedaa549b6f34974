// SPDX-License-Identifier: GPL-2.0
/*
 * Notifications over soft-RoCE (loopback):
 * 1. 10000 ops (500 on the debug kernel) each write their own 4 KiB slot
 *    of an export with XFERK_SUBMIT_NOTIFY and the slot's number as tag,
 *    64 in flight at a time. A thread takes the target's events as they
 *    come: each is DATA, complete, 4096 bytes, for that export, arrives
 *    exactly once and in submit order, and when it arrives the slot
 *    already holds the op's bytes; rxe0 sent no RNR NAK meanwhile (its
 *    hw counter): no NOTIFY found the receiver's ring empty. Then the same
 *    ops without notification; both rates are printed (ops/s) with their
 *    ratio.
 * 2. Overflow: a file whose queue holds 16 events (events_per_file) is
 *    sent 40 notifications with no data: EVENTS returns the 16 oldest, in
 *    order, and reports 24 dropped, once; stats/events_dropped counts
 *    them.
 * 3. EVENTS into a bad buffer fails with EFAULT and takes nothing: the
 *    next EVENTS returns the event. Bad input, each with its documented
 *    errno. A notification on a closed export's import fails with ESTALE.
 * 4. Notifications arrive while exports are registered on the connection
 *    they arrive on: both go on.
 * 5. On a session that ended, NOTIFY fails with ENOTCONN.
 *
 * Two hosts (tests/twohost/95_notify.sh): the target runs 1 against an
 * initiator on the other host, the token and the end through files in DIR:
 *   notify target DIR N        exports, writes DIR/token, checks N events
 *   notify initiator DIR N     imports DIR/token, writes N slots, notifying
 *
 * Regression (4): a notification's delivery took the connection's export
 * lock in the completion handler, while an export held it waiting for its
 * registration's completion from that same handler: both hung.
 * Regression (5): notifications were queued on an ended session, holding
 * the file's work-request budget until every handle on it went.
 * Regression (1): NOTIFYs were bounded only by their sends' completions,
 * which come when the receiving device took them, not its kernel: a
 * receiver that lagged in posting its buffers again ran out of them, and
 * each RNR NAK stalled the session for 655 ms (113 of them, 124
 * notifications/s instead of 2,500, with the host busy). NOTIFYs are
 * credited now (kmod/notify.c); the KUnit suite xferk_notify has the
 * deterministic test.
 */
#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <sys/stat.h>

#include "test.h"

#define MS		1000000ULL
#define SLOT		4096UL
#define INFLIGHT	64
#define RW		(XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE)

static struct t_loop l;
static uint64_t exp_h, rm;
static uint32_t nr_ops;

/* What the event thread saw. */
static struct {
	uint32_t received;	/* events in order */
	uint32_t bad;		/* out of order, duplicate, wrong fields */
	uint32_t early;		/* the slot did not hold the data yet */
	uint64_t last_ns;	/* when the last one arrived */
	int error;
} seen;

static void *event_thread(void *arg)
{
	struct xferk_event ev[256];
	uint64_t until = xferk_now_ns() + t_scaled_ms(120000) * MS;
	uint32_t nr, i;
	int ret;

	(void)arg;
	while (seen.received < nr_ops) {
		ret = xferk_events(l.x, ev, 256, until, &nr, NULL);
		if (ret) {
			seen.error = ret;
			break;
		}
		for (i = 0; i < nr; i++) {
			if (ev[i].tag != seen.received ||
			    ev[i].type != XFERK_EVENT_DATA || ev[i].flags ||
			    ev[i].bytes != SLOT || ev[i].export_handle != exp_h) {
				if (seen.bad++ < 5)
					fprintf(stderr, "event %u: tag %llu type %u flags %u bytes %llu\n",
						seen.received,
						(unsigned long long)ev[i].tag,
						ev[i].type, ev[i].flags,
						(unsigned long long)ev[i].bytes);
				continue;
			}
			if (t_check(l.dst + ev[i].tag * SLOT, SLOT, ev[i].tag) >= 0)
				seen.early++;
			seen.received++;
		}
	}
	seen.last_ns = xferk_now_ns();
	return NULL;
}

/* RNR NAKs rxe0 sent so far (its soft-RoCE hw counter), or -1. */
static long long rnr_naks(void)
{
	return t_read_number("/sys/class/infiniband/rxe0/ports/1/hw_counters/send_rnr_err");
}

/*
 * Writes every slot, @notify or not, INFLIGHT ops at a time. Returns the
 * time from the first submit until the last op is physical, or 0.
 */
static uint64_t write_slots(int notify)
{
	struct xferk_submit_opts o = { .flags = notify ? XFERK_SUBMIT_NOTIFY : 0 };
	struct xferk_op_snapshot s;
	static uint64_t ops[INFLIGHT];
	uint64_t start = xferk_now_ns();
	uint32_t i, done = 0;
	int ret;

	for (i = 0; i < nr_ops + INFLIGHT; i++) {
		if (i >= INFLIGHT) {
			ret = xferk_wait(l.x, ops[done % INFLIGHT],
					 XFERK_DEADLINE_NONE,
					 XFERK_WAIT_PHYSICAL, &s);
			if (ret || s.state != XFERK_STATE_SUCCEEDED) {
				T_EXPECT(0, "op %u: %s %s", done, strerror(-ret),
					 xferk_state_name(s.state));
				return 0;
			}
			xferk_release(l.x, ops[done++ % INFLIGHT]);
		}
		if (i < nr_ops) {
			struct xferk_frag f = {
				.mr = l.src_mr, .offset = i * SLOT, .len = SLOT,
				.remote = rm, .remote_offset = i * SLOT,
				.opcode = XFERK_OP_WRITE,
			};

			ret = xferk_submit_group(l.x, &f, 1, XFERK_DEADLINE_NONE,
						 &o, 0, notify ? i : 0,
						 &ops[i % INFLIGHT]);
			if (ret) {
				T_EXPECT(0, "submit %u: %s", i, strerror(-ret));
				return 0;
			}
		}
	}
	return xferk_now_ns() - start;
}

static void data_then_event(void)
{
	long long dups = t_stat("notifies_duplicate");
	long long rnr = rnr_naks();
	uint64_t start, notify_ns, plain_ns;
	pthread_t t;
	uint32_t i;

	for (i = 0; i < nr_ops; i++)
		t_fill(l.src + i * SLOT, SLOT, i);
	memset(l.dst, 0, nr_ops * SLOT);
	start = xferk_now_ns();
	T_EXPECT(pthread_create(&t, NULL, event_thread, NULL) == 0, "thread");
	write_slots(1);
	pthread_join(t, NULL);
	notify_ns = seen.last_ns - start;
	T_EXPECT(seen.error == 0, "events: %s", strerror(-seen.error));
	T_EXPECT(seen.received == nr_ops && seen.bad == 0,
		 "%u of %u events in order, %u wrong", seen.received, nr_ops,
		 seen.bad);
	T_EXPECT(seen.early == 0, "%u events came before their data", seen.early);
	T_EXPECT(t_stat("notifies_duplicate") == dups, "duplicates delivered");
	if (rnr >= 0) {
		rnr = rnr_naks() - rnr;
		T_EXPECT(rnr == 0, "%lld RNR NAKs: a NOTIFY found no receive buffer",
			 rnr);
	}
	memset(l.dst, 0, nr_ops * SLOT);
	plain_ns = write_slots(0);
	T_EXPECT(plain_ns > 0, "plain writes");
	if (notify_ns && plain_ns)
		printf("notify: %u ops of 4 KiB, %.0f ops/s to the event; plain writes %.0f ops/s to physical; ratio %.2f\n",
		       nr_ops, nr_ops * 1e9 / notify_ns, nr_ops * 1e9 / plain_ns,
		       (double)plain_ns / notify_ns);
}

/* A queue of 16: the oldest 16 stay, the rest are counted, reported once. */
static void overflow(void)
{
	long long dropped = t_stat("events_dropped");
	long long received = t_stat("notifies_received");
	struct xferk_event ev[64];
	struct xferk_token tok;
	struct t_loop o;
	uint64_t e, r, lost = 0;
	uint32_t nr = 0, i;
	int ret;

	T_EXPECT(t_param_scoped("events_per_file", 16) == 0, "events_per_file");
	t_loop_open(&o, SLOT, SLOT);
	ret = xferk_export(o.x, o.conn, o.dst_mr, 0, SLOT, RW, &tok, &e);
	if (!ret)
		ret = xferk_import(o.x, o.conn, &tok, &r);
	T_EXPECT(ret == 0, "export: %s", strerror(-ret));
	for (i = 0; i < 40; i++)
		T_EXPECT(xferk_notify(o.x, r, i) == 0, "notify %u", i);
	T_EXPECT(t_stat_wait("notifies_received", received + 40,
			     t_scaled_ms(20000)) == received + 40,
		 "notifications received: %lld", t_stat("notifies_received") -
		 received);
	ret = xferk_events(o.x, ev, 64, 0, &nr, &lost);
	T_EXPECT(ret == 0 && nr == 16 && lost == 24, "events: %d, %u, %llu dropped",
		 ret, nr, (unsigned long long)lost);
	for (i = 0; i < nr; i++)
		T_EXPECT(ev[i].tag == i && ev[i].type == XFERK_EVENT_NOTE &&
			 ev[i].export_handle == e && ev[i].bytes == 0,
			 "event %u: tag %llu type %u", i,
			 (unsigned long long)ev[i].tag, ev[i].type);
	T_EXPECT(t_stat("events_dropped") == dropped + 24, "events_dropped %lld",
		 t_stat("events_dropped") - dropped);
	ret = xferk_events(o.x, ev, 64, 0, &nr, &lost);
	T_EXPECT_ERR(ret, ETIMEDOUT);
	T_EXPECT(nr == 0 && lost == 0, "again: %u events, %llu dropped", nr,
		 (unsigned long long)lost);

	/* EFAULT takes nothing. */
	received = t_stat("notifies_received");
	T_EXPECT(xferk_notify(o.x, r, 77) == 0, "notify");
	t_stat_wait("notifies_received", received + 1, t_scaled_ms(20000));
	T_EXPECT_ERR(xferk_events(o.x, (struct xferk_event *)8, 4, 0, &nr, NULL),
		     EFAULT);
	ret = xferk_events(o.x, ev, 4, 0, &nr, NULL);
	T_EXPECT(ret == 0 && nr == 1 && ev[0].tag == 77,
		 "after EFAULT: %d, %u events", ret, nr);

	/* A closed export's import: refused before anything is queued. */
	T_EXPECT(xferk_window_close(o.x, e, xferk_now_ns() + t_scaled_ms(10000) * MS,
				    NULL, NULL) == 0, "close");
	T_EXPECT_ERR(xferk_notify(o.x, r, 1), ESTALE);
	xferk_close(o.x);
	t_restore_params();
}

struct race {
	struct t_loop *l;
	uint64_t remote;
	volatile int stop;
	uint32_t sent;
	int error;
};

static void *notify_thread(void *arg)
{
	struct race *r = arg;
	int ret;

	while (!r->stop) {
		ret = xferk_notify(r->l->x, r->remote, r->sent);
		if (ret == -EBUSY) {
			usleep(1000);
			continue;
		}
		if (ret) {
			r->error = ret;
			break;
		}
		r->sent++;
	}
	return NULL;
}

/* EXPORT and UNEXPORT on a connection that notifications arrive on. */
static void export_while_notified(void)
{
	long long received = t_stat("notifies_received");
	unsigned int i, n = t_debug_kernel() ? 30 : 300;
	struct race r = { 0 };
	struct xferk_token tok;
	struct t_loop o;
	pthread_t t;
	uint64_t e;
	int ret = 0;

	t_loop_open(&o, SLOT, 16 * SLOT);
	ret = xferk_export(o.x, o.conn, o.dst_mr, 0, SLOT, RW, &tok, &e);
	if (!ret)
		ret = xferk_import(o.x, o.conn, &tok, &r.remote);
	T_EXPECT(ret == 0, "export: %s", strerror(-ret));
	r.l = &o;
	T_EXPECT(pthread_create(&t, NULL, notify_thread, &r) == 0, "thread");
	for (i = 0; i < n && !ret; i++) {
		ret = xferk_export(o.x, o.conn, o.dst_mr, (i % 16) * SLOT, SLOT,
				   RW, &tok, &e);
		if (!ret)
			ret = xferk_unexport(o.x, e);
	}
	r.stop = 1;
	pthread_join(t, NULL);
	T_EXPECT(ret == 0, "export %u: %s", i, strerror(-ret));
	T_EXPECT(r.error == 0 && r.sent > 0, "notify: %s, %u sent",
		 strerror(-r.error), r.sent);
	T_EXPECT(t_stat_wait("notifies_received", received + r.sent,
			     t_scaled_ms(20000)) == received + r.sent,
		 "%lld of %u received", t_stat("notifies_received") - received,
		 r.sent);
	xferk_close(o.x);
}

static void ended_session(void)
{
	struct xferk_token tok;
	struct t_loop o;
	uint64_t e, r;
	int ret;

	t_loop_open(&o, SLOT, SLOT);
	ret = xferk_export(o.x, o.conn, o.dst_mr, 0, SLOT, RW, &tok, &e);
	if (!ret)
		ret = xferk_import(o.x, o.conn, &tok, &r);
	T_EXPECT(ret == 0, "export: %s", strerror(-ret));
	T_EXPECT(xferk_notify(o.x, r, 1) == 0, "notify");
	if (t_end_session()) {
		T_EXPECT(0, "could not end the session");
	} else {
		T_EXPECT_ERR(xferk_notify(o.x, r, 2), ENOTCONN);
	}
	xferk_close(o.x);
}

static int events_raw(struct xferk_ioc_events *a)
{
	return ioctl(xferk_fd(l.x), XFERK_IOC_EVENTS, a) ? -errno : 0;
}

static int notify_raw(struct xferk_ioc_notify *a)
{
	return ioctl(xferk_fd(l.x), XFERK_IOC_NOTIFY, a) ? -errno : 0;
}

static void bad_input(void)
{
	struct xferk_event ev;
	struct xferk_ioc_events a;
	struct xferk_ioc_notify n;
	struct xferk_submit_opts o = { 0 };
	struct xferk_frag f = {
		.mr = l.src_mr, .len = SLOT, .remote = rm,
		.opcode = XFERK_OP_WRITE,
	};
	uint64_t op = 0;

#define EVENTS(err, change)						\
	do {								\
		a = (struct xferk_ioc_events) { .size = sizeof(a),	\
			.events = (uintptr_t)&ev, .max_events = 1 };	\
		change;							\
		T_EXPECT_ERR(events_raw(&a), err);			\
	} while (0)
	EVENTS(EINVAL, a.flags = 1);
	EVENTS(EINVAL, a.max_events = 0);
	EVENTS(E2BIG, a.max_events = XFERK_EVENTS_MAX + 1);
	EVENTS(EINVAL, a.reserved[0] = 1);
	EVENTS(ETIMEDOUT, a.deadline_ns = 0);
#undef EVENTS
#define NOTIFY(err, change)						\
	do {								\
		n = (struct xferk_ioc_notify) { .size = sizeof(n),	\
						.remote = rm };		\
		change;							\
		T_EXPECT_ERR(notify_raw(&n), err);			\
	} while (0)
	NOTIFY(EINVAL, n.flags = 1);
	NOTIFY(EINVAL, n.reserved[1] = 1);
	NOTIFY(EINVAL, n.remote = 0);
	NOTIFY(EINVAL, n.remote = l.conn);
	NOTIFY(EINVAL, n.remote = exp_h);
#undef NOTIFY
	/* A tag without the flag. */
	T_EXPECT_ERR(xferk_submit_group(l.x, &f, 1, XFERK_DEADLINE_NONE, &o, 0,
					5, &op), EINVAL);
	T_EXPECT(op == 0, "a refused submit published an op");
}

/* Opens /dev/xferk, connects to the peer, registers @len bytes at @buf. */
static int host_setup(uint8_t **buf, size_t len, uint32_t access, uint64_t *mr)
{
	int ret = xferk_open(&l.x);

	if (ret)
		return ret;
	*buf = t_map(len);
	ret = xferk_connect(l.x, t_peer(), 0, t_connect_ms(), &l.conn);
	if (!ret)
		ret = xferk_mr_reg(l.x, *buf, len, access, mr);
	if (ret)
		fprintf(stderr, "setup: %s\n", strerror(-ret));
	return ret;
}

/* Two hosts, the target: exports its slots, checks every event. */
static int target_host(const char *dir)
{
	char path[512], text[XFERK_TOKEN_HEX_LEN + 2];
	struct xferk_token tok;
	FILE *f;
	int ret;

	ret = host_setup(&l.dst, nr_ops * SLOT, RW, &l.dst_mr);
	if (!ret)
		ret = xferk_export(l.x, l.conn, l.dst_mr, 0, nr_ops * SLOT, RW,
				   &tok, &exp_h);
	if (ret)
		return T_FAIL;
	xferk_token_format(&tok, text, sizeof(text));
	snprintf(path, sizeof(path), "%s/token.tmp", dir);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%s\n", text) < 0 || fclose(f))
		return T_FAIL;
	snprintf(text, sizeof(text), "%s/token", dir);
	if (rename(path, text))
		return T_FAIL;
	event_thread(NULL);
	T_EXPECT(seen.error == 0, "events: %s", strerror(-seen.error));
	T_EXPECT(seen.received == nr_ops && seen.bad == 0 && seen.early == 0,
		 "%u of %u events in order, %u wrong, %u before their data",
		 seen.received, nr_ops, seen.bad, seen.early);
	printf("# %u notifications from the other host, each after its data\n",
	       seen.received);
	return t_result();
}

/* Two hosts, the initiator: writes every slot of the target's export. */
static int initiator_host(const char *dir)
{
	char path[512];
	struct xferk_token tok;
	uint64_t until = t_now_ms() + t_scaled_ms(60000);
	uint32_t i;
	int ret;

	if (host_setup(&l.src, nr_ops * SLOT, XFERK_ACCESS_LOCAL_SRC, &l.src_mr))
		return T_FAIL;
	for (i = 0; i < nr_ops; i++)
		t_fill(l.src + i * SLOT, SLOT, i);
	snprintf(path, sizeof(path), "%s/token", dir);
	while ((ret = t_read_token(path, &tok)) && t_now_ms() < until)
		usleep(20000);
	if (!ret)
		ret = xferk_import(l.x, l.conn, &tok, &rm);
	if (ret) {
		fprintf(stderr, "token: %s\n", strerror(-ret));
		return T_FAIL;
	}
	write_slots(1);
	return t_result();
}

int main(int argc, char **argv)
{
	struct xferk_token tok;
	int ret;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	setvbuf(stdout, NULL, _IOLBF, 0);
	nr_ops = t_debug_kernel() ? 500 : 10000;
	if (argc == 4) {
		nr_ops = (uint32_t)atoi(argv[3]);
		mkdir(argv[2], 0777);	/* whichever side comes first */
		if (!strcmp(argv[1], "target"))
			return target_host(argv[2]);
		if (!strcmp(argv[1], "initiator"))
			return initiator_host(argv[2]);
		return T_FAIL;
	}
	t_loop_open(&l, nr_ops * SLOT, nr_ops * SLOT);
	ret = xferk_export(l.x, l.conn, l.dst_mr, 0, nr_ops * SLOT, RW, &tok,
			   &exp_h);
	if (!ret)
		ret = xferk_import(l.x, l.conn, &tok, &rm);
	if (ret) {
		fprintf(stderr, "export: %s\n", strerror(-ret));
		return T_FAIL;
	}
	data_then_event();
	bad_input();
	overflow();
	export_while_notified();
	ended_session();
	return t_result();
}
