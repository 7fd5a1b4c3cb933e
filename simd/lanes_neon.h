// The integer and float lanes the GEMV kernels are written in, on ARM64's NEON: each 256-bit lane
// type of lanes_avx2.h is a pair of 128-bit registers, half 0 and half 1, so every operation that
// works per 128-bit half on AVX2 works per register here and gives the same integers. Float sums
// are paired in the AVX2 order and multiply-adds are fused as there, so a kernel's result is the
// AVX2 path's bit for bit. Included inside a per-ISA namespace (gemv_neon*.cpp).
//
// Byte products: NEON multiplies signed bytes by signed bytes (SDOT, SMULL), where x86 multiplies
// unsigned by signed. Every "unsigned" operand the kernels pass is a level of at most 127 (nibbles,
// 5- and 6-bit quants, 2-bit crumbs), so both read it alike; signed weights go through dot_s8s8 and
// mul_s8s8, which NEON multiplies directly. With RILL_LANES_DOTPROD the four-byte dot products are
// SDOT; with RILL_LANES_I8MM they are USDOT, unsigned by signed as on x86. Activation bytes are within
// ±127 (gemv_body.inl quantizes them so), so no pair sum below leaves int16. RILL_LANES_SIGNED_BYTES
// tells Q8_0's group kernel, which on x86 takes |w| once per block, to multiply the signed bytes here.
#define RILL_LANES_SIGNED_BYTES 1

struct I8x32 { uint8x16_t h[2]; };    // 32 bytes, signed or unsigned as the operation says
struct I16x16 { int16x8_t h[2]; };
struct I32x8 { int32x4_t h[2]; };
struct F32x8 { float32x4_t h[2]; };

static inline int8x16_t s8(uint8x16_t a) { return vreinterpretq_s8_u8(a); }

static inline I8x32 load_bytes(const void* p) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    return {{vld1q_u8(b), vld1q_u8(b + 16)}};
}
// 16 packed nibble pairs: low nibbles in bytes 0..15, high nibbles in bytes 16..31 (ggml's order).
static inline I8x32 load_nibbles16(const uint8_t* p) {
    const uint8x16_t q = vld1q_u8(p);
    return {{vandq_u8(q, vdupq_n_u8(0x0f)), vshrq_n_u8(q, 4)}};
}
// (byte >> shift) & mask for every byte.
static inline I8x32 shr_and(I8x32 a, int shift, uint8_t mask) {
    const int8x16_t by = vdupq_n_s8(int8_t(-shift));
    const uint8x16_t m = vdupq_n_u8(mask);
    return {{vandq_u8(vshlq_u8(a.h[0], by), m), vandq_u8(vshlq_u8(a.h[1], by), m)}};
}
static inline I8x32 and_bytes(I8x32 a, uint8_t mask) {
    const uint8x16_t m = vdupq_n_u8(mask);
    return {{vandq_u8(a.h[0], m), vandq_u8(a.h[1], m)}};
}
static inline I8x32 or_bytes(I8x32 a, I8x32 b) { return {{vorrq_u8(a.h[0], b.h[0]), vorrq_u8(a.h[1], b.h[1])}}; }
// (byte << shift) & mask
static inline I8x32 shl_and(I8x32 a, int shift, uint8_t mask) {
    const int8x16_t by = vdupq_n_s8(int8_t(shift));
    const uint8x16_t m = vdupq_n_u8(mask);
    return {{vandq_u8(vshlq_u8(a.h[0], by), m), vandq_u8(vshlq_u8(a.h[1], by), m)}};
}
// Byte i is `value` where bit i of `bits` is set, else 0.
static inline I8x32 expand_bits(uint32_t bits, uint8_t value) {
    static const uint8_t kSpread[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                        2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t word = vreinterpretq_u8_u32(vdupq_n_u32(bits)), bit = vld1q_u8(kBit), v = vdupq_n_u8(value);
    I8x32 r;
    for (int i = 0; i < 2; ++i) r.h[i] = vandq_u8(vtstq_u8(vqtbl1q_u8(word, vld1q_u8(kSpread + 16 * i)), bit), v);
    return r;
}
// A 16-entry byte table, ready for lookup16.
static inline I8x32 load_table16(const int8_t* table) {
    const uint8x16_t t = vld1q_u8(reinterpret_cast<const uint8_t*>(table));
    return {{t, t}};
}
// Indices are nibbles (0..15) at every caller.
static inline I8x32 lookup16(I8x32 table, I8x32 index) {
    return {{vqtbl1q_u8(table.h[0], index.h[0]), vqtbl1q_u8(table.h[1], index.h[1])}};
}

static inline int32x4_t dot4(int32x4_t acc, uint8x16_t u, uint8x16_t s) {
#if defined(RILL_LANES_I8MM)
    return vusdotq_s32(acc, u, s8(s));
#elif defined(RILL_LANES_DOTPROD)
    return vdotq_s32(acc, s8(u), s8(s));
#else
    const int16x8_t lo = vmull_s8(vget_low_s8(s8(u)), vget_low_s8(s8(s)));
    const int16x8_t hi = vmull_high_s8(s8(u), s8(s));
    return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
#endif
}
static inline int32x4_t sdot4(int32x4_t acc, uint8x16_t a, uint8x16_t b) {
#if defined(RILL_LANES_DOTPROD) || defined(RILL_LANES_I8MM)
    return vdotq_s32(acc, s8(a), s8(b));
#else
    return dot4(acc, a, b);
#endif
}
// Sum of u[i] * s[i] over each group of four bytes (u a level of at most 127).
static inline I32x8 dot_u8s8(I8x32 u, I8x32 s) {
    const int32x4_t z = vdupq_n_s32(0);
    return {{dot4(z, u.h[0], s.h[0]), dot4(z, u.h[1], s.h[1])}};
}
// Sum of w[i] * x[i] over each group of four signed bytes.
static inline I32x8 dot_s8s8(I8x32 w, I8x32 x) {
    const int32x4_t z = vdupq_n_s32(0);
    return {{sdot4(z, w.h[0], x.h[0]), sdot4(z, w.h[1], x.h[1])}};
}
// Pair sums u[2k]*s[2k] + u[2k+1]*s[2k+1] as int16, to be weighted by per-sub-block scales.
static inline I16x16 mul_u8s8(I8x32 u, I8x32 s) {
    I16x16 r;
    for (int i = 0; i < 2; ++i)
        r.h[i] = vpaddq_s16(vmull_s8(vget_low_s8(s8(u.h[i])), vget_low_s8(s8(s.h[i]))), vmull_high_s8(s8(u.h[i]), s8(s.h[i])));
    return r;
}
static inline I16x16 mul_s8s8(I8x32 w, I8x32 x) { return mul_u8s8(w, x); }
static inline int32x4_t madd16_half(int16x8_t a, int16x8_t b) {
    return vpaddq_s32(vmull_s16(vget_low_s16(a), vget_low_s16(b)), vmull_high_s16(a, b));
}
static inline I32x8 madd16(I16x16 a, I16x16 b) { return {{madd16_half(a.h[0], b.h[0]), madd16_half(a.h[1], b.h[1])}}; }
static inline I16x16 splat16(int16_t a) { return {{vdupq_n_s16(a), vdupq_n_s16(a)}}; }
// Lanes 0..7 take lo, lanes 8..15 take hi.
static inline I16x16 splat16x2(int16_t lo, int16_t hi) { return {{vdupq_n_s16(lo), vdupq_n_s16(hi)}}; }
static inline I32x8 zero32() { return {{vdupq_n_s32(0), vdupq_n_s32(0)}}; }
static inline I32x8 add32(I32x8 a, I32x8 b) { return {{vaddq_s32(a.h[0], b.h[0]), vaddq_s32(a.h[1], b.h[1])}}; }
static inline int32_t hsum32(I32x8 a) { return vaddvq_s32(vaddq_s32(a.h[0], a.h[1])); }
// Lane j of the result is the total of v[j].
static inline I32x8 hsum8x8(const I32x8 v[8]) {
    int32x4_t s[8];
    for (int j = 0; j < 8; ++j) s[j] = vaddq_s32(v[j].h[0], v[j].h[1]);
    const int32x4_t a = vpaddq_s32(vpaddq_s32(s[0], s[1]), vpaddq_s32(s[2], s[3]));
    const int32x4_t b = vpaddq_s32(vpaddq_s32(s[4], s[5]), vpaddq_s32(s[6], s[7]));
    return {{a, b}};
}

static inline F32x8 zero_f() { return {{vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)}}; }
static inline F32x8 splat_f(float a) { return {{vdupq_n_f32(a), vdupq_n_f32(a)}}; }
static inline F32x8 load_f32(const float* p) { return {{vld1q_f32(p), vld1q_f32(p + 4)}}; }
static inline void store_f32(float* p, F32x8 a) {
    vst1q_f32(p, a.h[0]);
    vst1q_f32(p + 4, a.h[1]);
}
static inline F32x8 load_f16(const void* p) {
    const float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(static_cast<const uint8_t*>(p)));
    return {{vcvt_f32_f16(vget_low_f16(h)), vcvt_high_f32_f16(h)}};
}
static inline F32x8 load_bf16(const void* p) {
    const uint16x8_t h = vld1q_u16(static_cast<const uint16_t*>(p));
    return {{vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)), vreinterpretq_f32_u32(vshll_high_n_u16(h, 16))}};
}
static inline float half_to_float(uint16_t h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }
// Eight halves found `stride` bytes apart, e.g. the scales of eight consecutive blocks.
static inline F32x8 gather_f16(const uint8_t* p, size_t stride) {
    uint16_t h[8];
    for (int i = 0; i < 8; ++i) std::memcpy(&h[i], p + size_t(i) * stride, 2);
    return load_f16(h);
}
// Eight E8M0 exponent bytes as e8m0_half's floats, exactly.
static inline F32x8 load_e8m0_half(const uint8_t* p) {
    float f[8];
    for (int i = 0; i < 8; ++i) f[i] = e8m0_half(p[i]);
    return load_f32(f);
}
// Eight signed bytes as floats.
static inline F32x8 load_i8x8_f(const void* p) {
    const int16x8_t w = vmovl_s8(vld1_s8(static_cast<const int8_t*>(p)));
    return {{vcvtq_f32_s32(vmovl_s16(vget_low_s16(w))), vcvtq_f32_s32(vmovl_high_s16(w))}};
}
// (p[i] >> shift) & 15 for eight bytes, as floats.
static inline F32x8 load_nibbles8_f(const uint8_t* p, int shift) {
    const uint8x8_t b = vand_u8(vshl_u8(vld1_u8(p), vdup_n_s8(int8_t(-shift))), vdup_n_u8(0x0f));
    const uint16x8_t w = vmovl_u8(b);
    return {{vcvtq_f32_u32(vmovl_u16(vget_low_u16(w))), vcvtq_f32_u32(vmovl_high_u16(w))}};
}
static inline F32x8 to_f32(I32x8 a) { return {{vcvtq_f32_s32(a.h[0]), vcvtq_f32_s32(a.h[1])}}; }
static inline F32x8 add_f(F32x8 a, F32x8 b) { return {{vaddq_f32(a.h[0], b.h[0]), vaddq_f32(a.h[1], b.h[1])}}; }
static inline F32x8 mul_f(F32x8 a, F32x8 b) { return {{vmulq_f32(a.h[0], b.h[0]), vmulq_f32(a.h[1], b.h[1])}}; }
// a * b + c, fused as on AVX2.
static inline F32x8 fma_f(F32x8 a, F32x8 b, F32x8 c) { return {{vfmaq_f32(c.h[0], a.h[0], b.h[0]), vfmaq_f32(c.h[1], a.h[1], b.h[1])}}; }
static inline F32x8 max_f(F32x8 a, F32x8 b) { return {{vmaxq_f32(a.h[0], b.h[0]), vmaxq_f32(a.h[1], b.h[1])}}; }
static inline F32x8 abs_f(F32x8 a) { return {{vabsq_f32(a.h[0]), vabsq_f32(a.h[1])}}; }
static inline float hmax_f(F32x8 a) { return vmaxvq_f32(vmaxq_f32(a.h[0], a.h[1])); }
// Lane j of the result is the total of v[j], as ((0+1)+(2+3))+((4+5)+(6+7)) of its lanes.
static inline F32x8 hsum8x8_f(const F32x8 v[8]) {
    float32x4_t pairs[8], quads[4];
    for (int j = 0; j < 8; ++j) pairs[j] = vpaddq_f32(v[j].h[0], v[j].h[1]);  // (0+1) (2+3) (4+5) (6+7)
    for (int j = 0; j < 4; ++j) quads[j] = vpaddq_f32(pairs[2 * j], pairs[2 * j + 1]);  // the two fours of 2j, of 2j+1
    return {{vpaddq_f32(quads[0], quads[1]), vpaddq_f32(quads[2], quads[3])}};
}
// Halves, then pairs, then the last two, as the AVX2 reduction.
static inline float hsum_f(F32x8 a) {
    const float32x4_t s = vaddq_f32(a.h[0], a.h[1]);
    const float s0 = vgetq_lane_f32(s, 0) + vgetq_lane_f32(s, 2), s1 = vgetq_lane_f32(s, 1) + vgetq_lane_f32(s, 3);
    return s0 + s1;
}
// Rounds x * scale to the nearest integer (ties to even) and packs the 32 results to int8, saturating.
static inline void quantize32(const float* x, float scale, int8_t* out) {
    const float32x4_t s = vdupq_n_f32(scale);
    for (int i = 0; i < 4; ++i) {
        const int32x4_t a = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 8 * i), s));
        const int32x4_t b = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 8 * i + 4), s));
        vst1_s8(out + 8 * i, vqmovn_s16(vcombine_s16(vqmovn_s32(a), vqmovn_s32(b))));
    }
}
// 16 bytes repeated in both halves.
static inline I8x32 broadcast16(const void* p) {
    const uint8x16_t b = vld1q_u8(static_cast<const uint8_t*>(p));
    return {{b, b}};
}
// Eight bytes repeated four times.
static inline I8x32 broadcast8(const void* p) {
    const uint8x8_t b = vld1_u8(static_cast<const uint8_t*>(p));
    return {{vcombine_u8(b, b), vcombine_u8(b, b)}};
}
// Four rows' eight bytes each in `rows`; words 4q..4q+3 of the result are byte j of row q, zero-extended.
static inline I16x16 pick_row_bytes(I8x32 rows, int j) {
    // Index 0xff is out of the table's range, which reads as 0: the words' high bytes.
    const uint8_t a = uint8_t(j), b = uint8_t(8 + j);
    const uint8_t pick[16] = {a, 0xff, a, 0xff, a, 0xff, a, 0xff, b, 0xff, b, 0xff, b, 0xff, b, 0xff};
    const uint8x16_t index = vld1q_u8(pick);
    return {{vreinterpretq_s16_u8(vqtbl1q_u8(rows.h[0], index)), vreinterpretq_s16_u8(vqtbl1q_u8(rows.h[1], index))}};
}
// Sixteen signed bytes as words, in order.
static inline I16x16 widen_i8x16(const int8_t* p) {
    const int8x16_t b = vld1q_s8(p);
    return {{vmovl_s8(vget_low_s8(b)), vmovl_high_s8(b)}};
}
// Words alternating lo, hi.
static inline I16x16 splat16_pair(int16_t lo, int16_t hi) {
    const int16x8_t v = vreinterpretq_s16_u32(vdupq_n_u32(uint32_t(uint16_t(lo)) | (uint32_t(uint16_t(hi)) << 16)));
    return {{v, v}};
}
// Words 4q..4q+3 are p[2q + e] sign-extended, q < 4, e 0 or 1 (reads p[0..7]).
static inline I16x16 widen_spread4(const int8_t* p, int e) {
    return {{vcombine_s16(vdup_n_s16(p[e]), vdup_n_s16(p[2 + e])), vcombine_s16(vdup_n_s16(p[4 + e]), vdup_n_s16(p[6 + e]))}};
}
// Lane i of the result is lane idx[i] of a.
static inline I32x8 permute32(I32x8 a, const int32_t* idx) {
    const uint8x16x2_t table = {{vreinterpretq_u8_s32(a.h[0]), vreinterpretq_u8_s32(a.h[1])}};
    const uint32x4_t bytes = vdupq_n_u32(0x03020100u), spread = vdupq_n_u32(0x04040404u);
    I32x8 r;
    for (int i = 0; i < 2; ++i) {
        const uint32x4_t lane = vreinterpretq_u32_s32(vld1q_s32(idx + 4 * i));
        r.h[i] = vreinterpretq_s32_u8(vqtbl2q_u8(table, vreinterpretq_u8_u32(vmlaq_u32(bytes, lane, spread))));
    }
    return r;
}
// Wrapping, as the vector instruction does.
static inline I16x16 add16(I16x16 a, I16x16 b) { return {{vaddq_s16(a.h[0], b.h[0]), vaddq_s16(a.h[1], b.h[1])}}; }
static inline I32x8 sum_pairs(I16x16 a) { return {{vpaddlq_s16(a.h[0]), vpaddlq_s16(a.h[1])}}; }
// Per half: [a0+a1, a2+a3, b0+b1, b2+b3].
static inline I32x8 hadd32(I32x8 a, I32x8 b) { return {{vpaddq_s32(a.h[0], b.h[0]), vpaddq_s32(a.h[1], b.h[1])}}; }
static inline I16x16 hadd16(I16x16 a, I16x16 b) { return {{vpaddq_s16(a.h[0], b.h[0]), vpaddq_s16(a.h[1], b.h[1])}}; }
// A hint to start loading a cache line that will be read soon.
static inline void prefetch(const void* p) { __builtin_prefetch(p); }
// Eight bytes as int16, the same eight in both halves (for pick16).
static inline I16x16 widen_u8x8(const uint8_t* p) {
    const int16x8_t w = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(p)));
    return {{w, w}};
}
static inline I16x16 widen_i8x8(const int8_t* p) {
    const int16x8_t w = vmovl_s8(vld1_s8(p));
    return {{w, w}};
}
// Lanes 0..7 take lane lo of v's low half, lanes 8..15 lane hi of its high half.
static inline I16x16 pick16(I16x16 v, int lo, int hi) {
    const uint8x16_t a = vreinterpretq_u8_u16(vdupq_n_u16(uint16_t(0x0100 + 0x0202 * lo)));
    const uint8x16_t b = vreinterpretq_u8_u16(vdupq_n_u16(uint16_t(0x0100 + 0x0202 * hi)));
    return {{vreinterpretq_s16_u8(vqtbl1q_u8(vreinterpretq_u8_s16(v.h[0]), a)), vreinterpretq_s16_u8(vqtbl1q_u8(vreinterpretq_u8_s16(v.h[1]), b))}};
}
// Eight int32 whose total is the sum over j < 8 of u[j] * (s[2j] + s[2j+1]).
static inline I32x8 madd_u8x8_pairs(const uint8_t* u, const int16_t* s) {
    const int16x8_t w = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(u)));
    const int32x4_t s_lo = vpaddlq_s16(vld1q_s16(s)), s_hi = vpaddlq_s16(vld1q_s16(s + 8));
    return {{vmulq_s32(vmovl_s16(vget_low_s16(w)), s_lo), vmulq_s32(vmovl_high_s16(w), s_hi)}};
}
// sum over j < 8 of u[j] * (s[2j] + s[2j+1])
static inline int32_t dot_u8x8_pairs(const uint8_t* u, const int16_t* s) { return hsum32(madd_u8x8_pairs(u, s)); }
static inline int32_t dot_words16(int16x8_t lo, int16x8_t hi, const int16_t* s) {
    const int16x8_t s_lo = vld1q_s16(s), s_hi = vld1q_s16(s + 8);
    int32x4_t acc = vmull_s16(vget_low_s16(lo), vget_low_s16(s_lo));
    acc = vmlal_high_s16(acc, lo, s_lo);
    acc = vmlal_s16(acc, vget_low_s16(hi), vget_low_s16(s_hi));
    acc = vmlal_high_s16(acc, hi, s_hi);
    return vaddvq_s32(acc);
}
// sum over j < 16 of c[j] * s[j]
static inline int32_t dot_i8x16(const int8_t* c, const int16_t* s) {
    const int8x16_t b = vld1q_s8(c);
    return dot_words16(vmovl_s8(vget_low_s8(b)), vmovl_high_s8(b), s);
}
// sum over j < 16 of c[j] * s[j], c given as two runs of eight bytes
static inline int32_t dot_i8x8x2(const int8_t* lo, const int8_t* hi, const int16_t* s) {
    return dot_words16(vmovl_s8(vld1_s8(lo)), vmovl_s8(vld1_s8(hi)), s);
}
// sum over j < 16 of (p[j] >> 4) * s[j]
static inline int32_t dot_high_nibbles16(const uint8_t* p, const int16_t* s) {
    const uint8x16_t high = vshrq_n_u8(vld1q_u8(p), 4);
    return dot_words16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(high))), vreinterpretq_s16_u16(vmovl_high_u8(high)), s);
}
// The low nibbles of eight bytes as int16, in both halves (for pick16).
static inline I16x16 widen_low_nibbles8(const uint8_t* p) {
    const int16x8_t w = vreinterpretq_s16_u16(vmovl_u8(vand_u8(vld1_u8(p), vdup_n_u8(0x0f))));
    return {{w, w}};
}
static inline I32x8 load_i32x8(const int32_t* p) { return {{vld1q_s32(p), vld1q_s32(p + 4)}}; }

// ---- For the IQ grids and ternary types (gemv_iq.inl) ----
static inline I8x32 bytes_u64x4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    return {{vcombine_u8(vcreate_u8(a), vcreate_u8(b)), vcombine_u8(vcreate_u8(c), vcreate_u8(d))}};
}
static inline I8x32 bytes_u32x8(const uint32_t v[8]) {
    return {{vreinterpretq_u8_u32(vld1q_u32(v)), vreinterpretq_u8_u32(vld1q_u32(v + 4))}};
}
// x negated where mask's byte is 0xff, kept where it is 0.
static inline I8x32 negate_where(I8x32 x, I8x32 mask) {
    return {{vsubq_u8(veorq_u8(x.h[0], mask.h[0]), mask.h[0]), vsubq_u8(veorq_u8(x.h[1], mask.h[1]), mask.h[1])}};
}
static inline I8x32 add_bytes(I8x32 a, I8x32 b) { return {{vaddq_u8(a.h[0], b.h[0]), vaddq_u8(a.h[1], b.h[1])}}; }
// Trit n of TQ1_0's base-3 bytes, 0..2: (byte * 3^n mod 256) * 3 >> 8 (half 0 takes pow_lo, half 1 pow_hi).
static inline uint8x16_t trits_half(uint8x16_t bytes, uint8_t pow) {
    const uint8x16_t q = vmulq_u8(bytes, vdupq_n_u8(pow));
    const uint8x8_t three = vdup_n_u8(3);
    return vcombine_u8(vshrn_n_u16(vmull_u8(vget_low_u8(q), three), 8), vshrn_n_u16(vmull_high_u8(q, vdupq_n_u8(3)), 8));
}
static inline I8x32 trits(I8x32 bytes, uint8_t pow_lo, uint8_t pow_hi) { return {{trits_half(bytes.h[0], pow_lo), trits_half(bytes.h[1], pow_hi)}}; }
static inline I8x32 negate_bits(I8x32 x, uint32_t bits) { return negate_where(x, expand_bits(bits, 0xff)); }
static inline I32x8 indices9(const uint8_t* q, uint32_t high) {
    const uint16x8_t low = vmovl_u8(vld1_u8(q));
    static const int16_t kShift[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    const uint16x8_t bit8 = vandq_u16(vshlq_u16(vdupq_n_u16(uint16_t(high & 0xff)), vld1q_s16(kShift)), vdupq_n_u16(256));
    const uint16x8_t idx = vorrq_u16(low, bit8);
    return {{vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(idx))), vreinterpretq_s32_u32(vmovl_high_u16(idx))}};
}
static inline I8x32 gather_u32x8(const uint32_t* table, I32x8 idx) {
    int32_t i[8];
    vst1q_s32(i, idx.h[0]);
    vst1q_s32(i + 4, idx.h[1]);
    uint32_t v[8];
    for (int k = 0; k < 8; ++k) v[k] = table[i[k]];
    return bytes_u32x8(v);
}
static inline I8x32 gather_u64x4_bytes(const uint64_t* table, uint32_t packed) {
    return bytes_u64x4(table[packed & 0xff], table[(packed >> 8) & 0xff], table[(packed >> 16) & 0xff], table[packed >> 24]);
}
static inline uint32_t spread7x4(uint32_t v) {
    return (v & 0x7f) | ((v << 1) & 0x7f00) | ((v << 2) & 0x7f0000) | ((v << 3) & 0x7f000000);
}
