#include "runtime/model/model.h"

#include "quant/interleave.h"

#include <cmath>
#include <cstring>
#include <unordered_map>

#include "runtime/base/error.h"

namespace rill {
namespace {

std::string shape_of(const GgufTensor& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

// Finds a tensor and checks its shape (ggml order) against what the hyperparameters say it must be.
Weight tensor(const GgufFile& f, const std::string& name, std::vector<uint64_t> shape, bool required = true) {
    const GgufTensor* t = f.find_tensor(name);
    if (t == nullptr) {
        if (required) throw Error(f.name() + ": tensor '" + name + "' is missing");
        return {};
    }
    bool ok = t->n_dims == shape.size();
    for (size_t d = 0; ok && d < shape.size(); ++d) ok = t->ne[d] == shape[d];
    if (!ok) {
        GgufTensor expected;
        expected.n_dims = uint32_t(shape.size());
        for (size_t d = 0; d < shape.size(); ++d) expected.ne[d] = shape[d];
        throw Error(f.name() + ": tensor '" + name + "' has shape " + shape_of(*t) + " but the metadata implies " +
                    shape_of(expected));
    }
    return Weight{t};
}

}  // namespace

uint64_t Model::weight_bytes() const {
    uint64_t total = 0;
    for (const GgufTensor& t : file.tensors()) total += t.n_bytes;
    return total;
}

// Regroups the rows of every matrix decode streams through (not the embedding table, which is read
// a row at a time) where a kernel reads the interleaved layout. Bytes read into memory are regrouped
// in place; a mapped file's matrices are regrouped in one copy the model owns, which costs the same
// memory as the private pages writing the mapping would have made, in 2 MiB pages instead of 4 KiB.
static void interleave_matrices(Model& m) {
    struct Job {
        Weight* weight;
        GgufTensor* slice;  // an expert's view, which the model owns; null for the file's own tensors
        uint8_t* data = nullptr;
    };
    std::vector<Job> jobs;
    const auto add = [&](Weight& w, GgufTensor* slice) {
        if (w && can_interleave(w.type()) && w.rows() >= int(kInterleave)) jobs.push_back({&w, slice});
    };
    std::unordered_map<const GgufTensor*, GgufTensor*> slices;
    for (GgufTensor& t : m.expert_slices) slices.emplace(&t, &t);
    for (LayerWeights& L : m.layers) {
        for (Weight* w : {&L.wq, &L.wk, &L.wv, &L.wqkv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down, &L.router, &L.shexp_gate,
                          &L.shexp_up, &L.shexp_down, &L.ssm_in, &L.ssm_z, &L.ssm_out, &L.ple_gate, &L.ple_proj})
            add(*w, nullptr);
        for (std::vector<Weight>* experts : {&L.gate_exps, &L.up_exps, &L.down_exps})
            for (Weight& w : *experts) add(w, slices.at(w.tensor));
    }
    if (m.output.tensor != m.token_embd.tensor) add(m.output, nullptr);
    add(m.ple_model_proj, nullptr);
    const bool copy = m.file.mapped();
    if (copy) {
        std::vector<size_t> offset(jobs.size());
        size_t total = 0;
        for (size_t i = 0; i < jobs.size(); ++i) {
            offset[i] = total;
            total += (jobs[i].weight->tensor->n_bytes + 63) / 64 * 64;  // each copy on its own cache lines
        }
        m.relaid = AnonymousMemory(total, m.file.name());
        for (size_t i = 0; i < jobs.size(); ++i) jobs[i].data = m.relaid.data() + offset[i];
    } else {
        for (Job& j : jobs)
            if ((j.data = m.file.writable_data(*j.weight->tensor)) == nullptr) return;  // the caller's bytes
    }
#pragma omp parallel for schedule(dynamic)
    for (size_t i = 0; i < jobs.size(); ++i) {
        const Job& j = jobs[i];
        const GgufTensor& t = *j.weight->tensor;
        if (copy) {
            std::memcpy(j.data, t.data, t.n_bytes);
            m.file.forget(t.data, t.n_bytes);
        }
        interleave_rows(t.type, j.data, size_t(j.weight->rows()), t.row_bytes());
    }
    for (Job& j : jobs) {
        if (j.slice != nullptr) j.slice->data = j.data;
        else if (copy) m.file.move_tensor_data(*j.weight->tensor, j.data);
        j.weight->interleaved = true;
    }
    if (m.file.locked()) m.relaid.lock();
    m.relaid.seal();
    m.file.seal();
}

// Each layer's router and experts: the 3-D tensors cut into one 2-D view per expert, so the matrix
// kernels read an expert like any other weight and a token touches only its experts' bytes.
static void load_experts(Model& m) {
    const GgufFile& f = m.file;
    const Hparams& hp = m.hp;
    const Architecture& a = *hp.family;
    const uint64_t e = uint64_t(hp.n_embd), fe = uint64_t(hp.n_ff_exp), n = uint64_t(hp.n_expert);
    for (int l = 0; l < hp.n_layer; ++l) {
        if (!hp.experts(l)) continue;  // a leading dense layer (LFM2-MoE)
        const std::string b = "blk." + std::to_string(l) + ".";
        LayerWeights& L = m.layers[size_t(l)];
        L.router = tensor(f, b + "ffn_gate_inp.weight", {e, n});
        L.b_router = tensor(f, b + "ffn_gate_inp.bias", {n}, a.expert_biases);
        L.select_bias = tensor(f, b + "exp_probs_b.bias", {n}, a.gating == Gating::SigmoidBiasedTopK);
        // Expert x's rows [first_row, first_row + rows) of a 3-D tensor of `whole_rows` rows per expert.
        const auto slices = [&](const Weight& whole, uint64_t cols, uint64_t whole_rows, uint64_t first_row, uint64_t rows,
                                std::vector<Weight>& out) {
            const size_t slice_bytes = whole.tensor->n_bytes / size_t(n), row_bytes = whole.tensor->row_bytes();
            for (uint64_t x = 0; x < n; ++x) {
                GgufTensor view = *whole.tensor;
                view.name = whole.tensor->name + "[" + std::to_string(x) + (whole_rows == rows ? "" : ", " + std::to_string(first_row) + "..") + "]";
                view.n_dims = 2;
                view.ne = {cols, rows, 1, 1};
                view.n_elements = cols * rows;
                view.n_bytes = size_t(rows) * row_bytes;
                view.data = whole.tensor->data + x * slice_bytes + first_row * row_bytes;
                view.offset = whole.tensor->offset + x * slice_bytes + first_row * row_bytes;
                m.expert_slices.push_back(std::move(view));
                out.push_back(Weight{&m.expert_slices.back()});
            }
        };
        // gemma4 fuses each expert's gate and up: rows 0 .. fe - 1 gate, fe .. 2·fe - 1 up.
        if (f.find_tensor(b + "ffn_gate_up_exps.weight")) {
            const Weight fused = tensor(f, b + "ffn_gate_up_exps.weight", {e, 2 * fe, n});
            slices(fused, e, 2 * fe, 0, fe, L.gate_exps);
            slices(fused, e, 2 * fe, fe, fe, L.up_exps);
        } else {
            // Nemotron-H-MoE's ReLU² experts have no gate.
            if (a.activation != Activation::ReluSquared) slices(tensor(f, b + "ffn_gate_exps.weight", {e, fe, n}), e, fe, 0, fe, L.gate_exps);
            slices(tensor(f, b + "ffn_up_exps.weight", {e, fe, n}), e, fe, 0, fe, L.up_exps);
        }
        slices(tensor(f, b + "ffn_down_exps.weight", {fe, e, n}), fe, e, 0, e, L.down_exps);
        if (a.dense_beside_experts) {
            L.router_scale = tensor(f, b + "ffn_gate_inp.scale", {e});
            L.down_exps_scale = tensor(f, b + "ffn_down_exps.scale", {n}, false);
            L.experts_pre_norm = tensor(f, b + "pre_ffw_norm_2.weight", {e});
            L.dense_post_norm = tensor(f, b + "post_ffw_norm_1.weight", {e});
            L.experts_post_norm = tensor(f, b + "post_ffw_norm_2.weight", {e});
            for (const Weight* w : {&L.router_scale, &L.down_exps_scale, &L.experts_pre_norm, &L.dense_post_norm, &L.experts_post_norm})
                if (*w && w->type() != TensorType::F32) throw Error(f.name() + ": tensor '" + w->tensor->name + "' must be F32");
        }
        L.b_gate_exps = tensor(f, b + "ffn_gate_exps.bias", {fe, n}, a.expert_biases);
        L.b_up_exps = tensor(f, b + "ffn_up_exps.bias", {fe, n}, a.expert_biases);
        L.b_down_exps = tensor(f, b + "ffn_down_exps.bias", {e, n}, a.expert_biases);
        for (const Weight* w : {&L.b_router, &L.select_bias, &L.b_gate_exps, &L.b_up_exps, &L.b_down_exps})
            if (*w && w->type() != TensorType::F32) throw Error(f.name() + ": tensor '" + w->tensor->name + "' must be F32");
        if (hp.n_ff_shexp > 0) {
            const uint64_t fs = uint64_t(hp.n_ff_shexp);
            // The converter writes the HF Linear(n_embd, 1) as [n_embd, 1]; llama-quantize's output has it 1-D.
            const GgufTensor* g = f.find_tensor(b + "ffn_gate_inp_shexp.weight");
            L.shexp_gate_inp = tensor(f, b + "ffn_gate_inp_shexp.weight", g && g->n_dims == 1 ? std::vector<uint64_t>{e} : std::vector<uint64_t>{e, 1},
                                      a.shared_expert);
            L.shexp_gate = tensor(f, b + "ffn_gate_shexp.weight", {e, fs}, a.activation != Activation::ReluSquared);
            L.shexp_up = tensor(f, b + "ffn_up_shexp.weight", {e, fs});
            L.shexp_down = tensor(f, b + "ffn_down_shexp.weight", {fs, e});
        }
    }
}

// A short-convolution layer's tensors (LFM2): the in-projection to B | C | x, the taps, the out-projection.
static void load_short_conv(const GgufFile& f, const Hparams& hp, const std::string& b, LayerWeights& L) {
    const uint64_t e = uint64_t(hp.n_embd);
    L.ssm_in = tensor(f, b + "shortconv.in_proj.weight", {e, 3 * e});
    L.ssm_conv = tensor(f, b + "shortconv.conv.weight", {uint64_t(hp.ssm.conv_kernel), e});
    L.ssm_out = tensor(f, b + "shortconv.out_proj.weight", {e, e});
    if (L.ssm_conv.type() != TensorType::F32)
        throw Error(f.name() + ": tensor '" + L.ssm_conv.tensor->name + "' must be F32, not " + std::string(traits(L.ssm_conv.type()).name));
}

// A Mamba-2 layer's tensors, with the shapes llama.cpp's nemotron_h loader gives them.
static void load_mamba2(const GgufFile& f, const Hparams& hp, const std::string& b, LayerWeights& L) {
    const SsmParams& s = hp.ssm;
    const uint64_t e = uint64_t(hp.n_embd), inner = uint64_t(s.inner_size), heads = uint64_t(s.n_v_heads),
                   groups = uint64_t(s.n_k_heads), conv = inner + 2 * groups * uint64_t(s.state_size);
    L.ssm_in = tensor(f, b + "ssm_in.weight", {e, inner + conv + heads});
    L.ssm_conv = tensor(f, b + "ssm_conv1d.weight", {uint64_t(s.conv_kernel), conv});
    L.ssm_conv_bias = tensor(f, b + "ssm_conv1d.bias", {conv}, false);
    L.ssm_dt_bias = tensor(f, b + "ssm_dt.bias", {heads});
    L.ssm_a = tensor(f, b + "ssm_a", {1, heads});
    L.ssm_d = tensor(f, b + "ssm_d", {1, heads});
    L.ssm_norm = tensor(f, b + "ssm_norm.weight", {inner / groups, groups});
    L.ssm_out = tensor(f, b + "ssm_out.weight", {inner, e});
    for (const Weight* w : {&L.ssm_conv, &L.ssm_conv_bias, &L.ssm_dt_bias, &L.ssm_a, &L.ssm_d, &L.ssm_norm})
        if (*w && w->type() != TensorType::F32)
            throw Error(f.name() + ": tensor '" + w->tensor->name + "' must be F32, not " + std::string(traits(w->type()).name));
}

// A Gated DeltaNet layer's tensors, with the shapes llama.cpp's qwen35 loader gives them.
static void load_delta_net(const GgufFile& f, const Hparams& hp, const std::string& b, LayerWeights& L) {
    const SsmParams& s = hp.ssm;
    const uint64_t e = uint64_t(hp.n_embd), hv = uint64_t(s.n_v_heads);
    L.ssm_in = tensor(f, b + "attn_qkv.weight", {e, uint64_t(s.conv_dim())});
    L.ssm_z = tensor(f, b + "attn_gate.weight", {e, uint64_t(s.value_dim())});
    L.ssm_conv = tensor(f, b + "ssm_conv1d.weight", {uint64_t(s.conv_kernel), uint64_t(s.conv_dim())});
    L.ssm_alpha = tensor(f, b + "ssm_alpha.weight", {e, hv});
    L.ssm_beta = tensor(f, b + "ssm_beta.weight", {e, hv});
    L.ssm_dt_bias = tensor(f, b + "ssm_dt.bias", {hv});
    L.ssm_a = tensor(f, b + "ssm_a", {hv});
    L.ssm_norm = tensor(f, b + "ssm_norm.weight", {uint64_t(s.state_size)});
    L.ssm_out = tensor(f, b + "ssm_out.weight", {uint64_t(s.value_dim()), e});
    for (const Weight* w : {&L.ssm_conv, &L.ssm_dt_bias, &L.ssm_a, &L.ssm_norm})
        if (w->type() != TensorType::F32)
            throw Error(f.name() + ": tensor '" + w->tensor->name + "' must be F32, not " + std::string(traits(w->type()).name));
}

std::unique_ptr<Model> model_from_gguf(GgufFile file, bool interleave) {
    auto m = std::make_unique<Model>();
    m->file = std::move(file);
    const GgufFile& f = m->file;
    Hparams& hp = m->hp;
    hp = read_hparams(f);

    const GgufTensor* embd = f.find_tensor("token_embd.weight");
    if (embd == nullptr) throw Error(f.name() + ": tensor 'token_embd.weight' is missing");
    hp.n_vocab = int(embd->n_dims == 2 ? std::min<uint64_t>(embd->ne[1], 1u << 30) : 0);
    const uint64_t e = uint64_t(hp.n_embd), v = uint64_t(hp.n_vocab);
    m->token_embd = tensor(f, "token_embd.weight", {e, v});
    if (const auto tokens = f.find("tokenizer.ggml.tokens"); tokens && tokens->count != v)
        throw Error(f.name() + ": the vocabulary has " + std::to_string(tokens->count) + " tokens but token_embd.weight has " +
                    std::to_string(v) + " rows");
    m->output_norm = tensor(f, std::string(hp.family->output_norm) + ".weight", {e});
    m->output = tensor(f, "output.weight", {e, v}, false);
    if (!m->output) m->output = m->token_embd;  // tied embeddings
    const uint64_t half_rot = uint64_t(hp.n_rot / 2);
    m->rope_freqs = tensor(f, "rope_freqs.weight", {half_rot}, false);
    m->rope_factors_long = tensor(f, "rope_factors_long.weight", {half_rot}, false);
    m->rope_factors_short = tensor(f, "rope_factors_short.weight", {half_rot}, false);

    const Architecture& a = *hp.family;
    if (a.per_layer_embeddings && hp.n_embd_per_layer > 0) {
        const uint64_t all = uint64_t(hp.n_embd_per_layer) * uint64_t(hp.n_layer);
        m->ple_token_embd = tensor(f, "per_layer_token_embd.weight", {all, v});
        m->ple_model_proj = tensor(f, "per_layer_model_proj.weight", {e, all});
        m->ple_proj_norm = tensor(f, "per_layer_proj_norm.weight", {uint64_t(hp.n_embd_per_layer)});
        if (m->ple_proj_norm.type() != TensorType::F32) throw Error(f.name() + ": tensor 'per_layer_proj_norm.weight' must be F32");
    }
    for (int l = 0; l < hp.n_layer; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        // This layer's widths (gemma4's differ between sliding and full layers, and on the KV-shared ones).
        const uint64_t d = uint64_t(hp.head_dim_of(l)), q = uint64_t(hp.q_dim_of(l)), kv = uint64_t(hp.kv_dim_of(l)),
                       ff = uint64_t(hp.n_ff_of(l));
        // A layer that reads another's cache needs no K or V of its own (gemma4's converted checkpoints
        // still carry them; other exports drop them).
        const bool own_kv = hp.owns_kv(l);
        LayerWeights L;
        L.attn_norm = tensor(f, b + "attn_norm.weight", {e}, a.pre_norms);
        if (hp.recurrent(l) && a.short_conv) {
            load_short_conv(f, hp, b, L);
        } else if (hp.recurrent(l) && a.mamba2) {
            load_mamba2(f, hp, b, L);
        } else if (hp.recurrent(l)) {
            load_delta_net(f, hp, b, L);
        } else if (!hp.has_attention(l)) {
            // an MLP alone (Nemotron-H)
        } else if (a.fused_qkv && f.find_tensor(b + "attn_qkv.weight")) {
            L.wqkv = tensor(f, b + "attn_qkv.weight", {e, q + 2 * kv});
            L.bqkv = tensor(f, b + "attn_qkv.bias", {q + 2 * kv}, false);
        } else {
            L.wq = tensor(f, b + "attn_q.weight", {e, a.attn_output_gate ? 2 * q : q});
            if (own_kv) {
                L.wk = tensor(f, b + "attn_k.weight", {e, kv});
                L.wv = tensor(f, b + "attn_v.weight", {e, kv}, !a.v_from_k);
            }
            L.bq = tensor(f, b + "attn_q.bias", {q}, a.qkv_bias);
            L.bk = tensor(f, b + "attn_k.bias", {kv}, a.qkv_bias);
            L.bv = tensor(f, b + "attn_v.bias", {kv}, a.qkv_bias);
        }
        if (a.qk_norm != QkNorm::None && hp.has_attention(l)) {
            const bool per_head = a.qk_norm == QkNorm::PerHead;
            L.q_norm = tensor(f, b + "attn_q_norm.weight", {per_head ? d : q});
            if (own_kv) L.k_norm = tensor(f, b + "attn_k_norm.weight", {per_head ? d : kv});
        }
        if (hp.has_attention(l)) {
            L.wo = tensor(f, b + "attn_output.weight", {q, e});
            L.bo = tensor(f, b + "attn_output.bias", {e}, false);
        }
        if (a.post_norms) {
            L.attn_post_norm = tensor(f, b + "post_attention_norm.weight", {e});
            L.ffn_post_norm = tensor(f, b + "post_ffw_norm.weight", {e});
        }
        // A layer that runs an MLP alone normalises its input with attn_norm (Nemotron-H).
        L.ffn_norm = tensor(f, b + a.ffn_norm + ".weight", {e}, a.pre_norms && hp.has_mixer(l) && hp.has_ffn(l));
        L.attn_sinks = tensor(f, b + "attn_sinks.weight", {uint64_t(hp.n_head)}, a.sinks);
        if (a.attn_out_bias && !L.bo) throw Error(f.name() + ": tensor '" + b + "attn_output.bias' is missing");
        if (a.layer_output_scale) L.out_scale = tensor(f, b + "layer_output_scale.weight", {1}, false);
        if (hp.n_embd_per_layer > 0) {
            const uint64_t pl = uint64_t(hp.n_embd_per_layer);
            L.ple_gate = tensor(f, b + "inp_gate.weight", {e, pl});
            L.ple_proj = tensor(f, b + "proj.weight", {pl, e});
            L.ple_post_norm = tensor(f, b + "post_norm.weight", {e});
        }
        if ((!hp.experts(l) || a.dense_beside_experts) && ff > 0) {  // the experts themselves are load_experts'
            if (a.fused_gate_up) {
                L.ffn_up = tensor(f, b + "ffn_up.weight", {e, 2 * ff});
            } else {
                L.ffn_gate = tensor(f, b + "ffn_gate.weight", {e, ff}, a.activation != Activation::ReluSquared);
                L.ffn_up = tensor(f, b + "ffn_up.weight", {e, ff});
                L.b_gate = tensor(f, b + "ffn_gate.bias", {ff}, false);
                L.b_up = tensor(f, b + "ffn_up.bias", {ff}, false);
            }
            L.ffn_down = tensor(f, b + "ffn_down.weight", {ff, e});
            L.b_down = tensor(f, b + "ffn_down.bias", {e}, false);
        }
        for (const Weight* w : {&L.attn_norm, &L.ffn_norm, &L.q_norm, &L.k_norm, &L.attn_post_norm, &L.ffn_post_norm, &L.bq, &L.bk,
                                &L.bv, &L.bqkv, &L.bo, &L.b_gate, &L.b_up, &L.b_down, &L.attn_sinks, &L.out_scale, &L.ple_post_norm})
            if (*w && w->type() != TensorType::F32)
                throw Error(f.name() + ": tensor '" + w->tensor->name + "' must be F32, not " +
                            std::string(traits(w->type()).name));
        m->layers.push_back(L);
    }
    if (hp.n_expert > 0) load_experts(*m);
    for (const Weight* w : {&m->rope_freqs, &m->rope_factors_long, &m->rope_factors_short})
        if (*w && w->type() != TensorType::F32) throw Error(f.name() + ": tensor '" + w->tensor->name + "' must be F32");
    if (m->output_norm.type() != TensorType::F32) throw Error(f.name() + ": tensor '" + m->output_norm.tensor->name + "' must be F32");
    if (interleave) interleave_matrices(*m);
    return m;
}

std::unique_ptr<Model> load_model(const std::string& path, const LoadOptions& options) {
    GgufFile file = GgufFile::open(path, options);
    report_progress(options, 0.9);
    auto model = model_from_gguf(std::move(file), options.interleave);
    report_progress(options, 1.0);
    return model;
}

}  // namespace rill
