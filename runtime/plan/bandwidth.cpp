#include "runtime/plan/bandwidth.h"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "runtime/base/error.h"

namespace rill {
namespace {

constexpr int kProbePasses = 4;

// The sums land here so the compiler must perform every read.
volatile uint64_t g_probe_sink = 0;
// The fill byte is read at run time so the compiler cannot know the buffer's contents.
volatile int g_probe_fill = 0x5a;

struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};

// Several independent accumulators, so the loop is limited by loads rather than by one add chain;
// gcc turns the eight lanes into vector adds. It prefetches as far ahead as the decode kernels do
// (simd/gemv_body.inl, 8 KiB): the probe is their yardstick, and on a Xeon (family 6 model 207, 2
// threads) a plain loop read 15-18 GB/s while the kernels drew 107-125% of that.
uint64_t sum_words(const uint64_t* words, size_t n) {
    constexpr size_t kAheadWords = 8192 / sizeof(uint64_t);
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        if (i + kAheadWords < n) __builtin_prefetch(words + i + kAheadWords);
        a0 += words[i + 0];
        a1 += words[i + 1];
        a2 += words[i + 2];
        a3 += words[i + 3];
        a4 += words[i + 4];
        a5 += words[i + 5];
        a6 += words[i + 6];
        a7 += words[i + 7];
    }
    for (; i < n; ++i) a0 += words[i];
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}

}  // namespace

double measure_read_bandwidth(int n_threads, size_t probe_bytes) {
    n_threads = std::max(1, n_threads);
    constexpr size_t kHugePage = size_t(2) << 20;
    const size_t bytes = std::max(kHugePage, probe_bytes / kHugePage * kHugePage);
    // Left uninitialised: the first write below is the only touch before timing. Aligned to 2 MiB and
    // offered huge pages, so that touch costs hundreds of page faults instead of 131072.
    std::unique_ptr<uint64_t, FreeDeleter> buffer(static_cast<uint64_t*>(std::aligned_alloc(kHugePage, bytes)));
    if (!buffer) throw Error("cannot allocate " + std::to_string(bytes >> 20) + " MiB for the memory-bandwidth probe");
    ::madvise(buffer.get(), bytes, MADV_HUGEPAGE);  // only advice: without huge pages it still works
    uint64_t* const words = buffer.get();
    const size_t n_words = bytes / sizeof(uint64_t);
    const int fill = g_probe_fill;

    // Each thread touches the slice it later reads, so on a NUMA machine the pages sit near their reader.
#pragma omp parallel num_threads(n_threads)
    {
        const size_t team = size_t(omp_get_num_threads()), id = size_t(omp_get_thread_num());
        const size_t begin = n_words * id / team, end = n_words * (id + 1) / team;
        std::memset(words + begin, fill, (end - begin) * sizeof(uint64_t));
    }

    // The best pass, not the mean: the host is shared, and the least disturbed pass is the closest to
    // what the memory system can deliver.
    double best_seconds = 0;
    for (int pass = 0; pass < kProbePasses; ++pass) {
        uint64_t total = 0;
        const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(n_threads) reduction(+ : total)
        {
            const size_t team = size_t(omp_get_num_threads()), id = size_t(omp_get_thread_num());
            const size_t begin = n_words * id / team, end = n_words * (id + 1) / team;
            total += sum_words(words + begin, end - begin);
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        g_probe_sink = g_probe_sink + total;
        if (pass == 0 || seconds < best_seconds) best_seconds = seconds;
    }
    return double(bytes) / std::max(best_seconds, 1e-9) / 1e9;
}

}  // namespace rill
