// Derives models the shared data lacks from a golden llama model, for cross-checks against llama.cpp:
//   qwen2.gguf       the same weights as a qwen2 model: q/k/v biases added, NEOX RoPE, output tied to token_embd
//   rope_freqs.gguf  the llama model plus a Llama-3.1-style rope_freqs tensor of per-frequency divisors
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "../gguf_builder.h"
#include "runtime/format/gguf.h"

using namespace rill;
using test::GgufBuilder;

namespace {

void copy_tokenizer(const GgufFile& src, GgufBuilder& out) {
    out.kv_string("tokenizer.ggml.model", *src.get_string("tokenizer.ggml.model"));
    out.kv_string_array("tokenizer.ggml.tokens", src.get_string_array("tokenizer.ggml.tokens"));
    out.kv_f32_array("tokenizer.ggml.scores", src.get_float_array("tokenizer.ggml.scores"));
    std::vector<int32_t> types;
    for (int64_t t : src.get_int_array("tokenizer.ggml.token_type")) types.push_back(int32_t(t));
    out.kv_i32_array("tokenizer.ggml.token_type", types);
    for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
        if (const auto id = src.get_uint(key)) out.kv_u32(key, uint32_t(*id));
}

void copy_hparams(const GgufFile& src, GgufBuilder& out, const std::string& arch) {
    out.kv_string("general.architecture", arch);
    for (const char* key : {"embedding_length", "block_count", "feed_forward_length", "attention.head_count",
                            "attention.head_count_kv", "context_length", "rope.dimension_count"})
        if (const auto v = src.get_uint(std::string("llama.") + key)) out.kv_u32(arch + "." + key, uint32_t(*v));
    out.kv_f32(arch + ".attention.layer_norm_rms_epsilon", float(*src.get_float("llama.attention.layer_norm_rms_epsilon")));
    out.kv_f32(arch + ".rope.freq_base", float(src.get_float("llama.rope.freq_base").value_or(10000.0)));
}

void copy_tensor(const GgufTensor& t, GgufBuilder& out) {
    std::vector<uint64_t> dims(t.ne.begin(), t.ne.begin() + t.n_dims);
    out.tensor(t.name, dims, uint32_t(t.type), std::vector<uint8_t>(t.data, t.data + t.n_bytes));
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

bool write(const std::string& path, const std::vector<uint8_t>& bytes) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: make_variants SOURCE_LLAMA.gguf OUT_DIR\n");
        return 2;
    }
    const GgufFile src = GgufFile::open(argv[1]);
    const std::string dir = argv[2];
    std::mt19937 rng(2024);
    std::normal_distribution<float> noise(0.0f, 0.5f);

    GgufBuilder qwen;
    copy_hparams(src, qwen, "qwen2");
    copy_tokenizer(src, qwen);
    for (const GgufTensor& t : src.tensors()) {
        if (t.name == "output.weight") continue;  // tied to token_embd
        if (t.name == "token_embd.weight") {
            // As the output matrix, N(0,1) rows would give logits in the hundreds and log-probs that
            // underflow float32 in llama.cpp's softmax; scaled down, the distribution stays comparable.
            std::vector<float> embd(t.n_elements);
            std::memcpy(embd.data(), t.data, t.n_bytes);
            for (float& x : embd) x *= 0.05f;
            qwen.tensor(t.name, {t.ne[0], t.ne[1]}, 0, f32_bytes(embd));
            continue;
        }
        copy_tensor(t, qwen);
        for (const char* proj : {"attn_q", "attn_k", "attn_v"}) {
            if (t.name.find(std::string(proj) + ".weight") == std::string::npos) continue;
            std::vector<float> bias(t.ne[1]);
            for (float& b : bias) b = noise(rng);
            qwen.tensor(t.name.substr(0, t.name.size() - 6) + "bias", {t.ne[1]}, 0, f32_bytes(bias));
        }
    }

    GgufBuilder scaled;
    copy_hparams(src, scaled, "llama");
    copy_tokenizer(src, scaled);
    for (const GgufTensor& t : src.tensors()) copy_tensor(t, scaled);
    const uint64_t n_rot = src.get_uint("llama.rope.dimension_count").value_or(64);
    std::vector<float> factors(n_rot / 2);
    for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 7.0f * float(i) / float(factors.size() - 1);
    scaled.tensor("rope_freqs.weight", {n_rot / 2}, 0, f32_bytes(factors));

    return write(dir + "/qwen2.gguf", qwen.bytes()) && write(dir + "/rope_freqs.gguf", scaled.bytes()) ? 0 : 1;
}
