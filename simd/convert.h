// Whole rows converted between storage formats, at vector speed where the CPU has the instructions:
// what the prompt's GEMM path spends dequantizing weight panels.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/tensor_type.h"

namespace rill::simd {

// Half floats to floats, exactly (the same values as quant/fp16.h's f16_to_f32).
void f16_to_f32_row(const uint16_t* in, float* out, size_t n);

// Floats to bfloat16, rounded to nearest even, NaNs kept quiet: the same bits as quant/fp16.h's
// f32_to_bf16 on every path (AVX-512 BF16's own conversion flushes subnormals, so it is not used).
void f32_to_bf16_row(const float* in, uint16_t* out, size_t n);

// The same floats as quant's dequantize_row, bit for bit: F16, Q4_0, Q8_0, Q4_K and Q6_K (the
// commonest types in real files) have vector versions; the rest use the scalar reference.
void dequantize_row(TensorType type, const uint8_t* row, float* out, size_t n);

}  // namespace rill::simd
