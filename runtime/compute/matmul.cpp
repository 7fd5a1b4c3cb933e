#include "runtime/compute/matmul.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <optional>

#include "quant/interleave.h"
#include "runtime/base/error.h"
#include "simd/convert.h"
#include "simd/dot.h"
#include "simd/gemm_amx.h"
#include "simd/gemm_q8.h"

namespace rill {
namespace {

// Rows a thread multiplies against every token before moving on, so a block of weights is read
// from memory once and reused from cache for the rest of a prompt's tokens.
constexpr int kRowsPerStep = 16;  // a multiple of kInterleave
// Weights per unit of work handed to a thread: enough to amortise taking it, small enough that
// a dozen or more units balance two threads.
constexpr size_t kChunkBytes = size_t(128) << 10;
// Up to this many tokens a product is bound by reading its weights, not by arithmetic.
constexpr int kStreamingTokens = 8;

void reference_matmul(std::span<const MatmulTask> tasks, bool parallel, MatmulScratch& s) {
    for (const MatmulTask& task : tasks) {
        const Weight& w = task.weight;
        const int rows = w.rows(), cols = w.cols();
        if (s.rows[0].size() < size_t(cols))
            for (int t = 0; t < s.n_threads; ++t) {
                s.rows[size_t(t)].resize(size_t(cols));
                s.row_bytes[size_t(t)].resize(size_t(cols) * sizeof(float));
            }
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
            for (int t = 0; t < task.n_tokens; ++t)
                task.out[size_t(t) * rows + r] = simd::dot(buf, task.in + size_t(t) * cols, size_t(cols));
        }
    }
}

// Rows [first, first + count) of a weight as float32, count rows of cols. Interleaved groups are
// put back in ggml's order one group at a time first.
void dequantize_panel(const Weight& w, int first, int count, float* out, uint8_t* group_bytes) {
    const size_t cols = size_t(w.cols()), row_stride = w.tensor->row_bytes();
    const int grouped = w.interleaved ? w.rows() / int(kInterleave) * int(kInterleave) : 0;
    for (int r = first; r < first + count; ++r) {
        float* dst = out + size_t(r - first) * cols;
        if (r >= grouped) {
            simd::dequantize_row(w.type(), w.row(r), dst, cols);
            continue;
        }
        const size_t lane = size_t(r) % kInterleave;
        if (lane == 0 || r == first)
            for (size_t i = 0; i < kInterleave; ++i)
                plain_row(w.type(), w.tensor->data, size_t(r) - lane + i, row_stride, group_bytes + i * row_stride);
        simd::dequantize_row(w.type(), group_bytes + lane * row_stride, dst, cols);
    }
}

// An AMX tile loads whole 64-byte rows, and a row that straddles two cache lines costs both: packed
// tiles at a vector's own 16-byte alignment ran 0.75-0.8x as fast as at 64 (Xeon family 6 model 207,
// one thread, 512 x 2048 panel, alternating). The bf16, amx and int8 panels carry this much slack to
// start on a line (the int8 kernel's 64-byte vector loads straddle lines the same way).
constexpr size_t kAlignSlack = 64;
template <class T>
T* aligned64(std::vector<T>& v) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
    return reinterpret_cast<T*>((p + 63) & ~uintptr_t(63));
}

// The batch in bfloat16, converted once per call and shared by every panel (a team of threads splits
// the tokens). Called inside the team's region; act_bf16 is sized before it.
void activations_to_bf16(const float* in, int n_tokens, int cols, MatmulScratch& s) {
#pragma omp for schedule(static)
    for (int t = 0; t < n_tokens; ++t)
        simd::f32_to_bf16_row(in + size_t(t) * size_t(cols), aligned64(s.act_bf16) + size_t(t) * size_t(cols), size_t(cols));
}

// Rows [first, first + count) of a weight as bfloat16: a group of rows at a time is dequantized to
// float32 in a small buffer that stays in cache, then rounded. BF16 weights need no work at all.
const uint16_t* bf16_panel(const Weight& w, int first, int count, int me, MatmulScratch& s) {
    if (w.type() == TensorType::BF16 && !w.interleaved) return reinterpret_cast<const uint16_t*>(w.row(first));
    const size_t cols = size_t(w.cols());
    uint16_t* out = aligned64(s.panels_bf16[size_t(me)]);
    float* buf = s.panels[size_t(me)].data();
    for (int r = first; r < first + count; r += int(kInterleave)) {
        const int n = std::min(int(kInterleave), first + count - r);
        const float* rows = buf;
        if (w.type() == TensorType::F32) rows = reinterpret_cast<const float*>(w.row(r));
        else dequantize_panel(w, r, n, buf, s.group_bytes[size_t(me)].data());
        simd::f32_to_bf16_row(rows, out + size_t(r - first) * cols, size_t(n) * cols);
    }
    return out;
}

// Rows [first, first + count) of a weight packed into AMX tiles of bfloat16: dequantized a group of rows
// at a time into the float32 buffer and rounded straight into their tiles. BF16 weights are only
// packed.
const uint16_t* amx_panel(const Weight& w, int first, int count, int me, MatmulScratch& s) {
    const size_t cols = size_t(w.cols());
    uint16_t* out = aligned64(s.panels_amx[size_t(me)]);
    if (w.type() == TensorType::BF16) {
        simd::amx_pack_weights(bf16_panel(w, first, count, me, s), cols, count, cols, out);
        return out;
    }
    float* buf = s.panels[size_t(me)].data();
    const int grouped = w.interleaved && simd::amx_packs_groups(w.type()) ? w.rows() / int(kInterleave) * int(kInterleave) : 0;
    for (int r = first; r < first + count; r += int(kInterleave)) {
        const int n = std::min(int(kInterleave), first + count - r);
        // A whole interleaved Q4_0 or Q8_0 group is read as it lies: no putting it back in order, no
        // float32 rows in between (both were a tenth of a Q4_0 prompt on the amx backend).
        if (r + int(kInterleave) <= grouped && n == int(kInterleave) && r % int(kInterleave) == 0) {
            simd::amx_pack_group(w.type(), w.tensor->data + size_t(r) * w.tensor->row_bytes(), r - first, count, cols, out);
            continue;
        }
        const float* rows = buf;
        if (w.type() == TensorType::F32) rows = reinterpret_cast<const float*>(w.row(r));
        else dequantize_panel(w, r, n, buf, s.group_bytes[size_t(me)].data());
        simd::amx_pack_weights_f32(rows, r - first, n, count, cols, out);
    }
    return out;
}

// The batch against each weight, a panel of rows at a time: a thread dequantizes the panel into its
// scratch and multiplies the whole batch by it with the GEMM backend, on that thread alone.
void gemm_matmul(std::span<const MatmulOutput> outputs, const float* in, int n_tokens, GemmBackend backend, MatmulScratch& s) {
    // The amx kernel takes whole tiles of 32 columns; a weight narrower or ragged (none in the files
    // seen) goes to oneDNN's bf16 matmul, the same precision, or its float32 one.
    if (backend == GemmBackend::Amx && outputs[0].weight.cols() % int(simd::kAmxCols) != 0)
        backend = s.onednn_bf16 ? GemmBackend::OnednnBf16 : GemmBackend::Onednn;
    const bool amx = backend == GemmBackend::Amx;
    const bool bf16 = backend == GemmBackend::OnednnBf16 || amx;
    for (const MatmulOutput& o : outputs) {
        const Weight& w = o.weight;
        const size_t cols = size_t(w.cols());
        // bf16 panels are dequantized kInterleave rows at a time through the float scratch.
        const size_t panel = bf16 ? kInterleave * cols : size_t(panel_rows(w.cols())) * cols;
        const size_t group = kInterleave * w.tensor->row_bytes();
        // The amx backend needs a bfloat16 panel only to pack BF16 weights from.
        const size_t panel_bf16 = bf16 && (!amx || w.type() == TensorType::BF16) ? size_t(panel_rows(w.cols(), backend)) * cols : 0;
        // Grown to the widest weight seen; panels fill lazily, so a session that only decodes never
        // pays for them.
        for (int t = 0; t < s.n_threads; ++t) {
            if (s.panels[size_t(t)].size() < panel) s.panels[size_t(t)].resize(panel);
            if (s.group_bytes[size_t(t)].size() < group) s.group_bytes[size_t(t)].resize(group);
            if (s.panels_bf16[size_t(t)].size() < panel_bf16 + kAlignSlack) s.panels_bf16[size_t(t)].resize(panel_bf16 + kAlignSlack);
            if (!amx) continue;
            const int rows = panel_rows(w.cols(), backend);
            const size_t packed = simd::amx_packed_weight_elements(rows, cols), sums = simd::amx_acc_elements(rows, n_tokens);
            if (s.panels_amx[size_t(t)].size() < packed + kAlignSlack) s.panels_amx[size_t(t)].resize(packed + kAlignSlack);
            if (s.sums_amx[size_t(t)].size() < sums + kAlignSlack) s.sums_amx[size_t(t)].resize(sums + kAlignSlack);
        }
    }
    const size_t cols = size_t(outputs[0].weight.cols()), act = size_t(n_tokens) * cols;
    if (bf16 && s.act_bf16.size() < act + kAlignSlack) s.act_bf16.resize(act + kAlignSlack);
    if (amx && s.act_amx.size() < simd::amx_packed_act_elements(n_tokens, cols) + kAlignSlack)
        s.act_amx.resize(simd::amx_packed_act_elements(n_tokens, cols) + kAlignSlack);
    s.chunks.clear();
    for (size_t j = 0; j < outputs.size(); ++j) {
        const Weight& w = outputs[j].weight;
        const int rows = w.rows(), step = panel_rows(w.cols(), backend);
        for (int r = 0; r < rows; r += step) s.chunks.push_back({uint32_t(j), false, r, std::min(step, rows - r)});
    }
    // An exception must not leave a parallel region; the first one is kept and rethrown after it.
    std::exception_ptr failure;
#pragma omp parallel num_threads(s.n_threads)
    {
        const int me = omp_get_thread_num();
        if (bf16) activations_to_bf16(in, n_tokens, outputs[0].weight.cols(), s);
        if (amx) {
            // The rounded batch is complete only after the loop's barrier; then its tiles are packed.
#pragma omp for schedule(static)
            for (int b = 0; b < simd::amx_act_blocks(n_tokens); ++b) simd::amx_pack_act(aligned64(s.act_bf16), n_tokens, b, cols, aligned64(s.act_amx));
        }
        // The libraries size their own teams from omp_get_max_threads() unless they see an active
        // parallel region, and a team of one is not active: this task's setting keeps them on this
        // thread, so a panel's result is the same with one thread as with many. It ends with the region.
        omp_set_num_threads(1);
#pragma omp for schedule(dynamic, 1)
        for (size_t c = 0; c < s.chunks.size(); ++c) {
            const RowChunk& chunk = s.chunks[c];
            const MatmulOutput& o = outputs[chunk.output];
            const Weight& w = o.weight;
            const GemmShape shape{n_tokens, chunk.count, w.cols(), w.rows()};
            try {
                if (amx) {
                    const uint16_t* panel = amx_panel(w, chunk.first, chunk.count, me, s);
                    simd::amx_gemm_bf16(panel, chunk.count, aligned64(s.act_amx), n_tokens, size_t(w.cols()), aligned64(s.sums_amx[size_t(me)]),
                                        o.out + chunk.first, size_t(w.rows()));
                    continue;
                }
                if (bf16) {
                    const uint16_t* panel = bf16_panel(w, chunk.first, chunk.count, me, s);
                    onednn_gemm_bf16(*s.onednn, me, shape, aligned64(s.act_bf16), panel, o.out + chunk.first);
                    continue;
                }
                const float* panel = nullptr;
                if (w.type() == TensorType::F32) {
                    panel = reinterpret_cast<const float*>(w.row(chunk.first));
                } else {
                    dequantize_panel(w, chunk.first, chunk.count, s.panels[size_t(me)].data(), s.group_bytes[size_t(me)].data());
                    panel = s.panels[size_t(me)].data();
                }
                if (backend == GemmBackend::Onednn)
                    onednn_gemm(*s.onednn, me, shape, in, panel, o.out + chunk.first);
                else
                    openblas_gemm(shape, in, panel, o.out + chunk.first);
            } catch (...) {
#pragma omp critical(rill_gemm_failure)
                if (!failure) failure = std::current_exception();
            }
        }
    }
    if (failure) std::rethrow_exception(failure);
}

// The batch against Q4_0, Q8_0 and Q4_K weights on the int8 GEMM: the batch is quantized to 8-bit blocks
// once (a team of threads splits the tokens), then each thread repacks a panel of rows into its
// scratch and multiplies every token by it.
void int8_matmul(std::span<const MatmulOutput> outputs, const float* in, int n_tokens, MatmulScratch& s) {
    const simd::Q8GemmFn kernel = simd::q8_gemm_kernel(s.path);
    const simd::GemvKernels& kernels = simd::gemv_kernels(s.path);
    const size_t cols = size_t(outputs[0].weight.cols());
    const size_t stride = simd::act_bytes(simd::ActFormat::Q8x32, cols);
    if (s.act_q8.size() < stride * size_t(n_tokens)) s.act_q8.resize(stride * size_t(n_tokens));
    s.chunks.clear();
    size_t panel = 0, group = 0;
    for (size_t j = 0; j < outputs.size(); ++j) {
        const Weight& w = outputs[j].weight;
        const int rows = w.rows(), step = panel_rows(w.cols(), GemmBackend::Int8);
        panel = std::max(panel, simd::q8_panel_bytes(size_t(step), cols));
        group = std::max(group, size_t(step) * w.tensor->row_bytes());
        for (int r = 0; r < rows; r += step) s.chunks.push_back({uint32_t(j), false, r, std::min(step, rows - r)});
    }
    for (int t = 0; t < s.n_threads; ++t) {
        if (s.panels_q8[size_t(t)].size() < panel + kAlignSlack) s.panels_q8[size_t(t)].resize(panel + kAlignSlack);
        if (s.group_bytes[size_t(t)].size() < group) s.group_bytes[size_t(t)].resize(group);
    }
#pragma omp parallel num_threads(s.n_threads)
    {
        const size_t me = size_t(omp_get_thread_num());
#pragma omp for schedule(static)
        for (int t = 0; t < n_tokens; ++t) kernels.quantize_q8x32(in + size_t(t) * cols, cols, s.act_q8.data() + size_t(t) * stride);
        std::vector<const uint8_t*> rows;
#pragma omp for schedule(dynamic, 1)
        for (size_t c = 0; c < s.chunks.size(); ++c) {
            const RowChunk& chunk = s.chunks[c];
            const MatmulOutput& o = outputs[chunk.output];
            const Weight& w = o.weight;
            const size_t row_stride = w.tensor->row_bytes();
            const int grouped = w.interleaved ? w.rows() / int(kInterleave) * int(kInterleave) : 0;
            // Interleaved groups are put back in ggml's order first, row by row.
            rows.resize(size_t(chunk.count));
            for (int i = 0; i < chunk.count; ++i) {
                const int r = chunk.first + i;
                if (r >= grouped) {
                    rows[size_t(i)] = w.row(r);
                    continue;
                }
                uint8_t* dst = s.group_bytes[me].data() + size_t(i) * row_stride;
                plain_row(w.type(), w.tensor->data, size_t(r), row_stride, dst);
                rows[size_t(i)] = dst;
            }
            simd::pack_q8_panel(w.type(), rows.data(), size_t(chunk.count), cols, aligned64(s.panels_q8[me]));
            kernel(aligned64(s.panels_q8[me]), size_t(chunk.count), cols, simd::q8_zero_point(w.type()), simd::q8_has_mins(w.type()),
                   s.act_q8.data(), stride, n_tokens,
                   o.out + chunk.first, size_t(w.rows()));
        }
    }
}

}  // namespace

int panel_rows(int cols, GemmBackend backend) {
    if (backend == GemmBackend::Int8) {
        const size_t block = simd::q8_panel_bytes(size_t(simd::kQ8PanelRows), size_t(std::max(cols, 32)));
        return int(std::max<size_t>(1, kQ8PanelBytes / block)) * simd::kQ8PanelRows;
    }
    const size_t value = backend == GemmBackend::OnednnBf16 || backend == GemmBackend::Amx ? sizeof(uint16_t) : sizeof(float);
    const size_t fit = kPanelBytes / (size_t(std::max(cols, 1)) * value);
    return int(std::max<size_t>(16, fit / 16 * 16));
}

size_t gemm_scratch_bytes(const Model& model, int n_threads) {
    const Hparams& hp = model.hp;
    // Each backend's panel grows to the widest weight it has seen and stays, so a session that has
    // used all three keeps all three: float32, bfloat16 (plus its eight-row float32 staging), int8.
    size_t f32 = 0, bf16 = 0, q8 = 0;
    for (const int cols : {hp.n_embd, hp.n_ff, hp.q_dim()}) {
        const size_t c = size_t(cols);
        f32 = std::max(f32, size_t(panel_rows(cols)) * c * sizeof(float));
        // Where the amx backend runs, its tiles may stand beside a bfloat16 panel (BF16 weights).
        bf16 = std::max(bf16, size_t(panel_rows(cols, GemmBackend::OnednnBf16)) * c * sizeof(uint16_t) * (simd::amx_bf16_available() ? 2 : 1) +
                                  kInterleave * c * sizeof(float));
        q8 = std::max(q8, simd::q8_panel_bytes(size_t(panel_rows(cols, GemmBackend::Int8)), c / 32 * 32));
    }
    return (f32 + bf16 + q8) * size_t(n_threads);
}

size_t gemm_batch_bytes(const Model& model, int n_batch) {
    const Hparams& hp = model.hp;
    const size_t widest = size_t(std::max({hp.n_embd, hp.n_ff, hp.q_dim()}));
    return size_t(n_batch) * (widest * sizeof(uint16_t) + simd::act_bytes(simd::ActFormat::Q8x32, widest / 32 * 32));
}

MatmulScratch::MatmulScratch(simd::KernelPath path, int n_threads, size_t widest_row, GemmBackend gemm)
    : path(path),
      n_threads(n_threads),
      gemm(gemm),
      rows(size_t(n_threads), std::vector<float>(path == simd::KernelPath::Reference ? widest_row : 0)),
      row_bytes(size_t(n_threads), std::vector<uint8_t>(path == simd::KernelPath::Reference ? widest_row * sizeof(float) : 0)) {
    if (gemm == GemmBackend::Native) return;
    if (gemm == GemmBackend::Int8 && simd::q8_gemm_kernel(path) == nullptr)
        throw Error("--gemm int8 needs AVX-512 VNNI (the avx512 kernel path); this run uses the " +
                    std::string(simd::kernel_path_name(path)) + " path");
    if (gemm == GemmBackend::Amx && !gemm_runs_here(gemm, TensorType::F32, path, false))
        throw Error("--gemm amx needs AMX tiles with bfloat16 products (Intel Xeon from Sapphire Rapids) and the avx512 kernel "
                    "path; this run uses the " + std::string(simd::kernel_path_name(path)) + " path" +
                    (simd::amx_bf16_available() ? "" : " on a CPU or OS without them"));
    // Auto may send prompt batches to oneDNN (choose_gemm, or a calibration that measured it fastest);
    // wherever the scratch has oneDNN, a prompt's attention runs on its float32 matmul too (session.cpp).
    if (gemm != GemmBackend::Openblas) onednn = make_onednn_gemm(n_threads);
    onednn_bf16 = onednn && onednn_has_bf16(*onednn);
    panels.resize(size_t(n_threads));
    panels_bf16.resize(size_t(n_threads));
    panels_amx.resize(size_t(n_threads));
    sums_amx.resize(size_t(n_threads));
    panels_q8.resize(size_t(n_threads));
    group_bytes.resize(size_t(n_threads));
}

bool gemm_runs_here(GemmBackend backend, TensorType type, simd::KernelPath path, bool bf16) {
    switch (backend) {
        case GemmBackend::Auto: return false;
        case GemmBackend::OnednnBf16: return bf16;
        case GemmBackend::Amx: return path == simd::KernelPath::Avx512 && simd::amx_bf16_available();
        case GemmBackend::Int8: return simd::q8_gemm_supports(type) && simd::q8_gemm_kernel(path) != nullptr;
        default: return true;
    }
}

GemmBackend choose_gemm(GemmBackend requested, TensorType type, int n_tokens, int min_tokens, simd::KernelPath path, bool bf16,
                        const GemmTable* table) {
    if (requested == GemmBackend::Native || n_tokens < min_tokens) return GemmBackend::Native;
    if (requested == GemmBackend::Int8) return simd::q8_gemm_supports(type) ? requested : GemmBackend::Native;
    if (requested != GemmBackend::Auto) return requested;
    if (table != nullptr)
        if (const auto measured = table->choice(type, n_tokens); measured && gemm_runs_here(*measured, type, path, bf16)) return *measured;
    // The avx512 path implies AVX-512 BF16, where oneDNN's bf16 matmul runs at twice its float32 rate:
    // on a Zen 5 (2 threads, tinyllama pp512) Q4_0 216 t/s against 135-144 on the int8 kernels, Q4_K_M
    // 236 against 85, Q8_0 233 against 73, F16 206 against 79. Short batches do not amortise rounding
    // the panels: at 32 tokens the int8 kernels win (Q4_0 116 against 70 t/s), at 64 Q4_0 is level
    // (141 against 133), so Q4_0 goes from 128. MXFP4 stays on its kernels: its experts see a few
    // dozen routed tokens each, and dequantizing a whole expert for them costs more than the product.
    // Q4_0, Q8_0 and Q4_K go further on the int8 GEMM (VNNI byte products against 8-bit activations):
    // bench_gemm, 2048-square weight, 2 threads, Zen 5, at 512 tokens Q4_0 862 GOP/s against bf16's 516
    // and the kernels' 287, Q8_0 878 against 488 and 196, Q4_K 740-789 against 580 and 190-200.
    // Repacking a panel costs about 0.3 ms per 4M weights, so short batches stay on the kernels: Q4_0
    // wins from 64 tokens (394 against 272; at 32 it loses, 203 against 299), Q8_0 from 32 (243
    // against 191), Q4_K from 32 (263-273 against 199-218).
    if (path == simd::KernelPath::Avx512 && gemm_runs_here(GemmBackend::Int8, type, path, bf16))
        return n_tokens >= std::max(type == TensorType::Q4_0 ? 64 : 32, min_tokens) ? GemmBackend::Int8 : GemmBackend::Native;
    if (path == simd::KernelPath::Avx512 && bf16 && type != TensorType::MXFP4) {
        const int from = std::max(type == TensorType::Q4_0 ? 128 : 64, min_tokens);
        if (n_tokens >= from) return GemmBackend::OnednnBf16;
        if (can_interleave(type)) return GemmBackend::Native;
    }
    // With VNNI the interleaved types' int8 group kernels beat dequantized float32 panels on OpenBLAS
    // at every batch size bench_gemm measured on a Zen 5, 32 to 512 tokens of a 2048-square weight: at
    // 512, Q8_0 134 against 102 GFLOP/s, Q4_K 139 against 102, Q6_K 185 against 100.
    if (path == simd::KernelPath::Avx512 && can_interleave(type)) return GemmBackend::Native;
    // The batch size from which OpenBLAS beat the decode kernels in bench_gemm (2 threads, AVX2):
    // float weights need no dequantizing; the quantized ones need enough tokens to amortise it.
    int from = 64;
    switch (type) {
        case TensorType::F32: case TensorType::F16: case TensorType::BF16: from = 16; break;
        case TensorType::Q2_K: from = 128; break;
        // Q4_0's int8 kernels beat float GEMM at every batch size measured, up to 512 tokens. So do
        // MXFP4's (gpt-oss-20b's prompt: 36 t/s native, 10 t/s with its experts on OpenBLAS, Zen 5),
        // where dequantizing a whole expert for its few dozen routed tokens costs more than the product,
        // and, with their four-token kernels, Q4_K's and Q6_K's (AMD EPYC Zen 3, AVX2, 2 threads: Q4_K
        // 136/111/108 against 35/79/103 GFLOP/s at 32/128/512 tokens, Q6_K 125/117/134 against 46/89/136),
        // and Q8_0's (100-139/127/138-144 against 66-73/112-118/131-132 at 64/256/512, same machine; level
        // with OpenBLAS over a whole tinyllama prompt of 512).
        case TensorType::Q4_0: case TensorType::MXFP4: case TensorType::Q4_K: case TensorType::Q6_K:
        case TensorType::Q8_0: return GemmBackend::Native;
        default: break;
    }
    return n_tokens >= std::max(from, min_tokens) ? GemmBackend::Openblas : GemmBackend::Native;
}

namespace {

// The decode kernels over tasks: each task's inputs prepared once (tasks that read the same rows
// share them), then rows in chunks, each chunk against every token of its task, in one parallel region.
void native_matmul(std::span<const MatmulTask> tasks, MatmulScratch& s) {
    size_t work = 0;
    for (const MatmulTask& task : tasks) work += size_t(task.weight.rows()) * size_t(task.weight.cols()) * size_t(task.n_tokens);
    const bool parallel = s.n_threads > 1 && work >= kMinParallelWork;
    if (s.path == simd::KernelPath::Reference) return reference_matmul(tasks, parallel, s);
    const bool streaming = std::all_of(tasks.begin(), tasks.end(), [](const MatmulTask& t) { return t.n_tokens <= kStreamingTokens; });

    const simd::GemvKernels& kernels = simd::gemv_kernels(s.path);
    // One input per distinct (rows, count, width), with where its prepared form starts in each format.
    s.inputs.clear();
    s.task_input.clear();
    size_t used[3] = {0, 0, 0};
    for (const MatmulTask& task : tasks) {
        const size_t cols = size_t(task.weight.cols());
        const int f = int(simd::act_format(task.weight.type(), s.path));
        size_t i = 0;
        while (i < s.inputs.size() && !(s.inputs[i].in == task.in && s.inputs[i].n_tokens == task.n_tokens && s.inputs[i].cols == cols)) ++i;
        if (i == s.inputs.size()) s.inputs.push_back({task.in, task.n_tokens, cols, {kUnprepared, kUnprepared, kUnprepared}});
        PreparedInput& input = s.inputs[i];
        if (input.offset[f] == kUnprepared) {
            input.offset[f] = used[f];
            used[f] += simd::act_bytes(simd::ActFormat(f), cols) * size_t(task.n_tokens);
        }
        s.task_input.push_back(uint32_t(i));
    }
    // Grows only when a longer batch arrives; decoding never reallocates.
    for (int f = 0; f < 3; ++f)
        if (s.act[f].size() < used[f]) s.act[f].resize(used[f]);
    s.prepares.clear();
    for (size_t i = 0; i < s.inputs.size(); ++i)
        for (int f = 0; f < 3; ++f)
            if (s.inputs[i].offset[f] != kUnprepared)
                for (int t = 0; t < s.inputs[i].n_tokens; ++t) s.prepares.push_back({uint32_t(i), uint8_t(f), t});
    s.chunks.clear();
    for (size_t j = 0; j < tasks.size(); ++j) {
        const Weight& w = tasks[j].weight;
        const int rows = w.rows();
        // About kChunkBytes of weights per chunk, in whole steps of kRowsPerStep rows.
        const int step = std::max(1, int(kChunkBytes / w.tensor->row_bytes()) / kRowsPerStep) * kRowsPerStep;
        // Interleaved groups, then the rows after the last group, which keep ggml's layout.
        const int grouped = w.interleaved ? rows / int(kInterleave) * int(kInterleave) : 0;
        for (int r = 0; r < grouped; r += step) s.chunks.push_back({uint32_t(j), true, r, std::min(step, grouped - r)});
        for (int r = grouped; r < rows; r += step) s.chunks.push_back({uint32_t(j), false, r, std::min(step, rows - r)});
    }

    const auto prepare = [&](size_t i) {
        const Prepare& p = s.prepares[i];
        const PreparedInput& input = s.inputs[p.input];
        const simd::ActFormat f = simd::ActFormat(p.format);
        kernels.prepare(f, input.in + size_t(p.token) * input.cols, input.cols,
                        s.act[p.format].data() + input.offset[p.format] + size_t(p.token) * simd::act_bytes(f, input.cols));
    };
    // A few tokens' activations take well under a microsecond to prepare, less than the team's
    // meeting to wait for them: this thread prepares them before the team starts.
    if (streaming) {
        for (size_t i = 0; i < s.prepares.size(); ++i) prepare(i);
        s.ranges.reset(parallel ? s.n_threads : 1, s.chunks.size());
    }
#pragma omp parallel num_threads(s.n_threads) if (parallel)
    {
        if (!streaming) {
#pragma omp for schedule(static)
            for (size_t i = 0; i < s.prepares.size(); ++i) prepare(i);
        }
        const auto run_chunk = [&](size_t c) {
            const RowChunk& chunk = s.chunks[c];
            const MatmulTask& task = tasks[chunk.output];
            const Weight& w = task.weight;
            const size_t rows = size_t(w.rows()), cols = size_t(w.cols()), row_stride = w.tensor->row_bytes();
            const int f = int(simd::act_format(w.type(), s.path));
            const size_t stride = simd::act_bytes(simd::ActFormat(f), cols);
            const uint8_t* act = s.act[size_t(f)].data() + s.inputs[s.task_input[chunk.output]].offset[f];
            const int n_tokens = task.n_tokens;
            const simd::DotGroupsFn dot_groups = chunk.grouped ? kernels.dot_groups(w.type()) : nullptr;
            // Row kernels only: the calibrated form where the type has two (grouped types have one).
            const GemmCalibration* measured = !chunk.grouped && s.table ? s.table->find(w.type()) : nullptr;
            const simd::DotRowsFn dot_rows = chunk.grouped ? nullptr : kernels.dot_rows(w.type(), measured && measured->rows_ahead);
            const simd::DotGroupsPairFn dot_pair = chunk.grouped ? kernels.dot_groups_pair(w.type()) : nullptr;
            const simd::DotGroupsPairFn dot_quad = chunk.grouped ? kernels.dot_groups_quad(w.type()) : nullptr;
            for (int r = chunk.first; r < chunk.first + chunk.count; r += kRowsPerStep) {
                const int n = std::min(kRowsPerStep, chunk.first + chunk.count - r);
                int t = 0;
                // Token quads and pairs share each weight block's unpacking; their results equal single calls'.
                for (; dot_quad && t + 4 <= n_tokens; t += 4) {
                    const uint8_t* x[4];
                    float* out[4];
                    for (int i = 0; i < 4; ++i) {
                        x[i] = act + size_t(t + i) * stride;
                        out[i] = task.out + size_t(t + i) * rows + size_t(r);
                    }
                    dot_quad(w.tensor->data + size_t(r) * row_stride, size_t(n) / kInterleave, cols, x, out);
                }
                for (; dot_pair && t + 2 <= n_tokens; t += 2) {
                    const uint8_t* x[2] = {act + size_t(t) * stride, act + size_t(t + 1) * stride};
                    float* out[2] = {task.out + size_t(t) * rows + size_t(r), task.out + size_t(t + 1) * rows + size_t(r)};
                    dot_pair(w.tensor->data + size_t(r) * row_stride, size_t(n) / kInterleave, cols, x, out);
                }
                for (; t < n_tokens; ++t) {
                    float* out = task.out + size_t(t) * rows + size_t(r);
                    const uint8_t* x = act + size_t(t) * stride;
                    if (dot_groups)
                        dot_groups(w.tensor->data + size_t(r) * row_stride, size_t(n) / kInterleave, cols, x, out);
                    else
                        dot_rows(w.row(r), row_stride, size_t(n), cols, x, out);
                }
            }
        };
        // Chunks go to whichever thread is free: on a shared machine a thread that loses its core
        // for a moment no longer holds up the other at the barrier. A row's value depends only on
        // the kernel that computes it, fixed per row, not per thread. Where the weights stream from
        // memory (a few tokens), each thread streams its own consecutive run of chunks (the
        // prefetchers ramp up once, not every 128 KiB) and takes the back half of the other's when
        // it runs out, down to single chunks. OpenMP's guided schedule, which hands out long runs
        // first, left the threads finishing 27-40 us apart on average per product (tinyllama
        // Q4_K_M decode, Zen 5, 2 threads): a long run once taken could not be shared again. A
        // prompt batch is compute-bound and its chunks are long: those go one at a time.
        if (streaming) {
            const int me = omp_get_thread_num();
            while (const std::optional<size_t> c = s.ranges.next(me)) run_chunk(*c);
        } else {
#pragma omp for schedule(dynamic, 1)
            for (size_t c = 0; c < s.chunks.size(); ++c) run_chunk(c);
        }
    }
}

}  // namespace

void matmul(std::span<const MatmulOutput> outputs, const float* in, int n_tokens, MatmulScratch& s) {
    if (outputs.empty() || n_tokens <= 0) return;
    // Outputs that read the same input may still go different ways (Q4_K_M mixes Q4_K and Q6_K).
    std::vector<MatmulOutput> by_backend[kGemmBackendCount];
    s.pending.clear();
    if (s.observer)
        for (const MatmulOutput& o : outputs) s.observer->inputs(o.weight, in, n_tokens);
    for (const MatmulOutput& o : outputs) {
        const GemmBackend b = choose_gemm(s.gemm, o.weight.type(), n_tokens, s.gemm_min_tokens, s.path, s.onednn_bf16, s.table.get());
        if (b == GemmBackend::Native) s.pending.push_back({o.weight, in, n_tokens, o.out});
        else by_backend[int(b)].push_back(o);
    }
    if (!by_backend[int(GemmBackend::Int8)].empty()) int8_matmul(by_backend[int(GemmBackend::Int8)], in, n_tokens, s);
    for (const GemmBackend b : {GemmBackend::Onednn, GemmBackend::OnednnBf16, GemmBackend::Amx, GemmBackend::Openblas})
        if (!by_backend[int(b)].empty()) gemm_matmul(by_backend[int(b)], in, n_tokens, b, s);
    if (!s.pending.empty()) native_matmul(s.pending, s);
}

void matmul(std::span<const MatmulTask> tasks, MatmulScratch& s) {
    s.pending.clear();
    for (const MatmulTask& task : tasks) {
        if (task.n_tokens <= 0) continue;
        if (s.observer) s.observer->inputs(task.weight, task.in, task.n_tokens);
        const GemmBackend b = choose_gemm(s.gemm, task.weight.type(), task.n_tokens, s.gemm_min_tokens, s.path, s.onednn_bf16, s.table.get());
        if (b == GemmBackend::Native) {
            s.pending.push_back(task);
        } else {
            const MatmulOutput one[] = {{task.weight, task.out}};
            if (b == GemmBackend::Int8) int8_matmul(one, task.in, task.n_tokens, s);
            else gemm_matmul(one, task.in, task.n_tokens, b, s);
        }
    }
    if (!s.pending.empty()) native_matmul(s.pending, s);
}

}  // namespace rill
