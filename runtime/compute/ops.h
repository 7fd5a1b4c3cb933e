// The forward pass's element-wise and per-token operations on rows of floats (matrix products are
// in matmul.h); activations are row-major [tokens][features].
#pragma once
#include <span>
#include <vector>

#include "runtime/model/model.h"

namespace rill {

// One row of a weight, dequantized (used for embedding lookup), interleaved or not.
void weight_row(const Weight& w, int row, float* out);

// x / √(mean(x²) + eps) ⊙ gain; without a gain (an empty Weight), the normalisation alone.
void rmsnorm(const float* x, const Weight& gain, float* out, int n, float eps);
// In place over each of n_groups consecutive groups of `width` values, with one gain of `width`
// (q/k norms: a head at a time, or the whole projection as one group).
void rmsnorm_groups(float* x, const Weight& gain, int n_groups, int width, float eps);
void add_bias(const Weight& bias, float* rows, int n_tokens, int n);

// Rotates `n_heads` heads of one token in place by the angles in cos_sin (n_rot/2 pairs of cos, sin).
void rope(float* heads, int n_heads, int head_dim, int n_rot, RopeStyle style, const float* cos_sin);
// cos and sin for one position as ggml's rope computes them: angle_i = pos * base^(-2i/n_rot) /
// freq_factor_i, scaled by freq_scale and, under YaRN, ramped back towards the unscaled angle on the
// fast-turning pairs; both multiplied by the magnitude factor.
void rope_angles(const RopeParams& rope, int n_rot, const Weight& freq_factors, int pos, float* cos_sin);

void softmax(float* x, int n);
// gate[i] = silu(gate[i]) * up[i]; a prompt's worth shared among n_threads (each element's value is
// its own, whoever computes it)
void swiglu(float* gate, const float* up, size_t n, int n_threads = 1);
// gate[i] = gelu(gate[i]) * up[i], GELU in its tanh approximation (computed exactly, not from a table)
void geglu(float* gate, const float* up, size_t n, int n_threads = 1);
// x[i] = relu(x[i])² (Nemotron-H's ungated MLP and experts)
void relu_squared(float* x, size_t n);
// gpt-oss's clamped SwiGLU: x = min(gate, 7), gate[i] = x·σ(1.702·x)·(clamp(up, -7, 7) + 1)
void swiglu_oai(float* gate, const float* up, size_t n);
// softmax over x[0 .. n) with one more logit in the denominator that has no value (an attention sink)
void softmax_with_sink(float* x, int n, float sink);
// x = cap * tanh(x / cap)
void softcap(float* x, size_t n, float cap);

}  // namespace rill
