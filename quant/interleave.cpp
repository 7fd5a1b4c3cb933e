#include "interleave.h"

#include <cstring>
#include <vector>

namespace rill {
namespace {

// Where a block's scales sit, gathered eight at a time: at the start for most types (Q4_K: d then
// dmin), at the end for Q6_K. Halves, except MXFP4's one exponent byte. The rest of the block is its
// payload, kept in order except for the types whose kernels work across rows (below).
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

// Q4_K's and Q6_K's eight payloads are laid out for kernels that work across rows
// (simd/gemv_groups_k.inl, gemv_q4_k_avx512.inl, gemv_q6_k_avx512.inl): the quant bytes in 8-byte pieces, piece c of
// rows 0..7 side by side, so one 64-byte load holds the same weights of every row and one broadcast
// activation piece and one scale step serve eight rows. Q4_K: the rows' 12 packed scale bytes in row
// order, then its 128 quant bytes in pieces. Q6_K: ql's 128 bytes in pieces, qh's 64 in pieces, then
// the 16 sub-block scales with two sub-blocks of every row side by side (byte 16p + 2r + e holds row
// r's scale 2p + e), so a pair of sub-blocks' scales widened to words meets a pair of activation sums.
constexpr size_t kPiece = 8;
struct CrossRows {
    size_t scale_bytes;  // per row
    size_t quant_bytes;  // per row, in pieces
    bool scales_first;
};
CrossRows cross_rows(TensorType type) { return type == TensorType::Q4_K ? CrossRows{12, 128, true} : CrossRows{16, 192, false}; }
bool works_across_rows(TensorType type) { return type == TensorType::Q4_K || type == TensorType::Q6_K; }

// Where byte i of row r's payload goes in the group's payload.
size_t across_rows(CrossRows f, size_t r, size_t i) {
    const size_t quants_at = f.scales_first ? kInterleave * f.scale_bytes : 0;
    const size_t scales_at = f.scales_first ? 0 : kInterleave * f.quant_bytes;
    const bool is_scale = f.scales_first ? i < f.scale_bytes : i >= f.quant_bytes;
    if (!is_scale) {
        const size_t q = f.scales_first ? i - f.scale_bytes : i;
        return quants_at + kInterleave * kPiece * (q / kPiece) + kPiece * r + q % kPiece;
    }
    const size_t s = f.scales_first ? i : i - f.quant_bytes;
    if (f.scales_first) return scales_at + f.scale_bytes * r + s;
    return scales_at + 2 * kInterleave * (s / 2) + 2 * r + s % 2;
}
// `rows` holds the eight payloads one after another; `out` gets the layout above.
void spread_across_rows(TensorType type, const uint8_t* rows, uint8_t* out) {
    const CrossRows f = cross_rows(type);
    const size_t payload = f.scale_bytes + f.quant_bytes;
    for (size_t r = 0; r < kInterleave; ++r)
        for (size_t i = 0; i < payload; ++i) out[across_rows(f, r, i)] = rows[r * payload + i];
}
// Row r's payload back from the layout above: the quants a piece at a time, the scales a byte at a time.
void gather_across_rows(TensorType type, const uint8_t* group, size_t r, uint8_t* row) {
    const CrossRows f = cross_rows(type);
    const size_t quants = f.scales_first ? f.scale_bytes : 0, scales = f.scales_first ? 0 : f.quant_bytes;
    for (size_t i = 0; i < f.quant_bytes; i += kPiece) std::memcpy(row + quants + i, group + across_rows(f, r, quants + i), kPiece);
    for (size_t i = 0; i < f.scale_bytes; ++i) row[scales + i] = group[across_rows(f, r, scales + i)];
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
            if (works_across_rows(type))
                spread_across_rows(type, payloads.data(), out + header * kInterleave);
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
    uint8_t gathered[256];  // a Q4_K or Q6_K payload (140 or 208 bytes)
    for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t* in = base + b * kInterleave * block;
        for (size_t h = 0; h < fields.count; ++h)
            std::memcpy(out + b * block + fields.first_offset + fields.size * h, in + fields.size * (h * kInterleave + lane), fields.size);
        const uint8_t* row_payload = in + header * kInterleave + in_group * payload;
        if (works_across_rows(type)) {
            gather_across_rows(type, in + header * kInterleave, in_group, gathered);
            row_payload = gathered;
        }
        restore_payload(out + b * block, row_payload, block, fields);
    }
}

}  // namespace rill
