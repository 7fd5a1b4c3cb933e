// The integer and float lanes the GEMV kernels are written in, on AVX2 (and, where the build enables
// AVX-512 VNNI, its 256-bit dot-product instruction). Included inside a per-ISA namespace.
// xsimd 8.1 has no unsigned-by-signed byte multiply-add or byte table lookup, which these kernels
// live on, so this layer uses intrinsics; everything above it is ISA-neutral.

struct I8x32 { __m256i v; };    // 32 bytes, signed or unsigned as the operation says
struct I16x16 { __m256i v; };
struct I32x8 { __m256i v; };
struct F32x8 { __m256 v; };

static inline I8x32 load_bytes(const void* p) { return {_mm256_loadu_si256(static_cast<const __m256i*>(p))}; }
// 16 packed nibble pairs: low nibbles in bytes 0..15, high nibbles in bytes 16..31 (ggml's order).
static inline I8x32 load_nibbles16(const uint8_t* p) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return {_mm256_and_si256(both, _mm256_set1_epi8(0x0f))};
}
// (byte >> shift) & mask for every byte; mask must fit in 8 - shift bits.
static inline I8x32 shr_and(I8x32 a, int shift, uint8_t mask) {
    return {_mm256_and_si256(_mm256_srli_epi16(a.v, shift), _mm256_set1_epi8(char(mask)))};
}
static inline I8x32 and_bytes(I8x32 a, uint8_t mask) { return {_mm256_and_si256(a.v, _mm256_set1_epi8(char(mask)))}; }
static inline I8x32 or_bytes(I8x32 a, I8x32 b) { return {_mm256_or_si256(a.v, b.v)}; }
// (byte << shift) & mask
static inline I8x32 shl_and(I8x32 a, int shift, uint8_t mask) {
    return {_mm256_and_si256(_mm256_slli_epi16(a.v, shift), _mm256_set1_epi8(char(mask)))};
}
// Byte i is `value` where bit i of `bits` is set, else 0.
static inline I8x32 expand_bits(uint32_t bits, uint8_t value) {
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)),
                                               _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                                 0x0101010101010101, 0x0000000000000000));
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return {_mm256_and_si256(set, _mm256_set1_epi8(char(value)))};
}
// A 16-entry byte table, ready for lookup16.
static inline I8x32 load_table16(const int8_t* table) {
    return {_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)))};
}
static inline I8x32 lookup16(I8x32 table, I8x32 index) { return {_mm256_shuffle_epi8(table.v, index.v)}; }
static inline I8x32 abs_bytes(I8x32 a) { return {_mm256_sign_epi8(a.v, a.v)}; }
// a with the sign of s applied (a * sign(s), 0 where s is 0).
static inline I8x32 apply_sign(I8x32 a, I8x32 s) { return {_mm256_sign_epi8(a.v, s.v)}; }

// Sum of u[i] * s[i] over each group of four bytes: unsigned bytes times signed bytes.
// Callers keep |u * s| sums within int16 per pair (u <= 127 with |s| <= 127), so the AVX2 form,
// which saturates pairs to int16, and VNNI's exact form agree.
static inline I32x8 dot_u8s8(I8x32 u, I8x32 s) {
#if defined(RILL_LANES_VNNI)
    return {_mm256_dpbusd_epi32(_mm256_setzero_si256(), u.v, s.v)};
#else
    return {_mm256_madd_epi16(_mm256_maddubs_epi16(u.v, s.v), _mm256_set1_epi16(1))};
#endif
}
// Pair sums u[2k]*s[2k] + u[2k+1]*s[2k+1] as int16, to be weighted by per-sub-block scales.
static inline I16x16 mul_u8s8(I8x32 u, I8x32 s) { return {_mm256_maddubs_epi16(u.v, s.v)}; }
// Sum of w[i] * x[i] over each group of four signed bytes, as |w| times x carrying w's sign (exact:
// |w| <= 128 and |x| <= 127 keep every pair within int16).
static inline I32x8 dot_s8s8(I8x32 w, I8x32 x) { return dot_u8s8(abs_bytes(w), apply_sign(x, w)); }
static inline I16x16 mul_s8s8(I8x32 w, I8x32 x) { return mul_u8s8(abs_bytes(w), apply_sign(x, w)); }
static inline I32x8 madd16(I16x16 a, I16x16 b) { return {_mm256_madd_epi16(a.v, b.v)}; }
static inline I16x16 splat16(int16_t a) { return {_mm256_set1_epi16(a)}; }
// Lanes 0..7 (bytes 0..15 of the pair products) take lo, lanes 8..15 take hi.
static inline I16x16 splat16x2(int16_t lo, int16_t hi) {
    return {_mm256_set_m128i(_mm_set1_epi16(hi), _mm_set1_epi16(lo))};
}
static inline I32x8 zero32() { return {_mm256_setzero_si256()}; }
static inline I32x8 add32(I32x8 a, I32x8 b) { return {_mm256_add_epi32(a.v, b.v)}; }
static inline int32_t hsum32(I32x8 a) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(a.v), _mm256_extracti128_si256(a.v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}
// Lane j of the result is the total of v[j].
static inline I32x8 hsum8x8(const I32x8 v[8]) {
    const __m256i a = _mm256_hadd_epi32(v[0].v, v[1].v), b = _mm256_hadd_epi32(v[2].v, v[3].v);
    const __m256i c = _mm256_hadd_epi32(v[4].v, v[5].v), d = _mm256_hadd_epi32(v[6].v, v[7].v);
    const __m256i ab = _mm256_hadd_epi32(a, b), cd = _mm256_hadd_epi32(c, d);
    return {_mm256_add_epi32(_mm256_permute2x128_si256(ab, cd, 0x20), _mm256_permute2x128_si256(ab, cd, 0x31))};
}

static inline F32x8 zero_f() { return {_mm256_setzero_ps()}; }
static inline F32x8 splat_f(float a) { return {_mm256_set1_ps(a)}; }
static inline F32x8 load_f32(const float* p) { return {_mm256_loadu_ps(p)}; }
static inline void store_f32(float* p, F32x8 a) { _mm256_storeu_ps(p, a.v); }
static inline F32x8 load_f16(const void* p) {
    return {_mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)))};
}
static inline F32x8 load_bf16(const void* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    return {_mm256_castsi256_ps(_mm256_slli_epi32(wide, 16))};
}
// Eight halves found `stride` bytes apart, e.g. the scales of eight consecutive blocks.
static inline F32x8 gather_f16(const uint8_t* p, size_t stride) {
    uint16_t h[8];
    for (int i = 0; i < 8; ++i) std::memcpy(&h[i], p + size_t(i) * stride, 2);
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)))};
}
// Eight E8M0 exponent bytes as e8m0_half's floats, 2^(e - 128), exactly: shifted into the exponent
// field where that is normal, the subnormal bit pattern for e < 2.
static inline F32x8 load_e8m0_half(const uint8_t* p) {
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return {_mm256_castsi256_ps(_mm256_blendv_epi8(tiny, normal, _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1))))};
}
// Eight signed bytes as floats.
static inline F32x8 load_i8x8_f(const void* p) {
    return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p))))};
}
// (p[i] >> shift) & 15 for eight bytes, as floats: one half of eight bytes' nibbles.
static inline F32x8 load_nibbles8_f(const uint8_t* p, int shift) {
    const __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    return {_mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(w, shift), _mm256_set1_epi32(0x0f)))};
}
static inline F32x8 to_f32(I32x8 a) { return {_mm256_cvtepi32_ps(a.v)}; }
static inline F32x8 add_f(F32x8 a, F32x8 b) { return {_mm256_add_ps(a.v, b.v)}; }
static inline F32x8 mul_f(F32x8 a, F32x8 b) { return {_mm256_mul_ps(a.v, b.v)}; }
static inline F32x8 fma_f(F32x8 a, F32x8 b, F32x8 c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
static inline F32x8 max_f(F32x8 a, F32x8 b) { return {_mm256_max_ps(a.v, b.v)}; }
static inline F32x8 abs_f(F32x8 a) { return {_mm256_andnot_ps(_mm256_set1_ps(-0.0f), a.v)}; }
static inline float hmax_f(F32x8 a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}
// Lane j of the result is the total of v[j], as ((0+1)+(2+3))+((4+5)+(6+7)) of its lanes.
static inline F32x8 hsum8x8_f(const F32x8 v[8]) {
    const __m256 a = _mm256_hadd_ps(v[0].v, v[1].v), b = _mm256_hadd_ps(v[2].v, v[3].v);
    const __m256 c = _mm256_hadd_ps(v[4].v, v[5].v), d = _mm256_hadd_ps(v[6].v, v[7].v);
    const __m256 ab = _mm256_hadd_ps(a, b), cd = _mm256_hadd_ps(c, d);
    return {_mm256_add_ps(_mm256_permute2f128_ps(ab, cd, 0x20), _mm256_permute2f128_ps(ab, cd, 0x31))};
}
static inline float hsum_f(F32x8 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
// Rounds x * scale to the nearest integer (ties to even) and packs the 32 results to int8.
static inline void quantize32(const float* x, float scale, int8_t* out) {
    const __m256 s = _mm256_set1_ps(scale);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i p01 = _mm256_packs_epi32(q[0], q[1]), p23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i bytes = _mm256_packs_epi16(p01, p23);
    // The packs interleave 128-bit halves; restore element order.
    const __m256i ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), ordered);
}
static inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }
// 16 bytes repeated in both halves.
static inline I8x32 broadcast16(const void* p) {
    return {_mm256_broadcastsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(p)))};
}
// Eight bytes repeated four times.
static inline I8x32 broadcast8(const void* p) { return {_mm256_broadcastq_epi64(_mm_loadl_epi64(static_cast<const __m128i*>(p)))}; }
// Four rows' eight bytes each in `rows`; words 4q..4q+3 of the result are byte j of row q, zero-extended.
static inline I16x16 pick_row_bytes(I8x32 rows, int j) {
    const int16_t a = int16_t(0x8000 | j), b = int16_t(0x8000 | (8 + j));
    return {_mm256_shuffle_epi8(rows.v, _mm256_setr_epi16(a, a, a, a, b, b, b, b, a, a, a, a, b, b, b, b))};
}
// Sixteen signed bytes as words, in order.
static inline I16x16 widen_i8x16(const int8_t* p) { return {_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))}; }
// Words alternating lo, hi.
static inline I16x16 splat16_pair(int16_t lo, int16_t hi) { return {_mm256_set1_epi32(int32_t(uint16_t(lo)) | int32_t(uint32_t(uint16_t(hi)) << 16))}; }
// Words 4q..4q+3 are p[2q + e] sign-extended, q < 4, e 0 or 1 (reads p[0..7]).
static inline I16x16 widen_spread4(const int8_t* p, int e) {
    const __m128i pick = _mm_add_epi8(_mm_setr_epi8(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6), _mm_set1_epi8(char(e)));
    return {_mm256_cvtepi8_epi16(_mm_shuffle_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), pick))};
}
// Lane i of the result is lane idx[i] of a.
static inline I32x8 permute32(I32x8 a, const int32_t* idx) { return {_mm256_permutevar8x32_epi32(a.v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx)))}; }
static inline I16x16 add16(I16x16 a, I16x16 b) { return {_mm256_add_epi16(a.v, b.v)}; }
static inline I32x8 sum_pairs(I16x16 a) { return {_mm256_madd_epi16(a.v, _mm256_set1_epi16(1))}; }
// Per 128-bit half: [a0+a1, a2+a3, b0+b1, b2+b3].
static inline I32x8 hadd32(I32x8 a, I32x8 b) { return {_mm256_hadd_epi32(a.v, b.v)}; }
static inline I16x16 hadd16(I16x16 a, I16x16 b) { return {_mm256_hadd_epi16(a.v, b.v)}; }
// A hint to start loading a cache line that will be read soon.
static inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
// Eight bytes as int16, the same eight in both halves (for pick16).
static inline I16x16 widen_u8x8(const uint8_t* p) {
    return {_mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))))};
}
static inline I16x16 widen_i8x8(const int8_t* p) {
    return {_mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))))};
}
// Lanes 0..7 take lane lo of v's low half, lanes 8..15 lane hi of its high half.
static inline I16x16 pick16(I16x16 v, int lo, int hi) {
    const __m256i index = _mm256_set_m128i(_mm_set1_epi16(int16_t(0x0100 + 0x0202 * hi)), _mm_set1_epi16(int16_t(0x0100 + 0x0202 * lo)));
    return {_mm256_shuffle_epi8(v.v, index)};
}
// Eight int32 whose total is the sum over j < 8 of u[j] * (s[2j] + s[2j+1]): left unsummed, so a
// group kernel sums eight rows' at once with hsum8x8.
static inline I32x8 madd_u8x8_pairs(const uint8_t* u, const int16_t* s) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(u));
    const __m256i twice = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(bytes, bytes));
    return {_mm256_madd_epi16(twice, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)))};
}
// sum over j < 8 of u[j] * (s[2j] + s[2j+1])
static inline int32_t dot_u8x8_pairs(const uint8_t* u, const int16_t* s) { return hsum32(madd_u8x8_pairs(u, s)); }
// sum over j < 16 of c[j] * s[j]
static inline int32_t dot_i8x16(const int8_t* c, const int16_t* s) {
    const __m256i wide = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c)));
    return hsum32({_mm256_madd_epi16(wide, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)))});
}
// sum over j < 16 of c[j] * s[j], c given as two runs of eight bytes
static inline int32_t dot_i8x8x2(const int8_t* lo, const int8_t* hi, const int16_t* s) {
    const __m128i bytes = _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(lo)),
                                             _mm_loadl_epi64(reinterpret_cast<const __m128i*>(hi)));
    const __m256i wide = _mm256_cvtepi8_epi16(bytes);
    return hsum32({_mm256_madd_epi16(wide, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)))});
}
// sum over j < 16 of (p[j] >> 4) * s[j]
static inline int32_t dot_high_nibbles16(const uint8_t* p, const int16_t* s) {
    const __m128i high = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), 4), _mm_set1_epi8(0x0f));
    return hsum32({_mm256_madd_epi16(_mm256_cvtepu8_epi16(high), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)))});
}
// The low nibbles of eight bytes as int16, in both halves (for pick16).
static inline I16x16 widen_low_nibbles8(const uint8_t* p) {
    const __m128i low = _mm_and_si128(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8(0x0f));
    return {_mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(low))};
}
static inline I32x8 load_i32x8(const int32_t* p) { return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))}; }

// ---- For the IQ grids and ternary types (gemv_iq.inl) ----
// Four 8-byte grid entries side by side (a in bytes 0..7), or eight 4-byte ones.
static inline I8x32 bytes_u64x4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    return {_mm256_set_epi64x(int64_t(d), int64_t(c), int64_t(b), int64_t(a))};
}
static inline I8x32 bytes_u32x8(const uint32_t v[8]) {
    return {_mm256_set_epi32(int(v[7]), int(v[6]), int(v[5]), int(v[4]), int(v[3]), int(v[2]), int(v[1]), int(v[0]))};
}
// x negated where mask's byte is 0xff, kept where it is 0 (two's complement: (x ^ m) - m).
static inline I8x32 negate_where(I8x32 x, I8x32 mask) { return {_mm256_sub_epi8(_mm256_xor_si256(x.v, mask.v), mask.v)}; }
static inline I8x32 add_bytes(I8x32 a, I8x32 b) { return {_mm256_add_epi8(a.v, b.v)}; }
// Trit n of TQ1_0's base-3 bytes, 0..2: (byte * 3^n mod 256) * 3 >> 8; bytes 0..15 take pow_lo = 3^n,
// bytes 16..31 pow_hi. Bytes are multiplied in 16-bit lanes, even and odd bytes apart.
static inline I8x32 trits(I8x32 bytes, uint8_t pow_lo, uint8_t pow_hi) {
    const __m256i pow = _mm256_set_m128i(_mm_set1_epi16(pow_hi), _mm_set1_epi16(pow_lo)), low = _mm256_set1_epi16(0x00ff);
    const __m256i three = _mm256_set1_epi16(3);
    const __m256i even = _mm256_and_si256(_mm256_mullo_epi16(bytes.v, pow), low);
    const __m256i odd = _mm256_and_si256(_mm256_mullo_epi16(_mm256_srli_epi16(bytes.v, 8), pow), low);
    const __m256i t_even = _mm256_srli_epi16(_mm256_mullo_epi16(even, three), 8);
    const __m256i t_odd = _mm256_srli_epi16(_mm256_mullo_epi16(odd, three), 8);
    return {_mm256_or_si256(t_even, _mm256_slli_epi16(t_odd, 8))};
}
// x negated where bit i of `bits` is set: one masked subtraction with AVX-512's byte masks.
static inline I8x32 negate_bits(I8x32 x, uint32_t bits) {
#if defined(RILL_LANES_AVX512)
    return {_mm256_mask_sub_epi8(x.v, __mmask32(bits), _mm256_setzero_si256(), x.v)};
#else
    const __m256i mask = expand_bits(bits, 0xff).v;
    return {_mm256_sub_epi8(_mm256_xor_si256(x.v, mask), mask)};
#endif
}
// Eight grid indices: lane k is q[k] | (bit k of high) << 8.
static inline I32x8 indices9(const uint8_t* q, uint32_t high) {
    const __m256i low = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q)));
    const __m256i bit8 = _mm256_and_si256(_mm256_sllv_epi32(_mm256_set1_epi32(int(high)), _mm256_setr_epi32(8, 7, 6, 5, 4, 3, 2, 1)),
                                          _mm256_set1_epi32(256));
    return {_mm256_or_si256(low, bit8)};
}
// Eight 4-byte table entries, one per index lane, side by side.
static inline I8x32 gather_u32x8(const uint32_t* table, I32x8 idx) {
    return {_mm256_i32gather_epi32(reinterpret_cast<const int*>(table), idx.v, 4)};
}
// Four 8-byte table entries indexed by the four bytes of `packed` (byte 0 first).
static inline I8x32 gather_u64x4_bytes(const uint64_t* table, uint32_t packed) {
    return {_mm256_i32gather_epi64(reinterpret_cast<const long long*>(table), _mm_cvtepu8_epi32(_mm_cvtsi32_si128(int(packed))), 8)};
}
// The 7-bit fields of v (bits 0-6, 7-13, 14-20, 21-27) moved to the low 7 bits of its four bytes.
static inline uint32_t spread7x4(uint32_t v) { return _pdep_u32(v, 0x7f7f7f7fu); }
