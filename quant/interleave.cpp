#include "interleave.h"

#include <cstring>
#include <vector>

namespace rill {
namespace {

// Half-float fields at the start of each block (Q4_K: d then dmin), gathered eight at a time.
size_t leading_halves(TensorType type) { return type == TensorType::Q4_K ? 2 : 1; }

}  // namespace

bool can_interleave(TensorType type) {
    return type == TensorType::Q4_0 || type == TensorType::Q8_0 || type == TensorType::Q4_K;
}

void interleave_rows(TensorType type, uint8_t* data, size_t n_rows, size_t row_bytes) {
    const size_t block = traits(type).bytes_per_block, n_blocks = row_bytes / block;
    const size_t halves = leading_halves(type), header = 2 * halves, payload = block - header;
    std::vector<uint8_t> group(kInterleave * row_bytes);
    for (size_t g = 0; g < n_rows / kInterleave; ++g) {
        uint8_t* base = data + g * kInterleave * row_bytes;
        std::memcpy(group.data(), base, group.size());
        for (size_t b = 0; b < n_blocks; ++b) {
            uint8_t* out = base + b * kInterleave * block;
            for (size_t h = 0; h < halves; ++h)
                for (size_t lane = 0; lane < kInterleave; ++lane)
                    std::memcpy(out + 2 * (h * kInterleave + lane),
                                group.data() + size_t(kInterleaveLanes[lane]) * row_bytes + b * block + 2 * h, 2);
            for (size_t r = 0; r < kInterleave; ++r)
                std::memcpy(out + header * kInterleave + r * payload, group.data() + r * row_bytes + b * block + header, payload);
        }
    }
}

void plain_row(TensorType type, const uint8_t* data, size_t r, size_t row_bytes, uint8_t* out) {
    const size_t block = traits(type).bytes_per_block, n_blocks = row_bytes / block;
    const size_t halves = leading_halves(type), header = 2 * halves, payload = block - header;
    const size_t g = r / kInterleave, in_group = r % kInterleave;
    size_t lane = 0;
    while (size_t(kInterleaveLanes[lane]) != in_group) ++lane;
    const uint8_t* base = data + g * kInterleave * row_bytes;
    for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t* in = base + b * kInterleave * block;
        for (size_t h = 0; h < halves; ++h) std::memcpy(out + b * block + 2 * h, in + 2 * (h * kInterleave + lane), 2);
        std::memcpy(out + b * block + header, in + header * kInterleave + in_group * payload, payload);
    }
}

}  // namespace rill
