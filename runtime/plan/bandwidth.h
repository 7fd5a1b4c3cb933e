// Decode speed is bound by memory bandwidth: a probe of what this machine can read, so a benchmark
// can say how close to the limit it runs (budget.h has the bytes a step must read).
#pragma once
#include <cstddef>
#include <cstdint>

namespace rill {

// Streaming-read bandwidth with n_threads threads, in GB/s (1e9 bytes per second). With the default
// probe it takes about half a second and briefly 512 MiB of memory; the probe must be far larger than
// the last-level cache.
inline constexpr size_t kDefaultProbeBytes = size_t(512) << 20;
double measure_read_bandwidth(int n_threads, size_t probe_bytes = kDefaultProbeBytes);

}  // namespace rill
