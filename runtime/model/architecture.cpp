#include "runtime/model/architecture.h"

#include <algorithm>
#include <cmath>

#include "runtime/base/error.h"

namespace rill {
namespace {

// One row per family, from llama.cpp's llama_model_rope_type and src/models/<family>.cpp.
const Architecture kArchitectures[] = {
    {.name = "llama"},
    {.name = "qwen2", .rope_style = RopeStyle::Neox, .qkv_bias = true},
    {.name = "qwen3", .rope_style = RopeStyle::Neox, .qk_norm = QkNorm::PerHead},
    {.name = "gemma3",
     .rope_style = RopeStyle::Neox,
     .qk_norm = QkNorm::PerHead,
     .post_norms = true,
     .activation = Activation::GeluTanh,
     .sqrt_embd_scale = true,
     .sliding_window = true,
     .default_swa_pattern = 6},
    // phi3 files carry attention.sliding_window, but llama.cpp runs every phi3 layer on full attention.
    {.name = "phi3", .rope_style = RopeStyle::Neox, .fused_qkv = true, .fused_gate_up = true},
    {.name = "smollm3", .no_rope_step = 4},
    {.name = "olmo2",
     .rope_style = RopeStyle::Neox,
     .qk_norm = QkNorm::Whole,
     .pre_norms = false,
     .post_norms = true,
     .sliding_window = true,
     .default_swa_pattern = 4},
    {.name = "granite", .granite_scales = true},
    {.name = "qwen3moe", .rope_style = RopeStyle::Neox, .qk_norm = QkNorm::PerHead, .moe = true},
    // llama.cpp's openai-moe graph: q/k/v/o biases, sinks, every other layer sliding (both with the
    // same YaRN RoPE), a router with bias over experts with biases, softmax over the chosen k.
    {.name = "gpt-oss",
     .rope_style = RopeStyle::Neox,
     .activation = Activation::SwigluOai,
     .qkv_bias = true,
     .sliding_window = true,
     .default_swa_pattern = 2,
     .swa_rope_global = true,
     .attn_out_bias = true,
     .sinks = true,
     .moe = true,
     .gating = Gating::TopKSoftmax,
     .expert_biases = true,
     .ffn_norm = "post_attention_norm"},
    // Qwen3.5 / 3.6 (llama.cpp's src/models/qwen35.cpp, qwen35moe.cpp): three of every four layers are
    // Gated DeltaNet, the fourth gated attention with partial IMROPE; the norm before the FFN is named
    // post_attention_norm.
    {.name = "qwen35",
     .rope_style = RopeStyle::Neox,
     .qk_norm = QkNorm::PerHead,
     .ffn_norm = "post_attention_norm",
     .gated_delta_net = true,
     .attn_output_gate = true,
     .rope_sections = true},
    {.name = "qwen35moe",
     .rope_style = RopeStyle::Neox,
     .qk_norm = QkNorm::PerHead,
     .moe = true,
     .ffn_norm = "post_attention_norm",
     .gated_delta_net = true,
     .attn_output_gate = true,
     .shared_expert = true,
     .rope_sections = true},
    // Gemma 4 (llama.cpp's src/models/gemma4.cpp): sliding and full layers of different head sizes and
    // KV head counts, the last layers reading earlier layers' cache, proportional RoPE through
    // rope_freqs on the full layers, scores unscaled, V normalised, PLE on the small models, a
    // per-layer output scale; 26B-A4B is the same family with experts beside a dense FFN.
    {.name = "gemma4",
     .rope_style = RopeStyle::Neox,
     .qk_norm = QkNorm::PerHead,
     .post_norms = true,
     .activation = Activation::GeluTanh,
     .sqrt_embd_scale = true,
     .sliding_window = true,
     .fixed_kq_scale = 1.0f,
     .default_softcap = 30.0f,
     .v_norm = true,
     .v_from_k = true,
     .layer_output_scale = true,
     .per_layer_embeddings = true,
     .experts_optional = true,
     .dense_beside_experts = true},
    // Liquid's LFM2 / LFM2.5 (llama.cpp's src/models/lfm2.cpp, lfm2moe.cpp): gated short convolutions
    // and attention layers (per-head q/k norms, NEOX), the final norm named token_embd_norm; LFM2-MoE's
    // leading layers dense, the rest sigmoid-routed experts.
    {.name = "lfm2", .rope_style = RopeStyle::Neox, .qk_norm = QkNorm::PerHead, .short_conv = true, .output_norm = "token_embd_norm"},
    {.name = "lfm2moe",
     .rope_style = RopeStyle::Neox,
     .qk_norm = QkNorm::PerHead,
     .moe = true,
     .gating = Gating::SigmoidBiasedTopK,
     .short_conv = true,
     .output_norm = "token_embd_norm"},
    // NVIDIA's Nemotron-H (llama.cpp's src/models/nemotron-h.cpp): Mamba-2, attention without positions
    // and ReLU² MLPs, one per layer, as the per-layer head_count_kv and feed_forward_length say.
    {.name = "nemotron_h", .activation = Activation::ReluSquared, .mamba2 = true, .single_block_layers = true, .no_rope = true},
    // Nemotron 3 Nano (nemotron_h_moe, the same graph): the MLP layers are sigmoid-routed ReLU² experts
    // without a gate, beside an ungated ReLU² shared expert.
    {.name = "nemotron_h_moe",
     .activation = Activation::ReluSquared,
     .moe = true,
     .gating = Gating::SigmoidBiasedTopK,
     .mamba2 = true,
     .single_block_layers = true,
     .no_rope = true,
     .routed_weight_keys = true},
    // IBM's Granite 4.0-H (llama.cpp's src/models/granite-hybrid.cpp): Mamba-2 and attention layers,
    // each with an FFN: SwiGLU, or (Tiny, Small) softmax-routed experts of feed_forward_length with an
    // ungated shared expert; Granite's four scales.
    {.name = "granitehybrid", .granite_scales = true, .experts_optional = true, .mamba2 = true, .rope_switch = true},
};

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

// A key that is one integer for every layer or an array with one per layer (llama.cpp's
// get_key_or_arr): the per-layer values, each in 1..max (0 too where allow_zero).
std::vector<int> ints_per_layer(const GgufFile& f, const std::string& key, int n_layer, uint64_t max, bool allow_zero = false) {
    const GgufValue* v = f.find(key);
    if (v == nullptr) throw Error(f.name() + ": metadata '" + key + "' is missing");
    if (v->type != GgufType::ARRAY) return std::vector<int>(size_t(n_layer), allow_zero && f.get_uint(key) == 0u ? 0 : required_int(f, key, max));
    const std::vector<int64_t> values = f.get_int_array(key);
    if (values.size() != size_t(n_layer))
        throw Error(f.name() + ": metadata '" + key + "' has " + std::to_string(values.size()) + " entries for " + std::to_string(n_layer) + " layers");
    std::vector<int> out;
    for (const int64_t x : values) {
        if (x < (allow_zero ? 0 : 1) || uint64_t(x) > max)
            throw Error(f.name() + ": metadata '" + key + "' has an entry " + std::to_string(x) + ", outside " + (allow_zero ? "0" : "1") +
                        ".." + std::to_string(max));
        out.push_back(int(x));
    }
    return out;
}

int largest(const std::vector<int>& values) { return values.empty() ? 0 : *std::max_element(values.begin(), values.end()); }

// A finite number in (lo, hi], or the default when the key is absent.
float number(const GgufFile& f, const std::string& key, double fallback, double lo, double hi) {
    const auto v = f.get_float(key);
    if (!v) return float(fallback);
    if (!(*v > lo && *v <= hi))
        throw Error(f.name() + ": metadata '" + key + "' is " + std::to_string(*v) + ", outside (" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "]");
    return float(*v);
}

// llama.cpp's rope scaling: the type (default linear), the factor, YaRN's ramp and magnitude, and the
// attention factor LongRoPE files carry (src/llama-model.cpp load_hparams, src/llama-context.cpp).
void read_rope(const GgufFile& f, const std::string& p, Hparams& hp) {
    RopeParams& r = hp.rope;
    r.freq_base = number(f, p + "rope.freq_base", 10000.0, 0, 1e12);
    const std::string type = f.get_string(p + "rope.scaling.type").value_or("linear");
    if (type != "none" && type != "linear" && type != "yarn" && type != "llama3" && type != "longrope")
        throw Error(f.name() + ": metadata '" + p + "rope.scaling.type' is '" + type +
                    "', which rill does not support (supported: none, linear, yarn, llama3, longrope)");
    double factor = 0;
    if (f.find(p + "rope.scaling.factor")) factor = number(f, p + "rope.scaling.factor", 0, 0, 1e6);
    else if (f.find(p + "rope.scale_linear")) factor = number(f, p + "rope.scale_linear", 0, 0, 1e6);
    // llama3 files carry their scaling as rope_freqs divisors; the factor key is informational there.
    r.freq_scale = type == "none" || type == "llama3" || factor == 0 ? 1.0f : float(1.0 / factor);
    r.n_ctx_orig = f.find(p + "rope.scaling.original_context_length")
                       ? required_int(f, p + "rope.scaling.original_context_length")
                       : hp.n_ctx_train;
    // None of these families reads the yarn_ext_factor / yarn_beta_* keys: llama.cpp's defaults apply.
    r.ext_factor = type == "yarn" ? 1.0f : 0.0f;
    // Under YaRN, llama.cpp's context divides out the 1 + 0.1·ln(factor) ggml's rope multiplies in
    // and multiplies its own get_mscale back, which is the same number: what remains is ggml's.
    const float factor_f = 1.0f / r.freq_scale;
    const float yarn_mscale = r.ext_factor != 0 && factor_f > 1.0f ? 1.0f + 0.1f * std::log(factor_f) : 1.0f;
    // LongRoPE files (phi3) carry their magnitude as rope.scaling.attn_factor.
    r.attn_factor = yarn_mscale * number(f, p + "rope.scaling.attn_factor", 1.0, 0, 1e3);
    // Sliding layers: their own base, no scaling (gemma3, olmo2).
    // olmo2's graph passes the global base to its sliding layers whatever the file says; gpt-oss's
    // sliding layers take the global base and scaling unless the file names a base of their own.
    if (hp.family->swa_rope_global) {
        hp.rope_local = r;
        hp.rope_local.freq_base = number(f, p + "rope.freq_base_swa", r.freq_base, 0, 1e12);
        return;
    }
    const float base_swa = hp.arch == "olmo2" ? r.freq_base : number(f, p + "rope.freq_base_swa", 10000.0, 0, 1e12);
    hp.rope_local = RopeParams{.freq_base = base_swa, .n_ctx_orig = r.n_ctx_orig, .pair_turns = {}};
}

// Gated DeltaNet sizes and which layers are recurrent: attention.recurrent_layers when the file has
// it, else every layer but each full_attention_interval-th (default 4), as llama.cpp's qwen35 loader.
void read_delta_net(const GgufFile& f, const std::string& p, Hparams& hp) {
    SsmParams& s = hp.ssm;
    s.conv_kernel = required_int(f, p + "ssm.conv_kernel", 64);
    s.state_size = required_int(f, p + "ssm.state_size", 4096);
    s.n_k_heads = required_int(f, p + "ssm.group_count", 4096);
    s.n_v_heads = required_int(f, p + "ssm.time_step_rank", 4096);
    const int inner = required_int(f, p + "ssm.inner_size");
    if (inner != s.value_dim())
        throw Error(f.name() + ": metadata '" + p + "ssm.inner_size' is " + std::to_string(inner) + ", not time_step_rank × state_size (" +
                    std::to_string(s.value_dim()) + ")");
    if (s.n_v_heads % s.n_k_heads != 0)
        throw Error(f.name() + ": metadata '" + p + "ssm.time_step_rank' (" + std::to_string(s.n_v_heads) +
                    " value heads) is not a multiple of ssm.group_count (" + std::to_string(s.n_k_heads) + " key heads)");
    if (uint64_t(s.n_v_heads) * uint64_t(s.state_size) * uint64_t(s.state_size) > (uint64_t(1) << 28))
        throw Error(f.name() + ": a Gated DeltaNet state of " + std::to_string(s.n_v_heads) + " heads of " + std::to_string(s.state_size) +
                    "² floats is larger than rill allows (256M values per layer)");
    hp.layer_recurrent.assign(size_t(hp.n_layer), 0);
    const std::vector<int64_t> listed = f.get_int_array(p + "attention.recurrent_layers");
    if (!listed.empty()) {
        if (listed.size() < size_t(hp.n_layer))
            throw Error(f.name() + ": metadata '" + p + "attention.recurrent_layers' has " + std::to_string(listed.size()) +
                        " entries for " + std::to_string(hp.n_layer) + " layers");
        for (int l = 0; l < hp.n_layer; ++l) hp.layer_recurrent[size_t(l)] = listed[size_t(l)] != 0;
        return;
    }
    set_recurrent_pattern(hp, f.find(p + "full_attention_interval") ? required_int(f, p + "full_attention_interval", 1u << 16) : 4);
}

// LFM2's short convolutions: the layers with no KV heads, over n_embd channels with shortconv.l_cache
// taps.
void read_short_conv(const GgufFile& f, const std::string& p, Hparams& hp) {
    hp.ssm.conv_kernel = required_int(f, p + "shortconv.l_cache", 64);
    hp.layer_recurrent.assign(size_t(hp.n_layer), 0);
    for (int l = 0; l < hp.n_layer; ++l) hp.layer_recurrent[size_t(l)] = hp.n_head_kv_of(l) == 0;
}

// Mamba-2's sizes (ssm.*) and its layers: those with no KV heads (and, where layers run one block,
// no MLP either), as llama.cpp's nemotron_h and granitehybrid loaders decide.
void read_mamba2(const GgufFile& f, const std::string& p, Hparams& hp) {
    SsmParams& s = hp.ssm;
    s.conv_kernel = required_int(f, p + "ssm.conv_kernel", 64);
    s.inner_size = required_int(f, p + "ssm.inner_size", 1u << 20);
    s.state_size = required_int(f, p + "ssm.state_size", 4096);
    s.n_v_heads = required_int(f, p + "ssm.time_step_rank", 65536);
    s.n_k_heads = required_int(f, p + "ssm.group_count", 65536);
    if (s.inner_size % s.n_v_heads != 0 || s.n_v_heads % s.n_k_heads != 0)
        throw Error(f.name() + ": metadata '" + p + "ssm.inner_size' (" + std::to_string(s.inner_size) + "), 'ssm.time_step_rank' (" +
                    std::to_string(s.n_v_heads) + " heads) and 'ssm.group_count' (" + std::to_string(s.n_k_heads) +
                    ") must divide one another");
    if (uint64_t(s.inner_size) * uint64_t(s.state_size) > (uint64_t(1) << 28))
        throw Error(f.name() + ": a Mamba-2 state of " + std::to_string(s.inner_size) + " × " + std::to_string(s.state_size) +
                    " floats is larger than rill allows (256M values per layer)");
    hp.layer_recurrent.assign(size_t(hp.n_layer), 0);
    for (int l = 0; l < hp.n_layer; ++l)
        hp.layer_recurrent[size_t(l)] = hp.n_head_kv_of(l) == 0 && (!hp.family->single_block_layers || hp.n_ff_of(l) == 0);
}

// rope.dimension_sections: which position component each rotated pair takes (ggml_mrope_cache_init's
// interleaved form). Only the fourth component is not the text position.
void read_rope_sections(const GgufFile& f, const std::string& p, Hparams& hp) {
    const std::vector<int64_t> sections = f.get_int_array(p + "rope.dimension_sections");
    if (sections.empty()) return;  // every pair takes the text position
    int64_t total = 0;
    for (const int64_t v : sections) {
        if (v < 0 || v > 65536) throw Error(f.name() + ": metadata '" + p + "rope.dimension_sections' has an entry " + std::to_string(v));
        total += v;
    }
    if (sections.size() != 4 || total == 0)
        throw Error(f.name() + ": metadata '" + p + "rope.dimension_sections' must be 4 counts that are not all zero");
    std::vector<uint8_t> turns(size_t(hp.n_rot / 2));
    for (size_t i = 0; i < turns.size(); ++i) {
        const int64_t sector = int64_t(i) % total;
        turns[i] = (sector % 3 == 0 && sector < 3 * sections[0]) || (sector % 3 == 1 && sector < 3 * sections[1]) ||
                   (sector % 3 == 2 && sector < 3 * sections[2]);
    }
    hp.rope.pair_turns = std::move(turns);
}

// Sliding layers with a head size (and rotated dimensions) of their own: attention.key_length_swa,
// rope.dimension_count_swa (gemma4).
void read_sliding_shapes(const GgufFile& f, const std::string& p, Hparams& hp) {
    const int head_swa = required_int(f, p + "attention.key_length_swa", 65536);
    if (f.find(p + "attention.value_length_swa") && required_int(f, p + "attention.value_length_swa", 65536) != head_swa)
        throw Error(f.name() + ": attention.value_length_swa differs from attention.key_length_swa, which rill does not support");
    hp.n_rot_swa = f.find(p + "rope.dimension_count_swa") ? required_int(f, p + "rope.dimension_count_swa", 65536) : head_swa;
    if (hp.n_rot_swa > head_swa || hp.n_rot_swa % 2 != 0)
        throw Error(f.name() + ": rope.dimension_count_swa " + std::to_string(hp.n_rot_swa) + " must be even and at most the sliding head size " +
                    std::to_string(head_swa));
    hp.layer_head_dim.assign(size_t(hp.n_layer), hp.head_dim);
    for (int l = 0; l < hp.n_layer; ++l)
        if (hp.sliding(l)) hp.layer_head_dim[size_t(l)] = head_swa;
    hp.head_dim = largest(hp.layer_head_dim);
    if (uint64_t(hp.n_head) * uint64_t(hp.head_dim) > (1u << 24))
        throw Error(f.name() + ": attention.head_count × key_length_swa is " + std::to_string(uint64_t(hp.n_head) * hp.head_dim) +
                    ", more than rill allows (16M)");
}

// The last `shared` layers compute no keys or values: each attends over the cache of the last
// earlier layer of its kind (llama.cpp's reuse rule: the two layers before them are sliding, then full).
void read_kv_sharing(const GgufFile& f, const std::string& p, int shared, Hparams& hp) {
    const int from = hp.n_layer - shared;
    if (from < 2)
        throw Error(f.name() + ": metadata '" + p + "attention.shared_kv_layers' is " + std::to_string(shared) + ", leaving fewer than 2 of " +
                    std::to_string(hp.n_layer) + " layers with a cache of their own");
    hp.layer_kv_source.resize(size_t(hp.n_layer));
    for (int l = 0; l < hp.n_layer; ++l) {
        const int source = l < from ? l : from - (hp.sliding(l) ? 2 : 1);
        if (hp.sliding(source) != hp.sliding(l) || hp.head_dim_of(source) != hp.head_dim_of(l) || hp.n_head_kv_of(source) != hp.n_head_kv_of(l))
            throw Error(f.name() + ": layer " + std::to_string(l) + " shares layer " + std::to_string(source) +
                        "'s keys and values (attention.shared_kv_layers), but the two layers' attention differs");
        hp.layer_kv_source[size_t(l)] = source;
    }
}

}  // namespace

const Architecture* find_architecture(const std::string& name) {
    for (const Architecture& a : kArchitectures)
        if (name == a.name) return &a;
    return nullptr;
}

std::vector<std::string> supported_architectures() {
    std::vector<std::string> names;
    for (const Architecture& a : kArchitectures) names.push_back(a.name);
    return names;
}

float Hparams::kq_scale() const { return attention_scale > 0 ? attention_scale : 1.0f / std::sqrt(float(head_dim)); }

int Hparams::n_recurrent() const {
    int n = 0;
    for (const uint8_t r : layer_recurrent) n += r;
    return n;
}

bool Hparams::any_sliding() const {
    for (const uint8_t s : layer_sliding)
        if (s) return true;
    return false;
}

void set_recurrent_pattern(Hparams& hp, int full_attention_interval) {
    hp.layer_recurrent.assign(size_t(hp.n_layer), 0);
    for (int l = 0; l < hp.n_layer; ++l) hp.layer_recurrent[size_t(l)] = (l + 1) % full_attention_interval != 0;
}

void set_layer_pattern(Hparams& hp, int swa_pattern) {
    const Architecture& a = *hp.family;
    hp.layer_sliding.assign(size_t(hp.n_layer), 0);
    hp.layer_rope.assign(size_t(hp.n_layer), 1);
    for (int l = 0; l < hp.n_layer; ++l) {
        // llama.cpp's set_swa_pattern: within each period of n layers, the last is global.
        if (hp.n_swa > 0) hp.layer_sliding[size_t(l)] = swa_pattern <= 1 ? swa_pattern == 0 : l % swa_pattern < swa_pattern - 1;
        if (a.no_rope_step > 0 && (l + 1) % a.no_rope_step == 0) hp.layer_rope[size_t(l)] = 0;
    }
}

Hparams read_hparams(const GgufFile& f) {
    Hparams hp;
    const auto arch = f.get_string("general.architecture");
    if (!arch) throw Error(f.name() + ": metadata 'general.architecture' is missing");
    hp.arch = *arch;
    hp.family = find_architecture(hp.arch);
    if (hp.family == nullptr)
        throw Error(f.name() + ": architecture '" + hp.arch + "' is not supported (supported: " + join(supported_architectures()) + ")");
    const Architecture& a = *hp.family;
    const std::string p = hp.arch + ".";

    hp.n_embd = required_int(f, p + "embedding_length");
    hp.n_layer = required_int(f, p + "block_count", 1024);
    // MTP/NextN blocks follow the main ones and are counted in block_count; the main pass skips them.
    if (f.find(p + "nextn_predict_layers")) {
        const auto nextn = f.get_uint(p + "nextn_predict_layers");
        if (*nextn >= uint64_t(hp.n_layer))
            throw Error(f.name() + ": metadata '" + p + "nextn_predict_layers' is " + std::to_string(*nextn) +
                        ", not fewer than block_count " + std::to_string(hp.n_layer));
        hp.n_nextn = int(*nextn);
        hp.n_layer -= hp.n_nextn;
    }
    // Qwen3.5-MoE configs have no dense width, so their files carry no feed_forward_length.
    // Per-layer lists count the MTP blocks too; the main pass reads the first n_layer entries.
    const int n_all = hp.n_layer + hp.n_nextn;
    const auto main_layers = [&](std::vector<int> v) {
        v.resize(size_t(hp.n_layer));
        if (std::all_of(v.begin(), v.end(), [&](int x) { return x == v.front(); })) return std::pair{v.front(), std::vector<int>{}};
        return std::pair{largest(v), std::move(v)};
    };
    const bool experts = a.moe || (a.experts_optional && f.find(p + "expert_count"));
    // Qwen3.5-MoE configs have no dense width, so their files carry no feed_forward_length.
    // Nemotron-H marks the layers without an MLP with 0.
    if (!(experts && !f.find(p + "feed_forward_length")))
        std::tie(hp.n_ff, hp.layer_n_ff) = main_layers(ints_per_layer(f, p + "feed_forward_length", n_all, 1u << 30, a.single_block_layers));
    hp.n_head = required_int(f, p + "attention.head_count", 4096);
    // LFM2 marks its short-convolution layers with 0 KV heads.
    if (f.find(p + "attention.head_count_kv"))
        std::tie(hp.n_head_kv, hp.layer_n_head_kv) =
            main_layers(ints_per_layer(f, p + "attention.head_count_kv", n_all, 4096, a.short_conv || a.mamba2));
    else
        hp.n_head_kv = hp.n_head;
    if (hp.n_head_kv == 0) throw Error(f.name() + ": metadata '" + p + "attention.head_count_kv' leaves no attention layer");
    hp.n_ctx_train = required_int(f, p + "context_length");
    if (a.short_conv) read_short_conv(f, p, hp);
    if (a.mamba2) read_mamba2(f, p, hp);
    for (int l = 0; l < hp.n_layer; ++l)
        if (hp.n_head_kv_of(l) > 0 && hp.n_head % hp.n_head_kv_of(l) != 0)
            throw Error(f.name() + ": attention.head_count " + std::to_string(hp.n_head) + " is not a multiple of attention.head_count_kv " +
                        std::to_string(hp.n_head_kv_of(l)) + (hp.layer_n_head_kv.empty() ? "" : " (layer " + std::to_string(l) + ")"));
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
    if (uint64_t(hp.n_head) * uint64_t(hp.head_dim) > (1u << 24))
        throw Error(f.name() + ": attention.head_count × key_length is " + std::to_string(uint64_t(hp.n_head) * hp.head_dim) +
                    ", more than rill allows (16M)");
    hp.n_rot = f.find(p + "rope.dimension_count") ? required_int(f, p + "rope.dimension_count", 65536) : hp.head_dim;
    if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
        throw Error(f.name() + ": rope.dimension_count " + std::to_string(hp.n_rot) + " must be even and at most the head size " +
                    std::to_string(hp.head_dim));
    hp.rms_eps = number(f, p + "attention.layer_norm_rms_epsilon", 1e-5, 0, 1);
    hp.rope_style = a.rope_style;
    read_rope(f, p, hp);

    if (a.sqrt_embd_scale) hp.embedding_scale = std::sqrt(float(hp.n_embd));
    if (a.granite_scales) {
        if (!f.find(p + "logit_scale")) throw Error(f.name() + ": metadata '" + p + "logit_scale' is missing");
        hp.logit_scale = number(f, p + "logit_scale", 1.0, 0, 1e6);
        // As llama.cpp: a missing or zero scale means none.
        const auto scale = [&](const char* key) {
            const float v = number(f, p + key, 0.0, -1e-30, 1e6);
            return v == 0 ? 1.0f : v;
        };
        hp.embedding_scale = scale("embedding_scale");
        hp.residual_scale = scale("residual_scale");
    }
    // attention.scale is granite's kq scale (smollm3's graph would take one, but llama.cpp never
    // loads it); gemma3 derives its own.
    if (a.granite_scales) hp.attention_scale = number(f, p + "attention.scale", 0.0, -1e-30, 1e6);
    if (hp.arch == "gemma3")
        hp.attention_scale = hp.n_layer == 62 ? 1.0f / std::sqrt(float(hp.n_embd / hp.n_head)) : 1.0f / std::sqrt(float(hp.head_dim));
    if (a.fixed_kq_scale > 0) hp.attention_scale = a.fixed_kq_scale;
    hp.final_logit_softcap = number(f, p + "final_logit_softcapping", a.default_softcap, -1e-30, 1e6);
    if (a.per_layer_embeddings) {
        const auto width = f.get_uint(p + "embedding_length_per_layer_input");
        if (!width) throw Error(f.name() + ": metadata '" + p + "embedding_length_per_layer_input' is missing");
        if (*width > 65536) throw Error(f.name() + ": metadata '" + p + "embedding_length_per_layer_input' is " + std::to_string(*width) + ", too large");
        hp.n_embd_per_layer = int(*width);
    }

    if (experts) {
        hp.n_expert = required_int(f, p + "expert_count", 4096);
        hp.n_expert_used = required_int(f, p + "expert_used_count", 4096);
        if (hp.n_expert_used > hp.n_expert)
            throw Error(f.name() + ": metadata '" + p + "expert_used_count' is " + std::to_string(hp.n_expert_used) +
                        ", more than expert_count " + std::to_string(hp.n_expert));
        if (const GgufValue* widths = f.find(p + "expert_feed_forward_length"); widths && widths->type == GgufType::ARRAY)
            throw Error(f.name() + ": metadata '" + p + "expert_feed_forward_length' gives each layer its own expert width, which rill does not support");
        if (f.find(p + "moe_latent_size"))
            throw Error(f.name() + ": metadata '" + p + "moe_latent_size' asks for latent expert projections, which rill does not support");
        hp.n_ff_exp = f.find(p + "expert_feed_forward_length") ? required_int(f, p + "expert_feed_forward_length") : hp.n_ff;
        if (hp.n_ff_exp == 0) throw Error(f.name() + ": metadata '" + p + "expert_feed_forward_length' is missing");
        // Granite's shared expert is optional and ungated; Qwen3.5-MoE's is required and gated.
        if (a.shared_expert || f.find(p + "expert_shared_feed_forward_length"))
            hp.n_ff_shexp = required_int(f, p + "expert_shared_feed_forward_length");
        if (const auto lead = f.get_uint(p + "leading_dense_block_count")) {
            if (*lead > uint64_t(hp.n_layer))
                throw Error(f.name() + ": metadata '" + p + "leading_dense_block_count' is " + std::to_string(*lead) + ", more than the " +
                            std::to_string(hp.n_layer) + " layers");
            hp.n_dense_lead = int(*lead);
        }
        if (a.gating == Gating::SigmoidBiasedTopK) {
            // nemotron_h_moe's converter writes no gating key (llama.cpp's graph takes sigmoid).
            const auto gating = f.get_uint(p + "expert_gating_func");
            if (!gating && !a.routed_weight_keys) throw Error(f.name() + ": metadata '" + p + "expert_gating_func' is missing");
            if (gating && *gating != 2)
                throw Error(f.name() + ": metadata '" + p + "expert_gating_func' is " + std::to_string(*gating) +
                            "; rill supports 2 (sigmoid) for " + hp.arch);
        }
        if (hp.n_dense_lead > 0 && hp.n_ff == 0) throw Error(f.name() + ": metadata '" + p + "feed_forward_length' is missing");
        if (a.routed_weight_keys) {
            const GgufValue* norm = f.find(p + "expert_weights_norm");
            hp.expert_weights_norm = norm != nullptr && norm->u != 0;  // llama.cpp's default: not renormalised
            const float scale = number(f, p + "expert_weights_scale", 0.0, -1e-30, 1e6);
            hp.expert_weights_scale = scale == 0 ? 1.0f : scale;  // as llama.cpp: 0 (or missing) means none
        }
    }
    if (a.gated_delta_net) read_delta_net(f, p, hp);
    if (a.rope_sections) read_rope_sections(f, p, hp);
    if (hp.arch == "gpt-oss" && !f.find(p + "attention.sliding_window"))
        throw Error(f.name() + ": metadata '" + p + "attention.sliding_window' is missing");
    int swa_pattern = 0;
    if ((a.sliding_window || a.short_conv) && f.find(p + "attention.sliding_window")) {
        const auto window = f.get_uint(p + "attention.sliding_window");
        if (*window > (1u << 24)) throw Error(f.name() + ": metadata '" + p + "attention.sliding_window' is " + std::to_string(*window) + ", too large");
        hp.n_swa = int(*window);
        swa_pattern = a.default_swa_pattern;
        if (const GgufValue* pattern = f.find(p + "attention.sliding_window_pattern"); pattern && pattern->type != GgufType::ARRAY)
            swa_pattern = required_int(f, p + "attention.sliding_window_pattern", 1u << 16);
    }
    set_layer_pattern(hp, swa_pattern);
    // gemma4 writes the pattern as one flag per layer (true: sliding).
    if (const GgufValue* pattern = f.find(p + "attention.sliding_window_pattern"); a.sliding_window && pattern && pattern->type == GgufType::ARRAY) {
        const std::vector<int64_t> flags = f.get_int_array(p + "attention.sliding_window_pattern");
        if (flags.size() != size_t(n_all))
            throw Error(f.name() + ": metadata '" + p + "attention.sliding_window_pattern' has " + std::to_string(flags.size()) + " entries for " +
                        std::to_string(n_all) + " layers");
        for (int l = 0; l < hp.n_layer; ++l) hp.layer_sliding[size_t(l)] = hp.n_swa > 0 && flags[size_t(l)] != 0;
    }
    if (a.no_rope) hp.layer_rope.assign(size_t(hp.n_layer), 0);
    if (const GgufValue* finetuned = f.find(p + "rope.scaling.finetuned"); a.rope_switch && finetuned && finetuned->u == 0)
        hp.layer_rope.assign(size_t(hp.n_layer), 0);
    // LFM2: a window makes every attention layer sliding.
    if (a.short_conv && hp.n_swa > 0)
        for (int l = 0; l < hp.n_layer; ++l) hp.layer_sliding[size_t(l)] = !hp.recurrent(l);
    if (f.find(p + "attention.key_length_swa")) read_sliding_shapes(f, p, hp);
    if (const auto shared = f.get_uint(p + "attention.shared_kv_layers"); shared && *shared > 0) read_kv_sharing(f, p, int(*shared), hp);
    return hp;
}

}  // namespace rill
