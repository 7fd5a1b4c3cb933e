// MXFP4 quantizer: ggml's quantize_row_mxfp4_ref. The exponent makes the block's largest magnitude
// land in [4, 8) of the doubled levels (up to 12 is representable), and each value takes the level
// nearest it under that scale, the first such level on a tie.
#include <cmath>
#include <cstring>

#include "block_layouts.h"
#include "quantize.h"

namespace rill {
namespace {

uint8_t nearest_mxfp4(float x, float d) {
    int best = 0;
    float best_err = std::fabs(float(kMXFP4Levels[0]) * d - x);
    for (int i = 1; i < 16; ++i) {
        const float err = std::fabs(float(kMXFP4Levels[i]) * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return uint8_t(best);
}

}  // namespace

void quantize_mxfp4(const float* in, uint8_t* blocks, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, in += 32) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(in[j]));
        // floor(log2(amax)) - 2 + 127, kept inside the byte where ggml's cast would not be defined.
        const float e = amax > 0.0f ? std::floor(std::log2(amax)) - 2.0f + 127.0f : 0.0f;
        BlockMXFP4 b{};
        b.e = uint8_t(e < 0.0f ? 0.0f : e > 255.0f ? 255.0f : e);
        const float d = e8m0_half(b.e);
        for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(nearest_mxfp4(in[j], d) | (nearest_mxfp4(in[j + 16], d) << 4));
        std::memcpy(blocks + i * sizeof(BlockMXFP4), &b, sizeof b);
    }
}

}  // namespace rill
