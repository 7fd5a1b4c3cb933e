// An inference session: a model, its KV cache and scratch, and the position reached.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "runtime/compute/attention_batch.h"
#include "runtime/compute/attention_decode.h"
#include "runtime/compute/delta_net.h"
#include "runtime/compute/mamba2.h"
#include "runtime/compute/short_conv.h"
#include "runtime/compute/kv_cache.h"
#include "runtime/model/model.h"
#include "runtime/compute/matmul.h"
#include "runtime/compute/moe.h"
#include "runtime/compute/ops.h"

namespace rill {

struct SessionOptions {
    int n_ctx = 0;      // 0: the model's training context, at most 4096
    int n_threads = 0;        // decode steps; 0: every core
    int n_threads_batch = 0;  // prompt batches (more than one token of one sequence); 0: as n_threads
    KvTypes kv_types = KvType::F16;  // keys and values; a quantized type needs head_dim % 32 == 0
    int n_batch = 512;  // prompt tokens evaluated per forward pass; longer prompts run in chunks
    std::optional<simd::KernelPath> kernels = std::nullopt;  // unset: simd::default_kernel_path()
    GemmBackend gemm = GemmBackend::Auto;  // for prompt batches; Auto chooses per weight type and batch
    // Auto's measured choices (runtime/plan/gemm_calibration.h); null: choose_gemm's rule.
    std::shared_ptr<const GemmTable> gemm_table = nullptr;
    // Recurrent (Gated DeltaNet) layers: prompts through the chunked form of the rule instead of the
    // recurrent one (DeltaNetScratch::chunked); the two agree within 1e-4.
    bool chunked_delta_rule = false;
};

int default_thread_count();

// Slots of a layer's KV cache in a session of n_ctx positions and n_batch-token chunks: the whole
// context, or for a sliding-window layer its window plus one chunk (a chunk stores all its keys
// before attending, and its first token still needs the window before it).
int kv_layer_slots(const Hparams& hp, int layer, int n_ctx, int n_batch);

// Activation buffers a micro-batch of n_batch tokens needs (ensure_batch below), in bytes; with
// gemm_scratch_bytes and the KV cache this is all a prompt adds to the weights.
size_t batch_activation_bytes(const Hparams& hp, int n_batch);

class Session;

// One sequence's share of a mixed batch: `tokens` at the session's next positions (at most its
// n_batch), and whether the last one's logits are wanted.
struct BatchPiece {
    Session* session;
    std::span<const int32_t> tokens;
    bool logits = true;
};

class Session {
public:
    Session(const Model& model, const SessionOptions& options);

    // Runs the tokens through the model at the current position and appends them to the KV cache.
    // Returns the logits of the last token, or of every token (n_tokens rows of n_vocab) if all_logits.
    std::span<const float> eval(std::span<const int32_t> tokens, bool all_logits = false);

    // Evaluates one token for each session in a single pass over the weights, so a server decoding
    // several streams reads every weight once per step instead of once per stream. Each session
    // advances by one position. The sessions must share a model and be distinct; the pass runs on
    // the first one's threads and scratch. Row i of the result is session i's logits. Every row equals
    // what eval() would give that session alone, bit for bit: the rows take the decode kernels, whose
    // arithmetic per token does not depend on the batch.
    static std::span<const float> eval_together(std::span<Session* const> sessions, std::span<const int32_t> tokens);

    // The general form: a piece of consecutive tokens for each session (a prompt chunk, or a decode
    // step's one token) in one pass over the weights. Every row takes the decode kernels, so each
    // session ends exactly as if it had evaluated its tokens one at a time alone: a prompt split into
    // pieces of any size, in any company, gives the same keys, values and logits. A piece that asks for
    // logits leaves its last token's in its session's last_logits(); the others leave none. Returns
    // the logits rows in piece order.
    static std::span<const float> eval_batch(std::span<const BatchPiece> pieces);

    // A sentence embedding: the final hidden states (after the output norm) of the tokens, averaged
    // and scaled to unit length. Evaluates from position 0 and leaves the session reset.
    std::vector<float> embed(std::span<const int32_t> tokens);

    // The position, the keys and values before it and the last logits, as bytes that load_state()
    // takes back into a session of the same model, KV types and at least that context.
    std::vector<uint8_t> save_state() const;
    void load_state(std::span<const uint8_t> state);  // throws rill::Error naming the mismatch
    // The logits of the last token evaluated (empty before the first eval).
    std::span<const float> last_logits() const;

    void reset() {
        pos_ = high_water_ = 0;
        checkpoints_.clear();
    }
    // Forgets every position from n on, keeping the keys and values before it for reuse, and returns
    // the position kept. A sliding-window layer's ring may no longer hold the window before n (it
    // keeps one prompt chunk beyond its window); then nothing can be reused and the result is 0.
    // A model with recurrent layers cannot cut its state back to an earlier position: it goes back to
    // the latest checkpoint at or before n (see checkpoint()), or to 0 when there is none.
    int truncate(int n);
    // Keeps a copy of the recurrent layers' state at the current position, for truncate() to return
    // to (the server takes one at each message boundary). At most max_checkpoints copies of at most
    // max_checkpoint_bytes in all; the least recently used goes first. No-op without recurrent layers.
    void checkpoint();
    size_t checkpoint_count() const { return checkpoints_.size(); }
    uint64_t checkpoint_bytes() const;
    size_t max_checkpoints = 8;
    uint64_t max_checkpoint_bytes = uint64_t(256) << 20;
    int position() const { return pos_; }
    int n_ctx() const { return n_ctx_; }
    int n_threads() const { return n_threads_; }
    int n_threads_batch() const { return n_threads_batch_; }
    simd::KernelPath kernel_path() const { return scratch_.path; }
    GemmBackend gemm_backend() const { return scratch_.gemm; }
    const Model& model() const { return model_; }
    // Shows every matrix product's inputs to `observer` (not owned; null stops it) until changed.
    void observe_matmuls(MatmulObserver* observer) { scratch_.observer = observer; }
    const KvCache& kv_cache() const { return kv_; }
    const RecurrentState& recurrent_state() const { return recurrent_; }
    // Expert weight bytes the evaluations so far have read (a mixture of experts reads only the
    // chosen ones); take_expert_bytes() returns the count and starts it again.
    uint64_t take_expert_bytes() { return std::exchange(moe_.expert_bytes, 0); }

private:
    // Where a row of a batch goes: the cache that keeps its keys and values, and its position there.
    // Runs the layers over the rows; x_ holds their final hidden states afterwards. `one_sequence`:
    // the rows are consecutive positions of this session, which lets a long chunk use the GEMMs.
    // `n_threads`: the team for the pass (prompt work may use more threads than a decode step).
    void forward_layers(std::span<const int32_t> tokens, std::span<const KvPlace> places, bool one_sequence, int n_threads);
    // Output norm and the vocabulary projection of the given rows into out, one row each.
    void project_logits(std::span<const int> rows, float* out);
    void forward_chunk(std::span<const int32_t> tokens, bool all_logits, float* logits_out);
    void attention(int layer, int n_tokens, std::span<const KvPlace> places, bool one_sequence);
    void ensure_batch(int n_tokens);
    // The blocks of one layer, on the rows of xn_ in place.
    void attention_block(int layer, int n_tokens, std::span<const KvPlace> places, bool one_sequence);
    void ffn_block(int layer, int n_tokens);
    void dense_ffn(const LayerWeights& L, int n_ff, int n_tokens);
    void dense_and_experts(int layer, int n_tokens);
    // Per-layer embeddings: every layer's input for the tokens into ple_ (from x_, the scaled
    // embeddings), then a layer's share into xn_.
    void per_layer_inputs(std::span<const int32_t> tokens);
    void per_layer_embedding(int layer, int n_tokens);
    // The shared expert's share of the FFN (qwen35moe) into shexp_up_: σ(gate_inp·xn) · shexp(xn).
    void shared_expert(const LayerWeights& L, int n_tokens);

    const Model& model_;
    int n_ctx_, n_threads_, n_threads_batch_, n_batch_;
    int pos_ = 0;
    int high_water_ = 0;  // one past the highest position stored since the last reset
    KvCache kv_;
    RecurrentState recurrent_;  // the recurrent layers' state after position pos_ - 1
    struct Checkpoint {
        int pos;
        std::vector<float> conv, matrices;
        uint64_t last_used;
    };
    std::vector<Checkpoint> checkpoints_;
    uint64_t checkpoint_clock_ = 0;
    MatmulScratch scratch_;
    AttentionScratch attention_scratch_;
    // Activations for a chunk of tokens, [tokens][features].
    int capacity_ = 0;
    std::vector<float> x_, xn_, q_, k_, v_, attn_, gate_, up_;
    std::vector<float> rope_, rope_local_;  // cos and sin per token: global layers, sliding layers
    std::vector<float> fused_;              // a fused projection's rows before they are split
    MoeScratch moe_;
    DeltaNetScratch delta_net_;
    ShortConvScratch short_conv_;
    Mamba2Scratch mamba2_;
    std::vector<float> attn_gate_;                    // the attention output gate's rows (attn_output_gate)
    std::vector<float> shexp_gate_, shexp_up_, shexp_weight_;  // the shared expert's rows
    std::vector<float> ple_, table_row_;    // per-layer inputs [token][layer][width]; one table row on the way
    std::vector<float> branch_, router_in_;  // gemma4's dense branch output and router input
    Weight rope_factors_;                   // rope_freqs, or the LongRoPE factors this context takes
    DecodeAttentionScratch decode_attention_;
    std::vector<float> logits_;
    std::vector<float> together_logits_;  // eval_together's rows, when this session leads the batch
    std::vector<KvPlace> places_;
    std::vector<int32_t> batch_tokens_;  // eval_batch's pieces joined
    std::vector<int> logit_rows_;
    bool has_logits_ = false;
};

}  // namespace rill
