// The decode kernels' own rate: GB/s of weights one thread multiplies with the matrix in L2, called
// directly (no matmul set-up, no thread team, no memory), per kernel path this CPU runs. Set beside one
// core's share of memory bandwidth it says whether a kernel can keep up with memory, and by how much;
// on a host that shares a core's sibling thread with other work, run it a few times.
//   build/bin/kernel_rate            every supported path
//   build/bin/kernel_rate avx2       one path
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "quant/interleave.h"
#include "quant/tensor_type.h"
#include "simd/gemv.h"

namespace {

using namespace rill;

constexpr size_t kCols = 2048;
constexpr size_t kMatrixBytes = size_t(256) << 10;  // well inside a 1 MiB L2, well past a 48 KiB L1
constexpr int kCalls = 200, kRounds = 15;

double gigabytes_per_second(const simd::GemvKernels& k, TensorType type) {
    const size_t stride = row_bytes(type, kCols);
    const size_t rows = std::max<size_t>(8, kMatrixBytes / stride / 8 * 8);
    std::vector<uint8_t> weights(rows * stride);
    // Bytes whose half-float scales stay finite and ordinary (the top bits of every byte cleared).
    uint64_t state = 1;
    for (uint8_t& b : weights) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        b = uint8_t(state >> 56) & 0x3b;
    }
    const bool grouped = can_interleave(type) && k.dot_groups(type) != nullptr;
    if (grouped) interleave_rows(type, weights.data(), rows, stride);
    std::vector<float> x(kCols);
    for (size_t i = 0; i < kCols; ++i) x[i] = float(int(i * 37 % 19) - 9) / 9.0f;
    const simd::ActFormat format = simd::act_format(type, k.path);
    std::vector<uint8_t> act(simd::act_bytes(format, kCols));
    k.prepare(format, x.data(), kCols, act.data());
    std::vector<float> out(rows);
    double best = 1e30;
    for (int round = 0; round < kRounds; ++round) {
        const auto start = std::chrono::steady_clock::now();
        for (int call = 0; call < kCalls; ++call) {
            if (grouped) k.dot_groups(type)(weights.data(), rows / 8, kCols, act.data(), out.data());
            else k.dot_rows(type)(weights.data(), stride, rows, kCols, act.data(), out.data());
        }
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return double(weights.size()) * kCalls / best / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<simd::KernelPath> paths;
    if (argc > 1) {
        const auto path = simd::parse_kernel_path(argv[1]);
        if (!path || !simd::cpu_supports(*path) || *path == simd::KernelPath::Reference) {
            std::fprintf(stderr, "kernel_rate: '%s' is not an integer kernel path this CPU runs\n", argv[1]);
            return 2;
        }
        paths.push_back(*path);
    } else {
        for (const simd::KernelPath p : simd::supported_kernel_paths())
            if (p != simd::KernelPath::Reference) paths.push_back(p);
    }
    const TensorType types[] = {TensorType::F16, TensorType::BF16, TensorType::Q4_0, TensorType::Q8_0,
                                TensorType::Q4_K, TensorType::Q6_K, TensorType::MXFP4};
    std::printf("%-8s", "path");
    for (const TensorType t : types) std::printf(" %7s", std::string(traits(t).name).c_str());
    std::printf("   (GB/s of weights, one thread, matrix in L2)\n");
    for (const simd::KernelPath p : paths) {
        std::printf("%-8s", std::string(simd::kernel_path_name(p)).c_str());
        for (const TensorType t : types) std::printf(" %7.1f", gigabytes_per_second(simd::gemv_kernels(p), t));
        std::printf("\n");
    }
    return 0;
}
