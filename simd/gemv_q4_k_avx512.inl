// The Q4_K group kernel on 512-bit registers, for the Avx512 path (included by gemv_body.inl there).
// Same layout and the same integers as dot_groups_q4_k_tokens, so the same floats: per row and
// super-block the exact int32 total of scale × (nibble · activation), then one float step per eight
// rows. What changes is how the total is reached. A 64-byte load holds four sub-blocks (low nibbles:
// sub-blocks 2j and 2j+2, high: 2j+1 and 2j+3), so one byte product and one VNNI word dot product
// (vpdpwssd: products of pairs times the sub-block's scale, added in) cover 64 weights, where the
// 256-bit form spent four instructions per 32. Counted in the compiled group kernel (GCC 12): 0.53
// instructions per weight byte against 0.79. On one Zen 5 core with the matrix in cache the
// 256-bit form read 17 GB/s of weights, below that core's share of memory bandwidth; this one 23-27.

// Activations for one super-block laid out as the 64-byte loads of quants meet them: register k
// holds sub-blocks (k even) 2k', 2k'+2 or (k odd) 2k'+1, 2k'+3 for k' = 2 (k / 2), in 32-byte halves.
struct Q4KActs {
    __m512i x[4];
};

static inline __m512i two_halves(const void* lo, const void* hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(lo))),
                              _mm256_loadu_si256(static_cast<const __m256i*>(hi)), 1);
}

static inline Q4KActs q4_k_acts(const int8_t* x) {
    Q4KActs a;
    for (int k = 0; k < 4; ++k) {
        const int8_t* first = x + 128 * (k / 2) + 32 * (k % 2);
        a.x[k] = two_halves(first, first + 64);
    }
    return a;
}

// Byte indices that repeat word w_lo over the low 256 bits and word w_hi over the high 256 bits.
static inline __m512i word_picker(int w_lo, int w_hi) {
    const __m256i lo = _mm256_set1_epi16(int16_t(0x0100 + 0x0202 * w_lo)), hi = _mm256_set1_epi16(int16_t(0x0100 + 0x0202 * w_hi));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// A row's eight 6-bit scales as words, each repeated over the 16 word lanes that its sub-block's
// products occupy in register k of Q4KActs' layout.
static inline void q4_k_scale_words(uint64_t scales, __m512i out[4]) {
    const __m512i words = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(int64_t(scales))));
    out[0] = _mm512_shuffle_epi8(words, word_picker(0, 2));
    out[1] = _mm512_shuffle_epi8(words, word_picker(1, 3));
    out[2] = _mm512_shuffle_epi8(words, word_picker(4, 6));
    out[3] = _mm512_shuffle_epi8(words, word_picker(5, 7));
}

template <int T>
static void dot_groups_q4_k_512(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    Act256 a[T];
    for (int t = 0; t < T; ++t) a[t] = act256(acts[t], n);
    const size_t nb = n / 256;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (size_t g = 0; g < n_groups; ++g) {
        const uint8_t* base = groups + g * nb * 1152;
        F32x8 acc[T], mins[T];
        for (int t = 0; t < T; ++t) acc[t] = mins[t] = zero_f();
        for (size_t b = 0; b < nb; ++b) {
            const uint8_t* chunk = base + b * 1152;
            prefetch_ahead(chunk, 1152);
            Q4KActs x[T];
            for (int t = 0; t < T; ++t) x[t] = q4_k_acts(a[t].q + 256 * b);
            I32x8 p[T][8], m[T][8];
            for (int i = 0; i < 8; ++i) {
                const uint8_t* row = chunk + 32 + 140 * size_t(kInterleaveLanes[i]);
                uint8_t scale[8], min[8];
                unpack_k4_scales(row, scale, min);
                uint64_t scale_bits;
                std::memcpy(&scale_bits, scale, 8);
                __m512i s[4];
                q4_k_scale_words(scale_bits, s);
                __m512i w[4];
                for (int h = 0; h < 2; ++h) {
                    const __m512i bytes = _mm512_loadu_si512(row + 12 + 64 * h);
                    w[2 * h] = _mm512_and_si512(bytes, low4);
                    w[2 * h + 1] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low4);
                }
                for (int t = 0; t < T; ++t) {
                    __m512i sum = _mm512_setzero_si512();
                    for (int k = 0; k < 4; ++k) sum = _mm512_dpwssd_epi32(sum, _mm512_maddubs_epi16(w[k], x[t].x[k]), s[k]);
                    p[t][i] = {_mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1))};
                    m[t][i] = madd_u8x8_pairs(min, a[t].sums + 16 * b);
                }
            }
            for (int t = 0; t < T; ++t) {
                const F32x8 dx = splat_f(a[t].d[b]);
                acc[t] = fma_f(to_f32(hsum8x8(p[t])), mul_f(load_f16(chunk), dx), acc[t]);
                mins[t] = fma_f(to_f32(hsum8x8(m[t])), mul_f(load_f16(chunk + 16), dx), mins[t]);
            }
        }
        for (int t = 0; t < T; ++t) {
            store_group(outs[t] + 8 * g, add_f(acc[t], mul_f(mins[t], splat_f(-1.0f))));
        }
    }
}
