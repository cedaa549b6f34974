// SPDX-License-Identifier: GPL-2.0
/* Module-wide counters (struct xferk_stats), presented by sysfs.c. */
#include "xferk.h"

struct xferk_stats xferk_stats;
