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
                      simd::KernelPath path, int n_threads, DecodeAttentionScratch& s) {
    const int D = hp.head_dim, group = hp.n_head / hp.n_head_kv;
    const float scale = 1.0f / std::sqrt(float(D));
    const int pairs = int(places.size()) * hp.n_head;
    int longest = 0;
    for (const KvPlace& p : places) longest = std::max(longest, p.pos + 1);
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
        const int n_pos = places[size_t(t)].pos + 1;
        const size_t row_stride = size_t(kv.kv_dim) * elem;
        const auto* keys = f16 ? reinterpret_cast<const uint8_t*>(kv.k16.data()) : reinterpret_cast<const uint8_t*>(kv.k32.data());
        const auto* values = f16 ? reinterpret_cast<const uint8_t*>(kv.v16.data()) : reinterpret_cast<const uint8_t*>(kv.v32.data());
        const size_t thread = size_t(omp_get_thread_num());
        float* scores = &s.scores[thread * size_t(s.n_ctx)];
        const float* q = &q_all[(size_t(t) * hp.n_head + h) * D];
        float* out = &out_all[(size_t(t) * hp.n_head + h) * D];
        if (reference) {
            float* buf = &s.head[thread * size_t(D)];
            for (int p = 0; p < n_pos; ++p) {
                kv.load_key(layer, p, kv_offset, D, buf);
                scores[p] = simd::dot(q, buf, size_t(D)) * scale;
            }
            softmax(scores, n_pos);
            std::fill(out, out + D, 0.0f);
            for (int p = 0; p < n_pos; ++p) {
                kv.load_value(layer, p, kv_offset, D, buf);
                simd::axpy(scores[p], buf, out, size_t(D));
            }
            continue;
        }
        const size_t first = (kv.offset(layer, 0) + size_t(kv_offset)) * elem;
        (f16 ? kernels->f16 : kernels->f32)(keys + first, row_stride, size_t(n_pos), size_t(D), reinterpret_cast<const uint8_t*>(q), scores);
        for (int p = 0; p < n_pos; ++p) scores[p] *= scale;
        softmax(scores, n_pos);
        (f16 ? kernels->weighted_sum_f16 : kernels->weighted_sum_f32)(values + first, row_stride, size_t(n_pos), size_t(D), scores, out);
    }
}

}  // namespace rill
