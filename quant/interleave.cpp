#include "interleave.h"

#include <cstring>
#include <vector>

namespace rill {
namespace {

// Where a block's scales sit, gathered eight at a time: at the start for most types (Q4_K: d then
// dmin), at the end for Q6_K. Halves, except MXFP4's one exponent byte. The rest of the block is its
// payload, kept in order.
struct ScaleFields {
    size_t count;
    size_t first_offset;  // offset of the first scale; more follow it contiguously
    size_t size;          // bytes per scale
    size_t bytes() const { return count * size; }
};
ScaleFields scale_fields(TensorType type) {
    if (type == TensorType::Q4_K) return {2, 0, 2};
    if (type == TensorType::Q6_K) return {1, 208, 2};
    if (type == TensorType::MXFP4) return {1, 0, 1};
    return {1, 0, 2};
}
// Copies a block's payload: every byte except its scales.
void copy_payload(uint8_t* out, const uint8_t* block, size_t block_bytes, ScaleFields f) {
    std::memcpy(out, block, f.first_offset);
    const size_t after = f.first_offset + f.bytes();
    std::memcpy(out + f.first_offset, block + after, block_bytes - after);
}
void restore_payload(uint8_t* block, const uint8_t* payload, size_t block_bytes, ScaleFields f) {
    std::memcpy(block, payload, f.first_offset);
    const size_t after = f.first_offset + f.bytes();
    std::memcpy(block + after, payload + f.first_offset, block_bytes - after);
}

}  // namespace

bool can_interleave(TensorType type) {
    return type == TensorType::Q4_0 || type == TensorType::Q8_0 || type == TensorType::Q4_K || type == TensorType::Q6_K ||
           type == TensorType::MXFP4;
}

void interleave_rows(TensorType type, uint8_t* data, size_t n_rows, size_t row_bytes) {
    const size_t block = traits(type).bytes_per_block, n_blocks = row_bytes / block;
    const ScaleFields fields = scale_fields(type);
    const size_t header = fields.bytes(), payload = block - header;
    std::vector<uint8_t> group(kInterleave * row_bytes);
    for (size_t g = 0; g < n_rows / kInterleave; ++g) {
        uint8_t* base = data + g * kInterleave * row_bytes;
        std::memcpy(group.data(), base, group.size());
        for (size_t b = 0; b < n_blocks; ++b) {
            uint8_t* out = base + b * kInterleave * block;
            for (size_t h = 0; h < fields.count; ++h)
                for (size_t lane = 0; lane < kInterleave; ++lane)
                    std::memcpy(out + fields.size * (h * kInterleave + lane),
                                group.data() + size_t(kInterleaveLanes[lane]) * row_bytes + b * block + fields.first_offset + fields.size * h,
                                fields.size);
            for (size_t r = 0; r < kInterleave; ++r)
                copy_payload(out + header * kInterleave + r * payload, group.data() + r * row_bytes + b * block, block, fields);
        }
    }
}

void plain_row(TensorType type, const uint8_t* data, size_t r, size_t row_bytes, uint8_t* out) {
    const size_t block = traits(type).bytes_per_block, n_blocks = row_bytes / block;
    const ScaleFields fields = scale_fields(type);
    const size_t header = fields.bytes(), payload = block - header;
    const size_t g = r / kInterleave, in_group = r % kInterleave;
    size_t lane = 0;
    while (size_t(kInterleaveLanes[lane]) != in_group) ++lane;
    const uint8_t* base = data + g * kInterleave * row_bytes;
    for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t* in = base + b * kInterleave * block;
        for (size_t h = 0; h < fields.count; ++h)
            std::memcpy(out + b * block + fields.first_offset + fields.size * h, in + fields.size * (h * kInterleave + lane), fields.size);
        restore_payload(out + b * block, in + header * kInterleave + in_group * payload, block, fields);
    }
}

}  // namespace rill
