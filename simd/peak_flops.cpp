#include "peak_flops.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "gemv.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define RILL_X86 1
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace rill::simd {
namespace {

// Twelve accumulators: more than FMA latency × FMA units on any current x86 core, so the loop is
// bound by issue rate, not by dependencies.
constexpr int kAccumulators = 12;

#ifdef RILL_X86
__attribute__((target("avx512f"))) double fma_loop_avx512(int64_t steps) {
    __m512 acc[kAccumulators];
    for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm512_set1_ps(float(i) * 1e-3f);
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int64_t s = 0; s < steps; ++s)
        for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    float sum = 0;
    for (int i = 0; i < kAccumulators; ++i) sum += _mm512_reduce_add_ps(acc[i]);
    volatile float sink = sum;  // keeps the loop from being optimised away
    (void)sink;
    return double(steps) * kAccumulators * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fma_loop_avx2(int64_t steps) {
    __m256 acc[kAccumulators];
    for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm256_set1_ps(float(i) * 1e-3f);
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int64_t s = 0; s < steps; ++s)
        for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    alignas(32) float lanes[8];
    __m256 total = acc[0];
    for (int i = 1; i < kAccumulators; ++i) total = _mm256_add_ps(total, acc[i]);
    _mm256_store_ps(lanes, total);
    volatile float sink = lanes[0];
    (void)sink;
    return double(steps) * kAccumulators * 8 * 2;
}
#endif

#if defined(__aarch64__)
// Every ARM64 core has NEON's four-lane fused multiply-add.
double fma_loop_neon(int64_t steps) {
    float32x4_t acc[kAccumulators];
    for (int i = 0; i < kAccumulators; ++i) acc[i] = vdupq_n_f32(float(i) * 1e-3f);
    const float32x4_t a = vdupq_n_f32(0.999999f), b = vdupq_n_f32(1e-7f);
    for (int64_t s = 0; s < steps; ++s)
        for (int i = 0; i < kAccumulators; ++i) acc[i] = vfmaq_f32(b, acc[i], a);
    float32x4_t total = acc[0];
    for (int i = 1; i < kAccumulators; ++i) total = vaddq_f32(total, acc[i]);
    volatile float sink = vaddvq_f32(total);
    (void)sink;
    return double(steps) * kAccumulators * 4 * 2;
}
#endif

[[maybe_unused]] double fma_loop_scalar(int64_t steps) {
    float acc[kAccumulators];
    for (int i = 0; i < kAccumulators; ++i) acc[i] = float(i) * 1e-3f;
    for (int64_t s = 0; s < steps; ++s)
        for (int i = 0; i < kAccumulators; ++i) acc[i] = acc[i] * 0.999999f + 1e-7f;
    volatile float sink = acc[0];
    (void)sink;
    return double(steps) * kAccumulators * 2;
}

double fma_loop(int64_t steps) {
#ifdef RILL_X86
    if (cpu_supports(KernelPath::Avx512)) return fma_loop_avx512(steps);
    if (cpu_supports(KernelPath::Avx2)) return fma_loop_avx2(steps);
#endif
#if defined(__aarch64__)
    return fma_loop_neon(steps);
#else
    return fma_loop_scalar(steps);
#endif
}

}  // namespace

double measure_peak_gflops(int n_threads) {
    using Clock = std::chrono::steady_clock;
    constexpr int64_t kSteps = 2'000'000;  // ~10-20 ms per thread at a few GHz
    double best = 0;
    // The best of several short tries: on a shared host one try may lose its core for a moment.
    for (int attempt = 0; attempt < 8; ++attempt) {
        double flops = 0;
        const auto start = Clock::now();
#pragma omp parallel num_threads(n_threads) reduction(+ : flops)
        flops += fma_loop(kSteps);
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        best = std::max(best, flops / seconds * 1e-9);
    }
    return best;
}

}  // namespace rill::simd
