#include "runtime/compute/delta_net.h"

#include <algorithm>
#include <cmath>

#include <omp.h>

#include "runtime/compute/causal_conv.h"
#include "runtime/compute/gemm.h"
#include "runtime/compute/ops.h"
#include "simd/dot.h"
#include "simd/gemv.h"

namespace rill {
namespace {

const float* floats(const Weight& w) { return reinterpret_cast<const float*>(w.tensor->data); }

// As ggml: softplus as ln(1 + e^x), x itself above 20.
float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }

// ggml_l2_norm: x / max(‖x‖, eps), the sum of squares in double.
void l2_normalise(float* x, int n, float eps) {
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += double(x[i]) * x[i];
    const float scale = 1.0f / std::max(std::sqrt(float(sum)), eps);
    for (int i = 0; i < n; ++i) x[i] *= scale;
}

// The reference path's delta rule: the same operations as the kernels' (simd/delta_rule.inl) in
// plain scalar code, M's rows indexed by key.
void delta_rule_reference(float* M, const float* q, const float* k, const float* v, float decay, float beta, float scale, size_t S,
                          float* o) {
    for (size_t j = 0; j < S; ++j) {
        float y = 0;
        for (size_t i = 0; i < S; ++i) {
            M[i * S + j] *= decay;
            y += k[i] * M[i * S + j];
        }
        const float delta = (v[j] - y) * beta;
        float out = 0;
        for (size_t i = 0; i < S; ++i) {
            M[i * S + j] += k[i] * delta;
            out += q[i] * M[i * S + j];
        }
        o[j] = out * scale;
    }
}

void transpose(const float* a, size_t rows, size_t cols, float* out) {
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) out[c * rows + r] = a[r * cols + c];
}

// The chunked (WY) form of the rule over c consecutive tokens of one sequence for one value head, as
// llama.cpp's build_delta_net_chunking writes it: with Γ the running sum of the log decays and
// D[t][s] = e^(Γt − Γs) (s ≤ t), A = strictly-lower(diag(β) K Kᵀ ⊙ D), U and W solve
// (I + A) U = diag(β) V and (I + A) W = diag(β e^Γ) K, V' = U − W M, the outputs are
// e^Γ ⊙ Q M / √S + lower(Q Kᵀ / √S ⊙ D) V', and M becomes e^(Γlast) M + (K ⊙ e^(Γlast − Γ))ᵀ V'.
// The matrix products go through the float32 GEMM (one thread's; the heads share the team). The
// caller fills b's q, k, v rows, beta and gamma (the log decays, summed here); outputs go to b.out.
void delta_rule_chunk(float* M, float scale, size_t c, size_t S, DeltaChunkBuffers& b) {
    const auto gemm = [](int m, int n, int kk, const float* a, const float* bt, float* out) {
        openblas_gemm(GemmShape{.m = m, .n = n, .k = kk}, a, bt, out);
    };
    const float* beta = b.beta.data();
    for (size_t t = 1; t < c; ++t) b.gamma[t] += b.gamma[t - 1];
    gemm(int(c), int(c), int(S), b.k.data(), b.k.data(), b.kk.data());
    for (size_t t = 0; t < c; ++t) {
        float* ut = &b.u[t * S];
        float* wt = &b.w[t * S];
        const float grow = std::exp(b.gamma[t]);
        for (size_t j = 0; j < S; ++j) {
            ut[j] = beta[t] * b.v[t * S + j];
            wt[j] = beta[t] * grow * b.k[t * S + j];
        }
        for (size_t s = 0; s < t; ++s) {
            const float a = beta[t] * b.kk[t * c + s] * std::exp(b.gamma[t] - b.gamma[s]);
            simd::axpy(-a, &b.u[s * S], ut, S);
            simd::axpy(-a, &b.w[s * S], wt, S);
        }
    }
    transpose(M, S, S, b.mt.data());  // rows by value index, as the GEMM reads its second operand
    gemm(int(c), int(S), int(S), b.w.data(), b.mt.data(), b.wm.data());
    for (size_t i = 0; i < c * S; ++i) b.u[i] -= b.wm[i];  // V'
    gemm(int(c), int(S), int(S), b.q.data(), b.mt.data(), b.qm.data());
    gemm(int(c), int(c), int(S), b.q.data(), b.k.data(), b.p.data());
    for (size_t t = 0; t < c; ++t)
        for (size_t s = 0; s < c; ++s) b.p[t * c + s] = s <= t ? b.p[t * c + s] * scale * std::exp(b.gamma[t] - b.gamma[s]) : 0.0f;
    transpose(b.u.data(), c, S, b.vt.data());
    gemm(int(c), int(S), int(c), b.p.data(), b.vt.data(), b.wm.data());  // reuses wm for P V'
    for (size_t t = 0; t < c; ++t) {
        const float grow = std::exp(b.gamma[t]) * scale;
        for (size_t j = 0; j < S; ++j) b.out[t * S + j] = b.wm[t * S + j] + grow * b.qm[t * S + j];
    }
    const float last = b.gamma[c - 1];
    for (size_t s = 0; s < c; ++s) {
        const float fade = std::exp(last - b.gamma[s]);
        for (size_t i = 0; i < S; ++i) b.kdt[i * c + s] = b.k[s * S + i] * fade;
    }
    gemm(int(S), int(S), int(c), b.kdt.data(), b.vt.data(), b.update.data());
    const float decay = std::exp(last);
    for (size_t i = 0; i < S * S; ++i) M[i] = M[i] * decay + b.update[i];
}

}  // namespace

void gated_delta_net(const Hparams& hp, const LayerWeights& L, int layer, const float* xn, int n, std::span<const KvPlace> places,
                     float* out, MatmulScratch& mm, DeltaNetScratch& s) {
    const SsmParams& p = hp.ssm;
    const int C = p.conv_dim(), V = p.value_dim(), Hv = p.n_v_heads, Hk = p.n_k_heads, S = p.state_size;
    const size_t rows = size_t(n);
    s.u.resize(rows * size_t(C));
    s.z.resize(rows * size_t(V));
    s.alpha.resize(rows * size_t(Hv));
    s.beta.resize(rows * size_t(Hv));
    s.y.resize(rows * size_t(V));
    const MatmulOutput projections[] = {{L.ssm_in, s.u.data()}, {L.ssm_z, s.z.data()}, {L.ssm_alpha, s.alpha.data()}, {L.ssm_beta, s.beta.data()}};
    matmul(projections, xn, n, mm);

    const float *taps = floats(L.ssm_conv), *dt_bias = floats(L.ssm_dt_bias), *a = floats(L.ssm_a);
    // A row at position 0 starts its sequence: the convolution clears its window and matrices.
    causal_conv(s.u.data(), n, C, p.conv_kernel, taps, layer, places, mm.n_threads);
    // What follows is each row's own.
    const bool prompt = mm.n_threads > 1 && rows * size_t(C) * size_t(p.conv_kernel) >= kMinParallelWork;
#pragma omp parallel for num_threads(mm.n_threads) schedule(static) if (prompt)
    for (int t = 0; t < n; ++t) {
        float* u = &s.u[size_t(t) * size_t(C)];
        simd::silu(u, size_t(C));
        for (int j = 0; j < 2 * Hk; ++j) l2_normalise(u + size_t(j) * size_t(S), S, hp.rms_eps);
        for (int h = 0; h < Hv; ++h) {
            float& g = s.alpha[size_t(t) * size_t(Hv) + size_t(h)];
            g = softplus(g + dt_bias[h]) * a[h];  // the log of this token's decay, ≤ 0
            float& beta = s.beta[size_t(t) * size_t(Hv) + size_t(h)];
            beta = 1.0f / (1.0f + std::exp(-beta));
        }
    }

    const float scale = 1.0f / std::sqrt(float(S));
    const simd::DeltaRuleFn rule = mm.path == simd::KernelPath::Reference ? delta_rule_reference : simd::gemv_kernels(mm.path).delta_rule;
    const bool shared = mm.n_threads > 1 && size_t(n) * size_t(V) * size_t(S) >= kMinParallelWork;
    // Runs of rows that are one sequence's consecutive positions may take the chunked form.
    const bool chunked = s.chunked && mm.path != simd::KernelPath::Reference;
    if (chunked && s.chunk_buffers.size() < size_t(mm.n_threads)) s.chunk_buffers.resize(size_t(mm.n_threads));
#pragma omp parallel for num_threads(mm.n_threads) schedule(static) if (shared)
    for (int h = 0; h < Hv; ++h) {
        const int kh = h % Hk;  // llama.cpp's tiled order: the converter put the value heads in it
        if (chunked) omp_set_num_threads(1);  // the chunk's GEMMs run on this thread
        DeltaChunkBuffers* buffers = chunked ? &s.chunk_buffers[size_t(omp_get_thread_num())] : nullptr;
        // Row r's query, key and value for this head, and where its output goes.
        const auto q_of = [&](size_t r) { return &s.u[r * size_t(C) + size_t(kh) * size_t(S)]; };
        const auto k_of = [&](size_t r) { return &s.u[r * size_t(C) + size_t(Hk + kh) * size_t(S)]; };
        const auto v_of = [&](size_t r) { return &s.u[r * size_t(C) + size_t(2 * Hk + h) * size_t(S)]; };
        const auto o_of = [&](size_t r) { return &s.y[r * size_t(V) + size_t(h) * size_t(S)]; };
        for (int t = 0; t < n;) {
            int run = 1;
            while (t + run < n && places[size_t(t + run)].recurrent == places[size_t(t)].recurrent &&
                   places[size_t(t + run)].pos == places[size_t(t)].pos + run)
                ++run;
            if (!chunked || run < kChunkMinTokens) {  // the recurrent form, one row
                const size_t r = size_t(t++);
                float* M = places[r].recurrent->matrix(layer) + size_t(h) * size_t(S) * size_t(S);
                rule(M, q_of(r), k_of(r), v_of(r), std::exp(s.alpha[r * size_t(Hv) + size_t(h)]), s.beta[r * size_t(Hv) + size_t(h)], scale,
                     size_t(S), o_of(r));
                continue;
            }
            float* M = places[size_t(t)].recurrent->matrix(layer) + size_t(h) * size_t(S) * size_t(S);
            for (int first = t; first < t + run; first += kChunk) {
                const size_t c = size_t(std::min(kChunk, t + run - first));
                DeltaChunkBuffers& b = *buffers;
                b.size(c, size_t(S));
                for (size_t i = 0; i < c; ++i) {
                    const size_t r = size_t(first) + i;
                    std::copy_n(q_of(r), S, &b.q[i * size_t(S)]);
                    std::copy_n(k_of(r), S, &b.k[i * size_t(S)]);
                    std::copy_n(v_of(r), S, &b.v[i * size_t(S)]);
                    b.gamma[i] = s.alpha[r * size_t(Hv) + size_t(h)];
                    b.beta[i] = s.beta[r * size_t(Hv) + size_t(h)];
                }
                delta_rule_chunk(M, scale, c, size_t(S), b);
                for (size_t i = 0; i < c; ++i) std::copy_n(&b.out[i * size_t(S)], S, o_of(size_t(first) + i));
            }
            t += run;
        }
    }

    // The gated norm: each head's output normalised with the one shared gain, times silu(z) (into z).
    for (size_t i = 0; i < rows * size_t(Hv); ++i) rmsnorm(&s.y[i * size_t(S)], L.ssm_norm, &s.y[i * size_t(S)], S, hp.rms_eps);
    simd::swiglu(s.z.data(), s.y.data(), rows * size_t(V));
    matmul(L.ssm_out, s.z.data(), out, n, mm);
}

}  // namespace rill
