// Scalar reference dequantizers of the IQ1–IQ3 and ternary types (bit for bit as ggml's), for the
// traits table in dequantize.cpp.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rill {

void dequantize_iq2_xxs(const uint8_t* blocks, float* out, size_t n_blocks);
void dequantize_iq2_xs(const uint8_t* blocks, float* out, size_t n_blocks);
void dequantize_iq2_s(const uint8_t* blocks, float* out, size_t n_blocks);
void dequantize_iq3_xxs(const uint8_t* blocks, float* out, size_t n_blocks);
void dequantize_iq3_s(const uint8_t* blocks, float* out, size_t n_blocks);
void dequantize_iq1_s(const uint8_t* blocks, float* out, size_t n_blocks);
void dequantize_iq1_m(const uint8_t* blocks, float* out, size_t n_blocks);
void dequantize_tq1_0(const uint8_t* blocks, float* out, size_t n_blocks);
void dequantize_tq2_0(const uint8_t* blocks, float* out, size_t n_blocks);

// IQ1_M's half scale, gathered from the top nibbles of its four 16-bit scale words.
inline uint16_t iq1_m_scale_bits(const uint8_t scales[8]) {
    uint16_t half = 0;
    for (int k = 0; k < 4; ++k) half |= uint16_t(((scales[2 * k + 1] >> 4) & 0xf) << (4 * k));
    return half;
}

}  // namespace rill
