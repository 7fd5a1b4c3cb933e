// What a model costs, from its tensor list and hyperparameters alone, so the same arithmetic serves a
// loaded file and a preset that was never downloaded: the bytes each decode step must read, the KV
// cache per token, a prompt's floating-point work, and the memory a session needs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/compute/kv_cache.h"
#include "runtime/model/model.h"
#include "runtime/make/quant_mix.h"
#include "runtime/make/synth.h"

namespace rill {

struct TensorShape {
    std::string name;
    TensorType type;
    uint64_t row_length = 0;  // ne[0]
    uint64_t rows = 0;        // product of the other dimensions; 1 for a vector
    uint64_t bytes = 0;
    bool is_matrix() const { return rows > 1; }
    // A table a step reads one row of, per token, from the mapped file (gemma4's per-layer
    // embeddings): counted as a row per token, not as a resident weight.
    bool row_per_token() const { return name == "per_layer_token_embd.weight"; }
};

struct ModelShape {
    Hparams hp;  // the size fields; n_ctx_train is the preset's or file's context
    std::vector<TensorShape> tensors;
    bool tied_output = false;  // no output.weight: every step multiplies by token_embd in full

    uint64_t weight_bytes() const;
    uint64_t n_params() const;  // rope_freqs, a constant table, left out
    // What one token uses: a mixture of experts' chosen share of its experts, everything else whole.
    uint64_t n_active_params() const;
    const TensorShape* find(const std::string& name) const;
};

ModelShape shape_of(const Model& model);
// The preset's tensors with the types the recipe's mix gives them, as `rill synth` writes them.
ModelShape shape_of_preset(const SynthPreset& preset, const QuantRecipe& recipe);

// The share of a tensor one token reads: expert_used_count / expert_count for experts (their 3-D
// matrices and 2-D biases), 1 for everything else.
double active_share(const TensorShape& t, const Hparams& hp);

// The expected expert weight bytes of one decode step (0 for a dense model): what `rill bench`
// replaces by the bytes the router's choices really read.
uint64_t expected_expert_bytes(const ModelShape& shape);

struct DecodeBudget {
    uint64_t weight_bytes = 0;  // every matrix and vector a step touches, one row of the embedding table;
                                // of a mixture of experts, the expected share of the experts
    uint64_t kv_bytes = 0;      // keys and values of every earlier position, all layers
    uint64_t state_bytes = 0;   // recurrent layers' state, read and written back
    uint64_t total() const { return weight_bytes + kv_bytes + state_bytes; }
};

// Keys and values of one position, all layers, in their types (Q8_0: 34 bytes per 32 values, a
// little over half of F16's 64).
uint64_t kv_bytes_per_token(const Hparams& hp, KvTypes kv_types);
// The KV cache a session allocates: every layer's slots (a sliding layer's ring only its window plus
// a chunk, as llama.cpp's default cache without --swa-full).
uint64_t kv_cache_bytes(const Hparams& hp, int n_ctx, int n_batch, KvTypes kv_types);
// The bytes one decode step reads at `position` (the number of tokens already in the KV cache).
DecodeBudget decode_bytes_per_token(const ModelShape& shape, int position, KvTypes kv_types);
// Floating-point operations (a multiply-add is two) of a prompt of n_tokens evaluated from position 0,
// with logits for its last token only, as llama-bench's pp rows do: matrix products plus attention's
// two products per head. Norms and activations, a fraction of a percent, are left out.
double prompt_flops(const ModelShape& shape, int n_tokens);

struct MemoryNeeds {
    uint64_t weights = 0;
    uint64_t kv_cache = 0;
    uint64_t scratch = 0;  // activations, logits, attention and GEMM buffers of one session
    uint64_t recurrent_state = 0;  // recurrent layers' state of one sequence (a hybrid's, beside its KV cache)
    // Tables read a row per token from the mapped file (not counted in weights or total: the pages a
    // prompt touches come and go; resident in full only with --no-mmap).
    uint64_t mapped_tables = 0;
    uint64_t total() const { return weights + kv_cache + scratch + recurrent_state; }
};

// Default context of a session: the model's training context, at most 4096 (as Session chooses).
int default_context(const Hparams& hp);
MemoryNeeds memory_needs(const ModelShape& shape, int n_ctx, int n_batch, int n_threads, KvTypes kv_types);

}  // namespace rill
