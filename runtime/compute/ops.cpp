#include "runtime/compute/ops.h"

#include <cmath>
#include <cstring>

#include "simd/dot.h"

namespace rill {

void weight_row(const Weight& w, int row, float* out) { dequantize_row(w.type(), w.row(row), out, size_t(w.cols())); }

void rmsnorm(const float* x, const Weight& gain, float* out, int n, float eps) {
    double sum_sq = 0;
    for (int i = 0; i < n; ++i) sum_sq += double(x[i]) * x[i];
    const float scale = float(1.0 / std::sqrt(sum_sq / n + eps));
    const float* g = reinterpret_cast<const float*>(gain.tensor->data);
    for (int i = 0; i < n; ++i) out[i] = x[i] * scale * g[i];
}

void add_bias(const Weight& bias, float* rows, int n_tokens, int n) {
    if (!bias) return;
    const float* b = reinterpret_cast<const float*>(bias.tensor->data);
    for (int t = 0; t < n_tokens; ++t)
        for (int i = 0; i < n; ++i) rows[size_t(t) * n + i] += b[i];
}

void rope_angles(const Hparams& hp, const Weight& freq_factors, int pos, float* cos_sin) {
    const float* factors = freq_factors ? reinterpret_cast<const float*>(freq_factors.tensor->data) : nullptr;
    for (int i = 0; i < hp.n_rot / 2; ++i) {
        double angle = double(pos) * hp.rope_freq_scale * std::pow(double(hp.rope_freq_base), -2.0 * i / hp.n_rot);
        if (factors) angle /= factors[i];
        cos_sin[2 * i] = float(std::cos(angle));
        cos_sin[2 * i + 1] = float(std::sin(angle));
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
    float max = x[0];
    for (int i = 1; i < n; ++i) max = std::max(max, x[i]);
    double sum = 0;
    for (int i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = float(1.0 / sum);
    for (int i = 0; i < n; ++i) x[i] *= inv;
}

void swiglu(float* gate, const float* up, size_t n) {
    for (size_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

}  // namespace rill
