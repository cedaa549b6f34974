/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the harness tells a test program of the kernel it runs on; shared
 * by the tests (test.h) and the helpers that scripts run.
 */
#ifndef XFERK_TEST_ENV_H
#define XFERK_TEST_ENV_H

#include <stdlib.h>
#include <string.h>

/* Running on the debug kernel (slow RDMA): the harness says so. */
static inline int t_debug_kernel(void)
{
	const char *k = getenv("XFERK_KERNEL");

	return k && !strcmp(k, "debug");
}

/* A CONNECT timeout (ms) for rxe: the debug kernel's handshake is slow. */
static inline unsigned int t_connect_ms(void)
{
	return t_debug_kernel() ? 60000 : 10000;
}

#endif
