// The merge loop SentencePiece and byte-level BPE share: split text into UTF-8 characters, then
// repeatedly merge the adjacent pair with the best priority (lowest first, leftmost on ties) until
// no pair has one. Only how a pair is ranked differs between the two.
#pragma once
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "runtime/text/utf8.h"

namespace rill {

// rank(left, right) gives the pair's priority, or nullopt if the pair never merges.
template <typename Rank>
std::vector<std::string_view> merge_symbols(std::string_view text, Rank rank) {
    struct Symbol {
        int prev, next;
        size_t start, len;
    };
    struct Pair {
        int left, right;
        double priority;
        size_t len;
        bool operator<(const Pair& o) const { return priority > o.priority || (priority == o.priority && left > o.left); }
    };
    std::vector<Symbol> symbols;
    for (size_t i = 0; i < text.size();) {
        const size_t len = std::min(utf8_sequence_length(uint8_t(text[i])), text.size() - i);
        symbols.push_back({int(symbols.size()) - 1, int(symbols.size()) + 1, i, len});
        i += len;
    }
    if (symbols.empty()) return {};
    symbols.back().next = -1;

    std::priority_queue<Pair> queue;
    const auto try_pair = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const Symbol& a = symbols[size_t(left)];
        const Symbol& b = symbols[size_t(right)];
        if (const std::optional<double> p = rank(text.substr(a.start, a.len), text.substr(b.start, b.len)))
            queue.push({left, right, *p, a.len + b.len});
    };
    for (int i = 1; i < int(symbols.size()); ++i) try_pair(i - 1, i);
    while (!queue.empty()) {
        const Pair p = queue.top();
        queue.pop();
        Symbol& left = symbols[size_t(p.left)];
        Symbol& right = symbols[size_t(p.right)];
        // Stale entry: one side has been merged into something else since it was queued.
        if (left.len == 0 || right.len == 0 || left.len + right.len != p.len) continue;
        left.len += right.len;
        right.len = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[size_t(right.next)].prev = p.left;
        try_pair(left.prev, p.left);
        try_pair(p.left, left.next);
    }
    std::vector<std::string_view> pieces;
    for (int i = 0; i >= 0; i = symbols[size_t(i)].next) pieces.push_back(text.substr(symbols[size_t(i)].start, symbols[size_t(i)].len));
    return pieces;
}

}  // namespace rill
