// The Q8_0 group kernel on 512-bit registers, for the Avx512 path (included by gemv_body.inl there).
// A register holds two rows' 32 quants as they lie in the group (row 2k, then 2k+1), so four loads
// cover the eight rows of a block where the 256-bit form needs eight, and the activation block is
// broadcast to both halves. AVX-512 has no byte sign instruction: the activation is negated where the
// weight is negative (a mask from the weights' sign bits) and multiplied by |w|, which are the same
// integers as the 256-bit form's sign trick, so the block sums and the floats after them are
// identical. The eight rows' sums come out in kInterleaveLanes order, where the scales lie. On a Zen 5
// the 256-bit form spent 0.26 instructions per weight byte; a core whose sibling thread the host keeps
// busy then fell behind memory.

// Lane j of the result is the total of row kInterleaveLanes[j], given p[k] holding rows 2k and 2k+1
// in its low and high halves.
static inline __m256i q8_0_row_totals(const __m512i p[4]) {
    // Within each 128-bit lane: [p0 a+c, p1 a+c, p0 b+d, p1 b+d] for lane elements a, b, c, d.
    const __m512i u0 = _mm512_add_epi32(_mm512_unpacklo_epi32(p[0], p[1]), _mm512_unpackhi_epi32(p[0], p[1]));
    const __m512i u1 = _mm512_add_epi32(_mm512_unpacklo_epi32(p[2], p[3]), _mm512_unpackhi_epi32(p[2], p[3]));
    // Within each 128-bit lane: that lane's total for p0, p1, p2, p3. Lanes 0 and 1 belong to the even
    // rows (0, 2, 4, 6), lanes 2 and 3 to the odd rows.
    const __m512i v = _mm512_add_epi32(_mm512_unpacklo_epi64(u0, u1), _mm512_unpackhi_epi64(u0, u1));
    const __m512i both = _mm512_add_epi32(v, _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_castsi512_si256(_mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(0, 0, 2, 0)));
}

template <int T>
static void dot_groups_q8_0_512(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    const size_t nb = n / 32;
    const int8_t* q[T];
    const float* d[T];
    for (int t = 0; t < T; ++t) {
        q[t] = reinterpret_cast<const int8_t*>(acts[t]);
        d[t] = reinterpret_cast<const float*>(acts[t] + n);
    }
    const __m512i zero = _mm512_setzero_si512();
    for (size_t g = 0; g < n_groups; ++g) {
        const uint8_t* base = groups + g * nb * 272;
        F32x8 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = zero_f();
        for (size_t b = 0; b < nb; ++b) {
            const uint8_t* chunk = base + b * 272;
            prefetch_ahead(chunk, 272);
            __m512i magnitude[4];
            __mmask64 negative[4];
            for (int k = 0; k < 4; ++k) {
                const __m512i w = _mm512_loadu_si512(chunk + 16 + 64 * k);
                magnitude[k] = _mm512_abs_epi8(w);
                negative[k] = _mm512_movepi8_mask(w);
            }
            const F32x8 dw = load_f16(chunk);
            for (int t = 0; t < T; ++t) {
                const __m512i x = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q[t] + 32 * b)));
                __m512i p[4];
                for (int k = 0; k < 4; ++k)
                    p[k] = _mm512_dpbusd_epi32(zero, magnitude[k], _mm512_mask_sub_epi8(x, negative[k], zero, x));
                acc[t] = fma_f(to_f32({q8_0_row_totals(p)}), mul_f(dw, splat_f(d[t][b])), acc[t]);
            }
        }
        for (int t = 0; t < T; ++t) store_group(outs[t] + 8 * g, acc[t]);
    }
}
