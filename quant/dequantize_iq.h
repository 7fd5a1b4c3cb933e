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

}  // namespace rill
