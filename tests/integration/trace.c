// SPDX-License-Identifier: GPL-2.0
/*
 * Tracepoints (tracefs events/xferk/): with them enabled, one WRITE op
 * over soft-RoCE leaves exactly these events naming its handle, in this
 * order: xferk_op_submit, xferk_chunk_dispatch, xferk_chunk_post,
 * xferk_chunk_done (error 0), xferk_op_physical (SUCCEEDED),
 * xferk_op_release; a CANCEL of it once physical adds xferk_op_cancel
 * before the release. A connection taken down (fault fail_qp, on a null
 * peer) leaves an xferk_conn_state event to DOWN with the reason, EIO
 * (regression: it reported the connection's previous error, 0). Skips
 * (77) without tracefs.
 */
#include <sys/mount.h>
#include <unistd.h>

#include "test.h"

static const char *tracefs;

static int trace_write(const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", tracefs, file);
	return t_write_file(path, val);
}

/* The xferk events of op @op in the trace buffer, names joined by ' '. */
static void events_of(uint64_t op, char *out, size_t len)
{
	char path[256], line[1024], needle[40];
	FILE *f;

	snprintf(path, sizeof(path), "%s/trace", tracefs);
	snprintf(needle, sizeof(needle), "op=%#llx ", (unsigned long long)op);
	out[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *ev = strstr(line, " xferk_");
		char *end = ev ? strchr(ev + 1, ':') : NULL;

		if (!end || !strstr(line, needle))
			continue;
		snprintf(out + strlen(out), len - strlen(out), "%s%.*s",
			 out[0] ? " " : "", (int)(end - ev - 1), ev + 1);
		if (strstr(ev, "xferk_chunk_done") && !strstr(ev, "error=0"))
			snprintf(out + strlen(out), len - strlen(out), "(error)");
	}
	fclose(f);
}

/*
 * The errors of the xferk_conn_state events to DOWN in the trace buffer,
 * joined by ' ' (other connections may go down meanwhile, each with its
 * own reason).
 */
static void down_errors(char *out, size_t len)
{
	char path[256], line[1024], to[32];
	FILE *f;
	int e;

	snprintf(path, sizeof(path), "%s/trace", tracefs);
	snprintf(to, sizeof(to), "->%d error=", XFERK_CONN_STATE_DOWN);
	out[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, to);

		if (strstr(line, " xferk_conn_state:") && p &&
		    sscanf(p + strlen(to), "%d", &e) == 1)
			snprintf(out + strlen(out), len - strlen(out), " %d ", e);
	}
	fclose(f);
}

int main(void)
{
	static const char *const roots[] = { "/sys/kernel/tracing",
					     "/sys/kernel/debug/tracing" };
	struct xferk_op_snapshot s;
	struct xferk_frag f;
	struct t_loop l;
	char got[1024], path[256];
	uint64_t op, conn, exp, remote = 0;
	struct xferk_token tok;
	unsigned int i;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	mount("nodev", roots[0], "tracefs", 0, NULL);
	for (i = 0; i < 2 && !tracefs; i++) {
		snprintf(path, sizeof(path), "%s/events/xferk/enable", roots[i]);
		if (!access(path, W_OK))
			tracefs = roots[i];
	}
	if (!tracefs) {
		fprintf(stderr, "no tracefs with events/xferk\n");
		return T_SKIP;
	}
	t_loop_open(&l, 1 << 16, 1 << 16);
	/* One clock for every CPU's buffer: the events merge in order. */
	T_EXPECT(trace_write("trace_clock", "global") == 0 &&
		 trace_write("trace", "") == 0 &&
		 trace_write("events/xferk/enable", "1") == 0, "enable");

	f = (struct xferk_frag) { .mr = l.src_mr, .len = 4096,
				  .remote = l.remote, .opcode = XFERK_OP_WRITE };
	T_EXPECT(xferk_submit(l.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0 &&
		 xferk_wait(l.x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL,
			    &s) == 0 && s.state == XFERK_STATE_SUCCEEDED, "op");
	xferk_release(l.x, op);
	events_of(op, got, sizeof(got));
	T_EXPECT(!strcmp(got, "xferk_op_submit xferk_chunk_dispatch xferk_chunk_post "
			 "xferk_chunk_done xferk_op_physical xferk_op_release"),
		 "events of one op: %s", got);

	/* A cancel of an op that is physical already: noted, then released. */
	T_EXPECT(xferk_submit(l.x, &f, 1, XFERK_DEADLINE_NONE, 0, &op) == 0 &&
		 xferk_wait(l.x, op, XFERK_DEADLINE_NONE, XFERK_WAIT_PHYSICAL,
			    &s) == 0, "op");
	T_EXPECT(xferk_cancel_drain(l.x, op, xferk_now_ns() + 1000000000ULL,
				    &s) == 0, "cancel");
	xferk_release(l.x, op);
	events_of(op, got, sizeof(got));
	T_EXPECT(!strcmp(got, "xferk_op_submit xferk_chunk_dispatch xferk_chunk_post "
			 "xferk_chunk_done xferk_op_physical xferk_op_cancel "
			 "xferk_op_release"), "events of a cancelled op: %s", got);
	/* A connection that goes down says why. */
	T_EXPECT(xferk_connect_null(l.x, 0, &conn) == 0 &&
		 xferk_export(l.x, conn, l.dst_mr, 0, 4096,
			      XFERK_ACCESS_REMOTE_WRITE, &tok, &exp) == 0 &&
		 xferk_import(l.x, conn, &tok, &remote) == 0, "null peer");
	f.remote = remote;
	T_EXPECT(t_fault_set("fail_qp", 1) == 0, "fail_qp");
	T_EXPECT(t_run(l.x, &f, 1, &s) == XFERK_STATE_FAILED, "op on a failed connection");
	t_fault_clear();
	down_errors(got, sizeof(got));
	snprintf(path, sizeof(path), " %d ", -EIO);
	T_EXPECT(strstr(got, path), "xferk_conn_state to DOWN: errors%s", got);
	trace_write("events/xferk/enable", "0");
	printf("# perf: perf record -e 'xferk:*' -a; bpftrace: tracepoint:xferk:xferk_op_physical { @[args->state] = count(); }\n");
	return t_result();
}
