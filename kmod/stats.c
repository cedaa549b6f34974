// SPDX-License-Identifier: GPL-2.0
/*
 * Module-wide counters (struct xferk_stats), presented by sysfs.c, and
 * xferk_charge(), which counts what it refuses.
 */
#include <linux/export.h>
#include <kunit/visibility.h>

#include "stats.h"

struct xferk_stats xferk_stats;
EXPORT_SYMBOL_IF_KUNIT(xferk_stats);

/**
 * xferk_charge() - take @n from a file's budget, all or nothing
 * @used: what the file holds of it
 * @n: how much more
 * @limit: the budget
 * @error: what to return when it does not fit
 *
 * Return: 0, or @error (counted in stats/limit_rejects).
 */
int xferk_charge(atomic_long_t *used, unsigned long n, unsigned long limit,
		 int error)
{
	if (atomic_long_add_return(n, used) <= limit)
		return 0;
	atomic_long_sub(n, used);
	atomic64_inc(&xferk_stats.limit_rejects);
	return error;
}
