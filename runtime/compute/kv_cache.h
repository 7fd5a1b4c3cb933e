// Keys and values of past positions, per layer: [layer][slot][kv_dim], F16 or F32. A full-attention
// layer has a slot per position of the context; a sliding-window layer keeps a ring of `capacity`
// slots (its window plus a prompt chunk), position p in slot p % capacity, so a long context costs
// those layers only their window.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace rill {

enum class KvType { F16, F32 };

KvType parse_kv_type(std::string_view name);  // "f16" or "f32"; throws on anything else
size_t kv_type_bytes(KvType type);

struct KvCache {
    KvType type = KvType::F16;
    int n_layer = 0, n_ctx = 0, kv_dim = 0;
    std::vector<int> capacity;     // slots per layer
    std::vector<size_t> first;     // each layer's first slot
    std::vector<uint16_t> k16, v16;  // used when type is F16
    std::vector<float> k32, v32;     // used when type is F32

    KvCache() = default;
    // layer_capacity: slots per layer (at most n_ctx); empty: n_ctx for every layer.
    KvCache(KvType type, int n_layer, int n_ctx, int kv_dim, std::vector<int> layer_capacity = {});

    size_t offset(int layer, int pos) const {
        return (first[size_t(layer)] + size_t(pos % capacity[size_t(layer)])) * size_t(kv_dim);
    }
    // Whether `pos` still has its slot (a ring keeps only its last `capacity` positions below `end`).
    bool holds(int layer, int pos, int end) const { return pos < end && end - pos <= capacity[size_t(layer)]; }
    void store(int layer, int pos, const float* k, const float* v);
    // Copies one head's key or value at a position into `out` as floats.
    void load_key(int layer, int pos, int head_offset, int n, float* out) const;
    void load_value(int layer, int pos, int head_offset, int n, float* out) const;
    uint64_t bytes() const;
};

}  // namespace rill
