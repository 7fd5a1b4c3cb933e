#include "runtime/model/model.h"

#include "quant/interleave.h"

#include <cmath>

#include "runtime/base/error.h"

namespace rill {
namespace {

const std::vector<std::string> kArchitectures = {"llama", "qwen2"};

std::string join(const std::vector<std::string>& items) {
    std::string s;
    for (const auto& item : items) s += (s.empty() ? "" : ", ") + item;
    return s;
}

int required_int(const GgufFile& f, const std::string& key, uint64_t max = 1u << 30) {
    const auto v = f.get_uint(key);
    if (!v) throw Error(f.name() + ": metadata '" + key + "' is missing");
    if (*v == 0 || *v > max)
        throw Error(f.name() + ": metadata '" + key + "' is " + std::to_string(*v) + ", outside 1.." + std::to_string(max));
    return int(*v);
}

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

Hparams read_hparams(const GgufFile& f) {
    Hparams hp;
    const auto arch = f.get_string("general.architecture");
    if (!arch) throw Error(f.name() + ": metadata 'general.architecture' is missing");
    hp.arch = *arch;
    bool supported = false;
    for (const auto& a : kArchitectures) supported |= a == hp.arch;
    if (!supported)
        throw Error(f.name() + ": architecture '" + hp.arch + "' is not supported (supported: " + join(kArchitectures) + ")");
    const std::string p = hp.arch + ".";

    hp.n_embd = required_int(f, p + "embedding_length");
    hp.n_layer = required_int(f, p + "block_count", 1024);
    hp.n_ff = required_int(f, p + "feed_forward_length");
    hp.n_head = required_int(f, p + "attention.head_count", 4096);
    hp.n_head_kv = f.find(p + "attention.head_count_kv") ? required_int(f, p + "attention.head_count_kv", 4096) : hp.n_head;
    hp.n_ctx_train = required_int(f, p + "context_length");
    if (hp.n_head % hp.n_head_kv != 0)
        throw Error(f.name() + ": attention.head_count " + std::to_string(hp.n_head) +
                    " is not a multiple of attention.head_count_kv " + std::to_string(hp.n_head_kv));
    if (f.find(p + "attention.key_length")) {
        hp.head_dim = required_int(f, p + "attention.key_length", 65536);
    } else {
        if (hp.n_embd % hp.n_head != 0)
            throw Error(f.name() + ": embedding_length " + std::to_string(hp.n_embd) +
                        " is not a multiple of attention.head_count " + std::to_string(hp.n_head));
        hp.head_dim = hp.n_embd / hp.n_head;
    }
    if (f.find(p + "attention.value_length") && required_int(f, p + "attention.value_length", 65536) != hp.head_dim)
        throw Error(f.name() + ": attention.value_length differs from attention.key_length, which rill does not support");
    hp.n_rot = f.find(p + "rope.dimension_count") ? required_int(f, p + "rope.dimension_count", 65536) : hp.head_dim;
    if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
        throw Error(f.name() + ": rope.dimension_count " + std::to_string(hp.n_rot) + " must be even and at most the head size " +
                    std::to_string(hp.head_dim));
    hp.rms_eps = float(f.get_float(p + "attention.layer_norm_rms_epsilon").value_or(1e-5));
    hp.rope_freq_base = float(f.get_float(p + "rope.freq_base").value_or(10000.0));
    if (const auto type = f.get_string(p + "rope.scaling.type"); type && *type == "linear") {
        const double factor = f.get_float(p + "rope.scaling.factor").value_or(1.0);
        if (!(factor > 0)) throw Error(f.name() + ": rope.scaling.factor must be positive");
        hp.rope_freq_scale = float(1.0 / factor);
    } else if (type && *type != "none" && *type != "llama3") {
        throw Error(f.name() + ": rope scaling type '" + *type + "' is not supported (supported: none, linear, llama3)");
    }
    if (!(hp.rms_eps > 0) || !(hp.rope_freq_base > 0))
        throw Error(f.name() + ": layer_norm_rms_epsilon and rope.freq_base must be positive");
    hp.rope_style = hp.arch == "qwen2" ? RopeStyle::Neox : RopeStyle::Norm;
    return hp;
}

}  // namespace

std::vector<std::string> supported_architectures() { return kArchitectures; }

uint64_t Model::weight_bytes() const {
    uint64_t total = 0;
    for (const GgufTensor& t : file.tensors()) total += t.n_bytes;
    return total;
}

// Regroups the rows of every matrix decode streams through (not the embedding table, which is read
// a row at a time) where a kernel reads the interleaved layout. Only bytes the model owns.
static void interleave_matrices(Model& m) {
    std::vector<Weight*> matrices;
    for (LayerWeights& L : m.layers)
        for (Weight* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down}) matrices.push_back(w);
    if (m.output.tensor != m.token_embd.tensor) matrices.push_back(&m.output);
    std::vector<std::pair<Weight*, uint8_t*>> jobs;
    for (Weight* w : matrices) {
        if (!can_interleave(w->type()) || w->rows() < int(kInterleave)) continue;
        uint8_t* data = m.file.writable_data(*w->tensor);
        if (data == nullptr) return;
        jobs.emplace_back(w, data);
    }
#pragma omp parallel for schedule(dynamic)
    for (size_t i = 0; i < jobs.size(); ++i) {
        Weight& w = *jobs[i].first;
        interleave_rows(w.type(), jobs[i].second, size_t(w.rows()), w.tensor->row_bytes());
        w.interleaved = true;
    }
    m.file.seal();
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
    const uint64_t e = uint64_t(hp.n_embd), v = uint64_t(hp.n_vocab), q = uint64_t(hp.q_dim()),
                   kv = uint64_t(hp.kv_dim()), ff = uint64_t(hp.n_ff);
    m->token_embd = tensor(f, "token_embd.weight", {e, v});
    if (const auto tokens = f.find("tokenizer.ggml.tokens"); tokens && tokens->count != v)
        throw Error(f.name() + ": the vocabulary has " + std::to_string(tokens->count) + " tokens but token_embd.weight has " +
                    std::to_string(v) + " rows");
    m->output_norm = tensor(f, "output_norm.weight", {e});
    m->output = tensor(f, "output.weight", {e, v}, false);
    if (!m->output) m->output = m->token_embd;  // tied embeddings
    m->rope_freqs = tensor(f, "rope_freqs.weight", {uint64_t(hp.n_rot / 2)}, false);
    if (m->rope_freqs && m->rope_freqs.type() != TensorType::F32)
        throw Error(f.name() + ": tensor 'rope_freqs.weight' must be F32");

    const bool biases = hp.arch == "qwen2";
    for (int l = 0; l < hp.n_layer; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        LayerWeights L;
        L.attn_norm = tensor(f, b + "attn_norm.weight", {e});
        L.wq = tensor(f, b + "attn_q.weight", {e, q});
        L.wk = tensor(f, b + "attn_k.weight", {e, kv});
        L.wv = tensor(f, b + "attn_v.weight", {e, kv});
        L.wo = tensor(f, b + "attn_output.weight", {q, e});
        L.bq = tensor(f, b + "attn_q.bias", {q}, biases);
        L.bk = tensor(f, b + "attn_k.bias", {kv}, biases);
        L.bv = tensor(f, b + "attn_v.bias", {kv}, biases);
        L.ffn_norm = tensor(f, b + "ffn_norm.weight", {e});
        L.ffn_gate = tensor(f, b + "ffn_gate.weight", {e, ff});
        L.ffn_up = tensor(f, b + "ffn_up.weight", {e, ff});
        L.ffn_down = tensor(f, b + "ffn_down.weight", {ff, e});
        for (const Weight* w : {&L.attn_norm, &L.ffn_norm, &L.bq, &L.bk, &L.bv})
            if (*w && w->type() != TensorType::F32)
                throw Error(f.name() + ": tensor '" + w->tensor->name + "' must be F32, not " +
                            std::string(traits(w->type()).name));
        m->layers.push_back(L);
    }
    if (m->output_norm.type() != TensorType::F32)
        throw Error(f.name() + ": tensor 'output_norm.weight' must be F32");
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
