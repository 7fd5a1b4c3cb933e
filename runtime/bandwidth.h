// Decode speed is bound by memory bandwidth: a probe of what this machine can read, and the bytes one
// decode step must read, so a benchmark can say how close to the limit it runs.
#pragma once
#include <cstdint>

#include "kv_cache.h"
#include "model.h"

namespace rill {

// Streaming-read bandwidth with n_threads threads, in GB/s (1e9 bytes per second). Takes about half a
// second and briefly 512 MiB of memory.
double measure_read_bandwidth(int n_threads);

struct DecodeBudget {
    uint64_t weight_bytes = 0;  // every matrix and vector a step touches, one row of the embedding table
    uint64_t kv_bytes = 0;      // keys and values of every earlier position, all layers
    uint64_t total() const { return weight_bytes + kv_bytes; }
};

// The bytes one decode step reads at `position` (the number of tokens already in the KV cache).
DecodeBudget decode_bytes_per_token(const Model& model, int position, KvType kv_type);

// Prefill is bound by compute instead: the floating-point operations (a multiply-add is two) of a
// prompt of n_tokens evaluated from position 0, with logits for its last token only, as llama-bench's
// pp rows do. Matrix products plus attention's two products per head; norms and activations, which
// are a fraction of a percent, are left out.
double prompt_flops(const Model& model, int n_tokens);

}  // namespace rill
