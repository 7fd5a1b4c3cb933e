#include "interleave.h"

#include <cstring>
#include <vector>

namespace rill {
namespace {

// Where a block's half-float scales sit, gathered eight at a time: at the start for most types
// (Q4_K: d then dmin), at the end for Q6_K. The rest of the block is its payload, kept in order.
struct HalfFields {
    size_t count;
    size_t first_offset;  // offset of the first half; more follow it contiguously
};
HalfFields half_fields(TensorType type) {
    if (type == TensorType::Q4_K) return {2, 0};
    if (type == TensorType::Q6_K) return {1, 208};
    return {1, 0};
}
// Copies a block's payload: every byte except its half fields.
void copy_payload(uint8_t* out, const uint8_t* block, size_t block_bytes, HalfFields f) {
    std::memcpy(out, block, f.first_offset);
    const size_t after = f.first_offset + 2 * f.count;
    std::memcpy(out + f.first_offset, block + after, block_bytes - after);
}
void restore_payload(uint8_t* block, const uint8_t* payload, size_t block_bytes, HalfFields f) {
    std::memcpy(block, payload, f.first_offset);
    const size_t after = f.first_offset + 2 * f.count;
    std::memcpy(block + after, payload + f.first_offset, block_bytes - after);
}

}  // namespace

bool can_interleave(TensorType type) {
    return type == TensorType::Q4_0 || type == TensorType::Q8_0 || type == TensorType::Q4_K || type == TensorType::Q6_K;
}

void interleave_rows(TensorType type, uint8_t* data, size_t n_rows, size_t row_bytes) {
    const size_t block = traits(type).bytes_per_block, n_blocks = row_bytes / block;
    const HalfFields fields = half_fields(type);
    const size_t header = 2 * fields.count, payload = block - header;
    std::vector<uint8_t> group(kInterleave * row_bytes);
    for (size_t g = 0; g < n_rows / kInterleave; ++g) {
        uint8_t* base = data + g * kInterleave * row_bytes;
        std::memcpy(group.data(), base, group.size());
        for (size_t b = 0; b < n_blocks; ++b) {
            uint8_t* out = base + b * kInterleave * block;
            for (size_t h = 0; h < fields.count; ++h)
                for (size_t lane = 0; lane < kInterleave; ++lane)
                    std::memcpy(out + 2 * (h * kInterleave + lane),
                                group.data() + size_t(kInterleaveLanes[lane]) * row_bytes + b * block + fields.first_offset + 2 * h, 2);
            for (size_t r = 0; r < kInterleave; ++r)
                copy_payload(out + header * kInterleave + r * payload, group.data() + r * row_bytes + b * block, block, fields);
        }
    }
}

void plain_row(TensorType type, const uint8_t* data, size_t r, size_t row_bytes, uint8_t* out) {
    const size_t block = traits(type).bytes_per_block, n_blocks = row_bytes / block;
    const HalfFields fields = half_fields(type);
    const size_t header = 2 * fields.count, payload = block - header;
    const size_t g = r / kInterleave, in_group = r % kInterleave;
    size_t lane = 0;
    while (size_t(kInterleaveLanes[lane]) != in_group) ++lane;
    const uint8_t* base = data + g * kInterleave * row_bytes;
    for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t* in = base + b * kInterleave * block;
        for (size_t h = 0; h < fields.count; ++h)
            std::memcpy(out + b * block + fields.first_offset + 2 * h, in + 2 * (h * kInterleave + lane), 2);
        restore_payload(out + b * block, in + header * kInterleave + in_group * payload, block, fields);
    }
}

}  // namespace rill
