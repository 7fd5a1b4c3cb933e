#include "runtime/compute/mamba2.h"

#include <algorithm>
#include <cmath>

#include "runtime/compute/causal_conv.h"
#include "simd/dot.h"

namespace rill {
namespace {

const float* floats(const Weight& w) { return w ? reinterpret_cast<const float*>(w.tensor->data) : nullptr; }

// ggml's softplus: x itself above 20, else log1p(e^x).
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

}  // namespace

void mamba2(const Hparams& hp, const LayerWeights& L, int layer, const float* xn, int n, std::span<const KvPlace> places, float* out,
            MatmulScratch& mm, Mamba2Scratch& s) {
    const SsmParams& p = hp.ssm;
    const int inner = p.inner_size, S = p.state_size, heads = p.n_v_heads, groups = p.n_k_heads;
    const int head_dim = inner / heads, per_group = heads / groups;
    const int conv_channels = inner + 2 * groups * S, width = inner + conv_channels + heads;
    const size_t rows = size_t(n);
    s.proj.resize(rows * size_t(width));
    s.y.resize(rows * size_t(inner));
    matmul(L.ssm_in, xn, s.proj.data(), n, mm);

    // The convolution reads the rows' xBC parts, which sit inside the projection rows: gather them.
    std::vector<float>& conv = s.conv;
    conv.resize(rows * size_t(conv_channels));
    for (size_t t = 0; t < rows; ++t)
        std::copy_n(&s.proj[t * size_t(width) + size_t(inner)], conv_channels, &conv[t * size_t(conv_channels)]);
    causal_conv(conv.data(), n, conv_channels, p.conv_kernel, floats(L.ssm_conv), layer, places, mm.n_threads);
    const float* bias = floats(L.ssm_conv_bias);
    for (size_t t = 0; t < rows; ++t) {
        float* c = &conv[t * size_t(conv_channels)];
        if (bias)
            for (int i = 0; i < conv_channels; ++i) c[i] += bias[i];
        simd::silu(c, size_t(conv_channels));
    }

    const float *dt_bias = floats(L.ssm_dt_bias), *A = floats(L.ssm_a), *D = floats(L.ssm_d);
    const bool parallel = mm.n_threads > 1 && rows * size_t(inner) * size_t(S) >= kMinParallelWork;
#pragma omp parallel for num_threads(mm.n_threads) schedule(static) if (parallel)
    for (int h = 0; h < heads; ++h) {
        const int g = h / per_group;
        for (size_t t = 0; t < rows; ++t) {
            const float* c = &conv[t * size_t(conv_channels)];
            const float* x = c + size_t(h) * size_t(head_dim);
            const float* B = c + size_t(inner) + size_t(g) * size_t(S);
            const float* C = c + size_t(inner) + size_t(groups) * size_t(S) + size_t(g) * size_t(S);
            const float delta = softplus(s.proj[t * size_t(width) + size_t(inner + conv_channels + h)] + dt_bias[h]);
            const float decay = std::exp(delta * A[h]);
            float* state = places[t].recurrent->matrix(layer) + size_t(h) * size_t(head_dim) * size_t(S);
            float* y = &s.y[t * size_t(inner) + size_t(h) * size_t(head_dim)];
            // Each channel's row in vector lanes: decay, take Δ·x·B, read along C (the scalar loop this
            // replaces was a sixth of a granite-4.0-h-tiny decode step).
            for (int i = 0; i < head_dim; ++i) {
                float* row = state + size_t(i) * size_t(S);
                simd::scale(row, size_t(S), decay);
                simd::axpy(x[i] * delta, B, row, size_t(S));
                y[i] = simd::dot(row, C, size_t(S)) + x[i] * D[h];
            }
        }
    }
    // y ⊙ silu(z), then RMS-normalised per group, each group with its own slice of ssm_norm.
    const float* gain = floats(L.ssm_norm);
    const int group_width = inner / groups;
    for (size_t t = 0; t < rows; ++t) {
        float* y = &s.y[t * size_t(inner)];
        const float* z = &s.proj[t * size_t(width)];
        for (int i = 0; i < inner; ++i) y[i] *= z[i] / (1.0f + std::exp(-z[i]));
        for (int g = 0; g < groups; ++g) {
            float* part = y + size_t(g) * size_t(group_width);
            double sum_sq = 0;
            for (int i = 0; i < group_width; ++i) sum_sq += double(part[i]) * part[i];
            const float scale = float(1.0 / std::sqrt(sum_sq / group_width + hp.rms_eps));
            for (int i = 0; i < group_width; ++i) part[i] *= scale * gain[size_t(g) * size_t(group_width) + size_t(i)];
        }
    }
    matmul(L.ssm_out, s.y.data(), out, n, mm);
}

}  // namespace rill
