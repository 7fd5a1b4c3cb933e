// LFM2's gated short convolution, the recurrent block in place of attention on most LFM2 layers
// (llama.cpp's src/models/lfm2.cpp). For a token with input x:
//   [B | C | v] = W_in·x (three n_embd-wide chunks);  u = B ⊙ v;
//   y = the causal depthwise convolution of u over its last shortconv.l_cache inputs (no bias, no
//   activation);  out = W_out · (C ⊙ y).
// The convolution's window (the last kernel − 1 rows of u) persists from token to token.
#pragma once
#include <span>
#include <vector>

#include "runtime/compute/attention_decode.h"
#include "runtime/compute/matmul.h"
#include "runtime/model/model.h"

namespace rill {

struct ShortConvScratch {
    std::vector<float> bcx, u;  // [token][3·n_embd], [token][n_embd]
};

// out[t] = the layer's output for row t of xn (rows of n_embd), rows at places[t], each sequence's
// in position order; a row at position 0 starts its sequence. `out` may be `xn`.
void short_conv(const Hparams& hp, const LayerWeights& L, int layer, const float* xn, int n, std::span<const KvPlace> places,
                float* out, MatmulScratch& mm, ShortConvScratch& s);

}  // namespace rill
