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
    kv_ = KvCache(options.kv_type, hp.n_layer, n_ctx_, hp.kv_dim());
    const int widest = std::max({hp.n_embd, hp.n_ff, hp.q_dim()});
    scratch_ = MatmulScratch(choose_kernel_path(options.kernels), most_threads, size_t(widest),
                             options.gemm);
    decode_attention_ = DecodeAttentionScratch(most_threads, n_ctx_, hp.head_dim);
}

size_t batch_activation_bytes(const Hparams& hp, int n_batch) {
    const size_t per_token = 2 * size_t(hp.n_embd) + 2 * size_t(hp.q_dim()) + 2 * size_t(hp.kv_dim()) + 2 * size_t(hp.n_ff) +
                             size_t(hp.n_rot);
    return per_token * size_t(n_batch) * sizeof(float);
}

void Session::ensure_batch(int n) {
    if (n <= capacity_) return;
    const Hparams& hp = model_.hp;
    const size_t t = size_t(n);
    x_.resize(t * hp.n_embd);
    xn_.resize(t * hp.n_embd);
    q_.resize(t * hp.q_dim());
    k_.resize(t * hp.kv_dim());
    v_.resize(t * hp.kv_dim());
    attn_.resize(t * hp.q_dim());
    gate_.resize(t * hp.n_ff);
    up_.resize(t * hp.n_ff);
    rope_.resize(t * hp.n_rot);
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
    for (int t = 0; t < n; ++t) places_[size_t(t)] = {&kv_, pos_ + t};
    forward_layers(tokens, places_, true);
    pos_ += n;
    if (logits_out == nullptr) return;
    project_logits(all_logits ? 0 : n - 1, n, logits_out);
    has_logits_ = true;
}

void Session::forward_layers(std::span<const int32_t> tokens, std::span<const KvPlace> places, bool one_sequence) {
    const Hparams& hp = model_.hp;
    const int n = int(tokens.size());
    const int E = hp.n_embd, Q = hp.q_dim(), KV = hp.kv_dim(), F = hp.n_ff;
    ensure_batch(n);
    // Rows of different sequences stay on the decode kernels, whose per-row arithmetic does not
    // depend on the batch: a stream's text must not change with who else is being served.
    struct Restore {
        int& value;
        int saved;
        ~Restore() { value = saved; }
    } restore{scratch_.gemm_min_tokens, scratch_.gemm_min_tokens};
    if (!one_sequence) scratch_.gemm_min_tokens = std::numeric_limits<int>::max();
    // A prompt is compute-bound and wants every core; a decode step (or several streams' steps) is
    // bandwidth-bound and may saturate memory with fewer.
    scratch_.n_threads = one_sequence && n > 1 ? n_threads_batch_ : n_threads_;
    for (int t = 0; t < n; ++t) weight_row(model_.token_embd, tokens[size_t(t)], &x_[size_t(t) * E]);
    for (int t = 0; t < n; ++t) rope_angles(hp, model_.rope_freqs, places[size_t(t)].pos, &rope_[size_t(t) * hp.n_rot]);

    for (int l = 0; l < hp.n_layer; ++l) {
        const LayerWeights& L = model_.layers[size_t(l)];
        // Attention block: x += Wo · attention(rope(Wq·xn), rope(Wk·xn), Wv·xn)
        for (int t = 0; t < n; ++t) rmsnorm(&x_[size_t(t) * E], L.attn_norm, &xn_[size_t(t) * E], E, hp.rms_eps);
        const MatmulOutput qkv[] = {{L.wq, q_.data()}, {L.wk, k_.data()}, {L.wv, v_.data()}};
        matmul(qkv, xn_.data(), n, scratch_);
        add_bias(L.bq, q_.data(), n, Q);
        add_bias(L.bk, k_.data(), n, KV);
        add_bias(L.bv, v_.data(), n, KV);
        for (int t = 0; t < n; ++t) {
            const float* angles = &rope_[size_t(t) * hp.n_rot];
            rope(&q_[size_t(t) * Q], hp.n_head, hp.head_dim, hp.n_rot, hp.rope_style, angles);
            rope(&k_[size_t(t) * KV], hp.n_head_kv, hp.head_dim, hp.n_rot, hp.rope_style, angles);
            places[size_t(t)].kv->store(l, places[size_t(t)].pos, &k_[size_t(t) * KV], &v_[size_t(t) * KV]);
        }
        attention(l, n, places, one_sequence);
        matmul(L.wo, attn_.data(), xn_.data(), n, scratch_);
        for (size_t i = 0; i < size_t(n) * E; ++i) x_[i] += xn_[i];

        // Feed-forward block: x += Wdown · (silu(Wgate·xn) * Wup·xn)
        for (int t = 0; t < n; ++t) rmsnorm(&x_[size_t(t) * E], L.ffn_norm, &xn_[size_t(t) * E], E, hp.rms_eps);
        const MatmulOutput gate_up[] = {{L.ffn_gate, gate_.data()}, {L.ffn_up, up_.data()}};
        matmul(gate_up, xn_.data(), n, scratch_);
        swiglu(gate_.data(), up_.data(), size_t(n) * F);
        matmul(L.ffn_down, gate_.data(), xn_.data(), n, scratch_);
        for (size_t i = 0; i < size_t(n) * E; ++i) x_[i] += xn_[i];
    }
}

void Session::project_logits(int first, int n, float* out) {
    const Hparams& hp = model_.hp;
    const int E = hp.n_embd;
    for (int t = first; t < n; ++t)
        rmsnorm(&x_[size_t(t) * E], model_.output_norm, &xn_[size_t(t - first) * E], E, hp.rms_eps);
    matmul(model_.output, xn_.data(), out, n - first, scratch_);
}

std::span<const float> Session::eval_together(std::span<Session* const> sessions, std::span<const int32_t> tokens) {
    if (sessions.empty()) throw Error("nothing to evaluate: no sessions");
    if (sessions.size() != tokens.size())
        throw Error("eval_together needs one token per session, got " + std::to_string(tokens.size()) + " tokens for " +
                    std::to_string(sessions.size()) + " sessions");
    Session& lead = *sessions[0];
    const Hparams& hp = lead.model_.hp;
    const size_t n = sessions.size(), n_vocab = size_t(hp.n_vocab);
    for (size_t i = 0; i < n; ++i) {
        const Session& s = *sessions[i];
        if (&s.model_ != &lead.model_) throw Error("eval_together: the sessions use different models");
        if (s.kv_.type != lead.kv_.type) throw Error("eval_together: the sessions use different KV cache types");
        for (size_t j = 0; j < i; ++j)
            if (sessions[j] == &s) throw Error("eval_together: a session appears twice in the batch");
        if (s.pos_ >= s.n_ctx_)
            throw Error("context overflow: session " + std::to_string(i) + " already holds " + std::to_string(s.pos_) +
                        " tokens, its context size");
    }
    check_token_ids(hp, tokens);
    lead.places_.resize(n);
    for (size_t i = 0; i < n; ++i) lead.places_[i] = {&sessions[i]->kv_, sessions[i]->pos_};
    lead.forward_layers(tokens, lead.places_, n == 1);
    lead.together_logits_.resize(n * n_vocab);
    lead.project_logits(0, int(n), lead.together_logits_.data());
    for (size_t i = 0; i < n; ++i) {
        Session& s = *sessions[i];
        ++s.pos_;
        const float* row = &lead.together_logits_[i * n_vocab];
        s.logits_.assign(row, row + n_vocab);
        s.has_logits_ = true;
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
        for (int t = 0; t < n; ++t) places_[size_t(t)] = {&kv_, pos_ + t};
        forward_layers(chunk, places_, true);
        pos_ += n;
        for (int t = 0; t < n; ++t) {
            rmsnorm(&x_[size_t(t) * E], model_.output_norm, &xn_[0], E, hp.rms_eps);
            for (int i = 0; i < E; ++i) sum[size_t(i)] += xn_[size_t(i)];
        }
    }
    pos_ = 0;
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
constexpr char kStateMagic[8] = {'R', 'I', 'L', 'L', 'S', 'T', 'A', '1'};

template <typename T>
void put(std::vector<uint8_t>& out, const T& value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), p, p + sizeof(T));
}

struct StateReader {
    std::span<const uint8_t> bytes;
    size_t at = 0;
    void read(void* dst, size_t n) {
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
}  // namespace

// Layout: magic, n_layer, kv_dim, n_vocab, kv type, position, has-logits (int32 each); then per
// layer the keys and values of positions [0, position); then the last logits if present.
std::vector<uint8_t> Session::save_state() const {
    const Hparams& hp = model_.hp;
    std::vector<uint8_t> out(kStateMagic, kStateMagic + 8);
    for (const int32_t v : {hp.n_layer, hp.kv_dim(), hp.n_vocab, int32_t(kv_.type), int32_t(pos_), int32_t(has_logits_)}) put(out, v);
    const size_t elem = kv_type_bytes(kv_.type), row = size_t(pos_) * size_t(kv_.kv_dim) * elem;
    const bool f16 = kv_.type == KvType::F16;
    for (int l = 0; l < hp.n_layer; ++l)
        for (int which = 0; which < 2; ++which) {
            const size_t o = kv_.offset(l, 0);
            const auto* src = f16 ? reinterpret_cast<const uint8_t*>((which ? kv_.v16 : kv_.k16).data() + o)
                                  : reinterpret_cast<const uint8_t*>((which ? kv_.v32 : kv_.k32).data() + o);
            out.insert(out.end(), src, src + row);
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
    if (std::memcmp(magic, kStateMagic, 8) != 0) throw Error("not a rill session state (bad magic bytes)");
    const int32_t n_layer = in.get<int32_t>(), kv_dim = in.get<int32_t>(), n_vocab = in.get<int32_t>();
    if (n_layer != hp.n_layer || kv_dim != hp.kv_dim() || n_vocab != hp.n_vocab)
        throw Error("session state is for another model (" + std::to_string(n_layer) + " layers, kv_dim " + std::to_string(kv_dim) +
                    ", vocabulary " + std::to_string(n_vocab) + ")");
    if (in.get<int32_t>() != int32_t(kv_.type)) throw Error("session state has another KV cache type");
    const int32_t pos = in.get<int32_t>(), logits = in.get<int32_t>();
    if (pos < 0 || pos > n_ctx_)
        throw Error("session state holds " + std::to_string(pos) + " positions; this session's context is " + std::to_string(n_ctx_));
    const size_t elem = kv_type_bytes(kv_.type), row = size_t(pos) * size_t(kv_.kv_dim) * elem;
    const size_t need = size_t(hp.n_layer) * 2 * row + (logits ? size_t(n_vocab) * 4 : 0);
    if (state.size() - in.at != need)
        throw Error("session state has " + std::to_string(state.size() - in.at) + " bytes of data, expected " + std::to_string(need));
    const bool f16 = kv_.type == KvType::F16;
    for (int l = 0; l < hp.n_layer; ++l)
        for (int which = 0; which < 2; ++which) {
            const size_t o = kv_.offset(l, 0);
            void* dst = f16 ? static_cast<void*>((which ? kv_.v16 : kv_.k16).data() + o) : static_cast<void*>((which ? kv_.v32 : kv_.k32).data() + o);
            in.read(dst, row);
        }
    has_logits_ = logits != 0;
    if (has_logits_) {
        logits_.resize(size_t(n_vocab));
        in.read(logits_.data(), size_t(n_vocab) * 4);
    }
    pos_ = pos;
}

// Causal grouped-query attention of the chunk's queries over every cached position up to their own:
// a prompt-sized chunk as GEMMs, anything else on the decode kernels.
void Session::attention(int layer, int n_tokens, std::span<const KvPlace> places, bool one_sequence) {
    if (one_sequence && scratch_.gemm != GemmBackend::Native && n_tokens >= scratch_.gemm_min_tokens) {
        const GemmBackend backend = scratch_.gemm == GemmBackend::Onednn ? GemmBackend::Onednn : GemmBackend::Openblas;
        return batch_attention(model_.hp, kv_, layer, pos_, n_tokens, q_.data(), attn_.data(), backend, scratch_.onednn.get(),
                               scratch_.n_threads, attention_scratch_);
    }
    decode_attention(model_.hp, layer, places, q_.data(), attn_.data(), scratch_.path, scratch_.n_threads, decode_attention_);
}

}  // namespace rill
