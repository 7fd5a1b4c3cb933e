// Matrix times activations for the forward pass: every weight type, on the kernel path chosen at
// run time, on a team of threads. Several weights that read the same input (Q, K and V; gate and
// up) are multiplied in one pass, so the input is prepared once and the team meets once.
#pragma once
#include <span>
#include <vector>

#include <memory>

#include "runtime/compute/gemm.h"
#include "runtime/compute/gemm_choice.h"
#include "runtime/compute/work_ranges.h"
#include "runtime/model/model.h"
#include "simd/gemv.h"

namespace rill {

// Multiply-adds below which a loop runs on the calling thread alone: under it a parallel region
// costs more than it saves, and on a loaded machine a descheduled team member stalls everyone.
inline constexpr size_t kMinParallelWork = size_t(1) << 18;

// Batches of at least this many tokens may go to a GEMM backend; smaller ones (a decode step, a few
// draft tokens) always go to the decode kernels, which read each weight once without dequantizing it.
inline constexpr int kGemmMinTokens = 16;

// Which backend multiplies a batch of n_tokens by a weight of this type on this kernel path. A forced
// backend is used from min_tokens up. Auto follows bench_gemm's measurements (README, "Prompt
// processing"): with AVX-512 BF16 (the avx512 path) oneDNN's bf16 matmul takes long batches of every
// type but MXFP4, and the int8 decode kernels the short ones of the interleaved types; elsewhere the
// integer kernels keep Q4_0, Q8_0, Q4_K, Q6_K and MXFP4, and OpenBLAS takes the other types from a
// batch size that depends on what dequantizing the type costs.
// bf16: whether oneDNN's bf16 matmul runs here (MatmulScratch asks oneDNN once); auto uses it on the
// avx512 path only when it does.
// table: this machine's calibration (gemm_choice.h); where it has the type, auto takes its choice
// (unless that backend cannot run here), and the rule below only where it does not.
GemmBackend choose_gemm(GemmBackend requested, TensorType type, int n_tokens, int min_tokens = kGemmMinTokens,
                        simd::KernelPath path = simd::KernelPath::Avx2, bool bf16 = true, const GemmTable* table = nullptr);
// Whether a backend can run a weight type here: oneDNN's bf16 only where it has a real kernel, the
// int8 GEMM only for its types on a path with its kernel.
bool gemm_runs_here(GemmBackend backend, TensorType type, simd::KernelPath path, bool bf16);

// Weight rows dequantized at a time per thread for the GEMM backends: about this many bytes of
// float32, in whole multiples of 16 rows, so the scratch stays bounded whatever the model.
inline constexpr size_t kPanelBytes = size_t(2) << 20;
// For the bf16 backend, the same bytes of bfloat16 (twice the rows); for the int8 backend, whole row
// blocks of simd::kQ8PanelRows in about kQ8PanelBytes of repacked bytes.
int panel_rows(int cols, GemmBackend backend = GemmBackend::Openblas);
// An int8 panel small enough to stay in a core's second-level cache while the batch streams past it.
inline constexpr size_t kQ8PanelBytes = size_t(256) << 10;
// The per-thread panel scratch a model needs at its widest weight (every backend's panel), times n_threads.
size_t gemm_scratch_bytes(const Model& model, int n_threads);
// The batch's rounded copies the bf16 and int8 backends share across threads, for n_batch tokens.
size_t gemm_batch_bytes(const Model& model, int n_batch);

// Rows [first, first + count) of one output, interleaved groups or ggml-layout rows.
struct RowChunk {
    uint32_t output;
    bool grouped;
    int first, count;
};

// A weight with inputs of its own: out[t][r] = (row r of W) · in[t] for t < n_tokens.
struct MatmulTask {
    const Weight& weight;
    const float* in;
    int n_tokens;
    float* out;
};

// One distinct input of a call to the decode kernels, and where its prepared forms start.
inline constexpr size_t kUnprepared = ~size_t(0);
struct PreparedInput {
    const float* in;
    int n_tokens;
    size_t cols;
    size_t offset[3];  // per simd::ActFormat, into MatmulScratch::act; kUnprepared if no task needs it
};
struct Prepare {
    uint32_t input;
    uint8_t format;
    int token;
};

// Sees each weight's float inputs before they are multiplied: `rill imatrix` sums their squares per
// column. Called on the calling thread, once per weight and call (experts: once per chosen expert).
class MatmulObserver {
public:
    virtual void inputs(const Weight& weight, const float* in, int n_tokens) = 0;

protected:
    ~MatmulObserver() = default;
};

// Buffers reused across calls, so decoding allocates nothing per token.
struct MatmulScratch {
    simd::KernelPath path = simd::KernelPath::Reference;
    int n_threads = 1;
    GemmBackend gemm = GemmBackend::Auto;
    int gemm_min_tokens = kGemmMinTokens;
    OnednnGemmPtr onednn;                        // created when gemm may go to oneDNN
    bool onednn_bf16 = false;                    // oneDNN has a bf16 matmul here (onednn_has_bf16)
    std::shared_ptr<const GemmTable> table;      // auto's measured choices; null: the rule in choose_gemm
    std::vector<std::vector<float>> panels;      // GEMM backends: dequantized weight rows per thread
    std::vector<std::vector<uint16_t>> panels_bf16;  // the bf16 backend: a panel rounded to bfloat16 per thread
    std::vector<uint16_t> act_bf16;              // the bf16 backends: the batch rounded to bfloat16
    std::vector<uint16_t> act_amx;               // the amx backend: the batch packed into tiles
    std::vector<std::vector<uint16_t>> panels_amx;  // the amx backend: a panel packed into tiles per thread
    std::vector<std::vector<float>> sums_amx;    // the amx backend: a panel's running sums per thread
    std::vector<std::vector<uint8_t>> panels_q8;  // the int8 backend: a repacked panel per thread
    std::vector<uint8_t> act_q8;                 // the int8 backend: the batch in 8-bit blocks (Q8x32)
    std::vector<std::vector<uint8_t>> group_bytes;  // GEMM backends: an interleaved group put back in order
    std::vector<std::vector<float>> rows;        // reference path: one dequantized weight row per thread
    std::vector<std::vector<uint8_t>> row_bytes;  // reference path: an interleaved row put back in order
    std::vector<uint8_t> act[3];           // prepared activations, [input][tokens][bytes], per ActFormat
    std::vector<RowChunk> chunks;          // this call's units of work; keeps its capacity
    std::vector<PreparedInput> inputs;     // this call's distinct inputs
    std::vector<uint32_t> task_input;      // which of them each task reads
    std::vector<Prepare> prepares;         // the (input, format, token) activations to prepare
    std::vector<MatmulTask> pending;       // the tasks that go to the decode kernels
    WorkRanges ranges;                     // a few tokens' chunks, shared out among the team
    MatmulObserver* observer = nullptr;    // not owned; null but while an importance matrix is collected

    MatmulScratch() = default;
    MatmulScratch(simd::KernelPath path, int n_threads, size_t widest_row, GemmBackend gemm = GemmBackend::Auto);
};

// One weight and where its products go: out[t][r] for t < n_tokens, r < weight.rows().
struct MatmulOutput {
    const Weight& weight;
    float* out;
};

// out[t][r] = (row r of W) · in[t] for each output's W; every W has in's width `cols`.
// Work is cut into pieces whose bounds depend only on the shapes (row chunks for the kernels, row
// panels for GEMM), and each output is reduced by one thread in a fixed order, so results are the
// same for any thread count.
void matmul(std::span<const MatmulOutput> outputs, const float* in, int n_tokens, MatmulScratch& scratch);

// Each task on its own inputs, as matmul does for one; the tasks on the decode kernels share one
// parallel region, so a mixture's chosen experts cost the team one meeting, not one per expert.
void matmul(std::span<const MatmulTask> tasks, MatmulScratch& scratch);

inline void matmul(const Weight& w, const float* in, float* out, int n_tokens, MatmulScratch& scratch) {
    const MatmulOutput one[] = {{w, out}};
    matmul(one, in, n_tokens, scratch);
}

}  // namespace rill
