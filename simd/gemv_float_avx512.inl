// F16 and BF16 rows on 512-bit registers, for the Avx512 path (included by gemv_body.inl there): sixteen
// weights widened and multiplied per instruction instead of eight. Two forms, the same arithmetic: a
// plain forward stream per row, and one that asks for the weights ahead (kRowsAhead). Neither is right
// everywhere (tinyllama F16 tg64, 2 threads, alternating runs): on an Intel Xeon (family 6 model 207)
// asking 8 KiB ahead into L1 decoded 9.2-10.1 t/s against 5.5-6.8 plain; on an AMD Zen 4 (family 25
// model 17) 11.5-11.7 against 20.9-21.3 in one session; a Zen 5 streamed at the read loop's rate
// plain. So the calibration times both (GemmCalibration::rows_ahead) and a session runs its choice.
// Four accumulators of sixteen lanes sum in a different order from the 256-bit form's four of eight,
// so a row's value differs from the avx2 path's in the last bits; on any one path it is fixed.

// How far ahead, and into which cache, the second form asks for weights: 16 KiB into L2. On the AMD
// Zen 4 (tinyllama F16 tg64, 2 threads, three builds alternating, 4 rounds of 3) asking 8 KiB ahead
// into L1 decoded 11-11.5 t/s against the plain form's 14-16; into L2, 8 or 16 KiB ahead, 15-15.5 when
// the host's bandwidth probe read 35 GB/s and 20-20.5 when it read 60, where the plain form stayed
// at 16. 1 KiB into L1 was slower still (10-12.6). The Xeon's 1.5x was measured asking 8 KiB ahead
// into L1; the calibration keeps this form only where it is faster than the plain one.
constexpr size_t kRowsAhead = 16384;

static inline __m512 load16_f16(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
static inline __m512 load16_bf16(const uint8_t* p) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

template <__m512 (*Load16)(const uint8_t*), float (*Scalar)(const uint8_t*), bool kAhead>
static float dot_row_half_512(const uint8_t* w, size_t n, const uint8_t* act) {
    const float* x = reinterpret_cast<const float*>(act);
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        if constexpr (kAhead) {
            _mm_prefetch(reinterpret_cast<const char*>(w + 2 * i + kRowsAhead), _MM_HINT_T1);
            _mm_prefetch(reinterpret_cast<const char*>(w + 2 * i + kRowsAhead + 64), _MM_HINT_T1);
        }
        for (int k = 0; k < 4; ++k) acc[k] = _mm512_fmadd_ps(Load16(w + 2 * (i + 16 * size_t(k))), _mm512_loadu_ps(x + i + 16 * size_t(k)), acc[k]);
    }
    for (; i + 16 <= n; i += 16) acc[0] = _mm512_fmadd_ps(Load16(w + 2 * i), _mm512_loadu_ps(x + i), acc[0]);
    float total = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
    for (; i < n; ++i) total += Scalar(w + 2 * i) * x[i];
    return total;
}
