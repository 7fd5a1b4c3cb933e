#include "runtime/plan/plan.h"

#include <algorithm>

#include "runtime/compute/matmul.h"

namespace rill {
namespace {

// Below this share of the read bandwidth the decode kernels, not memory, set the pace.
constexpr double kBandwidthBoundShare = 0.75;
// Matrix-product calls per layer in a decode step (session.cpp): Q, K and V in one; the output
// projection; gate and up in one; down.
constexpr int kDecodeCallsPerLayer = 4;

// Decode multiplies one token by every matrix; the token's embedding row and the vectors (norms,
// biases, rope factors) are plain reads.
bool is_decode_matrix(const TensorShape& t, bool tied) {
    return t.is_matrix() && !t.row_per_token() && (t.name != "token_embd.weight" || tied);
}

// A profile from an older rill may lack a type: fall back to plain streaming, or half the peak. No
// kernel streams faster than memory delivers: on a shared host a kernel measured in a quiet moment
// can outrun the bandwidth probe of a busier one (AMD EPYC Zen 3, 2 cores: Q8_0 at 33 GB/s against a
// 26.8 GB/s probe), and a model's weights, unlike the probe's, all come from memory.
double gemv_rate(const MachineProfile& p, TensorType type, int n_threads) {
    const double rate = p.gemv_gbps(type, n_threads), bandwidth = p.read_bandwidth(n_threads);
    return (rate > 0 ? std::min(rate, bandwidth) : bandwidth) * 1e9;
}

// A mixture's expert matrix per token: its chosen experts' bytes at the streaming rate, plus, per
// chosen expert, what the measured expert step (machine_profile.h) took beyond streaming its bytes at
// that rate: small matrices in many tasks cost their chunks' start-up and hand-out, more per byte
// the smaller the expert (Qwen3-30B-A3B's 768 × 2048) and almost nothing for gpt-oss's 2880 × 2880.
double expert_seconds(const MachineProfile& p, const TensorShape& t, const Hparams& hp, uint64_t bytes, int n_threads) {
    const double stream = gemv_rate(p, t.type, n_threads), measured = p.expert_gemv_gbps(t.type, n_threads) * 1e9;
    double per_expert = 0;
    if (measured > 0) {
        const double measured_bytes = double(row_bytes(t.type, kExpertCols)) * kExpertRows;
        per_expert = std::max(0.0, measured_bytes / measured - measured_bytes / stream);
    }
    return double(bytes) / stream + double(hp.n_expert_used) * per_expert;
}

double gemm_rate(const MachineProfile& p, TensorType type, int n_threads, int cols = 2048) {
    const double rate = p.gemm_gflops(type, n_threads, cols);
    return (rate > 0 ? rate : 0.5 * p.peak(n_threads)) * 1e9;
}

}  // namespace

DecodeEstimate predict_decode(const ModelShape& shape, const MachineProfile& profile, int n_threads, int position,
                              KvTypes kv_types) {
    DecodeEstimate e;
    e.n_threads = n_threads;
    e.position = position;
    const DecodeBudget budget = decode_bytes_per_token(shape, position, kv_types);
    e.bytes = budget.total();
    e.bandwidth_gbps = profile.read_bandwidth(n_threads);
    const double bandwidth = e.bandwidth_gbps * 1e9;
    double seconds = 0;
    uint64_t matrix_bytes = 0;
    for (const TensorShape& t : shape.tensors) {
        if (!is_decode_matrix(t, shape.tied_output)) continue;
        // A mixture of experts reads its chosen share of the experts (as the budget counts them).
        const double share = active_share(t, shape.hp);
        const uint64_t bytes = uint64_t(double(t.bytes) * share + 0.5);
        seconds += share < 1 ? expert_seconds(profile, t, shape.hp, bytes, n_threads) : double(bytes) / gemv_rate(profile, t.type, n_threads);
        matrix_bytes += bytes;
    }
    // Attention reads every cached key and value once, but per position it also costs a dot product,
    // a softmax term and a weighted add per query head: whichever is slower sets its time.
    const Hparams& hp = shape.hp;
    const double kv_read = double(budget.kv_bytes) / bandwidth;
    // Per attention layer: its positions (a sliding one's window at most) at its head size; a
    // recurrent layer's state is in budget.state_bytes.
    double kv_compute = 0;
    for (int l = 0; l < hp.n_layer; ++l) {
        if (!hp.has_attention(l)) continue;
        const int seen = hp.window(l) > 0 ? std::min(position + 1, hp.window(l)) : position + 1;
        kv_compute += double(hp.n_head) * double(seen) * profile.decode_attention_seconds_per_head_position(hp.head_dim_of(l), n_threads);
    }
    e.attention_seconds = std::max(kv_read, kv_compute);
    seconds += double(budget.weight_bytes - matrix_bytes + budget.state_bytes) / bandwidth + e.attention_seconds;
    // Each layer's products (Q, K and V together; the output projection; gate and up together; down)
    // and the logits' each cost the team a meeting beyond their bytes.
    seconds += double(kDecodeCallsPerLayer * hp.n_layer + 1) * profile.decode_call_seconds(n_threads);
    e.seconds = seconds;
    e.tokens_per_second = 1.0 / seconds;
    e.ceiling_tps = bandwidth / double(e.bytes);
    e.bandwidth_bound = e.tokens_per_second >= kBandwidthBoundShare * e.ceiling_tps;
    return e;
}

PrefillEstimate predict_prefill(const ModelShape& shape, const MachineProfile& profile, int n_threads, int n_tokens,
                                int n_batch) {
    PrefillEstimate e;
    e.n_threads = n_threads;
    e.n_tokens = n_tokens;
    e.flops = prompt_flops(shape, n_tokens);
    e.peak_gflops = profile.peak(n_threads);
    const int batch = std::max(1, n_batch);
    double seconds = 0;
    for (int first = 0; first < n_tokens; first += batch) {
        const int m = std::min(batch, n_tokens - first);
        for (const TensorShape& t : shape.tensors) {
            if (!t.is_matrix() || t.name.rfind("blk.", 0) != 0) continue;
            // A mixture's expert multiplies only the tokens routed to it: on average m·k/n of them,
            // and the experts no token chose are not read at all.
            const double share = active_share(t, shape.hp), routed = double(m) * share;
            const double touched = std::min(1.0, routed) * double(t.bytes);
            if (routed < kGemmMinTokens) {  // short batches run on the decode kernels, a pass over the weights per token
                seconds += std::max(1.0, routed) * touched / gemv_rate(profile, t.type, n_threads);
            } else {
                seconds += 2.0 * double(t.row_length) * double(t.rows) * routed / gemm_rate(profile, t.type, n_threads, int(t.row_length));
            }
        }
        // Attention's two products per head over the positions seen so far, at the measured rate of
        // batch attention (GEMMs, softmax and the cache's conversion to float together).
        const Hparams& hp = shape.hp;
        const double attended = double(m) * (double(first) + double(m + 1) / 2);
        for (int l = 0; l < hp.n_layer; ++l) {
            if (!hp.has_attention(l)) continue;
            const int d = hp.head_dim_of(l);
            const double measured = profile.prompt_attention_gflops_at(d, n_threads) * 1e9;
            const double rate = measured > 0 ? measured : gemm_rate(profile, TensorType::F32, n_threads, d);
            const double w = hp.window(l);  // a sliding layer's queries see at most its window
            seconds += 4.0 * d * hp.n_head * (w > 0 ? std::min(attended, double(m) * w) : attended) / rate;
        }
        // A recurrent layer's rule is vector work over its state, token after token: per value head
        // two passes over state_size rows, each a load, a multiply-add and a store of state_size
        // floats, priced as two positions of decode attention per row (a dot product and a weighted
        // add of a head), the measured rate of the same kind of work.
        // Mamba-2 has a state row per inner channel; a short convolution has no state rows.
        const double state_rows = hp.family->short_conv ? 0.0
                                  : hp.family->mamba2   ? double(hp.ssm.inner_size)
                                                        : double(hp.ssm.n_v_heads) * hp.ssm.state_size;
        seconds += double(m) * hp.n_recurrent() * state_rows * 2.0 *
                   profile.decode_attention_seconds_per_head_position(hp.ssm.state_size, n_threads);
    }
    // Logits for the last token only: one pass over the output matrix.
    for (const TensorShape& t : shape.tensors)
        if (t.name == "output.weight" || (shape.tied_output && t.name == "token_embd.weight"))
            seconds += double(t.bytes) / gemv_rate(profile, t.type, n_threads);
    e.seconds = seconds;
    e.tokens_per_second = n_tokens / seconds;
    e.achieved_gflops = e.flops / seconds / 1e9;
    return e;
}

namespace {

// The estimate with the most tokens/s over the profile's thread counts, ascending; a larger count
// must beat the best so far by 2% to win (plan.h).
template <class Predict>
auto fastest(const MachineProfile& profile, Predict&& predict) {
    decltype(predict(1)) best{};
    for (const int t : profile.thread_counts) {
        const auto e = predict(t);
        if (best.tokens_per_second == 0 || e.tokens_per_second > 1.02 * best.tokens_per_second) best = e;
    }
    return best;
}

}  // namespace

DecodeEstimate best_decode(const ModelShape& shape, const MachineProfile& profile, int position, KvTypes kv_types) {
    return fastest(profile, [&](int t) { return predict_decode(shape, profile, t, position, kv_types); });
}

PrefillEstimate best_prefill(const ModelShape& shape, const MachineProfile& profile, int n_tokens, int n_batch) {
    return fastest(profile, [&](int t) { return predict_prefill(shape, profile, t, n_tokens, n_batch); });
}

ThreadPlan plan_threads(const ModelShape& shape, const MachineProfile& profile) {
    return {best_decode(shape, profile, 0).n_threads, best_prefill(shape, profile, 512).n_threads};
}

}  // namespace rill
