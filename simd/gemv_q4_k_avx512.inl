// The Q4_K group kernel on 512-bit registers, for the Avx512 path (included by gemv_body.inl there).
// It sums the same integers as q4_k_sums in the same float steps after, so its results are the
// 256-bit kernel's bit for bit (tested against the avx2 path).
//
// Quants: each 32 bytes are loaded into both halves of a register and shifted by 0 in one half and 4
// in the other (vpsrlvw), which lays out sub-blocks 2i and 2i+1 as the 64 activations after them lie;
// one byte product and one VNNI word dot product (vpdpwssd, the sub-blocks' scales applied and added
// in) cover 64 weights.
// Scales: the eight rows' packed 6-bit scales and mins are unpacked together, four rows to a
// register (one per 128-bit lane), with byte shuffles and masks instead of scalar code per row, and
// the eight rows' mins meet the activation's sub-block sums in two word dot products. Unpacking one
// row at a time had been most of the kernel's instructions (0.55 per weight byte; now 0.3), and on a
// host that keeps a core's sibling thread busy, the kernel then fell below that core's share of memory.

// Four rows' scale bytes, one row per 128-bit lane, as [sc0..3, m0..3, sc4..7, m4..7] (6 bits each)
// from ggml's packing [b0..b11]: sc0..3 = b0..3 & 63, m0..3 = b4..7 & 63,
// sc4..7 = (b8..11 & 15) | (b0..3 >> 6) << 4, m4..7 = (b8..11 >> 4) | (b4..7 >> 6) << 4.
static inline __m512i q4_k_unpack_scales4(const uint8_t* r0, const uint8_t* r1, const uint8_t* r2, const uint8_t* r3) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0)));  // 12 bytes used of 16
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r1)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r2)), 2);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r3)), 3);
    const __m512i first = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7));
    const __m512i last = _mm512_broadcast_i32x4(_mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, 8, 9, 10, 11, 8, 9, 10, 11));
    const __m512i p = _mm512_shuffle_epi8(v, first);  // [b0..7, b0..7]
    const __m512i q = _mm512_shuffle_epi8(v, last);   // [0 x8, b8..11, b8..11]
    const __m512i low6 = _mm512_broadcast_i32x4(_mm_setr_epi8(63, 63, 63, 63, 63, 63, 63, 63, 0, 0, 0, 0, 0, 0, 0, 0));
    const __m512i top2 = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 48, 48, 48, 48, 48, 48, 48, 48));
    const __m512i low4 = _mm512_set1_epi8(15);
    // Words 4 and 5 of a lane (b8..11 for the scales) stay; words 6 and 7 (for the mins) shift by 4.
    const __m512i nibble = _mm512_broadcast_i32x4(_mm_setr_epi16(0, 0, 0, 0, 0, 0, 4, 4));
    const __m512i high = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(p, 2), top2), _mm512_and_si512(_mm512_srlv_epi16(q, nibble), low4));
    return _mm512_or_si512(_mm512_and_si512(p, low6), high);
}

// Lanes 0..3 of the result are the 128-bit lane totals of a, lanes 4..7 those of b.
static inline __m256i lane_totals4x2(__m512i a, __m512i b) {
    const __m512i t = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
    const __m512i u = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_BADC));  // each lane [a, b, a, b]
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0), u));
}

template <int T>
static void dot_groups_q4_k_512(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    Act256 a[T];
    for (int t = 0; t < T; ++t) a[t] = act256(acts[t], n);
    const size_t nb = n / 256;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i nibble_shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    // A row's lane of unpacked scales, copied to every lane; then sub-block scales 2i (low half) and
    // 2i+1 (high half) as words, zero-extended by the shuffle (-1 gives a zero byte).
    __m512i lane_of[4];
    for (int l = 0; l < 4; ++l) lane_of[l] = _mm512_setr_epi32(4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3, 4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3,
                                                               4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3, 4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3);
    __m512i scale_pick[4];
    for (int i = 0; i < 4; ++i) {
        // Scale k sits at byte k (k < 4) or k + 4 of the lane.
        const auto at = [](int k) { return int16_t(0xff00 | (k < 4 ? k : k + 4)); };
        scale_pick[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16(at(2 * i))), _mm256_set1_epi16(at(2 * i + 1)), 1);
    }
    const __m512i min_words = _mm512_broadcast_i32x4(_mm_setr_epi8(4, -1, 5, -1, 6, -1, 7, -1, 12, -1, 13, -1, 14, -1, 15, -1));
    for (size_t g = 0; g < n_groups; ++g) {
        const uint8_t* base = groups + g * nb * 1152;
        F32x8 acc[T], mins[T];
        for (int t = 0; t < T; ++t) acc[t] = mins[t] = zero_f();
        for (size_t b = 0; b < nb; ++b) {
            const uint8_t* chunk = base + b * 1152;
            prefetch_ahead(chunk, 1152);
            const auto row = [&](int i) { return chunk + 32 + 140 * size_t(kInterleaveLanes[i]); };
            // Rows in lane order: the even rows' scales in one register, the odd rows' in the other.
            const __m512i scales[2] = {q4_k_unpack_scales4(row(0), row(1), row(2), row(3)), q4_k_unpack_scales4(row(4), row(5), row(6), row(7))};
            const int8_t* x[T];
            __m512i block_sums[T];
            for (int t = 0; t < T; ++t) {
                x[t] = a[t].q + 256 * b;
                // The eight sub-blocks' activation sums as words (pairs of the sixteen sums of 16).
                const __m256i pairs = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t].sums + 16 * b)), _mm256_set1_epi16(1));
                block_sums[t] = _mm512_broadcast_i32x4(_mm256_cvtepi32_epi16(pairs));
            }
            I32x8 p[T][8];
            // Unrolled, so each row's place, lane and register are constants, not a dozen
            // instructions of indexing per row.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 8
#else
#pragma unroll 8
#endif
            for (int i = 0; i < 8; ++i) {
                const __m512i mine = _mm512_permutexvar_epi32(lane_of[i % 4], scales[i / 4]);
                __m512i sum[T];
                for (int t = 0; t < T; ++t) sum[t] = _mm512_setzero_si512();
                const uint8_t* qs = row(i) + 12;
                for (int k = 0; k < 4; ++k) {
                    const __m512i bytes = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * k)));
                    const __m512i w = _mm512_and_si512(_mm512_srlv_epi16(bytes, nibble_shift), low4);
                    const __m512i s = _mm512_shuffle_epi8(mine, scale_pick[k]);
                    for (int t = 0; t < T; ++t)
                        sum[t] = _mm512_dpwssd_epi32(sum[t], _mm512_maddubs_epi16(w, _mm512_loadu_si512(x[t] + 64 * k)), s);
                }
                for (int t = 0; t < T; ++t) p[t][i] = {_mm256_add_epi32(_mm512_castsi512_si256(sum[t]), _mm512_extracti64x4_epi64(sum[t], 1))};
            }
            for (int t = 0; t < T; ++t) {
                // Each row's mins times the sub-block sums, the eight rows in lane order.
                const __m256i min_totals = lane_totals4x2(_mm512_madd_epi16(_mm512_shuffle_epi8(scales[0], min_words), block_sums[t]),
                                                          _mm512_madd_epi16(_mm512_shuffle_epi8(scales[1], min_words), block_sums[t]));
                const F32x8 dx = splat_f(a[t].d[b]);
                acc[t] = fma_f(to_f32(hsum8x8(p[t])), mul_f(load_f16(chunk), dx), acc[t]);
                mins[t] = fma_f(to_f32({min_totals}), mul_f(load_f16(chunk + 16), dx), mins[t]);
            }
        }
        for (int t = 0; t < T; ++t) store_group(outs[t] + 8 * g, add_f(acc[t], mul_f(mins[t], splat_f(-1.0f))));
    }
}
