// Gated DeltaNet, the recurrent layer three of every four Qwen3.5 layers are in place of attention
// (llama.cpp's src/models/qwen35.cpp and ggml's GATED_DELTA_NET op). For a token with input x:
//   u = W_in·x (q | k | v channels), z = W_z·x, β = σ(W_β·x), g = softplus(W_α·x + dt_bias)·a;
//   c = silu(causal depthwise convolution of u over the last conv_kernel inputs);
//   q, k L2-normalised per key head; value head h reads key head h mod n_k_heads, and with its
//   state M (state_size², one row per value index):
//     M ← e^g·M;  δ = β·(v − M·k);  M ← M + δ kᵀ;  o = M·q / √state_size
//   out = W_out · (rms(o_h, ssm_norm) ⊙ silu(z_h)) over the value heads.
// The state M and the convolution's window persist from token to token (RecurrentState).
#pragma once
#include <span>
#include <vector>

#include "runtime/compute/attention_decode.h"
#include "runtime/compute/matmul.h"
#include "runtime/model/model.h"

namespace rill {

// One thread's buffers for the chunked form: a chunk's q, k, v rows and the products over it.
struct DeltaChunkBuffers {
    std::vector<float> k, q, v, gamma, beta, kk, u, w, mt, wm, qm, p, vt, kdt, update, out;
    void size(size_t c, size_t S) {
        for (auto* b : {&k, &q, &v, &u, &w, &wm, &qm, &out}) b->resize(c * S);
        for (auto* b : {&kk, &p}) b->resize(c * c);
        for (auto* b : {&vt, &kdt}) b->resize(S * c);
        for (auto* b : {&mt, &update}) b->resize(S * S);
        gamma.resize(c);
        beta.resize(c);
    }
};

struct DeltaNetScratch {
    std::vector<float> u, z, alpha, beta, y;  // [token][…]
    // Runs of kChunkMinTokens or more rows of one sequence take the chunked (WY) form, in chunks of
    // kChunk, its products through the float32 GEMM; otherwise every row takes the recurrent form.
    // Off by default: on an AMD Zen 4 (qwen3.5-0.8b Q4_K_M pp512, 2 threads, 2 alternating rounds of
    // 3) the chunked form read 234-283 t/s against 250-304 for the recurrent kernel, which does 0.7x
    // the multiply-adds without transposes or a chunk's c² exponentials.
    bool chunked = false;
    std::vector<DeltaChunkBuffers> chunk_buffers;  // per thread of the team
};
inline constexpr int kChunk = 64, kChunkMinTokens = 16;

// out[t] = the layer's output for row t of xn (rows of n_embd): rows are tokens at places[t], each
// sequence's in position order, and each sequence's state (places[t].recurrent) advances through
// them; a row at position 0 starts its sequence from zeros. Every value head is one thread's from
// the first row to the last, so results do not depend on the thread count. `out` may be `xn`.
void gated_delta_net(const Hparams& hp, const LayerWeights& L, int layer, const float* xn, int n, std::span<const KvPlace> places,
                     float* out, MatmulScratch& mm, DeltaNetScratch& s);

}  // namespace rill
