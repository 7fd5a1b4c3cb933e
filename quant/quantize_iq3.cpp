// IQ3_XXS and IQ3_S quantizers, reproducing ggml's quantize_iq3_xxs / quantize_iq3_s byte for byte.
// Both split a 256-value super-block into 32-value sub-blocks and store magnitudes as grid points of
// four values on the odd lattice 2l+1 (l = 0..7), signs separately, and one 4-bit scale per
// sub-block against a half-float super-scale. Per sub-block, 2·span+1 trial inverse scales are
// tried; each rounds every group of four to the lattice, replaces an off-grid group by its best
// nearby grid point (iq3_neighbours.h), and the trial whose assignment explains the most weighted
// energy wins. The formats differ in the grid (256 or 512 points), the sign storage (7 bits with an
// even-parity trick, or all 8), the trial range, and the super-scale's fudge factor.
//
// The float operations follow ggml's order exactly (this library builds with -ffp-contract=off), as
// the bytes depend on every rounding: scale ties and neighbour ties are broken by first occurrence.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "block_layouts.h"
#include "fp16.h"
#include "iq3_neighbours.h"
#include "quantize.h"
#include "quantize_common.h"

namespace rill {
namespace {

constexpr int kSub = 32;                      // values sharing one 4-bit scale
constexpr int kGroups = kSub / 4;             // grid points per sub-block
constexpr int kSignBytes = kSub / 8;          // sign groups of 8 per sub-block
constexpr int kSubBlocks = kSuperBlock / kSub;
constexpr int kMaxLevel = 7;                  // lattice levels 0..7, values 1, 3, ..., 15
constexpr float kTopValue = 15.0f;            // 2·kMaxLevel + 1: the first guess maps max onto it
constexpr float kXXSGroupMaxEps = 1e-8f;      // IQ3_XXS treats a sub-block below this as zero

struct SearchParams {
    int trial_span;       // inverse scales (15 + 0.2·t)/max for t in -span..span
    bool requantize_all;  // after the search, re-round every group (IQ3_S) or only off-grid ones (IQ3_XXS)
};

constexpr SearchParams kXXSParams{15, false};
constexpr SearchParams kSParams{9, true};

// Sums of squares of the super-block feed the imatrix weighting: each value's error counts by its
// column importance times sqrt(2·mean(x²) + x²). Without importance the weight is x².
float weighting_sigma2(const float* x) {
    float sumx2 = 0.0f;
    for (int i = 0; i < kSuperBlock; ++i) sumx2 += x[i] * x[i];
    return 2.0f * sumx2 / float(kSuperBlock);
}

void sub_block_weights(const float* x, const float* importance, float sigma2, float* weight, float* root) {
    if (importance) {
        for (int i = 0; i < kSub; ++i) weight[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
    } else {
        for (int i = 0; i < kSub; ++i) weight[i] = x[i] * x[i];
    }
    // The neighbour search weighs squared errors by the root of the weight, as ggml's does.
    for (int i = 0; i < kSub; ++i) root[i] = std::sqrt(weight[i]);
}

// Rounds four magnitudes at inverse scale `id` to levels and returns their packed level vector.
uint16_t round_group(const float* xval, float id, int8_t* levels) {
    uint16_t packed = 0;
    for (int i = 0; i < 4; ++i) {
        const int l = std::clamp(nearest_int(0.5f * (id * xval[i] - 1.0f)), 0, kMaxLevel);
        levels[i] = int8_t(l);
        packed = uint16_t(packed | (l << (3 * i)));
    }
    return packed;
}

// For an off-grid level vector: the candidate grid point closest to the values at `scale`, by error
// weighted with `root`; the first of equals wins. Writes its levels and returns its index.
int best_neighbour(const IQ3Lattice& lattice, uint16_t packed, const float* xval, const float* root, float scale,
                   int8_t* levels) {
    const uint16_t* list = lattice.candidates(packed);
    const int count = list[0];
    float best_d2 = FLT_MAX;
    int best = list[1];  // only kept if every error is non-finite, where ggml would abort
    for (int j = 1; j <= count; ++j) {
        const std::array<float, 4>& point = lattice.points[list[j]];
        float d2 = 0.0f;
        for (int i = 0; i < 4; ++i) {
            const float diff = scale * point[size_t(i)] - xval[i];
            d2 += root[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = list[j];
        }
    }
    for (int i = 0; i < 4; ++i) levels[i] = int8_t((lattice.levels[best] >> (3 * i)) & 7);
    return best;
}

// Rounds all four-value groups at inverse scale `id` onto the grid (off-grid groups take their best
// neighbour at `scale`); groups with skip[k] set are left as they are. Records which were on grid.
void assign_groups(const IQ3Lattice& lattice, const float* xval, const float* root, float id, float scale,
                   const bool* skip, int8_t* levels, bool* on_grid) {
    for (int k = 0; k < kGroups; ++k) {
        if (skip && skip[k]) continue;
        const uint16_t packed = round_group(xval + 4 * k, id, levels + 4 * k);
        on_grid[k] = lattice.map[packed] >= 0;
        if (!on_grid[k]) best_neighbour(lattice, packed, xval + 4 * k, root + 4 * k, scale, levels + 4 * k);
    }
}

// Weighted least-squares sums of the magnitudes against the lattice values 2l+1.
void fit_sums(const float* xval, const float* weight, const int8_t* levels, float* sumqx, float* sumq2) {
    float qx = 0.0f, q2 = 0.0f;
    for (int i = 0; i < kSub; ++i) {
        const float w = weight[i];
        const float q = float(2 * levels[i] + 1);
        qx += w * xval[i] * q;
        q2 += w * q * q;
    }
    *sumqx = qx;
    *sumq2 = q2;
}

// The scale and levels of one sub-block whose largest magnitude is max > 0. Every level vector left
// in `levels` is a grid point.
float fit_sub_block(const IQ3Lattice& lattice, const SearchParams& params, const float* xval, const float* weight,
                    const float* root, float max, int8_t* levels) {
    std::memset(levels, 0, kSub);
    bool on_grid[kGroups];
    // IQ3_S starts by assuming every group off grid, so a search that accepts nothing still
    // re-rounds all groups at the first-guess scale; IQ3_XXS then keeps all levels at zero.
    std::fill(on_grid, on_grid + kGroups, !params.requantize_all);
    float best = 0.0f;
    float scale = max / kTopValue;
    int8_t trial[kSub];
    bool trial_on_grid[kGroups];
    for (int t = -params.trial_span; t <= params.trial_span; ++t) {
        const float id = (kTopValue + float(t) * 0.2f) / max;
        assign_groups(lattice, xval, root, id, 1.0f / id, nullptr, trial, trial_on_grid);
        float sumqx, sumq2;
        fit_sums(xval, weight, trial, &sumqx, &sumq2);
        // Maximising sumqx²/sumq2 minimises the weighted error at the least-squares scale.
        if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            std::memcpy(levels, trial, kSub);
            std::copy(trial_on_grid, trial_on_grid + kGroups, on_grid);
        }
    }

    // The winning trial's neighbours were picked at that trial's scale; re-round at the fitted scale.
    const bool any_off_grid = std::find(on_grid, on_grid + kGroups, false) != on_grid + kGroups;
    if (any_off_grid && scale > 0.0f) {
        bool scratch[kGroups];
        assign_groups(lattice, xval, root, 1.0f / scale, scale, params.requantize_all ? nullptr : on_grid, levels,
                      scratch);
        float sumqx, sumq2;
        fit_sums(xval, weight, levels, &sumqx, &sumq2);
        if (sumq2 > 0.0f) scale = sumqx / sumq2;
    }
    return scale;
}

int grid_index(const IQ3Lattice& lattice, const int8_t* levels) {
    uint16_t packed = 0;
    for (int i = 0; i < 4; ++i) packed = uint16_t(packed | (levels[i] << (3 * i)));
    return lattice.map[packed];  // a grid point by construction (fit_sub_block's promise)
}

// The 4-bit code s for which d·(2s+1) comes nearest a sub-block scale (d before its fudge factor).
int scale_code(float inverse_d, float scale) {
    return std::clamp(nearest_int(0.5f * (inverse_d * scale - 1.0f)), 0, 15);
}

void quantize_block_iq3_xxs(const IQ3Lattice& lattice, const float* x, const float* importance, BlockIQ3_XXS& out) {
    std::memset(&out, 0, sizeof out);
    uint32_t signs_and_scales[kSubBlocks] = {};
    float scales[kSubBlocks];
    float max_scale = 0.0f;
    const float sigma2 = weighting_sigma2(x);

    for (int ib = 0; ib < kSubBlocks; ++ib) {
        const float* xb = x + kSub * ib;
        float weight[kSub], root[kSub], xval[kSub];
        sub_block_weights(xb, importance ? importance + kSub * ib : nullptr, sigma2, weight, root);
        // Seven stored sign bits per 8 values; the eighth is implied by even parity. A group with an
        // odd number of negatives gets its least important value's sign flipped, and that value is
        // then fitted as a negative magnitude (which rounds to level 0).
        uint8_t signs[kSignBytes];
        for (int k = 0; k < kSignBytes; ++k) {
            const float* xg = xb + 8 * k;
            float* vg = xval + 8 * k;
            int negatives = 0;
            uint8_t bits = 0;
            for (int i = 0; i < 8; ++i) {
                if (xg[i] >= 0) {
                    vg[i] = xg[i];
                } else {
                    vg[i] = -xg[i];
                    ++negatives;
                    bits = uint8_t(bits | (1 << i));
                }
            }
            if (negatives % 2) {
                const float* wg = weight + 8 * k;
                int imin = 0;
                float min = wg[0] * xg[0] * xg[0];
                for (int i = 1; i < 8; ++i) {
                    const float importance_i = wg[i] * xg[i] * xg[i];
                    if (importance_i < min) {
                        min = importance_i;
                        imin = i;
                    }
                }
                vg[imin] = -vg[imin];
                bits = uint8_t(bits ^ (1 << imin));
            }
            signs[k] = bits & 127;
        }
        float max = xval[0];
        for (int i = 1; i < kSub; ++i) max = max_of(max, xval[i]);
        if (max < kXXSGroupMaxEps) {
            scales[ib] = 0.0f;  // indices, signs and scale code all stay zero
            continue;
        }
        int8_t levels[kSub];
        float scale = fit_sub_block(lattice, kXXSParams, xval, weight, root, max, levels);
        if (scale < 0.0f) {  // cannot happen with non-negative weights; ggml flips signs to keep scale unsigned
            scale = -scale;
            for (uint8_t& s : signs) s = uint8_t(~s & 127);
        }
        for (int k = 0; k < kGroups; ++k) out.qs[kGroups * ib + k] = uint8_t(grid_index(lattice, levels + 4 * k));
        signs_and_scales[ib] = uint32_t(signs[0]) | uint32_t(signs[1]) << 7 | uint32_t(signs[2]) << 14 |
                               uint32_t(signs[3]) << 21;
        scales[ib] = scale;
        max_scale = max_of(max_scale, scale);
    }
    if (!max_scale) {
        std::memset(&out, 0, sizeof out);
        return;
    }
    const float d = max_scale / 31.0f;
    out.d = f32_to_f16(d * 1.0125f);  // ggml's empirical fudge factor on the stored super-scale
    const float inverse_d = 1.0f / d;
    for (int ib = 0; ib < kSubBlocks; ++ib) signs_and_scales[ib] |= uint32_t(scale_code(inverse_d, scales[ib])) << 28;
    std::memcpy(out.qs + kSubBlocks * kGroups, signs_and_scales, sizeof signs_and_scales);
}

void quantize_block_iq3_s(const IQ3Lattice& lattice, const float* x, const float* importance, BlockIQ3_S& out) {
    std::memset(&out, 0, sizeof out);
    float scales[kSubBlocks];
    float max_scale = 0.0f;
    const float sigma2 = weighting_sigma2(x);
    // ggml advances its index and sign write positions only past sub-blocks it fits, so an all-zero
    // sub-block shifts the following sub-blocks' indices and signs down (qh and scales stay put).
    // Reproduced for byte identity; rill's dequantizer then misplaces them exactly as ggml's does.
    int qs_pos = 0, signs_pos = 0;

    for (int ib = 0; ib < kSubBlocks; ++ib) {
        const float* xb = x + kSub * ib;
        float weight[kSub], root[kSub], xval[kSub];
        sub_block_weights(xb, importance ? importance + kSub * ib : nullptr, sigma2, weight, root);
        uint8_t signs[kSignBytes];
        split_signs(xb, kSignBytes, xval, signs);
        float max = xval[0];
        for (int i = 1; i < kSub; ++i) max = max_of(max, xval[i]);
        if (!max) {
            scales[ib] = 0.0f;
            continue;
        }
        int8_t levels[kSub];
        float scale = fit_sub_block(lattice, kSParams, xval, weight, root, max, levels);
        if (scale < 0.0f) {  // unreachable with non-negative weights; kept as ggml has it
            scale = -scale;
            for (uint8_t& s : signs) s = uint8_t(~s);
        }
        for (int k = 0; k < kGroups; ++k) {
            const int index = grid_index(lattice, levels + 4 * k);
            out.qs[qs_pos + k] = uint8_t(index & 255);
            out.qh[ib] = uint8_t(out.qh[ib] | ((index >> 8) << k));
        }
        qs_pos += kGroups;
        std::memcpy(out.signs + signs_pos, signs, kSignBytes);
        signs_pos += kSignBytes;
        scales[ib] = scale;
        max_scale = max_of(max_scale, scale);
    }
    if (!max_scale) return;  // d stays zero; ggml keeps whatever indices and signs were written
    const float d = max_scale / 31.0f;
    out.d = f32_to_f16(d * 1.033f);  // ggml's empirical fudge factor on the stored super-scale
    const float inverse_d = 1.0f / d;
    for (int ib = 0; ib < kSubBlocks; ib += 2)
        out.scales[ib / 2] = uint8_t(scale_code(inverse_d, scales[ib]) | scale_code(inverse_d, scales[ib + 1]) << 4);
}

}  // namespace

void quantize_iq3_xxs(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_super_blocks<BlockIQ3_XXS>(in, importance, blocks, n_blocks, quantize_block_iq3_xxs, iq3_lattice(256));
}

void quantize_iq3_s(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_super_blocks<BlockIQ3_S>(in, importance, blocks, n_blocks, quantize_block_iq3_s, iq3_lattice(512));
}

}  // namespace rill
