#include "runtime/compute/work_ranges.h"

#include <limits>
#include <stdexcept>

namespace rill {
namespace {

constexpr uint64_t pack(uint64_t begin, uint64_t end) { return begin | end << 32; }
constexpr uint32_t begin_of(uint64_t span) { return uint32_t(span); }
constexpr uint32_t end_of(uint64_t span) { return uint32_t(span >> 32); }

}  // namespace

void WorkRanges::reset(int n_threads, size_t n_units) {
    if (n_threads < 1 || n_units > std::numeric_limits<uint32_t>::max()) throw std::invalid_argument("WorkRanges: bad team or unit count");
    if (n_threads > capacity_) {
        runs_ = std::make_unique<Run[]>(size_t(n_threads));
        capacity_ = n_threads;
    }
    n_threads_ = n_threads;
    for (int t = 0; t < n_threads; ++t) {
        const uint64_t begin = n_units * size_t(t) / size_t(n_threads), end = n_units * size_t(t + 1) / size_t(n_threads);
        runs_[size_t(t)].span.store(pack(begin, end), std::memory_order_relaxed);
    }
}

std::optional<size_t> WorkRanges::next(int me) {
    std::atomic<uint64_t>& mine = runs_[size_t(me)].span;
    for (;;) {
        uint64_t span = mine.load(std::memory_order_acquire);
        if (begin_of(span) < end_of(span)) {
            // Others may shorten this run from its end at the same time: the swap fails and we retry.
            if (mine.compare_exchange_weak(span, pack(begin_of(span) + 1, end_of(span)), std::memory_order_acq_rel)) return begin_of(span);
            continue;
        }
        // Out of work: the run with most left gives up its back half, which becomes this thread's run.
        int victim = -1;
        uint32_t most = 0;
        for (int t = 0; t < n_threads_; ++t) {
            if (t == me) continue;
            const uint64_t other = runs_[size_t(t)].span.load(std::memory_order_acquire);
            const uint32_t left = begin_of(other) < end_of(other) ? end_of(other) - begin_of(other) : 0;
            if (left > most) most = left, victim = t;
        }
        if (victim < 0) return std::nullopt;
        std::atomic<uint64_t>& theirs = runs_[size_t(victim)].span;
        uint64_t other = theirs.load(std::memory_order_acquire);
        const uint32_t begin = begin_of(other), end = end_of(other);
        if (begin >= end) continue;
        const uint32_t mid = begin + (end - begin) / 2;  // the owner keeps [begin, mid), next to where it works
        if (!theirs.compare_exchange_weak(other, pack(begin, mid), std::memory_order_acq_rel)) continue;
        // Only this thread writes its own run while the run is empty: no one else takes from an empty run.
        mine.store(pack(mid + 1, end), std::memory_order_release);
        return mid;
    }
}

}  // namespace rill
