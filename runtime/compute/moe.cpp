#include "runtime/compute/moe.h"

#include <algorithm>
#include <cmath>

#include "runtime/compute/ops.h"

namespace rill {
namespace {

// The k largest of row[0 .. n), best first; equal values in index order, so the choice is the same
// wherever the row is computed.
void top_k(const float* row, int n, int k, int* out) {
    for (int j = 0; j < k; ++j) {
        int best = -1;
        for (int e = 0; e < n; ++e) {
            if (std::find(out, out + j, e) != out + j) continue;
            if (best < 0 || row[e] > row[best]) best = e;
        }
        out[j] = best;
    }
}

const float* bias_row(const Weight& b, int expert) {
    return b ? reinterpret_cast<const float*>(b.row(expert)) : nullptr;
}

void add_row(const float* bias, float* rows, int n_rows, int width) {
    if (bias == nullptr) return;
    for (int r = 0; r < n_rows; ++r)
        for (int i = 0; i < width; ++i) rows[size_t(r) * size_t(width) + size_t(i)] += bias[i];
}

}  // namespace

void route(const Hparams& hp, const LayerWeights& L, const float* xn, int n, MatmulScratch& mm, MoeScratch& s) {
    const int E = hp.n_expert, k = hp.n_expert_used;
    s.logits.resize(size_t(n) * size_t(E));
    matmul(L.router, xn, s.logits.data(), n, mm);
    add_bias(L.b_router, s.logits.data(), n, E);
    s.chosen.resize(size_t(n) * size_t(k));
    s.weights.resize(size_t(n) * size_t(k));
    for (int t = 0; t < n; ++t) {
        float* row = &s.logits[size_t(t) * size_t(E)];
        int* chosen = &s.chosen[size_t(t) * size_t(k)];
        float* w = &s.weights[size_t(t) * size_t(k)];
        if (hp.family->gating == Gating::SoftmaxTopK) {
            softmax(row, E);
            top_k(row, E, k, chosen);
            float sum = 0;
            for (int j = 0; j < k; ++j) sum += row[chosen[j]];
            for (int j = 0; j < k; ++j) w[j] = row[chosen[j]] / sum;
        } else {
            top_k(row, E, k, chosen);
            for (int j = 0; j < k; ++j) w[j] = row[chosen[j]];
            softmax(w, k);
        }
    }
}

void moe_ffn(const Hparams& hp, const LayerWeights& L, const float* xn, int n, float* out, MatmulScratch& mm, MoeScratch& s) {
    const int E = hp.n_embd, F = hp.n_ff_exp, k = hp.n_expert_used;
    route(hp, L, xn, n, mm, s);
    s.slots.resize(size_t(n) * size_t(k) * size_t(E));
    for (int x = 0; x < hp.n_expert; ++x) {
        s.members.clear();
        for (int i = 0; i < n * k; ++i)
            if (s.chosen[size_t(i)] == x) s.members.push_back(i);
        if (s.members.empty()) continue;
        const int m = int(s.members.size());
        s.rows.resize(size_t(m) * size_t(E));
        for (int r = 0; r < m; ++r) std::copy_n(xn + size_t(s.members[size_t(r)] / k) * size_t(E), E, &s.rows[size_t(r) * size_t(E)]);
        s.gate.resize(size_t(m) * size_t(F));
        s.up.resize(size_t(m) * size_t(F));
        const MatmulOutput gate_up[] = {{L.gate_exps[size_t(x)], s.gate.data()}, {L.up_exps[size_t(x)], s.up.data()}};
        matmul(gate_up, s.rows.data(), m, mm);
        add_row(bias_row(L.b_gate_exps, x), s.gate.data(), m, F);
        add_row(bias_row(L.b_up_exps, x), s.up.data(), m, F);
        if (hp.family->activation == Activation::SwigluOai) swiglu_oai(s.gate.data(), s.up.data(), size_t(m) * size_t(F));
        else swiglu(s.gate.data(), s.up.data(), size_t(m) * size_t(F));
        s.down.resize(size_t(m) * size_t(E));
        matmul(L.down_exps[size_t(x)], s.gate.data(), s.down.data(), m, mm);
        add_row(bias_row(L.b_down_exps, x), s.down.data(), m, E);
        for (int r = 0; r < m; ++r)
            std::copy_n(&s.down[size_t(r) * size_t(E)], E, &s.slots[size_t(s.members[size_t(r)]) * size_t(E)]);
        s.expert_bytes += L.gate_exps[size_t(x)].tensor->n_bytes + L.up_exps[size_t(x)].tensor->n_bytes +
                          L.down_exps[size_t(x)].tensor->n_bytes;
    }
    for (int t = 0; t < n; ++t) {
        float* o = out + size_t(t) * size_t(E);
        std::fill(o, o + E, 0.0f);
        for (int j = 0; j < k; ++j) {
            const float w = s.weights[size_t(t) * size_t(k) + size_t(j)];
            const float* y = &s.slots[(size_t(t) * size_t(k) + size_t(j)) * size_t(E)];
            for (int i = 0; i < E; ++i) o[i] += w * y[i];
        }
    }
}

}  // namespace rill
