// IQ2_XXS, IQ2_XS and IQ2_S quantizers: ggml's quantize_row_iq2_{xxs,xs,s}_impl, operation for
// operation, so the bytes match llama-quantize's. Each group of 8 magnitudes is rounded onto the odd
// lattice 1, 3, 5 (levels 0..2); a level vector that is not a grid point is replaced by the best of
// its nearest grid points (iq_neighbours.h). Signs are stored separately: IQ2_XXS and IQ2_XS keep 7
// bits per 8 and make the count of negatives even by flipping the least important value; IQ2_S
// keeps all 8. Each sub-block tries a range of scales and keeps the one whose assignment fits best
// in weighted least squares; the sub-block scales are then stored as 4-bit multiples of a half.
#include <cfloat>
#include <cmath>
#include <cstring>

#include "block_layouts.h"
#include "fp16.h"
#include "iq_neighbours.h"
#include "quantize.h"
#include "quantize_common.h"

namespace rill {
namespace {

constexpr int kLevels = 3;            // lattice values 1, 3, 5
constexpr int kTop = 2 * kLevels - 1;  // the largest lattice value, 5
constexpr float kGroupMaxEpsIQ2S = 1e-8f;  // IQ2_S's threshold

int clamp_level(int l, int hi) { return l < 0 ? 0 : (l > hi ? hi : l); }

// The level nearest id * x on the odd lattice: (id * x - 1) / 2 rounded, clamped to 0..2.
int lattice_level(float id, float x) { return clamp_level(nearest_int(0.5f * (id * x - 1)), kLevels - 1); }

uint16_t pack_levels(const int8_t* L) {
    uint16_t u = 0;
    for (int i = 0; i < 8; ++i) u = uint16_t(u | (L[i] << 2 * i));
    return u;
}

int grid_byte(uint64_t point, int i) { return int((point >> (8 * i)) & 0xff); }

// Among an off-grid vector's candidates, the grid point nearest x at this scale, each element's
// squared error weighted by `weight` (ggml passes the square roots of the fit weights here). Writes
// its levels to L. The first candidate stands in if no distance compares below FLT_MAX (non-finite
// input), where ggml would abort.
int best_neighbour(const IQ2SearchTables& t, uint16_t packed, const float* x, const float* weight, float scale,
                   int8_t* L) {
    const std::span<const uint16_t> candidates = t.neighbours_of(packed);
    float best_d2 = FLT_MAX;
    int best = candidates[0];
    for (const uint16_t g : candidates) {
        float d2 = 0;
        for (int i = 0; i < 8; ++i) {
            const float q = float(grid_byte(t.grid[g], i));
            const float diff = scale * q - x[i];
            d2 += weight[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = g;
        }
    }
    for (int i = 0; i < 8; ++i) L[i] = int8_t((grid_byte(t.grid[best], i) - 1) / 2);
    return best;
}

// Rounds 8 values onto the lattice at inverse scale id; an off-grid result is replaced by its best
// neighbour judged at `scale` (the caller's 1 / id). Returns whether the rounding was on the grid.
bool round_group(const IQ2SearchTables& t, const float* x, const float* waux, float id, float scale, int8_t* L) {
    for (int i = 0; i < 8; ++i) L[i] = int8_t(lattice_level(id, x[i]));
    const uint16_t u = pack_levels(L);
    if (t.grid_index(u) >= 0) return true;
    best_neighbour(t, u, x, waux, scale, L);
    return false;
}

// Weighted least-squares terms of x against lattice values 2L + 1.
void fit_sums(int n, const float* x, const float* weight, const int8_t* L, float* sumqx, float* sumq2) {
    *sumqx = 0;
    *sumq2 = 0;
    for (int i = 0; i < n; ++i) {
        const float w = weight[i];
        const float q = float(2 * L[i] + 1);
        *sumqx += w * x[i] * q;
        *sumq2 += w * q * q;
    }
}

// Weights of one super-block's values: importance times sqrt(sigma2 + x^2), where sigma2 is the
// mean square (IQ2_XXS, IQ2_XS) or twice it (IQ2_S). Without importance (IQ2_S only) sigma2 / 4 + x^2.
float super_block_sigma2(const float* x, float factor) {
    float sumx2 = 0;
    for (int i = 0; i < kSuperBlock; ++i) sumx2 += x[i] * x[i];
    return factor * sumx2 / float(kSuperBlock);
}

// Magnitudes and the 7-bit sign index of a group of 8, with the least important value's sign
// flipped if needed so the number of negatives is even (the eighth sign bit is implied).
uint8_t even_signs(const float* x, const float* weight, float* xval) {
    int negatives = 0;
    uint8_t s = 0;
    for (int i = 0; i < 8; ++i) {
        if (x[i] >= 0) {
            xval[i] = x[i];
        } else {
            xval[i] = -x[i];
            ++negatives;
            s = uint8_t(s | (1 << i));
        }
    }
    if (negatives % 2) {
        int imin = 0;
        float min = weight[0] * x[0] * x[0];
        for (int i = 1; i < 8; ++i) {
            const float ax = weight[i] * x[i] * x[i];
            if (ax < min) {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s = uint8_t(s ^ (1 << imin));
    }
    return uint8_t(s & 127);
}

// The scale search of IQ2_XS and IQ2_S for 16 magnitudes (two groups of 8) whose largest is max:
// 19 inverse scales (5 + 0.1 is) / max, keeping the best least-squares fit; then groups that were off
// the grid are rounded again at the chosen scale and the scale refitted. Leaves the levels in L.
float search_16(const IQ2SearchTables& t, const float* xval, const float* weight, const float* waux, float max,
                int8_t* L) {
    float best = 0;
    float scale = max / float(kTop);
    bool on_grid[2] = {true, true};
    int8_t trial[16];
    for (int is = -9; is <= 9; ++is) {
        const float id = (float(kTop) + float(is) * 0.1f) / max;
        const float this_scale = 1 / id;
        bool trial_on_grid[2];
        for (int k = 0; k < 2; ++k)
            trial_on_grid[k] = round_group(t, xval + 8 * k, waux + 8 * k, id, this_scale, trial + 8 * k);
        float sumqx, sumq2;
        fit_sums(16, xval, weight, trial, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            std::memcpy(L, trial, 16);
            on_grid[0] = trial_on_grid[0];
            on_grid[1] = trial_on_grid[1];
        }
    }
    if ((!on_grid[0] || !on_grid[1]) && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 2; ++k) {
            if (on_grid[k]) continue;
            round_group(t, xval + 8 * k, waux + 8 * k, id, scale, L + 8 * k);
        }
        float sumqx, sumq2;
        fit_sums(16, xval, weight, L, &sumqx, &sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    return scale;
}

// 4-bit sub-block scale s for d * (2s + 1).
int scale_nibble(float id, float scale) { return clamp_level(nearest_int(0.5f * (id * scale - 1)), 15); }

void quantize_block_iq2_xxs(const IQ2SearchTables& t, const float* x, const float* importance, BlockIQ2_XXS& y) {
    y.d = f32_to_f16(0.f);
    uint32_t q2[16] = {};
    float scales[8];
    float max_scale = 0;
    const float sigma2 = super_block_sigma2(x, 1.0f);

    for (int ib = 0; ib < 8; ++ib) {
        const float* xb = x + 32 * ib;
        const float* qw = importance + 32 * ib;
        float weight[32], waux[32], xval[32];
        int8_t L[32], trial[32];
        uint8_t signs[4];
        for (int i = 0; i < 32; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
        for (int k = 0; k < 4; ++k) signs[k] = even_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k);
        float max = xval[0];
        for (int i = 1; i < 32; ++i) max = max_of(max, xval[i]);
        if (max < kGroupMaxEps) {
            scales[ib] = 0;
            continue;
        }
        // A first scale from a plain 4-level fit, then 13 trial inverse scales around 5 / eff_max.
        float scale = fit_nonnegative(32, kLevels + 1, xval, weight, reinterpret_cast<uint8_t*>(L));
        const float eff_max = scale * float(kLevels);
        if (eff_max <= 0) {
            scales[ib] = 0;
            continue;
        }
        float best = 0;
        for (int is = -6; is <= 6; ++is) {
            const float id = (float(kTop) + float(is) * 0.1f) / eff_max;
            const float this_scale = 1 / id;
            for (int k = 0; k < 4; ++k) round_group(t, xval + 8 * k, waux + 8 * k, id, this_scale, trial + 8 * k);
            float sumqx, sumq2;
            fit_sums(32, xval, weight, trial, &sumqx, &sumq2);
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                std::memcpy(L, trial, 32);
            }
        }
        // Round every group again at the chosen scale and refit it.
        if (scale > 0) {
            const float id = 1 / scale;
            for (int k = 0; k < 4; ++k) round_group(t, xval + 8 * k, waux + 8 * k, id, scale, L + 8 * k);
            float sumqx, sumq2;
            fit_sums(32, xval, weight, L, &sumqx, &sumq2);
            if (sumq2 > 0) scale = sumqx / sumq2;
        }
        if (scale < 0) {  // cannot happen for magnitudes, but the stored scale is unsigned
            scale = -scale;
            for (int k = 0; k < 4; ++k) signs[k] = uint8_t(~signs[k] & 127);
        }
        for (int k = 0; k < 4; ++k) {
            const int g = t.grid_index(pack_levels(L + 8 * k));
            q2[2 * ib + 0] |= uint32_t(g) << 8 * k;
            q2[2 * ib + 1] |= uint32_t(signs[k]) << 7 * k;
        }
        scales[ib] = scale;
        max_scale = max_of(max_scale, scale);
    }

    if (!max_scale) {
        std::memset(y.qs, 0, sizeof y.qs);
        return;
    }
    const float d = max_scale / 31;
    y.d = f32_to_f16(d);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib) q2[2 * ib + 1] |= uint32_t(scale_nibble(id, scales[ib])) << 28;
    std::memcpy(y.qs, q2, sizeof y.qs);
}

void quantize_block_iq2_xs(const IQ2SearchTables& t, const float* x, const float* importance, BlockIQ2_XS& y) {
    y.d = f32_to_f16(0.f);
    std::memset(y.scales, 0, sizeof y.scales);
    uint16_t q2[32] = {};
    float scales[16];
    float max_scale = 0;
    const float sigma2 = super_block_sigma2(x, 1.0f);

    for (int ib = 0; ib < 16; ++ib) {
        const float* xb = x + 16 * ib;
        const float* qw = importance + 16 * ib;
        float weight[16], waux[16], xval[16];
        int8_t L[16] = {};
        uint8_t signs[2];
        for (int i = 0; i < 16; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        for (int i = 0; i < 16; ++i) waux[i] = std::sqrt(weight[i]);
        for (int k = 0; k < 2; ++k) signs[k] = even_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k);
        float max = xval[0];
        for (int i = 1; i < 16; ++i) max = max_of(max, xval[i]);
        if (max < kGroupMaxEps) {
            scales[ib] = 0;
            continue;
        }
        float scale = search_16(t, xval, weight, waux, max, L);
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 2; ++k) signs[k] = uint8_t(~signs[k] & 127);
        }
        for (int k = 0; k < 2; ++k) {
            const int g = t.grid_index(pack_levels(L + 8 * k));
            q2[2 * ib + k] = uint16_t(g | (signs[k] << 9));
        }
        scales[ib] = scale;
        max_scale = max_of(max_scale, scale);
    }

    if (!max_scale) {
        std::memset(y.qs, 0, sizeof y.qs);
        return;
    }
    const float d = max_scale / 31;
    y.d = f32_to_f16(d);
    const float id = 1 / d;
    for (int ib = 0; ib < 16; ++ib) {
        const int l = scale_nibble(id, scales[ib]);
        if (ib % 2 == 0) y.scales[ib / 2] = uint8_t(l);
        else y.scales[ib / 2] = uint8_t(y.scales[ib / 2] | (l << 4));
    }
    std::memcpy(y.qs, q2, sizeof y.qs);
}

void quantize_block_iq2_s(const IQ2SearchTables& t, const float* x, const float* importance, BlockIQ2_S& y) {
    std::memset(&y, 0, sizeof y);
    float scales[16];
    float max_scale = 0;
    const float sigma2 = super_block_sigma2(x, 2.0f);

    for (int ib = 0; ib < 16; ++ib) {
        const float* xb = x + 16 * ib;
        float weight[16], waux[16], xval[16];
        int8_t L[16] = {};
        uint8_t signs[2];
        if (importance) {
            const float* qw = importance + 16 * ib;
            for (int i = 0; i < 16; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        } else {
            for (int i = 0; i < 16; ++i) weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
        }
        for (int i = 0; i < 16; ++i) waux[i] = std::sqrt(weight[i]);
        // All 8 sign bits are stored, so no parity flip.
        split_signs(xb, 2, xval, signs);
        float max = xval[0];
        for (int i = 1; i < 16; ++i) max = max_of(max, xval[i]);
        if (max < kGroupMaxEpsIQ2S) {
            scales[ib] = 0;
            continue;
        }
        float scale = search_16(t, xval, weight, waux, max, L);
        if (scale < 0) {
            scale = -scale;
            for (int k = 0; k < 2; ++k) signs[k] = uint8_t(~signs[k]);
        }
        for (int k = 0; k < 2; ++k) {
            const int g = t.grid_index(pack_levels(L + 8 * k));
            const int i8 = 2 * ib + k;
            y.qs[i8] = uint8_t(g & 255);
            y.qh[i8 / 4] = uint8_t(y.qh[i8 / 4] | ((g >> 8) << 2 * (i8 % 4)));
            y.qs[kSuperBlock / 8 + i8] = signs[k];
        }
        scales[ib] = scale;
        max_scale = max_of(max_scale, scale);
    }

    if (!max_scale) return;
    const float d = max_scale / 31;
    y.d = f32_to_f16(d * 0.9875f);  // ggml's fudge factor
    const float id = 1 / d;
    for (int ib = 0; ib < 16; ++ib) {
        const int l = scale_nibble(id, scales[ib]);
        if (ib % 2 == 0) y.scales[ib / 2] = uint8_t(l);
        else y.scales[ib / 2] = uint8_t(y.scales[ib / 2] | (l << 4));
    }
}

}  // namespace

void quantize_iq2_xxs(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_super_blocks<BlockIQ2_XXS>(in, importance, blocks, n_blocks, quantize_block_iq2_xxs, iq2_search_tables(TensorType::IQ2_XXS));
}

void quantize_iq2_xs(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_super_blocks<BlockIQ2_XS>(in, importance, blocks, n_blocks, quantize_block_iq2_xs, iq2_search_tables(TensorType::IQ2_XS));
}

void quantize_iq2_s(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_super_blocks<BlockIQ2_S>(in, importance, blocks, n_blocks, quantize_block_iq2_s, iq2_search_tables(TensorType::IQ2_S));
}

}  // namespace rill
