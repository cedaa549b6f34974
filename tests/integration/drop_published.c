// SPDX-License-Identifier: GPL-2.0
/*
 * A handle another thread drops the moment the command that made it lets
 * go of the file's lock (fault knob drop_published, armed for one command
 * at a time): MR_REG, CONNECT, EXPORT, WINDOW_OPEN and GROUP_CREATE each
 * still return 0 and the handle, which is gone (dropping it again is
 * ESTALE), and what it held comes back (regions, pinned pages, exports);
 * the knob is used each time, and the file's first session still carries
 * a WRITE afterwards. On the debug kernel KASAN fails the run if a command
 * touches its object after letting go of the lock.
 *
 * Regression: MR_REG, CONNECT, EXPORT, WINDOW_OPEN and GROUP_CREATE read
 * their new object (and claimed its session) after dropping the file's
 * lock: a use-after-free when another thread of the process dropped the
 * handle, which it can predict, in between.
 */
#include <unistd.h>

#include "test.h"

#define KNOB	"drop_published"
#define LEN	(64 * 1024)
#define RW	(XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE)

static void arm(void)
{
	T_EXPECT(t_fault_set(KNOB, 1) == 0, "arm %s: %s", KNOB, strerror(errno));
}

/* The command returned 0, its handle was dropped, and @drop finds it gone. */
static void dropped(const char *what, int ret, int drop)
{
	T_EXPECT(ret == 0, "%s: %s", what, strerror(-ret));
	T_EXPECT(t_fault_get(KNOB) == 0, "%s: the knob was not used", what);
	T_EXPECT(drop == -ESTALE, "%s: its drop gave %d, want -ESTALE", what,
		 drop);
}

static void counter_back(const char *name, long long want)
{
	T_EXPECT(t_stat_wait(name, want, t_scaled_ms(10000)) == want,
		 "%s %lld, was %lld", name, t_stat(name), want);
}

int main(void)
{
	struct xferk_block block = { .offset = 0, .len = 4096 };
	long long regions, pinned, exports;
	struct xferk_op_snapshot s;
	struct xferk_token tok;
	struct xferk_frag f;
	uint64_t h, gen;
	struct t_loop l;
	uint8_t *buf;
	int ret;

	if (access(XFERK_DEVICE_PATH, F_OK))
		return T_SKIP;
	atexit(t_fault_clear);
	t_loop_open(&l, LEN, LEN);
	buf = t_map(LEN);

	regions = t_stat("regions");
	pinned = t_stat("pinned_pages");
	arm();
	ret = xferk_mr_reg(l.x, buf, LEN, XFERK_ACCESS_LOCAL_SRC, &h);
	dropped("MR_REG", ret, ret ? 0 : xferk_mr_dereg(l.x, h));
	counter_back("regions", regions);
	counter_back("pinned_pages", pinned);

	arm();
	ret = xferk_connect(l.x, t_peer(), 0, t_connect_ms(), &h);
	dropped("CONNECT", ret, ret ? 0 : xferk_disconnect(l.x, h));

	exports = t_stat("exports");
	arm();
	ret = xferk_export(l.x, l.conn, l.dst_mr, 0, 4096,
			   XFERK_ACCESS_REMOTE_WRITE, &tok, &h);
	dropped("EXPORT", ret, ret ? 0 : xferk_unexport(l.x, h));
	counter_back("exports", exports);

	arm();
	ret = xferk_window_open(l.x, l.conn, l.dst_mr, &block, 1, RW, &tok, &h,
				NULL);
	dropped("WINDOW_OPEN", ret, ret ? 0 : xferk_unexport(l.x, h));
	counter_back("exports", exports);

	arm();
	ret = xferk_group_create(l.x, 7, &h, &gen);
	dropped("GROUP_CREATE", ret, ret ? 0 : xferk_group_release(l.x, h));

	/* The file goes on: a WRITE over its first session. */
	t_fill(l.src, 4096, 3);
	memset(l.dst, 0, 4096);
	f = (struct xferk_frag) { .mr = l.src_mr, .len = 4096,
				  .remote = l.remote, .opcode = XFERK_OP_WRITE };
	ret = t_run(l.x, &f, 1, &s);
	T_EXPECT(ret == XFERK_STATE_SUCCEEDED && t_check(l.dst, 4096, 3) < 0,
		 "WRITE afterwards: %d (%s)", ret,
		 ret < 0 ? strerror(-ret) : xferk_state_name(ret));
	xferk_close(l.x);
	t_fault_clear();
	return t_result();
}
