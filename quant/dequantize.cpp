// Scalar reference dequantizers. Each reproduces ggml's dequantize_row_* bit for bit:
// the same products in the same order, with floating-point contraction off (see CMakeLists.txt).
#include <cstring>

#include "block_layouts.h"
#include "dequantize_iq.h"
#include "fp16.h"
#include "tensor_type.h"

namespace rill {
namespace {

template <typename Block>
Block load_block(const uint8_t* blocks, size_t i) {
    Block b;  // copied out: tensor data carries no alignment promise for the struct
    std::memcpy(&b, blocks + i * sizeof(Block), sizeof(Block));
    return b;
}

void dequantize_f32(const uint8_t* src, float* out, size_t n) { std::memcpy(out, src, n * sizeof(float)); }

void dequantize_f16(const uint8_t* src, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = f16_to_f32(h);
    }
}

void dequantize_bf16(const uint8_t* src, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = bf16_to_f32(h);
    }
}

void dequantize_q4_0(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, out += 32) {
        const auto b = load_block<BlockQ4_0>(src, i);
        const float d = f16_to_f32(b.d);
        for (int j = 0; j < 16; ++j) {
            out[j] = float((b.qs[j] & 0x0f) - 8) * d;
            out[j + 16] = float((b.qs[j] >> 4) - 8) * d;
        }
    }
}

void dequantize_q4_1(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, out += 32) {
        const auto b = load_block<BlockQ4_1>(src, i);
        const float d = f16_to_f32(b.d), m = f16_to_f32(b.m);
        for (int j = 0; j < 16; ++j) {
            out[j] = float(b.qs[j] & 0x0f) * d + m;
            out[j + 16] = float(b.qs[j] >> 4) * d + m;
        }
    }
}

// The fifth bits of Q5_0/Q5_1: bit j of qh belongs to element j, bit j+16 to element j+16.
uint32_t load_qh(const uint8_t qh[4]) {
    uint32_t bits;
    std::memcpy(&bits, qh, 4);
    return bits;  // little-endian hosts only, as GGUF itself
}

void dequantize_q5_0(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, out += 32) {
        const auto b = load_block<BlockQ5_0>(src, i);
        const float d = f16_to_f32(b.d);
        const uint32_t qh = load_qh(b.qh);
        for (int j = 0; j < 16; ++j) {
            const int lo = (b.qs[j] & 0x0f) | int(((qh >> j) & 1u) << 4);
            const int hi = (b.qs[j] >> 4) | int(((qh >> (j + 16)) & 1u) << 4);
            out[j] = float(lo - 16) * d;
            out[j + 16] = float(hi - 16) * d;
        }
    }
}

void dequantize_q5_1(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, out += 32) {
        const auto b = load_block<BlockQ5_1>(src, i);
        const float d = f16_to_f32(b.d), m = f16_to_f32(b.m);
        const uint32_t qh = load_qh(b.qh);
        for (int j = 0; j < 16; ++j) {
            const int lo = (b.qs[j] & 0x0f) | int(((qh >> j) & 1u) << 4);
            const int hi = (b.qs[j] >> 4) | int(((qh >> (j + 16)) & 1u) << 4);
            out[j] = float(lo) * d + m;
            out[j + 16] = float(hi) * d + m;
        }
    }
}

void dequantize_q8_0(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, out += 32) {
        const auto b = load_block<BlockQ8_0>(src, i);
        const float d = f16_to_f32(b.d);
        for (int j = 0; j < 32; ++j) out[j] = float(b.qs[j]) * d;
    }
}

void dequantize_iq4_nl(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, out += 32) {
        const auto b = load_block<BlockIQ4_NL>(src, i);
        const float d = f16_to_f32(b.d);
        for (int j = 0; j < 16; ++j) {
            out[j] = d * float(kIQ4Levels[b.qs[j] & 0x0f]);
            out[j + 16] = d * float(kIQ4Levels[b.qs[j] >> 4]);
        }
    }
}

void dequantize_mxfp4(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i, out += 32) {
        const auto b = load_block<BlockMXFP4>(src, i);
        const float d = e8m0_half(b.e);
        for (int j = 0; j < 16; ++j) {
            out[j] = float(kMXFP4Levels[b.qs[j] & 0x0f]) * d;
            out[j + 16] = float(kMXFP4Levels[b.qs[j] >> 4]) * d;
        }
    }
}

void dequantize_q2_k(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockQ2_K>(src, i);
        const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
        const uint8_t* q = b.qs;
        int sub = 0;
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part, ++sub) {
                    const float scale = d * float(b.scales[sub] & 0x0f);
                    const float min = dmin * float(b.scales[sub] >> 4);
                    for (int l = 0; l < 16; ++l) *out++ = scale * float((q[l + 16 * part] >> shift) & 3) - min;
                }
            }
        }
    }
}

// Unpacks Q3_K's sixteen 6-bit scales (low 4 bits in bytes 0-7, high 2 bits in bytes 8-11).
void unpack_q3_k_scales(const uint8_t packed[12], int8_t scales[16]) {
    for (int j = 0; j < 16; ++j) {
        const int low = j < 8 ? packed[j] & 0x0f : packed[j - 8] >> 4;
        const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
        scales[j] = int8_t((low | (high << 4)) - 32);
    }
}

void dequantize_q3_k(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockQ3_K>(src, i);
        const float d = f16_to_f32(b.d);
        int8_t scales[16];
        unpack_q3_k_scales(b.scales, scales);
        const uint8_t* q = b.qs;
        uint8_t mask = 1;
        int sub = 0;
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, mask = uint8_t(mask << 1)) {
                for (int part = 0; part < 2; ++part, ++sub) {
                    const float scale = d * float(scales[sub]);
                    for (int l = 0; l < 16; ++l) {
                        const int k = l + 16 * part;
                        const int value = ((q[k] >> shift) & 3) - ((b.hmask[k] & mask) ? 0 : 4);
                        *out++ = scale * float(value);
                    }
                }
            }
        }
    }
}

void dequantize_q4_k(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockQ4_K>(src, i);
        const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
        const uint8_t* q = b.qs;
        for (int sub = 0; sub < 8; sub += 2, q += 32) {
            int sc, m;
            k4_scale_min(sub, b.scales, &sc, &m);
            const float d1 = d * float(sc), m1 = dmin * float(m);
            k4_scale_min(sub + 1, b.scales, &sc, &m);
            const float d2 = d * float(sc), m2 = dmin * float(m);
            for (int l = 0; l < 32; ++l) *out++ = d1 * float(q[l] & 0x0f) - m1;
            for (int l = 0; l < 32; ++l) *out++ = d2 * float(q[l] >> 4) - m2;
        }
    }
}

void dequantize_q5_k(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockQ5_K>(src, i);
        const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
        const uint8_t* q = b.qs;
        for (int sub = 0; sub < 8; sub += 2, q += 32) {
            int sc, m;
            k4_scale_min(sub, b.scales, &sc, &m);
            const float d1 = d * float(sc), m1 = dmin * float(m);
            k4_scale_min(sub + 1, b.scales, &sc, &m);
            const float d2 = d * float(sc), m2 = dmin * float(m);
            const uint8_t bit_lo = uint8_t(1u << sub), bit_hi = uint8_t(2u << sub);
            for (int l = 0; l < 32; ++l) *out++ = d1 * float((q[l] & 0x0f) + ((b.qh[l] & bit_lo) ? 16 : 0)) - m1;
            for (int l = 0; l < 32; ++l) *out++ = d2 * float((q[l] >> 4) + ((b.qh[l] & bit_hi) ? 16 : 0)) - m2;
        }
    }
}

void dequantize_q6_k(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockQ6_K>(src, i);
        const float d = f16_to_f32(b.d);
        const uint8_t* ql = b.ql;
        const uint8_t* qh = b.qh;
        const int8_t* sc = b.scales;
        for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, out += 128) {
            for (int l = 0; l < 32; ++l) {
                const int s = l / 16;
                const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                out[l] = d * float(sc[s]) * float(q1);
                out[l + 32] = d * float(sc[s + 2]) * float(q2);
                out[l + 64] = d * float(sc[s + 4]) * float(q3);
                out[l + 96] = d * float(sc[s + 6]) * float(q4);
            }
        }
    }
}

void dequantize_iq4_xs(const uint8_t* src, float* out, size_t n_blocks) {
    for (size_t i = 0; i < n_blocks; ++i) {
        const auto b = load_block<BlockIQ4_XS>(src, i);
        const float d = f16_to_f32(b.d);
        const uint8_t* q = b.qs;
        for (int sub = 0; sub < 8; ++sub, q += 16, out += 32) {
            const int low = (b.scales_l[sub / 2] >> (4 * (sub % 2))) & 0x0f;
            const int high = (b.scales_h >> (2 * sub)) & 3;
            const float scale = d * float((low | (high << 4)) - 32);
            for (int j = 0; j < 16; ++j) {
                out[j] = scale * float(kIQ4Levels[q[j] & 0x0f]);
                out[j + 16] = scale * float(kIQ4Levels[q[j] >> 4]);
            }
        }
    }
}

constexpr TensorTypeTraits kTypes[] = {
    {TensorType::F32, "F32", 1, 4, dequantize_f32},
    {TensorType::F16, "F16", 1, 2, dequantize_f16},
    {TensorType::BF16, "BF16", 1, 2, dequantize_bf16},
    {TensorType::Q4_0, "Q4_0", 32, sizeof(BlockQ4_0), dequantize_q4_0},
    {TensorType::Q4_1, "Q4_1", 32, sizeof(BlockQ4_1), dequantize_q4_1},
    {TensorType::Q5_0, "Q5_0", 32, sizeof(BlockQ5_0), dequantize_q5_0},
    {TensorType::Q5_1, "Q5_1", 32, sizeof(BlockQ5_1), dequantize_q5_1},
    {TensorType::Q8_0, "Q8_0", 32, sizeof(BlockQ8_0), dequantize_q8_0},
    {TensorType::Q2_K, "Q2_K", kSuperBlock, sizeof(BlockQ2_K), dequantize_q2_k},
    {TensorType::Q3_K, "Q3_K", kSuperBlock, sizeof(BlockQ3_K), dequantize_q3_k},
    {TensorType::Q4_K, "Q4_K", kSuperBlock, sizeof(BlockQ4_K), dequantize_q4_k},
    {TensorType::Q5_K, "Q5_K", kSuperBlock, sizeof(BlockQ5_K), dequantize_q5_k},
    {TensorType::Q6_K, "Q6_K", kSuperBlock, sizeof(BlockQ6_K), dequantize_q6_k},
    {TensorType::IQ4_NL, "IQ4_NL", 32, sizeof(BlockIQ4_NL), dequantize_iq4_nl},
    {TensorType::IQ4_XS, "IQ4_XS", kSuperBlock, sizeof(BlockIQ4_XS), dequantize_iq4_xs},
    {TensorType::MXFP4, "MXFP4", 32, sizeof(BlockMXFP4), dequantize_mxfp4},
    {TensorType::IQ2_XXS, "IQ2_XXS", kSuperBlock, sizeof(BlockIQ2_XXS), dequantize_iq2_xxs},
    {TensorType::IQ2_XS, "IQ2_XS", kSuperBlock, sizeof(BlockIQ2_XS), dequantize_iq2_xs},
    {TensorType::IQ2_S, "IQ2_S", kSuperBlock, sizeof(BlockIQ2_S), dequantize_iq2_s},
    {TensorType::IQ3_XXS, "IQ3_XXS", kSuperBlock, sizeof(BlockIQ3_XXS), dequantize_iq3_xxs},
    {TensorType::IQ3_S, "IQ3_S", kSuperBlock, sizeof(BlockIQ3_S), dequantize_iq3_s},
    {TensorType::IQ1_S, "IQ1_S", kSuperBlock, sizeof(BlockIQ1_S), dequantize_iq1_s},
    {TensorType::IQ1_M, "IQ1_M", kSuperBlock, sizeof(BlockIQ1_M), dequantize_iq1_m},
    {TensorType::TQ1_0, "TQ1_0", kSuperBlock, sizeof(BlockTQ1_0), dequantize_tq1_0},
    {TensorType::TQ2_0, "TQ2_0", kSuperBlock, sizeof(BlockTQ2_0), dequantize_tq2_0},
};

// ggml's type ids up to the newest rill knows of, for naming types rill cannot read.
constexpr std::string_view kGgmlTypeNames[] = {
    "F32",     "F16",    "Q4_0",  "Q4_1",   "Q4_2",  "Q4_3",   "Q5_0",   "Q5_1",    "Q8_0",   "Q8_1",
    "Q2_K",    "Q3_K",   "Q4_K",  "Q5_K",   "Q6_K",  "Q8_K",   "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
    "IQ4_NL",  "IQ3_S",  "IQ2_S", "IQ4_XS", "I8",    "I16",    "I32",    "I64",     "F64",    "IQ1_M",
    "BF16",    "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",
};

}  // namespace

const TensorTypeTraits* find_tensor_type(uint32_t id) {
    for (const auto& t : kTypes)
        if (uint32_t(t.type) == id) return &t;
    return nullptr;
}

const TensorTypeTraits& traits(TensorType type) { return *find_tensor_type(uint32_t(type)); }

std::span<const TensorTypeTraits> all_tensor_types() { return kTypes; }

std::optional<std::string_view> ggml_type_name(uint32_t id) {
    if (id < std::size(kGgmlTypeNames)) return kGgmlTypeNames[id];
    return std::nullopt;
}

void dequantize_row(TensorType type, const uint8_t* row, float* out, size_t n) {
    const TensorTypeTraits& t = traits(type);
    t.dequantize(row, out, n / t.block_size);
}

}  // namespace rill
