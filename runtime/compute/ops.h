// The forward pass's element-wise and per-token operations on rows of floats (matrix products are
// in matmul.h); activations are row-major [tokens][features].
#pragma once
#include <span>
#include <vector>

#include "runtime/model/model.h"

namespace rill {

// One row of a weight, dequantized (used for embedding lookup).
void weight_row(const Weight& w, int row, float* out);

void rmsnorm(const float* x, const Weight& gain, float* out, int n, float eps);
void add_bias(const Weight& bias, float* rows, int n_tokens, int n);

// Rotates `n_heads` heads of one token in place by the angles in cos_sin (n_rot/2 pairs of cos, sin).
void rope(float* heads, int n_heads, int head_dim, int n_rot, RopeStyle style, const float* cos_sin);
// cos and sin for one position: angle_i = pos * scale * base^(-2i/n_rot) / freq_factor_i.
void rope_angles(const Hparams& hp, const Weight& freq_factors, int pos, float* cos_sin);

void softmax(float* x, int n);
// gate[i] = silu(gate[i]) * up[i]
void swiglu(float* gate, const float* up, size_t n);

}  // namespace rill
