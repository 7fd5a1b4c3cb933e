// GGUF tensor types: ids as ggml numbers them, block geometry, and scalar dequantization.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace rill {

// Values are ggml's type ids as stored in GGUF files; gaps are types rill does not read.
enum class TensorType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,  // ternary (BitNet-style): -1, 0, +1 times one scale per 256
    TQ2_0 = 35,
    MXFP4 = 39,  // gpt-oss experts: E2M1 codes with one power-of-two (E8M0) scale per 32
};

// Dequantizes n_blocks consecutive blocks starting at `blocks` into n_blocks * block_size floats.
using DequantizeFn = void (*)(const uint8_t* blocks, float* out, size_t n_blocks);

struct TensorTypeTraits {
    TensorType type;
    std::string_view name;
    size_t block_size;       // elements per block
    size_t bytes_per_block;  // bytes per block
    DequantizeFn dequantize;
};

// Traits of a type rill reads, or nullptr for any other id.
const TensorTypeTraits* find_tensor_type(uint32_t id);
const TensorTypeTraits& traits(TensorType type);
std::span<const TensorTypeTraits> all_tensor_types();

// Name of any ggml type id, including ones rill cannot read ("IQ2_XXS"), or nullopt if unknown to ggml.
std::optional<std::string_view> ggml_type_name(uint32_t id);

// Dequantizes one row of n elements (n a multiple of the block size).
void dequantize_row(TensorType type, const uint8_t* row, float* out, size_t n);

// Bytes taken by n elements of the type (n a multiple of the block size).
inline size_t row_bytes(TensorType type, size_t n) {
    const TensorTypeTraits& t = traits(type);
    return n / t.block_size * t.bytes_per_block;
}

}  // namespace rill
