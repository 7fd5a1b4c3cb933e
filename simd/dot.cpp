#include "dot.h"

#include <xsimd/xsimd.hpp>

namespace rill::simd {

using Batch = xsimd::batch<float>;

float dot(const float* a, const float* b, size_t n) {
    constexpr size_t W = Batch::size;
    Batch acc0(0.0f), acc1(0.0f), acc2(0.0f), acc3(0.0f);
    size_t i = 0;
    for (; i + 4 * W <= n; i += 4 * W) {
        acc0 = xsimd::fma(Batch::load_unaligned(a + i), Batch::load_unaligned(b + i), acc0);
        acc1 = xsimd::fma(Batch::load_unaligned(a + i + W), Batch::load_unaligned(b + i + W), acc1);
        acc2 = xsimd::fma(Batch::load_unaligned(a + i + 2 * W), Batch::load_unaligned(b + i + 2 * W), acc2);
        acc3 = xsimd::fma(Batch::load_unaligned(a + i + 3 * W), Batch::load_unaligned(b + i + 3 * W), acc3);
    }
    for (; i + W <= n; i += W) acc0 = xsimd::fma(Batch::load_unaligned(a + i), Batch::load_unaligned(b + i), acc0);
    float sum = xsimd::hadd((acc0 + acc1) + (acc2 + acc3));
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

void axpy(float a, const float* x, float* y, size_t n) {
    constexpr size_t W = Batch::size;
    const Batch av(a);
    size_t i = 0;
    for (; i + W <= n; i += W) xsimd::fma(av, Batch::load_unaligned(x + i), Batch::load_unaligned(y + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += a * x[i];
}

}  // namespace rill::simd
