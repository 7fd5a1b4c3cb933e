// Vector kernels the forward pass is built from. The summation order is fixed by the code,
// never by the thread that runs it, so results do not depend on the thread count.
#pragma once
#include <cstddef>

namespace rill::simd {

float dot(const float* a, const float* b, size_t n);
// y[i] += a * x[i]
void axpy(float a, const float* x, float* y, size_t n);

// The largest of x[0 .. n), n >= 1.
float max(const float* x, size_t n);
// x[i] = exp(x[i] - shift) for every i; returns their sum. Every element goes through the same vector
// exp, the tail padded, so an element's value depends on itself alone, never on n or its place: the
// scalar exp call per score this replaces was the largest cost of softmax over a long context.
float exp_shifted(float* x, size_t n, float shift);
// x[i] *= a
void scale(float* x, size_t n, float a);

}  // namespace rill::simd
