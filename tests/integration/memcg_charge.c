// SPDX-License-Identifier: GPL-2.0
/*
 * What a user makes the kernel hold is charged to the user's memory
 * cgroup. A process in a cgroup limited to 16 MiB submits ops that never
 * finish and never releases them: at the cgroup's limit SUBMIT fails with
 * ENOMEM (the OOM killer is not woken: no process dies, inside or
 * outside), the cgroup's slab memory grew with its ops, and closing its
 * files gives everything back.
 *
 * Regression: ops, chunks, regions and handles were allocated without
 * charging anyone, and a file could hold 2^20 ops: such a loop took host
 * memory without bound. (The per-file limits are raised to their maximum
 * here, so the cgroup is what binds.)
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test.h"

#define CG		"/sys/fs/cgroup/xferk-memcg"
#define Q		"/sys/class/misc/xferk/queue/"
#define NFILES		2
#define MAX_OPS		65535

/*
 * Shared with the child, touched by the parent first (so not charged to
 * the cgroup): at its limit, the child must not need new memory to report.
 */
struct report {
	long ops;
	int err;
	long long slab_before;
	int done;
};

static long long cg_number(const char *file, const char *key)
{
	char path[128], line[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), CG "/%s", file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		size_t n = key ? strlen(key) : 0;

		if (!key) {
			v = atoll(line);
			break;
		}
		if (!strncmp(line, key, n) && line[n] == ' ') {
			v = atoll(line + n + 1);
			break;
		}
	}
	fclose(f);
	return v;
}

/* In the cgroup: submit until refused, report, hold until told, close. */
static int child(struct report *rep, int go)
{
	struct report r = { .slab_before = cg_number("memory.stat", "slab") };
	uint64_t conn[NFILES], mr[NFILES], remote[NFILES], op;
	struct xferk *x[NFILES];
	char c;
	int i;

	for (i = 0; i < NFILES; i++) {
		uint8_t *buf = t_map(8192);
		struct xferk_token tok;
		uint64_t exp;

		/* A null peer whose chunks take ten minutes: nothing finishes. */
		if (xferk_open(&x[i]) ||
		    xferk_connect_null(x[i], 600000000000ULL, &conn[i]) ||
		    xferk_mr_reg(x[i], buf, 8192, XFERK_ACCESS_ALL, &mr[i]) ||
		    xferk_export(x[i], conn[i], mr[i], 4096, 4096,
				 XFERK_ACCESS_REMOTE_WRITE, &tok, &exp) ||
		    xferk_import(x[i], conn[i], &tok, &remote[i]))
			return T_FAIL;
	}
	for (r.ops = 0; r.ops < NFILES * MAX_OPS; r.ops++) {
		struct xferk_frag f = { .mr = mr[r.ops % NFILES], .len = 64,
					.remote = remote[r.ops % NFILES],
					.opcode = XFERK_OP_WRITE };

		r.err = xferk_submit(x[r.ops % NFILES], &f, 1,
				     XFERK_DEADLINE_NONE, 0, &op);
		if (r.err)
			break;
	}
	*rep = r;
	__atomic_store_n(&rep->done, 1, __ATOMIC_SEQ_CST);
	if (read(go, &c, 1) != 1)
		return T_FAIL;
	for (i = 0; i < NFILES; i++)
		xferk_close(x[i]);
	return T_PASS;
}

static const char *const qlimits[] = { "max_queued_ops", "file_max_ops" };

int main(void)
{
	long long live = t_stat("ops_live"), pinned = t_stat("pinned_pages");
	long long saved_ops = t_param("max_ops_per_file");
	long long saved_chunks = t_param("max_chunks_per_file");
	long long saved_q[2], slab, current, max;
	int to_child[2], status, i;
	struct report r = { 0 }, *rep;
	char path[128], pid[16];
	pid_t p, canary;

	if (!t_file_has("/sys/fs/cgroup/cgroup.controllers", "memory")) {
		fprintf(stderr, "no memory cgroup controller\n");
		return T_SKIP;
	}
	if (t_write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory") ||
	    (mkdir(CG, 0755) && errno != EEXIST) ||
	    t_write_file(CG "/memory.max", "16M")) {
		perror("cgroup setup");
		return T_FAIL;
	}
	T_EXPECT(saved_ops > 0 && saved_chunks > 0, "parameters");
	t_set_param("max_ops_per_file", MAX_OPS);
	t_set_param("max_chunks_per_file", 1 << 24);
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), Q "%s", qlimits[i]);
		saved_q[i] = t_queue_stat(qlimits[i]);
		t_write_file(path, "1048576");
	}

	canary = fork();
	if (canary == 0) {
		pause();
		_exit(0);
	}
	rep = mmap(NULL, sizeof(*rep), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rep == MAP_FAILED || pipe(to_child))
		return T_FAIL;
	memset(rep, 0, sizeof(*rep));
	p = fork();
	if (p == 0) {
		close(to_child[1]);
		snprintf(pid, sizeof(pid), "%d", getpid());
		if (t_write_file(CG "/cgroup.procs", pid))
			_exit(T_FAIL);
		_exit(child(rep, to_child[0]));
	}
	close(to_child[0]);
	/* The child's loop ends at the cgroup's limit, or it died. */
	for (i = 0; i < 6000 && !__atomic_load_n(&rep->done, __ATOMIC_SEQ_CST) &&
	     !waitpid(p, &status, WNOHANG); i++)
		usleep(100000);
	if (__atomic_load_n(&rep->done, __ATOMIC_SEQ_CST))
		r = *rep;
	if (r.done) {
		slab = cg_number("memory.stat", "slab");
		current = cg_number("memory.current", NULL);
		max = cg_number("memory.max", NULL);
		fprintf(stderr, "ops %ld, then %s; slab %lld -> %lld, current %lld of %lld\n",
			r.ops, strerror(-r.err), r.slab_before, slab, current, max);
		T_EXPECT(r.err == -ENOMEM, "submit #%ld: %s, want ENOMEM", r.ops,
			 strerror(-r.err));
		T_EXPECT(r.ops >= 1000 && r.ops < NFILES * MAX_OPS,
			 "%ld ops before the cgroup's limit", r.ops);
		/* At least a few hundred bytes of slab per op, charged here. */
		T_EXPECT(slab - r.slab_before >= r.ops * 256,
			 "slab grew %lld bytes for %ld ops", slab - r.slab_before,
			 r.ops);
		T_EXPECT(current <= max, "memory.current %lld > memory.max %lld",
			 current, max);
	} else {
		T_EXPECT(0, "no report from the child");
	}
	if (r.done) {
		T_EXPECT(write(to_child[1], "x", 1) == 1, "release the child");
		waitpid(p, &status, 0);
	}
	T_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == T_PASS,
		 "child: status %#x", status);
	T_EXPECT(cg_number("memory.events", "oom_kill") == 0, "OOM kills in the cgroup");
	T_EXPECT(kill(canary, 0) == 0, "the process outside the cgroup died");
	kill(canary, SIGKILL);
	waitpid(canary, NULL, 0);

	/* Closing gave everything back (orphaned ops drain in the background). */
	for (i = 0; i < 600 && t_stat("ops_live") != live; i++)
		usleep(100000);
	T_EXPECT(t_stat("ops_live") == live, "ops_live %lld, was %lld",
		 t_stat("ops_live"), live);
	T_EXPECT(t_stat("pinned_pages") == pinned, "pinned_pages %lld, was %lld",
		 t_stat("pinned_pages"), pinned);

	t_set_param("max_ops_per_file", saved_ops);
	t_set_param("max_chunks_per_file", saved_chunks);
	for (i = 0; i < 2; i++) {
		char v[32];

		snprintf(path, sizeof(path), Q "%s", qlimits[i]);
		snprintf(v, sizeof(v), "%lld", saved_q[i]);
		t_write_file(path, v);
	}
	for (i = 0; i < 100 && rmdir(CG); i++)
		usleep(100000);
	return t_result();
}
