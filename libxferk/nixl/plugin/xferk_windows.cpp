// SPDX-License-Identifier: Apache-2.0
// A request's blocks as windows (xferk_windows.h).
#include "xferk_windows.h"

#include <algorithm>

void
xferk_plan_windows(uintptr_t base, size_t len, uintptr_t page,
                   std::vector<std::pair<uintptr_t, size_t>> spans,
                   std::vector<XferkWindowPlan> &plan, std::vector<XferkWindowPiece> &pieces) {
    const uintptr_t mask = ~(page - 1), end = base + len;
    std::vector<std::pair<uintptr_t, uintptr_t>> merged;
    size_t first = plan.size();

    std::sort(spans.begin(), spans.end());
    for (const auto &sp : spans) {
        uintptr_t s = std::max(sp.first & mask, base);
        uintptr_t e = std::min((sp.first + sp.second + page - 1) & mask, end);
        if (!merged.empty() && s <= merged.back().second)
            merged.back().second = std::max(merged.back().second, e);
        else
            merged.emplace_back(s, e);
    }
    for (const auto &m : merged) {
        for (uintptr_t s = m.first; s < m.second;) {
            if (plan.size() == first || plan.back().pages == kWindowPages) plan.emplace_back();
            XferkWindowPlan &w = plan.back();
            uintptr_t cut = std::min<uintptr_t>(m.second, (s & mask) + (kWindowPages - w.pages) * page);
            w.blocks.push_back({s - base, cut - s});
            pieces.push_back({s, cut, plan.size() - 1, w.len});
            w.pages += (((cut + page - 1) & mask) - (s & mask)) / page;
            w.len += cut - s;
            s = cut;
        }
    }
}

const XferkWindowPiece &
xferk_piece_of(const std::vector<XferkWindowPiece> &pieces, uintptr_t addr) {
    auto p = std::upper_bound(pieces.begin(), pieces.end(), addr,
                              [](uintptr_t a, const XferkWindowPiece &q) { return a < q.start; });
    return *(p - 1);
}
