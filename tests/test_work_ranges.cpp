// How a product's chunks are shared out among a team while its weights stream from memory.
#include <omp.h>

#include "catch.h"
#include <vector>

#include "runtime/compute/work_ranges.h"

namespace rill {
namespace {

// Every unit a thread takes, in the order it took them.
std::vector<std::vector<size_t>> take_all(WorkRanges& ranges, int n_threads, size_t n_units) {
    ranges.reset(n_threads, n_units);
    std::vector<std::vector<size_t>> taken(static_cast<size_t>(n_threads));
#pragma omp parallel num_threads(n_threads)
    {
        const int me = omp_get_thread_num();
        while (const auto unit = ranges.next(me)) taken[size_t(me)].push_back(*unit);
    }
    return taken;
}

}  // namespace

TEST_CASE("a thread alone takes every unit once, in order", "[work_ranges]") {
    WorkRanges ranges;
    ranges.reset(1, 5);
    for (size_t i = 0; i < 5; ++i) CHECK(ranges.next(0) == i);
    CHECK_FALSE(ranges.next(0).has_value());
}

TEST_CASE("each thread starts on its own consecutive run", "[work_ranges]") {
    WorkRanges ranges;
    ranges.reset(2, 10);
    CHECK(ranges.next(0) == 0u);
    CHECK(ranges.next(1) == 5u);
    CHECK(ranges.next(0) == 1u);
}

TEST_CASE("a thread out of work takes the back half of the run with most left", "[work_ranges]") {
    WorkRanges ranges;
    ranges.reset(2, 10);  // thread 0: 0-4, thread 1: 5-9
    for (size_t i = 5; i < 10; ++i) CHECK(ranges.next(1) == i);
    CHECK(ranges.next(1) == 2u);  // thread 0 keeps 0-1, thread 1 now owns 2-4
    CHECK(ranges.next(0) == 0u);
    CHECK(ranges.next(1) == 3u);
    CHECK(ranges.next(0) == 1u);
    CHECK(ranges.next(0) == 4u);  // the last one, taken back
    CHECK_FALSE(ranges.next(0).has_value());
    CHECK_FALSE(ranges.next(1).has_value());
}

TEST_CASE("a team whose members never show up still has all its units done by the others", "[work_ranges]") {
    WorkRanges ranges;
    ranges.reset(4, 7);
    std::vector<int> seen(7, 0);
    while (const auto unit = ranges.next(2)) ++seen[*unit];
    for (const int n : seen) CHECK(n == 1);
}

TEST_CASE("threads taking units at once hand out each unit exactly once, whatever the team and count", "[work_ranges]") {
    WorkRanges ranges;
    for (const int n_threads : {1, 2, 3, 4})
        for (const size_t n_units : {size_t(0), size_t(1), size_t(3), size_t(64), size_t(1001)})
            for (int round = 0; round < 20; ++round) {
                std::vector<int> seen(n_units, 0);
                for (const auto& units : take_all(ranges, n_threads, n_units))
                    for (const size_t u : units) ++seen[u];
                for (size_t u = 0; u < n_units; ++u) REQUIRE(seen[u] == 1);
            }
}

}  // namespace rill
