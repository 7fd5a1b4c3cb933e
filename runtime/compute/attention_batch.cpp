#include "runtime/compute/attention_batch.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "runtime/compute/ops.h"

namespace rill {

namespace {

// One head's keys as rows and values as columns, positions [oldest, oldest + n_pos), dequantized to
// float32 from whatever types the cache keeps them in; `value` holds one value head on the way.
void load_head(const KvCache& kv, int layer, int kv_head, int head_dim, int oldest, int n_pos, float* keys, float* values_t,
               float* value) {
    const int offset = kv_head * head_dim;
    for (int p = 0; p < n_pos; ++p) {
        kv.load_key(layer, oldest + p, offset, head_dim, keys + size_t(p) * size_t(head_dim));
        kv.load_value(layer, oldest + p, offset, head_dim, value);
        for (int d = 0; d < head_dim; ++d) values_t[size_t(d) * size_t(n_pos) + size_t(p)] = value[d];
    }
}

void gemm(GemmBackend backend, OnednnGemm* onednn, int thread, const GemmShape& shape, const float* a, const float* b, float* c) {
    if (backend == GemmBackend::Onednn) onednn_gemm(*onednn, thread, shape, a, b, c);
    else openblas_gemm(shape, a, b, c);
}

}  // namespace

void batch_attention(const Hparams& hp, const KvCache& kv, int layer, int pos0, int n_tokens, const float* q, float* out,
                     GemmBackend backend, OnednnGemm* onednn, int n_threads, AttentionScratch& s, const float* sinks) {
    // The layer's own head size and KV heads; its keys and values may be an earlier layer's (gemma4).
    const int D = hp.head_dim_of(layer), n_head_kv = hp.n_head_kv_of(layer), group = hp.n_head / n_head_kv, row = hp.n_head * D,
              window = hp.window(layer), cache = hp.kv_source(layer);
    const float scale = hp.kq_scale();
    const int n_blocks = (n_tokens + kQueryBlock - 1) / kQueryBlock;
    const int n_tasks = n_head_kv * n_blocks;
    const size_t widest = size_t(pos0 + n_tokens);
    s.keys.resize(size_t(n_threads));
    s.values_t.resize(size_t(n_threads));
    s.scores.resize(size_t(n_threads));
    s.value.resize(size_t(n_threads));
    for (int t = 0; t < n_threads; ++t) {
        if (s.keys[size_t(t)].size() < widest * size_t(D)) s.keys[size_t(t)].resize(widest * size_t(D));
        if (s.values_t[size_t(t)].size() < widest * size_t(D)) s.values_t[size_t(t)].resize(widest * size_t(D));
        if (s.scores[size_t(t)].size() < widest * kQueryBlock) s.scores[size_t(t)].resize(widest * kQueryBlock);
        s.value[size_t(t)].resize(size_t(D));
    }
    std::exception_ptr failure;
#pragma omp parallel num_threads(n_threads)
    {
        const int me = omp_get_thread_num();
        omp_set_num_threads(1);  // the GEMMs run on this thread (see matmul.cpp)
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < n_tasks; ++task) {
            const int kv_head = task / n_blocks, first = (task % n_blocks) * kQueryBlock;
            const int m = std::min(kQueryBlock, n_tokens - first);
            // The block sees positions [oldest, its last token's]: from 0, or from its first token's window.
            const int oldest = window > 0 ? std::max(0, pos0 + first - window + 1) : 0;
            const int n_pos = pos0 + first + m - oldest;
            float* keys = s.keys[size_t(me)].data();
            float* values_t = s.values_t[size_t(me)].data();
            float* scores = s.scores[size_t(me)].data();
            load_head(kv, cache, kv_head, D, oldest, n_pos, keys, values_t, s.value[size_t(me)].data());
            try {
                for (int h = kv_head * group; h < (kv_head + 1) * group; ++h) {
                    const float* q_block = q + size_t(first) * size_t(row) + size_t(h) * size_t(D);
                    gemm(backend, onednn, me, GemmShape{.m = m, .n = n_pos, .k = D, .ldc = n_pos, .lda = row, .ldb = D}, q_block, keys, scores);
                    for (int i = 0; i < m; ++i) {
                        float* r = scores + size_t(i) * size_t(n_pos);
                        // Causal: its own position and earlier ones; in a window, only its last `window`.
                        const int end = pos0 + first + i + 1 - oldest;
                        const int begin = window > 0 ? std::max(0, end - window) : 0;
                        for (int p = begin; p < end; ++p) r[p] *= scale;
                        if (sinks) softmax_with_sink(r + begin, end - begin, sinks[h]);
                        else softmax(r + begin, end - begin);
                        std::fill(r, r + begin, 0.0f);
                        std::fill(r + end, r + n_pos, 0.0f);
                    }
                    float* out_block = out + size_t(first) * size_t(row) + size_t(h) * size_t(D);
                    gemm(backend, onednn, me, GemmShape{.m = m, .n = D, .k = n_pos, .ldc = row, .lda = n_pos, .ldb = n_pos}, scores,
                         values_t, out_block);
                }
            } catch (...) {
#pragma omp critical(rill_attention_failure)
                if (!failure) failure = std::current_exception();
            }
        }
    }
    if (failure) std::rethrow_exception(failure);
}

}  // namespace rill
