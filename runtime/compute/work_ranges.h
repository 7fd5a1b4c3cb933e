// Units of work shared among a team so that each thread streams one contiguous stretch and the
// tail still balances: every thread starts on its own run of consecutive units, and one that runs
// out takes the back half of whichever run has most left. Which thread computes a unit never
// changes what the unit computes.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace rill {

class WorkRanges {
public:
    // Splits units [0, n_units) into n_threads consecutive runs. Call outside the parallel region.
    void reset(int n_threads, size_t n_units);
    // The next unit for thread `me` (0 <= me < n_threads), or nothing once every unit is taken.
    std::optional<size_t> next(int me);

private:
    // A run [begin, end) packed as begin | end << 32, so one compare-and-swap moves either end.
    struct alignas(64) Run {
        std::atomic<uint64_t> span{0};
    };
    std::unique_ptr<Run[]> runs_;
    int n_threads_ = 0;
    int capacity_ = 0;
};

}  // namespace rill
