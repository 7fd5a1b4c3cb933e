// A load-time layout for decode (Q4_0, Q8_0, Q4_K, Q6_K, MXFP4): rows regrouped eight at a time, block by
// block, so one vector load brings eight rows' scales and one activation block serves eight rows.
// The bytes are the same bytes, moved, so the interleaved tensor takes exactly the file's space.
// Rows past the last full group of eight keep ggml's layout.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor_type.h"

namespace rill {

inline constexpr size_t kInterleave = 8;
// Which row of the group each scale slot holds: the order in which pairs of rows come out of the
// kernels' horizontal adds, so scales line up with sums without a shuffle.
inline constexpr int kInterleaveLanes[kInterleave] = {0, 2, 4, 6, 1, 3, 5, 7};

bool can_interleave(TensorType type);
// In place. Group g, block b holds the eight rows' scales (half floats, or MXFP4's exponent bytes) in
// kInterleaveLanes order (Q4_K has two, d then dmin), then the eight rows' remaining block bytes in row
// order, except Q4_K's and Q6_K's, whose quants lie in 8-byte pieces with piece c (bytes 8c..8c+7) of
// rows 0..7 side by side: Q4_K's eight rows' 12 packed scale bytes in row order, then the 128 quant
// bytes in pieces; Q6_K's ql (128 bytes) in pieces, qh (64) in pieces, then the scales, byte
// 16p + 2r + e holding row r's sub-block scale 2p + e.
void interleave_rows(TensorType type, uint8_t* data, size_t n_rows, size_t row_bytes);
// Row r of an interleaved tensor back in ggml's layout.
void plain_row(TensorType type, const uint8_t* data, size_t r, size_t row_bytes, uint8_t* out);

}  // namespace rill
