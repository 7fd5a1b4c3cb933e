// Mamba-2's selective state-space block, the recurrent layer of Nemotron-H and Granite 4.0-H
// (llama.cpp's build_mamba2_layer, ggml's SSM_CONV and SSM_SCAN). For a token with input x:
//   [z | xBC | dt] = W_in·x  (inner, inner + 2·groups·state, heads);
//   xBC = silu(causal depthwise convolution of xBC over the last conv_kernel inputs + bias);
//   x | B | C = xBC (x: heads of inner/heads channels; B, C: groups of state_size);
//   per head h (group g = h / (heads/groups)), with Δ = softplus(dt_h + dt_bias_h), and per channel i
//   of the head, its state row S_i (state_size):
//     S_i ← e^(Δ·A_h)·S_i + Δ·x_i·B_g;  y_i = S_i·C_g + D_h·x_i
//   y ← y ⊙ silu(z), RMS-normalised over groups of inner/groups channels with ssm_norm;
//   out = W_out·y.
// The convolution's window and the states persist from token to token (RecurrentState).
#pragma once
#include <span>
#include <vector>

#include "runtime/compute/attention_decode.h"
#include "runtime/compute/matmul.h"
#include "runtime/model/model.h"

namespace rill {

struct Mamba2Scratch {
    std::vector<float> proj, conv, y;  // [token][in-projection], [token][x | B | C], [token][inner]
};

// out[t] = the layer's output for row t of xn (rows of n_embd), rows at places[t], each sequence's in
// position order; a row at position 0 starts its sequence from zeros. Every head is one thread's from
// the first row to the last, so results do not depend on the thread count. `out` may be `xn`.
void mamba2(const Hparams& hp, const LayerWeights& L, int layer, const float* xn, int n, std::span<const KvPlace> places, float* out,
            MatmulScratch& mm, Mamba2Scratch& s);

}  // namespace rill
