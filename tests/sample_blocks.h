// Rows of any readable type for kernel and prefill tests: quantized normal floats where rill can
// quantize the type, else blocks drawn from tests/data/iq (random blocks ggml dequantized, see
// scripts/ggml_reference.sh), so types rill only reads are tested on every path as well.
#pragma once
#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "numeric.h"
#include "quant/quantize.h"
#include "shared_data.h"

namespace rill::test {

inline const std::string& sample_blocks(TensorType type) {
    static std::map<TensorType, std::string> loaded;
    auto it = loaded.find(type);
    if (it == loaded.end()) {
        std::string name(traits(type).name);
        for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
        it = loaded.emplace(type, read_text(std::string(RILL_TEST_DATA_DIR) + "/iq/" + name + ".blocks")).first;
    }
    return it->second;
}

// quantize_row, with a flat importance (every column alike) for the types that take no row without one.
inline void quantize_for_test(TensorType type, const float* in, uint8_t* out, size_t n) {
    const std::vector<float> flat(needs_importance(type) ? n : 0, 1.0f);
    quantize_row(type, in, out, n, flat.empty() ? nullptr : flat.data());
}

// One row of cols values: quantized from normal_floats(cols, seed), or sample blocks in an order the
// seed picks.
inline void random_row(TensorType type, size_t cols, uint32_t seed, uint8_t* out) {
    if (can_quantize(type)) return quantize_for_test(type, normal_floats(cols, seed).data(), out, cols);
    const std::string& blocks = sample_blocks(type);
    const TensorTypeTraits& t = traits(type);
    const size_t n_samples = blocks.size() / t.bytes_per_block;
    for (size_t b = 0; b < cols / t.block_size; ++b)
        std::memcpy(out + b * t.bytes_per_block, blocks.data() + (size_t(seed) * 5 + b * 3) % n_samples * t.bytes_per_block,
                    t.bytes_per_block);
}

}  // namespace rill::test
