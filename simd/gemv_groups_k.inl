// The Q4_K and Q6_K group kernels over the lanes of lanes_*.h (included by gemv_body.inl, so compiled
// once per instruction-set path), and on the Avx512 path their 512-bit forms. Their groups hold the
// quants of eight rows side by side in 8-byte pieces (quant/interleave.h).

// For group kernels that hold rows 0-3 and rows 4-7 in two registers, two lanes a row: hadd32 of the
// two gives rows [0 1 4 5 2 3 6 7], and this puts them in kInterleaveLanes order [0 2 4 6 1 3 5 7],
// where the scales lie.
static constexpr int32_t kHaddToLaneOrder[8] = {0, 4, 2, 6, 1, 5, 3, 7};

// Q4_K: per super-block, eight rows' d then eight rows' dmin (lane order), the rows' packed scales,
// then the quants with 8-byte pieces of the eight rows side by side (quant/interleave.h). A 32-byte
// load is four rows' same sixteen weights (eight low nibbles, eight high), so one broadcast activation
// piece serves them and one word dot product applies four rows' sub-block scales. The integers summed
// are q4_k_sums' (the row kernel's), exact in int32, so every path gives the same bits. T tokens at
// once share the unpacking, each token's arithmetic the same as alone.
template <int T>
static void dot_groups_q4_k_tokens(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    Act256 a[T];
    for (int t = 0; t < T; ++t) a[t] = act256(acts[t], n);
    const size_t nb = n / 256;
    for (size_t g = 0; g < n_groups; ++g) {
        const uint8_t* base = groups + g * nb * 1152;
        F32x8 acc[T], mins[T];
        for (int t = 0; t < T; ++t) acc[t] = mins[t] = zero_f();
        for (size_t b = 0; b < nb; ++b) {
            const uint8_t* chunk = base + b * 1152;
            const uint8_t* qs = chunk + 128;
            const int8_t* x[T];
            const int16_t* sums[T];
            for (int t = 0; t < T; ++t) {
                x[t] = a[t].q + 256 * b;
                sums[t] = a[t].sums + 16 * b;
            }
            alignas(32) uint8_t scale[8][8];
            uint8_t min[8][8];
            for (int r = 0; r < 8; ++r) unpack_k4_scales(chunk + 32 + 12 * r, scale[r], min[r]);
            I32x8 m[T][8];
            for (int i = 0; i < 8; ++i)
                for (int t = 0; t < T; ++t) m[t][i] = madd_u8x8_pairs(min[kInterleaveLanes[i]], sums[t]);
            const I8x32 row_scales[2] = {load_bytes(scale[0]), load_bytes(scale[4])};
            I32x8 sum[T][2];
            for (int t = 0; t < T; ++t) sum[t][0] = sum[t][1] = zero32();
            for (int k = 0; k < 4; ++k) {
                prefetch_ahead_part<1152, 4>(chunk, k);
                const I16x16 scale_lo[2] = {pick_row_bytes(row_scales[0], 2 * k), pick_row_bytes(row_scales[1], 2 * k)};
                const I16x16 scale_hi[2] = {pick_row_bytes(row_scales[0], 2 * k + 1), pick_row_bytes(row_scales[1], 2 * k + 1)};
                for (int piece = 0; piece < 4; ++piece) {
                    I8x32 x_lo[T], x_hi[T];
                    for (int t = 0; t < T; ++t) {
                        x_lo[t] = broadcast8(x[t] + 64 * k + 8 * piece);
                        x_hi[t] = broadcast8(x[t] + 64 * k + 32 + 8 * piece);
                    }
                    for (int h = 0; h < 2; ++h) {
                        const I8x32 bytes = load_bytes(qs + 64 * (4 * k + piece) + 32 * h);
                        const I8x32 lo = and_bytes(bytes, 0x0f), hi = shr_and(bytes, 4, 0x0f);
                        for (int t = 0; t < T; ++t) {
                            sum[t][h] = add32(sum[t][h], madd16(mul_u8s8(lo, x_lo[t]), scale_lo[h]));
                            sum[t][h] = add32(sum[t][h], madd16(mul_u8s8(hi, x_hi[t]), scale_hi[h]));
                        }
                    }
                }
            }
            for (int t = 0; t < T; ++t) {
                const F32x8 dx = splat_f(a[t].d[b]);
                const I32x8 rows = permute32(hadd32(sum[t][0], sum[t][1]), kHaddToLaneOrder);
                acc[t] = fma_f(to_f32(rows), mul_f(load_f16(chunk), dx), acc[t]);
                mins[t] = fma_f(to_f32(hsum8x8(m[t])), mul_f(load_f16(chunk + 16), dx), mins[t]);
            }
        }
        for (int t = 0; t < T; ++t) {
            store_group(outs[t] + 8 * g, add_f(acc[t], mul_f(mins[t], splat_f(-1.0f))));
        }
    }
}

#if defined(RILL_LANES_AVX512)
// The 512-bit kernels hold row r in dword pair (2r, 2r+1), one row per 64-bit lane: the pairs added
// and the eight totals put in kInterleaveLanes order [0 2 4 6 1 3 5 7], where the scales lie.
static inline __m256i row_pairs_in_lane_order(__m512i v) {
    const __m512i pair_sums = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
    return _mm512_castsi512_si256(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0), pair_sums));
}
#include "gemv_q4_k_avx512.inl"
#define RILL_Q4_K_GROUPS dot_groups_q4_k_512
#else
#define RILL_Q4_K_GROUPS dot_groups_q4_k_tokens
#endif

static void dot_groups_q4_k(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* act, float* out) {
    RILL_Q4_K_GROUPS<1>(groups, n_groups, n, &act, &out);
}

static void dot_groups_q4_k_quad(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    RILL_Q4_K_GROUPS<4>(groups, n_groups, n, acts, outs);
}
#undef RILL_Q4_K_GROUPS

// Q6_K: per super-block, eight rows' d (lane order), then ql and qh in 8-byte pieces of the eight rows
// side by side and the sub-block scales two a row at a time (quant/interleave.h). A 32-byte load is
// four rows' same eight bytes, so one broadcast activation piece serves the four rows and one word
// dot product applies their sub-block scales; the scales meet the activation sums (the +32 taken
// back off) for all eight rows in eight word dot products. The integers summed are q6_k_sums' (the
// row kernel's), exact in int32, so every path gives the same bits. T tokens at once share the
// unpacking, each token's arithmetic the same as alone.
template <int T>
static void dot_groups_q6_k_tokens(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    Act256 a[T];
    for (int t = 0; t < T; ++t) a[t] = act256(acts[t], n);
    const size_t nb = n / 256;
    static constexpr int32_t lane_rows[8] = {kInterleaveLanes[0], kInterleaveLanes[1], kInterleaveLanes[2], kInterleaveLanes[3],
                                             kInterleaveLanes[4], kInterleaveLanes[5], kInterleaveLanes[6], kInterleaveLanes[7]};
    for (size_t g = 0; g < n_groups; ++g) {
        const uint8_t* base = groups + g * nb * 1680;
        F32x8 acc[T], offsets[T];
        for (int t = 0; t < T; ++t) acc[t] = offsets[t] = zero_f();
        for (size_t b = 0; b < nb; ++b) {
            const uint8_t* chunk = base + b * 1680;
            const uint8_t* ql = chunk + 16;
            const uint8_t* qh = ql + 1024;
            const int8_t* sc = reinterpret_cast<const int8_t*>(ql + 1536);
            const int8_t* x[T];
            const int16_t* sums[T];
            I32x8 offset[T], sum[T][2];
            for (int t = 0; t < T; ++t) {
                x[t] = a[t].q + 256 * b;
                sums[t] = a[t].sums + 16 * b;
                offset[t] = sum[t][0] = sum[t][1] = zero32();
            }
            // Rows in order: words 2r and 2r+1 of pair p are row r's scales 2p and 2p+1.
            for (int p = 0; p < 8; ++p) {
                const I16x16 pair = widen_i8x16(sc + 16 * p);
                for (int t = 0; t < T; ++t) offset[t] = add32(offset[t], madd16(pair, splat16_pair(sums[t][2 * p], sums[t][2 * p + 1])));
            }
            for (int half = 0; half < 2; ++half) {
                for (int j = 0; j < 4; ++j) {
                    prefetch_ahead_part<1680, 8>(chunk, 4 * half + j);
                    // Weights 128 half + 32 i + 8 j .. +7 come from piece j of ql's low (i even) or
                    // high (i odd) 32 bytes of this half, nibble i / 2, and of qh, bit pair i.
                    I8x32 xs[T][4];
                    for (int t = 0; t < T; ++t)
                        for (int i = 0; i < 4; ++i) xs[t][i] = broadcast8(x[t] + 128 * half + 32 * i + 8 * j);
                    for (int h = 0; h < 2; ++h) {
                        const I8x32 l0 = load_bytes(ql + 64 * (8 * half + j) + 32 * h), l1 = load_bytes(ql + 64 * (8 * half + 4 + j) + 32 * h);
                        const I8x32 high = load_bytes(qh + 64 * (4 * half + j) + 32 * h);
                        const I8x32 u[4] = {or_bytes(and_bytes(l0, 0x0f), shl_and(high, 4, 0x30)),
                                            or_bytes(and_bytes(l1, 0x0f), shl_and(high, 2, 0x30)),
                                            or_bytes(shr_and(l0, 4, 0x0f), and_bytes(high, 0x30)),
                                            or_bytes(shr_and(l1, 4, 0x0f), shr_and(high, 2, 0x30))};
                        for (int i = 0; i < 4; ++i) {
                            const int sub = 8 * half + 2 * i + j / 2;
                            const I16x16 scale = widen_spread4(sc + 16 * (sub / 2) + 8 * h, sub % 2);
                            for (int t = 0; t < T; ++t) sum[t][h] = add32(sum[t][h], madd16(mul_u8s8(u[i], xs[t][i]), scale));
                        }
                    }
                }
            }
            for (int t = 0; t < T; ++t) {
                const F32x8 scale = mul_f(load_f16(chunk), splat_f(a[t].d[b]));
                acc[t] = fma_f(to_f32(permute32(hadd32(sum[t][0], sum[t][1]), kHaddToLaneOrder)), scale, acc[t]);
                offsets[t] = fma_f(to_f32(permute32(offset[t], lane_rows)), mul_f(scale, splat_f(32.0f)), offsets[t]);
            }
        }
        for (int t = 0; t < T; ++t) {
            store_group(outs[t] + 8 * g, add_f(acc[t], mul_f(offsets[t], splat_f(-1.0f))));
        }
    }
}

#if defined(RILL_LANES_AVX512)
#include "gemv_q6_k_avx512.inl"
#define RILL_Q6_K_GROUPS dot_groups_q6_k_512
#else
#define RILL_Q6_K_GROUPS dot_groups_q6_k_tokens
#endif

static void dot_groups_q6_k(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* act, float* out) {
    RILL_Q6_K_GROUPS<1>(groups, n_groups, n, &act, &out);
}

static void dot_groups_q6_k_quad(const uint8_t* groups, size_t n_groups, size_t n, const uint8_t* const* acts, float* const* outs) {
    RILL_Q6_K_GROUPS<4>(groups, n_groups, n, acts, outs);
}
#undef RILL_Q6_K_GROUPS
