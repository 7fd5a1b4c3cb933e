// One token through one value head's gated delta rule (the recurrent scan of a Gated DeltaNet layer),
// for each kernel path (included by gemv_body.inl with the path's lanes). M is state_size rows of
// state_size, row i for key index i, so every product runs along a row and sums across rows in
// vector lanes: no horizontal sums. Per tile of 64 value indices, two passes over the rows:
//   decay each row and accumulate y = Mᵀk;  δ = β·(v − y);
//   add k_i·δ to each row and accumulate o = Mᵀq (times scale).
// A value index's sums run over the key rows in order whatever the tile, so the result does not
// depend on which thread runs the head.
template <int kVectors>  // the tile's values: kVectors lanes of eight
static void delta_rule_tile(float* M, const float* q, const float* k, const float* v, float decay, float beta, float scale, size_t S,
                            size_t j0, float* o) {
    const F32x8 d = splat_f(decay);
    F32x8 acc[kVectors];
    for (auto& a : acc) a = zero_f();
    for (size_t i = 0; i < S; ++i) {
        float* row = M + i * S + j0;
        const F32x8 ki = splat_f(k[i]);
        for (int u = 0; u < kVectors; ++u) {
            const F32x8 m = mul_f(load_f32(row + 8 * u), d);
            store_f32(row + 8 * u, m);
            acc[u] = fma_f(ki, m, acc[u]);
        }
    }
    F32x8 delta[kVectors];
    const F32x8 b = splat_f(beta);
    for (int u = 0; u < kVectors; ++u) {
        delta[u] = mul_f(add_f(load_f32(v + j0 + 8 * u), mul_f(acc[u], splat_f(-1.0f))), b);
        acc[u] = zero_f();
    }
    for (size_t i = 0; i < S; ++i) {
        float* row = M + i * S + j0;
        const F32x8 ki = splat_f(k[i]), qi = splat_f(q[i]);
        for (int u = 0; u < kVectors; ++u) {
            const F32x8 m = fma_f(ki, delta[u], load_f32(row + 8 * u));
            store_f32(row + 8 * u, m);
            acc[u] = fma_f(qi, m, acc[u]);
        }
    }
    const F32x8 s = splat_f(scale);
    for (int u = 0; u < kVectors; ++u) store_f32(o + j0 + 8 * u, mul_f(acc[u], s));
}

// Tiles of 64 values (Qwen3.5's heads of 128 are two), then of 8 (the test files' 32 are four).
static void delta_rule(float* M, const float* q, const float* k, const float* v, float decay, float beta, float scale, size_t S, float* o) {
    size_t j0 = 0;
    for (; j0 + 64 <= S; j0 += 64) delta_rule_tile<8>(M, q, k, v, decay, beta, scale, S, j0, o);
    for (; j0 + 8 <= S; j0 += 8) delta_rule_tile<1>(M, q, k, v, decay, beta, scale, S, j0, o);
    if (j0 == S) return;
    // A narrower tail, one value index at a time in the same order of operations.
    for (size_t j = j0; j < S; ++j) {
        float y = 0;
        for (size_t i = 0; i < S; ++i) {
            M[i * S + j] *= decay;
            y += k[i] * M[i * S + j];
        }
        const float delta = (v[j] - y) * beta;
        float out = 0;
        for (size_t i = 0; i < S; ++i) {
            M[i * S + j] += k[i] * delta;
            out += q[i] * M[i * S + j];
        }
        o[j] = out * scale;
    }
}
