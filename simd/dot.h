// Vector kernels the forward pass is built from. The summation order is fixed by the code,
// never by the thread that runs it, so results do not depend on the thread count.
#pragma once
#include <cstddef>

namespace rill::simd {

float dot(const float* a, const float* b, size_t n);
// y[i] += a * x[i]
void axpy(float a, const float* x, float* y, size_t n);

}  // namespace rill::simd
