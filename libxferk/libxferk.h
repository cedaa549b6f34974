/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libxferk: the C library for /dev/xferk.
 *
 * Every function that can fail returns 0 (or a non-negative value) on
 * success and a negative errno on failure; errno itself is left alone.
 * A struct xferk is not thread-safe unless a function says so.
 * See Documentation/libxferk.md for each function's RETURN VALUE and ERRORS.
 */
#ifndef LIBXFERK_H
#define LIBXFERK_H

#include <stdint.h>
#include "xferk.h"

#ifdef __cplusplus
extern "C" {
#endif

struct xferk;

int xferk_open(struct xferk **xp);
void xferk_close(struct xferk *x);
int xferk_fd(const struct xferk *x);
uint32_t xferk_abi_version(const struct xferk *x);
uint64_t xferk_features(const struct xferk *x);

#ifdef __cplusplus
}
#endif

#endif /* LIBXFERK_H */
