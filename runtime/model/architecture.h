// What one model family does differently from the plain Llama block, as data the one forward pass
// (session.cpp) reads, and the hyperparameters a file's metadata gives, with llama.cpp's defaults
// where a key is missing (src/llama-model.cpp and src/models/<family>.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/format/gguf.h"

namespace rill {

enum class RopeStyle { Norm, Neox };  // Norm rotates pairs (2i, 2i+1); Neox rotates (i, i + n_rot/2)
enum class QkNorm { None, PerHead, Whole };  // RMSNorm of q and k over each head, or over the whole projection
// The FFN's gate: SwiGLU, GeGLU with tanh-approximated GELU, or gpt-oss's clamped SwiGLU
// (x = min(gate, 7): x·σ(1.702·x)·(clamp(up, ±7) + 1)).
// ReluSquared: relu(up)² with no gate (Nemotron-H's MLP).
enum class Activation { Silu, GeluTanh, SwigluOai, ReluSquared };
// How a mixture-of-experts router turns its logits into the chosen experts' weights: softmax over all
// experts, top-k, renormalised over the chosen (qwen3moe); or top-k on the logits, then softmax over
// the chosen k (gpt-oss).
// LFM2-MoE's and Nemotron-H-MoE's: sigmoid scores, the top k by score plus a selection-only bias
// (exp_probs_b), weights the chosen scores (renormalised and scaled as Hparams says).
enum class Gating { SoftmaxTopK, TopKSoftmax, SigmoidBiasedTopK };

struct Architecture {
    const char* name;
    RopeStyle rope_style = RopeStyle::Norm;
    QkNorm qk_norm = QkNorm::None;
    bool pre_norms = true;     // attn_norm and ffn_norm before each block (olmo2 has none)
    bool post_norms = false;   // post_attention_norm and post_ffw_norm on each block's output
    Activation activation = Activation::Silu;
    bool qkv_bias = false;     // attn_{q,k,v}.bias are required (qwen2); elsewhere optional
    bool fused_qkv = false;    // attn_qkv may replace attn_q, attn_k and attn_v (phi3)
    bool fused_gate_up = false;  // ffn_up holds gate | up (2·n_ff rows) and there is no ffn_gate (phi3)
    bool sqrt_embd_scale = false;  // the input embedding is multiplied by √n_embd (gemma3)
    bool granite_scales = false;   // embedding_scale, residual_scale, attention.scale, logit_scale
    bool sliding_window = false;   // reads attention.sliding_window (and its pattern)
    int default_swa_pattern = 0;   // layers per period when the key is missing; the period's last is global
    int no_rope_step = 0;          // every n-th layer has no RoPE (smollm3)
    bool swa_rope_global = false;  // sliding layers rotate as the global ones do (gpt-oss)
    bool attn_out_bias = false;    // attn_output.bias required (gpt-oss)
    bool sinks = false;            // attn_sinks: a learned logit per head in each softmax's denominator
    bool moe = false;              // the FFN is a router over ffn_{gate,up,down}_exps
    Gating gating = Gating::SoftmaxTopK;
    bool expert_biases = false;    // router and expert biases (gpt-oss)
    const char* ffn_norm = "ffn_norm";  // the FFN's pre-norm (gpt-oss calls it post_attention_norm)
    // Gated DeltaNet layers in place of attention on all but every full_attention_interval-th layer
    // (qwen35): a recurrent block, runtime/compute/delta_net.h.
    bool gated_delta_net = false;
    bool attn_output_gate = false;  // attn_q holds [q_h | gate_h] per head; the output is multiplied by σ(gate)
    bool shared_expert = false;     // ffn_*_shexp beside the routed experts, scaled by σ(ffn_gate_inp_shexp·x) (required)
    bool rope_sections = false;     // rope.dimension_sections: interleaved multi-axis RoPE (IMROPE)
    // Gemma 4 (llama.cpp's src/models/gemma4.cpp):
    float fixed_kq_scale = 0.0f;    // > 0: the attention scores' scale, whatever the head size
    float default_softcap = 0.0f;   // final_logit_softcapping when the file has none
    bool v_norm = false;            // V is RMS-normalised over each head without a gain
    bool v_from_k = false;          // a layer without attn_v takes V from K's projection, before K's norm
    bool layer_output_scale = false;  // layer_output_scale: one factor on the whole residual after each layer
    bool per_layer_embeddings = false;  // PLE: a per-layer input from a token table and a projection
    bool experts_optional = false;  // experts where the file has expert_count (moe: always)
    // A MoE layer also runs the dense FFN: each branch has its post-norm (post_ffw_norm_1 / _2), the
    // experts their own pre-norm (pre_ffw_norm_2), the router reads rms(x)/√n_embd ⊙ ffn_gate_inp.scale
    // and each expert's output is scaled by ffn_down_exps.scale.
    bool dense_beside_experts = false;
    // LFM2: a layer whose head_count_kv entry is 0 is a gated short convolution (a recurrent block,
    // runtime/compute/short_conv.h) in place of attention; attention layers slide where the file has
    // a window.
    bool short_conv = false;
    const char* output_norm = "output_norm";  // the final norm's tensor (LFM2: token_embd_norm)
    // Mamba-2 layers (runtime/compute/mamba2.h) where head_count_kv is 0 (and, for a family with
    // mixerless layers, feed_forward_length too); ssm.* keys give their sizes.
    bool mamba2 = false;
    // Nemotron-H: every layer is one block: Mamba-2, attention (head_count_kv > 0), or an MLP alone
    // (feed_forward_length > 0), each behind attn_norm; attention without positions.
    bool single_block_layers = false;
    bool no_rope = false;
    // Granite 4.0-H: attention rotates only where rope.scaling.finetuned is true (its default); the
    // converter writes false, so its attention has no positions.
    bool rope_switch = false;
    // The routed weights' normalisation and scale are the file's expert_weights_norm and
    // expert_weights_scale (nemotron_h_moe); elsewhere sigmoid weights are renormalised, unscaled (lfm2moe).
    bool routed_weight_keys = false;
};

// The family a file names, or nullptr.
const Architecture* find_architecture(const std::string& name);
std::vector<std::string> supported_architectures();

// How a group of layers turns positions into rotation angles (ggml's rope with YaRN).
struct RopeParams {
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;   // 1 / scaling factor
    float ext_factor = 0.0f;   // YaRN's mix of interpolated and extrapolated angles; 0 without YaRN
    float attn_factor = 1.0f;  // cos and sin are multiplied by this (YaRN's and LongRoPE's magnitude)
    float beta_fast = 32.0f, beta_slow = 1.0f;
    int n_ctx_orig = 0;        // the context the scaling extends
    // IMROPE (ggml_rope_multi): pair i takes the position component of its sector i % Σsections; a text
    // token's position is (p, p, p, 0), so a pair whose sector falls to the fourth component does not
    // turn. Empty: every pair takes p.
    std::vector<uint8_t> pair_turns;
};

// A Gated DeltaNet layer's sizes (ssm.* keys): a causal convolution of conv_kernel taps over
// conv_dim() channels (q | k | v), n_k_heads query/key heads and n_v_heads value heads of state_size,
// one state_size × state_size matrix per value head.
// A Mamba-2 layer's: n_k_heads groups of B and C, n_v_heads heads of inner_size / n_v_heads channels,
// each channel a state of state_size; its convolution runs over inner_size + 2·groups·state_size.
struct SsmParams {
    int conv_kernel = 0, state_size = 0, n_k_heads = 0, n_v_heads = 0;
    int inner_size = 0;  // Mamba-2's d_inner
    int key_dim() const { return n_k_heads * state_size; }
    int value_dim() const { return n_v_heads * state_size; }
    int conv_dim() const { return 2 * key_dim() + value_dim(); }
};

struct Hparams {
    std::string arch;
    const Architecture* family = nullptr;
    int n_vocab = 0;
    int n_embd = 0;
    int n_layer = 0;
    int n_ff = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    int n_rot = 0;  // leading dimensions of each head that RoPE rotates
    int n_ctx_train = 0;
    float rms_eps = 1e-5f;
    RopeStyle rope_style = RopeStyle::Norm;
    RopeParams rope;        // global (full-attention) layers
    RopeParams rope_local;  // sliding-window layers
    float embedding_scale = 1.0f;
    float residual_scale = 1.0f;   // each block's output is multiplied by this before the residual add
    float attention_scale = 0.0f;  // 0: 1/√head_dim
    float logit_scale = 1.0f;      // logits are divided by this
    float final_logit_softcap = 0.0f;  // > 0: logits become c·tanh(logits/c)
    int n_expert = 0, n_expert_used = 0, n_ff_exp = 0;  // mixture of experts; 0: a dense FFN
    int n_swa = 0;                      // window of the sliding layers; 0: none
    std::vector<uint8_t> layer_sliding;  // per layer: 1 if it attends to its last n_swa positions only
    std::vector<uint8_t> layer_rope;     // per layer: 1 if it rotates q and k
    std::vector<uint8_t> layer_recurrent;  // per layer: 1 for a Gated DeltaNet layer (no KV cache)
    SsmParams ssm;
    int n_ff_shexp = 0;  // the shared expert's width
    int n_nextn = 0;     // MTP/NextN blocks after the main ones (block_count counts them); not run
    // Per-layer shapes (gemma4): each list empty where every layer has the scalar above, which is
    // then the largest of them (buffers are sized from the scalars).
    std::vector<int> layer_head_dim, layer_n_head_kv, layer_n_ff;
    int n_rot_swa = 0;  // rotated dimensions of the sliding layers; 0: n_rot
    // The layer whose keys and values a layer attends over: itself, or for the last
    // attention.shared_kv_layers layers an earlier one of their kind (they store nothing).
    std::vector<int> layer_kv_source;
    int n_embd_per_layer = 0;  // PLE width per layer; 0: none
    int n_dense_lead = 0;      // the first layers of a mixture of experts keep a dense FFN (leading_dense_block_count)
    bool expert_weights_norm = true;   // sigmoid routing: the chosen weights renormalised to sum to 1
    float expert_weights_scale = 1.0f;  // and then multiplied by this

    int q_dim() const { return n_head * head_dim; }
    int kv_dim() const { return n_head_kv * head_dim; }  // the widest layer's (an upper bound)
    int head_dim_of(int layer) const { return layer_head_dim.empty() ? head_dim : layer_head_dim[size_t(layer)]; }
    int n_head_kv_of(int layer) const { return layer_n_head_kv.empty() ? n_head_kv : layer_n_head_kv[size_t(layer)]; }
    int q_dim_of(int layer) const { return n_head * head_dim_of(layer); }
    int kv_dim_of(int layer) const { return n_head_kv_of(layer) * head_dim_of(layer); }
    int n_ff_of(int layer) const { return layer_n_ff.empty() ? n_ff : layer_n_ff[size_t(layer)]; }
    int n_rot_of(int layer) const { return sliding(layer) && n_rot_swa > 0 ? n_rot_swa : n_rot; }
    int kv_source(int layer) const { return layer_kv_source.empty() ? layer : layer_kv_source[size_t(layer)]; }
    bool owns_kv(int layer) const { return has_attention(layer) && kv_source(layer) == layer; }
    // Experts on every layer past the dense lead; where layers run one block (Nemotron-H-MoE), on those
    // whose block is the FFN.
    bool experts(int layer) const {
        return n_expert > 0 && layer >= n_dense_lead && !(family->single_block_layers && (n_ff_of(layer) == 0 || recurrent(layer)));
    }
    // What a layer runs: a mixer (a recurrent block or attention) and an FFN; Nemotron-H's layers run
    // one of them, every other family's both.
    bool has_attention(int layer) const { return !recurrent(layer) && n_head_kv_of(layer) > 0; }
    bool has_mixer(int layer) const { return recurrent(layer) || n_head_kv_of(layer) > 0; }
    bool has_ffn(int layer) const { return experts(layer) || n_ff_of(layer) > 0; }
    float kq_scale() const;
    bool sliding(int layer) const { return !layer_sliding.empty() && layer_sliding[size_t(layer)]; }
    bool uses_rope(int layer) const { return layer_rope.empty() || layer_rope[size_t(layer)]; }
    int window(int layer) const { return sliding(layer) ? n_swa : 0; }  // 0: every earlier position
    bool any_sliding() const;
    bool recurrent(int layer) const { return !layer_recurrent.empty() && layer_recurrent[size_t(layer)]; }
    int n_recurrent() const;
};

// Reads and checks every hyperparameter; errors name the file and the key.
Hparams read_hparams(const GgufFile& file);
// The per-layer lists from the scalar fields (used for presets that never were a file).
void set_layer_pattern(Hparams& hp, int swa_pattern);
// Every layer recurrent but each full_attention_interval-th (llama.cpp's qwen35 default).
void set_recurrent_pattern(Hparams& hp, int full_attention_interval);

}  // namespace rill
