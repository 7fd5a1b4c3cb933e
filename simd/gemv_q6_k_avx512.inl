// The Q6_K group kernel on 512-bit registers, for the Avx512 path (included by gemv_body.inl there).
// It sums the same integers as q6_k_sums in the same float steps after, so its results are the
// 256-bit kernel's bit for bit (tested against the avx2 path).
//
// A 64-byte load is the same 8-byte piece of all eight rows (quant/interleave.h): from a piece of
// ql's low half, one of its high half and one of qh come 8 weights of each of four sub-blocks, eight
// rows at a time. Each 64 of them meet a broadcast activation piece in one VNNI byte dot product
// (vpdpbusd: four products of at most 63 x 128, inside int16), and that in one word dot product
// (vpdpwssd) with the eight rows' scale of that sub-block. Rows kept apart had cost a byte product, a
// word dot product and a lane-crossing word permute per row and sub-block pair; on an AMD Zen 4
// (family 25 model 17) that kernel multiplied 33 GB/s of weights from L2 and streamed 17.7 GB/s from
// memory on two threads where Q8_0 streamed 29.5.

// 64 bytes as two 32-byte loads. A 1680-byte chunk leaves three of every four chunks off 64-byte
// alignment, so most single 64-byte loads here span two lines; as halves, one in four does. On the
// Zen 4 (bench_gemv Q6_K 4096 x 4096, builds alternating, 3 rounds) one thread streamed 16.1-17.1 GB/s
// against 14.2-15.4, two 31-33 against 26.5-29.4.
static inline __m512i load_halves(const uint8_t* p) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)), 1);
}

template <int T>
static void dot_groups_q6_k_512(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    Act256 a[T];
    for (int t = 0; t < T; ++t) a[t] = act256(acts[t], n);
    const size_t nb = n / 256;
    const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
    // From a scale pair's 16 bytes (byte 2r + e: row r's scale of sub-block 2p + e) in every lane, lane
    // l's dwords [scale, 0] of rows 2l and 2l+1 (one row per 64-bit half): the byte goes to the top
    // of the low word (-1 gives a zero byte) and an arithmetic shift brings it down with its sign.
    __m512i scale_pick[2];
    for (int e = 0; e < 2; ++e) {
        alignas(64) int8_t index[64];
        for (int i = 0; i < 64; ++i) {
            const int lane = i / 16, dword = i % 16 / 4, byte = i % 4;
            index[i] = byte == 1 ? int8_t(4 * lane + 2 * (dword / 2) + e) : int8_t(-1);
        }
        scale_pick[e] = _mm512_load_si512(index);
    }
    // The activation sums for scale pairs 2m and 2m+1 as laid out (word 16q + 2r + e: sum 4m + 2q + e).
    __m512i sum_pick[4];
    for (int m = 0; m < 4; ++m) {
        alignas(64) int16_t index[32];
        for (int w = 0; w < 32; ++w) index[w] = int16_t(4 * m + 2 * (w / 16) + w % 2);
        sum_pick[m] = _mm512_load_si512(index);
    }
    const __m256i rows_to_lane_order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    for (size_t g = 0; g < n_groups; ++g) {
        const uint8_t* base = groups + g * nb * 1680;
        F32x8 acc[T], offsets[T];
        for (int t = 0; t < T; ++t) acc[t] = offsets[t] = zero_f();
        for (size_t b = 0; b < nb; ++b) {
            const uint8_t* chunk = base + b * 1680;
            const uint8_t* ql = chunk + 16;
            const uint8_t* qh = ql + 1024;
            const uint8_t* sc = ql + 1536;
            const int8_t* x[T];
            __m512i total[T];
            __m256i offset[T];
            for (int t = 0; t < T; ++t) {
                x[t] = a[t].q + 256 * b;
                total[t] = _mm512_setzero_si512();
                // Each row's scales times the activation sums (the +32 to take back off), rows in order.
                const __m512i sums = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t].sums + 16 * b)));
                __m512i o = _mm512_setzero_si512();
                for (int m = 0; m < 4; ++m) {
                    const __m512i pairs = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + 32 * m)));
                    o = _mm512_add_epi32(o, _mm512_madd_epi16(pairs, _mm512_permutexvar_epi16(sum_pick[m], sums)));
                }
                offset[t] = _mm256_permutevar8x32_epi32(_mm256_add_epi32(_mm512_castsi512_si256(o), _mm512_extracti64x4_epi64(o, 1)), rows_to_lane_order);
            }
            for (int half = 0; half < 2; ++half) {
                // Sub-block 8 half + 2i + s: i picks the 32-weight run, s the first or second 16 of it.
                __m512i scale[4][2];
                for (int i = 0; i < 4; ++i)
                    for (int s = 0; s < 2; ++s) {
                        const int sub = 8 * half + 2 * i + s;
                        const __m512i pair = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 16 * (sub / 2))));
                        scale[i][s] = _mm512_srai_epi16(_mm512_shuffle_epi8(pair, scale_pick[sub % 2]), 8);
                    }
                for (int j = 0; j < 4; ++j) {
                    prefetch_ahead_part<1680, 8>(chunk, 4 * half + j);
                    const __m512i l0 = load_halves(ql + 64 * (8 * half + j)), l1 = load_halves(ql + 64 * (8 * half + 4 + j));
                    const __m512i high = load_halves(qh + 64 * (4 * half + j));
                    const __m512i u[4] = {_mm512_or_si512(_mm512_and_si512(l0, low4), _mm512_and_si512(_mm512_slli_epi16(high, 4), bits45)),
                                          _mm512_or_si512(_mm512_and_si512(l1, low4), _mm512_and_si512(_mm512_slli_epi16(high, 2), bits45)),
                                          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), low4), _mm512_and_si512(high, bits45)),
                                          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), low4), _mm512_and_si512(_mm512_srli_epi16(high, 2), bits45))};
                    for (int i = 0; i < 4; ++i)
                        for (int t = 0; t < T; ++t) {
                            int64_t piece;
                            std::memcpy(&piece, x[t] + 128 * half + 32 * i + 8 * j, 8);
                            const __m512i products = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[i], _mm512_set1_epi64(piece));
                            total[t] = _mm512_dpwssd_epi32(total[t], products, scale[i][j / 2]);
                        }
                }
            }
            for (int t = 0; t < T; ++t) {
                const __m256i rows = row_pairs_in_lane_order(total[t]);
                const F32x8 scale = mul_f(load_f16(chunk), splat_f(a[t].d[b]));
                acc[t] = fma_f(to_f32({rows}), scale, acc[t]);
                offsets[t] = fma_f(to_f32({offset[t]}), mul_f(scale, splat_f(32.0f)), offsets[t]);
            }
        }
        for (int t = 0; t < T; ++t) store_group(outs[t] + 8 * g, add_f(acc[t], mul_f(offsets[t], splat_f(-1.0f))));
    }
}
