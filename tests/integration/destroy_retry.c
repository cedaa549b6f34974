// SPDX-License-Identifier: GPL-2.0
/*
 * A device that refuses to destroy a QP or deregister an MR still owns
 * it, and may still access what it references: nothing of that may be
 * released until the device lets it go (fault/fail_destroy refuses the
 * next N destructions, which are retried).
 *
 * 1. An MR: an export closed while its MR's deregistration is refused
 *    three times: it is retried (stats/destroy_retries +3) and, once the
 *    region is gone too, the device holds no more MRs than before the
 *    export (`rdma res show`); before the fix the refused MR was left on
 *    the device and its pages released under it.
 * 2. A QP: an op whose completion was swallowed is QUARANTINED by its
 *    cancel; the path's teardown then destroys the QP, refused four times
 *    (shared with the accepting end's QP, whichever asks first). Each time
 *    the op is queried while its QP still exists on the device (`rdma res
 *    show qp`, after the query), the op must still be QUARANTINED with its
 *    pages pinned; it becomes DRAINED once the QP is gone. Afterwards the
 *    device holds no more QPs than before the session.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#define MS		1000000ULL
#define DRAIN_MS	200

static void restore(void)
{
	t_fault_clear();
	t_restore_params();
}

/*
 * The count of @what (qp, mr) that `rdma res show` reports for rxe0, or
 * -1 if it says none.
 */
static long long res_count(const char *what)
{
	char line[512], key[32];
	long long n = -1;
	FILE *p = popen("rdma res show 2>/dev/null", "r");
	char *s;

	if (!p)
		return -1;
	snprintf(key, sizeof(key), " %s ", what);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, " rxe0: ") && (s = strstr(line, key)))
			n = strtoll(s + strlen(key), NULL, 10);
	pclose(p);
	return n;
}

/*
 * Waits (at most 20 s, scaled) until rxe0's count of @what reads the same
 * twice 200 ms apart and, unless @want is negative, reads @want; returns
 * the last count read.
 */
static long long res_wait(const char *what, long long want)
{
	uint64_t until = t_now_ms() + t_scaled_ms(20000);
	long long n = res_count(what), prev;

	do {
		prev = n;
		usleep(200000);
		n = res_count(what);
	} while ((n != prev || (want >= 0 && n != want)) &&
		 t_now_ms() < until);
	return n;
}

/* Does rxe0 still have a QP numbered @qpn? 1, 0, or -1 if unknown. */
static int qp_exists(unsigned int qpn)
{
	char line[512], key[32];
	FILE *p = popen("rdma res show qp 2>/dev/null", "r");
	int found = 0;

	if (!p)
		return -1;
	snprintf(key, sizeof(key), " lqpn %u ", qpn);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "rxe0/") && strstr(line, key))
			found = 1;
	pclose(p);
	return found;
}

/*
 * The QP number of the session end with a work request outstanding: the
 * op's (on loopback CONNECT may return either end of the session).
 */
static unsigned int posting_qpn(void)
{
	char line[512], transport[16];
	unsigned int qpn, outstanding, found = 0;
	FILE *f = fopen("/sys/kernel/debug/xferk/peers", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*u %15s %*s %*s %*s %u %u", transport, &qpn,
			   &outstanding) == 3 &&
		    !strcmp(transport, "rdma") && outstanding)
			found = qpn;
	fclose(f);
	return found;
}

static void mr_refused(void)
{
	long long mrs, retries = t_stat("destroy_retries");
	struct xferk_token tok;
	uint64_t conn, mr, exp;
	struct xferk *x;
	void *buf = t_map(1 << 20);

	/* No session of an earlier test goes down meanwhile (its QP). */
	T_EXPECT(t_end_session() == 0, "ending the sessions to %s", t_peer());
	T_EXPECT(xferk_open(&x) == 0, "open");
	T_EXPECT(xferk_connect(x, t_peer(), 0, t_connect_ms(), &conn) == 0,
		 "connect");
	mrs = res_wait("mr", -1);
	T_EXPECT(xferk_mr_reg(x, buf, 1 << 20, XFERK_ACCESS_REMOTE_WRITE,
			      &mr) == 0, "mr_reg");
	T_EXPECT(xferk_export(x, conn, mr, 0, 1 << 20,
			      XFERK_ACCESS_REMOTE_WRITE, &tok, &exp) == 0,
		 "export");
	T_EXPECT(res_count("mr") == mrs + 1, "the export's MR: %lld MRs, %lld before",
		 res_count("mr"), mrs);
	T_EXPECT(t_fault_set("fail_destroy", 3) == 0, "fault");
	T_EXPECT(xferk_unexport(x, exp) == 0, "closing the export");
	T_EXPECT(t_fault_taken("fail_destroy", t_scaled_ms(20000)) == 0 &&
		 t_stat("destroy_retries") == retries + 3,
		 "refusals left %lld, destroy_retries +%lld",
		 t_fault_get("fail_destroy"),
		 t_stat("destroy_retries") - retries);
	T_EXPECT(xferk_mr_dereg(x, mr) == 0, "dereg");
	T_EXPECT(res_wait("mr", mrs) == mrs, "MRs left on the device: %lld, %lld before",
		 res_count("mr"), mrs);
	xferk_close(x);
}

static void qp_refused(void)
{
	struct xferk_op_snapshot s = { .state = XFERK_STATE_COUNT };
	long long qps, pinned, retries;
	unsigned int qpn, seen = 0;
	uint64_t until, op;
	struct t_loop l;
	int exists, ret;

	T_EXPECT(t_end_session() == 0, "ending the sessions to %s", t_peer());
	qps = res_wait("qp", -1);
	retries = t_stat("destroy_retries");
	T_EXPECT(t_swallowed_write(&l, &op) == 0, "a swallowed write");
	/*
	 * The cancel kills the path at DRAIN_MS / 2 at the earliest, and the
	 * QP goes flush_timeout_ms after that (later if refused): 2.5 s (4.5 s
	 * on the debug kernel) after the drain deadline at the earliest, so
	 * the op is QUARANTINED at that deadline. t_swallowed_write() scoped
	 * the parameter: t_restore_params() puts its old value back.
	 */
	T_EXPECT(t_set_param("flush_timeout_ms", DRAIN_MS / 2 +
			     (t_debug_kernel() ? 4500 : 2500)) == 0,
		 "flush_timeout_ms");
	qpn = posting_qpn();
	T_EXPECT(qpn && qp_exists(qpn) == 1, "the op's QP %u", qpn);
	/*
	 * Armed before the cancel kills the path: nothing destroys a QP or
	 * MR before that, and the teardown's destruction comes
	 * flush_timeout_ms later however long this process is held up.
	 */
	T_EXPECT(t_fault_set("fail_destroy", 4) == 0, "fault");
	pinned = t_stat("pinned_pages");
	ret = xferk_cancel_drain(l.x, op, xferk_now_ns() + DRAIN_MS * MS, &s);
	T_EXPECT_ERR(ret, ETIMEDOUT);
	T_EXPECT(s.state == XFERK_STATE_QUARANTINED, "state %s",
		 xferk_state_name(s.state));

	/* The teardown destroys the QP after flush_timeout_ms, retrying. */
	until = t_now_ms() + t_scaled_ms(30000);
	do {
		ret = xferk_query(l.x, op, &s);
		exists = qp_exists(qpn);
		if (ret || exists < 0)
			break;
		if (exists) {
			seen++;
			T_EXPECT(s.state == XFERK_STATE_QUARANTINED &&
				 !s.buffer_reusable &&
				 t_stat("pinned_pages") == pinned,
				 "QP %u still on the device, op %s, pinned_pages %lld (%lld)",
				 qpn, xferk_state_name(s.state),
				 t_stat("pinned_pages"), pinned);
		}
	} while (exists && t_failures == 0 && t_now_ms() < until &&
		 !usleep(20000));
	T_EXPECT(ret == 0 && exists == 0, "QP %u not destroyed: %d %d", qpn,
		 ret, exists);
	/* Only a test held up for seconds sees none: then say so. */
	if (!seen)
		fprintf(stderr, "note: the QP was gone at the first look\n");
	ret = xferk_wait(l.x, op, xferk_now_ns() + 30000 * MS,
			 XFERK_WAIT_PHYSICAL, &s);
	T_EXPECT(ret == 0 && s.state == XFERK_STATE_DRAINED && s.buffer_reusable,
		 "after QP destroy: %d %s", ret, xferk_state_name(s.state));
	T_EXPECT(t_fault_taken("fail_destroy", t_scaled_ms(30000)) == 0 &&
		 t_stat("destroy_retries") == retries + 4,
		 "refusals left %lld, destroy_retries +%lld",
		 t_fault_get("fail_destroy"),
		 t_stat("destroy_retries") - retries);
	xferk_release(l.x, op);
	xferk_close(l.x);
	T_EXPECT(t_end_session() == 0, "ending the session");
	T_EXPECT(res_wait("qp", qps) == qps, "QPs left on the device: %lld, %lld before",
		 res_count("qp"), qps);
}

int main(void)
{
	struct t_counters base;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	if (res_count("qp") < 0) {
		fprintf(stderr, "skip: `rdma res show` lists no rxe0\n");
		return T_SKIP;
	}
	atexit(restore);
	t_settle(&base);
	T_EXPECT(t_quiet() == 0, "other ops are live");
	mr_refused();
	if (!t_failures)
		qp_refused();
	T_EXPECT(t_drained(&base), "ops and pages left");
	restore();
	return t_result();
}
