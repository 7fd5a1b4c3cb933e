// Whole rows converted between storage formats, at vector speed where the CPU has the instructions.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rill::simd {

// Half floats to floats, exactly (the same values as quant/fp16.h's f16_to_f32).
void f16_to_f32_row(const uint16_t* in, float* out, size_t n);

}  // namespace rill::simd
