// The quantize_row entry point, half-float rows, and the 32-element block types (Q4_0 .. Q8_0).
// These follow ggml's quantize_row_*_ref expression for expression: a scale stored as a half but
// applied as the float it was computed in, 1/d taken once per block, and the same truncating casts,
// so the output matches llama-quantize byte for byte.
#include "quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "block_layouts.h"
#include "fp16.h"
#include "quantize_common.h"

namespace rill {
namespace {

constexpr int kBlock = 32;

// The value of largest magnitude, sign kept; the first one wins a tie. Q4_0 and Q5_0 map it to
// their most negative level, which has no positive twin, so the extreme value is kept up to the
// half rounding of d.
float signed_absmax(const float* x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kBlock; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

struct Range {
    float min, max;
};

Range value_range(const float* x) {
    Range r{FLT_MAX, -FLT_MAX};
    for (int j = 0; j < kBlock; ++j) {
        if (x[j] < r.min) r.min = x[j];
        if (x[j] > r.max) r.max = x[j];
    }
    return r;
}

// ggml truncates with a cast to int8_t, then clamps to the top level. Clamping first gives the same
// level for every reachable value and keeps a NaN or huge product (1/d overflowed for a block of
// subnormals) from an undefined cast.
int truncate_level(float v, int top) {
    if (!(v >= 0.0f)) return 0;
    return v >= float(top) ? top : int(v);
}

void quantize_f32(const float* in, uint8_t* out, size_t n) { std::memcpy(out, in, n * sizeof(float)); }

void quantize_f16(const float* in, uint8_t* out, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_f16(in[i]);
        std::memcpy(out + 2 * i, &h, 2);
    }
}

void quantize_bf16(const float* in, uint8_t* out, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const uint16_t h = f32_to_bf16(in[i]);
        std::memcpy(out + 2 * i, &h, 2);
    }
}

}  // namespace

void quantize_q4_0(const float* in, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kBlock) {
        const float d = signed_absmax(in) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        BlockQ4_0 b{};
        b.d = f32_to_f16(d);
        for (int j = 0; j < 16; ++j) {
            // Adding 8.5 and truncating rounds half up onto 0..16; 16 (the extreme's positive twin) is clamped.
            const int q0 = truncate_level(in[j] * id + 8.5f, 15);
            const int q1 = truncate_level(in[j + 16] * id + 8.5f, 15);
            b.qs[j] = uint8_t(q0 | (q1 << 4));
        }
        store_block(blocks, i, b);
    }
}

void quantize_q4_1(const float* in, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kBlock) {
        const Range r = value_range(in);
        const float d = (r.max - r.min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        BlockQ4_1 b{};
        b.d = f32_to_f16(d);
        b.m = f32_to_f16(r.min);
        for (int j = 0; j < 16; ++j) {
            const int q0 = truncate_level((in[j] - r.min) * id + 0.5f, 15);
            const int q1 = truncate_level((in[j + 16] - r.min) * id + 0.5f, 15);
            b.qs[j] = uint8_t(q0 | (q1 << 4));
        }
        store_block(blocks, i, b);
    }
}

void quantize_q5_0(const float* in, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kBlock) {
        const float d = signed_absmax(in) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        BlockQ5_0 b{};
        b.d = f32_to_f16(d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
            const int q0 = truncate_level(in[j] * id + 16.5f, 31);
            const int q1 = truncate_level(in[j + 16] * id + 16.5f, 31);
            b.qs[j] = uint8_t((q0 & 0x0f) | ((q1 & 0x0f) << 4));
            set_high_bits(&qh, j, q0, q1);
        }
        std::memcpy(b.qh, &qh, sizeof qh);
        store_block(blocks, i, b);
    }
}

void quantize_q5_1(const float* in, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kBlock) {
        const Range r = value_range(in);
        const float d = (r.max - r.min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        BlockQ5_1 b{};
        b.d = f32_to_f16(d);
        b.m = f32_to_f16(r.min);
        uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
            // ggml does not clamp here; the rounding error of (max - min) * id cannot reach 31.5, so the
            // clamp only guards the format.
            const int q0 = truncate_level((in[j] - r.min) * id + 0.5f, 31);
            const int q1 = truncate_level((in[j + 16] - r.min) * id + 0.5f, 31);
            b.qs[j] = uint8_t((q0 & 0x0f) | ((q1 & 0x0f) << 4));
            set_high_bits(&qh, j, q0, q1);
        }
        std::memcpy(b.qh, &qh, sizeof qh);
        store_block(blocks, i, b);
    }
}

void quantize_q8_0(const float* in, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kBlock) {
        float amax = 0.0f;
        for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(in[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        BlockQ8_0 b{};
        b.d = f32_to_f16(d);
        // Round half away from zero (roundf), not to even: that is what ggml stores. |x * id| <= 127
        // up to rounding; the clamp keeps a NaN product (1/d overflowed) from an undefined cast.
        for (int j = 0; j < kBlock; ++j) {
            const float q = std::round(in[j] * id);
            b.qs[j] = int8_t(std::isnan(q) ? 0 : int(std::clamp(q, -127.0f, 127.0f)));
        }
        store_block(blocks, i, b);
    }
}

bool can_quantize(TensorType type) { return find_tensor_type(uint32_t(type)) != nullptr; }

bool needs_importance(TensorType type) {
    return type == TensorType::IQ2_XXS || type == TensorType::IQ2_XS || type == TensorType::IQ1_S;
}

namespace {

// The quantizer ggml runs with an importance matrix, or null where it ignores one (or has no other).
WeightedQuantizeFn weighted_quantizer(TensorType type) {
    switch (type) {
        case TensorType::Q4_0: return quantize_q4_0_weighted;
        case TensorType::Q4_1: return quantize_q4_1_weighted;
        case TensorType::Q5_0: return quantize_q5_0_weighted;
        case TensorType::Q5_1: return quantize_q5_1_weighted;
        case TensorType::Q2_K: return quantize_q2_k_weighted;
        case TensorType::Q3_K: return quantize_q3_k_weighted;
        case TensorType::Q4_K: return quantize_q4_k_weighted;
        case TensorType::Q5_K: return quantize_q5_k_weighted;
        case TensorType::Q6_K: return quantize_q6_k_weighted;
        case TensorType::IQ4_NL: return quantize_iq4_nl_weighted;
        case TensorType::IQ4_XS: return quantize_iq4_xs_weighted;
        case TensorType::IQ2_XXS: return quantize_iq2_xxs;
        case TensorType::IQ2_XS: return quantize_iq2_xs;
        case TensorType::IQ2_S: return quantize_iq2_s;
        case TensorType::IQ3_XXS: return quantize_iq3_xxs;
        case TensorType::IQ3_S: return quantize_iq3_s;
        case TensorType::IQ1_S: return quantize_iq1_s;
        case TensorType::IQ1_M: return quantize_iq1_m;
        default: return nullptr;
    }
}

// The grid-search types take a null importance themselves (their own no-imatrix weighting).
bool grid_search(TensorType type) {
    switch (type) {
        case TensorType::IQ2_XXS:
        case TensorType::IQ2_XS:
        case TensorType::IQ2_S:
        case TensorType::IQ3_XXS:
        case TensorType::IQ3_S:
        case TensorType::IQ1_S:
        case TensorType::IQ1_M: return true;
        default: return false;
    }
}

}  // namespace

void quantize_row(TensorType type, const float* in, uint8_t* out, size_t n, const float* importance) {
    const size_t n_blocks = n / traits(type).block_size;
    if (needs_importance(type) && !importance)
        throw std::invalid_argument("quantize: " + std::string(traits(type).name) + " needs an importance matrix (rill imatrix makes one)");
    if (const WeightedQuantizeFn weighted = weighted_quantizer(type); weighted && (importance || grid_search(type)))
        return weighted(in, importance, out, n_blocks);
    QuantizeFn blocked = nullptr;
    switch (type) {
        case TensorType::F32: return quantize_f32(in, out, n);
        case TensorType::F16: return quantize_f16(in, out, n);
        case TensorType::BF16: return quantize_bf16(in, out, n);
        case TensorType::Q4_0: blocked = quantize_q4_0; break;
        case TensorType::Q4_1: blocked = quantize_q4_1; break;
        case TensorType::Q5_0: blocked = quantize_q5_0; break;
        case TensorType::Q5_1: blocked = quantize_q5_1; break;
        case TensorType::Q8_0: blocked = quantize_q8_0; break;
        case TensorType::Q2_K: blocked = quantize_q2_k; break;
        case TensorType::Q3_K: blocked = quantize_q3_k; break;
        case TensorType::Q4_K: blocked = quantize_q4_k; break;
        case TensorType::Q5_K: blocked = quantize_q5_k; break;
        case TensorType::Q6_K: blocked = quantize_q6_k; break;
        case TensorType::IQ4_NL: blocked = quantize_iq4_nl; break;
        case TensorType::IQ4_XS: blocked = quantize_iq4_xs; break;
        case TensorType::MXFP4: blocked = quantize_mxfp4; break;
        case TensorType::TQ1_0: blocked = quantize_tq1_0; break;
        case TensorType::TQ2_0: blocked = quantize_tq2_0; break;
        default: break;
    }
    if (!blocked) throw std::invalid_argument("quantize: rill cannot write " + std::string(traits(type).name));
    blocked(in, out, n_blocks);
}

}  // namespace rill
