// The forward pass's operations, on rows of floats. Matrices are GGUF weights (any tensor type);
// activations are row-major [tokens][features].
#pragma once
#include <span>
#include <vector>

#include "model.h"

namespace rill {

// Multiply-adds below which a loop runs on the calling thread alone.
inline constexpr size_t kMinParallelWork = size_t(1) << 18;

// Per-thread scratch reused across calls, so the hot path allocates nothing.
struct ThreadScratch {
    std::vector<std::vector<float>> rows;  // one dequantized weight row per thread
    explicit ThreadScratch(int n_threads = 1, size_t row_len = 0) : rows(size_t(n_threads), std::vector<float>(row_len)) {}
};

// out[t][r] = dot(W row r, in[t]) for t < n_tokens, r < W.rows(). Each output row is computed
// whole by one thread, so the result is the same for every thread count.
void matmul(const Weight& w, const float* in, float* out, int n_tokens, int n_threads, ThreadScratch& scratch);

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
