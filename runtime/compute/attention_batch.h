// Causal grouped-query attention for a batch of prompt tokens as GEMMs: per key/value head and block
// of query tokens, the block's scores against every position it may see (one GEMM per query head),
// a causal softmax, and the weighted sum of values (a second GEMM). Memory stays bounded by the
// block size, whatever the prompt's length.
#pragma once
#include <vector>

#include "runtime/compute/gemm.h"
#include "runtime/compute/kv_cache.h"
#include "runtime/model/model.h"

namespace rill {

// Query tokens per unit of work: a block's scores take kQueryBlock × context floats.
inline constexpr int kQueryBlock = 64;

struct AttentionScratch {
    // Per thread: one head's keys [position][head_dim] and values transposed [head_dim][position] as
    // float32, a block's scores [token][position], and one value head dequantized on its way to values_t.
    std::vector<std::vector<float>> keys, values_t, scores, value;
};

// out[t][h] = softmax(q[t][h] · keys[0 .. pos0 + t] · kq_scale) · values (a sliding layer: only the
// last window of those keys), for the n_tokens
// tokens at positions pos0 .. pos0 + n_tokens - 1 whose keys and values are already in the cache.
// q and out are [token][n_head][head_dim]. Each (head, block) is one thread's, so results do not
// depend on the thread count.
void batch_attention(const Hparams& hp, const KvCache& kv, int layer, int pos0, int n_tokens, const float* q, float* out,
                     GemmBackend backend, OnednnGemm* onednn, int n_threads, AttentionScratch& scratch,
                     const float* sinks = nullptr);

}  // namespace rill
