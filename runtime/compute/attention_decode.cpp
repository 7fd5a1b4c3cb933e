#include "runtime/compute/attention_decode.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "runtime/compute/matmul.h"
#include "runtime/compute/ops.h"
#include "simd/dot.h"

namespace rill {

namespace {
constexpr int kMaxHeadsAtOnce = 8;  // dot_heads and weighted_sum_heads take up to 8 query heads

// Room for one query head in any activation format, rounded to a cache line so threads never share one.
size_t query_bytes(int head_dim) {
    const size_t n = size_t(head_dim);
    const size_t most = std::max(simd::act_bytes(simd::ActFormat::F32, n), simd::act_bytes(simd::ActFormat::Q8x32, n));
    return (most + 63) / 64 * 64;
}
}  // namespace

DecodeAttentionScratch::DecodeAttentionScratch(int n_threads, int n_ctx, int head_dim, int heads_per_key)
    : n_ctx(n_ctx),
      heads(std::clamp(heads_per_key, 1, kMaxHeadsAtOnce)),
      query_stride(query_bytes(head_dim)),
      scores(size_t(n_threads) * size_t(heads) * size_t(n_ctx)),
      head(size_t(n_threads) * size_t(heads) * size_t(head_dim)),
      query(size_t(n_threads) * query_stride) {}

namespace {

// The positions a token at `pos` sees in `layer`: from `oldest`, n_pos of them, in consecutive cache
// slots for the first `head_slots` and from slot 0 for the rest (a ring wraps once at its end).
struct Visible {
    int oldest, n_pos, head_slots;
};
Visible visible(const Hparams& hp, const KvCache& kv, int layer, int pos) {
    const int window = hp.window(layer);
    const int oldest = window > 0 ? std::max(0, pos - window + 1) : 0;
    const int n_pos = pos - oldest + 1;
    const int ring = kv.capacity[size_t(hp.kv_source(layer))];
    return {oldest, n_pos, std::min(n_pos, ring - oldest % ring)};
}

// The query heads [h0, h0 + m) of token t, which share one key head, over float keys and values.
void attend_heads(const Hparams& hp, int layer, const KvPlace& place, int h0, int m, const float* q_all, float* out_all,
                  const simd::GemvKernels& kernels, TensorType key_type, TensorType value_type, float* scores, float* buf,
                  size_t t, int n_ctx, const float* sinks) {
    const int D = hp.head_dim_of(layer), group = hp.n_head / hp.n_head_kv_of(layer), cache = hp.kv_source(layer);
    const KvCache& kv = *place.kv;
    const int kv_offset = (h0 / group) * D;
    const auto [oldest, n_pos, head_slots] = visible(hp, kv, layer, place.pos);
    const float* q = &q_all[(t * size_t(hp.n_head) + size_t(h0)) * size_t(D)];
    float* out = &out_all[(t * size_t(hp.n_head) + size_t(h0)) * size_t(D)];
    const size_t stride = size_t(n_ctx);
    const simd::DotHeadsFn dot = kernels.dot_heads(key_type);
    dot(kv.key_row(cache, oldest) + kv.key_offset(kv_offset), kv.k_row(cache), size_t(head_slots), size_t(D), q, m, scores, stride);
    if (n_pos > head_slots)
        dot(kv.key_row(cache, 0) + kv.key_offset(kv_offset), kv.k_row(cache), size_t(n_pos - head_slots), size_t(D), q, m, scores + head_slots, stride);
    const float scale = hp.kq_scale();
    for (int h = 0; h < m; ++h) {
        float* s = scores + size_t(h) * stride;
        for (int p = 0; p < n_pos; ++p) s[p] *= scale;
        if (sinks) softmax_with_sink(s, n_pos, sinks[h0 + h]);
        else softmax(s, n_pos);
    }
    const simd::WeightedSumHeadsFn sum = kernels.weighted_sum_heads(value_type);
    sum(kv.value_row(cache, oldest) + kv.value_offset(kv_offset), kv.v_row(cache), size_t(head_slots), size_t(D), scores, stride, m, out);
    if (n_pos > head_slots) {
        sum(kv.value_row(cache, 0) + kv.value_offset(kv_offset), kv.v_row(cache), size_t(n_pos - head_slots), size_t(D), scores + head_slots,
            stride, m, buf);
        for (size_t i = 0; i < size_t(m) * size_t(D); ++i) out[i] += buf[i];
    }
}

}  // namespace

void decode_attention(const Hparams& hp, int layer, std::span<const KvPlace> places, const float* q_all, float* out_all,
                      simd::KernelPath path, int n_threads, DecodeAttentionScratch& s, const float* sinks) {
    if (places.empty()) return;
    // A layer's own head size and KV heads; its keys and values may be an earlier layer's (gemma4).
    const int D = hp.head_dim_of(layer), n_head_kv = hp.n_head_kv_of(layer), group = hp.n_head / n_head_kv, window = hp.window(layer);
    const int cache = hp.kv_source(layer);
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
    if (!reference && kernels->dot_heads(key_type) && kernels->weighted_sum_heads(value_type) && D % 16 == 0) {
        // Units of up to s.heads query heads sharing a key head; split further while there are fewer
        // units than threads (one key head and one token would leave a thread idle). A head's
        // results are the same in any split.
        int per_unit = std::min(s.heads, group);
        const int n_units_full = int(places.size()) * n_head_kv;
        while (per_unit > 1 && n_units_full * ((group + per_unit - 1) / per_unit) < n_threads) per_unit = (per_unit + 1) / 2;
        const int parts = (group + per_unit - 1) / per_unit;
        const int units = n_units_full * parts;
#pragma omp parallel for num_threads(n_threads) schedule(static) if (parallel)
        for (int u = 0; u < units; ++u) {
            const int t = u / (n_head_kv * parts), kv_head = (u / parts) % n_head_kv, part = u % parts;
            const int h0 = kv_head * group + part * per_unit;
            const int m = std::min(per_unit, group - part * per_unit);
            const size_t thread = size_t(omp_get_thread_num());
            attend_heads(hp, layer, places[size_t(t)], h0, m, q_all, out_all, *kernels, key_type, value_type,
                         &s.scores[thread * size_t(s.heads) * size_t(s.n_ctx)], &s.head[thread * size_t(s.heads) * size_t(D)], size_t(t),
                         s.n_ctx, sinks);
        }
        return;
    }
#pragma omp parallel for num_threads(n_threads) schedule(static) if (parallel)
    for (int i = 0; i < pairs; ++i) {
        const int t = i / hp.n_head, h = i % hp.n_head;
        const int kv_offset = (h / group) * D;
        const KvCache& kv = *places[size_t(t)].kv;
        const auto [oldest, n_pos, head_slots] = visible(hp, kv, layer, places[size_t(t)].pos);
        const size_t thread = size_t(omp_get_thread_num());
        float* scores = &s.scores[thread * size_t(s.n_ctx)];
        float* buf = &s.head[thread * size_t(D)];
        const float* q = &q_all[(size_t(t) * hp.n_head + h) * D];
        float* out = &out_all[(size_t(t) * hp.n_head + h) * D];
        if (reference) {
            for (int p = 0; p < n_pos; ++p) {
                kv.load_key(cache, oldest + p, kv_offset, D, buf);
                scores[p] = simd::dot(q, buf, size_t(D)) * scale;
            }
            if (sinks) softmax_with_sink(scores, n_pos, sinks[h]);
            else softmax(scores, n_pos);
            std::fill(out, out + D, 0.0f);
            for (int p = 0; p < n_pos; ++p) {
                kv.load_value(cache, oldest + p, kv_offset, D, buf);
                simd::axpy(scores[p], buf, out, size_t(D));
            }
            continue;
        }
        const uint8_t* first_key = kv.key_row(cache, oldest) + kv.key_offset(kv_offset);
        const uint8_t* wrapped_key = kv.key_row(cache, 0) + kv.key_offset(kv_offset);  // slot 0
        const uint8_t* first_value = kv.value_row(cache, oldest) + kv.value_offset(kv_offset);
        const uint8_t* wrapped_value = kv.value_row(cache, 0) + kv.value_offset(kv_offset);
        const uint8_t* query = reinterpret_cast<const uint8_t*>(q);
        if (query_format != simd::ActFormat::F32) {
            uint8_t* prepared = &s.query[thread * s.query_stride];
            kernels->prepare(query_format, q, size_t(D), prepared);
            query = prepared;
        }
        dot(first_key, kv.k_row(cache), size_t(head_slots), size_t(D), query, scores);
        if (n_pos > head_slots) dot(wrapped_key, kv.k_row(cache), size_t(n_pos - head_slots), size_t(D), query, scores + head_slots);
        for (int p = 0; p < n_pos; ++p) scores[p] *= scale;
        if (sinks) softmax_with_sink(scores, n_pos, sinks[h]);
        else softmax(scores, n_pos);
        weighted_sum(first_value, kv.v_row(cache), size_t(head_slots), size_t(D), scores, out);
        if (n_pos > head_slots) {
            weighted_sum(wrapped_value, kv.v_row(cache), size_t(n_pos - head_slots), size_t(D), scores + head_slots, buf);
            for (int d = 0; d < D; ++d) out[d] += buf[d];
        }
    }
}

}  // namespace rill
