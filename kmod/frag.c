// SPDX-License-Identifier: GPL-2.0
/* Fragment bounds and splitting (see frag.h). */
#include <linux/errno.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <kunit/visibility.h>

#include "frag.h"

/**
 * xferk_range_check() - does [offset, offset + len) lie within [0, size)?
 * @offset: start of the range
 * @len: its length
 * @size: size of the object the range is in
 *
 * Return: 0, -EINVAL for an empty range, -ERANGE when it does not fit
 * (without overflowing on any input).
 */
int xferk_range_check(u64 offset, u64 len, u64 size)
{
	if (!len)
		return -EINVAL;
	if (offset > size || len > size - offset)
		return -ERANGE;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_range_check);

/**
 * xferk_chunk_len() - length of the next chunk of a fragment
 * @local_addr: the chunk's start in the local region's address space
 * @remaining: bytes of the fragment from @local_addr on
 * @max_pages: most pages one work request may cover (its SGE limit); a
 *	device that reports 0 is taken as 1
 * @max_bytes: most bytes one work request may carry; 0 is taken as 1
 *
 * Return: the chunk length, > 0 if @remaining is.
 */
u64 xferk_chunk_len(u64 local_addr, u64 remaining, u32 max_pages,
		    u64 max_bytes)
{
	u64 page_room = (u64)max_t(u32, max_pages, 1) * PAGE_SIZE -
			offset_in_page(local_addr);

	return min3(remaining, page_room, max_t(u64, max_bytes, 1));
}
EXPORT_SYMBOL_IF_KUNIT(xferk_chunk_len);

/**
 * xferk_chunk_count() - how many chunks xferk_chunk_len() cuts a fragment into
 * @local_addr: the fragment's start in the local region's address space
 * @len: its length
 * @max_pages: as for xferk_chunk_len()
 * @max_bytes: as for xferk_chunk_len()
 * @limit: stop counting past this many
 *
 * Runs at most @limit + 1 steps whatever the input, so a caller that
 * bounds an op's chunks bounds its own work too.
 *
 * Return: the number of chunks, or @limit + 1 if there are more than @limit.
 */
u64 xferk_chunk_count(u64 local_addr, u64 len, u32 max_pages, u64 max_bytes,
		      u64 limit)
{
	u64 n = 0;

	while (len && n <= limit) {
		u64 c = xferk_chunk_len(local_addr, len, max_pages, max_bytes);

		local_addr += c;
		len -= c;
		n++;
	}
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_chunk_count);
