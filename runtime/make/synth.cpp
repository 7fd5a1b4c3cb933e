#include "runtime/make/synth.h"

#include <algorithm>
#include <cmath>

#include "runtime/base/error.h"
#include "runtime/format/gguf_writer.h"
#include "runtime/session/session.h"

namespace rill {
namespace {

// From each model's published config.json (Hugging Face), the fields llama.cpp's converters read.
const std::vector<SynthPreset> kPresets = {
    {"tinyllama-1.1b", "llama", 32000, 2048, 22, 5632, 32, 4, 2048, 10000.0f, 1e-5f, false, false, 0,
     "TinyLlama/TinyLlama-1.1B-Chat-v1.0"},
    {"llama-2-7b", "llama", 32000, 4096, 32, 11008, 32, 32, 4096, 10000.0f, 1e-5f, false, false, 0, "meta-llama/Llama-2-7b-hf"},
    {"mistral-7b", "llama", 32000, 4096, 32, 14336, 32, 8, 32768, 10000.0f, 1e-5f, false, false, 0,
     "mistralai/Mistral-7B-v0.1"},
    {"llama-3.2-1b", "llama", 128256, 2048, 16, 8192, 32, 8, 131072, 500000.0f, 1e-5f, true, false, 32,
     "meta-llama/Llama-3.2-1B"},
    {"llama-3.2-3b", "llama", 128256, 3072, 28, 8192, 24, 8, 131072, 500000.0f, 1e-5f, true, false, 32,
     "meta-llama/Llama-3.2-3B"},
    {"llama-3.1-8b", "llama", 128256, 4096, 32, 14336, 32, 8, 131072, 500000.0f, 1e-5f, false, false, 8,
     "meta-llama/Llama-3.1-8B"},
    {"qwen2.5-0.5b", "qwen2", 151936, 896, 24, 4864, 14, 2, 32768, 1000000.0f, 1e-6f, true, true, 0, "Qwen/Qwen2.5-0.5B"},
    {"qwen2.5-1.5b", "qwen2", 151936, 1536, 28, 8960, 12, 2, 32768, 1000000.0f, 1e-6f, true, true, 0, "Qwen/Qwen2.5-1.5B"},
    {"qwen2.5-7b", "qwen2", 152064, 3584, 28, 18944, 28, 4, 32768, 1000000.0f, 1e-6f, false, true, 0, "Qwen/Qwen2.5-7B"},
    // The newer families: published config.json values as llama.cpp's converters write them (Gemma 3's
    // GGUF vocabulary is the SentencePiece model's 262144, not the config's padded 262208).
    {"qwen3-0.6b", "qwen3", 151936, 1024, 28, 3072, 16, 8, 40960, 1e6f, 1e-6f, true, false, 0, "Qwen/Qwen3-0.6B", {.head_dim = 128}},
    {"qwen3-4b", "qwen3", 151936, 2560, 36, 9728, 32, 8, 40960, 1e6f, 1e-6f, true, false, 0, "Qwen/Qwen3-4B", {.head_dim = 128}},
    {"qwen3-8b", "qwen3", 151936, 4096, 36, 12288, 32, 8, 40960, 1e6f, 1e-6f, false, false, 0, "Qwen/Qwen3-8B", {.head_dim = 128}},
    {"gemma-3-1b", "gemma3", 262144, 1152, 26, 6912, 4, 1, 32768, 1e6f, 1e-6f, true, false, 0, "google/gemma-3-1b-it",
     {.head_dim = 256, .n_swa = 512, .rope_base_swa = 1e4f}},
    {"gemma-3-4b", "gemma3", 262144, 2560, 34, 10240, 8, 4, 131072, 1e6f, 1e-6f, true, false, 0, "google/gemma-3-4b-it",
     {.head_dim = 256, .n_swa = 1024, .rope_base_swa = 1e4f, .rope_linear_factor = 8}},
    {"gemma-3-12b", "gemma3", 262144, 3840, 48, 15360, 16, 8, 131072, 1e6f, 1e-6f, true, false, 0, "google/gemma-3-12b-it",
     {.head_dim = 256, .n_swa = 1024, .rope_base_swa = 1e4f, .rope_linear_factor = 8}},
    {"phi-4-mini", "phi3", 200064, 3072, 32, 8192, 24, 8, 131072, 1e4f, 1e-5f, true, false, 0, "microsoft/Phi-4-mini-instruct",
     {.n_rot = 96, .longrope_orig_ctx = 4096}},
    {"phi-4", "phi3", 100352, 5120, 40, 17920, 40, 10, 16384, 250000.0f, 1e-5f, false, false, 0, "microsoft/phi-4"},
    {"smollm3-3b", "smollm3", 128256, 2048, 36, 11008, 16, 4, 65536, 5e6f, 1e-6f, true, false, 0, "HuggingFaceTB/SmolLM3-3B"},
    {"olmo-2-1b", "olmo2", 100352, 2048, 16, 8192, 16, 16, 4096, 500000.0f, 1e-6f, false, false, 0, "allenai/OLMo-2-0425-1B"},
    {"granite-3.3-2b", "granite", 49159, 2048, 40, 8192, 32, 8, 131072, 1e7f, 1e-5f, true, false, 0,
     "ibm-granite/granite-3.3-2b-instruct",
     {.embedding_scale = 12.0f, .residual_scale = 0.22f, .attention_scale = 0.015625f, .logit_scale = 8.0f}},
    // Mixtures of experts. Random routers spread tokens over the experts as trained ones do (each
    // token's logits are a random projection of its own hidden state), so a step reads realistic bytes.
    {"qwen3-30b-a3b", "qwen3moe", 151936, 2048, 48, 6144, 32, 4, 40960, 1e6f, 1e-6f, false, false, 0, "Qwen/Qwen3-30B-A3B",
     {.head_dim = 128, .n_expert = 128, .n_expert_used = 8, .n_ff_exp = 768}},
    {"gpt-oss-20b", "gpt-oss", 201088, 2880, 24, 2880, 64, 8, 131072, 150000.0f, 1e-5f, false, true, 0, "openai/gpt-oss-20b",
     {.head_dim = 64, .n_swa = 128, .n_expert = 32, .n_expert_used = 4, .n_ff_exp = 2880, .yarn_factor = 32, .yarn_orig_ctx = 4096}},
    // Qwen3.5 (config.json's text_config): three Gated DeltaNet layers to one gated attention layer,
    // heads of 256 rotated over their first quarter, 16 key heads of 128 in the DeltaNet layers. The
    // published files also carry one MTP layer, which the main pass does not run and these omit.
    {"qwen3.5-0.8b", "qwen35", 248320, 1024, 24, 3584, 8, 2, 262144, 1e7f, 1e-6f, true, false, 0, "Qwen/Qwen3.5-0.8B",
     {.head_dim = 256, .n_rot = 64, .ssm_conv_kernel = 4, .ssm_state = 128, .ssm_k_heads = 16, .ssm_v_heads = 16, .full_attention_interval = 4}},
    {"qwen3.5-4b", "qwen35", 248320, 2560, 32, 9216, 16, 4, 262144, 1e7f, 1e-6f, true, false, 0, "Qwen/Qwen3.5-4B",
     {.head_dim = 256, .n_rot = 64, .ssm_conv_kernel = 4, .ssm_state = 128, .ssm_k_heads = 16, .ssm_v_heads = 32, .full_attention_interval = 4}},
    {"qwen3.5-9b", "qwen35", 248320, 4096, 32, 12288, 16, 4, 262144, 1e7f, 1e-6f, false, false, 0, "Qwen/Qwen3.5-9B",
     {.head_dim = 256, .n_rot = 64, .ssm_conv_kernel = 4, .ssm_state = 128, .ssm_k_heads = 16, .ssm_v_heads = 32, .full_attention_interval = 4}},
    {"qwen3.5-35b-a3b", "qwen35moe", 248320, 2048, 40, 0, 16, 2, 262144, 1e7f, 1e-6f, false, false, 0, "Qwen/Qwen3.5-35B-A3B",
     {.head_dim = 256, .n_rot = 64, .n_expert = 256, .n_expert_used = 8, .n_ff_exp = 512, .n_ff_shexp = 512, .ssm_conv_kernel = 4,
      .ssm_state = 128, .ssm_k_heads = 16, .ssm_v_heads = 32, .full_attention_interval = 4}},
    // Gemma 4 (config.json's text_config, as llama.cpp's Gemma4Model converter writes it): sliding
    // layers with heads of 256, full ones (every 5th or 6th, and the last) with heads of 512 rotating
    // a quarter of their pairs; E2B/E4B with per-layer embeddings of 256 and their last 20/18 layers
    // reading earlier caches (E2B's with a doubled FFN); 26B-A4B and 31B with fewer KV heads on the full
    // layers and no attn_v there, 26B-A4B with 128 experts beside its dense FFN.
    {"gemma-4-e2b", "gemma4", 262144, 1536, 35, 6144, 8, 1, 131072, 1e6f, 1e-6f, true, false, 0, "google/gemma-4-E2B-it",
     {.head_dim = 512, .n_swa = 512, .rope_base_swa = 1e4f, .swa_period = 5, .head_dim_swa = 256, .n_kv_shared = 20,
      .n_embd_per_layer = 256, .double_wide_shared = true, .rope_partial = 0.25f}},
    {"gemma-4-e4b", "gemma4", 262144, 2560, 42, 10240, 8, 2, 131072, 1e6f, 1e-6f, true, false, 0, "google/gemma-4-E4B-it",
     {.head_dim = 512, .n_swa = 512, .rope_base_swa = 1e4f, .swa_period = 6, .head_dim_swa = 256, .n_kv_shared = 18,
      .n_embd_per_layer = 256, .rope_partial = 0.25f}},
    {"gemma-4-26b-a4b", "gemma4", 262144, 2816, 30, 2112, 16, 8, 262144, 1e6f, 1e-6f, true, false, 0, "google/gemma-4-26B-A4B-it",
     {.head_dim = 512, .n_swa = 1024, .rope_base_swa = 1e4f, .n_expert = 128, .n_expert_used = 8, .n_ff_exp = 704, .swa_period = 6,
      .head_dim_swa = 256, .n_head_kv_full = 2, .v_from_k_full = true, .rope_partial = 0.25f}},
    {"gemma-4-31b", "gemma4", 262144, 5376, 60, 21504, 32, 16, 262144, 1e6f, 1e-6f, true, false, 0, "google/gemma-4-31B-it",
     {.head_dim = 512, .n_swa = 1024, .rope_base_swa = 1e4f, .swa_period = 6, .head_dim_swa = 256, .n_head_kv_full = 4,
      .v_from_k_full = true, .rope_partial = 0.25f}},
    // The short-convolution and Mamba-2 hybrids (config.json as llama.cpp's converters write it):
    // LFM2's attention layers listed in full_attn_idxs, its FFN width block_ff_dim adjusted (2/3,
    // rounded up to 256); Nemotron-H's hybrid_override_pattern; Granite 4.0-H's layer_types, its
    // Mamba-2 inner width expand × hidden, experts as wide as feed_forward_length.
    {"lfm2-1.2b", "lfm2", 65536, 2048, 16, 8192, 32, 8, 128000, 1e6f, 1e-5f, true, false, 0, "LiquidAI/LFM2-1.2B",
     {.layer_kinds = "CCACCACCACACACAC", .conv_kernel = 3}},
    {"lfm2-8b-a1b", "lfm2moe", 65536, 2048, 24, 7168, 32, 8, 128000, 1e6f, 1e-5f, true, false, 0, "LiquidAI/LFM2-8B-A1B",
     {.n_expert = 32, .n_expert_used = 4, .n_ff_exp = 1792, .layer_kinds = "CCACCCACCCACCCACCCACCACC", .conv_kernel = 3, .n_dense_lead = 2}},
    {"nemotron-nano-9b-v2", "nemotron_h", 131072, 4480, 56, 15680, 40, 8, 131072, 1e4f, 1e-5f, false, false, 0,
     "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
     {.head_dim = 128, .ssm_state = 128, .layer_kinds = "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-", .conv_kernel = 4,
      .ssm_inner = 10240, .ssm_heads = 128, .ssm_groups = 8}},
    {"granite-4.0-h-tiny", "granitehybrid", 100352, 1536, 40, 512, 12, 4, 131072, 1e4f, 1e-5f, true, false, 0,
     "ibm-granite/granite-4.0-h-tiny",
     {.embedding_scale = 12.0f, .residual_scale = 0.22f, .attention_scale = 0.0078125f, .logit_scale = 6.0f, .n_expert = 64,
      .n_expert_used = 6, .n_ff_exp = 512, .n_ff_shexp = 1024, .ssm_state = 128,
      .layer_kinds = "mmmmmAmmmmmmmmmAmmmmmmmmmAmmmmmmmmmAmmmm", .conv_kernel = 4, .ssm_inner = 3072, .ssm_heads = 48, .ssm_groups = 1}},
    // Not a real model: small enough for tests, shaped like the others.
    {"tiny", "llama", 512, 256, 2, 768, 4, 2, 512, 10000.0f, 1e-5f, false, false, 0, "rill's test preset"},
    {"tiny-moe", "qwen3moe", 512, 256, 2, 256, 4, 2, 512, 1e6f, 1e-6f, false, false, 0, "rill's test preset",
     {.head_dim = 64, .n_expert = 8, .n_expert_used = 2, .n_ff_exp = 64}},
    {"tiny-gemma4", "gemma4", 512, 256, 6, 48, 4, 2, 512, 1e6f, 1e-6f, true, false, 0, "rill's test preset",
     {.head_dim = 64, .n_swa = 8, .rope_base_swa = 1e4f, .swa_period = 3, .head_dim_swa = 32, .n_head_kv_full = 1, .n_kv_shared = 3,
      .n_embd_per_layer = 32, .double_wide_shared = true, .rope_partial = 0.25f}},
    {"tiny-gemma4-moe", "gemma4", 512, 256, 6, 32, 4, 2, 512, 1e6f, 1e-6f, true, false, 0, "rill's test preset",
     {.head_dim = 48, .n_swa = 8, .rope_base_swa = 1e4f, .n_expert = 8, .n_expert_used = 2, .n_ff_exp = 16, .swa_period = 3,
      .head_dim_swa = 24, .n_head_kv_full = 1, .v_from_k_full = true, .rope_partial = 0.25f}},
    {"tiny-lfm2", "lfm2", 512, 256, 4, 48, 4, 2, 512, 1e6f, 1e-5f, true, false, 0, "rill's test preset",
     {.layer_kinds = "CCAC", .conv_kernel = 3}},
    {"tiny-lfm2moe", "lfm2moe", 512, 256, 4, 32, 8, 2, 512, 1e6f, 1e-5f, true, false, 0, "rill's test preset",
     {.n_expert = 8, .n_expert_used = 2, .n_ff_exp = 16, .layer_kinds = "CCCA", .conv_kernel = 3, .n_dense_lead = 2}},
    {"tiny-nemotron-h", "nemotron_h", 512, 256, 6, 96, 4, 2, 512, 1e4f, 1e-5f, false, false, 0, "rill's test preset",
     {.head_dim = 64, .ssm_state = 16, .layer_kinds = "M-M*M-", .conv_kernel = 4, .ssm_inner = 512, .ssm_heads = 8, .ssm_groups = 2}},
    {"tiny-nemotron-h-moe", "nemotron_h_moe", 512, 256, 6, 48, 4, 2, 512, 1e4f, 1e-5f, false, false, 0, "rill's test preset",
     {.head_dim = 64, .n_expert = 8, .n_expert_used = 2, .n_ff_exp = 48, .n_ff_shexp = 96, .ssm_state = 16, .layer_kinds = "MEM*ME",
      .conv_kernel = 4, .ssm_inner = 512, .ssm_heads = 8, .ssm_groups = 2, .routed_scale = 2.5f}},
    {"tiny-granite-h", "granitehybrid", 512, 256, 6, 64, 4, 2, 512, 1e4f, 1e-5f, true, false, 0, "rill's test preset",
     {.embedding_scale = 12.0f, .residual_scale = 0.22f, .attention_scale = 0.125f, .logit_scale = 6.0f, .n_expert = 8, .n_expert_used = 2,
      .n_ff_exp = 64, .n_ff_shexp = 128, .ssm_state = 16, .layer_kinds = "mmAmmA", .conv_kernel = 4, .ssm_inner = 512, .ssm_heads = 8,
      .ssm_groups = 1}},
    {"tiny-hybrid", "qwen35moe", 512, 256, 4, 0, 4, 2, 512, 1e7f, 1e-6f, false, false, 0, "rill's test preset",
     {.head_dim = 64, .n_rot = 16, .n_expert = 8, .n_expert_used = 2, .n_ff_exp = 64, .n_ff_shexp = 64, .ssm_conv_kernel = 4,
      .ssm_state = 32, .ssm_k_heads = 2, .ssm_v_heads = 4, .full_attention_interval = 4}},
};

bool recurrent_layer(const SynthPreset& p, int l) {
    const int every = p.family.full_attention_interval;
    return every > 0 && (l + 1) % every != 0;
}

// SplitMix64: a counter-based generator, so any row can be produced independently of the others
// (in parallel, in any order) and the same seed always gives the same bytes.
uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t name_hash(const std::string& s) {
    uint64_t h = 1469598103934665603ull;
    for (const char c : s) h = (h ^ uint8_t(c)) * 1099511628211ull;
    return h;
}

// Llama 3.1's rope scaling as per-frequency divisors (its published low/high frequency factors 1 and 4,
// original context 8192).
std::vector<float> llama3_rope_factors(const SynthPreset& p) {
    const int half = p.head_dim() / 2;
    const double low_wavelen = 8192.0 / 1.0, high_wavelen = 8192.0 / 4.0;
    std::vector<float> factors(static_cast<size_t>(half));
    for (int i = 0; i < half; ++i) {
        const double freq = std::pow(double(p.rope_base), -2.0 * i / p.head_dim());
        const double wavelen = 2 * M_PI / freq;
        if (wavelen < high_wavelen) factors[size_t(i)] = 1.0f;
        else if (wavelen > low_wavelen) factors[size_t(i)] = p.llama3_factor;
        else {
            const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
            factors[size_t(i)] = float(1.0 / ((1 - smooth) / p.llama3_factor + smooth));
        }
    }
    return factors;
}

void write_vocabulary(GgufWriter& out, const SynthOptions& o) {
    const SynthPreset& p = o.preset;
    if (!o.vocab_path.empty()) {
        const GgufFile vocab = GgufFile::open(o.vocab_path);
        const GgufValue* tokens = vocab.find("tokenizer.ggml.tokens");
        if (tokens == nullptr) throw Error(o.vocab_path + ": has no tokenizer (metadata 'tokenizer.ggml.tokens')");
        if (tokens->count != uint64_t(p.n_vocab))
            throw Error(o.vocab_path + ": its vocabulary has " + std::to_string(tokens->count) + " tokens but " + p.name +
                        " needs " + std::to_string(p.n_vocab));
        for (const auto& [key, value] : vocab.metadata())
            if (key.rfind("tokenizer.", 0) == 0) out.set_value(key, value);
        return;
    }
    // Placeholder SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then fillers.
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> kinds = {2, 3, 3};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        tokens.push_back(name);
        kinds.push_back(6);
    }
    while (int(tokens.size()) < p.n_vocab) {
        tokens.push_back("\xe2\x96\x81tok" + std::to_string(tokens.size()));
        kinds.push_back(1);
    }
    tokens.resize(size_t(p.n_vocab));
    kinds.resize(size_t(p.n_vocab));
    std::vector<float> scores(tokens.size());
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = -float(i);
    out.set_string("tokenizer.ggml.model", "llama");
    out.set_strings("tokenizer.ggml.tokens", tokens);
    out.set_f32s("tokenizer.ggml.scores", scores);
    out.set_i32s("tokenizer.ggml.token_type", kinds);
    out.set_u32("tokenizer.ggml.unknown_token_id", 0);
    out.set_u32("tokenizer.ggml.bos_token_id", 1);
    out.set_u32("tokenizer.ggml.eos_token_id", 2);
}

// The keys llama.cpp reads for the family's extra features, named as its converters write them.
void write_family_metadata(GgufWriter& out, const SynthPreset& p) {
    const std::string a = p.arch + ".";
    const SynthFamilyShape& f = p.family;
    if (f.n_swa > 0) {
        out.set_u32(a + "attention.sliding_window", uint32_t(f.n_swa));
        // gpt-oss's files have no base of their own for sliding layers (they take the global one).
        if (f.rope_base_swa > 0) out.set_f32(a + "rope.freq_base_swa", f.rope_base_swa);
    }
    if (f.rope_linear_factor > 0) {
        out.set_string(a + "rope.scaling.type", "linear");
        out.set_f32(a + "rope.scaling.factor", f.rope_linear_factor);
    }
    if (p.arch == "phi3") out.set_u32(a + "attention.sliding_window", f.longrope_orig_ctx > 0 ? 262144u : 0u);
    if (f.longrope_orig_ctx > 0) {
        // Phi-3's converter: attn_factor = sqrt(1 + ln(context / original) / ln(original)).
        const double ratio = double(p.n_ctx) / f.longrope_orig_ctx;
        out.set_u32(a + "rope.scaling.original_context_length", uint32_t(f.longrope_orig_ctx));
        out.set_f32(a + "rope.scaling.attn_factor", float(std::sqrt(1 + std::log(ratio) / std::log(double(f.longrope_orig_ctx)))));
    }
    if (f.n_expert > 0) {
        out.set_u32(a + "expert_count", uint32_t(f.n_expert));
        out.set_u32(a + "expert_used_count", uint32_t(f.n_expert_used));
        out.set_u32(a + "expert_feed_forward_length", uint32_t(f.n_ff_exp));
    }
    if (f.yarn_factor > 0) {
        out.set_string(a + "rope.scaling.type", "yarn");
        out.set_f32(a + "rope.scaling.factor", f.yarn_factor);
        out.set_u32(a + "rope.scaling.original_context_length", uint32_t(f.yarn_orig_ctx));
    }
    if (f.n_ff_shexp > 0) out.set_u32(a + "expert_shared_feed_forward_length", uint32_t(f.n_ff_shexp));
    if (f.ssm_state > 0 && f.full_attention_interval > 0) {  // Gated DeltaNet (Qwen3.5)
        out.set_u32(a + "ssm.conv_kernel", uint32_t(f.ssm_conv_kernel));
        out.set_u32(a + "ssm.state_size", uint32_t(f.ssm_state));
        out.set_u32(a + "ssm.group_count", uint32_t(f.ssm_k_heads));
        out.set_u32(a + "ssm.time_step_rank", uint32_t(f.ssm_v_heads));
        out.set_u32(a + "ssm.inner_size", uint32_t(f.ssm_v_heads * f.ssm_state));
        out.set_u32(a + "full_attention_interval", uint32_t(f.full_attention_interval));
        // The converter's text sections: every rotated pair takes the token's position.
        out.set_i32s(a + "rope.dimension_sections", {11, 11, 10, 0});
    }
    if (*f.layer_kinds) {  // LFM2, Nemotron-H: the layer kinds as per-layer head and FFN counts
        std::vector<int32_t> kv_heads, ff;
        for (int l = 0; l < p.n_layer; ++l) {
            kv_heads.push_back(p.n_head_kv_of(l));
            ff.push_back(p.n_ff_of(l));
        }
        out.set_i32s(a + "attention.head_count_kv", kv_heads);
        const auto has = [&](char kind) { return std::find(f.layer_kinds, f.layer_kinds + p.n_layer, kind) != f.layer_kinds + p.n_layer; };
        if (has('M') || has('m')) {
            if (has('M')) out.set_i32s(a + "feed_forward_length", ff);
            else out.set_u32(a + "feed_forward_length", uint32_t(p.n_ff));
            if (has('m')) out.set_bool(a + "rope.scaling.finetuned", false);  // Granite 4.0-H: no positions
            out.set_u32(a + "ssm.conv_kernel", uint32_t(f.conv_kernel));
            out.set_u32(a + "ssm.inner_size", uint32_t(f.ssm_inner));
            out.set_u32(a + "ssm.state_size", uint32_t(f.ssm_state));
            out.set_u32(a + "ssm.time_step_rank", uint32_t(f.ssm_heads));
            out.set_u32(a + "ssm.group_count", uint32_t(f.ssm_groups));
            out.set_f32(a + "attention.layer_norm_epsilon", p.rms_eps);  // llama.cpp's loader reads it (the MTP head's norm)
        } else {
            out.set_u32(a + "feed_forward_length", uint32_t(p.n_ff));
            out.set_u32(a + "shortconv.l_cache", uint32_t(f.conv_kernel));
        }
        if (f.n_dense_lead > 0) out.set_u32(a + "leading_dense_block_count", uint32_t(f.n_dense_lead));
        const Architecture& family = *find_architecture(p.arch);
        if (family.routed_weight_keys) {  // Nemotron-H-MoE's converter: no gating key, these instead
            out.set_u32(a + "expert_shared_count", 1);
            out.set_bool(a + "expert_weights_norm", true);
            out.set_f32(a + "expert_weights_scale", f.routed_scale);
            out.set_u32(a + "expert_group_count", 1);
        } else if (family.gating == Gating::SigmoidBiasedTopK) {
            out.set_u32(a + "expert_gating_func", 2);
        }
    }
    if (f.swa_period > 0) {  // Gemma 4
        std::vector<bool> pattern;
        std::vector<int32_t> kv_heads, ff;
        for (int l = 0; l < p.n_layer; ++l) {
            pattern.push_back(p.sliding(l));
            kv_heads.push_back(p.n_head_kv_of(l));
            ff.push_back(p.n_ff_of(l));
        }
        out.set_bools(a + "attention.sliding_window_pattern", pattern);
        // Arrays only where the layers differ, as the converter writes them.
        if (f.n_head_kv_full > 0) out.set_i32s(a + "attention.head_count_kv", kv_heads);
        else out.set_u32(a + "attention.head_count_kv", uint32_t(p.n_head_kv));
        if (f.double_wide_shared) out.set_i32s(a + "feed_forward_length", ff);
        else out.set_u32(a + "feed_forward_length", uint32_t(p.n_ff));
        out.set_u32(a + "attention.key_length_swa", uint32_t(f.head_dim_swa));
        out.set_u32(a + "attention.value_length_swa", uint32_t(f.head_dim_swa));
        out.set_u32(a + "rope.dimension_count_swa", uint32_t(f.head_dim_swa));
        out.set_u32(a + "attention.shared_kv_layers", uint32_t(f.n_kv_shared));
        out.set_u32(a + "embedding_length_per_layer_input", uint32_t(f.n_embd_per_layer));
        out.set_f32(a + "final_logit_softcapping", 30.0f);
    }
    if (f.logit_scale > 0) {
        out.set_f32(a + "logit_scale", f.logit_scale);
        out.set_f32(a + "embedding_scale", f.embedding_scale);
        out.set_f32(a + "residual_scale", f.residual_scale);
        out.set_f32(a + "attention.scale", f.attention_scale);
    }
}

// LongRoPE divisors: 1 for short contexts; for long ones rising from 1 to about 48 over the pairs,
// the range of Phi-4-mini's published long_factor (its exact 48 values are not reproduced here).
std::vector<float> longrope_factors(const SynthPreset& p, bool long_factors) {
    const int half = p.n_rot() / 2;
    std::vector<float> factors(size_t(half), 1.0f);
    if (long_factors)
        for (int i = 0; i < half; ++i) factors[size_t(i)] = float(1.0 + 47.0 * std::pow(double(i) / (half - 1), 2.0));
    return factors;
}

// Norm gains and Gemma 4's scales (the layer output's, the router input's, each expert's): near 1.
bool is_norm(const std::string& name) {
    return name.find("norm.weight") != std::string::npos || name.ends_with(".scale") || name.ends_with("layer_output_scale.weight");
}

// Gemma 4's proportional RoPE as the converter writes it: the first rope_partial of the full layers'
// pairs turn (divisor 1), the rest stand still (divisor 1e30).
std::vector<float> proportional_rope_factors(const SynthPreset& p) {
    const int half = p.n_rot() / 2, turning = int(std::lround(double(p.family.rope_partial) * half));
    std::vector<float> factors(size_t(half), 1e30f);
    std::fill_n(factors.begin(), turning, 1.0f);
    return factors;
}
bool is_bias(const std::string& name) { return name.find(".bias") != std::string::npos; }

}  // namespace

const std::vector<SynthPreset>& synth_presets() { return kPresets; }

std::optional<SynthPreset> find_preset(const std::string& name) {
    for (const SynthPreset& p : kPresets)
        if (p.name == name) return p;
    return std::nullopt;
}

Hparams preset_hparams(const SynthPreset& p) {
    Hparams hp;
    hp.arch = p.arch;
    hp.family = find_architecture(p.arch);
    hp.n_vocab = p.n_vocab;
    hp.n_embd = p.n_embd;
    hp.n_layer = p.n_layer;
    hp.n_ff = p.n_ff;
    hp.n_head = p.n_head;
    hp.n_head_kv = p.n_head_kv;
    hp.head_dim = p.head_dim();
    hp.n_rot = p.n_rot();
    hp.n_ctx_train = p.n_ctx;
    hp.rms_eps = p.rms_eps;
    hp.rope.freq_base = p.rope_base;
    hp.rope_style = hp.family->rope_style;
    hp.n_swa = p.family.n_swa;
    hp.n_expert = p.family.n_expert;
    hp.n_expert_used = p.family.n_expert_used;
    hp.n_ff_exp = p.family.n_ff_exp;
    hp.n_ff_shexp = p.family.n_ff_shexp;
    set_layer_pattern(hp, hp.family->default_swa_pattern);
    if (p.family.logit_scale > 0) {  // Granite's scales, as the file carries them
        hp.embedding_scale = p.family.embedding_scale;
        hp.residual_scale = p.family.residual_scale;
        hp.attention_scale = p.family.attention_scale;
        hp.logit_scale = p.family.logit_scale;
    }
    if (const int every = p.family.full_attention_interval; every > 0) {
        hp.ssm = {.conv_kernel = p.family.ssm_conv_kernel, .state_size = p.family.ssm_state, .n_k_heads = p.family.ssm_k_heads,
                  .n_v_heads = p.family.ssm_v_heads};
        set_recurrent_pattern(hp, every);
    }
    if (*p.family.layer_kinds) {  // LFM2's and Nemotron-H's layer kinds, as read_hparams reads them
        const Architecture& a = *hp.family;
        hp.layer_recurrent.assign(size_t(p.n_layer), 0);
        bool ff_differ = false;
        for (int l = 0; l < p.n_layer; ++l) {
            hp.layer_n_head_kv.push_back(p.n_head_kv_of(l));
            hp.layer_n_ff.push_back(p.n_ff_of(l));
            hp.layer_recurrent[size_t(l)] = p.kind(l) == 'M' || p.kind(l) == 'm' || p.kind(l) == 'C';
            ff_differ = ff_differ || hp.layer_n_ff.back() != hp.layer_n_ff.front();
        }
        if (!ff_differ) hp.layer_n_ff.clear();
        hp.ssm.conv_kernel = p.family.conv_kernel;
        if (a.mamba2)
            hp.ssm = {.conv_kernel = p.family.conv_kernel, .state_size = p.family.ssm_state, .n_k_heads = p.family.ssm_groups,
                      .n_v_heads = p.family.ssm_heads, .inner_size = p.family.ssm_inner};
        if (a.no_rope || a.rope_switch) hp.layer_rope.assign(size_t(p.n_layer), 0);
        hp.n_dense_lead = p.family.n_dense_lead;
        if (a.routed_weight_keys) hp.expert_weights_scale = p.family.routed_scale;
    }
    if (p.family.swa_period > 0) {  // Gemma 4's per-layer shapes, as read_hparams reads them from the file
        hp.attention_scale = hp.family->fixed_kq_scale;
        hp.final_logit_softcap = 30.0f;
        hp.n_embd_per_layer = p.family.n_embd_per_layer;
        hp.n_rot_swa = p.family.head_dim_swa;
        for (int l = 0; l < p.n_layer; ++l) {
            hp.layer_sliding[size_t(l)] = p.sliding(l);
            hp.layer_head_dim.push_back(p.head_dim_of(l));
            hp.layer_n_head_kv.push_back(p.n_head_kv_of(l));
            hp.layer_n_ff.push_back(p.n_ff_of(l));
            const int from = p.n_layer - p.family.n_kv_shared;
            hp.layer_kv_source.push_back(p.owns_kv(l) ? l : from - (p.sliding(l) ? 2 : 1));
        }
        hp.n_ff = *std::max_element(hp.layer_n_ff.begin(), hp.layer_n_ff.end());
        hp.n_head_kv = *std::max_element(hp.layer_n_head_kv.begin(), hp.layer_n_head_kv.end());
        // As the loader keeps them: a list only where the layers differ.
        if (!p.family.double_wide_shared) hp.layer_n_ff.clear();
        if (p.family.n_head_kv_full == 0) hp.layer_n_head_kv.clear();
        if (p.family.n_kv_shared == 0) hp.layer_kv_source.clear();
    }
    return hp;
}

std::vector<SynthTensor> synth_tensors(const SynthPreset& p) {
    const Architecture& a = *find_architecture(p.arch);
    const uint64_t e = uint64_t(p.n_embd), v = uint64_t(p.n_vocab);
    std::vector<SynthTensor> t = {{"token_embd.weight", {e, v}}, {std::string(a.output_norm) + ".weight", {e}}};
    if (!p.tied_output) t.push_back({"output.weight", {e, v}});
    if (p.llama3_factor > 0 || p.family.rope_partial > 0) t.push_back({"rope_freqs.weight", {uint64_t(p.n_rot() / 2)}});
    const uint64_t ple = uint64_t(p.family.n_embd_per_layer);
    if (ple > 0) {
        t.push_back({"per_layer_token_embd.weight", {ple * uint64_t(p.n_layer), v}});
        t.push_back({"per_layer_model_proj.weight", {e, ple * uint64_t(p.n_layer)}});
        t.push_back({"per_layer_proj_norm.weight", {ple}});
    }
    if (p.family.longrope_orig_ctx > 0) {
        t.push_back({"rope_factors_long.weight", {uint64_t(p.n_rot() / 2)}});
        t.push_back({"rope_factors_short.weight", {uint64_t(p.n_rot() / 2)}});
    }
    const bool per_head = a.qk_norm == QkNorm::PerHead;
    for (int l = 0; l < p.n_layer; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        const uint64_t f = uint64_t(p.n_ff_of(l)), d = uint64_t(p.head_dim_of(l));
        const uint64_t q = uint64_t(p.n_head) * d, kv = uint64_t(p.n_head_kv_of(l)) * d;
        const bool own_kv = p.owns_kv(l);
        if (a.pre_norms) t.push_back({b + "attn_norm.weight", {e}});
        const auto mamba2 = [&] {
            const SynthFamilyShape& s = p.family;
            const uint64_t inner = uint64_t(s.ssm_inner), heads = uint64_t(s.ssm_heads), groups = uint64_t(s.ssm_groups);
            const uint64_t conv = inner + 2 * groups * uint64_t(s.ssm_state);
            t.push_back({b + "ssm_in.weight", {e, inner + conv + heads}});
            t.push_back({b + "ssm_conv1d.weight", {uint64_t(s.conv_kernel), conv}});
            t.push_back({b + "ssm_conv1d.bias", {conv}});
            t.push_back({b + "ssm_dt.bias", {heads}});
            t.push_back({b + "ssm_a", {1, heads}});
            t.push_back({b + "ssm_d", {1, heads}});
            t.push_back({b + "ssm_norm.weight", {inner / groups, groups}});
            t.push_back({b + "ssm_out.weight", {inner, e}});
        };
        if (p.kind(l) == 'M') {  // Mamba-2 (Nemotron-H): the layer's only block
            mamba2();
            continue;
        }
        if (p.kind(l) == '-') {  // an MLP alone (Nemotron-H)
            t.push_back({b + "ffn_up.weight", {e, f}});
            t.push_back({b + "ffn_down.weight", {f, e}});
            continue;
        }
        if (p.kind(l) == 'E') {  // experts alone (Nemotron-H-MoE): ReLU², no gates, an ungated shared expert
            const uint64_t n = uint64_t(p.family.n_expert), fe = uint64_t(p.family.n_ff_exp), fs = uint64_t(p.family.n_ff_shexp);
            t.push_back({b + "ffn_gate_inp.weight", {e, n}});
            t.push_back({b + "exp_probs_b.bias", {n}});
            t.push_back({b + "ffn_down_exps.weight", {fe, e, n}});
            t.push_back({b + "ffn_up_exps.weight", {e, fe, n}});
            t.push_back({b + "ffn_down_shexp.weight", {fs, e}});
            t.push_back({b + "ffn_up_shexp.weight", {e, fs}});
            continue;
        }
        if (p.kind(l) == 'm') {  // Granite 4.0-H's Mamba-2, its FFN below
            mamba2();
        } else if (p.kind(l) == 'C') {  // LFM2's short convolution, its FFN below
            t.push_back({b + "shortconv.in_proj.weight", {e, 3 * e}});
            t.push_back({b + "shortconv.conv.weight", {uint64_t(p.family.conv_kernel), e}});
            t.push_back({b + "shortconv.out_proj.weight", {e, e}});
        } else if (recurrent_layer(p, l)) {
            const SynthFamilyShape& s = p.family;
            const uint64_t hv = uint64_t(s.ssm_v_heads), vd = hv * uint64_t(s.ssm_state);
            const uint64_t conv = 2 * uint64_t(s.ssm_k_heads) * uint64_t(s.ssm_state) + vd;
            t.push_back({b + "attn_qkv.weight", {e, conv}});
            t.push_back({b + "attn_gate.weight", {e, vd}});
            t.push_back({b + "ssm_conv1d.weight", {uint64_t(s.ssm_conv_kernel), conv}});
            t.push_back({b + "ssm_dt.bias", {hv}});
            t.push_back({b + "ssm_a", {hv}});
            t.push_back({b + "ssm_beta.weight", {e, hv}});
            t.push_back({b + "ssm_alpha.weight", {e, hv}});
            t.push_back({b + "ssm_norm.weight", {uint64_t(s.ssm_state)}});
            t.push_back({b + "ssm_out.weight", {vd, e}});
        } else if (a.attn_output_gate) {
            t.push_back({b + "attn_q.weight", {e, 2 * q}});
            t.push_back({b + "attn_k.weight", {e, kv}});
            t.push_back({b + "attn_v.weight", {e, kv}});
        } else if (a.fused_qkv) {
            t.push_back({b + "attn_qkv.weight", {e, q + 2 * kv}});
        } else {
            t.push_back({b + "attn_q.weight", {e, q}});
            if (p.qkv_bias) t.push_back({b + "attn_q.bias", {q}});
            // Gemma 4's KV-shared layers as QAT exports have them (no K, V); its full layers without V.
            if (own_kv) t.push_back({b + "attn_k.weight", {e, kv}});
            if (p.qkv_bias) t.push_back({b + "attn_k.bias", {kv}});
            if (own_kv && !(p.family.v_from_k_full && !p.sliding(l))) t.push_back({b + "attn_v.weight", {e, kv}});
            if (p.qkv_bias) t.push_back({b + "attn_v.bias", {kv}});
        }
        if (a.qk_norm != QkNorm::None && !recurrent_layer(p, l) && p.attention(l)) {
            t.push_back({b + "attn_q_norm.weight", {per_head ? d : q}});
            if (own_kv) t.push_back({b + "attn_k_norm.weight", {per_head ? d : kv}});
        }
        if (!recurrent_layer(p, l) && p.attention(l)) t.push_back({b + "attn_output.weight", {q, e}});
        if (p.kind(l) == '*') continue;  // Nemotron-H's attention: the layer's only block
        if (a.attn_out_bias) t.push_back({b + "attn_output.bias", {e}});
        if (a.sinks) t.push_back({b + "attn_sinks.weight", {uint64_t(p.n_head)}});
        if (a.post_norms) t.push_back({b + "post_attention_norm.weight", {e}});
        if (a.layer_output_scale) t.push_back({b + "layer_output_scale.weight", {1}});
        if (a.pre_norms) t.push_back({b + std::string(a.ffn_norm) + ".weight", {e}});
        if (a.dense_beside_experts) {  // Gemma 4: the dense FFN, its experts beside it, PLE
            t.push_back({b + "ffn_gate.weight", {e, f}});
            t.push_back({b + "ffn_up.weight", {e, f}});
            t.push_back({b + "ffn_down.weight", {f, e}});
            t.push_back({b + "post_ffw_norm.weight", {e}});
            if (p.family.n_expert > 0) {
                const uint64_t n = uint64_t(p.family.n_expert), fe = uint64_t(p.family.n_ff_exp);
                t.push_back({b + "ffn_gate_inp.weight", {e, n}});
                t.push_back({b + "ffn_gate_inp.scale", {e}});
                t.push_back({b + "pre_ffw_norm_2.weight", {e}});
                t.push_back({b + "post_ffw_norm_1.weight", {e}});
                t.push_back({b + "post_ffw_norm_2.weight", {e}});
                t.push_back({b + "ffn_gate_up_exps.weight", {e, 2 * fe, n}});
                t.push_back({b + "ffn_down_exps.weight", {fe, e, n}});
                t.push_back({b + "ffn_down_exps.scale", {n}});
            }
            if (ple > 0) {
                t.push_back({b + "inp_gate.weight", {e, ple}});
                t.push_back({b + "proj.weight", {ple, e}});
                t.push_back({b + "post_norm.weight", {e}});
            }
            continue;
        }
        if ((a.moe || p.family.n_expert > 0) && l >= p.family.n_dense_lead) {
            const uint64_t n = uint64_t(p.family.n_expert), fe = uint64_t(p.family.n_ff_exp);
            t.push_back({b + "ffn_gate_inp.weight", {e, n}});
            if (a.gating == Gating::SigmoidBiasedTopK) t.push_back({b + "exp_probs_b.bias", {n}});
            if (a.expert_biases) t.push_back({b + "ffn_gate_inp.bias", {n}});
            t.push_back({b + "ffn_gate_exps.weight", {e, fe, n}});
            t.push_back({b + "ffn_up_exps.weight", {e, fe, n}});
            t.push_back({b + "ffn_down_exps.weight", {fe, e, n}});
            if (a.expert_biases) {
                t.push_back({b + "ffn_gate_exps.bias", {fe, n}});
                t.push_back({b + "ffn_up_exps.bias", {fe, n}});
                t.push_back({b + "ffn_down_exps.bias", {e, n}});
            }
            if (p.family.n_ff_shexp > 0) {
                const uint64_t fs = uint64_t(p.family.n_ff_shexp);
                if (a.shared_expert) t.push_back({b + "ffn_gate_inp_shexp.weight", {e, 1}});
                t.push_back({b + "ffn_gate_shexp.weight", {e, fs}});
                t.push_back({b + "ffn_up_shexp.weight", {e, fs}});
                t.push_back({b + "ffn_down_shexp.weight", {fs, e}});
            }
            continue;
        }
        if (a.fused_gate_up) {
            t.push_back({b + "ffn_up.weight", {e, 2 * f}});
        } else {
            t.push_back({b + "ffn_gate.weight", {e, f}});
            t.push_back({b + "ffn_up.weight", {e, f}});
        }
        t.push_back({b + "ffn_down.weight", {f, e}});
        if (a.post_norms) t.push_back({b + "post_ffw_norm.weight", {e}});
    }
    return t;
}

uint64_t synth_parameter_count(const SynthPreset& p) {
    uint64_t n = 0;
    for (const SynthTensor& t : synth_tensors(p)) {
        if (t.name.rfind("rope_f", 0) == 0) continue;  // rope_freqs, rope_factors_*: constant tables, not parameters
        uint64_t k = 1;
        for (const uint64_t d : t.ne) k *= d;
        n += k;
    }
    return n;
}

uint64_t synth_weight_bytes(const SynthPreset& p, const QuantRecipe& recipe) {
    const auto tensors = synth_tensors(p);
    std::vector<std::string> names;
    for (const SynthTensor& t : tensors) names.push_back(t.name);
    QuantMix mix(recipe, false, p.n_head / p.n_head_kv, p.tied_output, names);
    uint64_t bytes = 0;
    for (const SynthTensor& t : tensors) {
        uint64_t rows = 1;
        for (size_t d = 1; d < t.ne.size(); ++d) rows *= t.ne[d];
        bytes += row_bytes(mix.choose(t.name, uint32_t(t.ne.size()), t.ne[0], TensorType::F32), t.ne[0]) * rows;
    }
    return bytes;
}

QuantizeSummary synthesize_model(const std::string& output_path, const SynthOptions& o) {
    const SynthPreset& p = o.preset;
    const int threads = o.n_threads > 0 ? o.n_threads : default_thread_count();
    const std::string a = p.arch + ".";
    const Architecture& family = *find_architecture(p.arch);
    GgufWriter out(output_path);
    out.set_string("general.architecture", p.arch);
    out.set_string("general.name", "rill synth " + p.name + " (random weights)");
    out.set_u32("general.file_type", o.recipe.file_type);
    out.set_u32(a + "context_length", uint32_t(p.n_ctx));
    out.set_u32(a + "embedding_length", uint32_t(p.n_embd));
    out.set_u32(a + "block_count", uint32_t(p.n_layer));
    // Qwen3.5-MoE's config has no dense width; Gemma 4's per-layer lists are write_family_metadata's.
    const bool layer_lists = p.family.swa_period > 0 || *p.family.layer_kinds;
    if (p.n_ff > 0 && !layer_lists) out.set_u32(a + "feed_forward_length", uint32_t(p.n_ff));
    out.set_u32(a + "attention.head_count", uint32_t(p.n_head));
    if (!layer_lists) out.set_u32(a + "attention.head_count_kv", uint32_t(p.n_head_kv));
    if (p.family.head_dim > 0) {
        out.set_u32(a + "attention.key_length", uint32_t(p.head_dim()));
        out.set_u32(a + "attention.value_length", uint32_t(p.head_dim()));
    }
    out.set_u32(a + "rope.dimension_count", uint32_t(p.n_rot()));
    out.set_f32(a + "rope.freq_base", p.rope_base);
    out.set_f32(a + "attention.layer_norm_rms_epsilon", p.rms_eps);
    out.set_u32(a + "vocab_size", uint32_t(p.n_vocab));
    write_family_metadata(out, p);
    write_vocabulary(out, o);

    const auto tensors = synth_tensors(p);
    std::vector<std::string> names;
    for (const SynthTensor& t : tensors) names.push_back(t.name);
    QuantMix mix(o.recipe, false, p.n_head / p.n_head_kv, p.tied_output, names);
    std::vector<TensorType> targets;
    QuantizeProgress progress;
    for (const SynthTensor& t : tensors) {
        targets.push_back(mix.choose(t.name, uint32_t(t.ne.size()), t.ne[0], TensorType::F32));
        out.add_tensor(t.name, targets.back(), t.ne);
        uint64_t n = 1;
        for (const uint64_t d : t.ne) n *= d;
        progress.bytes_total += n * 4;
    }
    progress.tensors_total = tensors.size();
    out.begin_data();

    QuantizeSummary summary;
    const std::vector<float> rope_factors = p.llama3_factor > 0         ? llama3_rope_factors(p)
                                            : p.family.rope_partial > 0 ? proportional_rope_factors(p)
                                                                        : std::vector<float>();
    for (size_t k = 0; k < tensors.size(); ++k) {
        const SynthTensor& t = tensors[k];
        const size_t n = size_t(t.ne[0]);
        size_t rows = 1;  // every dimension past the first: a 3-D expert tensor is n_expert matrices
        for (size_t d = 1; d < t.ne.size(); ++d) rows *= size_t(t.ne[d]);
        TypeError& stats = summary.per_type[std::string(traits(targets[k]).name)];
        ++stats.tensors;
        stats.elements += n * rows;
        stats.bytes += row_bytes(targets[k], n) * rows;
        // Matrices (embeddings included, as trained ones are) ~ uniform with standard deviation
        // 1/sqrt(row length), so logits stay of order one even when the output reuses token_embd;
        // norms near 1; biases small. Uniform: cheap and bounded.
        const uint64_t tensor_seed = mix64(o.seed ^ name_hash(t.name));
        float scale = is_norm(t.name) ? 0.1f : is_bias(t.name) ? 0.05f : 1.0f / std::sqrt(float(n));
        float offset = is_norm(t.name) ? 1.0f : 0.0f;
        // A family that does not scale its scores (Gemma 4) learns the scale in its q/k norm gains:
        // (1/√head_dim)^½ each keeps q·k of order one, as 1/√head_dim does elsewhere. Without it the
        // softmax of random heads is one-hot and the text chaotic: no two runtimes would agree.
        if (family.fixed_kq_scale > 0 && (t.name.ends_with("attn_q_norm.weight") || t.name.ends_with("attn_k_norm.weight"))) {
            const float m = std::pow(float(n), -0.25f);
            scale *= m;
            offset *= m;
        }
        const float half_width = scale * std::sqrt(3.0f);
        const RowSource source = [&](size_t row, float* dst) {
            if (t.name == "rope_freqs.weight") {
                std::copy(rope_factors.begin(), rope_factors.end(), dst);
                return;
            }
            if (t.name.rfind("rope_factors_", 0) == 0) {
                const auto factors = longrope_factors(p, t.name == "rope_factors_long.weight");
                std::copy(factors.begin(), factors.end(), dst);
                return;
            }
            const uint64_t row_seed = mix64(tensor_seed + row);
            if (t.name.ends_with(".ssm_a")) {  // −exp(A_log): decays e^g in (0, 1), |a| log-uniform in [0.02, 1]
                for (size_t i = 0; i < n; ++i)
                    dst[i] = -float(std::exp(std::log(0.02) * double(mix64(row_seed + i) >> 11) * 0x1.0p-53));
                return;
            }
            for (size_t i = 0; i < n; ++i) {
                const double u = double(mix64(row_seed + i) >> 11) * 0x1.0p-53;  // [0, 1)
                dst[i] = offset + float((2.0 * u - 1.0) * half_width);
            }
        };
        const uint64_t before = progress.bytes_done;
        write_quantized_rows(out, targets[k], n, rows, source, threads, o.cancel, stats, [&](size_t done) {
            progress.bytes_done = before + done * n * 4;
            if (o.on_progress) o.on_progress(progress);
        });
        ++progress.tensors_done;
        if (o.on_progress) o.on_progress(progress);
    }
    out.finish();
    summary.bytes_out = GgufFile::open(output_path).file_size();
    return summary;
}

}  // namespace rill
