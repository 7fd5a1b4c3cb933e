#include "runtime/compute/kv_cache.h"

#include <algorithm>
#include <array>

#include "runtime/base/error.h"
#include "quant/fp16.h"

namespace rill {
namespace {

// Every half value as a float: a table lookup beats the bit manipulation on CPUs without F16C.
const std::array<float, 65536>& half_table() {
    static const std::array<float, 65536> table = [] {
        std::array<float, 65536> t{};
        for (uint32_t h = 0; h < 65536; ++h) t[h] = f16_to_f32(uint16_t(h));
        return t;
    }();
    return table;
}

void widen(const uint16_t* src, int n, float* out) {
    const auto& table = half_table();
    for (int i = 0; i < n; ++i) out[i] = table[src[i]];
}

}  // namespace

KvType parse_kv_type(std::string_view name) {
    if (name == "f16" || name == "F16") return KvType::F16;
    if (name == "f32" || name == "F32") return KvType::F32;
    throw Error("unknown KV cache type '" + std::string(name) + "' (use f16 or f32)");
}

size_t kv_type_bytes(KvType type) { return type == KvType::F16 ? 2 : 4; }

KvCache::KvCache(KvType type_, int n_layer_, int n_ctx_, int kv_dim_, std::vector<int> layer_capacity)
    : type(type_), n_layer(n_layer_), n_ctx(n_ctx_), kv_dim(kv_dim_), capacity(std::move(layer_capacity)) {
    if (capacity.empty()) capacity.assign(size_t(n_layer), n_ctx);
    size_t slots = 0;
    for (int& c : capacity) {
        c = std::max(1, std::min(c, n_ctx));
        first.push_back(slots);
        slots += size_t(c);
    }
    const size_t n = slots * size_t(kv_dim);
    if (type == KvType::F16) {
        k16.resize(n);
        v16.resize(n);
    } else {
        k32.resize(n);
        v32.resize(n);
    }
}

void KvCache::store(int layer, int pos, const float* k, const float* v) {
    const size_t o = offset(layer, pos);
    if (type == KvType::F16) {
        for (int i = 0; i < kv_dim; ++i) {
            k16[o + i] = f32_to_f16(k[i]);
            v16[o + i] = f32_to_f16(v[i]);
        }
    } else {
        std::copy(k, k + kv_dim, k32.begin() + o);
        std::copy(v, v + kv_dim, v32.begin() + o);
    }
}

void KvCache::load_key(int layer, int pos, int head_offset, int n, float* out) const {
    const size_t o = offset(layer, pos) + head_offset;
    if (type == KvType::F16) widen(&k16[o], n, out);
    else std::copy(&k32[o], &k32[o] + n, out);
}

void KvCache::load_value(int layer, int pos, int head_offset, int n, float* out) const {
    const size_t o = offset(layer, pos) + head_offset;
    if (type == KvType::F16) widen(&v16[o], n, out);
    else std::copy(&v32[o], &v32[o] + n, out);
}

uint64_t KvCache::bytes() const {
    uint64_t slots = 0;
    for (const int c : capacity) slots += uint64_t(c);
    return uint64_t(2) * slots * uint64_t(kv_dim) * kv_type_bytes(type);
}

}  // namespace rill
