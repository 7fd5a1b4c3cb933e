// K-quant quantizers (Q2_K .. Q6_K): ggml's quantize_row_q*_K_ref, which llama-quantize runs when it
// has no importance matrix. Each super-block of 256 is cut into sub-blocks; a scale (and for Q2_K,
// Q4_K, Q5_K a min) is fitted per sub-block, the fitted scales are themselves quantized against one
// half-float super-scale, and the values are then re-quantized against the scales as stored, so
// the levels agree with what a dequantizer will multiply them by.
//
// Bit-exactness with ggml hangs on details kept here on purpose: sums accumulated in element order,
// products grouped as ggml groups them (w * x * l is (w * x) * l), nearest_int's ties-to-even, and
// the int-to-narrow-integer conversions ggml performs when it stores a level.
//
// The fits and the final re-quantize-and-pack steps are shared (quantize_common.h) with the
// importance-weighted quantizers in quantize_kquants_weighted.cpp; Q6_K's weighted path is here.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "block_layouts.h"
#include "fp16.h"
#include "quantize.h"
#include "quantize_common.h"

namespace rill {
namespace {

// The value of largest magnitude with its sign (first wins a tie); mapping it to the most negative
// level -nmax uses the one level that has no positive twin.
float signed_absmax(int n, const float* x, float* amax_out) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    *amax_out = amax;
    return max;
}

}  // namespace

// ggml's make_qx_quants with rmse_type 1: the scale that best fits among nineteen trial inverse scales
// around nmax/max (weighted least squares for each trial's levels).
float fit_symmetric(int n, int nmax, const float* x, const float* weights, int8_t* L) {
    float amax;
    const float max = signed_absmax(n, x, &amax);
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.0f;
    }
    float iscale = float(-nmax) / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = int8_t(l + nmax);
        const float w = weights ? weights[i] : x[i] * x[i];
        sumlx += w * x[i] * float(l);
        suml2 += w * float(l) * float(l);
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;  // the fit's explained energy: larger is a smaller weighted error
    for (int step = -9; step <= 9; ++step) {
        if (step == 0) continue;
        iscale = -(float(nmax) + 0.1f * float(step)) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = weights ? weights[i] : x[i] * x[i];
            sumlx += w * x[i] * float(l);
            suml2 += w * float(l) * float(l);
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i)
                L[i] = int8_t(nmax + std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

namespace {

// Q3_K's fit (ggml's make_q3_quants with do_rmse): start from nmax/max, then move single levels
// while that improves the x²-weighted least-squares fit, for at most five passes.
float fit_symmetric_by_moves(int n, int nmax, const float* x, int8_t* L) {
    float amax;
    const float max = signed_absmax(n, x, &amax);
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.0f;
    }
    const float iscale = float(-nmax) / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = int8_t(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * float(l);
        suml2 += w * float(l) * float(l);
    }
    for (int pass = 0; pass < 5; ++pass) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * float(L[i]);
            if (slx > 0.0f) {
                float sl2 = suml2 - w * float(L[i]) * float(L[i]);
                // The level this element would take under the scale fitted to all the others.
                const int new_l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * float(new_l);
                    sl2 += w * float(new_l) * float(new_l);
                    if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = int8_t(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (n_changed == 0) break;
    }
    for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace

// The min is never positive on the x side (0 must stay reachable), and nstep+1 trial inverse scales
// from (nmax + rmin) / range upwards are each refitted by weighted least squares; the trial with the
// smallest weighted error (absolute if use_mad, else squared) wins.
ScaleMin fit_scale_min(int n, int nmax, const float* x, const float* weights, uint8_t* L, float rmin, float rdelta,
                       int nstep, bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if (min > 0.0f) min = 0.0f;
    if (max == min) {
        std::fill(L, L + n, uint8_t(0));
        return {0.0f, -min};
    }
    auto error_of = [&](float scale, float offset, const uint8_t* levels) {
        float error = 0.0f;
        for (int i = 0; i < n; ++i) {
            float diff = scale * float(levels[i]) + offset - x[i];
            diff = use_mad ? std::fabs(diff) : diff * diff;
            error += weights[i] * diff;
        }
        return error;
    };
    float iscale = float(nmax) / (max - min);
    float scale = 1.0f / iscale;
    for (int i = 0; i < n; ++i) L[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
    float best_error = error_of(scale, min, L);

    uint8_t trial[32];
    for (int step = 0; step <= nstep; ++step) {
        iscale = (rmin + rdelta * float(step) + float(nmax)) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            trial[i] = uint8_t(l);
            const float w = weights[i];
            sum_l += w * float(l);
            sum_l2 += w * float(l) * float(l);
            sum_xl += w * float(l) * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (det > 0.0f) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
            if (this_min > 0.0f) {
                this_min = 0.0f;
                this_scale = sum_xl / sum_l2;
            }
            const float error = error_of(this_scale, this_min, trial);
            if (error < best_error) {
                std::copy(trial, trial + n, L);
                best_error = error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    return {scale, -min};
}

namespace {

// Q2_K and Q3_K keep 2 bits per value: byte l of each 32-byte half holds elements l, l+32, l+64, l+96.
void pack_2bit(const uint8_t* L, uint8_t qs[64]) {
    for (int half = 0; half < 2; ++half) {
        const uint8_t* q = L + 128 * half;
        for (int l = 0; l < 32; ++l)
            qs[32 * half + l] = uint8_t(q[l] | (q[l + 32] << 2) | (q[l + 64] << 4) | (q[l + 96] << 6));
    }
}

// Q4_K/Q5_K's eight 6-bit scales and mins in 12 bytes: sub-blocks 0-3 whole in bytes 0-7, sub-blocks
// 4-7 with their low nibbles in bytes 8-11 and their top two bits in the spare bits of bytes 0-7.
void pack_k4_scales(const uint8_t ls[8], const uint8_t lm[8], uint8_t packed[12]) {
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            packed[j] = ls[j];
            packed[j + 4] = lm[j];
        } else {
            packed[j + 4] = uint8_t((ls[j] & 0x0f) | ((lm[j] & 0x0f) << 4));
            packed[j - 4] = uint8_t(packed[j - 4] | ((ls[j] >> 4) << 6));
            packed[j] = uint8_t(packed[j] | ((lm[j] >> 4) << 6));
        }
    }
}

// Q4_K and Q5_K's reference fit, which differ only in the level count and the search: each 32-value
// sub-block fitted with weights (rms + |x|), then its scale and min quantized to 6 bits against the
// largest of each. d and dmin come back as floats, before their half rounding.
struct K4Params {
    int nmax;
    float rmin, rdelta;
    int nstep;
};

void fit_k4_reference(const float* x, const K4Params& p, uint8_t L[256], uint8_t ls[8], uint8_t lm[8], float* d,
                      float* dmin) {
    float scales[8], mins[8];
    float max_scale = 0.0f, max_min = 0.0f;  // the min is subtracted, so both are non-negative
    for (int j = 0; j < 8; ++j) {
        const float* xs = x + 32 * j;
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
        const float av_x = std::sqrt(sum_x2 / 32.0f);
        float weights[32];
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
        const ScaleMin fit = fit_scale_min(32, p.nmax, xs, weights, L + 32 * j, p.rmin, p.rdelta, p.nstep, false);
        scales[j] = fit.scale;
        mins[j] = fit.min;
        if (fit.scale > max_scale) max_scale = fit.scale;
        if (fit.min > max_min) max_min = fit.min;
    }

    const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < 8; ++j) {
        // ggml stores nearest_int's result in a uint8_t before clamping; the conversion is kept.
        ls[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
        lm[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
    }
    *d = max_scale / 63.0f;
    *dmin = max_min / 63.0f;
}

// Stores Q4_K/Q5_K's scales, mins and super-scales, then re-fits the levels 0..nmax to them. The
// scales are read back from the packed bytes, as ggml does: that differs from ls/lm only when one
// exceeds 63 (a negative level wrapped), which the weighted Q4_K passes through unclamped.
void requantize_k4(const float* x, int nmax, const uint8_t ls[8], const uint8_t lm[8], float d_block,
                   float dmin_block, uint8_t L[256], uint16_t* d_out, uint16_t* dmin_out, uint8_t packed[12]) {
    std::memset(packed, 0, 12);
    pack_k4_scales(ls, lm, packed);
    *d_out = f32_to_f16(d_block);
    *dmin_out = f32_to_f16(dmin_block);

    const float d = f16_to_f32(*d_out), dmin = f16_to_f32(*dmin_out);
    for (int j = 0; j < 8; ++j) {
        int sc, m;
        k4_scale_min(j, packed, &sc, &m);
        const float scale = d * float(sc);
        if (scale == 0.0f) continue;  // levels from the fit stay: any level decodes the same
        const float min = dmin * float(m);
        for (int l = 0; l < 32; ++l)
            L[32 * j + l] = uint8_t(std::clamp(nearest_int((x[32 * j + l] + min) / scale), 0, nmax));
    }
}

// Q6_K with or without importance: ggml's two paths differ only in the fit's weights (the importance
// as given, not scaled by the block's spread as the other k-quants do; x² without it).
void quantize_q6_k_blocks(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock) {
        const float* weights = importance ? importance + i * kSuperBlock : nullptr;
        int8_t L[256];
        float scales[16];
        float max_scale = 0.0f, max_abs_scale = 0.0f;
        for (int j = 0; j < 16; ++j) {
            scales[j] = fit_symmetric(16, 32, in + 16 * j, weights ? weights + 16 * j : nullptr, L + 16 * j);
            if (std::fabs(scales[j]) > max_abs_scale) {
                max_abs_scale = std::fabs(scales[j]);
                max_scale = scales[j];
            }
        }

        BlockQ6_K b{};  // an all-zero block is ggml's encoding of a zero super-block
        if (max_abs_scale >= kGroupMaxEps) {
            // 8-bit signed scales; the largest in magnitude goes to -128, the level without a twin.
            const float iscale = -128.0f / max_scale;
            b.d = f32_to_f16(1.0f / iscale);
            for (int j = 0; j < 16; ++j) b.scales[j] = int8_t(std::min(127, nearest_int(iscale * scales[j])));

            const float d = f16_to_f32(b.d);
            for (int j = 0; j < 16; ++j) {
                const float scale = d * float(b.scales[j]);
                if (scale == 0.0f) continue;
                for (int l = 0; l < 16; ++l)
                    L[16 * j + l] = int8_t(std::clamp(nearest_int(in[16 * j + l] / scale), -32, 31) + 32);
            }

            // Levels 0..63: low nibbles of elements l and l+64 share ql[l], l+32 and l+96 share ql[l+32];
            // the four top-bit pairs go to qh[l]. The same again for the second 128.
            for (int half = 0; half < 2; ++half) {
                const int8_t* q = L + 128 * half;
                uint8_t* ql = b.ql + 64 * half;
                uint8_t* qh = b.qh + 32 * half;
                for (int l = 0; l < 32; ++l) {
                    ql[l] = uint8_t((q[l] & 0x0f) | ((q[l + 64] & 0x0f) << 4));
                    ql[l + 32] = uint8_t((q[l + 32] & 0x0f) | ((q[l + 96] & 0x0f) << 4));
                    qh[l] = uint8_t((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                                    ((q[l + 96] >> 4) << 6));
                }
            }
        }
        store_block(blocks, i, b);
    }
}

}  // namespace

void requantize_q2_k(const float* x, uint8_t L[256], BlockQ2_K& b) {
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    for (int j = 0; j < 16; ++j) {
        const float scale = d * float(b.scales[j] & 0x0f);
        if (scale == 0.0f) continue;
        const float min = dmin * float(b.scales[j] >> 4);
        for (int l = 0; l < 16; ++l)
            L[16 * j + l] = uint8_t(std::clamp(nearest_int((x[16 * j + l] + min) / scale), 0, 3));
    }
    pack_2bit(L, b.qs);
}

void requantize_q3_k(const float* x, const int8_t biased[16], float d, int8_t L[256], BlockQ3_K& b) {
    // Low nibbles: sub-blocks 0-7 in bytes 0-7, 8-15 in their high halves; the top two bits of
    // sub-block j go to byte 8 + j % 4 at bit 2 * (j / 4).
    std::memset(b.scales, 0, sizeof b.scales);
    for (int j = 0; j < 16; ++j) {
        const int l = biased[j];
        if (j < 8)
            b.scales[j] = uint8_t(l & 0x0f);
        else
            b.scales[j - 8] = uint8_t(b.scales[j - 8] | ((l & 0x0f) << 4));
        b.scales[8 + j % 4] = uint8_t(b.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
    }
    b.d = f32_to_f16(d);

    const float d_all = f16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) {
        const float scale = d_all * float(biased[j] - 32);
        if (scale == 0.0f) continue;
        for (int l = 0; l < 16; ++l)
            L[16 * j + l] = int8_t(std::clamp(nearest_int(x[16 * j + l] / scale), -4, 3) + 4);
    }

    // Levels 0..7: the high bit of element j goes to bit j/32 of hmask[j % 32], the low two to qs.
    std::memset(b.hmask, 0, sizeof b.hmask);
    uint8_t low[256];
    for (int j = 0; j < 256; ++j) {
        if (L[j] > 3) b.hmask[j % 32] = uint8_t(b.hmask[j % 32] | (1u << (j / 32)));
        low[j] = uint8_t(L[j] & 3);
    }
    pack_2bit(low, b.qs);
}

void requantize_q4_k(const float* x, const uint8_t ls[8], const uint8_t lm[8], float d, float dmin, uint8_t L[256],
                     BlockQ4_K& b) {
    requantize_k4(x, 15, ls, lm, d, dmin, L, &b.d, &b.dmin, b.scales);
    // Each 32-byte group holds 64 values: the first 32 in the low nibbles, the next 32 in the high.
    for (int g = 0; g < 4; ++g)
        for (int l = 0; l < 32; ++l) b.qs[32 * g + l] = uint8_t(L[64 * g + l] | (L[64 * g + l + 32] << 4));
}

void requantize_q5_k(const float* x, const uint8_t ls[8], const uint8_t lm[8], float d, float dmin, uint8_t L[256],
                     BlockQ5_K& b) {
    requantize_k4(x, 31, ls, lm, d, dmin, L, &b.d, &b.dmin, b.scales);
    // As Q4_K for the low nibbles; the fifth bit of sub-block s goes to bit s of qh.
    std::memset(b.qh, 0, sizeof b.qh);
    for (int g = 0; g < 4; ++g) {
        for (int l = 0; l < 32; ++l) {
            const int lo = L[64 * g + l], hi = L[64 * g + l + 32];
            b.qs[32 * g + l] = uint8_t((lo & 0x0f) | ((hi & 0x0f) << 4));
            b.qh[l] = uint8_t(b.qh[l] | ((lo >> 4) << (2 * g)) | ((hi >> 4) << (2 * g + 1)));
        }
    }
}

void quantize_q2_k(const float* in, uint8_t* blocks, size_t n_blocks) {
    constexpr float kLevels4 = 15.0f;  // scales and mins are 4-bit
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock) {
        uint8_t L[256];
        float scales[16], mins[16];
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < 16; ++j) {
            float weights[16];
            for (int l = 0; l < 16; ++l) weights[l] = std::fabs(in[16 * j + l]);
            const ScaleMin fit = fit_scale_min(16, 3, in + 16 * j, weights, L + 16 * j, -0.5f, 0.1f, 15, true);
            scales[j] = fit.scale;
            mins[j] = fit.min;
            if (fit.scale > max_scale) max_scale = fit.scale;
            if (fit.min > max_min) max_min = fit.min;
        }

        BlockQ2_K b{};
        if (max_scale > 0.0f) {
            const float iscale = kLevels4 / max_scale;
            for (int j = 0; j < 16; ++j) b.scales[j] = uint8_t(nearest_int(iscale * scales[j]));
            b.d = f32_to_f16(max_scale / kLevels4);
        } else {
            b.d = f32_to_f16(0.0f);
        }
        if (max_min > 0.0f) {
            const float iscale = kLevels4 / max_min;
            for (int j = 0; j < 16; ++j) b.scales[j] = uint8_t(b.scales[j] | (nearest_int(iscale * mins[j]) << 4));
            b.dmin = f32_to_f16(max_min / kLevels4);
        } else {
            b.dmin = f32_to_f16(0.0f);
        }
        requantize_q2_k(in, L, b);
        store_block(blocks, i, b);
    }
}

void quantize_q3_k(const float* in, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock) {
        int8_t L[256];
        float scales[16];
        float max_scale = 0.0f, amax = 0.0f;
        for (int j = 0; j < 16; ++j) {
            scales[j] = fit_symmetric_by_moves(16, 4, in + 16 * j, L + 16 * j);
            if (std::fabs(scales[j]) > amax) {
                amax = std::fabs(scales[j]);
                max_scale = scales[j];
            }
        }

        // With every scale zero the block keeps zero scale bytes and d, as ggml's does.
        int8_t biased[16] = {};
        float d = 0.0f;
        if (max_scale != 0.0f) {
            // The scale of largest magnitude goes to -32, the level without a positive twin.
            const float iscale = -32.0f / max_scale;
            for (int j = 0; j < 16; ++j)
                biased[j] = int8_t(std::clamp(int(int8_t(nearest_int(iscale * scales[j]))), -32, 31) + 32);
            d = 1.0f / iscale;
        }
        BlockQ3_K b{};
        requantize_q3_k(in, biased, d, L, b);
        store_block(blocks, i, b);
    }
}

void quantize_q4_k(const float* in, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock) {
        uint8_t L[256], ls[8], lm[8];
        float d, dmin;
        fit_k4_reference(in, {15, -1.0f, 0.1f, 20}, L, ls, lm, &d, &dmin);
        BlockQ4_K b{};
        requantize_q4_k(in, ls, lm, d, dmin, L, b);
        store_block(blocks, i, b);
    }
}

void quantize_q5_k(const float* in, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock) {
        uint8_t L[256], ls[8], lm[8];
        float d, dmin;
        fit_k4_reference(in, {31, -0.5f, 0.1f, 15}, L, ls, lm, &d, &dmin);
        BlockQ5_K b{};
        requantize_q5_k(in, ls, lm, d, dmin, L, b);
        store_block(blocks, i, b);
    }
}

void quantize_q6_k(const float* in, uint8_t* blocks, size_t n_blocks) { quantize_q6_k_blocks(in, nullptr, blocks, n_blocks); }

void quantize_q6_k_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_q6_k_blocks(in, importance, blocks, n_blocks);
}

}  // namespace rill
