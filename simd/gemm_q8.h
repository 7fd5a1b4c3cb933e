// A prompt-side GEMM on 8-bit integers for the types built of 32-element blocks (Q4_0, Q8_0, and Q4_K's
// sub-blocks, each with its own scale and min): weight rows are
// repacked once per prompt chunk into a panel of unsigned bytes, 32 rows by 4 columns per vector, and
// multiplied against activations quantized to 8 bits per block (ActFormat::Q8x32) with VNNI's
// four-way byte dot products, one integer sum per block, scaled and accumulated in float32 block by
// block in a fixed order. That is llama.cpp's accuracy class (8-bit activations), at the int8 units'
// rate instead of the float units'.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/tensor_type.h"
#include "simd/gemv.h"

namespace rill::simd {

// Rows a panel holds per row block, and bytes one row block takes per 32 columns: the 32 rows' bytes,
// then their 32 float scales, then their 32 float mins (Q4_K; the zero-point types leave them unread).
inline constexpr int kQ8PanelRows = 32;
inline constexpr size_t kQ8PanelBlockBytes = 32 * 32 + 2 * 32 * sizeof(float);

bool q8_gemm_supports(TensorType type);
// Bytes a panel of n_rows (rounded up to whole row blocks) by cols takes.
size_t q8_panel_bytes(size_t n_rows, size_t cols);
// Repacks (on the AVX-512 path, whose kernel reads the layout) n_rows rows (ggml's layout, row r at
// rows[r]) of cols columns into out; the rows that pad the last row block get scale 0. Stored bytes are
// unsigned: the weight plus the type's zero point (8 for Q4_0, 128 for Q8_0), or Q4_K's 4-bit level
// with the sub-block's scale (d · sc) and min (−dmin · m) beside it.
void pack_q8_panel(TensorType type, const uint8_t* const* rows, size_t n_rows, size_t cols, uint8_t* out);
// The zero point pack_q8_panel added to the type's weights (0 for Q4_K).
float q8_zero_point(TensorType type);
// Whether the type's blocks carry a min each (Q4_K), which the kernel adds through the activation sums.
bool q8_has_mins(TensorType type);

// out[t * out_stride + r] = (row r of the panel) · (activation t) for r < n_rows, t < n_tokens.
// Activation t starts at act + t * act_stride in ActFormat::Q8x32. Each result is one sum over the
// blocks in order, so it does not depend on n_tokens, n_rows or which thread runs it.
// With mins, acc += w_d · a_d · dot + w_m · a_s per block instead of w_d · (a_d · dot − zero · a_s).
using Q8GemmFn = void (*)(const uint8_t* panel, size_t n_rows, size_t cols, float zero_point, bool mins, const uint8_t* act,
                          size_t act_stride, int n_tokens, float* out, size_t out_stride);
// The kernel for a path, or nullptr where the path has none (it needs AVX-512 VNNI).
Q8GemmFn q8_gemm_kernel(KernelPath path);

}  // namespace rill::simd
