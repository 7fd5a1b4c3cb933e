#include "serve_prefix_cache.h"

#include <algorithm>

namespace rill::serve {
namespace {

uint64_t entry_bytes(const PrefixCache::Entry& e) { return e.state.size() + e.tokens.size() * sizeof(int32_t); }

}  // namespace

size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

void PrefixCache::put(std::vector<int32_t> tokens, std::vector<uint8_t> state) {
    Entry entry{std::move(tokens), std::move(state), ++clock_};
    const uint64_t size = entry_bytes(entry);
    if (size > capacity_ || entry.tokens.empty()) return;
    // An entry this one extends (the same conversation, saved before its latest turns) is stale.
    std::erase_if(entries_, [&](const Entry& e) {
        const bool stale = common_prefix(e.tokens, entry.tokens) == e.tokens.size();
        if (stale) bytes_ -= entry_bytes(e);
        return stale;
    });
    while (bytes_ + size > capacity_) {
        const auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
        bytes_ -= entry_bytes(*oldest);
        entries_.erase(oldest);
    }
    bytes_ += size;
    entries_.push_back(std::move(entry));
}

const PrefixCache::Entry* PrefixCache::find(std::span<const int32_t> prompt, size_t at_least, size_t& prefix) {
    Entry* best = nullptr;
    prefix = at_least;
    for (Entry& e : entries_) {
        const size_t n = common_prefix(e.tokens, prompt);
        if (n > prefix) {
            best = &e;
            prefix = n;
        }
    }
    if (best) best->last_used = ++clock_;
    else prefix = 0;
    return best;
}

}  // namespace rill::serve
