/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How a request's blocks of a remote region become windows
 * (fence=request, Documentation/nixl.md "Per-request windows"): a pure
 * function of the blocks' addresses, the region and the target's page
 * size, so that a host test runs it; nothing here depends on NIXL or on
 * the device.
 */
#ifndef XFERK_WINDOWS_H
#define XFERK_WINDOWS_H

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "xferk.h"

/* Pages one window maps at most: most devices map at least this many in
 * one fast registration (soft-RoCE maps 512). */
constexpr uint64_t kWindowPages = 256;

/* One window: its blocks (offsets in the region) and their pages and
 * bytes. */
struct XferkWindowPlan {
    std::vector<xferk_block> blocks;
    uint64_t pages = 0, len = 0;
};

/* A part of the region in a window: [start, end) is at @offset of the
 * window @win (an index into the plan). */
struct XferkWindowPiece {
    uintptr_t start, end;
    size_t win;
    uint64_t offset;
};

/*
 * Appends to @plan the windows over @spans (address, length; each within
 * the region [@base, @base + @len), none empty) for a target of @page
 * bytes a page, and to @pieces where each part of the region they cover
 * lies in them, by address. The spans are rounded out to pages, but not
 * past the region's ends, and merged where they meet; so the first block
 * of the region's first window may start and the last block of its last
 * window may end mid-page, and every other edge is page-aligned, as
 * xferk_window_open() needs. A window gets at most kWindowPages pages: a
 * longer stretch is cut.
 */
void
xferk_plan_windows(uintptr_t base, size_t len, uintptr_t page,
                   std::vector<std::pair<uintptr_t, size_t>> spans,
                   std::vector<XferkWindowPlan> &plan, std::vector<XferkWindowPiece> &pieces);

/* The piece of @pieces (by address) that holds @addr, which one does. */
const XferkWindowPiece &
xferk_piece_of(const std::vector<XferkWindowPiece> &pieces, uintptr_t addr);

#endif
