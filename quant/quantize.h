// Scalar reference quantizers: float32 rows into GGUF block formats, the inverse of dequantize_row.
// Each reproduces what `llama-quantize` writes, without an importance matrix (ggml's reference
// quantizers) and with one, with the same operations in the same order so the bytes match ggml's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tensor_type.h"

namespace rill {

// True for every type quantize_row can write (every type rill reads).
bool can_quantize(TensorType type);
// IQ2_XXS, IQ2_XS and IQ1_S: ggml's quantizers for them need an importance matrix (so does rill's).
bool needs_importance(TensorType type);

// Quantizes one row of n floats (n a multiple of the type's block size) into row_bytes(type, n) bytes at
// `out`. `importance`: the row's per-column importance (n floats, from an imatrix) or null; with it,
// every type whose ggml quantizer takes one is quantized as llama-quantize does with that imatrix.
// Q4_0..Q5_1 measure their weights' spread over the whole row, so a row is always quantized whole.
// Throws std::invalid_argument for a type that needs importance and gets none.
// Inputs are expected finite; values beyond a format's range give infinite scales, as in ggml.
void quantize_row(TensorType type, const float* in, uint8_t* out, size_t n, const float* importance = nullptr);

// The per-type quantizers behind quantize_row, each writing n_blocks consecutive blocks.
using QuantizeFn = void (*)(const float* in, uint8_t* blocks, size_t n_blocks);

void quantize_q4_0(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_q4_1(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_q5_0(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_q5_1(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_q8_0(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_q2_k(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_q3_k(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_q4_k(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_q5_k(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_q6_k(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_iq4_nl(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_iq4_xs(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_mxfp4(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_tq1_0(const float* in, uint8_t* blocks, size_t n_blocks);
void quantize_tq2_0(const float* in, uint8_t* blocks, size_t n_blocks);

// With an importance matrix (llama-imatrix's per-column mean of x², the row's columns in order), ggml
// runs other quantizers: the same formats, but each value's error weighted by how much the model's
// inputs use its column. `importance` points at the importance of in[0], in[1], ... (the caller
// offsets it to the blocks' first column). Writes n_blocks blocks, as QuantizeFn does.
using WeightedQuantizeFn = void (*)(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);

void quantize_q4_0_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_q4_1_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_q5_0_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_q5_1_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_q2_k_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_q3_k_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_q4_k_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_q5_k_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_q6_k_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_iq4_nl_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_iq4_xs_weighted(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);

// The IQ1–IQ3 quantizers: grid searches. `importance` may be null for IQ2_S, IQ3_XXS, IQ3_S and IQ1_M
// (ggml then weights by x²); IQ2_XXS, IQ2_XS and IQ1_S need one (see needs_importance).
void quantize_iq2_xxs(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_iq2_xs(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_iq2_s(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_iq3_xxs(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_iq3_s(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_iq1_s(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);
void quantize_iq1_m(const float* in, const float* importance, uint8_t* blocks, size_t n_blocks);

// ggml's nearest_int: adding 1.5 * 2^23 leaves round(x) (ties to even) in the low mantissa bits.
// Valid for |x| < 2^22; larger or non-finite inputs give a meaningless but defined result, as in ggml.
// Shared by the k-quant and IQ4 quantizers, whose bytes depend on this exact rounding.
inline int nearest_int(float x) {
    const float shifted = x + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace rill
