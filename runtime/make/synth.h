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

namespace rill {

struct SynthPreset {
    std::string name;
    std::string arch;  // "llama" or "qwen2"
    int n_vocab, n_embd, n_layer, n_ff, n_head, n_head_kv, n_ctx;
    float rope_base, rms_eps;
    bool tied_output;     // no output.weight: the output reuses token_embd
    bool qkv_bias;        // qwen2
    float llama3_factor;  // > 0: Llama 3.1-style rope_freqs with this scaling factor
    const char* source;   // where the configuration comes from

    int head_dim() const { return n_embd / n_head; }
};

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
