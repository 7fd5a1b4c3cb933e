// Random-weight models with the exact shapes and hyperparameters of real ones, for benchmarks
// without downloads. Weights are generated, quantized and written as a stream.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/make/quantize_model.h"
#include "runtime/model/architecture.h"

namespace rill {

// What the newer families add to the Llama shape; zero means "as Llama" for each field.
struct SynthFamilyShape {
    int head_dim = 0;              // 0: n_embd / n_head
    int n_rot = 0;                 // rotated dimensions per head; 0: the whole head (phi-4-mini: 3/4)
    int n_swa = 0;                 // sliding window of the local layers (gemma3)
    float rope_base_swa = 0;       // their rope base
    float rope_linear_factor = 0;  // linear rope scaling of the global layers (gemma3 4b and up)
    int longrope_orig_ctx = 0;     // > 0: LongRoPE factor tensors and attn_factor (phi-4-mini)
    float embedding_scale = 0, residual_scale = 0, attention_scale = 0, logit_scale = 0;  // granite
    int n_expert = 0, n_expert_used = 0, n_ff_exp = 0;  // mixtures of experts
    float yarn_factor = 0;         // > 0: YaRN rope scaling from yarn_orig_ctx (gpt-oss)
    int yarn_orig_ctx = 0;
    int n_ff_shexp = 0;            // the shared expert's width (qwen35moe)
    // Gated DeltaNet layers (qwen35): conv taps, head size, key and value heads; every
    // full_attention_interval-th layer is attention.
    int ssm_conv_kernel = 0, ssm_state = 0, ssm_k_heads = 0, ssm_v_heads = 0, full_attention_interval = 0;
    // Gemma 4: one full layer ending every swa_period layers, the others sliding with heads of
    // head_dim_swa (the full ones: head_dim) and n_head_kv KV heads (the full ones: n_head_kv_full if
    // set); the last n_kv_shared layers read earlier layers' cache, with a doubled FFN where
    // double_wide_shared; PLE of n_embd_per_layer per layer; full layers without attn_v where
    // v_from_k_full; full layers rotating rope_partial of their pairs (proportional RoPE).
    int swa_period = 0, head_dim_swa = 0, n_head_kv_full = 0, n_kv_shared = 0, n_embd_per_layer = 0;
    bool double_wide_shared = false, v_from_k_full = false;
    float rope_partial = 0;
    // Hybrids whose layers differ in kind, one character per layer (Nemotron-H's
    // hybrid_override_pattern): 'M' Mamba-2, '*' attention, '-' an MLP alone, 'E' experts alone; 'C' a short convolution
    // (LFM2), 'm' Mamba-2 (Granite 4.0-H) and 'A' attention, each with its FFN. Empty: every layer attention.
    const char* layer_kinds = "";
    int conv_kernel = 0;  // shortconv.l_cache or ssm.conv_kernel
    // Mamba-2: inner width, state size, heads and groups.
    int ssm_inner = 0, ssm_heads = 0, ssm_groups = 0;
    int n_dense_lead = 0;  // LFM2-MoE: leading layers with a dense FFN
    float routed_scale = 0;  // Nemotron-H-MoE: routed_scaling_factor (its weights renormalised too)
};

struct SynthPreset {
    std::string name;
    std::string arch;  // one of supported_architectures()
    int n_vocab, n_embd, n_layer, n_ff, n_head, n_head_kv, n_ctx;
    float rope_base, rms_eps;
    bool tied_output;     // no output.weight: the output reuses token_embd
    bool qkv_bias;        // qwen2
    float llama3_factor;  // > 0: Llama 3.1-style rope_freqs with this scaling factor
    const char* source;   // where the configuration comes from
    SynthFamilyShape family = {};

    int head_dim() const { return family.head_dim > 0 ? family.head_dim : n_embd / n_head; }
    int n_rot() const { return family.n_rot > 0 ? family.n_rot : head_dim(); }
    // Per layer (they differ in Gemma 4 only).
    bool sliding(int layer) const { return family.swa_period > 0 && (layer + 1) % family.swa_period != 0; }
    int head_dim_of(int layer) const { return sliding(layer) && family.head_dim_swa > 0 ? family.head_dim_swa : head_dim(); }
    bool owns_kv(int layer) const { return layer < n_layer - family.n_kv_shared; }
    char kind(int layer) const { return *family.layer_kinds ? family.layer_kinds[layer] : 'A'; }
    bool attention(int layer) const { return kind(layer) == 'A' || kind(layer) == '*'; }
    // The FFN's width: none on Nemotron-H's Mamba-2 and attention layers.
    int n_ff_of(int layer) const {
        if (kind(layer) == 'M' || kind(layer) == '*') return 0;
        return family.double_wide_shared && !owns_kv(layer) ? 2 * n_ff : n_ff;
    }
    int n_head_kv_of(int layer) const {
        if (!attention(layer)) return 0;
        return !sliding(layer) && family.n_head_kv_full > 0 ? family.n_head_kv_full : n_head_kv;
    }
};

// The hyperparameters a file of the preset has (what read_hparams gives it), without writing one.
Hparams preset_hparams(const SynthPreset& preset);

const std::vector<SynthPreset>& synth_presets();
std::optional<SynthPreset> find_preset(const std::string& name);

struct SynthTensor {
    std::string name;
    std::vector<uint64_t> ne;  // ggml order
};
// Every tensor of the preset's model, in the order converters write them.
std::vector<SynthTensor> synth_tensors(const SynthPreset& p);
uint64_t synth_parameter_count(const SynthPreset& p);
// File size of the preset in a quantization (header aside).
uint64_t synth_weight_bytes(const SynthPreset& p, const QuantRecipe& recipe);

struct SynthOptions {
    SynthPreset preset;
    QuantRecipe recipe;
    std::string vocab_path;  // a GGUF whose tokenizer to copy; empty: a placeholder vocabulary
    uint64_t seed = 1;
    int n_threads = 0;
    const std::atomic<bool>* cancel = nullptr;
    std::function<void(const QuantizeProgress&)> on_progress;
};

QuantizeSummary synthesize_model(const std::string& output_path, const SynthOptions& options);

}  // namespace rill
