// One Q6_K super-block on 512-bit registers, for the Avx512 path's group kernel (included by
// gemv_body.inl there): the same integers as q6_k_sums, so the same floats after it. A 64-byte load
// of low bits holds two 32-weight runs; the high bits for both come from one 32-byte load shifted by
// a different count per half (vpsllvw/vpsrlvw), so one byte product and one VNNI word dot product
// (vpdpwssd, the 16-weight sub-blocks' scales applied and added in) cover 64 weights where
// q6_k_sums spends four instructions per 32. Counted in the compiled group kernel (GCC 12): 0.28
// instructions per weight byte against 0.49; from cache one Zen 5 core read 32-39 GB/s against 25.

// The words of a row's 16 scales, each repeated over the eight word lanes its sub-block's pair
// products occupy: register 2h + j covers sub-blocks 8h + 4j .. 8h + 4j + 3.
static inline void q6_k_scale_words(const int8_t* scales, __m512i out[4]) {
    const __m512i words = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales))));
    for (int r = 0; r < 4; ++r) {
        alignas(64) int16_t index[32];
        for (int w = 0; w < 32; ++w) index[w] = int16_t(4 * r + w / 8);
        out[r] = _mm512_permutexvar_epi16(_mm512_load_si512(index), words);
    }
}

template <int T>
static inline void q6_k_sums_512(const uint8_t* blk, const int8_t* const* x, const int16_t* const* sums16, I32x8* sum, int32_t* offset_sum) {
    const int8_t* scales = reinterpret_cast<const int8_t*>(blk + 192);
    __m512i s[4];
    q6_k_scale_words(scales, s);
    const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
    // Shift counts per 16-bit lane: the first 32 weights of a run take the high bits at 4 (and 0),
    // the second 32 at 2 (and -2).
    const __m512i up = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i down = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    __m512i acc[T];
    for (int t = 0; t < T; ++t) {
        offset_sum[t] = dot_i8x16(scales, sums16[t]);
        acc[t] = _mm512_setzero_si512();
    }
    for (int h = 0; h < 2; ++h) {
        const __m512i low = _mm512_loadu_si512(blk + 64 * h);
        const __m512i high = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h)));
        // Weights 128h + 0..63, then 128h + 64..127, as stored (0..63).
        const __m512i first = _mm512_or_si512(_mm512_and_si512(low, low4), _mm512_and_si512(_mm512_sllv_epi16(high, up), bits45));
        const __m512i second = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(low, 4), low4),
                                               _mm512_and_si512(_mm512_srlv_epi16(high, down), bits45));
        for (int t = 0; t < T; ++t) {
            const int8_t* xs = x[t] + 128 * h;
            acc[t] = _mm512_dpwssd_epi32(acc[t], _mm512_maddubs_epi16(first, _mm512_loadu_si512(xs)), s[2 * h]);
            acc[t] = _mm512_dpwssd_epi32(acc[t], _mm512_maddubs_epi16(second, _mm512_loadu_si512(xs + 64)), s[2 * h + 1]);
        }
    }
    for (int t = 0; t < T; ++t) sum[t] = {_mm256_add_epi32(_mm512_castsi512_si256(acc[t]), _mm512_extracti64x4_epi64(acc[t], 1))};
}
