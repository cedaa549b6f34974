// SPDX-License-Identifier: GPL-2.0
/* Module-wide counters (struct xferk_stats), presented by sysfs.c. */
#include <linux/export.h>
#include <kunit/visibility.h>

#include "stats.h"

struct xferk_stats xferk_stats;
EXPORT_SYMBOL_IF_KUNIT(xferk_stats);
