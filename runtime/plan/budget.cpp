#include "runtime/plan/budget.h"

#include <algorithm>

#include "runtime/compute/attention_batch.h"
#include "runtime/compute/matmul.h"
#include "runtime/compute/recurrent_state.h"
#include "runtime/session/session.h"

namespace rill {
namespace {

TensorShape describe(const GgufTensor& t) {
    return {t.name, t.type, t.ne[0], t.n_rows(), t.n_bytes};
}

}  // namespace

uint64_t ModelShape::weight_bytes() const {
    uint64_t bytes = 0;
    for (const TensorShape& t : tensors) bytes += t.bytes;
    return bytes;
}

uint64_t ModelShape::n_params() const {
    uint64_t n = 0;
    for (const TensorShape& t : tensors)
        if (t.name.rfind("rope_f", 0) != 0) n += t.row_length * t.rows;  // not rope_freqs / rope_factors_*
    return n;
}

double active_share(const TensorShape& t, const Hparams& hp) {
    const bool expert = t.name.find("_exps.") != std::string::npos;
    return expert && hp.n_expert > 0 ? double(hp.n_expert_used) / double(hp.n_expert) : 1.0;
}

uint64_t expected_expert_bytes(const ModelShape& shape) {
    double bytes = 0;
    for (const TensorShape& t : shape.tensors)
        if (t.name.find("_exps.weight") != std::string::npos) bytes += double(t.bytes) * active_share(t, shape.hp);
    return uint64_t(bytes + 0.5);
}

uint64_t ModelShape::n_active_params() const {
    double n = 0;
    for (const TensorShape& t : tensors)
        if (t.name.rfind("rope_f", 0) != 0) n += double(t.row_length * t.rows) * active_share(t, hp);
    return uint64_t(n + 0.5);
}

const TensorShape* ModelShape::find(const std::string& name) const {
    for (const TensorShape& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

ModelShape shape_of(const Model& model) {
    ModelShape shape;
    shape.hp = model.hp;
    for (const GgufTensor& t : model.file.tensors()) shape.tensors.push_back(describe(t));
    shape.tied_output = !model.output || model.output.tensor == model.token_embd.tensor;
    return shape;
}

ModelShape shape_of_preset(const SynthPreset& p, const QuantRecipe& recipe) {
    ModelShape shape;
    shape.hp = preset_hparams(p);

    const std::vector<SynthTensor> tensors = synth_tensors(p);
    std::vector<std::string> names;
    for (const SynthTensor& t : tensors) names.push_back(t.name);
    QuantMix mix(recipe, false, p.n_head / p.n_head_kv, p.tied_output, names);
    for (const SynthTensor& t : tensors) {
        uint64_t rows = 1;
        for (size_t d = 1; d < t.ne.size(); ++d) rows *= t.ne[d];
        const TensorType type = mix.choose(t.name, uint32_t(t.ne.size()), t.ne[0], TensorType::F32);
        shape.tensors.push_back({t.name, type, t.ne[0], rows, row_bytes(type, t.ne[0]) * rows});
    }
    shape.tied_output = p.tied_output;
    return shape;
}

// Keys and values of one position of one layer (of the layer whose cache it reads).
static uint64_t kv_bytes_per_slot(const Hparams& hp, int layer, KvTypes kv_types) {
    const int width = hp.kv_dim_of(layer);
    return uint64_t(kv_row_bytes(kv_types.k, width)) + uint64_t(kv_row_bytes(kv_types.v, width));
}

// A recurrent layer keeps no keys and values (its state is the same size at every position), nor
// does a layer reading another's cache.
uint64_t kv_bytes_per_token(const Hparams& hp, KvTypes kv_types) {
    uint64_t bytes = 0;
    for (int l = 0; l < hp.n_layer; ++l)
        if (hp.owns_kv(l)) bytes += kv_bytes_per_slot(hp, l, kv_types);
    return bytes;
}

uint64_t kv_cache_bytes(const Hparams& hp, int n_ctx, int n_batch, KvTypes kv_types) {
    uint64_t bytes = 0;
    for (int l = 0; l < hp.n_layer; ++l)
        bytes += uint64_t(kv_layer_slots(hp, l, std::max(0, n_ctx), n_batch)) * kv_bytes_per_slot(hp, l, kv_types);
    return bytes;
}

DecodeBudget decode_bytes_per_token(const ModelShape& shape, int position, KvTypes kv_types) {
    DecodeBudget budget;
    for (const TensorShape& t : shape.tensors) {
        // A step looks up one embedding row, but multiplies by the whole output matrix; when the two
        // are tied the table is read once in full (as the output) plus the looked-up row.
        if (t.name == "token_embd.weight") budget.weight_bytes += t.bytes / t.rows + (shape.tied_output ? t.bytes : 0);
        else if (t.row_per_token()) budget.weight_bytes += t.bytes / t.rows;
        else budget.weight_bytes += uint64_t(double(t.bytes) * active_share(t, shape.hp) + 0.5);  // rope_freqs included
    }
    // Each layer reads the keys and values of every earlier position, a sliding one its window's (a
    // layer reading another's cache reads it again).
    const Hparams& hp = shape.hp;
    for (int l = 0; l < hp.n_layer; ++l) {
        if (!hp.has_attention(l)) continue;
        const int seen = hp.window(l) > 0 ? std::min(std::max(0, position), hp.window(l)) : std::max(0, position);
        budget.kv_bytes += kv_bytes_per_slot(hp, l, kv_types) * uint64_t(seen);
    }
    // A recurrent layer reads its state and writes it back every step.
    budget.state_bytes = 2 * recurrent_state_bytes(hp);
    return budget;
}

double prompt_flops(const ModelShape& shape, int n_tokens) {
    const Hparams& hp = shape.hp;
    double per_token = 0;
    for (const TensorShape& t : shape.tensors)
        if (t.is_matrix() && (t.name.rfind("blk.", 0) == 0 || t.name == "per_layer_model_proj.weight") && t.name.find(".bias") == std::string::npos)
            per_token += 2.0 * double(t.row_length) * double(t.rows) * active_share(t, hp);
    // Token t attends to t + 1 positions (a sliding layer: at most its window): scores q·k and the
    // weighted sum of values, per head of the layer's size.
    double attention = 0;
    for (int l = 0; l < hp.n_layer; ++l) {
        if (!hp.has_attention(l)) continue;
        const double n = n_tokens, w = hp.window(l);
        const double attended = w <= 0 || w >= n ? n * (n + 1) / 2 : w * (w + 1) / 2 + (n - w) * w;
        attention += 4.0 * double(hp.head_dim_of(l)) * double(hp.n_head) * attended;
    }
    const double output = 2.0 * double(hp.n_vocab) * double(hp.n_embd);
    // A Gated DeltaNet layer's rule per token and value head: decay, read, update and read again of
    // its state_size² matrix, four multiply-adds an entry.
    // A Mamba-2 layer's scan: decay, update and read of inner_size state rows, three multiply-adds an
    // entry; a short convolution's taps are next to nothing.
    const bool mamba2 = hp.family && hp.family->mamba2, short_conv = hp.family && hp.family->short_conv;
    const double delta_rule = short_conv ? 0.0
                              : mamba2   ? 6.0 * double(hp.ssm.inner_size) * double(hp.ssm.state_size) * double(hp.n_recurrent())
                                         : 8.0 * double(hp.ssm.value_dim()) * double(hp.ssm.state_size) * double(hp.n_recurrent());
    return (per_token + delta_rule) * double(n_tokens) + attention + output;
}

int default_context(const Hparams& hp) { return std::min(hp.n_ctx_train, 4096); }

MemoryNeeds memory_needs(const ModelShape& shape, int n_ctx, int n_batch, int n_threads, KvTypes kv_types) {
    const Hparams& hp = shape.hp;
    MemoryNeeds needs;
    needs.weights = shape.weight_bytes();
    for (const TensorShape& t : shape.tensors)
        if (t.row_per_token()) {
            needs.weights -= t.bytes;
            needs.mapped_tables += t.bytes;
        }
    needs.kv_cache = kv_cache_bytes(hp, n_ctx, n_batch, kv_types);
    needs.recurrent_state = recurrent_state_bytes(hp);
    // What Session, matmul and batch attention allocate at most (see their resize calls).
    const uint64_t batch = uint64_t(std::max(1, std::min(n_batch, n_ctx)));
    const uint64_t threads = uint64_t(std::max(1, n_threads)), ctx = uint64_t(std::max(1, n_ctx));
    const uint64_t widest = uint64_t(std::max({hp.n_embd, hp.n_ff, hp.q_dim()}));
    const uint64_t f = sizeof(float);
    uint64_t s = batch_activation_bytes(hp, int(batch));
    s += uint64_t(hp.n_vocab) * f;                                         // the last token's logits
    s += threads * (ctx + uint64_t(hp.head_dim)) * f;                      // decode attention: scores, one head
    s += threads * (2 * ctx * uint64_t(hp.head_dim) + ctx * kQueryBlock) * f;  // prompt attention per thread
    s += threads * (uint64_t(panel_rows(int(widest))) * widest * f + kPanelBytes / 4);  // GEMM panels, a group
    s += batch * widest * (f + 2);  // prepared activations: float rows, or int8 blocks with scales and sums
    needs.scratch = s;
    return needs;
}

}  // namespace rill
