// The families beyond llama and qwen2 against ../shared/arch: small models written by llama.cpp's own
// gguf-py, with a float64 forward pass written from llama.cpp's graph (ref_*) and llama.cpp's outputs.
#include "catch.h"
#include "kernel_paths.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "greedy.h"
#include "numeric.h"
#include "quant/fp16.h"
#include "runtime/session/generate.h"
#include "runtime/session/session.h"
#include "runtime/text/vocab.h"
#include "shared_data.h"

using namespace rill;

namespace {

// Every tensor F32: float activations on every kernel path.
const char* const kF32Families[] = {"qwen3-A", "gemma3-A", "phi3-A", "qwen3moe-A", "gemma4-A", "gemma4-moe-A"};

struct ArchCase {
    nlohmann::json data;
    std::unique_ptr<Model> model;
};

ArchCase open_case(const std::string& name) {
    const std::string base = test::shared_path("arch/" + name);
    return {nlohmann::json::parse(test::read_text(base + ".llamacpp.json")), load_model(base + ".gguf")};
}

SessionOptions options(simd::KernelPath path, int threads) {
    // F32 keys and values: the reference keeps them unrounded.
    return SessionOptions{.n_threads = threads, .kv_types = KvType::F32, .kernels = path};
}

double max_distance(std::span<const float> logits, const nlohmann::json& reference) {
    return test::max_logprob_distance(logits, reference.get<std::vector<double>>());
}


}  // namespace

// Float activations and exact weights: only float32 rounding separates us from the float64 pass,
// ~1e-5 on these log-probs (llama.cpp itself is 6e-6..7e-6 away on qwen3 and phi3). 1e-3 is the
// issue's bound; it still tells erf-GELU from tanh-GELU on gemma3 (0.003 apart).
TEST_CASE("each new family's log-probs after the prompt are within 1e-3 of the float64 reference on every kernel path", "[arch]") {
    for (const char* name : kF32Families) {
        ArchCase c = open_case(name);
        const auto prompt = c.data["prompt_tokens"].get<std::vector<int32_t>>();
        for (const simd::KernelPath path : test::kernel_paths()) {
            INFO(name << " on " << simd::kernel_path_name(path));
            Session session(*c.model, options(path, 2));
            const double distance = max_distance(session.eval(prompt), c.data["ref_logprobs_last"]);
            INFO("max |Δ log-prob| " << distance);
            CHECK(distance < 1e-3);
        }
    }
}

TEST_CASE("gemma3's exact GELU lands closer to the reference than llama.cpp's FP16 table does", "[arch]") {
    ArchCase c = open_case("gemma3-A");
    Session session(*c.model, options(simd::KernelPath::Reference, 1));
    const double ours = max_distance(session.eval(c.data["prompt_tokens"].get<std::vector<int32_t>>()), c.data["ref_logprobs_last"]);
    INFO("ours " << ours << ", llama.cpp " << c.data["max_abs_diff_llamacpp_vs_ref"].get<double>());
    CHECK(ours < 1e-4);
}

TEST_CASE("each new family's greedy tokens follow the reference until its margin falls below 0.25, on every kernel path", "[arch]") {
    for (const char* name : kF32Families) {
        ArchCase c = open_case(name);
        const auto ref = c.data["ref_greedy"].get<std::vector<int32_t>>();
        const auto margins = c.data["ref_greedy_step_margins"].get<std::vector<double>>();
        size_t must_agree = 0;
        while (must_agree < ref.size() && margins[must_agree] >= 0.25) ++must_agree;
        for (const simd::KernelPath path : test::kernel_paths()) {
            INFO(name << " on " << simd::kernel_path_name(path) << ", steps that must agree: " << must_agree);
            Session session(*c.model, options(path, 2));
            const auto ours = test::greedy(session, c.data["prompt_tokens"].get<std::vector<int32_t>>(), int(ref.size()));
            CHECK(std::vector<int32_t>(ours.begin(), ours.begin() + long(must_agree)) ==
                  std::vector<int32_t>(ref.begin(), ref.begin() + long(must_agree)));
        }
    }
}

TEST_CASE("each new family's logits are bit-identical with 1 and 2 threads on every kernel path", "[arch][threads]") {
    for (const char* name : {"qwen3-A", "gemma3-A", "phi3-A", "qwen3moe-A", "gpt-oss-A"}) {
        ArchCase c = open_case(name);
        const auto prompt = c.data["prompt_tokens"].get<std::vector<int32_t>>();
        for (const simd::KernelPath path : test::kernel_paths()) {
            INFO(name << " on " << simd::kernel_path_name(path));
            Session one(*c.model, SessionOptions{.n_threads = 1, .kernels = path});
            Session two(*c.model, SessionOptions{.n_threads = 2, .kernels = path});
            const auto l1 = one.eval(prompt, true);
            const std::vector<float> a(l1.begin(), l1.end());
            const auto l2 = two.eval(prompt, true);
            size_t differing = 0;
            for (size_t i = 0; i < a.size(); ++i) differing += f32_to_bits(a[i]) != f32_to_bits(l2[i]);
            CHECK(differing == 0);
        }
    }
}

// gemma3-A's window (8) is shorter than its 40-token prompt: token-by-token decoding goes round the
// ring many times, the batch sees the window through its mask. Same arithmetic per row: 1e-4.
TEST_CASE("a sliding-window model decoded token by token matches its batch evaluation", "[arch][swa]") {
    ArchCase c = open_case("gemma3-A");
    const auto prompt = c.data["prompt_tokens"].get<std::vector<int32_t>>();
    Session batch(*c.model, options(simd::KernelPath::Reference, 1));
    Session single(*c.model, SessionOptions{.n_threads = 1, .kv_types = KvType::F32, .n_batch = 4,
                                            .kernels = simd::KernelPath::Reference});
    const auto lb = batch.eval(prompt);
    const std::vector<float> last(lb.begin(), lb.end());
    std::span<const float> ls;
    for (const int32_t t : prompt) ls = single.eval(std::span(&t, 1));
    double worst = 0;
    for (size_t i = 0; i < last.size(); ++i) worst = std::max(worst, double(std::abs(ls[i] - last[i])));
    CHECK(worst < 1e-4);
}

TEST_CASE("a sliding-window layer keeps a ring of its window plus one chunk, not the whole context", "[arch][swa]") {
    ArchCase c = open_case("gemma3-A");
    Session session(*c.model, SessionOptions{.n_ctx = 512, .n_threads = 1, .n_batch = 16});
    const KvCache& kv = session.kv_cache();
    for (int l = 0; l < 5; ++l) CHECK(kv.capacity[size_t(l)] == 8 + 16);
    CHECK(kv.capacity[5] == 512);
    CHECK(kv.bytes() == uint64_t(2) * (5 * 24 + 512) * uint64_t(c.model->hp.kv_dim()) * 2);
}

TEST_CASE("going back further than a ring still holds re-evaluates from the start", "[arch][swa]") {
    ArchCase c = open_case("gemma3-A");
    const auto prompt = c.data["prompt_tokens"].get<std::vector<int32_t>>();
    Session session(*c.model, SessionOptions{.n_threads = 1, .n_batch = 4});
    session.eval(prompt);
    CHECK(session.truncate(38) == 38);  // two positions back: the ring (8 + 4) still has the window
    CHECK(session.truncate(10) == 0);   // the window before 10 was overwritten long ago
    // Re-evaluating from there gives the logits a fresh session gives.
    const auto again = session.eval(prompt);
    const std::vector<float> a(again.begin(), again.end());
    Session fresh(*c.model, SessionOptions{.n_threads = 1, .n_batch = 4});
    const auto b = fresh.eval(prompt);
    CHECK(a == std::vector<float>(b.begin(), b.end()));
}

TEST_CASE("a sliding-window session's saved state restores the same next logits", "[arch][swa]") {
    ArchCase c = open_case("gemma3-A");
    const auto prompt = c.data["prompt_tokens"].get<std::vector<int32_t>>();
    Session a(*c.model, SessionOptions{.n_threads = 1, .n_batch = 4});
    a.eval(prompt);
    const auto state = a.save_state();
    Session b(*c.model, SessionOptions{.n_ctx = 256, .n_threads = 1, .n_batch = 4});  // a smaller context
    b.load_state(state);
    const int32_t next = 7;
    const auto la = a.eval(std::span(&next, 1));
    const std::vector<float> expected(la.begin(), la.end());
    const auto lb = b.eval(std::span(&next, 1));
    CHECK(std::vector<float>(lb.begin(), lb.end()) == expected);
}

// Mixtures of experts: qwen3moe-A is all F32 (float activations everywhere); gpt-oss-A's experts are
// MXFP4, which the integer paths multiply with 8-bit activations as llama.cpp does.
TEST_CASE("gpt-oss's log-probs are within 1e-3 of the reference exactly, and within 1.25x llama.cpp's distance on the integer paths", "[arch][moe]") {
    ArchCase c = open_case("gpt-oss-A");
    const auto prompt = c.data["prompt_tokens"].get<std::vector<int32_t>>();
    const double theirs = c.data["max_abs_diff_llamacpp_vs_ref"].get<double>();
    for (const simd::KernelPath path : test::kernel_paths()) {
        INFO(simd::kernel_path_name(path) << ", llama.cpp " << theirs);
        Session session(*c.model, options(path, 2));
        const double distance = max_distance(session.eval(prompt), c.data["ref_logprobs_last"]);
        INFO("max |Δ log-prob| " << distance);
        CHECK(distance < (path == simd::KernelPath::Reference ? 1e-3 : 1.25 * theirs));
    }
}

TEST_CASE("gpt-oss's greedy tokens on the exact path follow the reference until its margin falls below 0.25", "[arch][moe]") {
    {
        const char* name = "gpt-oss-A";
        ArchCase c = open_case(name);
        const auto ref = c.data["ref_greedy"].get<std::vector<int32_t>>();
        const auto margins = c.data["ref_greedy_step_margins"].get<std::vector<double>>();
        size_t must_agree = 0;
        while (must_agree < ref.size() && margins[must_agree] >= 0.25) ++must_agree;
        INFO(name << ", steps that must agree: " << must_agree);
        Session session(*c.model, options(simd::KernelPath::Reference, 2));
        const auto ours = test::greedy(session, c.data["prompt_tokens"].get<std::vector<int32_t>>(), int(ref.size()));
        CHECK(std::vector<int32_t>(ours.begin(), ours.begin() + long(must_agree)) ==
              std::vector<int32_t>(ref.begin(), ref.begin() + long(must_agree)));
    }
}

TEST_CASE("gpt-oss's MXFP4 experts dequantize bit for bit as ggml's", "[arch][moe][mxfp4]") {
    ArchCase c = open_case("gpt-oss-A");
    const std::string expected = test::read_text(test::shared_path("arch/gpt-oss-A.experts.f32"));
    REQUIRE(expected.size() == size_t(8) * 256 * 128 * 4);
    const LayerWeights& L = c.model->layers[0];
    REQUIRE(L.down_exps.size() == 8);
    size_t differing = 0;
    std::vector<float> row(128);
    for (int e = 0; e < 8; ++e)
        for (int r = 0; r < 256; ++r) {
            weight_row(L.down_exps[size_t(e)], r, row.data());
            for (int i = 0; i < 128; ++i) {
                float want;
                std::memcpy(&want, expected.data() + ((size_t(e) * 256 + size_t(r)) * 128 + size_t(i)) * 4, 4);
                differing += f32_to_bits(want) != f32_to_bits(row[size_t(i)]);
            }
        }
    CHECK(differing == 0);
}

TEST_CASE("several streams decoded together through a mixture of experts each get their own logits bit for bit", "[arch][moe][batch]") {
    ArchCase c = open_case("qwen3moe-A");
    const auto prompt = c.data["prompt_tokens"].get<std::vector<int32_t>>();
    const std::vector<int32_t> a_prompt(prompt.begin(), prompt.begin() + 20), b_prompt(prompt.begin() + 5, prompt.end());
    Session a(*c.model, SessionOptions{.n_threads = 2}), b(*c.model, SessionOptions{.n_threads = 2});
    Session alone(*c.model, SessionOptions{.n_threads = 2});
    a.eval(a_prompt);
    b.eval(b_prompt);
    alone.eval(b_prompt);
    Session* both[] = {&a, &b};
    const int32_t next[] = {7, 9};
    Session::eval_together(both, next);
    const auto together = b.last_logits();
    const std::vector<float> expected(together.begin(), together.end());
    const auto solo = alone.eval(std::span(&next[1], 1));
    CHECK(std::vector<float>(solo.begin(), solo.end()) == expected);
}
