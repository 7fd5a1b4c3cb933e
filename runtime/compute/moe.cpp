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
        if (hp.family->gating == Gating::SigmoidBiasedTopK) {
            // Chosen by score + bias, weighed by the scores alone, renormalised (ggml's clamp of the sum)
            // where the family says, then scaled.
            for (int e = 0; e < E; ++e) row[e] = 1.0f / (1.0f + std::exp(-row[e]));
            const float* bias = reinterpret_cast<const float*>(L.select_bias.tensor->data);
            s.biased.resize(size_t(E));
            for (int e = 0; e < E; ++e) s.biased[size_t(e)] = row[e] + bias[e];
            top_k(s.biased.data(), E, k, chosen);
            float sum = 0;
            for (int j = 0; j < k; ++j) sum += row[chosen[j]];
            sum = hp.expert_weights_norm ? std::max(sum, 6.103515625e-5f) : 1.0f;
            for (int j = 0; j < k; ++j) w[j] = row[chosen[j]] / sum;
            if (hp.expert_weights_scale != 1.0f)
                for (int j = 0; j < k; ++j) w[j] *= hp.expert_weights_scale;
        } else if (hp.family->gating == Gating::SoftmaxTopK) {
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

void gated_activation(Activation activation, float* gate, const float* up, size_t n, int n_threads) {
    if (activation == Activation::ReluSquared) relu_squared(gate, n);  // no gate: `gate` holds the up projection
    else if (activation == Activation::SwigluOai) swiglu_oai(gate, up, n);
    else if (activation == Activation::GeluTanh) geglu(gate, up, n, n_threads);
    else swiglu(gate, up, n, n_threads);
}

void moe_ffn(const Hparams& hp, const LayerWeights& L, const float* xn, int n, float* out, MatmulScratch& mm, MoeScratch& s,
             const float* router_in) {
    const int E = hp.n_embd, F = hp.n_ff_exp, k = hp.n_expert_used;
    route(hp, L, router_in ? router_in : xn, n, mm, s);
    // The choices sorted by expert, each expert's in token order: rows [first[x], first[x + 1]) of
    // the gathered inputs are expert x's.
    s.first.assign(size_t(hp.n_expert) + 1, 0);
    for (int i = 0; i < n * k; ++i) ++s.first[size_t(s.chosen[size_t(i)]) + 1];
    for (int x = 0; x < hp.n_expert; ++x) s.first[size_t(x) + 1] += s.first[size_t(x)];
    s.members.resize(size_t(n) * size_t(k));
    s.fill.assign(s.first.begin(), s.first.end() - 1);
    for (int i = 0; i < n * k; ++i) s.members[size_t(s.fill[size_t(s.chosen[size_t(i)])]++)] = i;
    const size_t total = size_t(n) * size_t(k);
    s.rows.resize(total * size_t(E));
    s.gate.resize(total * size_t(F));
    s.up.resize(total * size_t(F));
    s.down.resize(total * size_t(E));
    for (size_t r = 0; r < total; ++r) std::copy_n(xn + size_t(s.members[r] / k) * size_t(E), E, &s.rows[r * size_t(E)]);

    // Every chosen expert's gate and up, then every one's down, each set in one call.
    const auto experts_in_use = [&](auto&& each) {
        for (int x = 0; x < hp.n_expert; ++x)
            if (const int m = s.first[size_t(x) + 1] - s.first[size_t(x)]; m > 0) each(x, s.first[size_t(x)], m);
    };
    s.tasks.clear();
    // Ungated experts (ReLU²) write their up projection where the gate's would go.
    const bool gated = !L.gate_exps.empty();
    experts_in_use([&](int x, int r, int m) {
        if (gated) s.tasks.push_back({L.gate_exps[size_t(x)], &s.rows[size_t(r) * size_t(E)], m, &s.gate[size_t(r) * size_t(F)]});
        s.tasks.push_back({L.up_exps[size_t(x)], &s.rows[size_t(r) * size_t(E)], m, gated ? &s.up[size_t(r) * size_t(F)] : &s.gate[size_t(r) * size_t(F)]});
    });
    matmul(s.tasks, mm);
    experts_in_use([&](int x, int r, int m) {
        float* gate = &s.gate[size_t(r) * size_t(F)];
        float* up = &s.up[size_t(r) * size_t(F)];
        add_row(bias_row(L.b_gate_exps, x), gate, m, F);
        add_row(bias_row(L.b_up_exps, x), gated ? up : gate, m, F);
        gated_activation(hp.family->activation, gate, up, size_t(m) * size_t(F), 1);
    });
    s.tasks.clear();
    experts_in_use([&](int x, int r, int m) {
        s.tasks.push_back({L.down_exps[size_t(x)], &s.gate[size_t(r) * size_t(F)], m, &s.down[size_t(r) * size_t(E)]});
        s.expert_bytes += (gated ? L.gate_exps[size_t(x)].tensor->n_bytes : 0) + L.up_exps[size_t(x)].tensor->n_bytes +
                          L.down_exps[size_t(x)].tensor->n_bytes;
    });
    matmul(s.tasks, mm);
    const float* down_scale = L.down_exps_scale ? reinterpret_cast<const float*>(L.down_exps_scale.tensor->data) : nullptr;
    experts_in_use([&](int x, int r, int m) {
        float* down = &s.down[size_t(r) * size_t(E)];
        add_row(bias_row(L.b_down_exps, x), down, m, E);
        if (down_scale)
            for (size_t i = 0; i < size_t(m) * size_t(E); ++i) down[i] *= down_scale[x];
    });

    // Each token's choices summed best-first: slot[choice] is where its expert's output landed.
    s.slot.resize(total);
    for (size_t r = 0; r < total; ++r) s.slot[size_t(s.members[r])] = r;
    for (int t = 0; t < n; ++t) {
        float* o = out + size_t(t) * size_t(E);
        std::fill(o, o + E, 0.0f);
        for (int j = 0; j < k; ++j) {
            const size_t choice = size_t(t) * size_t(k) + size_t(j);
            const float w = s.weights[choice];
            const float* y = &s.down[s.slot[choice] * size_t(E)];
            for (int i = 0; i < E; ++i) o[i] += w * y[i];
        }
    }
}

}  // namespace rill
