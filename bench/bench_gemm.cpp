// Prompt-side matrix products: what each GEMM backend reaches for a dequantized panel (called outside
// any parallel region, so on its own threads),
// what dequantizing a panel costs per weight type, and the whole batched product (panels on a team
// of threads) against the decode kernels at growing batch sizes, which sets kGemmMinTokens and the
// default backend.
//   build/bin/bench_gemm --benchmark_filter=panel      GFLOP/s per backend and shape, on the library's own threads
//   build/bin/bench_gemm --benchmark_filter=matmul/Q4_0  batched product, 2 threads, by batch size
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "quant/interleave.h"
#include "simd/gemm_amx.h"
#include "simd/gemm_q8.h"
#include "runtime/compute/matmul.h"

namespace {

using namespace rill;

std::vector<uint8_t> random_bytes(size_t n, TensorType type) {
    std::vector<uint8_t> bytes(n);
    uint64_t seed = 7;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        std::memcpy(&bytes[i], &z, 8);
    }
    // Finite values only: mask the exponents of every half or single float the bytes may hold.
    if (type == TensorType::F32)
        for (size_t i = 3; i < n; i += 4) bytes[i] &= 0x3f;
    else if (type == TensorType::F16)
        for (size_t i = 1; i < n; i += 2) bytes[i] &= 0x3b;
    else
        for (auto& b : bytes) b &= 0x3b;
    // MXFP4's scale is 2^(e - 127): masked, some would be 2^-127, whose products are subnormal and slow.
    if (type == TensorType::MXFP4)
        for (size_t i = 0; i < n; i += 17) bytes[i] = uint8_t(118 + bytes[i] % 8);
    return bytes;
}

void BM_panel(benchmark::State& state, GemmBackend backend) {
    const int m = int(state.range(0)), n = int(state.range(1)), k = int(state.range(2));
    std::vector<float> a(size_t(m) * k, 0.5f), b(size_t(n) * k, 0.25f), c(size_t(m) * n);
    OnednnGemmPtr onednn = backend == GemmBackend::Onednn ? make_onednn_gemm(1) : nullptr;
    for (auto _ : state) {
        const GemmShape shape{m, n, k, n};
        if (onednn) onednn_gemm(*onednn, 0, shape, a.data(), b.data(), c.data());
        else openblas_gemm(shape, a.data(), b.data(), c.data());
        benchmark::DoNotOptimize(c.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

struct MatrixFixture {
    GgufTensor tensor;
    Weight weight;
    std::vector<uint8_t> bytes;
    MatrixFixture(TensorType type, int rows, int cols) {
        const size_t stride = row_bytes(type, size_t(cols));
        bytes = random_bytes(stride * size_t(rows), type);
        tensor.type = type;
        tensor.n_dims = 2;
        tensor.ne = {uint64_t(cols), uint64_t(rows), 1, 1};
        tensor.n_elements = uint64_t(cols) * uint64_t(rows);
        tensor.n_bytes = bytes.size();
        tensor.data = bytes.data();
        weight.tensor = &tensor;
        if (can_interleave(type)) {
            interleave_rows(type, bytes.data(), size_t(rows), stride);
            weight.interleaved = true;
        }
    }
};

// Dequantizing a 2048-wide panel as matmul does, in weights per second.
void BM_dequantize_panel(benchmark::State& state, TensorType type) {
    const int cols = 2048, rows = panel_rows(cols);
    MatrixFixture m(type, rows, cols);
    // One panel through a batch of 16 on the GEMM path costs its dequantization plus a small GEMM;
    // timing the batched product of one panel's worth of rows isolates the dequantization well enough.
    MatmulScratch scratch(simd::default_kernel_path(), 1, size_t(cols), GemmBackend::Openblas);
    std::vector<float> in(size_t(cols), 0.5f);
    std::vector<float> out(static_cast<size_t>(rows));
    scratch.gemm_min_tokens = 1;
    for (auto _ : state) {
        matmul(m.weight, in.data(), out.data(), 1, scratch);
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["weights/s"] = benchmark::Counter(double(rows) * cols * double(state.iterations()), benchmark::Counter::kIsRate);
}

// The whole product of a batch against a tinyllama-sized 2048 × 2048 weight on two threads.
void BM_matmul(benchmark::State& state, TensorType type, GemmBackend backend) {
    const int rows = 2048, cols = 2048, m = int(state.range(0));
    MatrixFixture w(type, rows, cols);
    MatmulScratch scratch(simd::default_kernel_path(), 2, size_t(cols), backend);
    scratch.gemm_min_tokens = 1;
    std::vector<float> in(size_t(m) * cols, 0.5f), out(size_t(m) * rows);
    for (auto _ : state) {
        matmul(w.weight, in.data(), out.data(), m, scratch);
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * rows * cols * double(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
}

const int kRegistered = [] {
    for (const auto& [name, backend] : {std::pair{"onednn", GemmBackend::Onednn}, std::pair{"openblas", GemmBackend::Openblas}}) {
        auto* b = benchmark::RegisterBenchmark((std::string("panel/") + name).c_str(), BM_panel, backend);
        b->Args({512, 256, 2048})->Args({512, 96, 5632})->Args({512, 128, 4096})->Args({512, 48, 11008})->Args({64, 256, 2048});
        b->Unit(benchmark::kMillisecond);
    }
    const TensorType types[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0,   TensorType::Q6_K,
                                TensorType::Q5_K, TensorType::Q4_K, TensorType::Q3_K, TensorType::Q2_K,   TensorType::IQ4_XS,
                                TensorType::Q5_1, TensorType::Q5_0, TensorType::Q4_1, TensorType::Q4_0, TensorType::IQ4_NL, TensorType::MXFP4};
    for (const TensorType type : types)
        benchmark::RegisterBenchmark(("dequantize_panel/" + std::string(traits(type).name)).c_str(), BM_dequantize_panel, type)
            ->Unit(benchmark::kMicrosecond);
    for (const TensorType type : types)
        for (const auto& [name, backend] : {std::pair{"native", GemmBackend::Native}, std::pair{"onednn", GemmBackend::Onednn},
                                            std::pair{"onednn-bf16", GemmBackend::OnednnBf16}, std::pair{"int8", GemmBackend::Int8},
                                            std::pair{"openblas", GemmBackend::Openblas}, std::pair{"amx", GemmBackend::Amx}})
            // The int8 backend runs Q4_0, Q8_0 and Q4_K only, on the avx512 path.
            if ((backend != GemmBackend::Int8 || (simd::q8_gemm_supports(type) &&
                                                   simd::default_kernel_path() == simd::KernelPath::Avx512)) &&
                (backend != GemmBackend::Amx || simd::amx_bf16_available()))
            benchmark::RegisterBenchmark(("matmul/" + std::string(traits(type).name) + "/" + name).c_str(), BM_matmul, type, backend)
                ->RangeMultiplier(2)->Range(1, 512)->Unit(benchmark::kMillisecond)->UseRealTime();
    return 0;
}();

}  // namespace

BENCHMARK_MAIN();
