// Attention for decode steps: each token's query against every cached position of its own sequence,
// reading keys and values straight from the cache's F16 (or F32) rows with the decode kernels. The
// tokens may belong to different sequences (a server's batch), each with its own cache.
#pragma once
#include <span>
#include <vector>

#include "runtime/compute/kv_cache.h"
#include "runtime/model/model.h"
#include "simd/gemv.h"

namespace rill {

// A token's cache and position: it is stored at `pos` and attends to 0 .. pos.
struct KvPlace {
    KvCache* kv;
    int pos;
};

// Per-thread buffers: scores for up to n_ctx positions and one widened head (reference path).
struct DecodeAttentionScratch {
    int n_ctx = 0;
    std::vector<float> scores, head;
    DecodeAttentionScratch() = default;
    DecodeAttentionScratch(int n_threads, int n_ctx, int head_dim);
};

// out[t][h] = softmax(q[t][h] · keys · kq_scale) · values over the positions token t sees in layer
// `layer` (0 .. places[t].pos, or its last window of them); q and out are [token][n_head][head_dim]. Each (token, head) is one thread's, so
// results do not depend on the thread count. Every cache has the same KV type. `sinks` (one logit per
// head, or nullptr) joins each softmax's denominator.
void decode_attention(const Hparams& hp, int layer, std::span<const KvPlace> places, const float* q, float* out,
                      simd::KernelPath path, int n_threads, DecodeAttentionScratch& scratch, const float* sinks = nullptr);

}  // namespace rill
