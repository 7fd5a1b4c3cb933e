// The Q4_K group kernel on 512-bit registers, for the Avx512 path (included by gemv_body.inl there).
// It sums the same integers as q4_k_sums in the same float steps after, so its results are the
// 256-bit kernel's bit for bit (tested against the avx2 path).
//
// Quants: a 64-byte load is the same 8-byte piece of all eight rows (quant/interleave.h): sixteen
// weights a row, eight in the low nibbles (sub-block 2k) and eight in the high (2k+1). The activation
// piece for each half is one broadcast 8 bytes, so one VNNI byte dot product (vpdpbusd) multiplies 64
// weights of eight rows at once, and a sub-block's scales meet its sums once per eight rows: a word
// dot product (vpdpwssd) per sub-block, the dword sums (at most 16 x 15 x 128, inside int16) taken as
// words. Rows kept apart in their own registers had cost a byte product, a word dot product and a
// scale shuffle per 64 weights of each row; on an AMD Zen 4 that kernel multiplied 25.5 GB/s of
// weights in L2, and streaming from memory it fell to half of what memory gave, where Q8_0's
// 50 GB/s kernel kept 84%.
// Scales: the eight rows' packed 6-bit scales and mins are unpacked together, four rows to a
// register (one per 128-bit lane), with byte shuffles and masks instead of scalar code per row, and
// the eight rows' mins meet the activation's sub-block sums in two word dot products.

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
    // Sub-block k's scale of rows 2l and 2l+1 (128-bit lane l, one row per 64-bit half) as dwords,
    // zero-extended by the shuffle (-1 gives a zero byte), from a register holding [row 2l's 8 bytes,
    // row 2l+1's 8 bytes] per lane.
    __m512i scale_pick[4];
    for (int k = 0; k < 4; ++k)
        scale_pick[k] = _mm512_broadcast_i32x4(_mm_setr_epi8(char(k), -1, -1, -1, char(k), -1, -1, -1, char(8 + k), -1, -1, -1, char(8 + k), -1, -1, -1));
    const __m512i min_words = _mm512_broadcast_i32x4(_mm_setr_epi8(4, -1, 5, -1, 6, -1, 7, -1, 12, -1, 13, -1, 14, -1, 15, -1));
    for (size_t g = 0; g < n_groups; ++g) {
        const uint8_t* base = groups + g * nb * 1152;
        F32x8 acc[T], mins[T];
        for (int t = 0; t < T; ++t) acc[t] = mins[t] = zero_f();
        for (size_t b = 0; b < nb; ++b) {
            const uint8_t* chunk = base + b * 1152;
            const auto packed = [&](int r) { return chunk + 32 + 12 * r; };
            // Rows in lane order: the even rows' scales in one register, the odd rows' in the other.
            const __m512i even = q4_k_unpack_scales4(packed(0), packed(2), packed(4), packed(6));
            const __m512i odd = q4_k_unpack_scales4(packed(1), packed(3), packed(5), packed(7));
            // Per lane l: [sc0..3, m0..3] of rows 2l and 2l+1, then [sc4..7, m4..7] of the same rows.
            const __m512i first_half = _mm512_unpacklo_epi64(even, odd), second_half = _mm512_unpackhi_epi64(even, odd);
            const uint8_t* qs = chunk + 128;
            const int8_t* x[T];
            __m512i total[T];
            for (int t = 0; t < T; ++t) {
                x[t] = a[t].q + 256 * b;
                total[t] = _mm512_setzero_si512();
            }
            for (int k = 0; k < 4; ++k) {
                prefetch_ahead_part<1152, 4>(chunk, k);
                __m512i lo_sum[T], hi_sum[T];
                for (int t = 0; t < T; ++t) lo_sum[t] = hi_sum[t] = _mm512_setzero_si512();
                for (int piece = 0; piece < 4; ++piece) {
                    const __m512i bytes = _mm512_loadu_si512(qs + 64 * (4 * k + piece));
                    const __m512i lo = _mm512_and_si512(bytes, low4), hi = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low4);
                    for (int t = 0; t < T; ++t) {
                        int64_t x_lo, x_hi;
                        std::memcpy(&x_lo, x[t] + 64 * k + 8 * piece, 8);
                        std::memcpy(&x_hi, x[t] + 64 * k + 32 + 8 * piece, 8);
                        lo_sum[t] = _mm512_dpbusd_epi32(lo_sum[t], lo, _mm512_set1_epi64(x_lo));
                        hi_sum[t] = _mm512_dpbusd_epi32(hi_sum[t], hi, _mm512_set1_epi64(x_hi));
                    }
                }
                // Sub-blocks 2k and 2k+1: scales 0-3 in the first half of each row's bytes, 4-7 in the second.
                const __m512i& from = k < 2 ? first_half : second_half;
                const __m512i scale_lo = _mm512_shuffle_epi8(from, scale_pick[(2 * k) % 4]);
                const __m512i scale_hi = _mm512_shuffle_epi8(from, scale_pick[(2 * k + 1) % 4]);
                for (int t = 0; t < T; ++t) total[t] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(total[t], lo_sum[t], scale_lo), hi_sum[t], scale_hi);
            }
            __m512i block_sums[T];
            for (int t = 0; t < T; ++t) {
                // The eight sub-blocks' activation sums as words (pairs of the sixteen sums of 16).
                const __m256i pairs = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t].sums + 16 * b)), _mm256_set1_epi16(1));
                block_sums[t] = _mm512_broadcast_i32x4(_mm256_cvtepi32_epi16(pairs));
            }
            for (int t = 0; t < T; ++t) {
                const __m256i rows = row_pairs_in_lane_order(total[t]);
                // Each row's mins times the sub-block sums, the eight rows in lane order.
                const __m256i min_totals = lane_totals4x2(_mm512_madd_epi16(_mm512_shuffle_epi8(even, min_words), block_sums[t]),
                                                          _mm512_madd_epi16(_mm512_shuffle_epi8(odd, min_words), block_sums[t]));
                const F32x8 dx = splat_f(a[t].d[b]);
                acc[t] = fma_f(to_f32({rows}), mul_f(load_f16(chunk), dx), acc[t]);
                mins[t] = fma_f(to_f32({min_totals}), mul_f(load_f16(chunk + 16), dx), mins[t]);
            }
        }
        for (int t = 0; t < T; ++t) store_group(outs[t] + 8 * g, add_f(acc[t], mul_f(mins[t], splat_f(-1.0f))));
    }
}
