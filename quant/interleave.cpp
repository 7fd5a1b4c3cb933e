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

// Q4_K's eight payloads (12 scale bytes, 128 quant bytes each) are laid out as all eight rows'
// scales, then the quants in 8-byte pieces, piece c of rows 0..7 side by side: one 64-byte load
// then holds the same sixteen weights of every row, so one broadcast activation and one scale step
// serve eight rows (simd/gemv_q4_k_avx512.inl). Offset of row r's piece c within the group payload:
constexpr size_t kQ4KScaleBytes = 12, kQ4KPiece = 8;
size_t q4_k_piece(size_t r, size_t c) { return kInterleave * kQ4KScaleBytes + kInterleave * kQ4KPiece * c + kQ4KPiece * r; }
// `rows` holds the eight payloads one after another; `out` gets the layout above.
void spread_q4_k(const uint8_t* rows, uint8_t* out) {
    for (size_t r = 0; r < kInterleave; ++r) {
        const uint8_t* row = rows + r * (kQ4KScaleBytes + 128);
        std::memcpy(out + r * kQ4KScaleBytes, row, kQ4KScaleBytes);
        for (size_t c = 0; c < 128 / kQ4KPiece; ++c) std::memcpy(out + q4_k_piece(r, c), row + kQ4KScaleBytes + kQ4KPiece * c, kQ4KPiece);
    }
}
// Row r's payload back from the layout above.
void gather_q4_k(const uint8_t* group, size_t r, uint8_t* row) {
    std::memcpy(row, group + r * kQ4KScaleBytes, kQ4KScaleBytes);
    for (size_t c = 0; c < 128 / kQ4KPiece; ++c) std::memcpy(row + kQ4KScaleBytes + kQ4KPiece * c, group + q4_k_piece(r, c), kQ4KPiece);
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
    std::vector<uint8_t> group(kInterleave * row_bytes), payloads(kInterleave * payload);
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
                copy_payload(payloads.data() + r * payload, group.data() + r * row_bytes + b * block, block, fields);
            if (type == TensorType::Q4_K)
                spread_q4_k(payloads.data(), out + header * kInterleave);
            else
                std::memcpy(out + header * kInterleave, payloads.data(), payloads.size());
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
    std::vector<uint8_t> gathered(payload);
    for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t* in = base + b * kInterleave * block;
        for (size_t h = 0; h < fields.count; ++h)
            std::memcpy(out + b * block + fields.first_offset + fields.size * h, in + fields.size * (h * kInterleave + lane), fields.size);
        const uint8_t* row_payload = in + header * kInterleave + in_group * payload;
        if (type == TensorType::Q4_K) {
            gather_q4_k(in + header * kInterleave, in_group, gathered.data());
            row_payload = gathered.data();
        }
        restore_payload(out + b * block, row_payload, block, fields);
    }
}

}  // namespace rill
