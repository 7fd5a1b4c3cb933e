// The forward pass against references no one here wrote: llama2.c's stories260K run and the
// float64 reference on the golden synthetic models.
#include "catch.h"
#include "kernel_paths.h"

#include <cmath>
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

const char* const kGoldenFormats[] = {"F32",  "F16",  "BF16", "Q8_0",   "Q6_K",   "Q5_K_M", "Q5_1", "Q5_0",
                                      "Q4_K_M", "Q4_1", "Q4_0", "IQ4_NL", "IQ4_XS", "Q3_K_M", "Q2_K"};

std::string stories_path() { return test::shared_path("models/stories260K/stories260K.gguf"); }

SessionOptions exact_options(int threads = 1) {
    SessionOptions o;
    o.n_threads = threads;
    o.kv_types = KvType::F32;  // the references keep keys and values unrounded
    o.kernels = simd::KernelPath::Reference;  // exact dequantization, float activations
    return o;
}

// A golden model, its reference data, and a session on the given kernel path.
struct Golden {
    nlohmann::json data;
    std::unique_ptr<Model> model;
    std::unique_ptr<Session> session;
};
Golden open_golden(const char* format, simd::KernelPath path) {
    const std::string base = test::shared_path(std::string("golden/synth-llama-A.") + format);
    Golden g{nlohmann::json::parse(test::read_text(base + ".golden.json")), load_model(base + ".gguf"), nullptr};
    SessionOptions options = exact_options(2);
    options.kernels = path;
    g.session = std::make_unique<Session>(*g.model, options);
    return g;
}


}  // namespace

TEST_CASE("stories260K logits after BOS match llama2.c within 1e-4", "[forward][stories]") {
    // llama2.c computes in float32 as we do, with other summation orders: 1e-4 on logits of
    // magnitude ~10 is a few float32 ulps per accumulation, far below any real error.
    const auto model = load_model(stories_path());
    Session session(*model, exact_options());
    const int32_t bos[1] = {1};
    const auto logits = session.eval(bos);
    std::istringstream expected(test::read_text(test::shared_path("models/stories260K/expected/logits_after_bos.txt")));
    int n = 0;
    double worst = 0;
    for (int id; expected >> id;) {
        double value;
        expected >> value;
        worst = std::max(worst, std::abs(double(logits[size_t(id)]) - value));
        ++n;
    }
    CHECK(n == 512);
    CHECK(worst < 1e-4);
}

TEST_CASE("stories260K greedy decoding from BOS gives llama2.c's 200 tokens", "[forward][stories]") {
    const auto model = load_model(stories_path());
    Session session(*model, SessionOptions{.n_threads = 2});  // the default F16 KV cache, as `rill run` uses
    const auto expected = test::parse_ints(test::read_text(test::shared_path("models/stories260K/expected/greedy_ids_n200.txt")));
    REQUIRE(expected.size() == 200);
    const auto ids = test::greedy(session, {1}, 200);
    CHECK(std::vector<int>(ids.begin(), ids.end()) == expected);
}

TEST_CASE("a prompt evaluated in chunks gives the same logits as in one batch", "[forward]") {
    const auto model = load_model(stories_path());
    const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298};
    SessionOptions whole = exact_options(), chunked = exact_options();
    chunked.n_batch = 3;
    Session a(*model, whole), b(*model, chunked);
    const auto la = a.eval(prompt, true);
    const std::vector<float> first(la.begin(), la.end());
    const auto lb = b.eval(prompt, true);
    CHECK(std::vector<float>(lb.begin(), lb.end()) == first);
}

TEST_CASE("a prompt evaluated token by token matches one batch within float rounding", "[forward]") {
    // Both paths run the same per-row kernels today, so they agree to the bit; 1e-5 (float32 rounding
    // of logits of magnitude ~10) leaves room for batched GEMMs that sum in another order.
    const auto model = load_model(stories_path());
    const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 432, 383};
    Session batch(*model, exact_options()), single(*model, exact_options());
    const auto lb = batch.eval(prompt);
    const std::vector<float> last(lb.begin(), lb.end());
    std::span<const float> ls;
    for (const int32_t t : prompt) ls = single.eval(std::span(&t, 1));
    for (size_t i = 0; i < last.size(); ++i) REQUIRE(std::abs(ls[i] - last[i]) < 1e-5f);
}

TEST_CASE("logits are bit-identical with 1 and 2 threads on every kernel path", "[forward][threads]") {
    for (const simd::KernelPath kernels : test::kernel_paths())
    for (const char* path : {"models/stories260K/stories260K.gguf", "golden/synth-llama-A.Q4_K_M.gguf",
                             "golden/synth-llama-A.Q4_0.gguf", "golden/synth-llama-A.F16.gguf"}) {
        INFO(simd::kernel_path_name(kernels) << " " << path);
        const auto model = load_model(test::shared_path(path));
        const std::vector<int32_t> prompt = {1, 404, 339, 453, 375, 371, 112, 331, 150, 90};
        Session one(*model, SessionOptions{.n_threads = 1, .kernels = kernels});
        Session two(*model, SessionOptions{.n_threads = 2, .kernels = kernels});
        const auto l1 = one.eval(prompt, true);
        const std::vector<float> a(l1.begin(), l1.end());
        const auto l2 = two.eval(prompt, true);
        REQUIRE(a.size() == l2.size());
        size_t differing = 0;
        for (size_t i = 0; i < a.size(); ++i) differing += f32_to_bits(a[i]) != f32_to_bits(l2[i]);
        CHECK(differing == 0);
    }
}

TEST_CASE("evaluating past the context is an error that leaves the session usable", "[forward]") {
    const auto model = load_model(stories_path());
    Session session(*model, SessionOptions{.n_ctx = 4, .n_threads = 1});
    const std::vector<int32_t> five = {1, 2, 3, 4, 5};
    CHECK_THROWS_WITH(session.eval(five), rill::test::contains("context overflow"));
    CHECK(session.position() == 0);
    const std::vector<int32_t> bad = {1, 512};
    CHECK_THROWS_WITH(session.eval(bad), rill::test::contains("token id 512 is outside the vocabulary"));
    const std::vector<int32_t> four = {1, 2, 3, 4};
    CHECK(session.eval(four).size() == 512);
    CHECK(session.position() == 4);
}

// Exact dequantization with float32 activations: the only difference from the float64 reference is
// float32 rounding, ~1e-6 relative per operation over two layers; on log-probs of magnitude up to ~50
// that stays below 1e-4, far under the 0.25-0.75 that 8-bit activation rounding costs llama.cpp.
TEST_CASE("every golden model's next-token log-probs are within 1e-4 of the float64 reference", "[forward][golden]") {
    for (const char* format : kGoldenFormats) {
        INFO(format);
        const std::string base = test::shared_path(std::string("golden/synth-llama-A.") + format);
        const auto golden = nlohmann::json::parse(test::read_text(base + ".golden.json"));
        const auto model = load_model(base + ".gguf");
        Session session(*model, exact_options(2));
        const auto prompt = golden["prompt_tokens"].get<std::vector<int32_t>>();
        const auto logprobs = test::log_softmax(session.eval(prompt));
        const auto reference = golden["ref_logprobs_last"].get<std::vector<double>>();
        REQUIRE(logprobs.size() == reference.size());
        double worst = 0;
        for (size_t i = 0; i < reference.size(); ++i) worst = std::max(worst, std::abs(logprobs[i] - reference[i]));
        CHECK(worst < 1e-4);
    }
}

// The integer kernels round activations to 8 bits per block as llama.cpp does (Q8_K-style blocks of
// 256 for k-quants and IQ4_XS; blocks of 32 with a float32 scale for the others), so their distance
// from the reference is of llama.cpp's size: measured 0.70x-1.05x of it per file. The bound allows 25%
// for blocks that round the other way. Float weights keep float activations: the exact bound holds.
TEST_CASE("on every integer kernel path each golden model stays within 1.25x llama.cpp's own distance from the reference", "[forward][golden][kernels]") {
    for (const simd::KernelPath path : test::kernel_paths()) {
        if (path == simd::KernelPath::Reference) continue;
        for (const char* format : kGoldenFormats) {
            INFO(simd::kernel_path_name(path) << " " << format);
            Golden g = open_golden(format, path);
            const nlohmann::json& golden = g.data;
            const auto logprobs = test::log_softmax(g.session->eval(golden["prompt_tokens"].get<std::vector<int32_t>>()));
            const auto reference = golden["ref_logprobs_last"].get<std::vector<double>>();
            const auto llama = golden["llamacpp_logprobs_last"].get<std::vector<double>>();
            double ours = 0, theirs = 0;
            for (size_t i = 0; i < reference.size(); ++i) {
                ours = std::max(ours, std::abs(logprobs[i] - reference[i]));
                theirs = std::max(theirs, std::abs(llama[i] - reference[i]));
            }
            const std::string_view f = format;
            const bool float_weights = f == "F32" || f == "F16" || f == "BF16";
            CHECK(ours < (float_weights ? 1e-4 : 1.25 * theirs));
        }
    }
}

TEST_CASE("every golden model's greedy tokens follow the reference until its margin falls below 0.25, on every kernel path", "[forward][golden]") {
    for (const simd::KernelPath path : test::kernel_paths())
    for (const char* format : kGoldenFormats) {
        INFO(simd::kernel_path_name(path) << " " << format);
        Golden g = open_golden(format, path);
        const nlohmann::json& golden = g.data;
        const auto ref = golden["ref_greedy"].get<std::vector<int32_t>>();
        const auto margins = golden["ref_greedy_step_margins"].get<std::vector<double>>();
        const auto ours = test::greedy(*g.session, golden["prompt_tokens"].get<std::vector<int32_t>>(), int(ref.size()));
        size_t must_agree = 0;
        while (must_agree < ref.size() && margins[must_agree] >= 0.25) ++must_agree;
        INFO("steps that must agree: " << must_agree);
        CHECK(std::vector<int32_t>(ours.begin(), ours.begin() + long(must_agree)) ==
              std::vector<int32_t>(ref.begin(), ref.begin() + long(must_agree)));
    }
}

