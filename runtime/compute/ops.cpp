#include "runtime/compute/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/interleave.h"
#include "simd/dot.h"

namespace rill {

void weight_row(const Weight& w, int row, float* out) {
    if (w.interleaved && row < w.rows() / int(kInterleave) * int(kInterleave)) {
        // Put back in ggml's layout first; only tests and tools read such a row one at a time.
        std::vector<uint8_t> plain(w.tensor->row_bytes());
        plain_row(w.type(), w.tensor->data, size_t(row), plain.size(), plain.data());
        dequantize_row(w.type(), plain.data(), out, size_t(w.cols()));
        return;
    }
    dequantize_row(w.type(), w.row(row), out, size_t(w.cols()));
}

void rmsnorm(const float* x, const Weight& gain, float* out, int n, float eps) {
    double sum_sq = 0;
    for (int i = 0; i < n; ++i) sum_sq += double(x[i]) * x[i];
    const float scale = float(1.0 / std::sqrt(sum_sq / n + eps));
    if (!gain) {
        for (int i = 0; i < n; ++i) out[i] = x[i] * scale;
        return;
    }
    const float* g = reinterpret_cast<const float*>(gain.tensor->data);
    for (int i = 0; i < n; ++i) out[i] = x[i] * scale * g[i];
}

void add_bias(const Weight& bias, float* rows, int n_tokens, int n) {
    if (!bias) return;
    const float* b = reinterpret_cast<const float*>(bias.tensor->data);
    for (int t = 0; t < n_tokens; ++t)
        for (int i = 0; i < n; ++i) rows[size_t(t) * n + i] += b[i];
}

void rmsnorm_groups(float* x, const Weight& gain, int n_groups, int width, float eps) {
    for (int g = 0; g < n_groups; ++g) rmsnorm(x + size_t(g) * width, gain, x + size_t(g) * width, width, eps);
}

void rope_angles(const RopeParams& r, int n_rot, const Weight& freq_factors, int pos, float* cos_sin) {
    const float* factors = freq_factors ? reinterpret_cast<const float*>(freq_factors.tensor->data) : nullptr;
    // ggml_rope_yarn_corr_dims: the pairs between these turn fewer than beta_fast and more than
    // beta_slow times over the original context, and blend the two angles.
    float lo = 0, hi = 0;
    if (r.ext_factor != 0) {
        const auto corr = [&](float beta) {
            return float(n_rot) * std::log(float(r.n_ctx_orig) / (beta * 2.0f * float(M_PI))) / (2.0f * std::log(r.freq_base));
        };
        lo = std::max(0.0f, std::floor(corr(r.beta_fast)));
        hi = std::min(float(n_rot - 1), std::ceil(corr(r.beta_slow)));
    }
    for (int i = 0; i < n_rot / 2; ++i) {
        const bool turns = r.pair_turns.empty() || r.pair_turns[size_t(i)];
        double extrap = double(turns ? pos : 0) * std::pow(double(r.freq_base), -2.0 * i / n_rot);
        if (factors) extrap /= factors[i];
        double angle = extrap * r.freq_scale;
        if (r.ext_factor != 0) {
            const double y = (double(i) - lo) / std::max(0.001, double(hi - lo));
            const double mix = (1.0 - std::min(1.0, std::max(0.0, y))) * r.ext_factor;
            angle = angle * (1.0 - mix) + extrap * mix;
        }
        cos_sin[2 * i] = float(std::cos(angle)) * r.attn_factor;
        cos_sin[2 * i + 1] = float(std::sin(angle)) * r.attn_factor;
    }
}

void rope(float* heads, int n_heads, int head_dim, int n_rot, RopeStyle style, const float* cos_sin) {
    const int half = n_rot / 2;
    for (int h = 0; h < n_heads; ++h) {
        float* x = heads + size_t(h) * head_dim;
        for (int i = 0; i < half; ++i) {
            const int a = style == RopeStyle::Norm ? 2 * i : i;
            const int b = style == RopeStyle::Norm ? 2 * i + 1 : i + half;
            const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
            const float x0 = x[a], x1 = x[b];
            x[a] = x0 * c - x1 * s;
            x[b] = x0 * s + x1 * c;
        }
    }
}

void softmax(float* x, int n) {
    const float largest = simd::max(x, size_t(n));
    const float sum = simd::exp_shifted(x, size_t(n), largest);
    simd::scale(x, size_t(n), 1.0f / sum);
}

namespace {

// Elementwise over [0, n) in pieces of kPiece (a multiple of every vector width), shared among the
// threads when there is enough of it to pay for waking them: a prompt's feed-forward, not a token's.
template <class Fn>
void elementwise(float* gate, const float* up, size_t n, int n_threads, Fn fn) {
    constexpr size_t kPiece = size_t(16) << 10, kMinShared = size_t(64) << 10;
    const size_t pieces = (n + kPiece - 1) / kPiece;
#pragma omp parallel for num_threads(n_threads) schedule(static) if (n_threads > 1 && n >= kMinShared)
    for (size_t p = 0; p < pieces; ++p) {
        const size_t first = p * kPiece;
        fn(gate + first, up + first, std::min(kPiece, n - first));
    }
}

}  // namespace

void swiglu(float* gate, const float* up, size_t n, int n_threads) { elementwise(gate, up, n, n_threads, simd::swiglu); }

void geglu(float* gate, const float* up, size_t n, int n_threads) { elementwise(gate, up, n, n_threads, simd::geglu); }

void relu_squared(float* x, size_t n) {
    for (size_t i = 0; i < n; ++i) x[i] = x[i] > 0 ? x[i] * x[i] : 0.0f;
}

void swiglu_oai(float* gate, const float* up, size_t n) {
    constexpr float kAlpha = 1.702f, kLimit = 7.0f;
    for (size_t i = 0; i < n; ++i) {
        const float x = std::min(gate[i], kLimit);
        const float u = std::clamp(up[i], -kLimit, kLimit);
        gate[i] = x / (1.0f + std::exp(-kAlpha * x)) * (u + 1.0f);
    }
}

void softmax_with_sink(float* x, int n, float sink) {
    const float largest = n > 0 ? std::max(sink, simd::max(x, size_t(n))) : sink;
    const float sum = std::exp(sink - largest) + simd::exp_shifted(x, size_t(n), largest);
    simd::scale(x, size_t(n), 1.0f / sum);
}

void softcap(float* x, size_t n, float cap) {
    for (size_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

}  // namespace rill
