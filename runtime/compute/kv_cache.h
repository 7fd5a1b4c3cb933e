// Keys and values of every past position, per layer: [layer][position][kv_dim], F16 or F32.
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
    std::vector<uint16_t> k16, v16;  // used when type is F16
    std::vector<float> k32, v32;     // used when type is F32

    KvCache() = default;
    KvCache(KvType type, int n_layer, int n_ctx, int kv_dim);

    size_t offset(int layer, int pos) const { return (size_t(layer) * n_ctx + pos) * kv_dim; }
    void store(int layer, int pos, const float* k, const float* v);
    // Copies one head's key or value at a position into `out` as floats.
    void load_key(int layer, int pos, int head_offset, int n, float* out) const;
    void load_value(int layer, int pos, int head_offset, int n, float* out) const;
    uint64_t bytes() const;
};

}  // namespace rill
