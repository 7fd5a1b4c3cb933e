// Mamba-2 (Nemotron-H's layers) against llama.cpp on rill's tiny-nemotron-h: M - M * M - (Mamba-2, an
// MLP alone, attention without positions), F32, seed 1, synthesized here byte for byte as
// bench/mamba2_vs_llamacpp.mjs wrote it when it took llama.cpp's log-probs into
// tests/data/tiny-nemotron-h.llamacpp.json. Breaking any Mamba-2 feature in the file moves llama.cpp's
// log-probs by 0.69 (the grouped norm's gains) to 4.6 (the taps' order), and the two runtimes compute
// in float32 with no tables or rounded activations: 1e-3 tells every one of them apart.
#include "catch.h"
#include "kernel_paths.h"

#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "arch_case.h"
#include "gguf_builder.h"
#include "greedy.h"
#include "numeric.h"
#include "quant/fp16.h"
#include "runtime/compute/recurrent_state.h"
#include "runtime/make/quant_mix.h"
#include "runtime/make/synth.h"
#include "runtime/session/session.h"
#include "runtime/base/error.h"
#include "shared_data.h"
#include "temp_file.h"

using namespace rill;

namespace {

struct NemotronCase {
    nlohmann::json data;
    std::unique_ptr<Model> model;
    std::vector<int32_t> prompt() const { return data["prompt_tokens"].get<std::vector<int32_t>>(); }
};

// The file is made once per test run (a few milliseconds) and read back as any file is.
NemotronCase make_case(const std::string& preset) {
    const std::string path = test::temp_file(preset + ".gguf");
    synthesize_model(path, SynthOptions{.preset = *find_preset(preset), .recipe = *find_recipe("F32"), .seed = 1, .n_threads = 1});
    NemotronCase made{nlohmann::json::parse(test::read_text(std::string(RILL_TEST_DATA_DIR) + "/" + preset + ".llamacpp.json")),
                      load_model(path)};
    std::filesystem::remove(path);
    return made;
}

const NemotronCase& nemotron() {
    static const NemotronCase c = make_case("tiny-nemotron-h");
    return c;
}

// tiny-nemotron-h-moe: M E M * M E, its expert layers 8 ReLU² experts (2 chosen) and a shared one.
// Breaking the experts moves llama.cpp's log-probs by 0.34 (the selection bias) to 3.0 (the shared
// expert, the routed scale), the Mamba-2 layers by 0.81 to 4.9 (bench/mamba2_vs_llamacpp.mjs).
const NemotronCase& nemotron_moe() {
    static const NemotronCase c = make_case("tiny-nemotron-h-moe");
    return c;
}

using test::exact_options;

using test::bits_differing;
using test::max_abs_difference;
const auto copy = test::copy_of;

}  // namespace

TEST_CASE("Nemotron-H's layer kinds come from its per-layer head and FFN counts", "[mamba2]") {
    const Hparams& hp = nemotron().model->hp;
    CHECK(std::vector<uint8_t>(hp.layer_recurrent) == std::vector<uint8_t>{1, 0, 1, 0, 1, 0});
    CHECK(hp.has_attention(3));
    CHECK_FALSE(hp.has_ffn(3));
    CHECK_FALSE(hp.has_mixer(1));
    CHECK(hp.has_ffn(1));
    CHECK_FALSE(hp.uses_rope(3));
    CHECK(hp.ssm.inner_size == 512);
}

TEST_CASE("Mamba-2's log-probs after the prompt are within 1e-3 of llama.cpp's on every kernel path", "[mamba2]") {
    const NemotronCase& c = nemotron();
    for (const simd::KernelPath path : test::kernel_paths()) {
        Session session(*c.model, exact_options(2, 512, path));
        const double distance =
            test::max_logprob_distance(session.eval(c.prompt()), c.data["llamacpp_logprobs_last"].get<std::vector<double>>());
        INFO(simd::kernel_path_name(path) << ": " << distance);
        CHECK(distance < 1e-3);
    }
}

TEST_CASE("Mamba-2's 16 greedy tokens equal llama.cpp's", "[mamba2]") {
    const NemotronCase& c = nemotron();
    const auto theirs = c.data["llamacpp_greedy"].get<std::vector<int32_t>>();
    Session session(*c.model, exact_options());
    CHECK(test::greedy(session, c.prompt(), int(theirs.size())) == theirs);
}

TEST_CASE("Mamba-2's logits are bit-identical with 1 and 2 threads on every kernel path", "[mamba2][threads]") {
    const NemotronCase& c = nemotron();
    for (const simd::KernelPath path : test::kernel_paths()) {
        INFO(simd::kernel_path_name(path));
        Session one(*c.model, SessionOptions{.n_threads = 1, .kernels = path});
        Session two(*c.model, SessionOptions{.n_threads = 2, .kernels = path});
        const auto a = copy(one.eval(c.prompt(), true));
        CHECK(bits_differing(a, two.eval(c.prompt(), true)) == 0);
    }
}

// The scan is the same recurrence token by token as over a prompt: a prompt in pieces of any size,
// token by token included, ends bit for bit where one batch does.
TEST_CASE("Mamba-2's prompt evaluated in pieces of any size ends where one batch does", "[mamba2]") {
    const NemotronCase& c = nemotron();
    const auto prompt = c.prompt();
    Session whole(*c.model, exact_options(1, 4));
    const auto expected = copy(whole.eval(prompt));
    for (const size_t piece : {size_t(1), size_t(3)}) {
        Session pieces(*c.model, exact_options(1, 4));
        std::span<const float> last;
        for (size_t at = 0; at < prompt.size(); at += piece)
            last = pieces.eval(std::span(prompt).subspan(at, std::min(piece, prompt.size() - at)));
        INFO("pieces of " << piece);
        CHECK(bits_differing(last, expected) == 0);
    }
}

TEST_CASE("Mamba-2's layers keep no KV cache and their state is sized from the description", "[mamba2]") {
    const NemotronCase& c = nemotron();
    Session session(*c.model, SessionOptions{.n_ctx = 512, .n_threads = 1});
    CHECK(session.kv_cache().capacity == std::vector<int>{0, 0, 0, 512, 0, 0});
    // 3 layers × (a window of 3 rows of x | B | C, 512 + 2·2·16, and 512 channels of a 16-wide state), F32.
    CHECK(session.recurrent_state().bytes() == uint64_t(3) * (3 * 576 + 512 * 16) * 4);
}

TEST_CASE("Mamba-2's saved state continues in another session exactly as without the interruption", "[mamba2][state]") {
    const NemotronCase& c = nemotron();
    Session a(*c.model, exact_options(1, 8));
    a.eval(c.prompt());
    const auto state = a.save_state();
    Session b(*c.model, exact_options(1, 8));
    b.load_state(state);
    const int32_t next = 7;
    const auto expected = copy(a.eval(std::span(&next, 1)));
    CHECK(bits_differing(b.eval(std::span(&next, 1)), expected) == 0);
}

TEST_CASE("cutting a Mamba-2 model back returns to the checkpoint and goes on exactly", "[mamba2][state]") {
    const NemotronCase& c = nemotron();
    const auto prompt = c.prompt();
    Session s(*c.model, exact_options(1, 8));
    s.eval(std::span(prompt).first(20));
    s.checkpoint();
    s.eval(std::span(prompt).subspan(20));
    CHECK(s.truncate(20) == 20);
    const auto again = copy(s.eval(std::span(prompt).subspan(20)));
    Session fresh(*c.model, exact_options(1, 8));
    fresh.eval(std::span(prompt).first(20));
    CHECK(bits_differing(again, fresh.eval(std::span(prompt).subspan(20))) == 0);
}

TEST_CASE("Nemotron-H-MoE's expert layers are those with an FFN width, the rest Mamba-2 or attention", "[mamba2][moe]") {
    const Hparams& hp = nemotron_moe().model->hp;
    CHECK(std::vector<uint8_t>(hp.layer_recurrent) == std::vector<uint8_t>{1, 0, 1, 0, 1, 0});
    for (const int l : {1, 5}) {
        CHECK(hp.experts(l));
        CHECK_FALSE(hp.has_mixer(l));
    }
    for (const int l : {0, 2, 3, 4}) CHECK_FALSE(hp.has_ffn(l));
    CHECK(hp.expert_weights_norm);
    CHECK(hp.expert_weights_scale == 2.5f);
    CHECK(nemotron_moe().model->layers[1].gate_exps.empty());  // ReLU² experts have no gate
}

TEST_CASE("Nemotron-H-MoE's log-probs after the prompt are within 1e-3 of llama.cpp's on every kernel path", "[mamba2][moe]") {
    const NemotronCase& c = nemotron_moe();
    for (const simd::KernelPath path : test::kernel_paths()) {
        Session session(*c.model, exact_options(2, 512, path));
        const double distance =
            test::max_logprob_distance(session.eval(c.prompt()), c.data["llamacpp_logprobs_last"].get<std::vector<double>>());
        INFO(simd::kernel_path_name(path) << ": " << distance);
        CHECK(distance < 1e-3);
    }
}

TEST_CASE("Nemotron-H-MoE's 16 greedy tokens equal llama.cpp's, and 1 and 2 threads agree bit for bit", "[mamba2][moe][threads]") {
    const NemotronCase& c = nemotron_moe();
    const auto theirs = c.data["llamacpp_greedy"].get<std::vector<int32_t>>();
    Session session(*c.model, exact_options());
    CHECK(test::greedy(session, c.prompt(), int(theirs.size())) == theirs);
    Session one(*c.model, SessionOptions{.n_threads = 1});
    Session two(*c.model, SessionOptions{.n_threads = 2});
    const auto a = copy(one.eval(c.prompt(), true));
    CHECK(bits_differing(a, two.eval(c.prompt(), true)) == 0);
}

namespace {

// The metadata of a 3-layer Nemotron-H-MoE (Mamba-2, attention, experts) up to its experts' keys:
// enough for the loader to reach them.
test::GgufBuilder nemotron_moe_metadata() {
    test::GgufBuilder b;
    const std::string a = "nemotron_h_moe.";
    b.kv_string("general.architecture", "nemotron_h_moe");
    b.kv_u32(a + "embedding_length", 8).kv_u32(a + "block_count", 3).kv_u32(a + "context_length", 16);
    b.kv_i32_array(a + "feed_forward_length", {0, 0, 4}).kv_u32(a + "attention.head_count", 2);
    b.kv_i32_array(a + "attention.head_count_kv", {0, 2, 0});
    b.kv_u32(a + "ssm.conv_kernel", 4).kv_u32(a + "ssm.inner_size", 8).kv_u32(a + "ssm.state_size", 2);
    b.kv_u32(a + "ssm.time_step_rank", 2).kv_u32(a + "ssm.group_count", 1);
    b.kv_u32(a + "expert_count", 4).kv_u32(a + "expert_used_count", 2);
    return b;
}

std::string load_error(const test::GgufBuilder& b) {
    const std::vector<uint8_t> bytes = b.bytes();
    try {
        model_from_gguf(GgufFile::parse(bytes, "m.gguf"));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("Nemotron-H-MoE files with per-layer expert widths or latent projections are refused by name", "[mamba2][moe]") {
    auto widths = nemotron_moe_metadata();
    widths.kv_i32_array("nemotron_h_moe.expert_feed_forward_length", {0, 0, 4});
    CHECK_THAT(load_error(widths), rill::test::contains("'nemotron_h_moe.expert_feed_forward_length' gives each layer its own expert width"));
    auto latent = nemotron_moe_metadata();
    latent.kv_u32("nemotron_h_moe.expert_feed_forward_length", 4).kv_u32("nemotron_h_moe.moe_latent_size", 4);
    CHECK_THAT(load_error(latent), rill::test::contains("'nemotron_h_moe.moe_latent_size' asks for latent expert projections"));
}
