// Prompt batches on the GEMM backends: which backend a batch meets, each backend against exact
// arithmetic on the dequantized weights, independence from the thread count, and whole prompts
// evaluated in one batch against the same prompt token by token and the golden references.
#include "catch.h"

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "numeric.h"
#include "random_weight.h"
#include "quant/interleave.h"
#include "quant/quantize.h"
#include "runtime/base/error.h"
#include "runtime/session/session.h"
#include "shared_data.h"
#include "thread_invariance.h"

using namespace rill;

namespace {

const GemmBackend kGemmBackends[] = {GemmBackend::Onednn, GemmBackend::Openblas};

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

}  // namespace

TEST_CASE("a batch below the cut-over always goes to the decode kernels", "[prefill]") {
    for (const GemmBackend b : {GemmBackend::Auto, GemmBackend::Onednn, GemmBackend::Openblas})
        CHECK(choose_gemm(b, TensorType::F16, kGemmMinTokens - 1) == GemmBackend::Native);
    CHECK(choose_gemm(GemmBackend::Onednn, TensorType::Q4_0, kGemmMinTokens) == GemmBackend::Onednn);
    CHECK(choose_gemm(GemmBackend::Native, TensorType::F16, 512) == GemmBackend::Native);
}

TEST_CASE("with AVX-512 BF16 auto sends long batches of every type but Q4_0, Q8_0, Q4_K and MXFP4 to oneDNN's bf16 matmul", "[prefill]") {
    const simd::KernelPath avx512 = simd::KernelPath::Avx512;
    for (const TensorType t : { TensorType::Q6_K, TensorType::Q5_K, TensorType::F16}) {
        CHECK(choose_gemm(GemmBackend::Auto, t, 512, kGemmMinTokens, avx512) == GemmBackend::OnednnBf16);
        CHECK(choose_gemm(GemmBackend::Auto, t, 64, kGemmMinTokens, avx512) == GemmBackend::OnednnBf16);
    }
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::MXFP4, 512, kGemmMinTokens, avx512) == GemmBackend::Native);
    CHECK(choose_gemm(GemmBackend::Openblas, TensorType::Q4_K, 512, kGemmMinTokens, avx512) == GemmBackend::Openblas);
}

TEST_CASE("with AVX-512 VNNI auto sends Q4_0 batches from 64 tokens and Q8_0 and Q4_K from 32 to the int8 GEMM", "[prefill]") {
    const simd::KernelPath avx512 = simd::KernelPath::Avx512;
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::Q4_0, 64, kGemmMinTokens, avx512) == GemmBackend::Int8);
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::Q4_0, 512, kGemmMinTokens, avx512) == GemmBackend::Int8);
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::Q4_0, 32, kGemmMinTokens, avx512) == GemmBackend::Native);
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::Q8_0, 32, kGemmMinTokens, avx512) == GemmBackend::Int8);
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::Q8_0, 16, kGemmMinTokens, avx512) == GemmBackend::Native);
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::Q4_K, 32, kGemmMinTokens, avx512) == GemmBackend::Int8);
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::Q4_K, 512, kGemmMinTokens, avx512) == GemmBackend::Int8);
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::Q4_0, 512, kGemmMinTokens, simd::KernelPath::Avx2) == GemmBackend::Native);
}

TEST_CASE("with AVX-512 short batches of the interleaved types stay on the int8 kernels", "[prefill]") {
    const simd::KernelPath avx512 = simd::KernelPath::Avx512;
    for (const TensorType t : {TensorType::Q6_K, TensorType::MXFP4})
        CHECK(choose_gemm(GemmBackend::Auto, t, 32, kGemmMinTokens, avx512) == GemmBackend::Native);
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::F16, 32, kGemmMinTokens, avx512) == GemmBackend::Openblas);
}

TEST_CASE("auto sends float and long Q5_K prompt batches to OpenBLAS and keeps Q4_0, Q8_0, Q4_K, Q6_K and MXFP4 on the decode kernels", "[prefill]") {
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::F16, 512) == GemmBackend::Openblas);
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::Q5_K, 512) == GemmBackend::Openblas);
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::Q5_K, 32) == GemmBackend::Native);
    for (const TensorType t : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K, TensorType::MXFP4})
        CHECK(choose_gemm(GemmBackend::Auto, t, 512) == GemmBackend::Native);
}

TEST_CASE("an unknown GEMM backend is an error that names the choices", "[prefill]") {
    CHECK(parse_gemm_backend("openblas") == GemmBackend::Openblas);
    CHECK(parse_gemm_backend("auto") == GemmBackend::Auto);
    CHECK_THROWS_WITH(parse_gemm_backend("cublas"), rill::test::contains("'cublas'") && rill::test::contains("amx, int8, onednn, onednn-bf16, openblas or native"));
}

TEST_CASE("panels stay bounded: whole multiples of 16 rows of about 2 MiB, never fewer than 16 rows", "[prefill]") {
    CHECK(panel_rows(2048) == 256);
    CHECK(panel_rows(5632) == 80);
    CHECK(panel_rows(1 << 20) == 16);
    for (const int cols : {64, 2048, 4096, 11008, 14336}) {
        CHECK(panel_rows(cols) % 16 == 0);
        CHECK(size_t(panel_rows(cols)) * size_t(cols) * sizeof(float) <= std::max(kPanelBytes, size_t(16) * size_t(cols) * 4));
    }
}

// float32 GEMM of exactly dequantized weights: each product is one float32 multiply-add chain over
// 512 terms, so the error is a few units of float32 rounding times the sum of |products|; 1e-5 of
// it is ~80 ulps of headroom, and any wrong index or missed row is off by far more.
TEST_CASE("each GEMM backend equals exact arithmetic on the dequantized weights for every type, with 1 or 2 threads", "[prefill]") {
    const size_t cols = 512, rows = 70, tokens = 20;  // eight groups of eight interleaved rows, and 6 more
    const auto x = test::normal_floats(cols * tokens, 7);
    for (const TensorTypeTraits& t : all_tensor_types()) {
        const test::RandomWeight w(t.type, rows, cols, 100);
        for (const GemmBackend backend : kGemmBackends) {
            INFO(t.name << " " << gemm_backend_name(backend));
            std::vector<float> one(rows * tokens), two(rows * tokens);
            MatmulScratch single(simd::default_kernel_path(), 1, cols, backend), pair(simd::default_kernel_path(), 2, cols, backend);
            matmul(w.weight, x.data(), one.data(), int(tokens), single);
            matmul(w.weight, x.data(), two.data(), int(tokens), pair);
            CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
            CHECK(test::products_off(w.values, x, one, rows, cols, 1e-5) == 0);
        }
    }
}

TEST_CASE("a GEMM batch gives bit-identical logits with 1 and 2 threads", "[prefill][threads]") {
    const auto model = load_model(test::shared_path("golden/synth-llama-A.Q4_K_M.gguf"));
    for (const GemmBackend backend : kGemmBackends) {
        INFO(gemm_backend_name(backend));
        CHECK(test::same_logits_at_1_and_2_threads(*model, test::spread_prompt(40), backend));
    }
}

// Both ways are exact dequantization with float32 activations (reference kernels for single tokens,
// a GEMM backend for the batch), so each is within 1e-4 of the float64 reference (test_forward) and
// they differ only in float32 summation order: 2e-4 is the sum of the two bounds.
TEST_CASE("a prompt evaluated in one GEMM batch and token by token give the same next-token log-probs within 2e-4", "[prefill][golden]") {
    for (const char* format : {"F16", "Q8_0", "Q6_K", "Q4_K_M", "Q4_0"}) {
        const std::string base = test::shared_path(std::string("golden/synth-llama-A.") + format);
        const auto golden = nlohmann::json::parse(test::read_text(base + ".golden.json"));
        const auto prompt = golden["prompt_tokens"].get<std::vector<int32_t>>();
        const auto model = load_model(base + ".gguf");
        for (const GemmBackend backend : kGemmBackends) {
            INFO(format << " " << gemm_backend_name(backend));
            const SessionOptions options{.n_threads = 2, .kv_types = KvType::F32, .kernels = simd::KernelPath::Reference, .gemm = backend};
            Session batch(*model, options), single(*model, options);
            const auto batched = test::log_softmax(batch.eval(prompt));
            std::span<const float> last;
            for (const int32_t t : prompt) last = single.eval(std::span(&t, 1));
            CHECK(max_abs_difference(batched, test::log_softmax(last)) < 2e-4);
        }
    }
}

// With the reference kernels for the last token's output row, a forced backend carries the whole
// prompt (24 tokens, over the cut-over) through float32 GEMM: the exact path's 1e-4 bound applies.
TEST_CASE("every golden model's log-probs are within 1e-4 of the float64 reference through each GEMM backend", "[prefill][golden]") {
    for (const char* format : {"F32", "F16", "BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q5_1", "Q5_0", "Q4_K_M", "Q4_1", "Q4_0",
                               "IQ4_NL", "IQ4_XS", "Q3_K_M", "Q2_K"}) {
        const std::string base = test::shared_path(std::string("golden/synth-llama-A.") + format);
        const auto golden = nlohmann::json::parse(test::read_text(base + ".golden.json"));
        const auto prompt = golden["prompt_tokens"].get<std::vector<int32_t>>();
        REQUIRE(int(prompt.size()) >= kGemmMinTokens);
        const auto model = load_model(base + ".gguf");
        for (const GemmBackend backend : kGemmBackends) {
            INFO(format << " " << gemm_backend_name(backend));
            Session session(*model, SessionOptions{.n_threads = 2, .kv_types = KvType::F32, .kernels = simd::KernelPath::Reference,
                                                   .gemm = backend});
            const auto logprobs = test::log_softmax(session.eval(prompt));
            CHECK(max_abs_difference(logprobs, golden["ref_logprobs_last"].get<std::vector<double>>()) < 1e-4);
        }
    }
}

TEST_CASE("a long prompt runs in micro-batches and gives the logits of one big batch within float rounding", "[prefill]") {
    const auto model = load_model(test::shared_path("golden/synth-llama-A.F16.gguf"));
    std::vector<int32_t> prompt;
    for (int i = 0; i < 100; ++i) prompt.push_back(int32_t((i * 53 + 5) % 512));
    Session whole(*model, SessionOptions{.n_threads = 2, .kv_types = KvType::F32, .n_batch = 512, .gemm = GemmBackend::Openblas});
    Session pieces(*model, SessionOptions{.n_threads = 2, .kv_types = KvType::F32, .n_batch = 32, .gemm = GemmBackend::Openblas});
    const auto a = test::log_softmax(whole.eval(prompt));
    CHECK(max_abs_difference(a, test::log_softmax(pieces.eval(prompt))) < 2e-4);
}
