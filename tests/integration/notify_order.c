// SPDX-License-Identifier: GPL-2.0
/*
 * The order of notifications under path deaths (soft-RoCE, loopback):
 * 4 threads each loop over their own 64 KiB slot: a WRITE with
 * XFERK_SUBMIT_NOTIFY (tag: thread, round, DATA) of words that say the
 * thread and the round, QUERY until it is
 * physically complete (polled, so the thread sees it as soon as the kernel
 * says so), then NOTIFY a NOTE (tag: thread, round, NOTE).
 * Meanwhile the session's path dies every 100-300 ms (fault qp_error) and
 * the session replaces it. The target's events, per thread, are exactly
 * DATA 0, NOTE 0, DATA 1, NOTE 1, ...: each once, none lost, every DATA
 * complete, and a NOTE sent after its op was seen physically complete
 * never before that op's DATA (xferk_notify(3), Documentation/target.md).
 * A thread writes its next round only once the checker took its DATA
 * event, so when that event is taken, its slot holds exactly that round's
 * words: a DATA event never comes before its op's bytes are placed, also
 * when its work requests were flushed by a path's death and posted again
 * on the next path, or a first attempt wrote part of them, and no older
 * attempt writes after it (issue: a DATA event before its data, seen once
 * under load with rails). The slot is not read while a later round lands:
 * the device may copy a word byte by byte (soft-RoCE under TCG), and a
 * word caught halfway from round 255 to 256 reads as round 0.
 * At least one path died.
 *
 * Regression: an op was visible as physically complete (WAIT, QUERY)
 * before its DATA notification was numbered on the session, so a NOTE
 * sent at once could be numbered, and arrive, first.
 */
#include <pthread.h>
#include <sched.h>

#include "test.h"

#define SLOT		65536UL
#define THREADS		4
#define KIND_NOTE	1

static struct t_loop l;
static uint64_t rm, exp_h;
static uint32_t rounds;
static volatile int writers_done;

/*
 * Per thread, the rounds whose DATA event the checker took; checker_done
 * once it takes no more. Both under seen_lock.
 */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t seen_cond = PTHREAD_COND_INITIALIZER;
static uint32_t seen[THREADS];
static int checker_done;

static uint64_t tag_of(uint32_t t, uint32_t round, uint32_t kind)
{
	return (uint64_t)t << 32 | (uint64_t)round << 1 | kind;
}

/* What a writer thread ended with. */
static struct writer {
	uint32_t t;
	uint32_t done;
	int error;
	char what[96];
} writers[THREADS];

/* Waits until the checker took DATA of @round of thread @t: 0, or -ECANCELED. */
static int wait_seen(uint32_t t, uint32_t round)
{
	int ret;

	pthread_mutex_lock(&seen_lock);
	while (seen[t] <= round && !checker_done)
		pthread_cond_wait(&seen_cond, &seen_lock);
	ret = seen[t] > round ? 0 : -ECANCELED;
	pthread_mutex_unlock(&seen_lock);
	return ret;
}

static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	struct xferk_op_snapshot s;
	struct xferk_submit_opts o = { .flags = XFERK_SUBMIT_NOTIFY };
	struct xferk_frag f = {
		.mr = l.src_mr, .offset = w->t * SLOT, .len = SLOT,
		.remote = rm, .remote_offset = w->t * SLOT,
		.opcode = XFERK_OP_WRITE,
	};
	uint64_t *words = (uint64_t *)(l.src + w->t * SLOT);
	uint64_t op;
	uint32_t i;
	int ret;

	for (w->done = 0; w->done < rounds; w->done++) {
		for (i = 0; i < SLOT / sizeof(*words); i++)
			words[i] = (uint64_t)w->t << 32 | w->done;
		ret = xferk_submit_group(l.x, &f, 1, XFERK_DEADLINE_NONE, &o, 0,
					 tag_of(w->t, w->done, 0), &op);
		if (ret) {
			snprintf(w->what, sizeof(w->what), "submit");
			break;
		}
		/*
		 * Polled rather than waited for: a WAIT sleeps until the op's
		 * wakeup, a QUERY sees the op the moment it is physical.
		 */
		while (!(ret = xferk_query(l.x, op, &s)) &&
		       !s.physical_complete)
			sched_yield();
		xferk_release(l.x, op);
		if (!ret && s.state != XFERK_STATE_SUCCEEDED) {
			snprintf(w->what, sizeof(w->what), "op %s",
				 xferk_state_name(s.state));
			ret = -EIO;
		}
		if (ret)
			break;
		/* The op is physically complete: its DATA is on its way. */
		while ((ret = xferk_notify(l.x, rm,
					   tag_of(w->t, w->done, KIND_NOTE))) ==
		       -EBUSY)
			usleep(1000);
		if (ret) {
			snprintf(w->what, sizeof(w->what), "notify");
			break;
		}
		ret = wait_seen(w->t, w->done);
		if (ret) {
			snprintf(w->what, sizeof(w->what), "no DATA event");
			break;
		}
	}
	w->error = ret;
	return NULL;
}

/* Kills the session's path every 100-300 ms until the writers are done. */
static void *fault_thread(void *arg)
{
	unsigned int seed = 1;

	(void)arg;
	while (!writers_done) {
		usleep(100000 + rand_r(&seed) % 200000);
		t_fault_set("qp_error", 1);
	}
	t_fault_set("qp_error", 0);
	return NULL;
}

/*
 * At thread @t's DATA of @round, which the thread waits for before it
 * writes again: the words in its slot that are not that round's.
 */
static uint32_t wrong_words(uint32_t t, uint32_t round)
{
	const volatile uint64_t *words = (const uint64_t *)(l.dst + t * SLOT);
	uint64_t want = (uint64_t)t << 32 | round;
	uint32_t i, wrong = 0;

	for (i = 0; i < SLOT / sizeof(*words); i++)
		wrong += words[i] != want;
	return wrong;
}

/* The checker took DATA of @round of thread @t: the thread may go on. */
static void mark_seen(uint32_t t, uint32_t round)
{
	pthread_mutex_lock(&seen_lock);
	if (seen[t] <= round)
		seen[t] = round + 1;
	pthread_cond_broadcast(&seen_cond);
	pthread_mutex_unlock(&seen_lock);
}

static void end_checker(void)
{
	pthread_mutex_lock(&seen_lock);
	checker_done = 1;
	pthread_cond_broadcast(&seen_cond);
	pthread_mutex_unlock(&seen_lock);
}

/* Takes the events until every one came or the time is up. */
static int check_events(uint64_t until, uint32_t *next, uint32_t *bad,
			uint32_t *early)
{
	struct xferk_event ev[256];
	uint32_t nr, i, t, step, wrong, total = 0;
	int ret;

	while (total < 2 * rounds * THREADS) {
		ret = xferk_events(l.x, ev, 256, until, &nr, NULL);
		if (ret)
			return ret;
		for (i = 0; i < nr; i++, total++) {
			t = ev[i].tag >> 32;
			step = (uint32_t)ev[i].tag;
			if (t >= THREADS || step != next[t] ||
			    ev[i].export_handle != exp_h ||
			    ev[i].type != ((step & KIND_NOTE) ? XFERK_EVENT_NOTE :
					   XFERK_EVENT_DATA) ||
			    ev[i].flags ||
			    ev[i].bytes != ((step & KIND_NOTE) ? 0 : SLOT)) {
				if ((*bad)++ < 5)
					fprintf(stderr, "event %u: thread %u step %u (want %u) type %u flags %u bytes %llu\n",
						total, t, step,
						t < THREADS ? next[t] : 0,
						ev[i].type, ev[i].flags,
						(unsigned long long)ev[i].bytes);
				if (t < THREADS && step >= next[t])
					next[t] = step + 1;
				if (t < THREADS && !(step & KIND_NOTE))
					mark_seen(t, step >> 1);
				continue;
			}
			if (!(step & KIND_NOTE)) {
				wrong = wrong_words(t, step >> 1);
				if (wrong && (*early)++ < 5)
					fprintf(stderr, "event %u: thread %u round %u: DATA before its bytes (%u wrong words)\n",
						total, t, step >> 1, wrong);
				mark_seen(t, step >> 1);
			}
			next[t]++;
		}
	}
	return 0;
}

int main(void)
{
	long long deaths = t_stat("path_deaths_qp");
	uint32_t next[THREADS] = { 0 }, bad = 0, early = 0, t;
	pthread_t w[THREADS], f;
	struct xferk_token tok;
	uint64_t until;
	int ret;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	setvbuf(stdout, NULL, _IOLBF, 0);
	rounds = t_debug_kernel() ? 40 : 2000;
	t_loop_open(&l, THREADS * SLOT, THREADS * SLOT);
	memset(l.dst, 0xff, THREADS * SLOT);	/* no thread's words */
	ret = xferk_export(l.x, l.conn, l.dst_mr, 0, THREADS * SLOT,
			   XFERK_ACCESS_REMOTE_WRITE, &tok, &exp_h);
	if (!ret)
		ret = xferk_import(l.x, l.conn, &tok, &rm);
	if (ret) {
		fprintf(stderr, "export: %s\n", strerror(-ret));
		return T_FAIL;
	}
	T_EXPECT(t_quiet() == 0, "other ops are live");
	for (t = 0; t < THREADS; t++) {
		writers[t].t = t;
		T_EXPECT(pthread_create(&w[t], NULL, writer_thread,
					&writers[t]) == 0, "thread");
	}
	T_EXPECT(pthread_create(&f, NULL, fault_thread, NULL) == 0, "thread");
	until = xferk_now_ns() + t_scaled_ms(240000) * 1000000ULL;
	ret = check_events(until, next, &bad, &early);
	end_checker();
	for (t = 0; t < THREADS; t++)
		pthread_join(w[t], NULL);
	writers_done = 1;
	pthread_join(f, NULL);
	for (t = 0; t < THREADS; t++)
		T_EXPECT(writers[t].error == 0,
			 "thread %u, round %u: %s: %s", t, writers[t].done,
			 writers[t].what, strerror(-writers[t].error));
	T_EXPECT(ret == 0, "events: %s", strerror(-ret));
	for (t = 0; t < THREADS; t++)
		T_EXPECT(next[t] == 2 * rounds,
			 "thread %u: %u of %u events", t, next[t], 2 * rounds);
	T_EXPECT(bad == 0, "%u events out of order or wrong", bad);
	T_EXPECT(early == 0, "%u DATA events before their bytes", early);
	T_EXPECT(t_stat("path_deaths_qp") > deaths, "no path died");
	printf("notify_order: %u threads x %u rounds, %lld path deaths\n",
	       THREADS, rounds, t_stat("path_deaths_qp") - deaths);
	xferk_close(l.x);
	return t_result();
}
