// Matrix times activations for the forward pass: every weight type, on the kernel path chosen at
// run time, on a team of threads. Several weights that read the same input (Q, K and V; gate and
// up) are multiplied in one pass, so the input is prepared once and the team meets once.
#pragma once
#include <span>
#include <vector>

#include "model.h"
#include "simd/gemv.h"

namespace rill {

// Multiply-adds below which a loop runs on the calling thread alone: under it a parallel region
// costs more than it saves, and on a loaded machine a descheduled team member stalls everyone.
inline constexpr size_t kMinParallelWork = size_t(1) << 18;

// Rows [first, first + count) of one output, interleaved groups or ggml-layout rows.
struct RowChunk {
    uint32_t output;
    bool grouped;
    int first, count;
};

// Buffers reused across calls, so decoding allocates nothing per token.
struct MatmulScratch {
    simd::KernelPath path = simd::KernelPath::Reference;
    int n_threads = 1;
    std::vector<std::vector<float>> rows;        // reference path: one dequantized weight row per thread
    std::vector<std::vector<uint8_t>> row_bytes;  // reference path: an interleaved row put back in order
    std::vector<uint8_t> act[3];           // prepared activations, [tokens][bytes], per ActFormat
    std::vector<RowChunk> chunks;          // this call's units of work; keeps its capacity

    MatmulScratch() = default;
    MatmulScratch(simd::KernelPath path, int n_threads, size_t widest_row);
};

// One weight and where its products go: out[t][r] for t < n_tokens, r < weight.rows().
struct MatmulOutput {
    const Weight& weight;
    float* out;
};

// out[t][r] = (row r of W) · in[t] for each output's W; every W has in's width `cols`.
// Each thread takes a contiguous range of every W's rows and each row is reduced by one thread in
// a fixed order, so results are the same for any thread count.
void matmul(std::span<const MatmulOutput> outputs, const float* in, int n_tokens, MatmulScratch& scratch);

inline void matmul(const Weight& w, const float* in, float* out, int n_tokens, MatmulScratch& scratch) {
    const MatmulOutput one[] = {{w, out}};
    matmul(one, in, n_tokens, scratch);
}

}  // namespace rill
