// The lanes of lanes_avx2.h in plain C++ over arrays: the fallback for any CPU (and, built with
// -msse4.1, the SSE4.1 path, left to the compiler's vectorizer). Every operation gives exactly
// the integers the AVX2 form gives; float sums run in the same lane order.

// IEEE half to float, exact for every input (normals, subnormals, infinities, NaNs).
static inline float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu, bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {  // subnormal: normalise
        exponent = 113;
        while ((mantissa & 0x400u) == 0) { mantissa <<= 1; --exponent; }
        bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}
static inline float bfloat_to_float(uint16_t h) {
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

struct I8x32 { uint8_t b[32]; };
struct I16x16 { int16_t h[16]; };
struct I32x8 { int32_t w[8]; };
struct F32x8 { float f[8]; };

static inline I8x32 load_bytes(const void* p) { I8x32 r; std::memcpy(r.b, p, 32); return r; }
static inline I8x32 load_nibbles16(const uint8_t* p) {
    I8x32 r;
    for (int i = 0; i < 16; ++i) { r.b[i] = p[i] & 0x0f; r.b[i + 16] = p[i] >> 4; }
    return r;
}
static inline I8x32 shr_and(I8x32 a, int shift, uint8_t mask) {
    for (auto& x : a.b) x = uint8_t((x >> shift) & mask);
    return a;
}
static inline I8x32 and_bytes(I8x32 a, uint8_t mask) { for (auto& x : a.b) x &= mask; return a; }
static inline I8x32 or_bytes(I8x32 a, I8x32 b) { for (int i = 0; i < 32; ++i) a.b[i] |= b.b[i]; return a; }
static inline I8x32 shl_and(I8x32 a, int shift, uint8_t mask) {
    for (auto& x : a.b) x = uint8_t((x << shift) & mask);
    return a;
}
static inline I8x32 expand_bits(uint32_t bits, uint8_t value) {
    I8x32 r;
    for (int i = 0; i < 32; ++i) r.b[i] = ((bits >> i) & 1u) ? value : 0;
    return r;
}
static inline I8x32 load_table16(const int8_t* table) {
    I8x32 r;
    std::memcpy(r.b, table, 16);
    std::memcpy(r.b + 16, table, 16);
    return r;
}
static inline I8x32 lookup16(I8x32 table, I8x32 index) {
    I8x32 r;
    for (int i = 0; i < 32; ++i) r.b[i] = (index.b[i] & 0x80) ? 0 : table.b[index.b[i] & 0x0f];
    return r;
}
static inline I8x32 abs_bytes(I8x32 a) {
    for (auto& x : a.b) x = uint8_t(std::abs(int(int8_t(x))));
    return a;
}
static inline I8x32 apply_sign(I8x32 a, I8x32 s) {
    for (int i = 0; i < 32; ++i) {
        const int sign = int8_t(s.b[i]);
        a.b[i] = sign < 0 ? uint8_t(-int(int8_t(a.b[i]))) : sign == 0 ? 0 : a.b[i];
    }
    return a;
}
static inline I32x8 dot_u8s8(I8x32 u, I8x32 s) {
    I32x8 r;
    for (int i = 0; i < 8; ++i) {
        int32_t sum = 0;
        for (int j = 4 * i; j < 4 * i + 4; ++j) sum += int32_t(u.b[j]) * int32_t(int8_t(s.b[j]));
        r.w[i] = sum;
    }
    return r;
}
static inline I16x16 mul_u8s8(I8x32 u, I8x32 s) {
    I16x16 r;
    for (int i = 0; i < 16; ++i) {
        const int32_t sum = int32_t(u.b[2 * i]) * int8_t(s.b[2 * i]) + int32_t(u.b[2 * i + 1]) * int8_t(s.b[2 * i + 1]);
        r.h[i] = int16_t(std::clamp(sum, -32768, 32767));
    }
    return r;
}
// Sum of w[i] * x[i] over each group of four signed bytes, as |w| times x carrying w's sign (exact:
// |w| <= 128 and |x| <= 127 keep every pair within int16).
static inline I32x8 dot_s8s8(I8x32 w, I8x32 x) { return dot_u8s8(abs_bytes(w), apply_sign(x, w)); }
static inline I16x16 mul_s8s8(I8x32 w, I8x32 x) { return mul_u8s8(abs_bytes(w), apply_sign(x, w)); }
static inline I32x8 madd16(I16x16 a, I16x16 b) {
    I32x8 r;
    for (int i = 0; i < 8; ++i) r.w[i] = int32_t(a.h[2 * i]) * b.h[2 * i] + int32_t(a.h[2 * i + 1]) * b.h[2 * i + 1];
    return r;
}
static inline I16x16 splat16(int16_t a) { I16x16 r; for (auto& x : r.h) x = a; return r; }
static inline I16x16 splat16x2(int16_t lo, int16_t hi) {
    I16x16 r;
    for (int i = 0; i < 16; ++i) r.h[i] = i < 8 ? lo : hi;
    return r;
}
static inline I32x8 zero32() { return I32x8{}; }
static inline I32x8 add32(I32x8 a, I32x8 b) { for (int i = 0; i < 8; ++i) a.w[i] += b.w[i]; return a; }
static inline int32_t hsum32(I32x8 a) {
    int32_t s = 0;
    for (int32_t x : a.w) s += x;
    return s;
}
static inline I32x8 hsum8x8(const I32x8 v[8]) {
    I32x8 r;
    for (int j = 0; j < 8; ++j) r.w[j] = hsum32(v[j]);
    return r;
}

static inline F32x8 zero_f() { return F32x8{}; }
static inline F32x8 splat_f(float a) { F32x8 r; for (auto& x : r.f) x = a; return r; }
static inline F32x8 load_f32(const float* p) { F32x8 r; std::memcpy(r.f, p, 32); return r; }
static inline void store_f32(float* p, F32x8 a) { std::memcpy(p, a.f, 32); }
static inline F32x8 load_f16(const void* p) {
    uint16_t h[8];
    std::memcpy(h, p, 16);
    F32x8 r;
    for (int i = 0; i < 8; ++i) r.f[i] = half_to_float(h[i]);
    return r;
}
static inline F32x8 load_bf16(const void* p) {
    uint16_t h[8];
    std::memcpy(h, p, 16);
    F32x8 r;
    for (int i = 0; i < 8; ++i) r.f[i] = bfloat_to_float(h[i]);
    return r;
}
static inline F32x8 gather_f16(const uint8_t* p, size_t stride) {
    F32x8 r;
    for (int i = 0; i < 8; ++i) {
        uint16_t h;
        std::memcpy(&h, p + size_t(i) * stride, 2);
        r.f[i] = half_to_float(h);
    }
    return r;
}
static inline F32x8 load_e8m0_half(const uint8_t* p) {
    F32x8 r;
    for (int i = 0; i < 8; ++i) r.f[i] = e8m0_half(p[i]);
    return r;
}
static inline F32x8 load_i8x8_f(const void* p) {
    int8_t b[8];
    std::memcpy(b, p, 8);
    F32x8 r;
    for (int i = 0; i < 8; ++i) r.f[i] = float(b[i]);
    return r;
}
static inline F32x8 load_nibbles8_f(const uint8_t* p, int shift) {
    F32x8 r;
    for (int i = 0; i < 8; ++i) r.f[i] = float((p[i] >> shift) & 0x0f);
    return r;
}
static inline F32x8 to_f32(I32x8 a) { F32x8 r; for (int i = 0; i < 8; ++i) r.f[i] = float(a.w[i]); return r; }
static inline F32x8 add_f(F32x8 a, F32x8 b) { for (int i = 0; i < 8; ++i) a.f[i] += b.f[i]; return a; }
static inline F32x8 mul_f(F32x8 a, F32x8 b) { for (int i = 0; i < 8; ++i) a.f[i] *= b.f[i]; return a; }
static inline F32x8 fma_f(F32x8 a, F32x8 b, F32x8 c) {
    // Unfused: a CPU without FMA would otherwise call into libm for every lane.
    for (int i = 0; i < 8; ++i) c.f[i] = a.f[i] * b.f[i] + c.f[i];
    return c;
}
static inline F32x8 max_f(F32x8 a, F32x8 b) { for (int i = 0; i < 8; ++i) a.f[i] = std::max(a.f[i], b.f[i]); return a; }
static inline F32x8 abs_f(F32x8 a) { for (auto& x : a.f) x = std::fabs(x); return a; }
static inline float hmax_f(F32x8 a) {
    float m = a.f[0];
    for (float x : a.f) m = std::max(m, x);
    return m;
}
// Lane j of the result is the total of v[j], paired as the AVX2 hsum8x8_f pairs them.
static inline F32x8 hsum8x8_f(const F32x8 v[8]) {
    F32x8 r;
    for (int j = 0; j < 8; ++j) {
        const float* a = v[j].f;
        r.f[j] = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    }
    return r;
}
// Same pairing as the AVX2 reduction: halves, then pairs, then the last two.
static inline float hsum_f(F32x8 a) {
    float s[4];
    for (int i = 0; i < 4; ++i) s[i] = a.f[i] + a.f[i + 4];
    const float s0 = s[0] + s[2], s1 = s[1] + s[3];
    return s0 + s1;
}
static inline void quantize32(const float* x, float scale, int8_t* out) {
    for (int i = 0; i < 32; ++i) out[i] = int8_t(std::nearbyint(x[i] * scale));
}
// Eight bytes repeated four times.
static inline I8x32 broadcast8(const void* p) {
    I8x32 r;
    for (int i = 0; i < 4; ++i) std::memcpy(r.b + 8 * i, p, 8);
    return r;
}
// Four rows' eight bytes each in `rows`; words 4q..4q+3 of the result are byte j of row q, zero-extended.
static inline I16x16 pick_row_bytes(I8x32 rows, int j) {
    I16x16 r;
    for (int i = 0; i < 16; ++i) r.h[i] = rows.b[8 * (i / 4) + j];
    return r;
}
// Sixteen signed bytes as words, in order.
static inline I16x16 widen_i8x16(const int8_t* p) {
    I16x16 r;
    for (int i = 0; i < 16; ++i) r.h[i] = p[i];
    return r;
}
// Words alternating lo, hi.
static inline I16x16 splat16_pair(int16_t lo, int16_t hi) {
    I16x16 r;
    for (int i = 0; i < 16; ++i) r.h[i] = i % 2 ? hi : lo;
    return r;
}
// Words 4q..4q+3 are p[2q + e] sign-extended, q < 4, e 0 or 1 (reads p[0..7]).
static inline I16x16 widen_spread4(const int8_t* p, int e) {
    I16x16 r;
    for (int i = 0; i < 16; ++i) r.h[i] = p[2 * (i / 4) + e];
    return r;
}
// Lane i of the result is lane idx[i] of a.
static inline I32x8 permute32(I32x8 a, const int32_t* idx) {
    I32x8 r;
    for (int i = 0; i < 8; ++i) r.w[i] = a.w[idx[i]];
    return r;
}
static inline I8x32 broadcast16(const void* p) {
    I8x32 r;
    std::memcpy(r.b, p, 16);
    std::memcpy(r.b + 16, p, 16);
    return r;
}
// Wrapping, as the vector instruction does.
static inline I16x16 add16(I16x16 a, I16x16 b) {
    for (int i = 0; i < 16; ++i) a.h[i] = int16_t(uint16_t(a.h[i]) + uint16_t(b.h[i]));
    return a;
}
static inline I32x8 sum_pairs(I16x16 a) {
    I32x8 r;
    for (int i = 0; i < 8; ++i) r.w[i] = int32_t(a.h[2 * i]) + a.h[2 * i + 1];
    return r;
}
static inline I32x8 hadd32(I32x8 a, I32x8 b) {
    I32x8 r;
    for (int half = 0; half < 2; ++half) {
        const int o = 4 * half;
        r.w[o + 0] = a.w[o + 0] + a.w[o + 1];
        r.w[o + 1] = a.w[o + 2] + a.w[o + 3];
        r.w[o + 2] = b.w[o + 0] + b.w[o + 1];
        r.w[o + 3] = b.w[o + 2] + b.w[o + 3];
    }
    return r;
}
// Wrapping pairwise sums within each 128-bit half, as the vector instruction does.
static inline I16x16 hadd16(I16x16 a, I16x16 b) {
    I16x16 r;
    for (int half = 0; half < 2; ++half) {
        const int o = 8 * half;
        for (int i = 0; i < 4; ++i) {
            r.h[o + i] = int16_t(uint16_t(a.h[o + 2 * i]) + uint16_t(a.h[o + 2 * i + 1]));
            r.h[o + 4 + i] = int16_t(uint16_t(b.h[o + 2 * i]) + uint16_t(b.h[o + 2 * i + 1]));
        }
    }
    return r;
}
static inline void prefetch(const void* p) { __builtin_prefetch(p); }
static inline I16x16 widen_u8x8(const uint8_t* p) {
    I16x16 r;
    for (int i = 0; i < 16; ++i) r.h[i] = p[i % 8];
    return r;
}
static inline I16x16 widen_i8x8(const int8_t* p) {
    I16x16 r;
    for (int i = 0; i < 16; ++i) r.h[i] = p[i % 8];
    return r;
}
static inline I16x16 pick16(I16x16 v, int lo, int hi) {
    I16x16 r;
    for (int i = 0; i < 16; ++i) r.h[i] = i < 8 ? v.h[lo] : v.h[8 + hi];
    return r;
}
static inline I32x8 madd_u8x8_pairs(const uint8_t* u, const int16_t* s) {
    I32x8 r;
    for (int j = 0; j < 8; ++j) r.w[j] = int32_t(u[j]) * (int32_t(s[2 * j]) + s[2 * j + 1]);
    return r;
}
static inline int32_t dot_u8x8_pairs(const uint8_t* u, const int16_t* s) { return hsum32(madd_u8x8_pairs(u, s)); }
static inline int32_t dot_i8x16(const int8_t* c, const int16_t* s) {
    int32_t sum = 0;
    for (int j = 0; j < 16; ++j) sum += int32_t(c[j]) * s[j];
    return sum;
}
static inline int32_t dot_i8x8x2(const int8_t* lo, const int8_t* hi, const int16_t* s) {
    int32_t sum = 0;
    for (int j = 0; j < 8; ++j) sum += int32_t(lo[j]) * s[j] + int32_t(hi[j]) * s[8 + j];
    return sum;
}
static inline int32_t dot_high_nibbles16(const uint8_t* p, const int16_t* s) {
    int32_t sum = 0;
    for (int j = 0; j < 16; ++j) sum += int32_t(p[j] >> 4) * s[j];
    return sum;
}
static inline I16x16 widen_low_nibbles8(const uint8_t* p) {
    I16x16 r;
    for (int i = 0; i < 16; ++i) r.h[i] = int16_t(p[i % 8] & 0x0f);
    return r;
}
static inline I32x8 load_i32x8(const int32_t* p) { I32x8 r; std::memcpy(r.w, p, 32); return r; }

// ---- For the IQ grids and ternary types (gemv_iq.inl) ----
static inline I8x32 bytes_u64x4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    I8x32 r;
    const uint64_t v[4] = {a, b, c, d};
    std::memcpy(r.b, v, 32);
    return r;
}
static inline I8x32 bytes_u32x8(const uint32_t v[8]) {
    I8x32 r;
    std::memcpy(r.b, v, 32);
    return r;
}
static inline I8x32 negate_where(I8x32 x, I8x32 mask) {
    for (int i = 0; i < 32; ++i) x.b[i] = uint8_t((x.b[i] ^ mask.b[i]) - mask.b[i]);
    return x;
}
static inline I8x32 add_bytes(I8x32 a, I8x32 b) {
    for (int i = 0; i < 32; ++i) a.b[i] = uint8_t(a.b[i] + b.b[i]);
    return a;
}
static inline I8x32 trits(I8x32 bytes, uint8_t pow_lo, uint8_t pow_hi) {
    for (int i = 0; i < 32; ++i) {
        const uint8_t q = uint8_t(bytes.b[i] * (i < 16 ? pow_lo : pow_hi));
        bytes.b[i] = uint8_t((unsigned(q) * 3) >> 8);
    }
    return bytes;
}
static inline I8x32 negate_bits(I8x32 x, uint32_t bits) { return negate_where(x, expand_bits(bits, 0xff)); }
static inline I32x8 indices9(const uint8_t* q, uint32_t high) {
    I32x8 r;
    for (int k = 0; k < 8; ++k) r.w[k] = int32_t(q[k] | (((high >> k) & 1u) << 8));
    return r;
}
static inline I8x32 gather_u32x8(const uint32_t* table, I32x8 idx) {
    uint32_t v[8];
    for (int k = 0; k < 8; ++k) v[k] = table[idx.w[k]];
    return bytes_u32x8(v);
}
static inline I8x32 gather_u64x4_bytes(const uint64_t* table, uint32_t packed) {
    return bytes_u64x4(table[packed & 0xff], table[(packed >> 8) & 0xff], table[(packed >> 16) & 0xff], table[packed >> 24]);
}
static inline uint32_t spread7x4(uint32_t v) {
    return (v & 0x7f) | ((v << 1) & 0x7f00) | ((v << 2) & 0x7f0000) | ((v << 3) & 0x7f000000);
}
