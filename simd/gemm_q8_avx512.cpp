// The int8 prompt GEMM's kernel on AVX-512 VNNI (see gemm_q8.h). Code generation for the instruction
// set is switched on for this file's functions only, as in gemv_avx512.cpp.
#include <immintrin.h>

#include <cstring>

#include "quant/block_layouts.h"
#include "simd/gemm_q8.h"

// GCC 12's _mm512_cvtepi32_ps passes an undefined vector as its unused merge source, and warns that
// it is uninitialized wherever it is inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#endif

namespace rill::simd::avx512 {
namespace {

inline int read_i32(const uint8_t* p) { int v; std::memcpy(&v, p, 4); return v; }

// One row block (32 rows, two vectors of int32 lanes) against NT tokens. Per 32-column block each
// (row, token) gets one exact integer dot product of the stored bytes with the activation's; the
// float step removes the zero point through the activation block's sum (s = d * sum q) and applies
// both scales: acc += w_d * (a_d * dot - zero * s). With kMins (Q4_K) each row's block has its own
// min instead: acc += w_d * (a_d * dot) + w_m * s.
template <int NT, bool kMins>
void row_block(const uint8_t* panel, size_t n_blocks, float zero, const uint8_t* const* act, size_t cols, float* const* out,
               int n_rows) {
    __m512 acc[2][NT];
    for (int t = 0; t < NT; ++t) acc[0][t] = acc[1][t] = _mm512_setzero_ps();
    const size_t d_offset = cols, s_offset = cols + cols / 32 * sizeof(float);
    for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t* blk = panel + b * kQ8PanelBlockBytes;
        __m512i dot[2][NT];
        for (int t = 0; t < NT; ++t) dot[0][t] = dot[1][t] = _mm512_setzero_si512();
        for (int j = 0; j < 8; ++j) {
            const __m512i w0 = _mm512_loadu_si512(blk + j * 128);
            const __m512i w1 = _mm512_loadu_si512(blk + j * 128 + 64);
            for (int t = 0; t < NT; ++t) {
                const __m512i a = _mm512_set1_epi32(read_i32(act[t] + b * 32 + size_t(j) * 4));
                dot[0][t] = _mm512_dpbusd_epi32(dot[0][t], w0, a);
                dot[1][t] = _mm512_dpbusd_epi32(dot[1][t], w1, a);
            }
        }
        const __m512 d0 = _mm512_loadu_ps(blk + 1024), d1 = _mm512_loadu_ps(blk + 1024 + 64);
        if constexpr (kMins) {
            const __m512 m0 = _mm512_loadu_ps(blk + 1152), m1 = _mm512_loadu_ps(blk + 1152 + 64);
            for (int t = 0; t < NT; ++t) {
                float ad, as;
                std::memcpy(&ad, act[t] + d_offset + b * 4, 4);
                std::memcpy(&as, act[t] + s_offset + b * 4, 4);
                const __m512 scale = _mm512_set1_ps(ad), sum = _mm512_set1_ps(as);
                acc[0][t] = _mm512_fmadd_ps(m0, sum, _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot[0][t]), scale), d0, acc[0][t]));
                acc[1][t] = _mm512_fmadd_ps(m1, sum, _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot[1][t]), scale), d1, acc[1][t]));
            }
        } else {
            for (int t = 0; t < NT; ++t) {
                float ad, as;
                std::memcpy(&ad, act[t] + d_offset + b * 4, 4);
                std::memcpy(&as, act[t] + s_offset + b * 4, 4);
                const __m512 scale = _mm512_set1_ps(ad), offset = _mm512_set1_ps(zero * as);
                acc[0][t] = _mm512_fmadd_ps(_mm512_fmsub_ps(_mm512_cvtepi32_ps(dot[0][t]), scale, offset), d0, acc[0][t]);
                acc[1][t] = _mm512_fmadd_ps(_mm512_fmsub_ps(_mm512_cvtepi32_ps(dot[1][t]), scale, offset), d1, acc[1][t]);
            }
        }
    }
    for (int t = 0; t < NT; ++t) {
        if (n_rows >= 32) {
            _mm512_storeu_ps(out[t], acc[0][t]);
            _mm512_storeu_ps(out[t] + 16, acc[1][t]);
        } else {
            const __mmask16 m0 = __mmask16(n_rows >= 16 ? 0xffff : (1u << n_rows) - 1);
            const __mmask16 m1 = __mmask16(n_rows <= 16 ? 0 : (1u << (n_rows - 16)) - 1);
            _mm512_mask_storeu_ps(out[t], m0, acc[0][t]);
            _mm512_mask_storeu_ps(out[t] + 16, m1, acc[1][t]);
        }
    }
}

constexpr int kTokens = 5;  // tokens per call: 24 accumulators, two weight vectors, the broadcasts

template <int NT, bool kMins>
void tokens_tail(const uint8_t* panel, size_t n_blocks, float zero, const uint8_t* const* act, size_t cols, float* const* out,
                 int n_rows, int n) {
    if constexpr (NT > 0) {
        if (n == NT) return row_block<NT, kMins>(panel, n_blocks, zero, act, cols, out, n_rows);
        tokens_tail<NT - 1, kMins>(panel, n_blocks, zero, act, cols, out, n_rows, n);
    }
}

template <bool kMins>
void gemm(const uint8_t* panel, size_t n_rows, size_t cols, float zero, const uint8_t* act, size_t act_stride, int n_tokens,
          float* out, size_t out_stride) {
    const size_t n_blocks = cols / 32;
    const size_t block_bytes = n_blocks * kQ8PanelBlockBytes;
    // Tokens outermost: a tile's activations stay in the first-level cache while the panel's row
    // blocks stream past from the second.
    for (int t = 0; t < n_tokens; t += kTokens) {
        const int n = n_tokens - t < kTokens ? n_tokens - t : kTokens;
        const uint8_t* a[kTokens];
        for (int i = 0; i < n; ++i) a[i] = act + size_t(t + i) * act_stride;
        for (size_t r = 0; r < n_rows; r += kQ8PanelRows) {
            float* o[kTokens];
            for (int i = 0; i < n; ++i) o[i] = out + size_t(t + i) * out_stride + r;
            const int rows = int(n_rows - r < size_t(kQ8PanelRows) ? n_rows - r : kQ8PanelRows);
            const uint8_t* p = panel + r / kQ8PanelRows * block_bytes;
            if (n == kTokens) row_block<kTokens, kMins>(p, n_blocks, zero, a, cols, o, rows);
            else tokens_tail<kTokens - 1, kMins>(p, n_blocks, zero, a, cols, o, rows, n);
        }
    }
}

// Where one row's blocks go in a panel: block b's 32 bytes are eight 4-byte words, and word j of row r
// is lane r % 16 of vector (j, r / 16), at j * 128 + r * 4; the 32 rows' scales follow at 1024 and
// their mins at 1152, row r's at 4 * r.
struct PanelRow {
    uint8_t* base;  // block 0 of the row's row block, plus 4 * r

    PanelRow(uint8_t* out, size_t n_blocks, size_t row)
        : base(out + row / kQ8PanelRows * n_blocks * kQ8PanelBlockBytes + row % kQ8PanelRows * 4) {}
    void put(size_t b, const uint32_t words[8], float scale, float min) const {
        uint8_t* dst = base + b * kQ8PanelBlockBytes;
        for (int j = 0; j < 8; ++j) std::memcpy(dst + j * 128, &words[j], 4);
        std::memcpy(dst + 1024, &scale, 4);
        std::memcpy(dst + 1152, &min, 4);
    }
};

// Q4_K: each super-block's eight sub-blocks of 32 become eight blocks; sub-blocks 2j and 2j + 1 are
// the low and high nibbles of the same 32 bytes, with scale d · sc and min −dmin · m each.
void pack_q4_k(const uint8_t* const* rows, size_t n_rows, size_t n_blocks, uint8_t* out) {
    const __m128i low = _mm_set1_epi8(15);
    for (size_t row = 0; row < (n_rows + kQ8PanelRows - 1) / kQ8PanelRows * kQ8PanelRows; ++row) {
        const PanelRow dst(out, n_blocks, row);
        const uint8_t* src = row < n_rows ? rows[row] : nullptr;
        for (size_t sb = 0; sb < n_blocks / 8; ++sb) {
            BlockQ4_K blk{};
            if (src) std::memcpy(&blk, src + sb * sizeof(BlockQ4_K), sizeof blk);
            const float d = src ? _cvtsh_ss(blk.d) : 0.0f, dmin = src ? _cvtsh_ss(blk.dmin) : 0.0f;
            for (int s = 0; s < 8; ++s) {
                alignas(16) uint32_t words[8];
                const uint8_t* q = blk.qs + 32 * (s / 2);
                for (int half = 0; half < 2; ++half) {
                    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16 * half));
                    if (s % 2) v = _mm_srli_epi16(v, 4);
                    _mm_store_si128(reinterpret_cast<__m128i*>(words + 4 * half), _mm_and_si128(v, low));
                }
                int sc = 0, m = 0;
                k4_scale_min(s, blk.scales, &sc, &m);
                dst.put(sb * 8 + size_t(s), words, d * float(sc), -dmin * float(m));
            }
        }
    }
}

// Q4_0 and Q8_0: a block's 32 bytes, nibbles split or the sign bit flipped to add 128.
void pack_zero_point(TensorType type, const uint8_t* const* rows, size_t n_rows, size_t n_blocks, uint8_t* out) {
    const bool q4 = type == TensorType::Q4_0;
    const size_t in_block = q4 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
    const __m128i low = _mm_set1_epi8(15), sign = _mm_set1_epi8(char(0x80));
    for (size_t row = 0; row < (n_rows + kQ8PanelRows - 1) / kQ8PanelRows * kQ8PanelRows; ++row) {
        const PanelRow dst(out, n_blocks, row);
        const uint8_t* src = row < n_rows ? rows[row] : nullptr;
        for (size_t b = 0; b < n_blocks; ++b) {
            alignas(16) uint32_t words[8] = {};
            float d = 0.0f;
            if (src) {
                const uint8_t* blk = src + b * in_block;
                uint16_t h;
                std::memcpy(&h, blk, 2);
                d = _cvtsh_ss(h);
                if (q4) {
                    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
                    _mm_store_si128(reinterpret_cast<__m128i*>(words), _mm_and_si128(q, low));
                    _mm_store_si128(reinterpret_cast<__m128i*>(words + 4), _mm_and_si128(_mm_srli_epi16(q, 4), low));
                } else {
                    _mm_store_si128(reinterpret_cast<__m128i*>(words),
                                    _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)), sign));
                    _mm_store_si128(reinterpret_cast<__m128i*>(words + 4),
                                    _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18)), sign));
                }
            }
            dst.put(b, words, d, 0.0f);
        }
    }
}

}  // namespace

void q8_pack(TensorType type, const uint8_t* const* rows, size_t n_rows, size_t cols, uint8_t* out) {
    if (type == TensorType::Q4_K) pack_q4_k(rows, n_rows, cols / 32, out);
    else pack_zero_point(type, rows, n_rows, cols / 32, out);
}

void q8_gemm(const uint8_t* panel, size_t n_rows, size_t cols, float zero, bool mins, const uint8_t* act, size_t act_stride,
             int n_tokens, float* out, size_t out_stride) {
    if (mins) gemm<true>(panel, n_rows, cols, zero, act, act_stride, n_tokens, out, out_stride);
    else gemm<false>(panel, n_rows, cols, zero, act, act_stride, n_tokens, out, out_stride);
}

}  // namespace rill::simd::avx512

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
