// Q2_K .. Q5_K with an importance matrix: ggml's quantize_row_q*_K_impl, which llama-quantize runs
// instead of the reference quantizers when it has one. The layout and the last step (levels re-fitted
// to the scales as stored, then packed) are the reference's, shared through quantize_common.h; what
// changes is how the scales are chosen:
//   - each value's error is weighted by importance × sqrt(sigma2 + x²), sigma2 a mean square of the
//     super-block, so heavily used columns are reproduced more closely;
//   - the sub-block fits search more widely (make_qkx3's 37 trial scales where the reference tries 16
//     or 21), and Q3_K uses the nineteen-trial symmetric fit instead of moving levels one by one;
//   - the sub-block scales (and mins) are themselves fitted, weighted by their sub-block's total
//     weight, rather than simply mapped from the largest onto the top level.
// Q6_K's weighted path differs from its reference only in the fit's weights; it lives beside the
// reference in quantize_kquants.cpp.
#include <algorithm>
#include <cmath>

#include "block_layouts.h"
#include "fp16.h"
#include "quantize.h"
#include "quantize_common.h"

namespace rill {
float fit_nonnegative(int n, int nmax, const float* x, const float* weights, uint8_t* L) {
    float max = 0.0f;
    for (int i = 0; i < n; ++i) max = max > x[i] ? max : x[i];
    if (max < kGroupMaxEps) {
        std::fill(L, L + n, uint8_t(0));
        return 0.0f;
    }
    float iscale = float(nmax) / max;
    for (int i = 0; i < n; ++i) L[i] = uint8_t(nearest_int(iscale * x[i]));
    const float scale = 1.0f / iscale;
    float best_mse = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * float(L[i]);
        best_mse += weights[i] * diff * diff;
    }
    for (int step = -4; step <= 4; ++step) {
        if (step == 0) continue;
        const float trial_iscale = (0.1f * float(step) + float(nmax)) / max;
        const float trial_scale = 1.0f / trial_iscale;
        float mse = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = std::min(nmax, nearest_int(trial_iscale * x[i]));
            const float diff = x[i] - trial_scale * float(l);
            mse += weights[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = trial_iscale;
        }
    }

    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = std::min(nmax, nearest_int(iscale * x[i]));
        L[i] = uint8_t(l);
        sumlx += weights[i] * x[i] * float(l);  // the int level, before any wrap
        suml2 += weights[i] * float(l) * float(l);
    }
    for (int pass = 0; pass < 5; ++pass) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = weights[i];
            float slx = sumlx - w * x[i] * float(L[i]);
            float sl2 = suml2 - w * float(L[i]) * float(L[i]);
            if (slx > 0.0f && sl2 > 0.0f) {
                // The level this element would take under the scale fitted to all the others.
                const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
                if (new_l != L[i]) {
                    slx += w * x[i] * float(new_l);
                    sl2 += w * float(new_l) * float(new_l);
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = uint8_t(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (n_changed == 0) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

namespace {


// The sub-block weights and each sub-block's total (the weight its scale gets in the scale fit).
// sigma2 is the caller's, computed over the whole super-block.
template <int kSub>
void sub_block_weights(const float* x, const float* importance, float sigma2, float weights[kSub], float* total) {
    importance_weights(kSub, x, importance, sigma2, weights);
    float sum = 0.0f;
    for (int l = 0; l < kSub; ++l) sum += weights[l];
    *total = sum;
}

// Q4_K and Q5_K's fit: eight sub-blocks of 32 with a scale and a min each, then the scales and the
// mins fitted to 6 bits against a super-scale each.
void fit_k4_weighted(const float* x, const float* importance, int nmax, uint8_t L[256], uint8_t ls[8],
                     uint8_t lm[8], float* d, float* dmin) {
    const float sigma2 = 2 * sum_squares(kSuperBlock, x) / kSuperBlock;
    float scales[8], mins[8], totals[8];
    for (int j = 0; j < 8; ++j) {
        float weights[32];
        sub_block_weights<32>(x + 32 * j, importance + 32 * j, sigma2, weights, &totals[j]);
        const ScaleMin fit = fit_scale_min(32, nmax, x + 32 * j, weights, L + 32 * j, -0.9f, 0.05f, 36, false);
        scales[j] = fit.scale;
        mins[j] = fit.min;
    }
    *d = fit_nonnegative(8, 63, scales, totals, ls);
    *dmin = fit_nonnegative(8, 63, mins, totals, lm);
}

}  // namespace

void quantize_q2_k_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock, importance += kSuperBlock) {
        // Q2_K alone takes the plain mean square (the others double it).
        const float sigma2 = sum_squares(kSuperBlock, in) / kSuperBlock;
        uint8_t L[256];
        float scales[16], mins[16], totals[16];
        for (int j = 0; j < 16; ++j) {
            float weights[16];
            sub_block_weights<16>(in + 16 * j, importance + 16 * j, sigma2, weights, &totals[j]);
            const ScaleMin fit = fit_scale_min(16, 3, in + 16 * j, weights, L + 16 * j, -0.9f, 0.05f, 36, false);
            scales[j] = fit.scale;
            mins[j] = fit.min;
        }
        uint8_t ls[16], lm[16];
        const float d = fit_nonnegative(16, 15, scales, totals, ls);
        const float dmin = fit_nonnegative(16, 15, mins, totals, lm);

        BlockQ2_K b{};
        b.d = f32_to_f16(d);
        b.dmin = f32_to_f16(dmin);
        for (int j = 0; j < 16; ++j) b.scales[j] = uint8_t(ls[j] | (lm[j] << 4));
        requantize_q2_k(in, L, b);
        store_block(blocks, i, b);
    }
}

void quantize_q3_k_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock, importance += kSuperBlock) {
        const float sigma2 = 2 * sum_squares(kSuperBlock, in) / kSuperBlock;
        int8_t L[256];
        float scales[16], totals[16];
        for (int j = 0; j < 16; ++j) {
            float weights[16];
            sub_block_weights<16>(in + 16 * j, importance + 16 * j, sigma2, weights, &totals[j]);
            scales[j] = fit_symmetric(16, 4, in + 16 * j, weights, L + 16 * j);
        }
        // The signed scales to 6 bits by the same symmetric fit, weighted by sub-block; its levels come
        // back biased by 32 (or all 0 when every scale is zero, which then stays zero in the block).
        int8_t biased[16];
        const float d = fit_symmetric(16, 32, scales, totals, biased);
        BlockQ3_K b{};
        requantize_q3_k(in, biased, d, L, b);
        store_block(blocks, i, b);
    }
}

void quantize_q4_k_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock, importance += kSuperBlock) {
        uint8_t L[256], ls[8], lm[8];
        float d, dmin;
        fit_k4_weighted(in, importance, 15, L, ls, lm, &d, &dmin);
        BlockQ4_K b{};
        requantize_q4_k(in, ls, lm, d, dmin, L, b);  // unclamped: ggml's Q4_K packs them as they are
        store_block(blocks, i, b);
    }
}

void quantize_q5_k_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock, importance += kSuperBlock) {
        uint8_t L[256], ls[8], lm[8];
        float d, dmin;
        fit_k4_weighted(in, importance, 31, L, ls, lm, &d, &dmin);
        for (int j = 0; j < 8; ++j) {  // ggml's Q5_K clamps (it matters only for a wrapped level)
            ls[j] = std::min<uint8_t>(63, ls[j]);
            lm[j] = std::min<uint8_t>(63, lm[j]);
        }
        BlockQ5_K b{};
        requantize_q5_k(in, ls, lm, d, dmin, L, b);
        store_block(blocks, i, b);
    }
}

}  // namespace rill
