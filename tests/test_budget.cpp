// The plan's arithmetic, checked against closed forms of the hyperparameters: what a decode step
// reads, the KV cache per token, a prompt's FLOPs, and predictions from a hand-made machine profile.
#include "catch.h"
#include <nlohmann/json.hpp>

#include "runtime/compute/recurrent_state.h"
#include "runtime/plan/budget.h"
#include "runtime/base/error.h"
#include "runtime/plan/plan.h"
#include "runtime/session/session.h"
#include "shared_data.h"

using namespace rill;

namespace {

std::unique_ptr<Model> golden(const std::string& type) {
    LoadOptions options;
    options.interleave = false;
    return load_model(test::shared_path("golden/synth-llama-A." + type + ".gguf"), options);
}

// Bytes per decode step of a dense llama-shaped model whose every matrix has `type` and vectors are
// F32, written out from the hyperparameters: per layer two norms and seven matrices, then the output
// norm, the output matrix (or, tied, the embedding table in full: the same size) and one embedding row.
// `norm_floats` per layer replaces the two norms where a family has other ones (q/k norms, post-norms);
// fused QKV and gate|up matrices hold the same rows as the separate ones.
uint64_t closed_form_bytes(int E, int L, int F, int Q, int KV, int V, TensorType type, int rope_freqs = 0,
                           bool biases = false, int64_t norm_floats = -1) {
    const auto m = [&](uint64_t rows, uint64_t cols) { return rows * row_bytes(type, cols); };
    const uint64_t norms = norm_floats < 0 ? 2 * uint64_t(E) : uint64_t(norm_floats);
    const uint64_t layer = 4 * norms + m(Q, E) + 2 * m(KV, E) + m(E, Q) + 2 * m(F, E) + m(E, F) +
                           (biases ? 4 * uint64_t(Q + 2 * KV) : 0);
    return uint64_t(L) * layer + 4 * uint64_t(E) + m(V, E) + row_bytes(type, E) + 4 * uint64_t(rope_freqs);
}

}  // namespace

TEST_CASE("a decode step of a golden model reads every tensor once and one row of the embedding table", "[budget]") {
    // synth-llama-A: n_embd 256, 2 layers, 4 heads of 64 (2 KV heads), n_ff 768, vocab 512, own output.
    for (const auto& [name, type] : {std::pair{"F32", TensorType::F32}, {"F16", TensorType::F16},
                                     {"Q8_0", TensorType::Q8_0}, {"Q4_0", TensorType::Q4_0}, {"Q6_K", TensorType::Q6_K}}) {
        INFO(name);
        const auto model = golden(name);
        const ModelShape shape = shape_of(*model);
        CHECK_FALSE(shape.tied_output);
        CHECK(decode_bytes_per_token(shape, 0, KvType::F16).weight_bytes ==
              closed_form_bytes(256, 2, 768, 256, 128, 512, type));
    }
}

TEST_CASE("the KV cache holds a key and a value row per layer for every position", "[budget]") {
    const ModelShape shape = shape_of(*golden("Q8_0"));
    CHECK(kv_bytes_per_token(shape.hp, KvType::F16) == 2 * 2 * 128 * 2);
    CHECK(kv_bytes_per_token(shape.hp, KvType::F32) == 2 * 2 * 128 * 4);
    CHECK(decode_bytes_per_token(shape, 100, KvType::F16).kv_bytes == 100u * 1024u);
    CHECK(decode_bytes_per_token(shape, 0, KvType::F16).kv_bytes == 0);
}

TEST_CASE("every synth preset's F16 budget matches the closed form of its hyperparameters", "[budget]") {
    for (const SynthPreset& p : synth_presets()) {
        INFO(p.name);
        if (p.family.n_expert > 0) continue;  // mixtures of experts: the next test
        if (p.family.full_attention_interval > 0) continue;  // hybrids: their own test
        if (p.family.swa_period > 0) continue;  // Gemma 4's per-layer shapes: their own test
        if (*p.family.layer_kinds) continue;    // LFM2's and Nemotron-H's layer kinds: their own test
        const ModelShape shape = shape_of_preset(p, *find_recipe("F16"));
        const int q = p.n_head * p.head_dim(), kv = p.n_head_kv * p.head_dim(), d = p.head_dim(), e = p.n_embd;
        // Per layer: attn and ffn norms; qwen3 adds per-head q/k norms, gemma3 those and two post-norms,
        // olmo2 replaces its pre-norms by post-norms and q/k norms over the projections.
        const int64_t norms = p.arch == "qwen3" ? 2 * e + 2 * d : p.arch == "gemma3" ? 4 * e + 2 * d : p.arch == "olmo2" ? 2 * e + q + kv : -1;
        const int rope_tables = p.llama3_factor > 0 ? p.n_rot() / 2 : p.family.longrope_orig_ctx > 0 ? p.n_rot() : 0;
        const uint64_t expected = closed_form_bytes(p.n_embd, p.n_layer, p.n_ff, q, kv, p.n_vocab, TensorType::F16, rope_tables,
                                                    p.qkv_bias, norms);
        CHECK(decode_bytes_per_token(shape, 0, KvType::F16).weight_bytes == expected);
        CHECK(kv_bytes_per_token(shape.hp, KvType::F16) == uint64_t(2) * p.n_layer * kv * 2);
        // The file holds the embedding table once more than a step reads it, unless the output is tied.
        const uint64_t table = uint64_t(p.n_vocab) * row_bytes(TensorType::F16, p.n_embd);
        CHECK(shape.weight_bytes() == expected - row_bytes(TensorType::F16, p.n_embd) + (p.tied_output ? 0 : table));
    }
}

TEST_CASE("a hybrid's KV cache counts its attention layers only and its recurrent state is the same at every position", "[budget]") {
    const ModelShape shape = shape_of_preset(*find_preset("qwen3.5-0.8b"), *find_recipe("F16"));
    const Hparams& hp = shape.hp;
    CHECK(hp.n_recurrent() == 18);
    // 6 attention layers × keys and values × 2 KV heads of 256 × 2 bytes.
    CHECK(kv_bytes_per_token(hp, KvType::F16) == 6 * 2 * 2 * 256 * 2);
    // 18 layers × (a window of 3 × 6144 channels + 16 value heads of 128 × 128), F32.
    CHECK(recurrent_state_bytes(hp) == uint64_t(18) * (3 * 6144 + 16 * 128 * 128) * 4);
    CHECK(decode_bytes_per_token(shape, 0, KvType::F16).state_bytes == 2 * recurrent_state_bytes(hp));
    CHECK(decode_bytes_per_token(shape, 1000, KvType::F16).kv_bytes == 1000 * kv_bytes_per_token(hp, KvType::F16));
    CHECK(memory_needs(shape, 4096, 512, 2, KvType::F16).recurrent_state == recurrent_state_bytes(hp));
    // Qwen3.5-0.8B's text model, without its vision tower and MTP block: about 0.75B parameters.
    CHECK(shape.n_params() == Approx(0.752e9).epsilon(0.01));
}

TEST_CASE("Gemma 4's KV cache counts the layers that own one, at each layer's width, and its PLE table a row per token", "[budget]") {
    const ModelShape shape = shape_of_preset(*find_preset("gemma-4-e2b"), *find_recipe("F16"));
    const Hparams& hp = shape.hp;
    // 15 of 35 layers own a cache: 12 sliding with 1 KV head of 256, 3 full with 1 of 512; keys and values, 2 bytes.
    CHECK(kv_bytes_per_token(hp, KvType::F16) == 12 * 2 * 256 * 2 + 3 * 2 * 512 * 2);
    // At 4096 positions in chunks of 512 a sliding layer keeps its window (512) and a chunk.
    CHECK(kv_cache_bytes(hp, 4096, 512, KvType::F16) == uint64_t(12) * 1024 * 1024 + uint64_t(3) * 4096 * 2048);
    const TensorShape& table = *shape.find("per_layer_token_embd.weight");
    CHECK(table.rows == 262144);
    CHECK(table.row_length == 35 * 256);
    const MemoryNeeds needs = memory_needs(shape, 4096, 512, 2, KvType::F16);
    CHECK(needs.mapped_tables == table.bytes);
    CHECK(needs.weights == shape.weight_bytes() - table.bytes);
    // A step reads one row of it, as of the token table.
    const uint64_t without_table = decode_bytes_per_token(shape, 0, KvType::F16).weight_bytes - table.bytes / table.rows;
    uint64_t others = 0;
    for (const TensorShape& t : shape.tensors)
        if (!t.row_per_token() && t.name != "token_embd.weight") others += t.bytes;
    const TensorShape& embd = *shape.find("token_embd.weight");
    CHECK(without_table == others + embd.bytes + embd.bytes / embd.rows);  // tied: the output reads the whole table
    // Gemma 4 E2B: 2.3B "effective" parameters, the PLE table aside (Google's model card; its 5.1B
    // with embeddings count the vision and audio encoders too, which a text GGUF does not carry).
    CHECK(shape.n_params() - table.rows * table.row_length == Approx(2.3e9).epsilon(0.02));
}

TEST_CASE("a short-convolution or Mamba-2 hybrid's KV cache counts its attention layers only, its state its recurrent ones", "[budget]") {
    // tiny-nemotron-h: M - M * M - : one attention layer of 2 KV heads of 64; three Mamba-2 layers, each a
    // window of 3 rows of x | B | C (512 + 2·2·16) and 512 channels of state 16, F32.
    const Hparams nemotron = shape_of_preset(*find_preset("tiny-nemotron-h"), *find_recipe("F16")).hp;
    CHECK(kv_bytes_per_token(nemotron, KvType::F16) == 2 * 2 * 64 * 2);
    CHECK(recurrent_state_bytes(nemotron) == uint64_t(3) * (3 * 576 + 512 * 16) * 4);
    // tiny-lfm2: C C A C: one attention layer of 2 KV heads of 64; three convolutions with windows of 2 rows of 256.
    const Hparams lfm2 = shape_of_preset(*find_preset("tiny-lfm2"), *find_recipe("F16")).hp;
    CHECK(kv_bytes_per_token(lfm2, KvType::F16) == 2 * 2 * 64 * 2);
    CHECK(recurrent_state_bytes(lfm2) == uint64_t(3) * 2 * 256 * 4);
}

TEST_CASE("known models' KV cache per token: TinyLlama 22 KiB, Llama 2 7B 512 KiB, Llama 3.1 8B 128 KiB", "[budget]") {
    const auto kv = [](const char* name) { return kv_bytes_per_token(shape_of_preset(*find_preset(name), *find_recipe("Q4_0")).hp, KvType::F16); };
    CHECK(kv("tinyllama-1.1b") == 22528);
    CHECK(kv("llama-2-7b") == 524288);
    CHECK(kv("llama-3.1-8b") == 131072);
}

TEST_CASE("a mixture of experts' decode step reads everything dense and the chosen share of its experts", "[budget][moe]") {
    const SynthPreset p = *find_preset("qwen3-30b-a3b");
    const ModelShape shape = shape_of_preset(p, *find_recipe("F16"));
    const uint64_t e = 2048, fe = 768, n = 128;
    const uint64_t experts = uint64_t(p.n_layer) * 3 * n * fe * row_bytes(TensorType::F16, e) / e * e;  // 3 matrices each
    CHECK(expected_expert_bytes(shape) == experts * 8 / 128);
    uint64_t dense = 0;
    for (const TensorShape& t : shape.tensors)
        if (t.name.find("_exps.") == std::string::npos) dense += t.bytes;
    const uint64_t table = uint64_t(p.n_vocab) * row_bytes(TensorType::F16, p.n_embd);
    CHECK(decode_bytes_per_token(shape, 0, KvType::F16).weight_bytes == dense - table + table / uint64_t(p.n_vocab) + experts / 16);
    // Qwen3-30B-A3B: about 30.5B parameters, 3.3B of them used per token.
    CHECK(shape.n_params() == Approx(30.5e9).epsilon(0.01));
    CHECK(shape.n_active_params() == Approx(3.3e9).epsilon(0.03));
}

TEST_CASE("a sliding-window model's KV cache and decode reads count each local layer's window only", "[budget][swa]") {
    const ModelShape shape = shape_of_preset(*find_preset("gemma-3-4b"), *find_recipe("Q4_K_M"));
    const Hparams& hp = shape.hp;
    int local = 0;
    for (int l = 0; l < hp.n_layer; ++l) local += hp.sliding(l);
    CHECK(local == 29);  // 34 layers, every sixth global
    const uint64_t row = uint64_t(2) * 4 * 256 * 2;  // keys and values of one position, one layer, F16
    // 8,192 tokens: the global layers keep all of them, the local ones their window of 1024 plus a chunk.
    CHECK(kv_cache_bytes(hp, 8192, 512, KvType::F16) == row * (5 * 8192 + 29 * (1024 + 512)));
    CHECK(memory_needs(shape, 8192, 512, 2, KvType::F16).kv_cache == kv_cache_bytes(hp, 8192, 512, KvType::F16));
    CHECK(decode_bytes_per_token(shape, 4000, KvType::F16).kv_bytes == row * (5 * 4000 + 29 * 1024));
    CHECK(decode_bytes_per_token(shape, 100, KvType::F16).kv_bytes == row * 34 * 100);
}

TEST_CASE("a sliding-window model's prompt FLOPs count each local layer's window only", "[budget][swa]") {
    const ModelShape shape = shape_of_preset(*find_preset("gemma-3-1b"), *find_recipe("Q8_0"));
    ModelShape full = shape;
    full.hp.layer_sliding.assign(size_t(full.hp.n_layer), 0);
    const double n = 2048, w = 512, per_pair = 4.0 * 256 * 4;  // head size 256, 4 query heads
    const double saved = 22 * per_pair * ((n * (n + 1) / 2) - (w * (w + 1) / 2 + (n - w) * w));  // 22 local layers
    CHECK(prompt_flops(full, 2048) - prompt_flops(shape, 2048) == Approx(saved).epsilon(1e-12));
}

TEST_CASE("a preset's size in a quantization mix is what rill synth writes", "[budget]") {
    for (const char* name : {"llama-3.1-8b", "gemma-3-4b", "phi-4-mini", "olmo-2-1b"})
        for (const char* type : {"Q4_0", "Q8_0", "Q4_K_M", "Q2_K"}) {
            INFO(name << " " << type);
            const SynthPreset p = *find_preset(name);
            CHECK(shape_of_preset(p, *find_recipe(type)).weight_bytes() == synth_weight_bytes(p, *find_recipe(type)));
        }
}

TEST_CASE("a prompt's FLOPs are two per weight per token plus attention and one row of logits", "[budget]") {
    const ModelShape shape = shape_of(*golden("F32"));
    const double per_token = 2.0 * 2 * (256.0 * 256 + 2 * 256.0 * 128 + 256.0 * 256 + 3 * 256.0 * 768);
    const double n = 24, attention = 4.0 * 64 * 4 * 2 * (n * (n + 1) / 2);
    CHECK(prompt_flops(shape, 24) == Approx(per_token * n + attention + 2.0 * 512 * 256).epsilon(1e-12));
}

TEST_CASE("memory needs are the weights, the KV cache at the context, and bounded scratch", "[budget]") {
    const auto model = golden("Q4_0");
    const ModelShape shape = shape_of(*model);
    const MemoryNeeds needs = memory_needs(shape, 256, 512, 2, KvType::F16);
    CHECK(needs.weights == model->weight_bytes());
    CHECK(needs.kv_cache == 256u * 1024u);
    CHECK(needs.scratch > batch_activation_bytes(shape.hp, 256));
    CHECK(needs.scratch < (uint64_t(16) << 20));
}

namespace {

// Two thread counts; every type streams at 10 GB/s on one thread, 16 on two, and a mixture's experts
// at 8 / 12.8; GEMM 100 / 180 GFLOP/s; decode attention 10 ns per head and position; prompt attention
// 50 / 90 GFLOP/s.
MachineProfile hand_profile() {
    MachineProfile p;
    p.thread_counts = {1, 2};
    p.read_gbps = {12, 20};
    p.peak_gflops = {110, 200};
    for (int d = 0; d < 2; ++d) {
        p.decode_attention_ns[d] = {10, 10};
        p.prompt_attention_gflops[d] = {50, 90};
    }
    p.decode_call_us = {0, 0};
    for (const TensorTypeTraits& t : all_tensor_types()) p.types.push_back({t.type, {10, 16}, {100, 180}, {100, 180}, {8, 12.8}});
    return p;
}

}  // namespace

TEST_CASE("predicted decode time is each matrix at its kernel's rate, the rest at the read bandwidth, and attention's cost", "[plan]") {
    const ModelShape shape = shape_of(*golden("Q8_0"));
    const MachineProfile profile = hand_profile();
    uint64_t matrices = 0;
    for (const TensorShape& t : shape.tensors)
        if (t.is_matrix() && t.name != "token_embd.weight") matrices += t.bytes;
    const DecodeBudget budget = decode_bytes_per_token(shape, 10, KvType::F16);
    const DecodeEstimate e = predict_decode(shape, profile, 2, 10, KvType::F16);
    // Attention: 2 layers × 4 heads × 11 positions × 10 ns = 0.88 µs, more than reading the 10 KiB of
    // keys and values at 20 GB/s (0.51 µs), so its compute counts.
    const double attention = 2 * 4 * 11 * 10e-9;
    REQUIRE(attention > double(budget.kv_bytes) / 20e9);
    CHECK(e.seconds == Approx(double(matrices) / 16e9 + double(budget.weight_bytes - matrices) / 20e9 + attention).epsilon(1e-12));
    CHECK(e.attention_seconds == Approx(attention).epsilon(1e-12));
    CHECK(e.ceiling_tps == Approx(20e9 / double(budget.total())).epsilon(1e-12));
    CHECK(e.bandwidth_bound);  // 16 of 20 GB/s
    CHECK(best_decode(shape, profile, 10).n_threads == 2);
}

TEST_CASE("a mixture's experts are predicted at the streaming rate plus each chosen expert's measured start-up", "[plan][moe]") {
    const ModelShape shape = shape_of_preset(*find_preset("qwen3-30b-a3b"), *find_recipe("F16"));
    const MachineProfile profile = hand_profile();
    const DecodeEstimate e = predict_decode(shape, profile, 2, 0, KvType::F16);
    // The measured expert step streams at 12.8 GB/s against 16 for a large matrix: per chosen expert
    // matrix, bytes/12.8 - bytes/16 longer than streaming its bytes.
    const uint64_t expert_matrix = row_bytes(TensorType::F16, kExpertCols) * kExpertRows;
    const double start_up = double(expert_matrix) / 12.8e9 - double(expert_matrix) / 16e9;
    // Against a machine whose expert step streams as fast as a large matrix: 48 layers × 3 matrices ×
    // 8 chosen experts, each start_up longer.
    MachineProfile even = profile;
    for (TypeRates& r : even.types) r.expert_gemv_gbps = r.gemv_gbps;
    const DecodeEstimate f = predict_decode(shape, even, 2, 0, KvType::F16);
    CHECK(e.seconds - f.seconds == Approx(3.0 * 48 * 8 * start_up).epsilon(1e-9));
}

TEST_CASE("predicted prompt time is its matrix FLOPs at the GEMM rate, attention at its own, and one pass over the output", "[plan]") {
    const ModelShape shape = shape_of(*golden("F16"));
    const MachineProfile profile = hand_profile();
    const double block_flops = 2.0 * 2 * (256.0 * 256 + 2 * 256.0 * 128 + 256.0 * 256 + 3 * 256.0 * 768) * 64;
    const double attention = 4.0 * 64 * 4 * 2 * (64.0 * 65 / 2);
    const double output = double(shape.find("output.weight")->bytes);
    const PrefillEstimate e = predict_prefill(shape, profile, 1, 64, 512);
    CHECK(e.seconds == Approx(block_flops / 100e9 + attention / 50e9 + output / 10e9).epsilon(1e-12));
}

TEST_CASE("between measured thread counts the profile interpolates linearly", "[plan]") {
    MachineProfile p = hand_profile();
    p.thread_counts = {1, 4};
    CHECK(p.read_bandwidth(2) == Approx(12 + (20 - 12) / 3.0));
    CHECK(p.read_bandwidth(8) == 20);
    CHECK(p.gemv_gbps(TensorType::Q4_0, 1) == 10);
}

TEST_CASE("a machine profile survives a round trip through JSON", "[plan]") {
    MachineProfile p = hand_profile();
    p.cpu = "test CPU";
    p.caches = {{3, "Unified", 32u << 20, 8}};
    const MachineProfile back = profile_from_json(to_json(p));
    CHECK(back.cpu == "test CPU");
    CHECK(back.last_level_cache_bytes() == 32u << 20);
    CHECK(back.gemm_gflops(TensorType::Q6_K, 2) == 180);
}

TEST_CASE("a damaged machine profile is rejected with the field named", "[plan]") {
    nlohmann::json j = to_json(hand_profile());
    j["read_gbps"] = nlohmann::json::array({1.0});
    CHECK_THROWS_WITH(profile_from_json(j), rill::test::contains("read_gbps"));
    j.erase("read_gbps");
    CHECK_THROWS_WITH(profile_from_json(j), rill::test::contains("'read_gbps'"));
    CHECK_THROWS_AS(profile_from_json(nlohmann::json::array()), Error);
}
