// Half-precision and bfloat16 conversions, bit-exact with IEEE 754 and ggml.
#pragma once
#include <cstdint>
#include <cstring>

namespace rill {

inline float bits_to_f32(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint32_t f32_to_bits(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
}

// Exact: every half value, subnormals, infinities and NaNs included, is representable in float.
inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) return bits_to_f32(sign | ((exponent + 112) << 23) | (mantissa << 13));
    if (mantissa == 0) return bits_to_f32(sign);
    // Subnormal half: normalise it into a float.
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        ++shift;
    }
    mantissa &= 0x3ffu;
    return bits_to_f32(sign | uint32_t(113 - shift) << 23 | (mantissa << 13));
}

// Round to nearest, ties to even; overflow gives infinity, NaN stays NaN.
inline uint16_t f32_to_f16(float f) {
    const uint32_t x = f32_to_bits(f);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
    const uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: infinity
    if (abs < 0x38800000u) {
        // Result is subnormal or zero: scale so the half ulp (2^-24) becomes 1.0 and round there.
        const float scaled = bits_to_f32(abs) * 16777216.0f;  // exact: a power-of-two scale
        const uint32_t rounded = uint32_t(__builtin_nearbyintf(scaled));
        return uint16_t(sign | rounded);
    }
    const uint32_t mantissa_odd = (abs >> 13) & 1u;
    const uint32_t rounded = abs + 0xfffu + mantissa_odd;
    return uint16_t(sign | ((rounded - (112u << 23)) >> 13));
}

inline float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
    const uint32_t x = f32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
    return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace rill
