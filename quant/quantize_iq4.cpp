// IQ4_NL and IQ4_XS quantizers: ggml's quantize_row_iq4_nl_impl as llama-quantize runs it, seven trial
// scales either side of the first guess, each value weighted by x² or, with an importance matrix, by
// its column's importance. Both pick, per group of 32, the scale whose nearest-level assignment best
// fits the group in weighted least squares;
// IQ4_NL stores that scale as a half, IQ4_XS quantizes the eight scales of a super-block to 6 bits
// against one half-float super-scale and re-assigns the levels under the scale as stored.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "block_layouts.h"
#include "fp16.h"
#include "quantize.h"
#include "quantize_common.h"

namespace rill {
namespace {

constexpr int kGroup = 32;
constexpr int kTrials = 7;  // ggml's ntry for quantize_iq4_nl / quantize_iq4_xs

// Index of the level nearest x; a value exactly halfway goes to the upper level. Comparing 2x with
// the sum of neighbours is exact, and agrees with ggml's subtract-and-compare for every float.
int nearest_level(float x) {
    const float x2 = x + x;
    int index = 0;
    for (int step = 8; step > 0; step /= 2) {
        const int j = index + step;
        if (x2 >= float(kIQ4Levels[j - 1] + kIQ4Levels[j])) index = j;
    }
    return index;
}

// Best scale for one group of 32. The first guess maps the value of largest magnitude to the
// extreme level -127 (it has no positive twin); then inverse scales (trial - 127) / max for trial in
// -7..7 are tried and the least-squares scale of the best-fitting assignment is kept.
float fit_group(const float* x, const float* weights) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kGroup; ++j) {
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    if (amax < kGroupMaxEps) return 0.0f;

    const auto fit_sums = [&](float id, float* sumqx, float* sumq2) {
        *sumqx = *sumq2 = 0.0f;
        for (int j = 0; j < kGroup; ++j) {
            const float q = float(kIQ4Levels[nearest_level(id * x[j])]);
            *sumqx += weights[j] * q * x[j];
            *sumq2 += weights[j] * q * q;
        }
    };
    float sumqx, sumq2;
    const float d0 = -max / float(kIQ4Levels[0]);
    fit_sums(1.0f / d0, &sumqx, &sumq2);
    float d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;  // explained energy: larger means a smaller weighted error
    for (int trial = -kTrials; trial <= kTrials; ++trial) {
        fit_sums(float(trial + kIQ4Levels[0]) / max, &sumqx, &sumq2);
        if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

// Two 4-bit indices per byte: element j in the low nibble of byte j, element j+16 in the high one.
void pack_group(const float* x, float inverse_scale, uint8_t qs[16]) {
    for (int j = 0; j < 16; ++j) {
        const int lo = nearest_level(inverse_scale * x[j]);
        const int hi = nearest_level(inverse_scale * x[j + 16]);
        qs[j] = uint8_t(lo | (hi << 4));
    }
}

// The weights of the groups of a super-block of `size` values (32 for IQ4_NL, 256 for IQ4_XS): x²
// without importance; with it, ggml's importance weighting with sigma2 twice the super-block's mean x².
void group_weights(const float* x, const float* importance, int size, float weights[]) {
    if (!importance) {
        for (int j = 0; j < size; ++j) weights[j] = x[j] * x[j];
        return;
    }
    float sigma2 = sum_squares(size_t(size), x);
    sigma2 *= 2.0f / float(size);  // scaled in place as ggml does: sum * (2 / size), not 2 * sum / size
    importance_weights(size, x, importance, sigma2, weights);
}

void quantize_iq4_nl_blocks(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kGroup) {
        float weights[kGroup];
        group_weights(in, importance ? importance + i * kGroup : nullptr, kGroup, weights);
        const float d = fit_group(in, weights);
        BlockIQ4_NL b{};
        b.d = f32_to_f16(d);
        // Levels are re-assigned under the float scale (not the half), as ggml does.
        pack_group(in, d != 0.0f ? 1.0f / d : 0.0f, b.qs);
        store_block(blocks, i, b);
    }
}

void quantize_iq4_xs_blocks(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    constexpr int kGroups = kSuperBlock / kGroup;
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock) {
        float weights[kSuperBlock];
        group_weights(in, importance ? importance + i * kSuperBlock : nullptr, kSuperBlock, weights);
        float scales[kGroups];
        float max_scale = 0.0f, amax_scale = 0.0f;
        for (int g = 0; g < kGroups; ++g) {
            scales[g] = fit_group(in + kGroup * g, weights + kGroup * g);
            if (std::fabs(scales[g]) > amax_scale) {
                amax_scale = std::fabs(scales[g]);
                max_scale = scales[g];
            }
        }

        BlockIQ4_XS b{};
        // Signed 6-bit group scales; the largest in magnitude goes to -32, the level without a twin.
        const float d = -max_scale / 32.0f;
        b.d = f32_to_f16(d);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int g = 0; g < kGroups; ++g) {
            const int l = std::clamp(nearest_int(id * scales[g]), -32, 31);
            // The group's levels follow its scale as stored, but in float: d itself, not its half.
            const float dl = d * float(l);
            pack_group(in + kGroup * g, dl != 0.0f ? 1.0f / dl : 0.0f, b.qs + 16 * g);
            const int biased = l + 32;
            b.scales_l[g / 2] = uint8_t(b.scales_l[g / 2] | ((biased & 0x0f) << (4 * (g % 2))));
            b.scales_h = uint16_t(b.scales_h | ((biased >> 4) << (2 * g)));
        }
        store_block(blocks, i, b);
    }
}

}  // namespace

void quantize_iq4_nl(const float* in, uint8_t* blocks, size_t n_blocks) {
    quantize_iq4_nl_blocks(in, nullptr, blocks, n_blocks);
}

void quantize_iq4_nl_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_iq4_nl_blocks(in, importance, blocks, n_blocks);
}

void quantize_iq4_xs(const float* in, uint8_t* blocks, size_t n_blocks) {
    quantize_iq4_xs_blocks(in, nullptr, blocks, n_blocks);
}

void quantize_iq4_xs_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks) {
    quantize_iq4_xs_blocks(in, importance, blocks, n_blocks);
}

}  // namespace rill
