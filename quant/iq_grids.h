// The lattices ggml's IQ1–IQ3 formats index: each grid entry is 8 (IQ1, IQ2) or 4 (IQ3) small values
// chosen from a 3- or 8-letter alphabet. iq_grids.inc holds them packed as levels (2 or 3 bits per
// element, element 0 lowest), made from ggml's own dequantizers by tests/tools/ggml_reference.cpp;
// here they are expanded once, at compile time, to the bytes the dequantizers and kernels read.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace rill {

#include "iq_grids.inc"

namespace iq_detail {

template <size_t N, size_t L>
constexpr std::array<uint64_t, N> expand8(const uint16_t (&levels)[N], const std::array<uint8_t, L>& alphabet) {
    std::array<uint64_t, N> grid{};
    for (size_t e = 0; e < N; ++e)
        for (int j = 0; j < 8; ++j) grid[e] |= uint64_t(alphabet[(levels[e] >> (2 * j)) & 3]) << (8 * j);
    return grid;
}

template <size_t N>
constexpr std::array<uint32_t, N> expand4(const uint16_t (&levels)[N], const std::array<uint8_t, 8>& alphabet) {
    std::array<uint32_t, N> grid{};
    for (size_t e = 0; e < N; ++e)
        for (int j = 0; j < 4; ++j) grid[e] |= uint32_t(alphabet[(levels[e] >> (3 * j)) & 7]) << (8 * j);
    return grid;
}

}  // namespace iq_detail

// Unsigned bytes: {8, 25, 43} for the IQ2 types, {4, 12, ..., 52, 62} for IQ3_XXS, {1, 3, ..., 15} for IQ3_S.
inline constexpr std::array<uint64_t, 256> kIQ2XXSGrid = iq_detail::expand8(kIQ2XXSLevels, std::array<uint8_t, 3>{8, 25, 43});
inline constexpr std::array<uint64_t, 512> kIQ2XSGrid = iq_detail::expand8(kIQ2XSLevels, std::array<uint8_t, 3>{8, 25, 43});
inline constexpr std::array<uint64_t, 1024> kIQ2SGrid = iq_detail::expand8(kIQ2SLevels, std::array<uint8_t, 3>{8, 25, 43});
inline constexpr std::array<uint32_t, 256> kIQ3XXSGrid =
    iq_detail::expand4(kIQ3XXSLevels, std::array<uint8_t, 8>{4, 12, 20, 28, 36, 44, 52, 62});
inline constexpr std::array<uint32_t, 512> kIQ3SGrid = iq_detail::expand4(kIQ3SLevels, std::array<uint8_t, 8>{1, 3, 5, 7, 9, 11, 13, 15});
// Signed bytes -1, 0, +1 (as 0xff, 0, 1).
inline constexpr std::array<uint64_t, 2048> kIQ1SGrid = iq_detail::expand8(kIQ1SLevels, std::array<uint8_t, 3>{0xff, 0, 1});
// The same times 8 (-8, 0, 8), for kernels that fold IQ1's ±1/8 shift into integer bytes.
inline constexpr std::array<uint64_t, 2048> kIQ1SGrid8 = iq_detail::expand8(kIQ1SLevels, std::array<uint8_t, 3>{0xf8, 0, 8});

// IQ2_XXS, IQ2_XS and IQ3_XXS store 7 sign bits per 8 values; the eighth makes the count of negatives
// even (the quantizer flips its least important value to make it so).
inline constexpr std::array<uint8_t, 128> kIQSigns = [] {
    std::array<uint8_t, 128> signs{};
    for (int k = 0; k < 128; ++k) signs[size_t(k)] = uint8_t(k | ((__builtin_popcount(unsigned(k)) & 1) << 7));
    return signs;
}();

// IQ1_S and IQ1_M shift each group of 8 by ±1/8 of the scale.
inline constexpr float kIQ1Delta = 0.125f;

}  // namespace rill
