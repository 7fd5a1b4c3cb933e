#include "matmul.h"

#include <omp.h>

#include <algorithm>

#include "quant/interleave.h"
#include "simd/dot.h"

namespace rill {
namespace {

// Rows a thread multiplies against every token before moving on, so a block of weights is read
// from memory once and reused from cache for the rest of a prompt's tokens.
constexpr int kRowsPerStep = 16;

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

#pragma omp parallel num_threads(s.n_threads) if (parallel)
    {
#pragma omp for schedule(static)
        for (int i = 0; i < n_prepare; ++i) {
            const int f = i / n_tokens, t = i % n_tokens;
            if (needed[f])
                kernels.prepare(simd::ActFormat(f), in + size_t(t) * cols, cols, s.act[size_t(f)].data() + size_t(t) * stride[f]);
        }
        const int team = omp_get_num_threads(), me = omp_get_thread_num();
        for (const MatmulOutput& o : outputs) {
            const Weight& w = o.weight;
            const int rows = w.rows();
            const int f = int(simd::act_format(w.type(), s.path));
            const uint8_t* act = s.act[size_t(f)].data();
            const simd::DotRowsFn dot_rows = kernels.dot_rows(w.type());
            const size_t row_stride = w.tensor->row_bytes();
            int first = int(int64_t(rows) * me / team), last = int(int64_t(rows) * (me + 1) / team);
            if (w.interleaved) {
                // Whole groups of eight per thread; the rows after the last group, in ggml's layout,
                // always go to the last thread, so each row meets the same kernel for any team size.
                const simd::DotGroupsFn dot_groups = kernels.dot_groups(w.type());
                const int groups = rows / int(kInterleave);
                const int g_first = int(int64_t(groups) * me / team), g_last = int(int64_t(groups) * (me + 1) / team);
                const size_t group_bytes = kInterleave * row_stride;
                for (int g = g_first; g < g_last; g += kRowsPerStep / int(kInterleave)) {
                    const int n = std::min(kRowsPerStep / int(kInterleave), g_last - g);
                    for (int t = 0; t < n_tokens; ++t)
                        dot_groups(w.tensor->data + size_t(g) * group_bytes, size_t(n), cols, act + size_t(t) * stride[f],
                                   o.out + size_t(t) * size_t(rows) + size_t(g) * kInterleave);
                }
                first = me == team - 1 ? groups * int(kInterleave) : rows;
                last = rows;
            }
            for (int r = first; r < last; r += kRowsPerStep) {
                const int n = std::min(kRowsPerStep, last - r);
                for (int t = 0; t < n_tokens; ++t)
                    dot_rows(w.row(r), row_stride, size_t(n), cols, act + size_t(t) * stride[f],
                             o.out + size_t(t) * size_t(rows) + size_t(r));
            }
        }
    }
}

}  // namespace rill
