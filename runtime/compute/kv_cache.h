// Keys and values of past positions, per layer: [layer][slot] rows of the layer's width, keys and values
// each in their own type: F32, F16, BF16, or ggml's Q8_0 or Q4_0 blocks of 32 (llama.cpp's
// --cache-type-k / --cache-type-v). A full-attention layer has a slot per position of the context; a
// sliding-window layer keeps a ring of `capacity` slots (its window plus a prompt chunk), position p in
// slot p % capacity, so a long context costs those layers only their window.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quant/tensor_type.h"

namespace rill {

// The order of the first two is the saved-state format's of version 1 (0: F16, 1: F32).
enum class KvType { F16, F32, BF16, Q8_0, Q4_0 };

// The types of the keys and of the values. One KvType converts to both, as `--kv-type` sets them.
struct KvTypes {
    KvType k = KvType::F16;
    KvType v = KvType::F16;
    KvTypes() = default;
    KvTypes(KvType both) : k(both), v(both) {}  // implicit: one type for keys and values is the common case
    KvTypes(KvType keys, KvType values) : k(keys), v(values) {}
    bool operator==(const KvTypes&) const = default;
};

// "f32", "f16", "bf16", "q8_0" or "q4_0" (upper case too); throws rill::Error naming the choices.
KvType parse_kv_type(std::string_view name);
std::string_view kv_type_name(KvType type);  // "q8_0"
// "q8_0" when keys and values share the type, else "q8_0 K / f16 V".
std::string kv_types_label(KvTypes types);
TensorType tensor_type(KvType type);
bool is_quantized(KvType type);
// Bytes of n elements of the type; a partial block of a quantized type counts whole.
size_t kv_row_bytes(KvType type, int n);
// A quantized type's blocks of 32 must not straddle two heads (each head's scores read its own
// blocks), so it needs head_dim % 32 == 0, as llama.cpp requires; throws rill::Error naming the head
// size and the type otherwise.
void check_kv_types(KvTypes types, int head_dim);

struct KvCache {
    KvTypes types;
    int n_layer = 0, n_ctx = 0;
    std::vector<int> width;        // elements of a slot's keys (and of its values) per layer
    std::vector<size_t> k_bytes, v_bytes;  // bytes of one slot's keys, of its values, per layer
    std::vector<int> capacity;     // slots per layer
    std::vector<size_t> k_first, v_first;  // byte offset of each layer's first slot
    std::vector<uint8_t> k, v;     // each layer's slots after the previous layer's

    KvCache() = default;
    // layer_capacity: slots per layer (at most n_ctx); empty: n_ctx for every layer. layer_kv_dim: each
    // layer's width where they differ (gemma4); empty: kv_dim for every layer. Checks the types against
    // head_dim (check_kv_types), the smallest head size of any layer.
    KvCache(KvTypes types, int n_layer, int n_ctx, int kv_dim, int head_dim, std::vector<int> layer_capacity = {},
            std::vector<int> layer_kv_dim = {});

    size_t k_row(int layer) const { return k_bytes[size_t(layer)]; }
    size_t v_row(int layer) const { return v_bytes[size_t(layer)]; }
    size_t slot(int layer, int pos) const { return size_t(pos % capacity[size_t(layer)]); }
    const uint8_t* key_row(int layer, int pos) const { return k.data() + k_first[size_t(layer)] + slot(layer, pos) * k_row(layer); }
    const uint8_t* value_row(int layer, int pos) const { return v.data() + v_first[size_t(layer)] + slot(layer, pos) * v_row(layer); }
    uint8_t* key_row(int layer, int pos) { return k.data() + k_first[size_t(layer)] + slot(layer, pos) * k_row(layer); }
    uint8_t* value_row(int layer, int pos) { return v.data() + v_first[size_t(layer)] + slot(layer, pos) * v_row(layer); }
    // Byte offset of the element at head_offset within a key (value) row: head_offset is a multiple of
    // the head size, so of 32 for a quantized type.
    size_t key_offset(int head_offset) const { return kv_row_bytes(types.k, head_offset); }
    size_t value_offset(int head_offset) const { return kv_row_bytes(types.v, head_offset); }
    // Whether `pos` still has its slot (a ring keeps only its last `capacity` positions below `end`).
    bool holds(int layer, int pos, int end) const { return pos < end && end - pos <= capacity[size_t(layer)]; }
    // Rounds (or quantizes) a position's keys and values (the layer's width each) into their types.
    void store(int layer, int pos, const float* keys, const float* values);
    // One head's key or value at a position as floats, dequantized exactly.
    void load_key(int layer, int pos, int head_offset, int n, float* out) const;
    void load_value(int layer, int pos, int head_offset, int n, float* out) const;
    uint64_t bytes() const;
};

}  // namespace rill
