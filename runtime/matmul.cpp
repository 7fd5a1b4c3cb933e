#include "matmul.h"

#include <omp.h>

#include <algorithm>

#include "quant/interleave.h"
#include "simd/dot.h"

namespace rill {
namespace {

// Rows a thread multiplies against every token before moving on, so a block of weights is read
// from memory once and reused from cache for the rest of a prompt's tokens.
constexpr int kRowsPerStep = 16;  // a multiple of kInterleave
// Weights per unit of work handed to a thread: enough to amortise taking it, small enough that
// a dozen or more units balance two threads.
constexpr size_t kChunkBytes = size_t(128) << 10;

void reference_matmul(std::span<const MatmulOutput> outputs, const float* in, int n_tokens, bool parallel, MatmulScratch& s) {
    for (const MatmulOutput& o : outputs) {
        const Weight& w = o.weight;
        const int rows = w.rows(), cols = w.cols();
#pragma omp parallel for num_threads(s.n_threads) schedule(static) if (parallel)
        for (int r = 0; r < rows; ++r) {
            const size_t me = size_t(omp_get_thread_num());
            float* buf = s.rows[me].data();
            const uint8_t* row = w.row(r);
            if (w.interleaved && r < rows / int(kInterleave) * int(kInterleave)) {
                plain_row(w.type(), w.tensor->data, size_t(r), w.tensor->row_bytes(), s.row_bytes[me].data());
                row = s.row_bytes[me].data();
            }
            dequantize_row(w.type(), row, buf, size_t(cols));
            for (int t = 0; t < n_tokens; ++t)
                o.out[size_t(t) * rows + r] = simd::dot(buf, in + size_t(t) * cols, size_t(cols));
        }
    }
}

}  // namespace

MatmulScratch::MatmulScratch(simd::KernelPath path, int n_threads, size_t widest_row)
    : path(path),
      n_threads(n_threads),
      rows(size_t(n_threads), std::vector<float>(path == simd::KernelPath::Reference ? widest_row : 0)),
      row_bytes(size_t(n_threads), std::vector<uint8_t>(path == simd::KernelPath::Reference ? widest_row * sizeof(float) : 0)) {}

void matmul(std::span<const MatmulOutput> outputs, const float* in, int n_tokens, MatmulScratch& s) {
    if (outputs.empty() || n_tokens <= 0) return;
    const size_t cols = size_t(outputs[0].weight.cols());
    size_t work = 0;
    for (const MatmulOutput& o : outputs) work += size_t(o.weight.rows()) * cols * size_t(n_tokens);
    const bool parallel = s.n_threads > 1 && work >= kMinParallelWork;
    if (s.path == simd::KernelPath::Reference) return reference_matmul(outputs, in, n_tokens, parallel, s);

    const simd::GemvKernels& kernels = simd::gemv_kernels(s.path);
    bool needed[3] = {false, false, false};
    for (const MatmulOutput& o : outputs) needed[int(simd::act_format(o.weight.type(), s.path))] = true;
    size_t stride[3];
    for (int f = 0; f < 3; ++f) {
        stride[f] = simd::act_bytes(simd::ActFormat(f), cols);
        // Grows only when a longer chunk arrives; decoding never reallocates.
        if (needed[f] && s.act[f].size() < stride[f] * size_t(n_tokens)) s.act[f].resize(stride[f] * size_t(n_tokens));
    }
    const int n_prepare = 3 * n_tokens;
    s.chunks.clear();
    for (size_t j = 0; j < outputs.size(); ++j) {
        const Weight& w = outputs[j].weight;
        const int rows = w.rows();
        // About kChunkBytes of weights per chunk, in whole steps of kRowsPerStep rows.
        const int step = std::max(1, int(kChunkBytes / w.tensor->row_bytes()) / kRowsPerStep) * kRowsPerStep;
        // Interleaved groups, then the rows after the last group, which keep ggml's layout.
        const int grouped = w.interleaved ? rows / int(kInterleave) * int(kInterleave) : 0;
        for (int r = 0; r < grouped; r += step) s.chunks.push_back({uint32_t(j), true, r, std::min(step, grouped - r)});
        for (int r = grouped; r < rows; r += step) s.chunks.push_back({uint32_t(j), false, r, std::min(step, rows - r)});
    }

#pragma omp parallel num_threads(s.n_threads) if (parallel)
    {
#pragma omp for schedule(static)
        for (int i = 0; i < n_prepare; ++i) {
            const int f = i / n_tokens, t = i % n_tokens;
            if (needed[f])
                kernels.prepare(simd::ActFormat(f), in + size_t(t) * cols, cols, s.act[size_t(f)].data() + size_t(t) * stride[f]);
        }
        // Chunks go to whichever thread is free: on a shared machine a thread that loses its core
        // for a moment no longer holds up the other at the barrier. A row's value depends only on
        // the kernel that computes it, and that is fixed per row, not per thread.
#pragma omp for schedule(dynamic, 1)
        for (size_t c = 0; c < s.chunks.size(); ++c) {
            const RowChunk& chunk = s.chunks[c];
            const MatmulOutput& o = outputs[chunk.output];
            const Weight& w = o.weight;
            const size_t rows = size_t(w.rows()), row_stride = w.tensor->row_bytes();
            const int f = int(simd::act_format(w.type(), s.path));
            const uint8_t* act = s.act[size_t(f)].data();
            const simd::DotGroupsFn dot_groups = chunk.grouped ? kernels.dot_groups(w.type()) : nullptr;
            const simd::DotRowsFn dot_rows = chunk.grouped ? nullptr : kernels.dot_rows(w.type());
            for (int r = chunk.first; r < chunk.first + chunk.count; r += kRowsPerStep) {
                const int n = std::min(kRowsPerStep, chunk.first + chunk.count - r);
                for (int t = 0; t < n_tokens; ++t) {
                    float* out = o.out + size_t(t) * rows + size_t(r);
                    const uint8_t* x = act + size_t(t) * stride[f];
                    if (dot_groups)
                        dot_groups(w.tensor->data + size_t(r) * row_stride, size_t(n) / kInterleave, cols, x, out);
                    else
                        dot_rows(w.row(r), row_stride, size_t(n), cols, x, out);
                }
            }
        }
    }
}

}  // namespace rill
