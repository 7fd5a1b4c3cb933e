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
// The gated feed-forward activations, gate[i] = act(gate[i]) * up[i]: SiLU, and GELU in its tanh
// form (0.5·x·(1 + tanh(u)) = x·σ(2u)). Through the same vector exp as exp_shifted, the tail padded,
// so an element's value depends on itself alone: a prompt split differently, or shared among
// threads differently, gives the same values. The scalar exp per element they replace was a tenth of
// a 512-token prompt on tinyllama (Zen 5, 2 threads), run by one thread while the other waited.
void swiglu(float* gate, const float* up, size_t n);
// x[i] = x[i]·σ(x[i]), through the same vector exp, the tail padded.
void silu(float* x, size_t n);
void geglu(float* gate, const float* up, size_t n);

}  // namespace rill::simd
