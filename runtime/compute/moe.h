// A mixture-of-experts FFN: the router picks each token's experts, then every expert that some token
// chose multiplies just those tokens in one pass over its weights, so a decode step (or a batch of
// streams) reads only the chosen experts' bytes, and an expert two streams share is read once.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/compute/matmul.h"
#include "runtime/model/model.h"

namespace rill {

struct MoeScratch {
    std::vector<float> logits;      // [token][n_expert]
    std::vector<float> biased;      // one token's scores plus the selection bias
    std::vector<int> chosen;        // [token][k]: expert ids, best first
    std::vector<float> weights;     // [token][k]
    std::vector<int> first, fill;   // [expert]: where its rows start among the choices sorted by expert
    std::vector<int> members;       // [row]: the choice (token·k + j) each sorted row is
    std::vector<size_t> slot;       // [choice]: its row
    std::vector<float> rows, gate, up, down;  // [row][…]: inputs, gate (then the activation), up, outputs
    std::vector<MatmulTask> tasks;  // the chosen experts' matrices for one call
    uint64_t expert_bytes = 0;      // expert weight bytes read since the counter was last cleared
};

// The router's choice for n tokens of xn (rows of n_embd): chosen experts and their weights.
void route(const Hparams& hp, const LayerWeights& L, const float* xn, int n, MatmulScratch& mm, MoeScratch& s);

// gelu or (clamped) silu of gate, times up, as the family's activation says.
void gated_activation(Activation activation, float* gate, const float* up, size_t n, int n_threads);

// out[t] = Σ over token t's chosen experts of weight × expert(xn[t]), summed best-first, so a token's
// result does not depend on which other tokens share the batch. `out` may be `xn`: every row is read
// before any is written.
// router_in: what the router reads where it is not xn (gemma4); each expert's output is scaled by its
// entry of L.down_exps_scale where the file has one.
void moe_ffn(const Hparams& hp, const LayerWeights& L, const float* xn, int n, float* out, MatmulScratch& mm, MoeScratch& s,
             const float* router_in = nullptr);

}  // namespace rill
