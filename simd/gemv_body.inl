// The GEMV kernels, written once over the lanes of lanes_*.h and compiled once per instruction-set
// path inside that path's namespace (see gemv_avx2.cpp and friends). Block layouts are ggml's; see
// quant/block_layouts.h and the scalar reference in quant/dequantize.cpp.

// How far ahead of the bytes being multiplied the kernels ask for weights: the hardware prefetcher
// alone left one core well short of its streaming rate. The distance has to cover a core's share of
// the bandwidth times the memory latency: on a Zen 5 (2 threads, 512 MiB of weights streamed in
// 32-row chunks, configurations alternated in one process, medians of 9) 8 KiB ahead streamed Q4_K
// 1.11-1.34x, Q6_K 1.15-1.32x, Q8_0 1.03-1.17x and Q4_0 1.10-1.18x as fast as 2 KiB did, level with a
// plain read loop; 12 and 16 KiB were no better. tinyllama Q4_K_M tg64: 1.04-1.22x, Q8_0 1.06-1.13x.
constexpr size_t kPrefetchAhead = 8192;

// Unrolled: a loop around each request had cost a kernel three more instructions per line.
static inline void prefetch_ahead(const uint8_t* p, size_t n) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 32
#else
#pragma unroll 32
#endif
    for (size_t o = 0; o < n; o += 64) prefetch(p + kPrefetchAhead + o);
}

// The same requests spread over a kernel's loop: part `part` of `parts` of a chunk's lines. A burst
// of 27 requests at the start of each 1680-byte Q6_K chunk held one AMD Zen 4 (family 25 model 17)
// core to 9 GB/s streaming from memory, where the same requests spread over the chunk's eight steps
// streamed 14-15 (the requests wait for the core's few miss buffers, and the work behind them waits
// too); chunks of a few lines (Q4_0, Q8_0) spread their requests by themselves.
// Sizes are constants, so each part is a fixed run of unrolled requests.
template <size_t kBytes, int kParts>
static inline void prefetch_ahead_part(const uint8_t* p, int part) {
    constexpr size_t lines = (kBytes + 63) / 64, per = (lines + size_t(kParts) - 1) / size_t(kParts);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 8
#else
#pragma unroll 8
#endif
    for (size_t i = 0; i < per; ++i)
        if (size_t(part) * per + i < lines) prefetch(p + kPrefetchAhead + 64 * (size_t(part) * per + i));
}

static inline uint16_t read_u16(const uint8_t* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
static inline uint32_t read_u32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
static inline float read_f32(const uint8_t* p) { float v; std::memcpy(&v, p, 4); return v; }

// A group kernel's eight results, computed in kInterleaveLanes order, written back in row order.
static inline void store_group(float* out, F32x8 v) {
    float lanes[8];
    store_f32(lanes, v);
    for (int i = 0; i < 8; ++i) out[size_t(kInterleaveLanes[i])] = lanes[i];
}

// ---- Activations --------------------------------------------------------------------------------
// Symmetric 8-bit blocks, |q| <= 127, so a sign flip never overflows and every pair product the
// kernels form stays inside int16.

static float block_absmax(const float* x, size_t n) {
    F32x8 m = zero_f();
    for (size_t i = 0; i < n; i += 8) m = max_f(m, abs_f(load_f32(x + i)));
    return hmax_f(m);
}

static void quantize_act_q8x32(const float* x, size_t n, uint8_t* out) {
    int8_t* q = reinterpret_cast<int8_t*>(out);
    uint8_t* d = out + n;
    uint8_t* s = d + n / 32 * sizeof(float);
    for (size_t b = 0; b < n / 32; ++b) {
        const float scale = block_absmax(x + 32 * b, 32) / 127.0f;
        quantize32(x + 32 * b, scale != 0.0f ? 1.0f / scale : 0.0f, q + 32 * b);
        int sum = 0;
        for (int i = 0; i < 32; ++i) sum += q[32 * b + i];
        const float block_sum = scale * float(sum);
        std::memcpy(d + 4 * b, &scale, 4);
        std::memcpy(s + 4 * b, &block_sum, 4);
    }
}

static void quantize_act_q8x256(const float* x, size_t n, uint8_t* out) {
    int8_t* q = reinterpret_cast<int8_t*>(out);
    uint8_t* d = out + n;
    uint8_t* sums = d + n / 256 * sizeof(float);
    for (size_t b = 0; b < n / 256; ++b) {
        const float scale = block_absmax(x + 256 * b, 256) / 127.0f;
        const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
        for (size_t i = 0; i < 256; i += 32) quantize32(x + 256 * b + i, inverse, q + 256 * b + i);
        std::memcpy(d + 4 * b, &scale, 4);
        for (size_t g = 0; g < 16; ++g) {
            int16_t sum = 0;
            for (int i = 0; i < 16; ++i) sum = int16_t(sum + q[256 * b + 16 * g + size_t(i)]);
            std::memcpy(sums + 2 * (16 * b + g), &sum, 2);
        }
    }
}

// ---- 32-element blocks: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL ----------------------------------------
// Each block's integer dot product is exact; eight blocks at a time are summed across lanes and
// scaled by (weight scale × activation scale) in one vector step.

static inline I32x8 block_q4_0(const uint8_t* b, const int8_t* x) { return dot_u8s8(load_nibbles16(b + 2), load_bytes(x)); }
static inline I32x8 block_q4_1(const uint8_t* b, const int8_t* x) { return dot_u8s8(load_nibbles16(b + 4), load_bytes(x)); }
static inline I32x8 block_q5_0(const uint8_t* b, const int8_t* x) {
    return dot_u8s8(or_bytes(load_nibbles16(b + 6), expand_bits(read_u32(b + 2), 0x10)), load_bytes(x));
}
static inline I32x8 block_q5_1(const uint8_t* b, const int8_t* x) {
    return dot_u8s8(or_bytes(load_nibbles16(b + 8), expand_bits(read_u32(b + 4), 0x10)), load_bytes(x));
}
static inline I32x8 block_q8_0(const uint8_t* b, const int8_t* x) {
    const I8x32 w = load_bytes(b + 2);
    return dot_s8s8(w, load_bytes(x));
}
static inline I32x8 block_iq4_nl(const uint8_t* b, const int8_t* x) {
    const I8x32 w = lookup16(load_table16(kIQ4Levels), load_nibbles16(b + 2));
    return dot_s8s8(w, load_bytes(x));
}
static inline I32x8 block_mxfp4(const uint8_t* b, const int8_t* x) {
    const I8x32 w = lookup16(load_table16(kMXFP4Levels), load_nibbles16(b + 1));
    return dot_s8s8(w, load_bytes(x));
}

// How a block's stored values relate to its quants: w = d*(q - kOffset), or w = d*q + m.
enum class Bias { None, Offset, Min };
// How its scale d is stored at the block's start: a half, or an E8M0 exponent byte (MXFP4).
enum class Scale { F16, E8M0 };

template <Scale kScale>
static inline float block_scale(const uint8_t* blk) {
    if constexpr (kScale == Scale::E8M0) return e8m0_half(blk[0]);
    else return half_to_float(read_u16(blk));
}
template <Scale kScale>
static inline F32x8 gather_scales(const uint8_t* blk, size_t stride) {
    if constexpr (kScale == Scale::E8M0) {
        float d[8];
        for (int j = 0; j < 8; ++j) d[j] = e8m0_half(blk[size_t(j) * stride]);
        return load_f32(d);
    } else {
        return gather_f16(blk, stride);
    }
}

template <size_t kBytes, Bias kBias, int kOffset, I32x8 (*Block)(const uint8_t*, const int8_t*), Scale kScale = Scale::F16>
static float dot_row_b32(const uint8_t* w, size_t n, const uint8_t* act) {
    const size_t nb = n / 32;
    const int8_t* q = reinterpret_cast<const int8_t*>(act);
    const float* d = reinterpret_cast<const float*>(act + n);
    const float* s = d + nb;
    F32x8 acc = zero_f(), bias = zero_f();
    size_t b = 0;
    for (; b + 8 <= nb; b += 8) {
        const uint8_t* blk = w + b * kBytes;
        prefetch_ahead(blk, 8 * kBytes);
        I32x8 p[8];
        for (int j = 0; j < 8; ++j) p[j] = Block(blk + size_t(j) * kBytes, q + (b + size_t(j)) * 32);
        const F32x8 dw = gather_scales<kScale>(blk, kBytes);
        acc = fma_f(to_f32(hsum8x8(p)), mul_f(dw, load_f32(d + b)), acc);
        if constexpr (kBias == Bias::Offset) bias = fma_f(dw, load_f32(s + b), bias);
        if constexpr (kBias == Bias::Min) bias = fma_f(gather_f16(blk + 2, kBytes), load_f32(s + b), bias);
    }
    float total = hsum_f(acc), bias_total = hsum_f(bias);
    for (; b < nb; ++b) {
        const uint8_t* blk = w + b * kBytes;
        const float dw = block_scale<kScale>(blk);
        total += float(hsum32(Block(blk, q + b * 32))) * (dw * d[b]);
        if constexpr (kBias == Bias::Offset) bias_total += dw * s[b];
        if constexpr (kBias == Bias::Min) bias_total += half_to_float(read_u16(blk + 2)) * s[b];
    }
    if constexpr (kBias == Bias::Offset) return total - float(kOffset) * bias_total;
    if constexpr (kBias == Bias::Min) return total + bias_total;
    return total;
}

// ---- 256-element super-blocks: Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS -----------------------------------
// Sub-block scales are small integers, so each super-block's dot product, scales included, is
// summed exactly in int32 and meets floating point once.

struct Act256 {
    const int8_t* q;
    const float* d;
    const int16_t* sums;
};
static inline Act256 act256(const uint8_t* act, size_t n) {
    const float* d = reinterpret_cast<const float*>(act + n);
    return {reinterpret_cast<const int8_t*>(act), d, reinterpret_cast<const int16_t*>(d + n / 256)};
}

// Bit `bit` of every byte moved to bit `to`.
static inline I8x32 move_bit(I8x32 v, int bit, int to) {
    const uint8_t mask = uint8_t(1u << to);
    return bit <= to ? shl_and(v, to - bit, mask) : shr_and(v, bit - to, mask);
}

// Q4_K/Q5_K's eight 6-bit scales and mins, unpacked from 12 bytes four at a time.
static inline void unpack_k4_scales(const uint8_t* packed, uint8_t scales[8], uint8_t mins[8]) {
    uint32_t w[3];
    std::memcpy(w, packed, 12);
    // One 64-bit store each, so the 8-byte loads that read them back are store-forwarded.
    const uint64_t s = uint64_t(w[0] & 0x3f3f3f3fu) | uint64_t((w[2] & 0x0f0f0f0fu) | (((w[0] >> 6) & 0x03030303u) << 4)) << 32;
    const uint64_t m = uint64_t(w[1] & 0x3f3f3f3fu) | uint64_t(((w[2] >> 4) & 0x0f0f0f0fu) | (((w[1] >> 6) & 0x03030303u) << 4)) << 32;
    std::memcpy(scales, &s, 8);
    std::memcpy(mins, &m, 8);
}

// One Q4_K super-block times 256 activations, for T tokens at once: the scaled quant products, exact
// in int32, and in min_parts eight int32 whose total is the sub-block mins times the activation sums.
// The scales and nibbles are unpacked once for all tokens; integer sums are exact, so each token's
// result is the same as alone. The group kernels (gemv_groups_k.inl) sum these same integers.
template <int T>
static inline void q4_k_sums(const uint8_t* packed_scales, const uint8_t* qs, const int8_t* const* x, const int16_t* const* sums16,
                             I32x8* sum, I32x8* min_parts) {
    uint8_t scale[8], min[8];
    unpack_k4_scales(packed_scales, scale, min);
    const I16x16 scales = widen_u8x8(scale);
    for (int t = 0; t < T; ++t) {
        min_parts[t] = madd_u8x8_pairs(min, sums16[t]);
        sum[t] = zero32();
    }
    for (int i = 0; i < 4; ++i) {
        const I8x32 bytes = load_bytes(qs + 32 * i);
        const I8x32 lo = and_bytes(bytes, 0x0f), hi = shr_and(bytes, 4, 0x0f);
        const I16x16 scale_lo = pick16(scales, 2 * i, 2 * i), scale_hi = pick16(scales, 2 * i + 1, 2 * i + 1);
        for (int t = 0; t < T; ++t) {
            sum[t] = add32(sum[t], madd16(mul_u8s8(lo, load_bytes(x[t] + 64 * i)), scale_lo));
            sum[t] = add32(sum[t], madd16(mul_u8s8(hi, load_bytes(x[t] + 64 * i + 32)), scale_hi));
        }
    }
}

static inline I32x8 q4_k_sum(const uint8_t* packed_scales, const uint8_t* qs, const int8_t* x, const int16_t* sums16, int32_t* min_sum) {
    I32x8 sum, min_parts;
    q4_k_sums<1>(packed_scales, qs, &x, &sums16, &sum, &min_parts);
    *min_sum = hsum32(min_parts);
    return sum;
}

static float dot_row_q4_k(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    float mins = 0;
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * 144;
        prefetch_ahead(blk, 144);
        int32_t min_sum;
        const I32x8 sum = q4_k_sum(blk + 4, blk + 16, a.q + 256 * b, a.sums + 16 * b, &min_sum);
        const float dx = a.d[b];
        acc = fma_f(to_f32(sum), splat_f(half_to_float(read_u16(blk)) * dx), acc);
        mins += half_to_float(read_u16(blk + 2)) * dx * float(min_sum);
    }
    return hsum_f(acc) - mins;
}

static float dot_row_q5_k(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    float mins = 0;
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * 176;
        prefetch_ahead(blk, 176);
        const int8_t* x = a.q + 256 * b;
        uint8_t scale[8], min[8];
        unpack_k4_scales(blk + 4, scale, min);
        const int32_t min_sum = dot_u8x8_pairs(min, a.sums + 16 * b);
        const I16x16 scales = widen_u8x8(scale);
        const I8x32 high = load_bytes(blk + 16);
        I32x8 sum = zero32();
        for (int i = 0; i < 4; ++i) {
            const I8x32 bytes = load_bytes(blk + 48 + 32 * i);
            const I8x32 lo = or_bytes(and_bytes(bytes, 0x0f), move_bit(high, 2 * i, 4));
            const I8x32 hi = or_bytes(shr_and(bytes, 4, 0x0f), move_bit(high, 2 * i + 1, 4));
            sum = add32(sum, madd16(mul_u8s8(lo, load_bytes(x + 64 * i)), pick16(scales, 2 * i, 2 * i)));
            sum = add32(sum, madd16(mul_u8s8(hi, load_bytes(x + 64 * i + 32)), pick16(scales, 2 * i + 1, 2 * i + 1)));
        }
        const float dx = a.d[b];
        acc = fma_f(to_f32(sum), splat_f(half_to_float(read_u16(blk)) * dx), acc);
        mins += half_to_float(read_u16(blk + 2)) * dx * float(min_sum);
    }
    return hsum_f(acc) - mins;
}

// One Q6_K super-block's first 208 bytes (ql, qh, scales) times 256 activations: the scaled
// products of the quants as stored (+32), and in *offset_sum the scales times the activation sums
// that take the +32 back off. The group kernels (gemv_groups_k.inl) sum these same integers.
template <int T>
static inline void q6_k_sums(const uint8_t* blk, const int8_t* const* x, const int16_t* const* sums16, I32x8* sum, int32_t* offset_sum) {
    const int8_t* scales = reinterpret_cast<const int8_t*>(blk + 192);
    for (int t = 0; t < T; ++t) {
        offset_sum[t] = dot_i8x16(scales, sums16[t]);
        sum[t] = zero32();
    }
    for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = blk + 64 * h;
        const I8x32 high = load_bytes(blk + 128 + 32 * h);
        const I8x32 l0 = load_bytes(ql), l1 = load_bytes(ql + 32);
        const I8x32 u[4] = {or_bytes(and_bytes(l0, 0x0f), shl_and(high, 4, 0x30)),
                            or_bytes(and_bytes(l1, 0x0f), shl_and(high, 2, 0x30)),
                            or_bytes(shr_and(l0, 4, 0x0f), and_bytes(high, 0x30)),
                            or_bytes(shr_and(l1, 4, 0x0f), shr_and(high, 2, 0x30))};
        const I16x16 sc = widen_i8x8(scales + 8 * h);
        for (int t = 0; t < T; ++t)
            for (int k = 0; k < 4; ++k)
                sum[t] = add32(sum[t], madd16(mul_u8s8(u[k], load_bytes(x[t] + 128 * size_t(h) + 32 * k)), pick16(sc, 2 * k, 2 * k + 1)));
    }
}

// One token's Q6_K super-block: in the vector sum the products of the quants as stored (+32), and in
// *offset_sum the scales times the activation sums that take the +32 back off.
static inline I32x8 q6_k_sum(const uint8_t* blk, const int8_t* x, const int16_t* sums16, int32_t* offset_sum) {
    I32x8 sum;
    q6_k_sums<1>(blk, &x, &sums16, &sum, offset_sum);
    return sum;
}

static float dot_row_q6_k(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    float offsets = 0;
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * 210;
        prefetch_ahead(blk, 210);
        int32_t offset_sum;
        const I32x8 sum = q6_k_sum(blk, a.q + 256 * b, a.sums + 16 * b, &offset_sum);
        // The +32 offset comes off as a scalar: the vector sum holds the quants as stored.
        acc = fma_f(to_f32(sum), splat_f(half_to_float(read_u16(blk + 208)) * a.d[b]), acc);
        offsets += half_to_float(read_u16(blk + 208)) * a.d[b] * float(32 * offset_sum);
    }
    return hsum_f(acc) - offsets;
}

// Q3_K's sixteen 6-bit scales, minus 32, unpacked eight bytes at a time: low 4 bits from bytes
// 0-7 (two per byte), high 2 bits from bytes 8-11 (four per byte). Whole 64-bit stores, so the
// vector loads that read them back are forwarded from the store buffer.
static inline void unpack_q3_k_scales(const uint8_t* packed, int8_t scales[16]) {
    uint64_t low;
    uint32_t high;
    std::memcpy(&low, packed, 8);
    std::memcpy(&high, packed + 8, 4);
    const uint64_t h = uint64_t(high);
    const uint64_t mask4 = 0x0f0f0f0f0f0f0f0full, mask2 = 0x0303030303030303ull;
    const uint64_t high_first = (h & 0x03030303u) | (((h >> 2) & 0x03030303u) << 32);
    const uint64_t high_second = ((h >> 4) & 0x03030303u) | (((h >> 6) & 0x03030303u) << 32);
    uint64_t words[2] = {(low & mask4) | ((high_first & mask2) << 4), ((low >> 4) & mask4) | ((high_second & mask2) << 4)};
    // Subtract 32 from every byte without borrows between bytes (each byte is below 64).
    for (uint64_t& w : words) w = ((w | 0x8080808080808080ull) - 0x2020202020202020ull) ^ 0x8080808080808080ull;
    std::memcpy(scales, &words[0], 8);
    std::memcpy(scales + 8, &words[1], 8);
}

static float dot_row_q3_k(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    float offsets = 0;
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * 110;
        prefetch_ahead(blk, 110);
        const uint8_t* packed = blk + 96;
        int8_t scale[16];
        unpack_q3_k_scales(packed, scale);
        const int32_t offset_sum = dot_i8x8x2(scale, scale + 8, a.sums + 16 * b);  // a clear high bit means -4
        const I8x32 hmask = load_bytes(blk);
        I32x8 sum = zero32();
        for (int h = 0; h < 2; ++h) {
            const I8x32 bytes = load_bytes(blk + 32 + 32 * h);
            const I16x16 sc = widen_i8x8(scale + 8 * h);
            for (int j = 0; j < 4; ++j) {
                const I8x32 u = or_bytes(shr_and(bytes, 2 * j, 3), move_bit(hmask, 4 * h + j, 2));
                const int8_t* x = a.q + 256 * b + 128 * size_t(h) + 32 * size_t(j);
                sum = add32(sum, madd16(mul_u8s8(u, load_bytes(x)), pick16(sc, 2 * j, 2 * j + 1)));
            }
        }
        const float step = half_to_float(read_u16(blk + 108)) * a.d[b];
        acc = fma_f(to_f32(sum), splat_f(step), acc);
        offsets += step * float(4 * offset_sum);
    }
    return hsum_f(acc) - offsets;
}

static float dot_row_q2_k(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    float mins = 0;
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * 84;
        prefetch_ahead(blk, 84);
        const int32_t min_sum = dot_high_nibbles16(blk, a.sums + 16 * b);
        I32x8 sum = zero32();
        for (int h = 0; h < 2; ++h) {
            const I8x32 bytes = load_bytes(blk + 16 + 32 * h);
            const I16x16 sc = widen_low_nibbles8(blk + 8 * h);
            for (int j = 0; j < 4; ++j) {
                const int8_t* x = a.q + 256 * b + 128 * size_t(h) + 32 * size_t(j);
                sum = add32(sum, madd16(mul_u8s8(shr_and(bytes, 2 * j, 3), load_bytes(x)), pick16(sc, 2 * j, 2 * j + 1)));
            }
        }
        const float dx = a.d[b];
        acc = fma_f(to_f32(sum), splat_f(half_to_float(read_u16(blk + 80)) * dx), acc);
        mins += half_to_float(read_u16(blk + 82)) * dx * float(min_sum);
    }
    return hsum_f(acc) - mins;
}

static float dot_row_iq4_xs(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    const I8x32 table = load_table16(kIQ4Levels);
    F32x8 acc = zero_f();
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * 136;
        prefetch_ahead(blk, 136);
        const uint16_t scales_h = read_u16(blk + 2);
        I32x8 sum = zero32();
        for (int sub = 0; sub < 8; ++sub) {
            const int low = (blk[4 + sub / 2] >> (4 * (sub % 2))) & 0x0f;
            const int high = (scales_h >> (2 * sub)) & 3;
            const I8x32 v = lookup16(table, load_nibbles16(blk + 8 + 16 * sub));
            const I8x32 x = load_bytes(a.q + 256 * b + 32 * size_t(sub));
            sum = add32(sum, madd16(mul_s8s8(v, x), splat16(int16_t((low | (high << 4)) - 32))));
        }
        acc = fma_f(to_f32(sum), splat_f(half_to_float(read_u16(blk)) * a.d[b]), acc);
    }
    return hsum_f(acc);
}

#include "gemv_iq.inl"

// ---- Eight interleaved rows (quant/interleave.h) -------------------------------------------------
// Q4_0: two rows share a register (row A's 16 quant bytes, then row B's), so one pair of masks
// yields both rows' low and high nibbles and each activation half is broadcast once for all rows.
// A prompt batch passes T tokens: the nibbles are unpacked once for all of them, and each token's
// arithmetic is the same operations in the same order as with T = 1, so results do not depend on
// how tokens are grouped.
template <int T>
static void dot_groups_q4_0_tokens(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    const size_t nb = n / 32;
    const int8_t* q[T];
    const float* d[T];
    const float* s[T];
    for (int t = 0; t < T; ++t) {
        q[t] = reinterpret_cast<const int8_t*>(acts[t]);
        d[t] = reinterpret_cast<const float*>(acts[t] + n);
        s[t] = d[t] + nb;
    }
    for (size_t g = 0; g < n_groups; ++g) {
        const uint8_t* base = groups + g * nb * 144;
        F32x8 acc[T], bias[T];
        for (int t = 0; t < T; ++t) acc[t] = bias[t] = zero_f();
        for (size_t b = 0; b < nb; ++b) {
            const uint8_t* chunk = base + b * 144;
            prefetch_ahead(chunk, 144);
            I8x32 lo[4], hi[4];
            for (int k = 0; k < 4; ++k) {
                const I8x32 bytes = load_bytes(chunk + 16 + 32 * k);
                lo[k] = and_bytes(bytes, 0x0f);
                hi[k] = shr_and(bytes, 4, 0x0f);
            }
            const F32x8 dw = load_f16(chunk);
            for (int t = 0; t < T; ++t) {
                const I8x32 x_lo = broadcast16(q[t] + 32 * b), x_hi = broadcast16(q[t] + 32 * b + 16);
                I16x16 p[4];
                for (int k = 0; k < 4; ++k) p[k] = add16(mul_u8s8(lo[k], x_lo), mul_u8s8(hi[k], x_hi));
                // The pairwise tree stays in 16 bits until the last step, one widening instead of four:
                // a lane holds at most 16 products of a nibble (0..15) and an activation (|q| <= 127),
                // 16 × 15 × 127 = 30480 < 32767. Lanes come out in kInterleaveLanes order.
                const I32x8 sums = sum_pairs(hadd16(hadd16(p[0], p[1]), hadd16(p[2], p[3])));
                acc[t] = fma_f(to_f32(sums), mul_f(dw, splat_f(d[t][b])), acc[t]);
                bias[t] = fma_f(dw, splat_f(s[t][b]), bias[t]);
            }
        }
        for (int t = 0; t < T; ++t) {
            store_group(outs[t] + 8 * g, fma_f(bias[t], splat_f(-8.0f), acc[t]));
        }
    }
}

static void dot_groups_q4_0(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* act, float* out) {
    dot_groups_q4_0_tokens<1>(groups, n_groups, n, &act, &out);
}

static void dot_groups_q4_0_pair(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    dot_groups_q4_0_tokens<2>(groups, n_groups, n, acts, outs);
}

static void dot_groups_q4_0_quad(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    dot_groups_q4_0_tokens<4>(groups, n_groups, n, acts, outs);
}

// Q8_0: per block, eight rows' scales (lane order), then each row's 32 quants. T tokens at once load
// each weight register and take its absolute value once; each token's arithmetic is the same as alone.
template <int T>
static void dot_groups_q8_0_tokens(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    const size_t nb = n / 32;
    const int8_t* q[T];
    const float* d[T];
    for (int t = 0; t < T; ++t) {
        q[t] = reinterpret_cast<const int8_t*>(acts[t]);
        d[t] = reinterpret_cast<const float*>(acts[t] + n);
    }
    for (size_t g = 0; g < n_groups; ++g) {
        const uint8_t* base = groups + g * nb * 272;
        F32x8 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = zero_f();
        for (size_t b = 0; b < nb; ++b) {
            const uint8_t* chunk = base + b * 272;
            prefetch_ahead(chunk, 272);
            I8x32 w[8];
            for (int i = 0; i < 8; ++i) w[i] = load_bytes(chunk + 16 + 32 * kInterleaveLanes[i]);
#if !defined(RILL_LANES_SIGNED_BYTES)  // x86 takes |w| once per weight block and moves its sign onto each token's bytes
            I8x32 magnitude[8];
            for (int i = 0; i < 8; ++i) magnitude[i] = abs_bytes(w[i]);
#endif
            const F32x8 dw = load_f16(chunk);
            for (int t = 0; t < T; ++t) {
                const I8x32 x = load_bytes(q[t] + 32 * b);
                I32x8 p[8];
#if defined(RILL_LANES_SIGNED_BYTES)  // NEON multiplies the signed bytes as they are
                for (int i = 0; i < 8; ++i) p[i] = dot_s8s8(w[i], x);
#else
                for (int i = 0; i < 8; ++i) p[i] = dot_u8s8(magnitude[i], apply_sign(x, w[i]));
#endif
                acc[t] = fma_f(to_f32(hsum8x8(p)), mul_f(dw, splat_f(d[t][b])), acc[t]);
            }
        }
        for (int t = 0; t < T; ++t) {
            store_group(outs[t] + 8 * g, acc[t]);
        }
    }
}

#if defined(RILL_LANES_AVX512)
#include "gemv_q8_0_avx512.inl"
#define RILL_Q8_0_GROUPS dot_groups_q8_0_512
#else
#define RILL_Q8_0_GROUPS dot_groups_q8_0_tokens
#endif

static void dot_groups_q8_0(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* act, float* out) {
    RILL_Q8_0_GROUPS<1>(groups, n_groups, n, &act, &out);
}

static void dot_groups_q8_0_quad(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    RILL_Q8_0_GROUPS<4>(groups, n_groups, n, acts, outs);
}
#undef RILL_Q8_0_GROUPS

// MXFP4: per block, eight rows' exponent bytes (lane order), then each row's 16 code bytes; two rows
// share a register as in Q4_0. Codes look up their level plus 12, an unsigned byte (0..24), so the
// unsigned-by-signed dot product is exact and needs no sign shuffling; 12 times the activation block's
// sum comes off at the end, as Q4_0's offset of 8 does. Pair sums stay within int16 (2 × 24 × 127).
static constexpr int8_t kMXFP4LevelsPlus12[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};
static_assert(kMXFP4LevelsPlus12[15] == kMXFP4Levels[15] + 12 && kMXFP4LevelsPlus12[7] == kMXFP4Levels[7] + 12);

template <int T>
static void dot_groups_mxfp4_tokens(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    const size_t nb = n / 32;
    const int8_t* q[T];
    const float* d[T];
    const float* s[T];
    for (int t = 0; t < T; ++t) {
        q[t] = reinterpret_cast<const int8_t*>(acts[t]);
        d[t] = reinterpret_cast<const float*>(acts[t] + n);
        s[t] = d[t] + nb;
    }
    const I8x32 table = load_table16(kMXFP4LevelsPlus12);
    for (size_t g = 0; g < n_groups; ++g) {
        const uint8_t* base = groups + g * nb * 136;
        F32x8 acc[T], bias[T];
        for (int t = 0; t < T; ++t) acc[t] = bias[t] = zero_f();
        for (size_t b = 0; b < nb; ++b) {
            const uint8_t* chunk = base + b * 136;
            prefetch_ahead(chunk, 136);
            I8x32 lo[4], hi[4];
            for (int k = 0; k < 4; ++k) {
                const I8x32 bytes = load_bytes(chunk + 8 + 32 * k);
                lo[k] = lookup16(table, and_bytes(bytes, 0x0f));
                hi[k] = lookup16(table, shr_and(bytes, 4, 0x0f));
            }
            const F32x8 dw = load_e8m0_half(chunk);
            for (int t = 0; t < T; ++t) {
                const I8x32 x_lo = broadcast16(q[t] + 32 * b), x_hi = broadcast16(q[t] + 32 * b + 16);
                I32x8 p[4];
                for (int k = 0; k < 4; ++k) p[k] = add32(dot_u8s8(lo[k], x_lo), dot_u8s8(hi[k], x_hi));
                // Lanes come out in kInterleaveLanes order, as the scales were stored.
                const I32x8 sums = hadd32(hadd32(p[0], p[1]), hadd32(p[2], p[3]));
                acc[t] = fma_f(to_f32(sums), mul_f(dw, splat_f(d[t][b])), acc[t]);
                bias[t] = fma_f(dw, splat_f(s[t][b]), bias[t]);
            }
        }
        for (int t = 0; t < T; ++t) {
            store_group(outs[t] + 8 * g, fma_f(bias[t], splat_f(-12.0f), acc[t]));
        }
    }
}

#if defined(RILL_LANES_AVX512)
#include "gemv_mxfp4_avx512.inl"
#define RILL_MXFP4_GROUPS dot_groups_mxfp4_512
#else
#define RILL_MXFP4_GROUPS dot_groups_mxfp4_tokens
#endif

static void dot_groups_mxfp4(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* act, float* out) {
    RILL_MXFP4_GROUPS<1>(groups, n_groups, n, &act, &out);
}

static void dot_groups_mxfp4_quad(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    RILL_MXFP4_GROUPS<4>(groups, n_groups, n, acts, outs);
}
#undef RILL_MXFP4_GROUPS


#include "gemv_groups_k.inl"

// ---- Float weights: F32 F16 BF16, float activations ---------------------------------------------

static inline F32x8 load_f32_bytes(const void* p) { return load_f32(static_cast<const float*>(p)); }
static inline float scalar_f32(const uint8_t* p) { return read_f32(p); }
static inline float scalar_f16(const uint8_t* p) { return half_to_float(read_u16(p)); }
static inline float scalar_bf16(const uint8_t* p) {
    const uint32_t bits = uint32_t(read_u16(p)) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// One row at a time and no software prefetch: a plain forward stream per row is what the hardware
// prefetchers follow best. Two rows at once with prefetches 2 KiB ahead streamed F16 at 0.88x this
// (tinyllama F16 tg at 2 threads, median of four alternating runs, AMD EPYC Zen 3, AVX2).
template <size_t kElem, F32x8 (*Load)(const void*), float (*Scalar)(const uint8_t*)>
static float dot_row_float(const uint8_t* w, size_t n, const uint8_t* act) {
    const float* x = reinterpret_cast<const float*>(act);
    F32x8 acc[4] = {zero_f(), zero_f(), zero_f(), zero_f()};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; ++k) acc[k] = fma_f(Load(w + (i + 8 * size_t(k)) * kElem), load_f32(x + i + 8 * size_t(k)), acc[k]);
    for (; i + 8 <= n; i += 8) acc[0] = fma_f(Load(w + i * kElem), load_f32(x + i), acc[0]);
    float total = hsum_f(add_f(add_f(acc[0], acc[1]), add_f(acc[2], acc[3])));
    for (; i < n; ++i) total += Scalar(w + i * kElem) * x[i];
    return total;
}

// out[i] = sum over r of weights[r] * row_r[i], rows taken in order: attention's weighted sum of
// cached values, read straight from the cache's element type.
template <size_t kElem, F32x8 (*Load)(const void*), float (*Scalar)(const uint8_t*)>
static void weighted_sum(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t n, const float* weights, float* out) {
    size_t c = 0;
    for (; c + 64 <= n; c += 64) {
        F32x8 acc[8];
        for (auto& a : acc) a = zero_f();
        for (size_t r = 0; r < n_rows; ++r) {
            const F32x8 w = splat_f(weights[r]);
            const uint8_t* row = rows + r * row_stride + c * kElem;
            for (int k = 0; k < 8; ++k) acc[k] = fma_f(Load(row + 8 * size_t(k) * kElem), w, acc[k]);
        }
        for (int k = 0; k < 8; ++k) store_f32(out + c + 8 * size_t(k), acc[k]);
    }
    for (; c < n; ++c) {
        float sum = 0;
        for (size_t r = 0; r < n_rows; ++r) sum += weights[r] * Scalar(rows + r * row_stride + c * kElem);
        out[c] = sum;
    }
}

// The same for rows of ggml's 32-element blocks (Q8_0, Q4_0: a half scale, then the quants), kBlocks
// blocks (32 * kBlocks columns) per pass over the rows: each block's scale times the row's weight
// multiplies its integers, converted to float eight at a time by Eight(block, k) for k < 4.
template <size_t kBytes, F32x8 (*Eight)(const uint8_t*, int), int kBlocks>
static void weighted_sum_blocks(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t block, const float* weights, float* out) {
    F32x8 acc[4 * kBlocks];
    for (auto& a : acc) a = zero_f();
    for (size_t r = 0; r < n_rows; ++r) {
        const uint8_t* blk = rows + r * row_stride + block * kBytes;
        for (int j = 0; j < kBlocks; ++j) {
            const uint8_t* b = blk + size_t(j) * kBytes;
            const F32x8 s = splat_f(weights[r] * half_to_float(read_u16(b)));
            for (int k = 0; k < 4; ++k) acc[4 * j + k] = fma_f(Eight(b, k), s, acc[4 * j + k]);
        }
    }
    for (int i = 0; i < 4 * kBlocks; ++i) store_f32(out + 32 * block + 8 * size_t(i), acc[i]);
}

// n is a multiple of 32 (a head of a quantized KV cache).
template <size_t kBytes, F32x8 (*Eight)(const uint8_t*, int)>
static void weighted_sum_b32(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t n, const float* weights, float* out) {
    const size_t nb = n / 32;
    size_t b = 0;
    for (; b + 2 <= nb; b += 2) weighted_sum_blocks<kBytes, Eight, 2>(rows, row_stride, n_rows, b, weights, out);
    for (; b < nb; ++b) weighted_sum_blocks<kBytes, Eight, 1>(rows, row_stride, n_rows, b, weights, out);
}

static inline F32x8 q8_0_eight(const uint8_t* blk, int k) { return load_i8x8_f(blk + 2 + 8 * k); }
// Values 0..15 are the low nibbles of bytes 0..15, values 16..31 their high nibbles; each less 8.
static inline F32x8 q4_0_eight(const uint8_t* blk, int k) {
    return add_f(load_nibbles8_f(blk + 2 + 8 * (k & 1), k < 2 ? 0 : 4), splat_f(-8.0f));
}

// ---- Attention over a float KV cache, all the query heads that share a key head at once ----------

// R rows times N heads of scores in one pass over the columns, each (row, head) one chain of
// multiply-adds and one lane of hsum8x8_f: a score is the same in whatever pass it falls.
template <size_t kElem, F32x8 (*Load)(const void*), int N, int R>
static inline void dot_heads_pass(const uint8_t* rows, size_t row_stride, size_t r0, size_t cols, const float* q, float* out,
                                  size_t out_stride) {
    F32x8 acc[8];
    for (auto& a : acc) a = zero_f();
    for (size_t i = 0; i < cols; i += 8) {
        F32x8 x[N];
        for (int h = 0; h < N; ++h) x[h] = load_f32(q + size_t(h) * cols + i);
        for (int j = 0; j < R; ++j) {
            const F32x8 k = Load(rows + (r0 + size_t(j)) * row_stride + i * kElem);
            for (int h = 0; h < N; ++h) acc[j * N + h] = fma_f(k, x[h], acc[j * N + h]);
        }
    }
    float sums[8];
    store_f32(sums, hsum8x8_f(acc));
    for (int j = 0; j < R; ++j)
        for (int h = 0; h < N; ++h) out[size_t(h) * out_stride + r0 + size_t(j)] = sums[j * N + h];
}

template <size_t kElem, F32x8 (*Load)(const void*), int N>
static void dot_heads_n(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t cols, const float* q, float* out, size_t out_stride) {
    constexpr int R = 8 / N;
    size_t r = 0;
    for (; r + R <= n_rows; r += R) dot_heads_pass<kElem, Load, N, R>(rows, row_stride, r, cols, q, out, out_stride);
    for (; r < n_rows; ++r) dot_heads_pass<kElem, Load, N, 1>(rows, row_stride, r, cols, q, out, out_stride);
}

// out[h * out_stride + r] = row_r · q[h * cols ..] for h < n_q (1 to 8) and r < n_rows; cols a
// multiple of 8. Each key row is read and widened once for all the heads.
template <size_t kElem, F32x8 (*Load)(const void*)>
static void dot_heads(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t cols, const float* q, int n_q, float* out,
                      size_t out_stride) {
    switch (n_q) {
        case 1: return dot_heads_n<kElem, Load, 1>(rows, row_stride, n_rows, cols, q, out, out_stride);
        case 2: return dot_heads_n<kElem, Load, 2>(rows, row_stride, n_rows, cols, q, out, out_stride);
        case 3: return dot_heads_n<kElem, Load, 3>(rows, row_stride, n_rows, cols, q, out, out_stride);
        case 4: return dot_heads_n<kElem, Load, 4>(rows, row_stride, n_rows, cols, q, out, out_stride);
        case 5: return dot_heads_n<kElem, Load, 5>(rows, row_stride, n_rows, cols, q, out, out_stride);
        case 6: return dot_heads_n<kElem, Load, 6>(rows, row_stride, n_rows, cols, q, out, out_stride);
        case 7: return dot_heads_n<kElem, Load, 7>(rows, row_stride, n_rows, cols, q, out, out_stride);
        default: return dot_heads_n<kElem, Load, 8>(rows, row_stride, n_rows, cols, q, out, out_stride);
    }
}

// out[h * n + c] = sum over r of weights[h * w_stride + r] * row_r[c], for h < N: each value row
// widened once for all the heads, 16 columns at a time. Every output is one chain of multiply-adds
// over the rows in order, as weighted_sum's are.
template <size_t kElem, F32x8 (*Load)(const void*), int N>
static void weighted_sum_heads_n(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t n, const float* weights,
                                 size_t w_stride, float* out) {
    for (size_t c = 0; c < n; c += 16) {
        F32x8 acc[N][2];
        for (auto& a : acc) a[0] = a[1] = zero_f();
        for (size_t r = 0; r < n_rows; ++r) {
            const uint8_t* row = rows + r * row_stride + c * kElem;
            const F32x8 v0 = Load(row), v1 = Load(row + 8 * kElem);
            for (int h = 0; h < N; ++h) {
                const F32x8 w = splat_f(weights[size_t(h) * w_stride + r]);
                acc[h][0] = fma_f(v0, w, acc[h][0]);
                acc[h][1] = fma_f(v1, w, acc[h][1]);
            }
        }
        for (int h = 0; h < N; ++h) {
            store_f32(out + size_t(h) * n + c, acc[h][0]);
            store_f32(out + size_t(h) * n + c + 8, acc[h][1]);
        }
    }
}

// n a multiple of 16, n_q from 1 to 8.
template <size_t kElem, F32x8 (*Load)(const void*)>
static void weighted_sum_heads(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t n, const float* weights, size_t w_stride,
                               int n_q, float* out) {
    switch (n_q) {
        case 1: return weighted_sum_heads_n<kElem, Load, 1>(rows, row_stride, n_rows, n, weights, w_stride, out);
        case 2: return weighted_sum_heads_n<kElem, Load, 2>(rows, row_stride, n_rows, n, weights, w_stride, out);
        case 3: return weighted_sum_heads_n<kElem, Load, 3>(rows, row_stride, n_rows, n, weights, w_stride, out);
        case 4: return weighted_sum_heads_n<kElem, Load, 4>(rows, row_stride, n_rows, n, weights, w_stride, out);
        case 5: return weighted_sum_heads_n<kElem, Load, 5>(rows, row_stride, n_rows, n, weights, w_stride, out);
        case 6: return weighted_sum_heads_n<kElem, Load, 6>(rows, row_stride, n_rows, n, weights, w_stride, out);
        case 7: return weighted_sum_heads_n<kElem, Load, 7>(rows, row_stride, n_rows, n, weights, w_stride, out);
        default: return weighted_sum_heads_n<kElem, Load, 8>(rows, row_stride, n_rows, n, weights, w_stride, out);
    }
}

#if defined(RILL_LANES_AVX512)
#include "gemv_float_avx512.inl"
#define RILL_DOT_ROW_F16 dot_row_half_512<load16_f16, scalar_f16, false>
#define RILL_DOT_ROW_BF16 dot_row_half_512<load16_bf16, scalar_bf16, false>
#define RILL_DOT_ROWS_AHEAD dot_rows<dot_row_half_512<load16_f16, scalar_f16, true>>, dot_rows<dot_row_half_512<load16_bf16, scalar_bf16, true>>
#else
#define RILL_DOT_ROWS_AHEAD nullptr, nullptr
#define RILL_DOT_ROW_F16 dot_row_float<2, load_f16, scalar_f16>
#define RILL_DOT_ROW_BF16 dot_row_float<2, load_bf16, scalar_bf16>
#endif

#include "delta_rule.inl"

template <float (*Row)(const uint8_t*, size_t, const uint8_t*)>
static void dot_rows(const uint8_t* rows, size_t row_stride, size_t n_rows, size_t cols, const uint8_t* act, float* out) {
    for (size_t r = 0; r < n_rows; ++r) out[r] = Row(rows + r * row_stride, cols, act);
}

static const GemvKernels kKernels = {
    kPath,
    quantize_act_q8x32,
    quantize_act_q8x256,
    dot_rows<dot_row_float<4, load_f32_bytes, scalar_f32>>,
    dot_rows<RILL_DOT_ROW_F16>,
    dot_rows<RILL_DOT_ROW_BF16>,
    dot_rows<dot_row_b32<18, Bias::Offset, 8, block_q4_0>>,
    dot_rows<dot_row_b32<20, Bias::Min, 0, block_q4_1>>,
    dot_rows<dot_row_b32<22, Bias::Offset, 16, block_q5_0>>,
    dot_rows<dot_row_b32<24, Bias::Min, 0, block_q5_1>>,
    dot_rows<dot_row_b32<34, Bias::None, 0, block_q8_0>>,
    dot_rows<dot_row_b32<18, Bias::None, 0, block_iq4_nl>>,
    dot_rows<dot_row_q2_k>,
    dot_rows<dot_row_q3_k>,
    dot_rows<dot_row_q4_k>,
    dot_rows<dot_row_q5_k>,
    dot_rows<dot_row_q6_k>,
    dot_rows<dot_row_iq4_xs>,
    dot_rows<dot_row_b32<17, Bias::None, 0, block_mxfp4, Scale::E8M0>>,
    dot_groups_q4_0,
    dot_groups_q8_0,
    dot_groups_q4_k,
    dot_groups_q6_k,
    dot_groups_mxfp4,
    dot_groups_q4_0_pair,
    dot_groups_q4_0_quad,
    dot_groups_q8_0_quad,
    dot_groups_q4_k_quad,
    dot_groups_q6_k_quad,
    dot_groups_mxfp4_quad,
    weighted_sum<4, load_f32_bytes, scalar_f32>,
    weighted_sum<2, load_f16, scalar_f16>,
    weighted_sum<2, load_bf16, scalar_bf16>,
    weighted_sum_b32<34, q8_0_eight>,
    weighted_sum_b32<18, q4_0_eight>,
    dot_heads<4, load_f32_bytes>,
    dot_heads<2, load_f16>,
    dot_heads<2, load_bf16>,
    weighted_sum_heads<4, load_f32_bytes>,
    weighted_sum_heads<2, load_f16>,
    weighted_sum_heads<2, load_bf16>,
    delta_rule,
    dot_rows<dot_row_iq2_xxs>,
    dot_rows<dot_row_iq2_xs>,
    dot_rows<dot_row_iq2_s>,
    dot_rows<dot_row_iq3_xxs>,
    dot_rows<dot_row_iq3_s>,
    dot_rows<dot_row_iq1_s>,
    dot_rows<dot_row_iq1_m>,
    dot_rows<dot_row_tq1_0>,
    dot_rows<dot_row_tq2_0>,
    RILL_DOT_ROWS_AHEAD,
};
