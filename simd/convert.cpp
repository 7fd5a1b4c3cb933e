#include "convert.h"

#include <cstring>

#include "gemv.h"
#include "quant/block_layouts.h"
#include "quant/fp16.h"
#include "quant/iq_grids.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define RILL_X86 1
#endif

namespace rill::simd {
namespace {

#ifdef RILL_X86
#define RILL_AVX2 __attribute__((target("avx2,fma,f16c")))

// F16C's conversion is exact for every half value, subnormals and NaNs included.
RILL_AVX2 void f16_to_f32_f16c(const uint16_t* in, float* out, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
    for (; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

// Eight bytes as eight int32 lanes.
RILL_AVX2 inline __m256i widen8(const uint8_t* p) {
    int64_t bytes;
    std::memcpy(&bytes, p, 8);
    return _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes));
}

// A block's leading half-float scale, in every lane.
RILL_AVX2 inline __m256 splat_half(const uint8_t* block) {
    uint16_t d;
    std::memcpy(&d, block, 2);
    return _mm256_set1_ps(f16_to_f32(d));
}

// As quant/dequantize.cpp: float(q) * d per 32-weight block.
RILL_AVX2 void dequantize_q8_0_avx2(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, out += 32) {
        const uint8_t* block = src + i * sizeof(BlockQ8_0);
        const __m256 d = splat_half(block);
        for (int j = 0; j < 32; j += 8) {
            int64_t bytes;
            std::memcpy(&bytes, block + 2 + j, 8);
            const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bytes)));
            _mm256_storeu_ps(out + j, _mm256_mul_ps(q, d));
        }
    }
}

// As quant/dequantize.cpp: float(nibble - 8) * d, low nibbles first.
RILL_AVX2 void dequantize_q4_0_avx2(const uint8_t* src, float* out, size_t n_blocks) {
    const __m256i low4 = _mm256_set1_epi32(0x0f), eight = _mm256_set1_epi32(8);
    for (size_t i = 0; i < n_blocks; ++i, out += 32) {
        const uint8_t* block = src + i * sizeof(BlockQ4_0);
        const __m256 d = splat_half(block);
        for (int j = 0; j < 16; j += 8) {
            const __m256i v = widen8(block + 2 + j);
            const __m256 lo = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(v, low4), eight));
            const __m256 hi = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(v, 4), eight));
            _mm256_storeu_ps(out + j, _mm256_mul_ps(lo, d));
            _mm256_storeu_ps(out + 16 + j, _mm256_mul_ps(hi, d));
        }
    }
}

// As quant/dequantize.cpp: d1 * q - m1, a multiply then a subtraction (never fused), per sub-block.
RILL_AVX2 void dequantize_q4_k_avx2(const uint8_t* src, float* out, size_t n_blocks) {
    const __m256i low4 = _mm256_set1_epi32(0x0f);
    for (size_t i = 0; i < n_blocks; ++i) {
        BlockQ4_K b;
        std::memcpy(&b, src + i * sizeof b, sizeof b);
        const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
        const uint8_t* q = b.qs;
        for (int sub = 0; sub < 8; sub += 2, q += 32) {
            int sc[2], m[2];
            for (int h = 0; h < 2; ++h) {
                const int j = sub + h;
                sc[h] = j < 4 ? b.scales[j] & 63 : (b.scales[j + 4] & 0x0f) | ((b.scales[j - 4] >> 6) << 4);
                m[h] = j < 4 ? b.scales[j + 4] & 63 : (b.scales[j + 4] >> 4) | ((b.scales[j] >> 6) << 4);
            }
            const __m256 d1 = _mm256_set1_ps(d * float(sc[0])), m1 = _mm256_set1_ps(dmin * float(m[0]));
            const __m256 d2 = _mm256_set1_ps(d * float(sc[1])), m2 = _mm256_set1_ps(dmin * float(m[1]));
            for (int l = 0; l < 32; l += 8) {
                const __m256i v = widen8(q + l);
                const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(v, low4));
                const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
                _mm256_storeu_ps(out + l, _mm256_sub_ps(_mm256_mul_ps(d1, lo), m1));
                _mm256_storeu_ps(out + 32 + l, _mm256_sub_ps(_mm256_mul_ps(d2, hi), m2));
            }
            out += 64;
        }
    }
}

// As quant/dequantize.cpp: (d * scale) * q, rounded in that order.
RILL_AVX2 void dequantize_q6_k_avx2(const uint8_t* src, float* out, size_t n_blocks) {
    const __m256i low4 = _mm256_set1_epi32(0x0f), two = _mm256_set1_epi32(3), offset = _mm256_set1_epi32(32);
    for (size_t i = 0; i < n_blocks; ++i) {
        BlockQ6_K b;
        std::memcpy(&b, src + i * sizeof b, sizeof b);
        const float d = f16_to_f32(b.d);
        const uint8_t* ql = b.ql;
        const uint8_t* qh = b.qh;
        const int8_t* sc = b.scales;
        for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, out += 128) {
            for (int l = 0; l < 32; l += 8) {
                const int s = l / 16;
                const __m256i lo = widen8(ql + l), lo32 = widen8(ql + l + 32), high = widen8(qh + l);
                const __m256i q1 = _mm256_or_si256(_mm256_and_si256(lo, low4), _mm256_slli_epi32(_mm256_and_si256(high, two), 4));
                const __m256i q2 = _mm256_or_si256(_mm256_and_si256(lo32, low4),
                                                   _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(high, 2), two), 4));
                const __m256i q3 = _mm256_or_si256(_mm256_srli_epi32(lo, 4),
                                                   _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(high, 4), two), 4));
                const __m256i q4 = _mm256_or_si256(_mm256_srli_epi32(lo32, 4),
                                                   _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(high, 6), two), 4));
                const __m256i qs[4] = {q1, q2, q3, q4};
                for (int k = 0; k < 4; ++k) {
                    const __m256 scale = _mm256_set1_ps(d * float(sc[s + 2 * k]));
                    const __m256 v = _mm256_cvtepi32_ps(_mm256_sub_epi32(qs[k], offset));
                    _mm256_storeu_ps(out + 32 * k + l, _mm256_mul_ps(scale, v));
                }
            }
        }
    }
}
#endif

#ifdef RILL_X86
// f32_to_bf16 eight lanes at a time: add 0x7fff plus the lowest kept bit, keep the top half; a NaN
// keeps its top half with the quiet bit set instead.
RILL_AVX2 void f32_to_bf16_avx2(const float* in, uint16_t* out, size_t n) {
    const __m256i round = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x400000);
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i half[2];
        for (int h = 0; h < 2; ++h) {
            const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(in + i + size_t(h) * 8));
            const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), one);
            const __m256i rounded = _mm256_add_epi32(x, _mm256_add_epi32(round, lsb));
            const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
            half[h] = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, _mm256_or_si256(x, quiet), nan), 16);
        }
        // packus works within 128-bit lanes: order 0-3, 8-11, 4-7, 12-15, then put the quarters back.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(half[0], half[1]), 0xd8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
    }
    for (; i < n; ++i) out[i] = f32_to_bf16(in[i]);
}

// ---- The i-quants: eight grid bytes scaled and signed at a time, the scalar dequantizers' exact
// products (the scale times the byte, then the sign, which is exact), so the floats are the same.
RILL_AVX2 inline void store_grid8(float* out, __m256 scale, uint64_t entry, uint8_t signs) {
    const __m256 v = _mm256_mul_ps(scale, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(int64_t(entry)))));
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i negative = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(signs), bit), bit);
    _mm256_storeu_ps(out, _mm256_xor_ps(v, _mm256_castsi256_ps(_mm256_slli_epi32(negative, 31))));
}

// IQ2_XS and IQ2_S: a 4-bit scale per 16 values, two to a byte, each d·(0.5 + s)·0.25.
RILL_AVX2 inline void iq2_half_scales(float d, uint8_t packed, __m256 db[2]) {
    db[0] = _mm256_set1_ps(d * (0.5f + float(packed & 0xf)) * 0.25f);
    db[1] = _mm256_set1_ps(d * (0.5f + float(packed >> 4)) * 0.25f);
}

RILL_AVX2 void dequantize_iq2_xxs_avx2(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const uint8_t* b = src + i * sizeof(BlockIQ2_XXS);
        uint16_t half;
        std::memcpy(&half, b, 2);
        const float d = f16_to_f32(half);
        for (int ib = 0; ib < 8; ++ib) {
            uint32_t idx, aux;
            std::memcpy(&idx, b + 2 + 8 * ib, 4);
            std::memcpy(&aux, b + 6 + 8 * ib, 4);
            const __m256 db = _mm256_set1_ps(d * (0.5f + float(aux >> 28)) * 0.25f);
            for (int l = 0; l < 4; ++l, out += 8) store_grid8(out, db, kIQ2XXSGrid[(idx >> (8 * l)) & 0xff], kIQSigns[(aux >> (7 * l)) & 127]);
        }
    }
}

RILL_AVX2 void dequantize_iq2_xs_avx2(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const uint8_t* b = src + i * sizeof(BlockIQ2_XS);
        uint16_t half, q[32];
        std::memcpy(&half, b, 2);
        std::memcpy(q, b + 2, 64);
        const float d = f16_to_f32(half);
        for (int ib = 0; ib < 8; ++ib) {
            __m256 db[2];
            iq2_half_scales(d, b[66 + ib], db);
            for (int l = 0; l < 4; ++l, out += 8) store_grid8(out, db[l / 2], kIQ2XSGrid[q[4 * ib + l] & 511], kIQSigns[q[4 * ib + l] >> 9]);
        }
    }
}

RILL_AVX2 void dequantize_iq2_s_avx2(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const uint8_t* b = src + i * sizeof(BlockIQ2_S);
        uint16_t half;
        std::memcpy(&half, b, 2);
        const float d = f16_to_f32(half);
        for (int ib = 0; ib < 8; ++ib) {
            __m256 db[2];
            iq2_half_scales(d, b[74 + ib], db);
            for (int l = 0; l < 4; ++l, out += 8) {
                const int index = b[2 + 4 * ib + l] | (((b[66 + ib] >> (2 * l)) & 3) << 8);
                store_grid8(out, db[l / 2], kIQ2SGrid[size_t(index)], b[34 + 4 * ib + l]);
            }
        }
    }
}

RILL_AVX2 void dequantize_iq3_xxs_avx2(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const uint8_t* b = src + i * sizeof(BlockIQ3_XXS);
        uint16_t half;
        std::memcpy(&half, b, 2);
        const float d = f16_to_f32(half);
        for (int ib = 0; ib < 8; ++ib) {
            uint32_t aux;
            std::memcpy(&aux, b + 66 + 4 * ib, 4);
            const __m256 db = _mm256_set1_ps(d * (0.5f + float(aux >> 28)) * 0.5f);
            const uint8_t* q = b + 2 + 8 * ib;
            for (int l = 0; l < 4; ++l, out += 8)
                store_grid8(out, db, kIQ3XXSGrid[q[2 * l]] | uint64_t(kIQ3XXSGrid[q[2 * l + 1]]) << 32, kIQSigns[(aux >> (7 * l)) & 127]);
        }
    }
}

RILL_AVX2 void dequantize_iq3_s_avx2(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const uint8_t* b = src + i * sizeof(BlockIQ3_S);
        uint16_t half;
        std::memcpy(&half, b, 2);
        const float d = f16_to_f32(half);
        for (int ib = 0; ib < 8; ++ib) {
            const __m256 db = _mm256_set1_ps(d * float(1 + 2 * ((b[106 + ib / 2] >> (4 * (ib % 2))) & 0xf)));
            const uint8_t* q = b + 2 + 8 * ib;
            const int qh = b[66 + ib];
            for (int l = 0; l < 4; ++l, out += 8) {
                const uint32_t first = kIQ3SGrid[size_t(q[2 * l] | (((qh >> (2 * l)) & 1) << 8))];
                const uint32_t second = kIQ3SGrid[size_t(q[2 * l + 1] | (((qh >> (2 * l + 1)) & 1) << 8))];
                store_grid8(out, db, first | uint64_t(second) << 32, b[74 + 4 * ib + l]);
            }
        }
    }
}

// Asked once: CPUID traps to the hypervisor on a virtual machine, and the KV cache converts a head at a
// time. The AVX2 path requires F16C too (gemv.cpp's cpu_supports).
bool has_avx2() {
    static const bool yes = cpu_supports(KernelPath::Avx2);
    return yes;
}
#endif

}  // namespace

void f16_to_f32_row(const uint16_t* in, float* out, size_t n) {
#ifdef RILL_X86
    if (has_avx2()) return f16_to_f32_f16c(in, out, n);
#endif
    for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

void f32_to_bf16_row(const float* in, uint16_t* out, size_t n) {
#ifdef RILL_X86
    if (has_avx2()) return f32_to_bf16_avx2(in, out, n);
#endif
    for (size_t i = 0; i < n; ++i) out[i] = f32_to_bf16(in[i]);
}

void dequantize_row(TensorType type, const uint8_t* row, float* out, size_t n) {
#ifdef RILL_X86
    if (has_avx2()) {
        switch (type) {
            case TensorType::F16: return f16_to_f32_f16c(reinterpret_cast<const uint16_t*>(row), out, n);
            case TensorType::Q4_0: return dequantize_q4_0_avx2(row, out, n / 32);
            case TensorType::Q8_0: return dequantize_q8_0_avx2(row, out, n / 32);
            case TensorType::Q4_K: return dequantize_q4_k_avx2(row, out, n / 256);
            case TensorType::Q6_K: return dequantize_q6_k_avx2(row, out, n / 256);
            case TensorType::IQ2_XXS: return dequantize_iq2_xxs_avx2(row, out, n / 256);
            case TensorType::IQ2_XS: return dequantize_iq2_xs_avx2(row, out, n / 256);
            case TensorType::IQ2_S: return dequantize_iq2_s_avx2(row, out, n / 256);
            case TensorType::IQ3_XXS: return dequantize_iq3_xxs_avx2(row, out, n / 256);
            case TensorType::IQ3_S: return dequantize_iq3_s_avx2(row, out, n / 256);
            default: break;
        }
    }
#endif
    rill::dequantize_row(type, row, out, n);
}

}  // namespace rill::simd
