// Internal to rill_quant: the pieces the reference quantizers (no importance) and the importance-weighted
// ones have in common. ggml's two paths share these steps expression for expression, so sharing the
// code keeps both byte-exact from one place.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "block_layouts.h"

namespace rill {

// Below this a group's values count as zero (ggml's GROUP_MAX_EPS): no scale can be fitted.
inline constexpr float kGroupMaxEps = 1e-15f;

template <typename Block>
void store_block(uint8_t* blocks, size_t i, const Block& b) {
    std::memcpy(blocks + i * sizeof(Block), &b, sizeof(Block));  // output carries no alignment promise
}

// The fifth bits of Q5_0/Q5_1 as ggml lays them out: element j in bit j of a little-endian word.
inline void set_high_bits(uint32_t* qh, int j, int q0, int q1) {
    *qh |= uint32_t((q0 >> 4) & 1) << j;
    *qh |= uint32_t((q1 >> 4) & 1) << (j + 16);
}

// ggml's MAX macro: keeps `a` unless b is strictly larger. It differs from std::max for ±0 (and NaN),
// which is enough to change bytes, so the grid quantizers spell it out.
inline float max_of(float a, float b) { return a > b ? a : b; }

// |x| into `magnitude` and one sign bit per value (set for negatives), 8 values per sign byte.
inline void split_signs(const float* x, int n_bytes, float* magnitude, uint8_t* signs) {
    for (int k = 0; k < n_bytes; ++k) {
        uint8_t bits = 0;
        for (int i = 0; i < 8; ++i) {
            const float v = x[8 * k + i];
            magnitude[8 * k + i] = v >= 0 ? v : -v;
            if (!(v >= 0)) bits = uint8_t(bits | (1 << i));
        }
        signs[k] = bits;
    }
}

// Quantizes n_blocks super-blocks of 256 with quantize(x, importance or null, Block&, context...).
template <typename Block, typename Fn, typename... Context>
void quantize_super_blocks(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks, Fn quantize,
                           const Context&... context) {
    for (size_t b = 0; b < n_blocks; ++b) {
        Block y;
        quantize(context..., in + b * kSuperBlock, importance ? importance + b * kSuperBlock : nullptr, y);
        store_block(blocks, b, y);
    }
}

// Sum of x² in element order (the order fixes the float rounding ggml's sums get).
inline float sum_squares(size_t n, const float* x) {
    float sum = 0.0f;
    for (size_t i = 0; i < n; ++i) sum += x[i] * x[i];
    return sum;
}

// ggml's weights with an importance matrix: importance × sqrt(sigma2 + x²). The column's importance
// carries most of it; sigma2 (a mean square over the block or row, scaled as each format's caller
// scales it) keeps small values from counting for nothing while large ones still count a little more.
inline void importance_weights(int n, const float* x, const float* importance, float sigma2, float* w) {
    for (int i = 0; i < n; ++i) w[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

// Symmetric levels -nmax..nmax-1 for n values, stored offset by nmax in L; returns the scale
// (ggml's make_qx_quants, rmse_type 1). `weights` null weights each value by x².
float fit_symmetric(int n, int nmax, const float* x, const float* weights, int8_t* L);

// Non-negative levels 0..nmax for non-negative x, and their scale (ggml's make_qp_quants): nine inverse
// scales around nmax/max compared by weighted squared error, then single levels moved while that
// improves the weighted least-squares fit, for at most five passes. L is uint8_t as in ggml: a negative
// level (possible only for a negative input, as IQ2_XXS's parity flip can make) wraps, and the wrapped
// value is what later comparisons and sums see.
float fit_nonnegative(int n, int nmax, const float* x, const float* weights, uint8_t* L);

// Levels 0..nmax with a scale and a min, x ≈ scale * l - min (ggml's make_qkx2_quants, and equally
// make_qkx3_quants when given weights: the two do the same operations then). n is at most 32.
struct ScaleMin {
    float scale;
    float min;  // subtracted on dequantization: stored as a non-negative number
};
ScaleMin fit_scale_min(int n, int nmax, const float* x, const float* weights, uint8_t* L, float rmin, float rdelta,
                       int nstep, bool use_mad);

// The k-quants' last steps, after the scales are chosen: levels re-fitted to the scales as stored
// (only where the stored scale is non-zero; elsewhere L's levels from the fit stay), then packed.
// Q2_K: b.d, b.dmin and b.scales already set.
void requantize_q2_k(const float* x, uint8_t L[256], BlockQ2_K& b);
// Q3_K: `biased` are the sixteen 6-bit scales plus 32 (0..63), `d` the super-scale before its half rounding.
void requantize_q3_k(const float* x, const int8_t biased[16], float d, int8_t L[256], BlockQ3_K& b);
// Q4_K/Q5_K: ls and lm the 6-bit scales and mins (packed with ggml's truncations, so a value above 63
// spills as ggml's does), d and dmin the super-scales before their half rounding.
void requantize_q4_k(const float* x, const uint8_t ls[8], const uint8_t lm[8], float d, float dmin, uint8_t L[256],
                     BlockQ4_K& b);
void requantize_q5_k(const float* x, const uint8_t ls[8], const uint8_t lm[8], float d, float dmin, uint8_t L[256],
                     BlockQ5_K& b);

}  // namespace rill
