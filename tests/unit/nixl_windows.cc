// SPDX-License-Identifier: GPL-2.0
// The NIXL backend's windows over a request's blocks (fence=request,
// libxferk/nixl/plugin/xferk_windows.h), on regions that start and end
// mid-page and on random blocks: every window is one the kernel opens
// (edges between blocks page-aligned, at most kWindowPages pages, within
// the region), every byte of every block lies in exactly one window at the
// offset the pieces say, and no page is windowed that no block touches.
// Exit 0 pass, 1 fail.
#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "expect.h"
#include "xferk_windows.h"

static uint64_t
pages_of(uintptr_t start, uintptr_t end, uintptr_t page) {
    return ((end + page - 1) / page) - start / page;
}

// Plans @spans of the region [@base, @base + @len) in pages of @page
// bytes and checks everything the header promises. The number of windows.
static size_t
check(const char *name, uintptr_t base, size_t len,
      const std::vector<std::pair<uintptr_t, size_t>> &spans, uintptr_t page = 4096) {
    std::vector<XferkWindowPlan> plan;
    std::vector<XferkWindowPiece> pieces;
    std::set<uintptr_t> touched; /* pages a span touches */

    xferk_plan_windows(base, len, page, spans, plan, pieces);
    for (const auto &sp : spans)
        for (uintptr_t p = sp.first / page; p <= (sp.first + sp.second - 1) / page; p++)
            touched.insert(p);
    for (size_t w = 0; w < plan.size(); w++) {
        const XferkWindowPlan &win = plan[w];
        uint64_t pages = 0, bytes = 0;
        EXPECT(!win.blocks.empty(), "%s: window %zu is empty", name, w);
        for (size_t b = 0; b < win.blocks.size(); b++) {
            uintptr_t s = base + win.blocks[b].offset, e = s + win.blocks[b].len;
            EXPECT(win.blocks[b].len && win.blocks[b].offset + win.blocks[b].len <= len,
                   "%s: window %zu block %zu [%llu, +%llu) is not within the region", name, w,
                   b, (unsigned long long)win.blocks[b].offset,
                   (unsigned long long)win.blocks[b].len);
            EXPECT(b == 0 || s % page == 0, "%s: window %zu block %zu starts mid-page", name, w,
                   b);
            EXPECT(b + 1 == win.blocks.size() || e % page == 0,
                   "%s: window %zu block %zu ends mid-page", name, w, b);
            for (uintptr_t p = s / page; p < (e + page - 1) / page; p++)
                EXPECT(touched.count(p), "%s: window %zu maps page %#lx that no block touches",
                       name, w, (unsigned long)p);
            pages += pages_of(s, e, page);
            bytes += e - s;
        }
        EXPECT(pages == win.pages && pages <= kWindowPages,
               "%s: window %zu has %llu pages, says %llu", name, w, (unsigned long long)pages,
               (unsigned long long)win.pages);
        EXPECT(bytes == win.len, "%s: window %zu length", name, w);
        // A window's first block starts mid-page only at the region's start,
        // its last ends mid-page only at the region's end.
        uintptr_t s0 = base + win.blocks.front().offset;
        uintptr_t e1 = base + win.blocks.back().offset + win.blocks.back().len;
        EXPECT(s0 % page == 0 || s0 == base, "%s: window %zu starts mid-page inside", name, w);
        EXPECT(e1 % page == 0 || e1 == base + len, "%s: window %zu ends mid-page inside", name,
               w);
    }
    // The pieces: sorted, disjoint, each a block of its window at its offset.
    for (size_t i = 0; i < pieces.size(); i++) {
        const XferkWindowPiece &p = pieces[i];
        EXPECT(p.start < p.end, "%s: piece %zu empty", name, i);
        EXPECT(i == 0 || pieces[i - 1].end <= p.start, "%s: piece %zu out of order", name, i);
        bool found = false;
        uint64_t offset = 0;
        if (p.win < plan.size())
            for (const xferk_block &b : plan[p.win].blocks) {
                if (base + b.offset == p.start && b.len == p.end - p.start) {
                    found = offset == p.offset;
                    break;
                }
                offset += b.len;
            }
        EXPECT(found, "%s: piece %zu is not its window's block at its offset", name, i);
    }
    // Every byte of every span: walked through the pieces without a gap.
    for (const auto &sp : spans) {
        for (uintptr_t a = sp.first; a < sp.first + sp.second;) {
            const XferkWindowPiece &p = xferk_piece_of(pieces, a);
            if (!(p.start <= a && a < p.end)) {
                EXPECT(false, "%s: byte %#lx of a span is in no window", name, (unsigned long)a);
                break;
            }
            a = p.end;
        }
    }
    return plan.size();
}

int
main() {
    const uintptr_t base = 0x7f0000000000 + 100; /* mid-page, as malloc() gives */
    const size_t len = (64u << 20) - 200;        /* ends mid-page too */
    std::mt19937_64 rnd(42);

    // The region's first and last bytes (two pages: one window), and
    // blocks within one page.
    size_t n = check("edges", base, len, {{base, 1000}, {base + len - 500, 500}});
    EXPECT(n == 1, "edges: %zu windows, not 1", n);
    n = check("one page", base, len, {{base + 8192 + 10, 20}, {base + 8192 + 100, 5}});
    EXPECT(n == 1, "one page: %zu windows", n);
    // One block of 2 MiB: cut at 256 pages, more windows.
    n = check("2 MiB", base, len, {{base + (1 << 20), 2 << 20}});
    EXPECT(n == 3, "2 MiB: %zu windows, not 3 (513 pages)", n);
    // Every 256-byte block of 64 MiB, shuffled (nixl_scale's 262,144).
    std::vector<std::pair<uintptr_t, size_t>> all;
    for (uintptr_t o = 0; o + 256 <= len; o += 256)
        all.emplace_back(base + o, 256);
    std::shuffle(all.begin(), all.end(), rnd);
    n = check("all", base, len, all);
    EXPECT(n == 64, "all: %zu windows, not 64 (16,384 pages)", n);
    // Random blocks, overlapping, of random sizes, in 4 KiB and 64 KiB pages.
    for (int round = 0; round < 200; round++) {
        std::vector<std::pair<uintptr_t, size_t>> spans;
        size_t count = 1 + rnd() % 300, max = 1 + rnd() % (64 << 10);
        for (size_t i = 0; i < count; i++) {
            size_t l = 1 + rnd() % max;
            spans.emplace_back(base + rnd() % (len - l + 1), l);
        }
        check("random", base, len, spans, round % 2 ? 4096 : 65536);
    }
    if (failures) std::fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}
