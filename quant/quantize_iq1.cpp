// IQ1_S and IQ1_M quantizers: ggml's quantize_row_iq1_{s,m}_impl, operation for operation, so the
// bytes match llama-quantize's. Values become -1, 0 or +1 (plus a shared shift of ±1/8) times a
// sub-block scale. With three levels the best weighted least-squares assignment can be found
// exactly: sort the sub-block by value, and every assignment worth considering is a pair of cut
// points in that order, scored from prefix sums. The groups of 8 are then moved onto the 2048-point
// grid (the nearest grid point from iq_neighbours.h when the exact pattern is not in it).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>

#include "block_layouts.h"
#include "fp16.h"
#include "iq_grids.h"
#include "iq_neighbours.h"
#include "quantize.h"
#include "quantize_common.h"

namespace rill {
namespace {

constexpr float kGroupMaxEpsIQ1S = 1e-12f;  // below these a sub-block counts as zero
constexpr float kGroupMaxEpsIQ1M = 1e-7f;

// The three values a level stands for, with the shift added (kPlus) or subtracted (kMinus).
constexpr float kPlus[3] = {-1 + kIQ1Delta, kIQ1Delta, 1 + kIQ1Delta};
constexpr float kMinus[3] = {-1 - kIQ1Delta, -kIQ1Delta, 1 - kIQ1Delta};

int clamp_level(int l, int hi) { return l < 0 ? 0 : (l > hi ? hi : l); }

int grid_level(uint64_t point, int i) { return (int((point >> (8 * i)) & 0xff) - 1) / 2; }

uint16_t pack_levels(const int8_t* L) {
    uint16_t u = 0;
    for (int i = 0; i < 8; ++i) u = uint16_t(u | (L[i] << 2 * i));
    return u;
}

// The candidate grid point for an off-grid group that best fits x at this scale, values taken from
// `values` (kPlus or kMinus). If no distance compares below FLT_MAX (non-finite input) the first
// candidate is used; ggml would fall into a broken full-grid scan there.
int best_neighbour(const IQ2SearchTables& t, uint16_t packed, const float* x, const float* weight, float scale,
                   const float* values) {
    const std::span<const uint16_t> candidates = t.neighbours_of(packed);
    float best_score = FLT_MAX;
    int best = candidates[0];
    for (const uint16_t g : candidates) {
        float d2 = 0;
        for (int i = 0; i < 8; ++i) {
            const float q = values[grid_level(t.grid[g], i)];
            const float w = weight[i];
            const float diff = scale * q - x[i];
            d2 += w * diff * diff;
        }
        if (d2 < best_score) {
            best_score = d2;
            best = g;
        }
    }
    return best;
}

// Positions 0..n-1 ordered by value. ggml uses qsort comparing values only; glibc's qsort is a
// stable merge sort at these sizes, so equal values keep their positions' order.
template <int n>
void sort_by_value(const float* x, int* order) {
    std::iota(order, order + n, 0);
    std::stable_sort(order, order + n, [x](int a, int b) { return x[a] < x[b]; });
}

// Levels 0 / 1 / 2 for the sorted positions below i1 / from i1 to i2 / from i2 on.
template <int n>
void split_levels(const int* order, int i1, int i2, int8_t* L) {
    for (int j = 0; j < i1; ++j) L[order[j]] = 0;
    for (int j = i1; j < i2; ++j) L[order[j]] = 1;
    for (int j = i2; j < n; ++j) L[order[j]] = 2;
}

float super_block_sigma2(const float* x) {
    float sumx2 = 0;
    for (int i = 0; i < kSuperBlock; ++i) sumx2 += x[i] * x[i];
    return 2 * sumx2 / float(kSuperBlock);
}

void quantize_block_iq1_s(const IQ2SearchTables& t, const float* x, const float* importance, BlockIQ1_S& y) {
    constexpr int n = 32;
    y.d = f32_to_f16(0.f);
    std::memset(y.qs, 0, sizeof y.qs);
    std::memset(y.qh, 0, sizeof y.qh);
    float scales[kSuperBlock / n];
    int8_t shifts[kSuperBlock / n];
    float max_scale = 0;
    const float sigma2 = super_block_sigma2(x);

    for (int ib = 0; ib < kSuperBlock / n; ++ib) {
        const float* xb = x + n * ib;
        const float* qw = importance + n * ib;
        float weight[n];
        for (int i = 0; i < n; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        float max = std::fabs(xb[0]);
        for (int i = 1; i < n; ++i) max = max_of(max, std::fabs(xb[i]));
        if (max < kGroupMaxEpsIQ1S) {
            scales[ib] = 0;
            shifts[ib] = 1;
            continue;
        }
        int order[n];
        sort_by_value<n>(xb, order);
        float sumx[n + 1], sumw[n + 1];
        sumx[0] = sumw[0] = 0;
        for (int j = 0; j < n; ++j) {
            const int i = order[j];
            sumx[j + 1] = sumx[j] + weight[i] * xb[i];
            sumw[j + 1] = sumw[j] + weight[i];
        }
        // Every pair of cut points, with the shift either way; the score is (sum w x q)^2 / sum w q^2.
        float best_score = -FLT_MAX, scale = max;
        int besti1 = -1, besti2 = -1, best_shift = 0;
        for (int i1 = 0; i1 <= n; ++i1) {
            for (int i2 = i1; i2 <= n; ++i2) {
                for (const int shift : {1, -1}) {
                    const float* v = shift == 1 ? kPlus : kMinus;
                    const float sumqx = (sumx[i1] - sumx[0]) * v[0] + (sumx[i2] - sumx[i1]) * v[1] +
                                        (sumx[n] - sumx[i2]) * v[2];
                    const float sumq2 = (sumw[i1] - sumw[0]) * v[0] * v[0] + (sumw[i2] - sumw[i1]) * v[1] * v[1] +
                                        (sumw[n] - sumw[i2]) * v[2] * v[2];
                    if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                        scale = sumqx / sumq2;
                        best_score = scale * sumqx;
                        besti1 = i1;
                        besti2 = i2;
                        best_shift = shift;
                    }
                }
            }
        }
        if (besti1 < 0 || besti2 < 0 || best_shift == 0) {
            scales[ib] = 0;
            shifts[ib] = 1;
            continue;
        }
        int8_t L[n];
        split_levels<n>(order, besti1, besti2, L);
        if (scale < 0) {  // mirror the levels and the shift so the stored scale is positive
            for (int j = 0; j < n; ++j) L[j] = int8_t(2 - L[j]);
            scale = -scale;
            best_shift = -best_shift;
        }
        const float* values = best_shift == 1 ? kPlus : kMinus;
        bool all_on_grid = true;
        uint16_t index[n / 8];
        for (int k = 0; k < n / 8; ++k) {
            const uint16_t u = pack_levels(L + 8 * k);
            int g = t.grid_index(u);
            if (g < 0) {
                all_on_grid = false;
                g = best_neighbour(t, u, xb + 8 * k, weight + 8 * k, scale, values);
            }
            index[k] = uint16_t(g);
        }
        if (!all_on_grid) {  // refit the scale to the grid points actually used
            float sumqx = 0, sumq2 = 0;
            for (int k = 0; k < n / 8; ++k) {
                for (int j = 0; j < 8; ++j) {
                    const float w = weight[8 * k + j];
                    const float q = values[grid_level(t.grid[index[k]], j)];
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
            if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
        }
        uint16_t h = 0;
        for (int k = 0; k < n / 8; ++k) {
            y.qs[(n / 8) * ib + k] = uint8_t(index[k] & 255);
            h = uint16_t(h | ((index[k] >> 8) << 3 * k));
        }
        y.qh[ib] = h;
        scales[ib] = scale;
        shifts[ib] = int8_t(best_shift);
        max_scale = max_of(max_scale, scale);
    }

    if (!max_scale) return;
    const float d = max_scale / 15;
    y.d = f32_to_f16(d * 1.125f);  // ggml's fudge factor
    const float id = 1 / d;
    for (int ib = 0; ib < kSuperBlock / n; ++ib) {
        int l = clamp_level(nearest_int(0.5f * (id * scales[ib] - 1)), 7);
        if (shifts[ib] == -1) l |= 8;
        y.qh[ib] = uint16_t(y.qh[ib] | (l << 12));
    }
}

// IQ1_M's shift is chosen per group of 8: the sub-block of 16 has four sign combinations, numbered
// 0 (+,+), 1 (+,-), 2 (-,+), 3 (-,-) for (first group, second group).
const float* iq1m_values(int combo, int group) {
    const bool minus = group == 0 ? combo >= 2 : combo % 2 == 1;
    return minus ? kMinus : kPlus;
}

constexpr uint8_t kIQ1MShiftBits[4] = {0x00, 0x80, 0x08, 0x88};  // qh bits 3 and 7: group 0's, group 1's

void iq1m_weights(const float* xb, const float* importance, float sigma2, float* weight) {
    if (importance) {
        for (int i = 0; i < 16; ++i) weight[i] = importance[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
    } else {
        for (int i = 0; i < 16; ++i) weight[i] = xb[i] * xb[i];
    }
}

void quantize_block_iq1_m(const IQ2SearchTables& t, const float* x, const float* importance, BlockIQ1_M& y) {
    constexpr int n = 16;
    std::memset(&y, 0, sizeof y);
    float scales[kSuperBlock / n];
    int8_t shifts[kSuperBlock / n];
    float max_scale = 0;
    const float sigma2 = super_block_sigma2(x);

    for (int ib = 0; ib < kSuperBlock / n; ++ib) {
        const float* xb = x + n * ib;
        float weight[n];
        iq1m_weights(xb, importance ? importance + n * ib : nullptr, sigma2, weight);
        float max = std::fabs(xb[0]);
        for (int i = 1; i < n; ++i) max = max_of(max, std::fabs(xb[i]));
        if (max < kGroupMaxEpsIQ1M) {
            scales[ib] = 0;
            shifts[ib] = 0;
            continue;
        }
        int order[n];
        sort_by_value<n>(xb, order);
        // Each term w q x and w q^2 per sorted position, level and shift combination.
        float tx[3][4][n], t2[3][4][n];
        for (int j = 0; j < n; ++j) {
            const int i = order[j];
            for (int level = 0; level < 3; ++level) {
                for (int k = 0; k < 4; ++k) {
                    const float q = iq1m_values(k, i < n / 2 ? 0 : 1)[level];
                    tx[level][k][j] = weight[i] * q * xb[i];
                    t2[level][k][j] = weight[i] * q * q;
                }
            }
        }
        // ggml adds each split's terms from scratch in sorted order. The sums over the positions
        // below i2 depend only on i1, so they are shared across i2; only the rest is added per split,
        // in the same order, which leaves every sum bit-identical.
        float best_score = -FLT_MAX, scale = max;
        int besti1 = -1, besti2 = -1, best_k = -1;
        for (int i1 = 0; i1 <= n; ++i1) {
            float headx[4][n + 1], head2[4][n + 1];
            for (int k = 0; k < 4; ++k) {
                headx[k][0] = head2[k][0] = 0;
                for (int j = 0; j < n; ++j) {
                    const int level = j < i1 ? 0 : 1;
                    headx[k][j + 1] = headx[k][j] + tx[level][k][j];
                    head2[k][j + 1] = head2[k][j] + t2[level][k][j];
                }
            }
            for (int i2 = i1; i2 <= n; ++i2) {
                float sumqx[4], sumq2[4];
                for (int k = 0; k < 4; ++k) {
                    sumqx[k] = headx[k][i2];
                    sumq2[k] = head2[k][i2];
                    for (int j = i2; j < n; ++j) {
                        sumqx[k] += tx[2][k][j];
                        sumq2[k] += t2[2][k][j];
                    }
                }
                for (int k = 0; k < 4; ++k) {
                    if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > best_score * sumq2[k]) {
                        scale = sumqx[k] / sumq2[k];
                        best_score = scale * sumqx[k];
                        besti1 = i1;
                        besti2 = i2;
                        best_k = k;
                    }
                }
            }
        }
        if (besti1 < 0 || besti2 < 0 || best_k < 0) {
            scales[ib] = 0;
            shifts[ib] = 0;
            continue;
        }
        int8_t L[n];
        split_levels<n>(order, besti1, besti2, L);
        if (scale < 0) {  // mirror levels and both shifts
            for (int j = 0; j < n; ++j) L[j] = int8_t(2 - L[j]);
            scale = -scale;
            best_k = 3 - best_k;
        }
        bool all_on_grid = true;
        uint16_t index[2];
        for (int k = 0; k < 2; ++k) {
            const uint16_t u = pack_levels(L + 8 * k);
            int g = t.grid_index(u);
            if (g < 0) {
                all_on_grid = false;
                g = best_neighbour(t, u, xb + 8 * k, weight + 8 * k, scale, iq1m_values(best_k, k));
            }
            index[k] = uint16_t(g);
        }
        if (!all_on_grid) {
            float sumqx = 0, sumq2 = 0;
            for (int k = 0; k < 2; ++k) {
                const float* values = iq1m_values(best_k, k);
                for (int j = 0; j < 8; ++j) {
                    const float w = weight[8 * k + j];
                    const float q = values[grid_level(t.grid[index[k]], j)];
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
            if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
        }
        y.qs[2 * ib + 0] = uint8_t(index[0] & 255);
        y.qs[2 * ib + 1] = uint8_t(index[1] & 255);
        y.qh[ib] = uint8_t((index[0] >> 8) | ((index[1] >> 8) << 4));
        scales[ib] = scale;
        shifts[ib] = int8_t(best_k);
        max_scale = max_of(max_scale, scale);
    }

    if (!max_scale) return;

    // Quantize the sub-block scales to 3 bits against max / 15, then refit the super-block scale by
    // least squares over all 256 values as they will decode (before the half rounding).
    uint16_t sc[4] = {};
    float d = max_scale / 15;
    const float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int ib = 0; ib < kSuperBlock / n; ++ib) {
        const int l = clamp_level(nearest_int(0.5f * (id * scales[ib] - 1)), 7);
        sc[ib / 4] = uint16_t(sc[ib / 4] | (l << 3 * (ib % 4)));
        y.qh[ib] = uint8_t(y.qh[ib] | kIQ1MShiftBits[shifts[ib]]);
        const float* xb = x + n * ib;
        float weight[n];
        iq1m_weights(xb, importance ? importance + n * ib : nullptr, sigma2, weight);
        for (int k = 0; k < 2; ++k) {
            const float* values = iq1m_values(shifts[ib], k);
            const int g = y.qs[2 * ib + k] + ((y.qh[ib] << (8 - 4 * k)) & 0x700);
            for (int j = 0; j < 8; ++j) {
                const float w = weight[8 * k + j];
                const float q = values[grid_level(t.grid[size_t(g)], j)] * float(2 * l + 1);
                sumqx += w * q * xb[8 * k + j];
                sumq2 += w * q * q;
            }
        }
    }
    if (sumq2 > 0) d = sumqx / sumq2;
    const uint16_t half = f32_to_f16(d * 1.1125f);  // ggml's fudge factor
    // The half's nibbles go to the top 4 bits of the four scale words (iq1_m_scale_bits reads them).
    sc[0] = uint16_t(sc[0] | ((half & 0x000f) << 12));
    sc[1] = uint16_t(sc[1] | ((half & 0x00f0) << 8));
    sc[2] = uint16_t(sc[2] | ((half & 0x0f00) << 4));
    sc[3] = uint16_t(sc[3] | (half & 0xf000));
    for (int k = 0; k < 4; ++k) {
        y.scales[2 * k] = uint8_t(sc[k] & 0xff);
        y.scales[2 * k + 1] = uint8_t(sc[k] >> 8);
    }
}

}  // namespace

void quantize_iq1_s(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_super_blocks<BlockIQ1_S>(in, importance, blocks, n_blocks, quantize_block_iq1_s, iq2_search_tables(TensorType::IQ1_S));
}

void quantize_iq1_m(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_super_blocks<BlockIQ1_M>(in, importance, blocks, n_blocks, quantize_block_iq1_m, iq2_search_tables(TensorType::IQ1_M));
}

}  // namespace rill
