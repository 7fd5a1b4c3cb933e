// Scalar reference dequantization speed per tensor type, in GB/s of quantized input, on one row of
// 4096 × 4096 weights' worth of blocks. The SIMD kernels' microbenchmarks join these.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "quant/tensor_type.h"

namespace {

void BM_dequantize(benchmark::State& state, rill::TensorType type) {
    constexpr size_t kElements = 4096 * 64;  // a 1 MiB-ish slab: stays in L2, measures the code, not memory
    const size_t bytes = rill::row_bytes(type, kElements);
    std::vector<uint8_t> blocks(bytes);
    std::mt19937 rng(1);
    for (auto& b : blocks) b = uint8_t(rng());
    // Mask every byte so any half-float scale read from it has a finite exponent.
    if (type != rill::TensorType::F32 && type != rill::TensorType::F16 && type != rill::TensorType::BF16)
        for (auto& b : blocks) b &= 0x3b;
    std::vector<float> out(kElements);
    for (auto _ : state) {
        rill::dequantize_row(type, blocks.data(), out.data(), kElements);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
}

}  // namespace

int main(int argc, char** argv) {
    for (const auto& t : rill::all_tensor_types())
        benchmark::RegisterBenchmark(("dequantize/" + std::string(t.name)).c_str(), BM_dequantize, t.type);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    return 0;
}
