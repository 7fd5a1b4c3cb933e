// Q4_0, Q4_1, Q5_0 and Q5_1 with an importance matrix: ggml's quantize_row_q*_impl, which
// llama-quantize runs instead of the reference quantizers when it has one. Rather than map the
// block's extremes onto the outer levels, each block's scale (and min) is searched for: the one whose
// levels best fit the block in least squares, each value weighted by its column's importance.
//
// One difference from the other weighted quantizers matters to callers: ggml takes the spread
// (sigma2, the mean of x²) over the whole row, not the block, so a call must cover whole rows for
// the bytes to match ggml's.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "block_layouts.h"
#include "fp16.h"
#include "quantize.h"
#include "quantize_common.h"

namespace rill {
namespace {

constexpr int kBlock = 32;

float row_sigma2(const float* in, size_t n_blocks) {
    const size_t n = n_blocks * kBlock;
    return sum_squares(n, in) / float(n);
}

// Levels two to a byte, element j in the low nibble of byte j and element j + 16 in the high one; the
// 5-bit formats' fifth bits go to qh.
template <typename Block, typename Level>
void pack_levels(const Level L[kBlock], Block& b) {
    if constexpr (requires { b.qh; }) {
        uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
            b.qs[j] = uint8_t((L[j] & 0x0f) | ((L[j + 16] & 0x0f) << 4));
            set_high_bits(&qh, j, L[j], L[j + 16]);
        }
        std::memcpy(b.qh, &qh, sizeof qh);
    } else {
        for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(L[j] | (L[j + 16] << 4));
    }
}

// The symmetric formats: levels -nmax..nmax-1 as 0..2nmax-1 (ggml's make_qx_quants with weights).
template <typename Block, int kNmax>
void quantize_symmetric(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    const float sigma2 = row_sigma2(in, n_blocks);
    for (size_t i = 0; i < n_blocks; ++i, in += kBlock, importance += kBlock) {
        float weights[kBlock];
        importance_weights(kBlock, in, importance, sigma2, weights);
        int8_t L[kBlock];
        const float d = fit_symmetric(kBlock, kNmax, in, weights, L);
        Block b{};
        b.d = f32_to_f16(d);
        pack_levels(L, b);
        store_block(blocks, i, b);
    }
}

// The formats with a min: levels 0..nmax, x ≈ d * l + m with m <= 0 (ggml's make_qkx3_quants, with
// the same search parameters for both).
template <typename Block, int kNmax>
void quantize_with_min(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    const float sigma2 = row_sigma2(in, n_blocks);
    for (size_t i = 0; i < n_blocks; ++i, in += kBlock, importance += kBlock) {
        float weights[kBlock];
        importance_weights(kBlock, in, importance, sigma2, weights);
        uint8_t L[kBlock];
        const ScaleMin fit = fit_scale_min(kBlock, kNmax, in, weights, L, -0.9f, 0.05f, 36, false);
        Block b{};
        b.d = f32_to_f16(fit.scale);
        b.m = f32_to_f16(-fit.min);
        pack_levels(L, b);
        store_block(blocks, i, b);
    }
}

}  // namespace

void quantize_q4_0_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_symmetric<BlockQ4_0, 8>(in, importance, blocks, n_blocks);
}

void quantize_q4_1_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_with_min<BlockQ4_1, 15>(in, importance, blocks, n_blocks);
}

void quantize_q5_0_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_symmetric<BlockQ5_0, 16>(in, importance, blocks, n_blocks);
}

void quantize_q5_1_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_with_min<BlockQ5_1, 31>(in, importance, blocks, n_blocks);
}

}  // namespace rill
