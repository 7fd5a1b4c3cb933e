// ---- IQ1–IQ3 and ternary super-blocks (quant/iq_grids.h), included by gemv_body.inl ------------
// Each 32 values are built in one vector from four 8-byte (or eight 4-byte) grid entries, and their
// 8-bit sign masks are applied to the activations (|q| <= 127, so negating never overflows); the grid
// bytes are unsigned levels of at most 62. Sub-block scales are small odd integers, so a super-block's
// whole dot product is exact in int32 and meets floating point once, as in ggml's kernels, which pair
// these types with the same 8-bit activations per 256 (Q8_K).

// Sign bits of four groups of eight, from the 7-bit indices IQ2_XXS, IQ2_XS and IQ3_XXS store (the
// eighth bit makes each group's count of negatives even).
static inline uint32_t iq_signs4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    return uint32_t(kIQSigns[a]) | uint32_t(kIQSigns[b]) << 8 | uint32_t(kIQSigns[c]) << 16 | uint32_t(kIQSigns[d]) << 24;
}
// The same from the four 7-bit fields packed in the low 28 bits of v, computed instead of looked up:
// each byte's parity, folded down to its bit 0, becomes its bit 7.
static inline uint32_t iq_signs_packed(uint32_t v) {
    const uint32_t bits = spread7x4(v);
    uint32_t p = bits ^ (bits >> 4);
    p ^= p >> 2;
    p ^= p >> 1;
    return bits | ((p & 0x01010101u) << 7);
}

static float dot_row_iq2_xxs(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * sizeof(BlockIQ2_XXS);
        prefetch_ahead(blk, sizeof(BlockIQ2_XXS));
        I32x8 sum = zero32();
        for (int ib = 0; ib < 8; ++ib) {
            const uint32_t idx = read_u32(blk + 2 + 8 * ib), aux = read_u32(blk + 6 + 8 * ib);
            const I8x32 g = bytes_u64x4(kIQ2XXSGrid[idx & 0xff], kIQ2XXSGrid[(idx >> 8) & 0xff], kIQ2XXSGrid[(idx >> 16) & 0xff],
                                        kIQ2XXSGrid[idx >> 24]);
            const uint32_t signs = iq_signs_packed(aux);
            const I8x32 x = negate_bits(load_bytes(a.q + 256 * b + 32 * size_t(ib)), signs);
            sum = add32(sum, madd16(mul_u8s8(g, x), splat16(int16_t(2 * (aux >> 28) + 1))));
        }
        acc = fma_f(to_f32(sum), splat_f(half_to_float(read_u16(blk)) * a.d[b] * 0.125f), acc);
    }
    return hsum_f(acc);
}

static float dot_row_iq2_xs(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * sizeof(BlockIQ2_XS);
        prefetch_ahead(blk, sizeof(BlockIQ2_XS));
        I32x8 sum = zero32();
        for (int ib = 0; ib < 8; ++ib) {
            uint16_t q[4];
            std::memcpy(q, blk + 2 + 8 * ib, 8);
            const I8x32 g = bytes_u64x4(kIQ2XSGrid[q[0] & 511], kIQ2XSGrid[q[1] & 511], kIQ2XSGrid[q[2] & 511], kIQ2XSGrid[q[3] & 511]);
            const uint32_t signs = iq_signs4(q[0] >> 9, q[1] >> 9, q[2] >> 9, q[3] >> 9);
            const I8x32 x = negate_bits(load_bytes(a.q + 256 * b + 32 * size_t(ib)), signs);
            const uint8_t sc = blk[66 + ib];
            sum = add32(sum, madd16(mul_u8s8(g, x), splat16x2(int16_t(2 * (sc & 0xf) + 1), int16_t(2 * (sc >> 4) + 1))));
        }
        acc = fma_f(to_f32(sum), splat_f(half_to_float(read_u16(blk)) * a.d[b] * 0.125f), acc);
    }
    return hsum_f(acc);
}

static float dot_row_iq2_s(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * sizeof(BlockIQ2_S);
        prefetch_ahead(blk, sizeof(BlockIQ2_S));
        I32x8 sum = zero32();
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* q = blk + 2 + 4 * ib;
            const int qh = blk[66 + ib];
            const I8x32 g = bytes_u64x4(kIQ2SGrid[size_t(q[0] | ((qh << 8) & 0x300))], kIQ2SGrid[size_t(q[1] | ((qh << 6) & 0x300))],
                                        kIQ2SGrid[size_t(q[2] | ((qh << 4) & 0x300))], kIQ2SGrid[size_t(q[3] | ((qh << 2) & 0x300))]);
            const I8x32 x = negate_bits(load_bytes(a.q + 256 * b + 32 * size_t(ib)), read_u32(blk + 34 + 4 * ib));
            const uint8_t sc = blk[74 + ib];
            sum = add32(sum, madd16(mul_u8s8(g, x), splat16x2(int16_t(2 * (sc & 0xf) + 1), int16_t(2 * (sc >> 4) + 1))));
        }
        acc = fma_f(to_f32(sum), splat_f(half_to_float(read_u16(blk)) * a.d[b] * 0.125f), acc);
    }
    return hsum_f(acc);
}

static float dot_row_iq3_xxs(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * sizeof(BlockIQ3_XXS);
        prefetch_ahead(blk, sizeof(BlockIQ3_XXS));
        I32x8 sum = zero32();
        for (int ib = 0; ib < 8; ++ib) {
            const I8x32 g = gather_u32x8(kIQ3XXSGrid.data(), indices9(blk + 2 + 8 * ib, 0));
            const uint32_t aux = read_u32(blk + 66 + 4 * ib);
            const uint32_t signs = iq_signs_packed(aux);
            const I8x32 x = negate_bits(load_bytes(a.q + 256 * b + 32 * size_t(ib)), signs);
            sum = add32(sum, madd16(mul_u8s8(g, x), splat16(int16_t(2 * (aux >> 28) + 1))));
        }
        acc = fma_f(to_f32(sum), splat_f(half_to_float(read_u16(blk)) * a.d[b] * 0.25f), acc);
    }
    return hsum_f(acc);
}

static float dot_row_iq3_s(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * sizeof(BlockIQ3_S);
        prefetch_ahead(blk, sizeof(BlockIQ3_S));
        I32x8 sum = zero32();
        for (int ib = 0; ib < 8; ++ib) {
            const I8x32 g = gather_u32x8(kIQ3SGrid.data(), indices9(blk + 2 + 8 * ib, blk[66 + ib]));
            const I8x32 x = negate_bits(load_bytes(a.q + 256 * b + 32 * size_t(ib)), read_u32(blk + 74 + 4 * ib));
            const int s = (blk[106 + ib / 2] >> (4 * (ib % 2))) & 0xf;
            sum = add32(sum, madd16(mul_u8s8(g, x), splat16(int16_t(2 * s + 1))));
        }
        acc = fma_f(to_f32(sum), splat_f(half_to_float(read_u16(blk)) * a.d[b]), acc);
    }
    return hsum_f(acc);
}

// IQ1 values are dl·(g ± 1/8) with g in {-1, 0, 1}: eight times that, 8g ± 1, is a byte, so the dot
// product is exact in integers and the 1/8 joins the float scale.
static inline I8x32 iq1_weights(uint64_t e0, uint64_t e1, uint64_t e2, uint64_t e3, uint32_t negative_delta) {
    const I8x32 ones = expand_bits(~0u, 1);
    return add_bytes(bytes_u64x4(e0, e1, e2, e3), or_bytes(expand_bits(negative_delta, 0xfe), ones));
}

static float dot_row_iq1_s(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * sizeof(BlockIQ1_S);
        prefetch_ahead(blk, sizeof(BlockIQ1_S));
        I32x8 sum = zero32();
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* q = blk + 2 + 4 * ib;
            const uint32_t h = read_u16(blk + 34 + 2 * ib);
            const I8x32 v = iq1_weights(kIQ1SGrid8[q[0] | ((h << 8) & 0x700)], kIQ1SGrid8[q[1] | ((h << 5) & 0x700)],
                                        kIQ1SGrid8[q[2] | ((h << 2) & 0x700)], kIQ1SGrid8[q[3] | ((h >> 1) & 0x700)],
                                        h & 0x8000 ? ~0u : 0u);
            const I8x32 x = load_bytes(a.q + 256 * b + 32 * size_t(ib));
            sum = add32(sum, madd16(mul_s8s8(v, x), splat16(int16_t(2 * ((h >> 12) & 7) + 1))));
        }
        acc = fma_f(to_f32(sum), splat_f(half_to_float(read_u16(blk)) * a.d[b] * 0.125f), acc);
    }
    return hsum_f(acc);
}

static float dot_row_iq1_m(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    F32x8 acc = zero_f();
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * sizeof(BlockIQ1_M);
        prefetch_ahead(blk, sizeof(BlockIQ1_M));
        const uint16_t half = iq1_m_scale_bits(blk + 48);
        I32x8 sum = zero32();
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* q = blk + 4 * ib;
            const int h0 = blk[32 + 2 * ib], h1 = blk[33 + 2 * ib];
            const uint32_t negative = (h0 & 0x08 ? 0xffu : 0u) | (h0 & 0x80 ? 0xff00u : 0u) | (h1 & 0x08 ? 0xff0000u : 0u) |
                                      (h1 & 0x80 ? 0xff000000u : 0u);
            const I8x32 v = iq1_weights(kIQ1SGrid8[q[0] | ((h0 & 7) << 8)], kIQ1SGrid8[q[1] | ((h0 & 0x70) << 4)],
                                        kIQ1SGrid8[q[2] | ((h1 & 7) << 8)], kIQ1SGrid8[q[3] | ((h1 & 0x70) << 4)], negative);
            const int sc = read_u16(blk + 48 + 2 * (ib / 2)) >> (6 * (ib % 2));
            const I8x32 x = load_bytes(a.q + 256 * b + 32 * size_t(ib));
            sum = add32(sum, madd16(mul_s8s8(v, x), splat16x2(int16_t(2 * (sc & 7) + 1), int16_t(2 * ((sc >> 3) & 7) + 1))));
        }
        acc = fma_f(to_f32(sum), splat_f(half_to_float(half) * a.d[b] * 0.125f), acc);
    }
    return hsum_f(acc);
}

// Ternary values t - 1 with t in 0..2 (TQ2_0 stores 0..3): the dot product of the stored t, less the
// activations' sum, which the activation format keeps per 16.
static inline int32_t act_sum256(const int16_t* sums16) {
    int32_t s = 0;
    for (int g = 0; g < 16; ++g) s += sums16[g];
    return s;
}

static float dot_row_tq2_0(const uint8_t* w, size_t n, const uint8_t* act) {
    const Act256 a = act256(act, n);
    float total = 0;
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * sizeof(BlockTQ2_0);
        prefetch_ahead(blk, sizeof(BlockTQ2_0));
        I32x8 sum = zero32();
        for (int half = 0; half < 2; ++half) {
            const I8x32 bytes = load_bytes(blk + 32 * half);
            for (int l = 0; l < 4; ++l)
                sum = add32(sum, dot_u8s8(shr_and(bytes, 2 * l, 3), load_bytes(a.q + 256 * b + 128 * size_t(half) + 32 * size_t(l))));
        }
        const int32_t dot = hsum32(sum) - act_sum256(a.sums + 16 * b);
        total += float(dot) * (half_to_float(read_u16(blk + 64)) * a.d[b]);
    }
    return total;
}

// TQ1_0: bytes 0..31 hold values n·32 + m (trit n of byte m), bytes 32..47 values 160 + n·16 + m, and
// the four qh bytes values 240 + n·4 + j.
static float dot_row_tq1_0(const uint8_t* w, size_t n, const uint8_t* act) {
    static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    const Act256 a = act256(act, n);
    float total = 0;
    for (size_t b = 0; b < n / 256; ++b) {
        const uint8_t* blk = w + b * sizeof(BlockTQ1_0);
        prefetch_ahead(blk, sizeof(BlockTQ1_0));
        const int8_t* x = a.q + 256 * b;
        I32x8 sum = zero32();
        const I8x32 head = load_bytes(blk);
        for (int t = 0; t < 5; ++t) sum = add32(sum, dot_u8s8(trits(head, kPow3[t], kPow3[t]), load_bytes(x + 32 * t)));
        uint8_t middle[32];
        std::memcpy(middle, blk + 32, 16);
        std::memcpy(middle + 16, blk + 32, 16);
        const I8x32 mid = load_bytes(middle);
        sum = add32(sum, dot_u8s8(trits(mid, 1, 3), load_bytes(x + 160)));
        sum = add32(sum, dot_u8s8(trits(mid, 9, 27), load_bytes(x + 192)));
        // The last 32 values: trit 4 of bytes 32..47, then the four qh bytes' four trits.
        uint8_t tail[32];
        for (int m = 0; m < 16; ++m) tail[m] = uint8_t((unsigned(uint8_t(blk[32 + m] * 81)) * 3) >> 8);
        for (int t = 0; t < 4; ++t)
            for (int j = 0; j < 4; ++j) tail[16 + 4 * t + j] = uint8_t((unsigned(uint8_t(blk[48 + j] * kPow3[t])) * 3) >> 8);
        sum = add32(sum, dot_u8s8(load_bytes(tail), load_bytes(x + 224)));
        const int32_t dot = hsum32(sum) - act_sum256(a.sums + 16 * b);
        total += float(dot) * (half_to_float(read_u16(blk + 52)) * a.d[b]);
    }
    return total;
}
