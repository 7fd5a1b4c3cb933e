// A transformer's hyperparameters and weight views, read from GGUF metadata and checked against tensor shapes.
#pragma once
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "runtime/format/gguf.h"
#include "runtime/model/architecture.h"

namespace rill {

// A weight matrix or vector: a view into the model file. Rows are ne[1], row length is ne[0].
struct Weight {
    const GgufTensor* tensor = nullptr;
    bool interleaved = false;  // full groups of eight rows are in quant/interleave.h's layout

    explicit operator bool() const { return tensor != nullptr; }
    TensorType type() const { return tensor->type; }
    int rows() const { return int(tensor->ne[1]); }
    int cols() const { return int(tensor->ne[0]); }
    // Row r in ggml's layout; for an interleaved weight only rows past the last full group of eight.
    const uint8_t* row(int r) const { return tensor->data + size_t(r) * tensor->row_bytes(); }
};

// One block's tensors; which are present is what the family's description and the file say.
struct LayerWeights {
    Weight attn_norm;                   // absent where the family has no pre-norms (olmo2)
    Weight wq, wk, wv;                  // absent when wqkv holds them
    Weight wqkv;                        // fused rows: Q | K | V (phi3)
    Weight bq, bk, bv, bqkv, bo;        // optional biases
    Weight q_norm, k_norm;              // RMSNorm gains over each head or the whole projection
    Weight wo;
    Weight attn_post_norm, ffn_post_norm;  // gemma3, olmo2
    Weight ffn_norm;
    Weight ffn_gate;                    // absent when ffn_up holds gate | up (phi3)
    Weight ffn_up, ffn_down;
    Weight b_gate, b_up, b_down;        // optional biases
    Weight attn_sinks;                  // gpt-oss: one logit per head
    // Mixture of experts: the router's rows score the experts; expert e's matrices are views of slice
    // e of the 3-D tensors, its biases row e of the 2-D ones.
    Weight router, b_router;
    Weight select_bias;  // LFM2-MoE's exp_probs_b: added to the scores to choose, not to weigh
    std::vector<Weight> gate_exps, up_exps, down_exps;
    Weight b_gate_exps, b_up_exps, b_down_exps;
    // The shared expert every token takes beside its routed ones (qwen35moe), weighted by
    // σ(shexp_gate_inp · x).
    Weight shexp_gate_inp, shexp_gate, shexp_up, shexp_down;
    // A Gated DeltaNet layer in place of attention (qwen35): the in-projection to the convolved
    // q | k | v channels (stored as attn_qkv), the output gate z (attn_gate), the convolution's taps,
    // the decay (ssm_alpha, ssm_dt.bias, ssm_a) and update strength (ssm_beta) per value head, the
    // gated norm's gain and the out-projection.
    Weight ssm_in, ssm_z, ssm_conv, ssm_alpha, ssm_beta, ssm_dt_bias, ssm_a, ssm_norm, ssm_out;
    Weight ssm_conv_bias, ssm_d;  // Mamba-2's convolution bias and skip (D) per head
    // gemma4: the factor on the residual after the layer; the PLE block (gate from x, the layer's slice
    // of the per-layer input, projection back, post-norm); a MoE layer's router input scale, per-expert
    // output scales and the norms around its two branches.
    Weight out_scale;
    Weight ple_gate, ple_proj, ple_post_norm;
    Weight router_scale, down_exps_scale;
    Weight experts_pre_norm, dense_post_norm, experts_post_norm;
};

struct Model {
    GgufFile file;
    Hparams hp;
    Weight token_embd;
    Weight output_norm;
    Weight output;      // token_embd when the file ties them
    Weight rope_freqs;  // Llama 3.1+ per-frequency divisors, optional
    Weight rope_factors_long, rope_factors_short;  // LongRoPE divisors (phi3): long past the original context
    // Per-layer embeddings (gemma4 E2B/E4B): a table with one row of n_layer × n_embd_per_layer per
    // token, read a row at a time straight from the file; the projection from the embedding, its norm.
    Weight ple_token_embd, ple_model_proj, ple_proj_norm;
    std::vector<LayerWeights> layers;
    std::deque<GgufTensor> expert_slices;  // what the experts' Weights view (stable addresses)
    AnonymousMemory relaid;                // a mapped file's matrices, regrouped for the decode kernels

    uint64_t weight_bytes() const;
};

// Loads and validates; the model owns the file's bytes.
std::unique_ptr<Model> load_model(const std::string& path, const LoadOptions& options = {});
// Validates an already-parsed file (used by tests and the fuzzer on in-memory bytes).
std::unique_ptr<Model> model_from_gguf(GgufFile file, bool interleave = false);

}  // namespace rill
