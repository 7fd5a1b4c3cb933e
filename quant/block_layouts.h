// Block layouts of ggml's quantized types, byte for byte as they sit in a GGUF file.
// Halves are kept as raw uint16_t bits so the structs are trivially copyable and packed.
#pragma once
#include <cstdint>

namespace rill {

inline constexpr int kSuperBlock = 256;  // ggml's QK_K: elements per k-quant super-block

struct BlockQ4_0 { uint16_t d; uint8_t qs[16]; };
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[16]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };
struct BlockIQ4_NL { uint16_t d; uint8_t qs[16]; };
// OCP MX FP4: an E8M0 exponent, then element j's 4-bit E2M1 code in the low nibble of qs[j] and
// element j + 16's in the high nibble.
struct BlockMXFP4 { uint8_t e; uint8_t qs[16]; };

// 16 sub-blocks of 16: 4-bit scale and 4-bit min per sub-block, 2-bit quants.
struct BlockQ2_K { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; };
// 16 sub-blocks of 16: 6-bit scales packed in 12 bytes, 2 low bits in qs, high bit in hmask.
struct BlockQ3_K { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; };
// 8 sub-blocks of 32: 6-bit scale and min packed in 12 bytes, 4-bit quants.
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; };
// As Q4_K plus a fifth bit per quant in qh.
struct BlockQ5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
// 16 sub-blocks of 16: 8-bit signed scales, 4 low bits in ql, 2 high bits in qh.
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; };
// 8 sub-blocks of 32 with 6-bit scales, quants index the non-linear IQ4 table.
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; };

// The IQ1–IQ3 types: 256 values as grid indices (quant/iq_grids.h) with signs and small scales.
// IQ2_XXS: per 32 values four 8-bit grid indices, then 4×7 sign bits and a 4-bit scale in a uint32.
struct BlockIQ2_XXS { uint16_t d; uint16_t qs[32]; };
// IQ2_XS: per 8 values a 9-bit index and a 7-bit sign index; two 4-bit scales per 32.
struct BlockIQ2_XS { uint16_t d; uint16_t qs[32]; uint8_t scales[8]; };
// IQ2_S: 10-bit indices (low 8 in qs[0..31], 2 high in qh), 8 sign bits per 8 in qs[32..63].
struct BlockIQ2_S { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t scales[8]; };
// IQ3_XXS: 8-bit indices of 4 values in qs[0..63], then per 32 values a uint32 of signs and scale.
struct BlockIQ3_XXS { uint16_t d; uint8_t qs[96]; };
// IQ3_S: 9-bit indices of 4 values (high bits in qh), 8 sign bits per 8, 4-bit scales per 32.
struct BlockIQ3_S { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t signs[32]; uint8_t scales[4]; };
// IQ1_S: 11-bit indices of 8 signed values; per 32, qh holds 4×3 index bits, a 3-bit scale and the
// delta's sign.
struct BlockIQ1_S { uint16_t d; uint8_t qs[32]; uint16_t qh[8]; };
// IQ1_M: no d field; the half scale is spread over the top nibbles of the four 16-bit scale words.
struct BlockIQ1_M { uint8_t qs[32]; uint8_t qh[16]; uint8_t scales[8]; };
// Ternary: TQ1_0 packs 5 trits per byte (qs) and 4 per byte (qh) in base 3; TQ2_0 2 bits each.
struct BlockTQ1_0 { uint8_t qs[48]; uint8_t qh[4]; uint16_t d; };
struct BlockTQ2_0 { uint8_t qs[64]; uint16_t d; };

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockIQ2_XXS) == 66);
static_assert(sizeof(BlockIQ2_XS) == 74);
static_assert(sizeof(BlockIQ2_S) == 82);
static_assert(sizeof(BlockIQ3_XXS) == 98);
static_assert(sizeof(BlockIQ3_S) == 110);
static_assert(sizeof(BlockIQ1_S) == 50);
static_assert(sizeof(BlockIQ1_M) == 56);
static_assert(sizeof(BlockTQ1_0) == 54);
static_assert(sizeof(BlockTQ2_0) == 66);

// The 16 levels IQ4_NL and IQ4_XS quants index, from ggml.
inline constexpr int8_t kIQ4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// E2M1's values doubled, as ggml stores them (so they are integers); the scale is halved to match.
inline constexpr int8_t kMXFP4Levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Half of 2^(e - 127), the E8M0 scale paired with the doubled levels: ggml's e8m0_to_fp32_half,
// denormal for e < 2.
inline float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? uint32_t(0x00200000) << e : uint32_t(e - 1) << 23;
    float f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
}

// IQ1_M's half scale, gathered from the top nibbles of its four 16-bit scale words.
inline uint16_t iq1_m_scale_bits(const uint8_t scales[8]) {
    uint16_t half = 0;
    for (int k = 0; k < 4; ++k) half |= uint16_t(((scales[2 * k + 1] >> 4) & 0xf) << (4 * k));
    return half;
}

// Scale and min of sub-block j of Q4_K/Q5_K: 6 bits each, packed into 12 bytes.
inline void k4_scale_min(int j, const uint8_t packed[12], int* scale, int* min) {
    if (j < 4) {
        *scale = packed[j] & 63;
        *min = packed[j + 4] & 63;
    } else {
        *scale = (packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4);
        *min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
    }
}

}  // namespace rill
