/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the integration programs. Each program tests one feature and
 * exits T_PASS, T_FAIL or T_SKIP (liburing's convention); the VM harness
 * records the exit code.
 */
#ifndef XFERK_TEST_H
#define XFERK_TEST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_PASS	0
#define T_FAIL	1
#define T_SKIP	77

static int t_failures;

/* Records a failed expectation and goes on. */
#define T_EXPECT(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			t_failures++;					\
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__,	\
				__LINE__, #cond);			\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
		}							\
	} while (0)

/* Expects a negative-errno result to be exactly -err. */
#define T_EXPECT_ERR(ret, err)						\
	T_EXPECT((ret) == -(err), "got %d (%s), want -%s", (int)(ret),	\
		 strerror((int)-(ret)), #err)

static inline int t_result(void)
{
	return t_failures ? T_FAIL : T_PASS;
}

#endif /* XFERK_TEST_H */
