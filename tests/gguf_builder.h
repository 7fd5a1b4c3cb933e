// Builds GGUF bytes in memory for tests: valid files to start from, and handles to corrupt them.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace rill::test {

class GgufBuilder {
public:
    explicit GgufBuilder(uint32_t version = 3) : version_(version) {}

    GgufBuilder& kv_u32(const std::string& key, uint32_t v) { return kv(key, 4, &v, 4); }
    GgufBuilder& kv_i32(const std::string& key, int32_t v) { return kv(key, 5, &v, 4); }
    GgufBuilder& kv_f32(const std::string& key, float v) { return kv(key, 6, &v, 4); }
    GgufBuilder& kv_bool(const std::string& key, bool v) {
        const uint8_t b = v;
        return kv(key, 7, &b, 1);
    }
    GgufBuilder& kv_u64(const std::string& key, uint64_t v) { return kv(key, 10, &v, 8); }
    GgufBuilder& kv_f64(const std::string& key, double v) { return kv(key, 12, &v, 8); }
    GgufBuilder& kv_string(const std::string& key, const std::string& v) {
        ++n_kv_;
        put_string(meta_, key);
        put<uint32_t>(meta_, 8);
        put_string(meta_, v);
        return *this;
    }
    GgufBuilder& kv_string_array(const std::string& key, const std::vector<std::string>& v) {
        ++n_kv_;
        put_string(meta_, key);
        put<uint32_t>(meta_, 9);
        put<uint32_t>(meta_, 8);
        put<uint64_t>(meta_, v.size());
        for (const auto& s : v) put_string(meta_, s);
        return *this;
    }
    GgufBuilder& kv_f32_array(const std::string& key, const std::vector<float>& v) {
        ++n_kv_;
        put_string(meta_, key);
        put<uint32_t>(meta_, 9);
        put<uint32_t>(meta_, 6);
        put<uint64_t>(meta_, v.size());
        for (float x : v) put(meta_, x);
        return *this;
    }
    GgufBuilder& kv_i32_array(const std::string& key, const std::vector<int32_t>& v) {
        ++n_kv_;
        put_string(meta_, key);
        put<uint32_t>(meta_, 9);
        put<uint32_t>(meta_, 5);
        put<uint64_t>(meta_, v.size());
        for (int32_t x : v) put(meta_, x);
        return *this;
    }

    // Any metadata value, already encoded (type id, then the value's bytes as GGUF lays them out).
    GgufBuilder& kv_encoded(const std::string& key, uint32_t type, const std::vector<uint8_t>& value) {
        ++n_kv_;
        put_string(meta_, key);
        put(meta_, type);
        meta_.insert(meta_.end(), value.begin(), value.end());
        return *this;
    }

    // A tensor of `type` with the given dims; its data is `bytes` (zeros if empty) at the next aligned offset.
    GgufBuilder& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, std::vector<uint8_t> bytes) {
        ++n_tensors_;
        while (data_.size() % 32) data_.push_back(0);
        put_string(infos_, name);
        put<uint32_t>(infos_, uint32_t(dims.size()));
        for (uint64_t d : dims) put(infos_, d);
        put(infos_, type);
        put<uint64_t>(infos_, data_.size());
        data_.insert(data_.end(), bytes.begin(), bytes.end());
        return *this;
    }
    // An F32 tensor filled with `value`.
    GgufBuilder& f32_tensor(const std::string& name, std::vector<uint64_t> dims, float value = 0.01f) {
        uint64_t n = 1;
        for (uint64_t d : dims) n *= d;
        std::vector<uint8_t> bytes(n * 4);
        for (uint64_t i = 0; i < n; ++i) std::memcpy(&bytes[i * 4], &value, 4);
        return tensor(name, std::move(dims), 0, std::move(bytes));
    }

    std::vector<uint8_t> bytes() const {
        std::vector<uint8_t> out;
        put<uint32_t>(out, 0x46554747);
        put(out, version_);
        put<uint64_t>(out, n_tensors_);
        put<uint64_t>(out, n_kv_);
        out.insert(out.end(), meta_.begin(), meta_.end());
        out.insert(out.end(), infos_.begin(), infos_.end());
        while (out.size() % 32) out.push_back(0);
        out.insert(out.end(), data_.begin(), data_.end());
        return out;
    }

    // Where the header's tensor infos start, for tests that patch a field.
    size_t infos_offset() const { return 24 + meta_.size(); }

    template <typename T>
    static void put(std::vector<uint8_t>& out, T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        out.insert(out.end(), p, p + sizeof v);
    }
    static void put_string(std::vector<uint8_t>& out, const std::string& s) {
        put<uint64_t>(out, s.size());
        out.insert(out.end(), s.begin(), s.end());
    }

private:
    GgufBuilder& kv(const std::string& key, uint32_t type, const void* v, size_t n) {
        ++n_kv_;
        put_string(meta_, key);
        put(meta_, type);
        const auto* p = static_cast<const uint8_t*>(v);
        meta_.insert(meta_.end(), p, p + n);
        return *this;
    }

    uint32_t version_;
    uint64_t n_kv_ = 0, n_tensors_ = 0;
    std::vector<uint8_t> meta_, infos_, data_;
};

// A complete, loadable llama model with tiny F32 weights and a 4-token SPM vocab; `skip` leaves one tensor out.
inline GgufBuilder tiny_llama(const std::string& skip = "") {
    const uint64_t n_embd = 8, n_ff = 16, n_vocab = 4;
    GgufBuilder b;
    b.kv_string("general.architecture", "llama")
        .kv_u32("llama.embedding_length", uint32_t(n_embd))
        .kv_u32("llama.block_count", 1)
        .kv_u32("llama.feed_forward_length", uint32_t(n_ff))
        .kv_u32("llama.attention.head_count", 2)
        .kv_u32("llama.attention.head_count_kv", 1)
        .kv_u32("llama.context_length", 32)
        .kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f)
        .kv_string("tokenizer.ggml.model", "llama");
    std::vector<std::string> tokens;
    for (uint64_t i = 0; i < n_vocab; ++i) tokens.push_back("t" + std::to_string(i));
    b.kv_string_array("tokenizer.ggml.tokens", tokens);
    const uint64_t kv = n_embd / 2;
    const std::pair<std::string, std::vector<uint64_t>> tensors[] = {
        {"token_embd.weight", {n_embd, n_vocab}},       {"output_norm.weight", {n_embd}},
        {"blk.0.attn_norm.weight", {n_embd}},          {"blk.0.attn_q.weight", {n_embd, n_embd}},
        {"blk.0.attn_k.weight", {n_embd, kv}},         {"blk.0.attn_v.weight", {n_embd, kv}},
        {"blk.0.attn_output.weight", {n_embd, n_embd}}, {"blk.0.ffn_norm.weight", {n_embd}},
        {"blk.0.ffn_gate.weight", {n_embd, n_ff}},     {"blk.0.ffn_up.weight", {n_embd, n_ff}},
        {"blk.0.ffn_down.weight", {n_ff, n_embd}},
    };
    for (const auto& [name, dims] : tensors)
        if (name != skip) b.f32_tensor(name, dims, dims.size() == 1 ? 1.0f : 0.01f);
    return b;
}

// A one-layer model of a newer family with every key and tensor its description reads: qwen3, gemma3
// (sliding window 4, soft-capping), phi3 (fused tensors, LongRoPE factors), smollm3, olmo2, granite
// (its four scales), qwen3 with YaRN ("qwen3-yarn"), and the mixtures of experts qwen3moe and gpt-oss
// (4 experts, 2 chosen). `skip` leaves out one tensor.
inline GgufBuilder tiny_family(const std::string& family, const std::string& skip = "", uint32_t n_used = 2) {
    const std::string arch = family == "qwen3-yarn" ? "qwen3" : family;
    const uint64_t e = 8, ff = 16, n_vocab = 4, d = 4, q = 2 * d, kv = d;
    const std::string a = arch + ".";
    GgufBuilder b;
    b.kv_string("general.architecture", arch)
        .kv_u32(a + "embedding_length", uint32_t(e))
        .kv_u32(a + "block_count", 1)
        .kv_u32(a + "feed_forward_length", uint32_t(ff))
        .kv_u32(a + "attention.head_count", 2)
        .kv_u32(a + "attention.head_count_kv", 1)
        .kv_u32(a + "attention.key_length", uint32_t(d))
        .kv_u32(a + "context_length", 32)
        .kv_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f)
        .kv_string("tokenizer.ggml.model", "llama");
    if (arch == "gemma3") b.kv_u32(a + "attention.sliding_window", 4).kv_f32(a + "final_logit_softcapping", 30.0f);
    if (arch == "granite")
        b.kv_f32(a + "logit_scale", 8).kv_f32(a + "embedding_scale", 12).kv_f32(a + "residual_scale", 0.22f).kv_f32(a + "attention.scale", 0.25f);
    if (family == "qwen3-yarn")
        b.kv_string(a + "rope.scaling.type", "yarn").kv_f32(a + "rope.scaling.factor", 4).kv_u32(a + "rope.scaling.original_context_length", 8);
    if (arch == "phi3") b.kv_u32(a + "rope.scaling.original_context_length", 8).kv_f32(a + "rope.scaling.attn_factor", 1.2f);
    const bool moe = arch == "qwen3moe" || arch == "gpt-oss", oss = arch == "gpt-oss";
    const uint64_t n_exp = 4, ff_exp = 8;
    if (moe) b.kv_u32(a + "expert_count", uint32_t(n_exp)).kv_u32(a + "expert_used_count", n_used).kv_u32(a + "expert_feed_forward_length", uint32_t(ff_exp));
    if (oss)
        b.kv_u32(a + "attention.sliding_window", 4).kv_string(a + "rope.scaling.type", "yarn").kv_f32(a + "rope.scaling.factor", 8)
            .kv_u32(a + "rope.scaling.original_context_length", 8);
    std::vector<std::string> tokens;
    for (uint64_t i = 0; i < n_vocab; ++i) tokens.push_back("t" + std::to_string(i));
    b.kv_string_array("tokenizer.ggml.tokens", tokens);
    std::vector<std::pair<std::string, std::vector<uint64_t>>> t = {{"token_embd.weight", {e, n_vocab}}, {"output_norm.weight", {e}}};
    const bool pre = arch != "olmo2", post = arch == "gemma3" || arch == "olmo2", fused = arch == "phi3";
    if (fused) t.insert(t.end(), {{"rope_factors_long.weight", {d / 2}}, {"rope_factors_short.weight", {d / 2}}});
    if (pre) t.push_back({"blk.0.attn_norm.weight", {e}});
    if (fused) t.push_back({"blk.0.attn_qkv.weight", {e, q + 2 * kv}});
    else t.insert(t.end(), {{"blk.0.attn_q.weight", {e, q}}, {"blk.0.attn_k.weight", {e, kv}}, {"blk.0.attn_v.weight", {e, kv}}});
    if (arch == "qwen3" || arch == "gemma3" || arch == "qwen3moe")
        t.insert(t.end(), {{"blk.0.attn_q_norm.weight", {d}}, {"blk.0.attn_k_norm.weight", {d}}});
    if (oss)
        t.insert(t.end(), {{"blk.0.attn_q.bias", {q}}, {"blk.0.attn_k.bias", {kv}}, {"blk.0.attn_v.bias", {kv}},
                           {"blk.0.attn_output.bias", {e}}, {"blk.0.attn_sinks.weight", {2}}});
    if (arch == "olmo2") t.insert(t.end(), {{"blk.0.attn_q_norm.weight", {q}}, {"blk.0.attn_k_norm.weight", {kv}}});
    t.push_back({"blk.0.attn_output.weight", {q, e}});
    if (post) t.push_back({"blk.0.post_attention_norm.weight", {e}});
    if (moe) {
        t.insert(t.end(), {{oss ? "blk.0.post_attention_norm.weight" : "blk.0.ffn_norm.weight", {e}},
                           {"blk.0.ffn_gate_inp.weight", {e, n_exp}},
                           {"blk.0.ffn_gate_exps.weight", {e, ff_exp, n_exp}},
                           {"blk.0.ffn_up_exps.weight", {e, ff_exp, n_exp}},
                           {"blk.0.ffn_down_exps.weight", {ff_exp, e, n_exp}}});
        if (oss)
            t.insert(t.end(), {{"blk.0.ffn_gate_inp.bias", {n_exp}}, {"blk.0.ffn_gate_exps.bias", {ff_exp, n_exp}},
                               {"blk.0.ffn_up_exps.bias", {ff_exp, n_exp}}, {"blk.0.ffn_down_exps.bias", {e, n_exp}}});
        t.push_back({"output.weight", {e, n_vocab}});
    } else {
        if (pre) t.push_back({"blk.0.ffn_norm.weight", {e}});
        if (fused) t.push_back({"blk.0.ffn_up.weight", {e, 2 * ff}});
        else t.insert(t.end(), {{"blk.0.ffn_gate.weight", {e, ff}}, {"blk.0.ffn_up.weight", {e, ff}}});
        t.push_back({"blk.0.ffn_down.weight", {ff, e}});
        if (post) t.push_back({"blk.0.post_ffw_norm.weight", {e}});
    }
    for (const auto& [name, dims] : t)
        if (name != skip) b.f32_tensor(name, dims, dims.size() == 1 ? 1.0f : 0.01f);
    return b;
}

}  // namespace rill::test
