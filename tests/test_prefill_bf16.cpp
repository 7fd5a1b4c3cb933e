// The bf16 GEMM backends (oneDNN's bf16 matmul, and rill's AMX tile kernel, on weights and activations
// rounded to bfloat16, sums in float32): their accuracy class, their independence from the thread
// count, and the rounding they rely on. onednn-bf16 runs where the avx512 kernel path does (AVX-512
// BF16), amx where the CPU has AMX tiles; elsewhere their cases are skipped with a line.
#include "catch.h"

#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "golden_distance.h"
#include "numeric.h"
#include "quant/fp16.h"
#include "quant/quantize.h"
#include "random_weight.h"
#include "runtime/compute/matmul.h"
#include "runtime/session/session.h"
#include "shared_data.h"
#include "thread_invariance.h"
#include "simd/convert.h"

using namespace rill;

namespace {

bool bf16_gemm_here() {
    if (simd::cpu_supports(simd::KernelPath::Avx512) && onednn_has_bf16(*make_onednn_gemm(1))) return true;
    WARN("skipped: no AVX-512 BF16 here, or oneDNN held below it (ONEDNN_MAX_CPU_ISA)");
    return false;
}

// The bf16 backends this CPU runs: onednn-bf16 where oneDNN has a bf16 matmul, amx where AMX tiles are.
std::vector<GemmBackend> bf16_backends_here() {
    std::vector<GemmBackend> out;
    if (bf16_gemm_here()) out.push_back(GemmBackend::OnednnBf16);
    if (gemm_runs_here(GemmBackend::Amx, TensorType::F32, simd::KernelPath::Avx512, false)) out.push_back(GemmBackend::Amx);
    else WARN("amx cases skipped: no AMX tiles with bfloat16 products here");
    return out;
}

}  // namespace

TEST_CASE("rows round to bfloat16 with the scalar rule's bits on every length, NaNs and subnormals included", "[prefill][bf16]") {
    std::vector<float> x = test::normal_floats(1000, 3);
    x[5] = std::numeric_limits<float>::quiet_NaN();
    x[6] = -std::numeric_limits<float>::infinity();
    x[7] = 1e-40f;   // subnormal: kept, not flushed
    x[8] = 1.00390625f;  // exactly halfway between two bfloat16 values: rounds to even
    x[9] = std::numeric_limits<float>::max();
    for (const size_t n : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(17), size_t(1000)}) {
        std::vector<uint16_t> out(n);
        simd::f32_to_bf16_row(x.data(), out.data(), n);
        for (size_t i = 0; i < n; ++i) CHECK(out[i] == f32_to_bf16(x[i]));
    }
}

// Each factor of a product is rounded to bfloat16 (relative error at most 2^-9 each), so a product
// is off by at most (2^-8 + 2^-18) of its size, and a sum by that share of the sum of |products|;
// float32 accumulation over 512 terms adds under 1e-5 of it. 2^-8 + 1e-5 is that bound.
TEST_CASE("the bf16 backends are within bfloat16 rounding of exact arithmetic for every type, with 1 or 2 threads alike", "[prefill][bf16]") {
    const size_t cols = 512, rows = 70, tokens = 20;
    const auto x = test::normal_floats(cols * tokens, 7);
    for (const GemmBackend backend : bf16_backends_here())
    for (const TensorTypeTraits& t : all_tensor_types()) {
        const test::RandomWeight w(t.type, rows, cols, 100);
        INFO(gemm_backend_name(backend) << " " << t.name);
        std::vector<float> one(rows * tokens), two(rows * tokens);
        MatmulScratch single(simd::KernelPath::Avx512, 1, cols, backend);
        MatmulScratch pair(simd::KernelPath::Avx512, 2, cols, backend);
        matmul(w.weight, x.data(), one.data(), int(tokens), single);
        matmul(w.weight, x.data(), two.data(), int(tokens), pair);
        CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
        CHECK(test::products_off(w.values, x, one, rows, cols, std::ldexp(1.0, -8) + 1e-5) == 0);
    }
}

TEST_CASE("auto leaves the bf16 backend alone where oneDNN has no bf16 matmul", "[prefill][bf16]") {
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::Q6_K, 512, kGemmMinTokens, simd::KernelPath::Avx512, false) == GemmBackend::Native);
    CHECK(choose_gemm(GemmBackend::Auto, TensorType::F16, 512, kGemmMinTokens, simd::KernelPath::Avx512, false) == GemmBackend::Openblas);
    MatmulScratch scratch(simd::KernelPath::Avx512, 1, 64, GemmBackend::Auto);
    CHECK(scratch.onednn_bf16 == onednn_has_bf16(*make_onednn_gemm(1)));
}

TEST_CASE("a bf16 GEMM batch gives bit-identical logits with 1 and 2 threads", "[prefill][bf16][threads]") {
    const auto model = load_model(test::shared_path("golden/synth-llama-A.Q4_K_M.gguf"));
    for (const GemmBackend backend : bf16_backends_here()) {
        INFO(gemm_backend_name(backend));
        CHECK(test::same_logits_at_1_and_2_threads(*model, test::spread_prompt(80), backend));
    }
}

// bfloat16 keeps 8 significant bits, as 8-bit activations do: the accuracy class of llama.cpp, which
// rounds quantized types' activations to 8 bits and BF16's to bfloat16. So on those files the bf16
// backend may be as far from the float64 reference as llama.cpp, never farther (measured on Zen 5: it
// is 0.06-0.37, 0.55-0.86x llama.cpp's distance). On F32 and F16 files llama.cpp keeps float or half
// activations (1e-5 and 1e-2 away), and the bf16 backend's rounding of both factors moves the peaked
// golden models' log-probs by 0.126 and 0.120: 0.15 bounds that with 20% to spare, far under what a
// wrong index or a missed row does (whole units). --gemm onednn keeps float32 for those who need it.
TEST_CASE("every golden model's log-probs through the bf16 backends are as close to the float64 reference as llama.cpp's", "[prefill][bf16][golden]") {
    for (const GemmBackend backend : bf16_backends_here())
    for (const char* format : {"F32", "F16", "BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q5_1", "Q5_0", "Q4_K_M", "Q4_1", "Q4_0",
                               "IQ4_NL", "IQ4_XS", "Q3_K_M", "Q2_K"}) {
        const test::GoldenDistance d =
            test::golden_distance(format, SessionOptions{.n_threads = 2, .kv_types = KvType::F32, .gemm = backend});
        const double ours = d.ours, theirs = d.llamacpp;
        std::cout << gemm_backend_name(backend) << " backend " << format << ": " << ours << " from the reference (llama.cpp " << theirs << ")\n";
        INFO(format << ": " << ours << " (llama.cpp " << theirs << ")");
        const bool float_activations_in_llamacpp = std::string(format) == "F32" || std::string(format) == "F16";
        CHECK(ours <= (float_activations_in_llamacpp ? 0.15 : theirs));
    }
}
