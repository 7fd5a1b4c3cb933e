#include "runtime/compute/attention_decode.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "runtime/compute/matmul.h"
#include "runtime/compute/ops.h"
#include "simd/dot.h"

namespace rill {

DecodeAttentionScratch::DecodeAttentionScratch(int n_threads, int n_ctx, int head_dim)
    : n_ctx(n_ctx), scores(size_t(n_threads) * size_t(n_ctx)), head(size_t(n_threads) * size_t(head_dim)) {}

void decode_attention(const Hparams& hp, int layer, std::span<const KvPlace> places, const float* q_all, float* out_all,
                      simd::KernelPath path, int n_threads, DecodeAttentionScratch& s, const float* sinks) {
    const int D = hp.head_dim, group = hp.n_head / hp.n_head_kv, window = hp.window(layer);
    const float scale = hp.kq_scale();
    const int pairs = int(places.size()) * hp.n_head;
    int longest = 0;
    for (const KvPlace& p : places) longest = std::max(longest, p.pos + 1);
    if (window > 0) longest = std::min(longest, window);
    const bool parallel = size_t(pairs) * size_t(longest) * size_t(D) * 2 >= kMinParallelWork;
    const bool reference = path == simd::KernelPath::Reference;
    const simd::GemvKernels* kernels = reference ? nullptr : &simd::gemv_kernels(path);
    const bool f16 = places.empty() || places[0].kv->type == KvType::F16;
    const size_t elem = f16 ? 2 : 4;
#pragma omp parallel for num_threads(n_threads) schedule(static) if (parallel)
    for (int i = 0; i < pairs; ++i) {
        const int t = i / hp.n_head, h = i % hp.n_head;
        const int kv_offset = (h / group) * D;
        const KvCache& kv = *places[size_t(t)].kv;
        const int pos = places[size_t(t)].pos;
        const int oldest = window > 0 ? std::max(0, pos - window + 1) : 0;  // the first position it sees
        const int n_pos = pos - oldest + 1;
        const size_t row_stride = size_t(kv.kv_dim) * elem;
        const auto* keys = f16 ? reinterpret_cast<const uint8_t*>(kv.k16.data()) : reinterpret_cast<const uint8_t*>(kv.k32.data());
        const auto* values = f16 ? reinterpret_cast<const uint8_t*>(kv.v16.data()) : reinterpret_cast<const uint8_t*>(kv.v32.data());
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
        const size_t first = (kv.offset(layer, oldest) + size_t(kv_offset)) * elem;
        const size_t wrapped = (kv.offset(layer, 0) + size_t(kv_offset)) * elem;  // slot 0
        const auto dot = f16 ? kernels->f16 : kernels->f32;
        const auto weighted_sum = f16 ? kernels->weighted_sum_f16 : kernels->weighted_sum_f32;
        const auto* qb = reinterpret_cast<const uint8_t*>(q);
        dot(keys + first, row_stride, size_t(head_slots), size_t(D), qb, scores);
        if (n_pos > head_slots) dot(keys + wrapped, row_stride, size_t(n_pos - head_slots), size_t(D), qb, scores + head_slots);
        for (int p = 0; p < n_pos; ++p) scores[p] *= scale;
        if (sinks) softmax_with_sink(scores, n_pos, sinks[h]);
        else softmax(scores, n_pos);
        weighted_sum(values + first, row_stride, size_t(head_slots), size_t(D), scores, out);
        if (n_pos > head_slots) {
            weighted_sum(values + wrapped, row_stride, size_t(n_pos - head_slots), size_t(D), scores + head_slots, buf);
            for (int d = 0; d < D; ++d) out[d] += buf[d];
        }
    }
}

}  // namespace rill
