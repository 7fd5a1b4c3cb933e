#include "runtime/session/session.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include "runtime/base/error.h"

namespace rill {

namespace {
simd::KernelPath choose_kernel_path(const std::optional<simd::KernelPath>& requested) {
    try {
        const simd::KernelPath path = requested ? *requested : simd::default_kernel_path();
        if (!simd::cpu_supports(path))
            throw Error("kernel path " + std::string(simd::kernel_path_name(path)) + " needs instructions this CPU lacks");
        return path;
    } catch (const std::invalid_argument& e) {
        throw Error(e.what());
    }
}

void check_token_ids(const Hparams& hp, std::span<const int32_t> tokens) {
    for (const int32_t id : tokens)
        if (id < 0 || id >= hp.n_vocab)
            throw Error("token id " + std::to_string(id) + " is outside the vocabulary (0.." + std::to_string(hp.n_vocab - 1) + ")");
}

}  // namespace

int kv_layer_slots(const Hparams& hp, int layer, int n_ctx, int n_batch) {
    if (!hp.owns_kv(layer)) return 0;  // a recurrent layer (its state is the recurrent one), or one reading another's cache
    return hp.sliding(layer) ? std::min(n_ctx, hp.n_swa + std::max(1, n_batch)) : n_ctx;
}

int default_thread_count() { return std::max(1u, std::thread::hardware_concurrency()); }

Session::Session(const Model& model, const SessionOptions& options)
    : model_(model),
      n_ctx_(options.n_ctx > 0 ? options.n_ctx : std::min(model.hp.n_ctx_train, 4096)),
      n_threads_(options.n_threads > 0 ? options.n_threads : default_thread_count()),
      n_threads_batch_(options.n_threads_batch > 0 ? options.n_threads_batch : n_threads_),
      n_batch_(std::max(1, options.n_batch)) {
    if (n_ctx_ > (1 << 24)) throw Error("context size " + std::to_string(n_ctx_) + " is too large");
    if (std::max(n_threads_, n_threads_batch_) > 1024)
        throw Error("thread count " + std::to_string(std::max(n_threads_, n_threads_batch_)) + " is too large");
    const int most_threads = std::max(n_threads_, n_threads_batch_);
    const Hparams& hp = model.hp;
    std::vector<int> capacity(size_t(hp.n_layer)), width(size_t(hp.n_layer));
    int smallest_head = hp.head_dim, most_per_key = 1;
    for (int l = 0; l < hp.n_layer; ++l) {
        capacity[size_t(l)] = kv_layer_slots(hp, l, n_ctx_, n_batch_);
        width[size_t(l)] = hp.kv_dim_of(l);
        smallest_head = std::min(smallest_head, hp.head_dim_of(l));
        if (hp.has_attention(l)) most_per_key = std::max(most_per_key, hp.n_head / hp.n_head_kv_of(l));
    }
    kv_ = KvCache(options.kv_types, hp.n_layer, n_ctx_, hp.kv_dim(), smallest_head, std::move(capacity), std::move(width));
    recurrent_ = RecurrentState(hp);
    delta_net_.chunked = options.chunked_delta_rule;
    // LongRoPE: llama.cpp picks the long factors when the context exceeds the original one.
    rope_factors_ = model.rope_freqs ? model.rope_freqs
                    : n_ctx_ > hp.rope.n_ctx_orig ? model.rope_factors_long
                                                  : model.rope_factors_short;
    const int widest = std::max({hp.n_embd, hp.n_ff, hp.n_ff_exp, hp.q_dim(), hp.n_ff_shexp, hp.ssm.value_dim(), hp.ssm.inner_size,
                                 hp.n_embd_per_layer * hp.n_layer});
    scratch_ = MatmulScratch(choose_kernel_path(options.kernels), most_threads, size_t(widest),
                             options.gemm);
    scratch_.table = options.gemm_table;
    decode_attention_ = DecodeAttentionScratch(most_threads, n_ctx_, hp.head_dim, most_per_key);
}

// cos/sin pairs a token's angles take: the wider of the full and the sliding layers' rotation.
static int rope_width(const Hparams& hp) { return std::max(hp.n_rot, hp.n_rot_swa); }

size_t batch_activation_bytes(const Hparams& hp, int n_batch) {
    const size_t fused = hp.family && hp.family->fused_qkv ? size_t(hp.q_dim()) + 2 * size_t(hp.kv_dim())
                         : hp.family && hp.family->attn_output_gate ? 3 * size_t(hp.q_dim()) : 0;
    const size_t per_token = 2 * size_t(hp.n_embd) + 2 * size_t(hp.q_dim()) + 2 * size_t(hp.kv_dim()) + 2 * size_t(hp.n_ff) +
                             2 * size_t(rope_width(hp)) + std::max(fused, hp.family && hp.family->fused_gate_up ? 2 * size_t(hp.n_ff) : 0) +
                             size_t(hp.n_embd_per_layer) * size_t(hp.n_layer);
    return per_token * size_t(n_batch) * sizeof(float);
}

void Session::ensure_batch(int n) {
    if (n <= capacity_) return;
    const Hparams& hp = model_.hp;
    const size_t t = size_t(n);
    const Architecture& a = *hp.family;
    x_.resize(t * hp.n_embd);
    xn_.resize(t * hp.n_embd);
    q_.resize(t * hp.q_dim());
    k_.resize(t * hp.kv_dim());
    v_.resize(t * hp.kv_dim());
    attn_.resize(t * hp.q_dim());
    gate_.resize(t * std::max(hp.n_ff, hp.n_embd_per_layer));  // the PLE gate uses them too
    up_.resize(t * std::max(hp.n_ff, hp.n_embd_per_layer));
    rope_.resize(t * rope_width(hp));
    rope_local_.resize(hp.any_sliding() ? t * rope_width(hp) : 0);
    ple_.resize(t * size_t(hp.n_embd_per_layer) * size_t(hp.n_layer));
    fused_.resize(std::max({a.fused_qkv ? t * size_t(hp.q_dim() + 2 * hp.kv_dim()) : 0, a.fused_gate_up ? t * 2 * hp.n_ff : 0,
                            a.attn_output_gate ? t * 2 * hp.q_dim() : 0}));
    attn_gate_.resize(a.attn_output_gate ? t * hp.q_dim() : 0);
    capacity_ = n;
}

std::span<const float> Session::eval(std::span<const int32_t> tokens, bool all_logits) {
    const Hparams& hp = model_.hp;
    if (tokens.empty()) throw Error("nothing to evaluate: no tokens");
    if (size_t(pos_) + tokens.size() > size_t(n_ctx_))
        throw Error("context overflow: " + std::to_string(pos_) + " tokens in the context plus " +
                    std::to_string(tokens.size()) + " new ones exceed the context size " + std::to_string(n_ctx_));
    check_token_ids(hp, tokens);

    const size_t n_vocab = size_t(hp.n_vocab);
    logits_.resize((all_logits ? tokens.size() : 1) * n_vocab);
    for (size_t start = 0; start < tokens.size(); start += size_t(n_batch_)) {
        const auto chunk = tokens.subspan(start, std::min(tokens.size() - start, size_t(n_batch_)));
        const bool last_chunk = start + chunk.size() == tokens.size();
        float* out = all_logits ? logits_.data() + start * n_vocab : (last_chunk ? logits_.data() : nullptr);
        forward_chunk(chunk, all_logits, out);
    }
    return logits_;
}

// One transformer pass over a chunk of tokens at positions pos_ .. pos_ + n - 1.
void Session::forward_chunk(std::span<const int32_t> tokens, bool all_logits, float* logits_out) {
    const int n = int(tokens.size());
    places_.resize(size_t(n));
    for (int t = 0; t < n; ++t) places_[size_t(t)] = {&kv_, pos_ + t, &recurrent_};
    forward_layers(tokens, places_, true, n > 1 ? n_threads_batch_ : n_threads_);
    pos_ += n;
    high_water_ = std::max(high_water_, pos_);
    if (logits_out == nullptr) return;
    logit_rows_.clear();
    for (int t = all_logits ? 0 : n - 1; t < n; ++t) logit_rows_.push_back(t);
    project_logits(logit_rows_, logits_out);
    has_logits_ = true;
}

void Session::forward_layers(std::span<const int32_t> tokens, std::span<const KvPlace> places, bool one_sequence, int n_threads) {
    const Hparams& hp = model_.hp;
    const int n = int(tokens.size());
    const int E = hp.n_embd;
    ensure_batch(n);
    // Rows of different sequences stay on the decode kernels, whose per-row arithmetic does not
    // depend on the batch: a stream's text must not change with who else is being served.
    struct Restore {
        int& value;
        int saved;
        ~Restore() { value = saved; }
    } restore{scratch_.gemm_min_tokens, scratch_.gemm_min_tokens};
    if (!one_sequence) scratch_.gemm_min_tokens = std::numeric_limits<int>::max();
    scratch_.n_threads = n_threads;
    const auto row = [](std::vector<float>& v, int t, int width) { return &v[size_t(t) * size_t(width)]; };
    for (int t = 0; t < n; ++t) {
        weight_row(model_.token_embd, tokens[size_t(t)], row(x_, t, E));
        if (hp.embedding_scale != 1.0f)
            for (int i = 0; i < E; ++i) row(x_, t, E)[i] *= hp.embedding_scale;
    }
    const int R = rope_width(hp);
    for (int t = 0; t < n; ++t) {
        rope_angles(hp.rope, hp.n_rot, rope_factors_, places[size_t(t)].pos, row(rope_, t, R));
        if (!rope_local_.empty())
            rope_angles(hp.rope_local, hp.n_rot_swa > 0 ? hp.n_rot_swa : hp.n_rot, Weight{}, places[size_t(t)].pos, row(rope_local_, t, R));
    }
    if (hp.n_embd_per_layer > 0) per_layer_inputs(tokens);
    // x += scale · out, where out is a block's output after its post-norm (if the family has one).
    const auto add_residual = [&](const Weight& post_norm) {
        for (int t = 0; t < n; ++t) {
            float* out = row(xn_, t, E);
            if (post_norm) rmsnorm(out, post_norm, out, E, hp.rms_eps);
            float* x = row(x_, t, E);
            for (int i = 0; i < E; ++i) x[i] += hp.residual_scale * out[i];
        }
    };
    // xn = the block's input: x normalised, or x itself where the family has no pre-norms.
    const auto block_input = [&](const Weight& norm) {
        for (int t = 0; t < n; ++t)
            if (norm) rmsnorm(row(x_, t, E), norm, row(xn_, t, E), E, hp.rms_eps);
            else std::copy_n(row(x_, t, E), E, row(xn_, t, E));
    };

    // Each layer: x += mixer(norm(x)), then x += ffn(norm(x)); the mixer is attention, or a recurrent
    // block where the family's description says so.
    for (int l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& L = model_.layers[size_t(l)];
        if (hp.has_mixer(l)) {
            block_input(L.attn_norm);
            if (!hp.recurrent(l)) attention_block(l, n, places, one_sequence);
            else if (hp.family->short_conv) short_conv(hp, L, l, xn_.data(), n, places, xn_.data(), scratch_, short_conv_);
            else if (hp.family->mamba2) mamba2(hp, L, l, xn_.data(), n, places, xn_.data(), scratch_, mamba2_);
            else gated_delta_net(hp, L, l, xn_.data(), n, places, xn_.data(), scratch_, delta_net_);
            add_residual(L.attn_post_norm);
        }
        if (hp.has_ffn(l)) {
            block_input(hp.has_mixer(l) ? L.ffn_norm : L.attn_norm);  // an MLP alone sits behind attn_norm (Nemotron-H)
            ffn_block(l, n);
            add_residual(L.ffn_post_norm);
        }
        if (L.ple_gate) {
            per_layer_embedding(l, n);
            add_residual(L.ple_post_norm);
        }
        if (L.out_scale) {
            const float scale = *reinterpret_cast<const float*>(L.out_scale.tensor->data);
            for (size_t i = 0; i < size_t(n) * size_t(E); ++i) x_[i] *= scale;
        }
    }
}

static float* row_of(std::vector<float>& v, int t, int width) { return &v[size_t(t) * size_t(width)]; }

// xn = Wo · attention(rope(norm(Wq·xn)), rope(norm(Wk·xn)), Wv·xn), each token's keys and values
// stored in its cache first. The layer's own head size and KV heads; a layer that reads an earlier
// layer's cache (gemma4) computes only its queries.
void Session::attention_block(int l, int n, std::span<const KvPlace> places, bool one_sequence) {
    const Hparams& hp = model_.hp;
    const Architecture& arch = *hp.family;
    const LayerWeights& L = model_.layers[size_t(l)];
    const int E = hp.n_embd, Q = hp.q_dim_of(l), KV = hp.kv_dim_of(l), D = hp.head_dim_of(l), H_kv = hp.n_head_kv_of(l);
    const bool own_kv = hp.owns_kv(l);
    const auto row = row_of;
    if (arch.attn_output_gate) {
        // attn_q's rows are [q_h | gate_h] per head
        const MatmulOutput qkv[] = {{L.wq, fused_.data()}, {L.wk, k_.data()}, {L.wv, v_.data()}};
        matmul(qkv, xn_.data(), n, scratch_);
        for (int t = 0; t < n; ++t)
            for (int h = 0; h < hp.n_head; ++h) {
                const float* both = row(fused_, t, 2 * Q) + size_t(2 * h * D);
                std::copy_n(both, D, row(q_, t, Q) + size_t(h * D));
                std::copy_n(both + D, D, row(attn_gate_, t, Q) + size_t(h * D));
            }
    } else if (L.wqkv) {
        matmul(L.wqkv, xn_.data(), fused_.data(), n, scratch_);
        add_bias(L.bqkv, fused_.data(), n, Q + 2 * KV);
        for (int t = 0; t < n; ++t) {
            const float* qkv = row(fused_, t, Q + 2 * KV);
            std::copy_n(qkv, Q, row(q_, t, Q));
            std::copy_n(qkv + Q, KV, row(k_, t, KV));
            std::copy_n(qkv + Q + KV, KV, row(v_, t, KV));
        }
    } else if (!own_kv) {
        matmul(L.wq, xn_.data(), q_.data(), n, scratch_);
    } else if (!L.wv) {
        // V is K's projection before K's norm and rotation (gemma4's full layers without attn_v)
        const MatmulOutput qk[] = {{L.wq, q_.data()}, {L.wk, k_.data()}};
        matmul(qk, xn_.data(), n, scratch_);
        std::copy_n(k_.data(), size_t(n) * size_t(KV), v_.data());
    } else {
        const MatmulOutput qkv[] = {{L.wq, q_.data()}, {L.wk, k_.data()}, {L.wv, v_.data()}};
        matmul(qkv, xn_.data(), n, scratch_);
    }
    add_bias(L.bq, q_.data(), n, Q);
    add_bias(L.bk, k_.data(), n, KV);
    add_bias(L.bv, v_.data(), n, KV);
    const bool per_head = arch.qk_norm == QkNorm::PerHead;
    const bool local = hp.sliding(l);
    const int R = rope_width(hp), n_rot = hp.n_rot_of(l);
    for (int t = 0; t < n; ++t) {
        float* q = row(q_, t, Q);
        float* k = row(k_, t, KV);
        if (L.q_norm) rmsnorm_groups(q, L.q_norm, per_head ? hp.n_head : 1, per_head ? D : Q, hp.rms_eps);
        if (L.k_norm) rmsnorm_groups(k, L.k_norm, per_head ? H_kv : 1, per_head ? D : KV, hp.rms_eps);
        if (arch.v_norm && own_kv) rmsnorm_groups(row(v_, t, KV), Weight{}, H_kv, D, hp.rms_eps);
        if (hp.uses_rope(l)) {
            const float* angles = local ? row(rope_local_, t, R) : row(rope_, t, R);
            rope(q, hp.n_head, D, n_rot, hp.rope_style, angles);
            if (own_kv) rope(k, H_kv, D, n_rot, hp.rope_style, angles);
        }
        if (own_kv) places[size_t(t)].kv->store(l, places[size_t(t)].pos, k, row(v_, t, KV));
    }
    attention(l, n, places, one_sequence);
    if (arch.attn_output_gate)
        for (size_t i = 0; i < size_t(n) * size_t(Q); ++i) attn_[i] *= 1.0f / (1.0f + std::exp(-attn_gate_[i]));
    matmul(L.wo, attn_.data(), xn_.data(), n, scratch_);
    add_bias(L.bo, xn_.data(), n, E);
}

// xn = Wdown · (act(Wgate·xn) * Wup·xn), or the chosen experts' weighted sum of it (and the shared
// expert's share, or gemma4's dense branch beside the experts).
void Session::ffn_block(int l, int n) {
    const Hparams& hp = model_.hp;
    const Architecture& arch = *hp.family;
    const LayerWeights& L = model_.layers[size_t(l)];
    const int E = hp.n_embd;
    const auto row = row_of;
    if (hp.experts(l) && arch.dense_beside_experts) return dense_and_experts(l, n);
    if (hp.experts(l)) {
        // The shared expert reads xn before the routed experts overwrite it.
        if (hp.n_ff_shexp > 0) shared_expert(L, n);
        moe_ffn(hp, L, xn_.data(), n, xn_.data(), scratch_, moe_);
        if (hp.n_ff_shexp > 0)
            for (int t = 0; t < n; ++t)
                for (int i = 0; i < hp.n_embd; ++i) row(xn_, t, E)[i] += row(shexp_up_, t, E)[i];
        return;
    }
    dense_ffn(L, hp.n_ff_of(l), n);
}

// The dense FFN of width F on the rows of xn_, in place.
void Session::dense_ffn(const LayerWeights& L, int F, int n) {
    const Hparams& hp = model_.hp;
    const auto row = row_of;
    if (L.ffn_gate) {
        const MatmulOutput gate_up[] = {{L.ffn_gate, gate_.data()}, {L.ffn_up, up_.data()}};
        matmul(gate_up, xn_.data(), n, scratch_);
        add_bias(L.b_gate, gate_.data(), n, F);
        add_bias(L.b_up, up_.data(), n, F);
    } else if (hp.family->fused_gate_up) {
        matmul(L.ffn_up, xn_.data(), fused_.data(), n, scratch_);
        for (int t = 0; t < n; ++t) {
            std::copy_n(row(fused_, t, 2 * F), F, row(gate_, t, F));
            std::copy_n(row(fused_, t, 2 * F) + F, F, row(up_, t, F));
        }
    }
    if (!L.ffn_gate && !hp.family->fused_gate_up) {  // no gate: relu(up)² (Nemotron-H)
        matmul(L.ffn_up, xn_.data(), gate_.data(), n, scratch_);
        add_bias(L.b_up, gate_.data(), n, F);
        relu_squared(gate_.data(), size_t(n) * size_t(F));
    } else if (hp.family->activation == Activation::GeluTanh) {
        geglu(gate_.data(), up_.data(), size_t(n) * F, scratch_.n_threads);
    } else {
        swiglu(gate_.data(), up_.data(), size_t(n) * F, scratch_.n_threads);
    }
    matmul(L.ffn_down, gate_.data(), xn_.data(), n, scratch_);
    add_bias(L.b_down, xn_.data(), n, hp.n_embd);
}

// gemma4's MoE layer: xn = norm₁(dense(xn)) + norm₂(experts(rms(x, pre_ffw_norm_2))), the router
// reading rms(x)/√n_embd ⊙ its input scale, where x is the residual after attention (x_ still
// holds it here).
void Session::dense_and_experts(int l, int n) {
    const Hparams& hp = model_.hp;
    const LayerWeights& L = model_.layers[size_t(l)];
    const int E = hp.n_embd;
    const size_t count = size_t(n) * size_t(E);
    branch_.resize(count);
    router_in_.resize(count);
    dense_ffn(L, hp.n_ff_of(l), n);
    const float* scale = reinterpret_cast<const float*>(L.router_scale.tensor->data);
    const float inv_sqrt = 1.0f / std::sqrt(float(E));
    for (int t = 0; t < n; ++t) {
        const size_t at = size_t(t) * size_t(E);
        rmsnorm(&xn_[at], L.dense_post_norm, &branch_[at], E, hp.rms_eps);
        rmsnorm(&x_[at], L.experts_pre_norm, &xn_[at], E, hp.rms_eps);
        rmsnorm(&x_[at], Weight{}, &router_in_[at], E, hp.rms_eps);
        for (int i = 0; i < E; ++i) router_in_[at + size_t(i)] *= inv_sqrt * scale[i];
    }
    moe_ffn(hp, L, xn_.data(), n, xn_.data(), scratch_, moe_, router_in_.data());
    for (int t = 0; t < n; ++t) {
        const size_t at = size_t(t) * size_t(E);
        rmsnorm(&xn_[at], L.experts_post_norm, &xn_[at], E, hp.rms_eps);
        for (int i = 0; i < E; ++i) xn_[at + size_t(i)] += branch_[at + size_t(i)];
    }
}

// Per-layer embeddings (gemma4 E2B/E4B): ple_ = for each token and layer l,
// (rms(Wproj·x₀/√n_embd, proj_norm)_l + table[token]_l·√width) / √2, where x₀ is the scaled embedding
// (x_ on entry) and table rows are read straight from the file, one per token.
void Session::per_layer_inputs(std::span<const int32_t> tokens) {
    const Hparams& hp = model_.hp;
    const int n = int(tokens.size()), P = hp.n_embd_per_layer, all = P * hp.n_layer;
    matmul(model_.ple_model_proj, x_.data(), ple_.data(), n, scratch_);
    table_row_.resize(size_t(all));
    const float proj_scale = 1.0f / std::sqrt(float(hp.n_embd)), token_scale = std::sqrt(float(P)), mix = 1.0f / std::sqrt(2.0f);
    for (int t = 0; t < n; ++t) {
        float* p = &ple_[size_t(t) * size_t(all)];
        weight_row(model_.ple_token_embd, tokens[size_t(t)], table_row_.data());
        for (int i = 0; i < all; ++i) p[i] *= proj_scale;
        rmsnorm_groups(p, model_.ple_proj_norm, hp.n_layer, P, hp.rms_eps);
        for (int i = 0; i < all; ++i) p[i] = (p[i] + table_row_[size_t(i)] * token_scale) * mix;
    }
}

// xn = Wproj · (gelu(Wgate · x) ⊙ the layer's per-layer input), x the residual after the FFN.
void Session::per_layer_embedding(int l, int n) {
    const Hparams& hp = model_.hp;
    const LayerWeights& L = model_.layers[size_t(l)];
    const int P = hp.n_embd_per_layer, all = P * hp.n_layer;
    matmul(L.ple_gate, x_.data(), gate_.data(), n, scratch_);
    for (int t = 0; t < n; ++t) std::copy_n(&ple_[size_t(t) * size_t(all) + size_t(l) * size_t(P)], P, &up_[size_t(t) * size_t(P)]);
    geglu(gate_.data(), up_.data(), size_t(n) * size_t(P), scratch_.n_threads);
    matmul(L.ple_proj, gate_.data(), xn_.data(), n, scratch_);
}

// shexp_up_ = σ(gate_inp·xn) · Wdown_s · silu(Wgate_s·xn) ⊙ Wup_s·xn, one row of n_embd per token (the
// σ factor only where the file has gate_inp: Qwen3.5-MoE's, not Granite's; relu(Wup_s·xn)² where
// there is no gate: Nemotron-H-MoE's).
void Session::shared_expert(const LayerWeights& L, int n) {
    const Hparams& hp = model_.hp;
    const size_t rows = size_t(n), F = size_t(hp.n_ff_shexp), E = size_t(hp.n_embd);
    shexp_gate_.resize(rows * F);
    shexp_up_.resize(rows * std::max(F, E));
    shexp_weight_.resize(rows);
    if (L.shexp_gate) {
        const MatmulOutput gate_up[] = {{L.shexp_gate, shexp_gate_.data()}, {L.shexp_up, shexp_up_.data()}};
        matmul(gate_up, xn_.data(), n, scratch_);
        swiglu(shexp_gate_.data(), shexp_up_.data(), rows * F, scratch_.n_threads);
    } else {  // Nemotron-H-MoE's: relu(Wup_s·xn)², no gate
        matmul(L.shexp_up, xn_.data(), shexp_gate_.data(), n, scratch_);
        relu_squared(shexp_gate_.data(), rows * F);
    }
    matmul(L.shexp_down, shexp_gate_.data(), shexp_up_.data(), n, scratch_);
    if (!L.shexp_gate_inp) return;  // Granite's shared expert is not gated
    matmul(L.shexp_gate_inp, xn_.data(), shexp_weight_.data(), n, scratch_);  // one row: a weight per token
    for (size_t t = 0; t < rows; ++t) {
        const float weight = 1.0f / (1.0f + std::exp(-shexp_weight_[t]));
        for (size_t i = 0; i < E; ++i) shexp_up_[t * E + i] *= weight;
    }
}

void Session::project_logits(std::span<const int> rows, float* out) {
    const Hparams& hp = model_.hp;
    const int E = hp.n_embd, n = int(rows.size());
    for (int i = 0; i < n; ++i) rmsnorm(&x_[size_t(rows[size_t(i)]) * E], model_.output_norm, &xn_[size_t(i) * E], E, hp.rms_eps);
    matmul(model_.output, xn_.data(), out, n, scratch_);
    const size_t count = size_t(n) * size_t(hp.n_vocab);
    if (hp.logit_scale != 1.0f)
        for (size_t i = 0; i < count; ++i) out[i] /= hp.logit_scale;
    if (hp.final_logit_softcap > 0) softcap(out, count, hp.final_logit_softcap);
}

std::span<const float> Session::eval_together(std::span<Session* const> sessions, std::span<const int32_t> tokens) {
    if (sessions.empty()) throw Error("nothing to evaluate: no sessions");
    if (sessions.size() != tokens.size())
        throw Error("eval_together needs one token per session, got " + std::to_string(tokens.size()) + " tokens for " +
                    std::to_string(sessions.size()) + " sessions");
    std::vector<BatchPiece> pieces;
    pieces.reserve(sessions.size());
    for (size_t i = 0; i < sessions.size(); ++i) pieces.push_back({sessions[i], tokens.subspan(i, 1), true});
    return eval_batch(pieces);
}

std::span<const float> Session::eval_batch(std::span<const BatchPiece> pieces) {
    if (pieces.empty()) throw Error("nothing to evaluate: no sessions");
    Session& lead = *pieces[0].session;
    const Hparams& hp = lead.model_.hp;
    const size_t n_vocab = size_t(hp.n_vocab);
    size_t rows = 0, wanted = 0;
    bool prompt_work = false;
    for (size_t i = 0; i < pieces.size(); ++i) {
        const Session& s = *pieces[i].session;
        const size_t n = pieces[i].tokens.size();
        if (&s.model_ != &lead.model_) throw Error("eval_together: the sessions use different models");
        if (s.kv_.types != lead.kv_.types) throw Error("eval_together: the sessions use different KV cache types");
        for (size_t j = 0; j < i; ++j)
            if (pieces[j].session == &s) throw Error("eval_together: a session appears twice in the batch");
        if (n == 0) throw Error("nothing to evaluate: session " + std::to_string(i) + " has no tokens in the batch");
        // A sliding-window ring holds its window plus one chunk; a longer piece would overwrite keys its first rows still need.
        if (n > size_t(s.n_batch_))
            throw Error("a batch piece of " + std::to_string(n) + " tokens is longer than the session's micro-batch " + std::to_string(s.n_batch_));
        if (size_t(s.pos_) + n > size_t(s.n_ctx_))
            throw Error("context overflow: session " + std::to_string(i) + " holds " + std::to_string(s.pos_) + " tokens; " +
                        std::to_string(n) + " more exceed its context size " + std::to_string(s.n_ctx_));
        check_token_ids(hp, pieces[i].tokens);
        rows += n;
        wanted += pieces[i].logits ? 1 : 0;
        prompt_work = prompt_work || n > 1;
    }
    lead.places_.clear();
    lead.batch_tokens_.clear();
    lead.logit_rows_.clear();
    for (const BatchPiece& p : pieces) {
        for (size_t t = 0; t < p.tokens.size(); ++t) lead.places_.push_back({&p.session->kv_, p.session->pos_ + int(t), &p.session->recurrent_});
        lead.batch_tokens_.insert(lead.batch_tokens_.end(), p.tokens.begin(), p.tokens.end());
        if (p.logits) lead.logit_rows_.push_back(int(lead.batch_tokens_.size()) - 1);
    }
    // Every row on the decode kernels, the output projection too: a row's arithmetic must not depend
    // on how many others share the pass.
    struct Restore {
        int& value;
        int saved;
        ~Restore() { value = saved; }
    } restore{lead.scratch_.gemm_min_tokens, lead.scratch_.gemm_min_tokens};
    lead.scratch_.gemm_min_tokens = std::numeric_limits<int>::max();
    // A prompt is compute-bound and wants every core; decode steps are bandwidth-bound and may
    // saturate memory with fewer.
    lead.forward_layers(lead.batch_tokens_, lead.places_, rows == 1, prompt_work ? lead.n_threads_batch_ : lead.n_threads_);
    lead.together_logits_.resize(wanted * n_vocab);
    if (wanted > 0) lead.project_logits(lead.logit_rows_, lead.together_logits_.data());
    size_t row = 0;
    for (const BatchPiece& p : pieces) {
        Session& s = *p.session;
        s.pos_ += int(p.tokens.size());
        s.high_water_ = std::max(s.high_water_, s.pos_);
        s.has_logits_ = p.logits;
        if (!p.logits) continue;
        const float* logits = &lead.together_logits_[row++ * n_vocab];
        s.logits_.assign(logits, logits + n_vocab);
    }
    return lead.together_logits_;
}

std::span<const float> Session::last_logits() const {
    if (!has_logits_) return {};
    const size_t n_vocab = size_t(model_.hp.n_vocab);
    return std::span<const float>(logits_).subspan(logits_.size() - n_vocab);
}

std::vector<float> Session::embed(std::span<const int32_t> tokens) {
    const Hparams& hp = model_.hp;
    if (tokens.empty()) throw Error("nothing to embed: no tokens");
    if (tokens.size() > size_t(n_ctx_))
        throw Error("the input has " + std::to_string(tokens.size()) + " tokens, more than the context size " + std::to_string(n_ctx_));
    check_token_ids(hp, tokens);
    const int E = hp.n_embd;
    std::vector<double> sum(size_t(E), 0.0);
    pos_ = 0;
    has_logits_ = false;
    for (size_t start = 0; start < tokens.size(); start += size_t(n_batch_)) {
        const auto chunk = tokens.subspan(start, std::min(tokens.size() - start, size_t(n_batch_)));
        const int n = int(chunk.size());
        places_.resize(size_t(n));
        for (int t = 0; t < n; ++t) places_[size_t(t)] = {&kv_, pos_ + t, &recurrent_};
        forward_layers(chunk, places_, true, n > 1 ? n_threads_batch_ : n_threads_);
        pos_ += n;
        for (int t = 0; t < n; ++t) {
            rmsnorm(&x_[size_t(t) * E], model_.output_norm, &xn_[0], E, hp.rms_eps);
            for (int i = 0; i < E; ++i) sum[size_t(i)] += xn_[size_t(i)];
        }
    }
    pos_ = high_water_ = 0;
    checkpoints_.clear();  // the recurrent state is this text's now
    double norm = 0;
    for (double& v : sum) {
        v /= double(tokens.size());
        norm += v * v;
    }
    norm = std::sqrt(norm);
    std::vector<float> out(static_cast<size_t>(E));
    for (int i = 0; i < E; ++i) out[size_t(i)] = norm > 0 ? float(sum[size_t(i)] / norm) : 0.0f;
    return out;
}

namespace {
// Version 3 carries the recurrent layers' state; version 2 the key and the value type; version 1 (one
// type for both, 0: F16, 1: F32) still loads, as version 2 does, for a model without recurrent layers.
constexpr char kStateMagic[8] = {'R', 'I', 'L', 'L', 'S', 'T', 'A', '3'};
constexpr char kStateMagicV2[8] = {'R', 'I', 'L', 'L', 'S', 'T', 'A', '2'};
constexpr char kStateMagicV1[8] = {'R', 'I', 'L', 'L', 'S', 'T', 'A', '1'};

template <typename T>
void put(std::vector<uint8_t>& out, const T& value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
}

struct StateReader {
    std::span<const uint8_t> bytes;
    size_t at = 0;
    void read(void* dst, size_t n) {
        if (n == 0) return;  // an empty part (a short convolution's state has no matrices)
        if (bytes.size() - at < n) throw Error("session state is truncated: needs " + std::to_string(at + n) + " bytes, has " + std::to_string(bytes.size()));
        std::memcpy(dst, bytes.data() + at, n);
        at += n;
    }
    template <typename T>
    T get() {
        T v;
        read(&v, sizeof(T));
        return v;
    }
};

KvType state_kv_type(int32_t id) {
    if (id < int32_t(KvType::F16) || id > int32_t(KvType::Q4_0)) throw Error("session state has an unknown KV cache type id " + std::to_string(id));
    return KvType(id);
}
}  // namespace

// The first position a layer must keep to go on from `pos`: 0, or the start of its window; a
// recurrent layer keeps none (its state is saved whole), nor does one reading another's cache.
static int first_kept(const Hparams& hp, int layer, int pos) {
    if (!hp.owns_kv(layer)) return pos;
    return hp.window(layer) > 0 ? std::max(0, pos - hp.window(layer)) : 0;
}

// Layout: magic, n_layer, kv_dim, n_vocab, key type, value type, position, has-logits (int32 each);
// then per layer the keys, then the values, of the positions it needs to go on (all of [0, position),
// or a sliding layer's last window of them), each row as the cache keeps it; then, for a model with
// recurrent layers, their convolution windows and matrices (F32), and the latest checkpoint before
// the position (its position as int32, -1 for none, then its state), so a restored conversation can
// still go back to its last message boundary; then the last logits if present.
std::vector<uint8_t> Session::save_state() const {
    const Hparams& hp = model_.hp;
    std::vector<uint8_t> out(kStateMagic, kStateMagic + 8);
    for (const int32_t v : {hp.n_layer, hp.kv_dim(), hp.n_vocab, int32_t(kv_.types.k), int32_t(kv_.types.v), int32_t(pos_),
                            int32_t(has_logits_)})
        put(out, v);
    for (int l = 0; l < hp.n_layer; ++l) {
        for (int p = first_kept(hp, l, pos_); p < pos_; ++p) out.insert(out.end(), kv_.key_row(l, p), kv_.key_row(l, p) + kv_.k_row(l));
        for (int p = first_kept(hp, l, pos_); p < pos_; ++p) out.insert(out.end(), kv_.value_row(l, p), kv_.value_row(l, p) + kv_.v_row(l));
    }
    const auto put_floats = [&](const std::vector<float>& part) {
        const auto* p = reinterpret_cast<const uint8_t*>(part.data());
        out.insert(out.end(), p, p + part.size() * sizeof(float));
    };
    if (!recurrent_.empty()) {
        put_floats(recurrent_.conv);
        put_floats(recurrent_.matrices);
        const Checkpoint* latest = nullptr;
        for (const Checkpoint& c : checkpoints_)
            if (c.pos < pos_ && (latest == nullptr || c.pos > latest->pos)) latest = &c;
        put(out, int32_t(latest ? latest->pos : -1));
        if (latest) {
            put_floats(latest->conv);
            put_floats(latest->matrices);
        }
    }
    if (has_logits_) {
        const auto logits = last_logits();
        const auto* p = reinterpret_cast<const uint8_t*>(logits.data());
        out.insert(out.end(), p, p + logits.size_bytes());
    }
    return out;
}

void Session::load_state(std::span<const uint8_t> state) {
    const Hparams& hp = model_.hp;
    StateReader in{state};
    char magic[8];
    in.read(magic, 8);
    const bool v1 = std::memcmp(magic, kStateMagicV1, 8) == 0, v2 = std::memcmp(magic, kStateMagicV2, 8) == 0;
    if (!v1 && !v2 && std::memcmp(magic, kStateMagic, 8) != 0) throw Error("not a rill session state (bad magic bytes)");
    if ((v1 || v2) && !recurrent_.empty())
        throw Error("session state is from an older rill that did not save recurrent layers' state; this model has them");
    const int32_t n_layer = in.get<int32_t>(), kv_dim = in.get<int32_t>(), n_vocab = in.get<int32_t>();
    if (n_layer != hp.n_layer || kv_dim != hp.kv_dim() || n_vocab != hp.n_vocab)
        throw Error("session state is for another model (" + std::to_string(n_layer) + " layers, kv_dim " + std::to_string(kv_dim) +
                    ", vocabulary " + std::to_string(n_vocab) + ")");
    KvTypes types = state_kv_type(in.get<int32_t>());
    if (!v1) types.v = state_kv_type(in.get<int32_t>());
    if (types != kv_.types)
        throw Error("session state has a " + kv_types_label(types) + " KV cache; this session's is " + kv_types_label(kv_.types));
    const int32_t pos = in.get<int32_t>(), logits = in.get<int32_t>();
    if (pos < 0 || pos > n_ctx_)
        throw Error("session state holds " + std::to_string(pos) + " positions; this session's context is " + std::to_string(n_ctx_));
    size_t need = logits ? size_t(n_vocab) * 4 : 0;
    for (int l = 0; l < hp.n_layer; ++l) need += (kv_.k_row(l) + kv_.v_row(l)) * size_t(pos - first_kept(hp, l, pos));
    // The recurrent part: the state, a checkpoint's position, and its state unless that is -1.
    int32_t checkpoint_pos = -1;
    if (!recurrent_.empty()) {
        const size_t state_bytes = size_t(recurrent_.bytes());
        const size_t kv_at = in.at;
        if (state.size() - in.at < need - (logits ? size_t(n_vocab) * 4 : 0) + state_bytes + 4)
            throw Error("session state is truncated: its recurrent layers' state is missing");
        std::memcpy(&checkpoint_pos, state.data() + kv_at + (need - (logits ? size_t(n_vocab) * 4 : 0)) + state_bytes, 4);
        if (checkpoint_pos < -1 || checkpoint_pos >= pos)
            throw Error("session state has a recurrent checkpoint at position " + std::to_string(checkpoint_pos) + ", not before its " +
                        std::to_string(pos) + " positions");
        need += state_bytes + 4 + (checkpoint_pos >= 0 ? state_bytes : 0);
    }
    if (state.size() - in.at != need)
        throw Error("session state has " + std::to_string(state.size() - in.at) + " bytes of data, expected " + std::to_string(need));
    for (int l = 0; l < hp.n_layer; ++l) {
        for (int p = first_kept(hp, l, pos); p < pos; ++p) in.read(kv_.key_row(l, p), kv_.k_row(l));
        for (int p = first_kept(hp, l, pos); p < pos; ++p) in.read(kv_.value_row(l, p), kv_.v_row(l));
    }
    checkpoints_.clear();
    if (!recurrent_.empty()) {
        for (std::vector<float>* part : {&recurrent_.conv, &recurrent_.matrices}) in.read(part->data(), part->size() * sizeof(float));
        in.get<int32_t>();  // the checkpoint's position, read above
        if (checkpoint_pos >= 0) {
            Checkpoint c{checkpoint_pos, std::vector<float>(recurrent_.conv.size()), std::vector<float>(recurrent_.matrices.size()),
                         ++checkpoint_clock_};
            in.read(c.conv.data(), c.conv.size() * sizeof(float));
            in.read(c.matrices.data(), c.matrices.size() * sizeof(float));
            checkpoints_.push_back(std::move(c));
        }
    }
    has_logits_ = logits != 0;
    if (has_logits_) {
        logits_.resize(size_t(n_vocab));
        in.read(logits_.data(), size_t(n_vocab) * 4);
    }
    pos_ = high_water_ = pos;
}

void Session::checkpoint() {
    if (recurrent_.empty() || pos_ == 0) return;
    const uint64_t size = recurrent_.bytes();
    if (size > max_checkpoint_bytes || max_checkpoints == 0) return;
    std::erase_if(checkpoints_, [&](const Checkpoint& c) { return c.pos == pos_; });
    while (!checkpoints_.empty() && (checkpoints_.size() >= max_checkpoints || checkpoint_bytes() + size > max_checkpoint_bytes))
        checkpoints_.erase(std::min_element(checkpoints_.begin(), checkpoints_.end(),
                                            [](const Checkpoint& a, const Checkpoint& b) { return a.last_used < b.last_used; }));
    checkpoints_.push_back({pos_, recurrent_.conv, recurrent_.matrices, ++checkpoint_clock_});
}

uint64_t Session::checkpoint_bytes() const {
    uint64_t total = 0;
    for (const Checkpoint& c : checkpoints_) total += uint64_t(c.conv.size() + c.matrices.size()) * sizeof(float);
    return total;
}

int Session::truncate(int n) {
    if (!recurrent_.empty() && n < pos_) {
        // The state after n tokens is not in the recurrent layers any more: the nearest checkpoint
        // before it, if any. Checkpoints past the point kept belong to tokens that are being replaced.
        std::erase_if(checkpoints_, [&](const Checkpoint& c) { return c.pos > n; });
        Checkpoint* best = nullptr;
        for (Checkpoint& c : checkpoints_)
            if (best == nullptr || c.pos > best->pos) best = &c;
        pos_ = best ? best->pos : 0;
        if (best) {
            recurrent_.conv = best->conv;
            recurrent_.matrices = best->matrices;
            best->last_used = ++checkpoint_clock_;
        }
        has_logits_ = false;  // the logits were the last token's, not position pos_ - 1's
    }
    pos_ = std::max(0, std::min(pos_, n));
    if (pos_ == 0) high_water_ = 0;
    // A full layer holds every position below the high-water mark; a ring must still hold the window
    // before pos_.
    for (int l = 0; l < model_.hp.n_layer && pos_ > 0; ++l)
        if (const int window = model_.hp.owns_kv(l) ? model_.hp.window(l) : 0; window > 0 && !kv_.holds(l, std::max(0, pos_ - window), high_water_)) pos_ = high_water_ = 0;
    return pos_;
}

// Causal grouped-query attention of the chunk's queries over every cached position up to their own:
// a prompt-sized chunk as GEMMs, anything else on the decode kernels.
void Session::attention(int layer, int n_tokens, std::span<const KvPlace> places, bool one_sequence) {
    const Weight& sink = model_.layers[size_t(layer)].attn_sinks;
    const float* sinks = sink ? reinterpret_cast<const float*>(sink.tensor->data) : nullptr;
    if (one_sequence && scratch_.gemm != GemmBackend::Native && n_tokens >= scratch_.gemm_min_tokens) {
        // oneDNN's float32 matmul on the avx512 path and wherever a oneDNN or int8 backend is forced: on
        // a Zen 5 Debian's OpenBLAS runs its Haswell kernels, and a tinyllama Q4_0 pp512 went from 250
        // to 295 t/s (2 threads). AVX2 CPUs keep OpenBLAS, whose kernels are theirs (not measured against
        // oneDNN's there yet).
        // The scratch has oneDNN for every backend but native and openblas (matmul.cpp).
        const bool onednn = scratch_.onednn && (scratch_.path == simd::KernelPath::Avx512 || scratch_.gemm != GemmBackend::Auto);
        const GemmBackend backend = onednn ? GemmBackend::Onednn : GemmBackend::Openblas;
        return batch_attention(model_.hp, kv_, layer, pos_, n_tokens, q_.data(), attn_.data(), backend, scratch_.onednn.get(),
                               scratch_.n_threads, attention_scratch_, sinks);
    }
    decode_attention(model_.hp, layer, places, q_.data(), attn_.data(), scratch_.path, scratch_.n_threads, decode_attention_, sinks);
}

}  // namespace rill
