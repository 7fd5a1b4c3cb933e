// Fused dequantize-and-dot GEMV kernels for every weight type, one set per instruction-set path,
// chosen at run time. Each kernel reads every weight byte once and reduces one output row in a
// fixed order, so a row's value never depends on which thread or how many threads computed it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "quant/tensor_type.h"

namespace rill::simd {

// Reference: dequantize a row to floats, then a float dot product (exact weights, float
// activations; the path the golden tests hold to 1e-4). The others quantize activations to 8 bits
// per block for integer dot products, except for F32, F16 and BF16 weights, which keep float
// activations on every path.
// x86-64 has Sse41, Avx2 and Avx512; ARM64 has Neon, NeonDotprod and NeonI8mm (each includes the one
// before it); every CPU has Reference and Generic.
enum class KernelPath { Reference, Generic, Sse41, Avx2, Avx512, Neon, NeonDotprod, NeonI8mm };

std::string_view kernel_path_name(KernelPath path);
std::optional<KernelPath> parse_kernel_path(std::string_view name);
bool cpu_supports(KernelPath path);
// Every path this CPU can run, fastest last.
std::vector<KernelPath> supported_kernel_paths();
// The fastest supported path, or the one named by the RILL_KERNELS environment variable
// (an error if that CPU cannot run it or the name is unknown).
KernelPath default_kernel_path();

// What a weight type's kernel wants its activation vector turned into.
enum class ActFormat {
    F32,     // the floats themselves
    Q8x32,   // int8 q[n], then float d[n/32], then float s[n/32] (s = d * sum of the block's q)
    Q8x256,  // int8 q[n], then float d[n/256], then int16 sums[n/16] (sum of each 16 q)
};
ActFormat act_format(TensorType type, KernelPath path);
// Bytes one activation vector of n elements takes in the format.
size_t act_bytes(ActFormat format, size_t n);

// out[i] = (row i of the weight) · activations, for i < n_rows; rows are row_stride bytes apart.
using DotRowsFn = void (*)(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t cols,
                           const uint8_t* activations, float* out);
// Rows interleaved eight at a time (quant/interleave.h): out[0 .. 8*n_groups) in row order.
using DotGroupsFn = void (*)(const uint8_t* groups, size_t n_groups, size_t cols, const uint8_t* activations, float* out);
// The same for several tokens at once (activations[i] into out[i]: two for a pair kernel, four for a
// quad), each token's results bit-identical to DotGroupsFn's: a batch reads and unpacks each weight
// block once per pair or quad.
using DotGroupsPairFn = void (*)(const uint8_t* groups, size_t n_groups, size_t cols, const uint8_t* const* activations,
                                 float* const* out);
// out[i] = sum over r < n_rows of weights[r] * row_r[i], for i < n.
using WeightedSumFn = void (*)(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t n, const float* weights, float* out);
using QuantizeActFn = void (*)(const float* x, size_t n, uint8_t* out);
// Attention scores of the n_q (1 to 8) query heads that share one key head, over float key rows (F32,
// F16, BF16): out[h * out_stride + r] = row_r · q[h * cols ..], cols a multiple of 8. Each row is read
// and widened once for all the heads; a score does not depend on n_rows or n_q.
using DotHeadsFn = void (*)(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t cols, const float* q, int n_q, float* out,
                            size_t out_stride);
// The weighted sums of the same float value rows for n_q heads at once: out[h * n + c] = sum over r of
// weights[h * w_stride + r] * row_r[c], n a multiple of 16.
using WeightedSumHeadsFn = void (*)(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t n, const float* weights,
                                    size_t w_stride, int n_q, float* out);
// One token through one value head of a Gated DeltaNet layer (delta_rule.inl): M (S rows of S, row i
// for key index i) is decayed, corrected towards v along k with strength beta, and read along q:
// M ← decay·M; δ = beta·(v − Mᵀk); M ← M + k δᵀ; o = scale · Mᵀq.
using DeltaRuleFn = void (*)(float* M, const float* q, const float* k, const float* v, float decay, float beta, float scale, size_t S,
                             float* o);

struct GemvKernels {
    KernelPath path;
    QuantizeActFn quantize_q8x32;
    QuantizeActFn quantize_q8x256;
    DotRowsFn f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs, mxfp4;
    DotGroupsFn q4_0_x8, q8_0_x8, q4_k_x8, q6_k_x8, mxfp4_x8;
    DotGroupsPairFn q4_0_x8_pair, q4_0_x8_quad, q8_0_x8_quad, q4_k_x8_quad, q6_k_x8_quad, mxfp4_x8_quad;
    // For the KV cache's types: F32, F16, BF16, Q8_0 and Q4_0 (n a multiple of 32 for the last two).
    WeightedSumFn weighted_sum_f32, weighted_sum_f16, weighted_sum_bf16, weighted_sum_q8_0, weighted_sum_q4_0;
    DotHeadsFn dot_heads_f32, dot_heads_f16, dot_heads_bf16;
    WeightedSumHeadsFn weighted_sum_heads_f32, weighted_sum_heads_f16, weighted_sum_heads_bf16;
    DeltaRuleFn delta_rule;
    // The IQ1–IQ3 and ternary types (gemv_iq.inl), with Q8x256 activations.
    DotRowsFn iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m, tq1_0, tq2_0;
    // F16 and BF16 rows that also ask for the weights kPrefetchAhead bytes ahead of the ones being
    // multiplied: the same bits as f16 and bf16. Which form streams faster is the CPU's: on an Intel Xeon
    // (family 6 model 207) asking ahead decoded tinyllama F16 1.5x as fast, on an AMD Zen 4 (family 25
    // model 17) half as fast; a calibration measures it (GemmCalibration::rows_ahead). Null on paths
    // with one form.
    DotRowsFn f16_ahead = nullptr, bf16_ahead = nullptr;

    // `ahead`: the form that asks ahead, where the type has one.
    DotRowsFn dot_rows(TensorType type, bool ahead = false) const;
    bool has_rows_ahead(TensorType type) const { return dot_rows(type, true) != dot_rows(type, false); }
    // For the types quant/interleave.h can regroup, else nullptr.
    DotGroupsFn dot_groups(TensorType type) const;
    // For the KV cache's types (see weighted_sum_f32 and friends), else nullptr.
    WeightedSumFn weighted_sum(TensorType type) const;
    // For F32, F16 and BF16 rows, else nullptr.
    DotHeadsFn dot_heads(TensorType type) const {
        return type == TensorType::F32 ? dot_heads_f32 : type == TensorType::F16 ? dot_heads_f16 : type == TensorType::BF16 ? dot_heads_bf16 : nullptr;
    }
    WeightedSumHeadsFn weighted_sum_heads(TensorType type) const {
        return type == TensorType::F32 ? weighted_sum_heads_f32 : type == TensorType::F16 ? weighted_sum_heads_f16
             : type == TensorType::BF16 ? weighted_sum_heads_bf16 : nullptr;
    }
    // nullptr for the types without a two-token kernel.
    DotGroupsPairFn dot_groups_pair(TensorType type) const { return type == TensorType::Q4_0 ? q4_0_x8_pair : nullptr; }
    DotGroupsPairFn dot_groups_quad(TensorType type) const {
        return type == TensorType::Q4_0 ? q4_0_x8_quad : type == TensorType::Q8_0 ? q8_0_x8_quad
             : type == TensorType::Q4_K ? q4_k_x8_quad
             : type == TensorType::Q6_K ? q6_k_x8_quad
             : type == TensorType::MXFP4 ? mxfp4_x8_quad : nullptr;
    }
    // Prepares x (n floats) in the format the type's kernel reads.
    void prepare(ActFormat format, const float* x, size_t n, uint8_t* out) const;
};

// The kernels of an integer path (not Reference).
const GemvKernels& gemv_kernels(KernelPath path);

}  // namespace rill::simd
