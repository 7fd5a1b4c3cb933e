// GEMV speed per weight type, kernel path and thread count, in GB/s of weights read, at the shapes of
// a 7B model's layers. Each iteration multiplies the next of several copies of the matrix, together
// larger than the last-level cache, so the figure is the memory-streaming rate decode sees, to set
// beside `rill bench`'s measured read bandwidth.
//   build/bin/bench_gemv --benchmark_filter='Q4_0/4096x4096'   (RILL_KERNELS picks the path)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/interleave.h"
#include "runtime/compute/matmul.h"

namespace {

struct Shape {
    int rows, cols;
};
// A 7B model's layers, then the FFN up/gate of a 3B Llama (3072 wide) and of Qwen3-4B and Gemma-3-4B
// (2560 wide): rows of a narrower model are shorter, so per-row work weighs more. Last, one expert
// of gpt-oss-20b (2880 square) and Qwen3-30B-A3B's expert up and down (768 × 2048, 2048 × 768).
constexpr Shape kShapes[] = {{4096, 4096}, {11008, 4096}, {4096, 11008}, {32000, 4096}, {8192, 3072},
                             {9728, 2560}, {2880, 2880}, {768, 2048}, {2048, 768}};
constexpr size_t kStreamBytes = size_t(256) << 20;  // 8x the 32 MiB L3 this was tuned on

void BM_gemv(benchmark::State& state, rill::TensorType type, Shape shape, int threads) {
    using namespace rill;
    const size_t matrix_bytes = row_bytes(type, size_t(shape.cols)) * size_t(shape.rows);
    // BENCH_CACHED=1 reads one copy over and over from the caches: the kernel's own ceiling, without memory.
    const size_t copies = std::getenv("BENCH_CACHED") != nullptr ? 1 : std::max<size_t>(2, (kStreamBytes + matrix_bytes - 1) / matrix_bytes);
    std::vector<uint8_t> bytes(matrix_bytes * copies);
    // splitmix64, eight bytes a step: hundreds of MB per benchmark would take seconds with mt19937.
    uint64_t seed = 1;
    for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        std::memcpy(&bytes[i], &z, 8);
    }
    std::mt19937 rng(1);
    // Keep any half-float scale read from the bytes finite: mask exponents in quantized blocks.
    if (type != TensorType::F32 && type != TensorType::F16 && type != TensorType::BF16)
        for (auto& b : bytes) b &= 0x3b;
    if (type == TensorType::F32)
        for (size_t i = 3; i < bytes.size(); i += 4) bytes[i] &= 0x3f;
    // MXFP4's scale is a power of two, 2^(e - 127): the mask above would leave some at 2^-127, whose
    // products are subnormal and take the slow path. Trained weights sit near 2^-4.
    if (type == TensorType::MXFP4)
        for (size_t i = 0; i < bytes.size(); i += 17) bytes[i] = uint8_t(118 + bytes[i] % 8);
    std::vector<GgufTensor> tensors(copies);
    std::vector<Weight> weights(copies);
    for (size_t c = 0; c < copies; ++c) {
        GgufTensor& t = tensors[c];
        t.type = type;
        t.n_dims = 2;
        t.ne = {uint64_t(shape.cols), uint64_t(shape.rows), 1, 1};
        t.n_elements = uint64_t(shape.cols) * uint64_t(shape.rows);
        t.n_bytes = matrix_bytes;
        t.data = bytes.data() + c * matrix_bytes;
        weights[c].tensor = &t;
        // As the model loader does: eight-row groups for the types with an interleaved kernel.
        if (can_interleave(type) && std::getenv("BENCH_PLAIN") == nullptr) {
            interleave_rows(type, bytes.data() + c * matrix_bytes, size_t(shape.rows), matrix_bytes / size_t(shape.rows));
            weights[c].interleaved = true;
        }
    }
    std::vector<float> in(size_t(shape.cols)), out(size_t(shape.rows));
    std::normal_distribution<float> normal;
    for (float& x : in) x = normal(rng);
    MatmulScratch scratch(simd::default_kernel_path(), threads, size_t(shape.cols));
    size_t next = 0;
    for (auto _ : state) {
        matmul(weights[next], in.data(), out.data(), 1, scratch);
        benchmark::DoNotOptimize(out.data());
        next = (next + 1) % copies;
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(matrix_bytes));
    state.SetLabel(std::string(simd::kernel_path_name(scratch.path)));
}

}  // namespace

int main(int argc, char** argv) {
    for (const auto& t : rill::all_tensor_types())
        for (const Shape s : kShapes)
            for (const int threads : {1, 2}) {
                const std::string name = "gemv/" + std::string(t.name) + "/" + std::to_string(s.rows) + "x" +
                                         std::to_string(s.cols) + "/t" + std::to_string(threads);
                benchmark::RegisterBenchmark(name.c_str(), BM_gemv, t.type, s, threads)->UseRealTime();
            }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    return 0;
}
