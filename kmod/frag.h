/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fragment arithmetic: bounds checks and the split of a fragment into
 * chunks of one work request each. Verbs-free, so KUnit tests it directly.
 */
#ifndef XFERK_FRAG_H
#define XFERK_FRAG_H

#include <linux/types.h>

int xferk_range_check(u64 offset, u64 len, u64 size);
u64 xferk_chunk_len(u64 local_addr, u64 remaining, u32 max_pages,
		    u64 max_bytes);
u64 xferk_chunk_count(u64 local_addr, u64 len, u32 max_pages, u64 max_bytes,
		      u64 limit);

#endif /* XFERK_FRAG_H */
