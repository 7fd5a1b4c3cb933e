// One Q4_K super-block on 512-bit registers, for the Avx512 path's group kernel (included by
// gemv_body.inl there): the same integers as q4_k_sums, so the same floats after it. Each 32 bytes of
// quants are loaded into both halves of a register and shifted by 0 in one half and 4 in the other
// (vpsrlvw), which lays out sub-blocks 2i and 2i+1 as the 64 activations after them lie in memory;
// one byte product and one VNNI word dot product (vpdpwssd, the sub-blocks' scales applied and added
// in) then cover 64 weights, where q4_k_sums spends four instructions per 32. Counted in the compiled
// group kernel (GCC 12): about 0.55 instructions per weight byte against 0.79. On one Zen 5 core with
// the matrix in cache the 256-bit form read 17 GB/s of weights, below that core's share of memory
// bandwidth; the 512-bit one 23-27.

// A row's eight 6-bit scales as words, register i holding sub-block 2i's over its low 16 word lanes
// and sub-block 2i+1's over its high 16.
static inline void q4_k_scale_words(const uint8_t scales[8], __m512i out[4]) {
    uint64_t bits;
    std::memcpy(&bits, scales, 8);
    const __m512i words = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(bits))));
    for (int i = 0; i < 4; ++i) {
        // Byte indices (2w, 2w+1) of word w, repeated in each 128-bit lane of a half.
        const __m256i lo = _mm256_set1_epi16(int16_t(0x0100 + 0x0202 * (2 * i)));
        const __m256i hi = _mm256_set1_epi16(int16_t(0x0100 + 0x0202 * (2 * i + 1)));
        out[i] = _mm512_shuffle_epi8(words, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
    }
}

template <int T>
static inline void q4_k_sums_512(const uint8_t* packed_scales, const uint8_t* qs, const int8_t* const* x, const int16_t* const* sums16,
                                 I32x8* sum, I32x8* min_parts) {
    uint8_t scale[8], min[8];
    unpack_k4_scales(packed_scales, scale, min);
    __m512i s[4];
    q4_k_scale_words(scale, s);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i nibble_shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    __m512i acc[T];
    for (int t = 0; t < T; ++t) {
        min_parts[t] = madd_u8x8_pairs(min, sums16[t]);
        acc[t] = _mm512_setzero_si512();
    }
    for (int i = 0; i < 4; ++i) {
        const __m512i bytes = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * i)));
        const __m512i w = _mm512_and_si512(_mm512_srlv_epi16(bytes, nibble_shift), low4);
        for (int t = 0; t < T; ++t)
            acc[t] = _mm512_dpwssd_epi32(acc[t], _mm512_maddubs_epi16(w, _mm512_loadu_si512(x[t] + 64 * i)), s[i]);
    }
    for (int t = 0; t < T; ++t) sum[t] = {_mm256_add_epi32(_mm512_castsi512_si256(acc[t]), _mm512_extracti64x4_epi64(acc[t], 1))};
}
