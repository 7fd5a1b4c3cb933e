// The MXFP4 group kernel on 512-bit registers, for the Avx512 path (included by gemv_body.inl there).
// Same layout and arithmetic as dot_groups_mxfp4_tokens: four rows share a register, each 128-bit lane
// one row's 16 code bytes, so one table lookup and one VNNI dot product cover four rows. A lane's four
// partial sums stay apart across the blocks (scaled per block in float) and meet once per group, so
// no horizontal add runs per block, which is what held the 256-bit form below the memory's rate.

// Which scale slot (kInterleaveLanes order) each lane's row reads: rows 0-3 in the first register,
// rows 4-7 in the second, four lanes per row.
static inline __m512i mxfp4_scale_slots(int first_row) {
    int slot_of_row[kInterleave];
    for (int i = 0; i < int(kInterleave); ++i) slot_of_row[kInterleaveLanes[i]] = i;
    alignas(64) int32_t slots[16];
    for (int lane = 0; lane < 16; ++lane) slots[lane] = slot_of_row[first_row + lane / 4];
    return _mm512_load_si512(slots);
}

template <int T>
static void dot_groups_mxfp4_512(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    const size_t nb = n / 32;
    const int8_t* q[T];
    const float* d[T];
    const float* s[T];
    for (int t = 0; t < T; ++t) {
        q[t] = reinterpret_cast<const int8_t*>(acts[t]);
        d[t] = reinterpret_cast<const float*>(acts[t] + n);
        s[t] = d[t] + nb;
    }
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMXFP4LevelsPlus12)));
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i slots_a = mxfp4_scale_slots(0), slots_b = mxfp4_scale_slots(4);
    for (size_t g = 0; g < n_groups; ++g) {
        const uint8_t* base = groups + g * nb * 136;
        __m512 acc_a[T], acc_b[T];
        F32x8 bias[T];
        for (int t = 0; t < T; ++t) {
            acc_a[t] = acc_b[t] = _mm512_setzero_ps();
            bias[t] = zero_f();
        }
        for (size_t b = 0; b < nb; ++b) {
            const uint8_t* chunk = base + b * 136;
            prefetch_ahead(chunk, 136);
            const __m512i bytes_a = _mm512_loadu_si512(chunk + 8), bytes_b = _mm512_loadu_si512(chunk + 72);
            const __m512i lo_a = _mm512_shuffle_epi8(table, _mm512_and_si512(bytes_a, low4));
            const __m512i hi_a = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(bytes_a, 4), low4));
            const __m512i lo_b = _mm512_shuffle_epi8(table, _mm512_and_si512(bytes_b, low4));
            const __m512i hi_b = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(bytes_b, 4), low4));
            const F32x8 dw = load_e8m0_half(chunk);
            const __m512 dw16 = _mm512_castps256_ps512(dw.v);
            const __m512 dw_a = _mm512_permutexvar_ps(slots_a, dw16), dw_b = _mm512_permutexvar_ps(slots_b, dw16);
            for (int t = 0; t < T; ++t) {
                const __m512i x_lo = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q[t] + 32 * b)));
                const __m512i x_hi = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q[t] + 32 * b + 16)));
                const __m512i p_a = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo_a, x_lo), hi_a, x_hi);
                const __m512i p_b = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo_b, x_lo), hi_b, x_hi);
                const __m512 dx = _mm512_set1_ps(d[t][b]);
                acc_a[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p_a), _mm512_mul_ps(dw_a, dx), acc_a[t]);
                acc_b[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p_b), _mm512_mul_ps(dw_b, dx), acc_b[t]);
                bias[t] = fma_f(dw, splat_f(s[t][b]), bias[t]);
            }
        }
        for (int t = 0; t < T; ++t) {
            alignas(64) float lanes[32];
            float offsets[8];
            _mm512_store_ps(lanes, acc_a[t]);
            _mm512_store_ps(lanes + 16, acc_b[t]);
            store_f32(offsets, bias[t]);
            for (int i = 0; i < int(kInterleave); ++i) {
                const int row = kInterleaveLanes[i];
                const float* p = lanes + 4 * row;
                outs[t][8 * g + size_t(row)] = ((p[0] + p[1]) + (p[2] + p[3])) - 12.0f * offsets[i];
            }
        }
    }
}
