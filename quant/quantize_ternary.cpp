// TQ1_0 and TQ2_0 (BitNet-style ternary weights): one half scale per 256 values, the block's largest
// magnitude, and each value rounded to -1, 0 or +1 of it, as ggml's reference quantizers do (the
// same float expressions, so the bytes match llama-quantize's; an importance matrix changes nothing).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "block_layouts.h"
#include "fp16.h"
#include "quantize.h"

namespace rill {
namespace {

// The block's scale, stored as a half, and its inverse taken from the float before rounding.
void ternary_scale(const float* x, uint16_t* stored, float* inverse) {
    float amax = 0.0f;
    for (int j = 0; j < kSuperBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    *stored = f32_to_f16(amax);
    *inverse = amax != 0.0f ? 1.0f / amax : 0.0f;
}

// -1, 0, +1 as 0, 1, 2 (lroundf rounds halves away from zero).
int trit_of(float x, float inverse) { return int(std::lround(x * inverse)) + 1; }

// Trits t0..t(k-1), t0 most significant, as the byte whose top base-3 digit each one becomes in turn:
// v * 256 / 3^5, rounded up.
uint8_t pack_trits(const int* t, int k) {
    unsigned v = 0;
    for (int i = 0; i < k; ++i) v = v * 3 + unsigned(t[i]);
    for (int i = k; i < 5; ++i) v *= 3;
    return uint8_t((v * 256 + 242) / 243);
}

}  // namespace

void quantize_tq1_0(const float* in, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock) {
        BlockTQ1_0 b;
        float inverse;
        ternary_scale(in, &b.d, &inverse);
        int t[5];
        for (int m = 0; m < 32; ++m) {  // values n·32 + m
            for (int n = 0; n < 5; ++n) t[n] = trit_of(in[32 * n + m], inverse);
            b.qs[m] = pack_trits(t, 5);
        }
        for (int m = 0; m < 16; ++m) {  // values 160 + n·16 + m
            for (int n = 0; n < 5; ++n) t[n] = trit_of(in[160 + 16 * n + m], inverse);
            b.qs[32 + m] = pack_trits(t, 5);
        }
        for (int j = 0; j < 4; ++j) {  // values 240 + n·4 + j
            for (int n = 0; n < 4; ++n) t[n] = trit_of(in[240 + 4 * n + j], inverse);
            b.qh[j] = pack_trits(t, 4);
        }
        std::memcpy(blocks + i * sizeof(b), &b, sizeof(b));
    }
}

void quantize_tq2_0(const float* in, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += kSuperBlock) {
        BlockTQ2_0 b;
        float inverse;
        ternary_scale(in, &b.d, &inverse);
        for (int half = 0; half < 2; ++half)
            for (int m = 0; m < 32; ++m) {  // byte m of each half: values m, 32 + m, 64 + m, 96 + m
                unsigned q = 0;
                for (int n = 0; n < 4; ++n) q |= unsigned(trit_of(in[128 * half + 32 * n + m], inverse) & 3) << (2 * n);
                b.qs[32 * half + m] = uint8_t(q);
            }
        std::memcpy(blocks + i * sizeof(b), &b, sizeof(b));
    }
}

}  // namespace rill
