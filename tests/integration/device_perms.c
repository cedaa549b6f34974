// SPDX-License-Identifier: GPL-2.0
/*
 * Who may use /dev/xferk: it is a character device, mode 0660, group
 * "xferk" (the udev rule's; the harness sets it up the same way). An
 * unprivileged process outside the group cannot open it (EACCES); one in
 * the group can, and XFERK_IOC_INFO answers it with the ABI version.
 */
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* In a child: drop privileges, then open and ask INFO. */
static int as_user(int group_access)
{
	struct xferk *x = NULL;
	int ret;

	t_become_user(group_access);
	ret = xferk_open(&x);
	if (!group_access) {
		T_EXPECT_ERR(ret, EACCES);
		if (!ret)
			xferk_close(x);
		return t_result();
	}
	T_EXPECT(ret == 0, "open in group xferk: %s", strerror(-ret));
	if (ret)
		return t_result();
	T_EXPECT(xferk_abi_version(x) == XFERK_ABI_VERSION, "abi_version %u",
		 xferk_abi_version(x));
	T_EXPECT(xferk_features(x) & XFERK_FEAT_INFO, "features %#llx",
		 (unsigned long long)xferk_features(x));
	xferk_close(x);
	return t_result();
}

static void run_as_user(int group_access)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0)
		_exit(as_user(group_access));
	T_EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid &&
		 WIFEXITED(status) && WEXITSTATUS(status) == T_PASS,
		 "user %s the group: status %#x", group_access ? "in" : "outside",
		 status);
}

int main(void)
{
	struct group *g = getgrnam("xferk");
	struct stat st;

	if (geteuid() != 0) {
		fprintf(stderr, "needs root\n");
		return T_SKIP;
	}
	if (stat(XFERK_DEVICE_PATH, &st)) {
		perror(XFERK_DEVICE_PATH);
		return T_SKIP;
	}
	T_EXPECT(S_ISCHR(st.st_mode), "not a character device: %#o",
		 (unsigned int)st.st_mode);
	T_EXPECT((st.st_mode & 07777) == 0660, "mode %04o, want 0660",
		 (unsigned int)(st.st_mode & 07777));
	T_EXPECT(st.st_uid == 0, "owner %u", (unsigned int)st.st_uid);
	T_EXPECT(g && st.st_gid == g->gr_gid, "group %u, want xferk (%d)",
		 (unsigned int)st.st_gid, g ? (int)g->gr_gid : -1);

	run_as_user(0);
	run_as_user(1);
	return t_result();
}
