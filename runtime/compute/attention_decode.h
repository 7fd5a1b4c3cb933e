// Attention for decode steps: each token's query against every cached position of its own sequence,
// reading keys and values straight from the cache's rows, in whatever type they are, with the decode
// kernels. The tokens may belong to different sequences (a server's batch), each with its own cache.
#pragma once
#include <span>
#include <vector>

#include "runtime/compute/kv_cache.h"
#include "runtime/compute/recurrent_state.h"
#include "runtime/model/model.h"
#include "simd/gemv.h"

namespace rill {

// A token's cache and position: it is stored at `pos` and attends to 0 .. pos; its sequence's
// recurrent state, for a model with recurrent layers.
struct KvPlace {
    KvCache* kv;
    int pos;
    RecurrentState* recurrent = nullptr;
};

// Per-thread buffers: scores for up to n_ctx positions of each head a thread takes at once (the
// query heads sharing a key head, up to 8), as many widened heads (the reference path, and a ring's
// wrapped part), and one query head in 8-bit blocks (the activation format of a quantized key type's
// kernel).
struct DecodeAttentionScratch {
    int n_ctx = 0, heads = 1;
    size_t query_stride = 0;
    std::vector<float> scores, head;
    std::vector<uint8_t> query;
    DecodeAttentionScratch() = default;
    DecodeAttentionScratch(int n_threads, int n_ctx, int head_dim, int heads_per_key = 1);
};

// out[t][h] = softmax(q[t][h] · keys · kq_scale) · values over the positions token t sees in layer
// `layer` (0 .. places[t].pos, or its last window of them); q and out are [token][n_head][head_dim]. Each (token, head) is one thread's, so
// results do not depend on the thread count. Every cache has the same KV types. With float keys and
// values, a thread takes the query heads that share a key head together (dot_heads,
// weighted_sum_heads: each cached row read once for all of them); otherwise scores come from the
// weight kernels' dot_rows for the key type: for Q8_0 and Q4_0 keys the query head is rounded to
// 8-bit blocks of 32 first, as llama.cpp does for a quantized K cache; the values' weighted sum reads
// their blocks directly. The reference path dequantizes keys and values to floats instead. `sinks` (one logit per
// head, or nullptr) joins each softmax's denominator.
void decode_attention(const Hparams& hp, int layer, std::span<const KvPlace> places, const float* q, float* out,
                      simd::KernelPath path, int n_threads, DecodeAttentionScratch& scratch, const float* sinks = nullptr);

}  // namespace rill
