#include "runtime/compute/attention_decode.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "runtime/compute/matmul.h"
#include "runtime/compute/ops.h"
#include "simd/dot.h"

namespace rill {

namespace {
// Room for one query head in any activation format, rounded to a cache line so threads never share one.
size_t query_bytes(int head_dim) {
    const size_t n = size_t(head_dim);
    const size_t most = std::max(simd::act_bytes(simd::ActFormat::F32, n), simd::act_bytes(simd::ActFormat::Q8x32, n));
    return (most + 63) / 64 * 64;
}
}  // namespace

DecodeAttentionScratch::DecodeAttentionScratch(int n_threads, int n_ctx, int head_dim)
    : n_ctx(n_ctx),
      query_stride(query_bytes(head_dim)),
      scores(size_t(n_threads) * size_t(n_ctx)),
      head(size_t(n_threads) * size_t(head_dim)),
      query(size_t(n_threads) * query_stride) {}

void decode_attention(const Hparams& hp, int layer, std::span<const KvPlace> places, const float* q_all, float* out_all,
                      simd::KernelPath path, int n_threads, DecodeAttentionScratch& s, const float* sinks) {
    if (places.empty()) return;
    const int D = hp.head_dim, group = hp.n_head / hp.n_head_kv, window = hp.window(layer);
    const float scale = hp.kq_scale();
    const int pairs = int(places.size()) * hp.n_head;
    int longest = 0;
    for (const KvPlace& p : places) longest = std::max(longest, p.pos + 1);
    if (window > 0) longest = std::min(longest, window);
    const bool parallel = size_t(pairs) * size_t(longest) * size_t(D) * 2 >= kMinParallelWork;
    const bool reference = path == simd::KernelPath::Reference;
    const simd::GemvKernels* kernels = reference ? nullptr : &simd::gemv_kernels(path);
    const KvTypes types = places[0].kv->types;
    const TensorType key_type = tensor_type(types.k), value_type = tensor_type(types.v);
    const simd::ActFormat query_format = simd::act_format(key_type, path);
    const simd::DotRowsFn dot = reference ? nullptr : kernels->dot_rows(key_type);
    const simd::WeightedSumFn weighted_sum = reference ? nullptr : kernels->weighted_sum(value_type);
#pragma omp parallel for num_threads(n_threads) schedule(static) if (parallel)
    for (int i = 0; i < pairs; ++i) {
        const int t = i / hp.n_head, h = i % hp.n_head;
        const int kv_offset = (h / group) * D;
        const KvCache& kv = *places[size_t(t)].kv;
        const int pos = places[size_t(t)].pos;
        const int oldest = window > 0 ? std::max(0, pos - window + 1) : 0;  // the first position it sees
        const int n_pos = pos - oldest + 1;
        const size_t thread = size_t(omp_get_thread_num());
        float* scores = &s.scores[thread * size_t(s.n_ctx)];
        float* buf = &s.head[thread * size_t(D)];
        const float* q = &q_all[(size_t(t) * hp.n_head + h) * D];
        float* out = &out_all[(size_t(t) * hp.n_head + h) * D];
        if (reference) {
            for (int p = 0; p < n_pos; ++p) {
                kv.load_key(layer, oldest + p, kv_offset, D, buf);
                scores[p] = simd::dot(q, buf, size_t(D)) * scale;
            }
            if (sinks) softmax_with_sink(scores, n_pos, sinks[h]);
            else softmax(scores, n_pos);
            std::fill(out, out + D, 0.0f);
            for (int p = 0; p < n_pos; ++p) {
                kv.load_value(layer, oldest + p, kv_offset, D, buf);
                simd::axpy(scores[p], buf, out, size_t(D));
            }
            continue;
        }
        // The visible positions are consecutive slots, wrapping once at the end of a ring.
        const int ring = kv.capacity[size_t(layer)];
        const int head_slots = std::min(n_pos, ring - oldest % ring);
        const uint8_t* first_key = kv.key_row(layer, oldest) + kv.key_offset(kv_offset);
        const uint8_t* wrapped_key = kv.key_row(layer, 0) + kv.key_offset(kv_offset);  // slot 0
        const uint8_t* first_value = kv.value_row(layer, oldest) + kv.value_offset(kv_offset);
        const uint8_t* wrapped_value = kv.value_row(layer, 0) + kv.value_offset(kv_offset);
        const uint8_t* query = reinterpret_cast<const uint8_t*>(q);
        if (query_format != simd::ActFormat::F32) {
            uint8_t* prepared = &s.query[thread * s.query_stride];
            kernels->prepare(query_format, q, size_t(D), prepared);
            query = prepared;
        }
        dot(first_key, kv.k_row, size_t(head_slots), size_t(D), query, scores);
        if (n_pos > head_slots) dot(wrapped_key, kv.k_row, size_t(n_pos - head_slots), size_t(D), query, scores + head_slots);
        for (int p = 0; p < n_pos; ++p) scores[p] *= scale;
        if (sinks) softmax_with_sink(scores, n_pos, sinks[h]);
        else softmax(scores, n_pos);
        weighted_sum(first_value, kv.v_row, size_t(head_slots), size_t(D), scores, out);
        if (n_pos > head_slots) {
            weighted_sum(wrapped_value, kv.v_row, size_t(n_pos - head_slots), size_t(D), scores + head_slots, buf);
            for (int d = 0; d < D; ++d) out[d] += buf[d];
        }
    }
}

}  // namespace rill
