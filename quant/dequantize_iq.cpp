// Scalar reference dequantizers of the IQ1–IQ3 and ternary types. Each value is one or two roundings
// of (scale product) × (grid byte), in ggml's order, so the results are ggml's bit for bit.
#include "dequantize_iq.h"

#include <cstring>

#include "block_layouts.h"
#include "fp16.h"
#include "iq_grids.h"

namespace rill {
namespace {

template <typename Block>
Block load_block(const uint8_t* blocks, size_t i) {
    Block b;
    std::memcpy(&b, blocks + i * sizeof(Block), sizeof(Block));
    return b;
}

uint8_t grid_byte(uint64_t entry, int j) { return uint8_t(entry >> (8 * j)); }
uint8_t grid_byte(uint32_t entry, int j) { return uint8_t(entry >> (8 * j)); }

// Eight values of a grid entry, scaled and signed: bit j of `signs` negates value j.
void put8(float* out, float scale, uint64_t entry, uint8_t signs) {
    for (int j = 0; j < 8; ++j) out[j] = scale * float(grid_byte(entry, j)) * ((signs >> j) & 1 ? -1.0f : 1.0f);
}
// The same from two IQ3 entries of four values.
void put4x2(float* out, float scale, uint32_t first, uint32_t second, uint8_t signs) {
    for (int j = 0; j < 4; ++j) {
        out[j] = scale * float(grid_byte(first, j)) * ((signs >> j) & 1 ? -1.0f : 1.0f);
        out[j + 4] = scale * float(grid_byte(second, j)) * ((signs >> (j + 4)) & 1 ? -1.0f : 1.0f);
    }
}
// IQ1's eight signed values, shifted by ±1/8, times the scale.
void put8_iq1(float* out, float scale, uint64_t entry, float delta) {
    for (int j = 0; j < 8; ++j) out[j] = scale * (float(int8_t(grid_byte(entry, j))) + delta);
}

}  // namespace

void dequantize_iq2_xxs(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockIQ2_XXS>(src, i);
        const float d = f16_to_f32(b.d);
        for (int ib = 0; ib < 8; ++ib) {
            uint32_t indices, signs_scale;
            std::memcpy(&indices, b.qs + 4 * ib, 4);
            std::memcpy(&signs_scale, b.qs + 4 * ib + 2, 4);
            const float db = d * (0.5f + float(signs_scale >> 28)) * 0.25f;
            for (int l = 0; l < 4; ++l, out += 8)
                put8(out, db, kIQ2XXSGrid[(indices >> (8 * l)) & 0xff], kIQSigns[(signs_scale >> (7 * l)) & 127]);
        }
    }
}

void dequantize_iq2_xs(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockIQ2_XS>(src, i);
        const float d = f16_to_f32(b.d);
        for (int ib = 0; ib < 8; ++ib) {
            const float db[2] = {d * (0.5f + float(b.scales[ib] & 0xf)) * 0.25f, d * (0.5f + float(b.scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; ++l, out += 8) {
                const uint16_t q = b.qs[4 * ib + l];
                put8(out, db[l / 2], kIQ2XSGrid[q & 511], kIQSigns[q >> 9]);
            }
        }
    }
}

void dequantize_iq2_s(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockIQ2_S>(src, i);
        const float d = f16_to_f32(b.d);
        for (int ib = 0; ib < 8; ++ib) {
            const float db[2] = {d * (0.5f + float(b.scales[ib] & 0xf)) * 0.25f, d * (0.5f + float(b.scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; ++l, out += 8) {
                const int index = b.qs[4 * ib + l] | (((b.qh[ib] >> (2 * l)) & 3) << 8);
                put8(out, db[l / 2], kIQ2SGrid[size_t(index)], b.qs[32 + 4 * ib + l]);
            }
        }
    }
}

void dequantize_iq3_xxs(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockIQ3_XXS>(src, i);
        const float d = f16_to_f32(b.d);
        for (int ib = 0; ib < 8; ++ib) {
            uint32_t signs_scale;
            std::memcpy(&signs_scale, b.qs + 64 + 4 * ib, 4);
            const float db = d * (0.5f + float(signs_scale >> 28)) * 0.5f;
            const uint8_t* q = b.qs + 8 * ib;
            for (int l = 0; l < 4; ++l, out += 8)
                put4x2(out, db, kIQ3XXSGrid[q[2 * l]], kIQ3XXSGrid[q[2 * l + 1]], kIQSigns[(signs_scale >> (7 * l)) & 127]);
        }
    }
}

void dequantize_iq3_s(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockIQ3_S>(src, i);
        const float d = f16_to_f32(b.d);
        for (int ib = 0; ib < 8; ++ib) {
            const int s = (b.scales[ib / 2] >> (4 * (ib % 2))) & 0xf;
            const float db = d * float(1 + 2 * s);
            const uint8_t* q = b.qs + 8 * ib;
            for (int l = 0; l < 4; ++l, out += 8) {
                const int first = q[2 * l] | (((b.qh[ib] >> (2 * l)) & 1) << 8);
                const int second = q[2 * l + 1] | (((b.qh[ib] >> (2 * l + 1)) & 1) << 8);
                put4x2(out, db, kIQ3SGrid[size_t(first)], kIQ3SGrid[size_t(second)], b.signs[4 * ib + l]);
            }
        }
    }
}

void dequantize_iq1_s(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockIQ1_S>(src, i);
        const float d = f16_to_f32(b.d);
        for (int ib = 0; ib < 8; ++ib) {
            const uint16_t h = b.qh[ib];
            const float dl = d * float(2 * ((h >> 12) & 7) + 1);
            const float delta = h & 0x8000 ? -kIQ1Delta : kIQ1Delta;
            for (int l = 0; l < 4; ++l, out += 8)
                put8_iq1(out, dl, kIQ1SGrid[size_t(b.qs[4 * ib + l] | (((h >> (3 * l)) & 7) << 8))], delta);
        }
    }
}

void dequantize_iq1_m(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockIQ1_M>(src, i);
        const float d = f16_to_f32(iq1_m_scale_bits(b.scales));
        for (int ib = 0; ib < 8; ++ib) {
            uint16_t sc;
            std::memcpy(&sc, b.scales + 2 * (ib / 2), 2);
            const int shift = 6 * (ib % 2);
            const float dl[2] = {d * float(2 * ((sc >> shift) & 7) + 1), d * float(2 * ((sc >> (shift + 3)) & 7) + 1)};
            for (int l = 0; l < 4; ++l, out += 8) {
                const uint8_t h = uint8_t(b.qh[2 * ib + l / 2] >> (4 * (l % 2)));
                const float delta = h & 0x08 ? -kIQ1Delta : kIQ1Delta;
                put8_iq1(out, dl[l / 2], kIQ1SGrid[size_t(b.qs[4 * ib + l] | ((h & 7) << 8))], delta);
            }
        }
    }
}

// Trit n of a TQ1_0 byte: multiplying by 3^n (mod 256) brings it to the top, times 3 reads it off.
static inline int trit(uint8_t byte, int n) {
    static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    const uint8_t q = uint8_t(byte * kPow3[n]);
    return (int(q) * 3) >> 8;
}

void dequantize_tq1_0(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockTQ1_0>(src, i);
        const float d = f16_to_f32(b.d);
        for (int n = 0; n < 5; ++n)
            for (int m = 0; m < 32; ++m) *out++ = float(trit(b.qs[m], n) - 1) * d;
        for (int n = 0; n < 5; ++n)
            for (int m = 0; m < 16; ++m) *out++ = float(trit(b.qs[32 + m], n) - 1) * d;
        for (int n = 0; n < 4; ++n)
            for (int j = 0; j < 4; ++j) *out++ = float(trit(b.qh[j], n) - 1) * d;
    }
}

void dequantize_tq2_0(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockTQ2_0>(src, i);
        const float d = f16_to_f32(b.d);
        for (int half = 0; half < 2; ++half)
            for (int l = 0; l < 4; ++l)
                for (int m = 0; m < 32; ++m) *out++ = float(((b.qs[32 * half + m] >> (2 * l)) & 3) - 1) * d;
    }
}

}  // namespace rill
