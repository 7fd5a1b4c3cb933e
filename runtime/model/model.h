// A transformer's hyperparameters and weight views, read from GGUF metadata and checked against tensor shapes.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/format/gguf.h"

namespace rill {

enum class RopeStyle { Norm, Neox };  // Norm rotates pairs (2i, 2i+1); Neox rotates (i, i + n_rot/2)

struct Hparams {
    std::string arch;
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
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;  // linear RoPE scaling: positions are multiplied by this
    RopeStyle rope_style = RopeStyle::Norm;

    int q_dim() const { return n_head * head_dim; }
    int kv_dim() const { return n_head_kv * head_dim; }
};

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

struct LayerWeights {
    Weight attn_norm, wq, wk, wv, wo;
    Weight bq, bk, bv;  // qwen2 only
    Weight ffn_norm, ffn_gate, ffn_up, ffn_down;
};

struct Model {
    GgufFile file;
    Hparams hp;
    Weight token_embd;
    Weight output_norm;
    Weight output;      // token_embd when the file ties them
    Weight rope_freqs;  // Llama 3.1+ per-frequency divisors, optional
    std::vector<LayerWeights> layers;

    uint64_t weight_bytes() const;
};

std::vector<std::string> supported_architectures();

// Loads and validates; the model owns the file's bytes.
std::unique_ptr<Model> load_model(const std::string& path, const LoadOptions& options = {});
// Validates an already-parsed file (used by tests and the fuzzer on in-memory bytes).
std::unique_ptr<Model> model_from_gguf(GgufFile file, bool interleave = false);

}  // namespace rill
