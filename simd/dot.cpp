#include "dot.h"

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <limits>

namespace rill::simd {

using Batch = xsimd::batch<float>;

// The lanes' total: xsimd 9 renamed hadd (Debian 12 ships 8.1) to reduce_add (Debian 13 ships 13).
inline float lane_total(Batch b) {
#if XSIMD_VERSION_MAJOR >= 9
    return xsimd::reduce_add(b);
#else
    return xsimd::hadd(b);
#endif
}

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
    float sum = lane_total((acc0 + acc1) + (acc2 + acc3));
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

float max(const float* x, size_t n) {
    constexpr size_t W = Batch::size;
    float most = x[0];
    size_t i = 0;
    if (n >= W) {
        Batch acc = Batch::load_unaligned(x);
        for (i = W; i + W <= n; i += W) acc = xsimd::max(acc, Batch::load_unaligned(x + i));
        alignas(64) float lanes[W];
        acc.store_aligned(lanes);
        most = *std::max_element(lanes, lanes + W);
    }
    for (; i < n; ++i) most = std::max(most, x[i]);
    return most;
}

float exp_shifted(float* x, size_t n, float shift) {
    constexpr size_t W = Batch::size;
    const Batch s(shift);
    Batch sum(0.0f);
    size_t i = 0;
    for (; i + W <= n; i += W) {
        const Batch e = xsimd::exp(Batch::load_unaligned(x + i) - s);
        e.store_unaligned(x + i);
        sum += e;
    }
    if (i < n) {
        // The tail through the same exp; the padding's exp(-inf) is 0 and adds nothing.
        alignas(64) float tail[W];
        std::fill(tail, tail + W, -std::numeric_limits<float>::infinity());
        std::copy(x + i, x + n, tail);
        const Batch e = xsimd::exp(Batch::load_aligned(tail) - s);
        e.store_aligned(tail);
        std::copy(tail, tail + (n - i), x + i);
        sum += e;
    }
    return lane_total(sum);
}

void scale(float* x, size_t n, float a) {
    constexpr size_t W = Batch::size;
    const Batch av(a);
    size_t i = 0;
    for (; i + W <= n; i += W) (Batch::load_unaligned(x + i) * av).store_unaligned(x + i);
    for (; i < n; ++i) x[i] *= a;
}

namespace {

// gate[i] = gate[i] * σ(Z(gate[i])) * up[i], W elements at a time, the tail through a padded batch.
template <class Z>
void gated(float* gate, const float* up, size_t n, Z z) {
    constexpr size_t W = Batch::size;
    const Batch one(1.0f);
    const auto apply = [&](Batch x, Batch u) { return x / (one + xsimd::exp(-z(x))) * u; };
    size_t i = 0;
    for (; i + W <= n; i += W) apply(Batch::load_unaligned(gate + i), Batch::load_unaligned(up + i)).store_unaligned(gate + i);
    if (i < n) {
        alignas(64) float x[W] = {}, u[W] = {};
        std::copy(gate + i, gate + n, x);
        std::copy(up + i, up + n, u);
        apply(Batch::load_aligned(x), Batch::load_aligned(u)).store_aligned(x);
        std::copy(x, x + (n - i), gate + i);
    }
}

}  // namespace

void silu(float* x, size_t n) {
    constexpr size_t W = Batch::size;
    const Batch one(1.0f);
    const auto apply = [&](Batch v) { return v / (one + xsimd::exp(-v)); };
    size_t i = 0;
    for (; i + W <= n; i += W) apply(Batch::load_unaligned(x + i)).store_unaligned(x + i);
    if (i < n) {
        alignas(64) float v[W] = {};
        std::copy(x + i, x + n, v);
        apply(Batch::load_aligned(v)).store_aligned(v);
        std::copy(v, v + (n - i), x + i);
    }
}

void swiglu(float* gate, const float* up, size_t n) {
    gated(gate, up, n, [](Batch x) { return x; });
}

void geglu(float* gate, const float* up, size_t n) {
    const Batch k2(2.0f * 0.7978845608028654f), c(0.044715f);  // 2·sqrt(2/π)
    gated(gate, up, n, [&](Batch x) { return k2 * (x + c * x * x * x); });
}

}  // namespace rill::simd
