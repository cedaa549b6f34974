/* SPDX-License-Identifier: GPL-2.0 */
/*
 * EXPECT() for the C++ host tests: prints where a check failed and counts
 * it in failures; the test exits 1 if any did.
 */
#ifndef XFERK_UNIT_EXPECT_H
#define XFERK_UNIT_EXPECT_H

#include <cstdio>

static int failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                  \
            std::fprintf(stderr, __VA_ARGS__);                                                     \
            std::fprintf(stderr, "\n");                                                            \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#endif
