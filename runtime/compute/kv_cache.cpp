#include "runtime/compute/kv_cache.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "quant/quantize.h"
#include "runtime/base/error.h"
#include "simd/convert.h"

namespace rill {
namespace {

struct KvTypeName {
    KvType type;
    std::string_view name;
    TensorType tensor;
};
constexpr KvTypeName kKvTypes[] = {{KvType::F32, "f32", TensorType::F32},
                                   {KvType::F16, "f16", TensorType::F16},
                                   {KvType::BF16, "bf16", TensorType::BF16},
                                   {KvType::Q8_0, "q8_0", TensorType::Q8_0},
                                   {KvType::Q4_0, "q4_0", TensorType::Q4_0}};

const KvTypeName& entry(KvType type) {
    for (const KvTypeName& e : kKvTypes)
        if (e.type == type) return e;
    throw Error("unknown KV cache type id " + std::to_string(int(type)));
}

}  // namespace

KvType parse_kv_type(std::string_view name) {
    std::string lower(name);
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    for (const KvTypeName& e : kKvTypes)
        if (e.name == lower) return e.type;
    throw Error("unknown KV cache type '" + std::string(name) + "' (use f32, f16, bf16, q8_0 or q4_0)");
}

std::string_view kv_type_name(KvType type) { return entry(type).name; }

std::string kv_types_label(KvTypes types) {
    if (types.k == types.v) return std::string(kv_type_name(types.k));
    return std::string(kv_type_name(types.k)) + " K / " + std::string(kv_type_name(types.v)) + " V";
}

TensorType tensor_type(KvType type) { return entry(type).tensor; }

bool is_quantized(KvType type) { return type == KvType::Q8_0 || type == KvType::Q4_0; }

size_t kv_row_bytes(KvType type, int n) {
    const TensorTypeTraits& t = traits(tensor_type(type));
    return (size_t(std::max(0, n)) + t.block_size - 1) / t.block_size * t.bytes_per_block;
}

void check_kv_types(KvTypes types, int head_dim) {
    for (const KvType type : {types.k, types.v})
        if (is_quantized(type) && head_dim % 32 != 0)
            throw Error("KV cache type " + std::string(kv_type_name(type)) + " needs a head size that is a multiple of 32 (its blocks of 32 " +
                        "must not straddle two heads); this model's head size is " + std::to_string(head_dim) + ": use f16, bf16 or f32");
}

KvCache::KvCache(KvTypes types_, int n_layer_, int n_ctx_, int kv_dim, int head_dim, std::vector<int> layer_capacity,
                 std::vector<int> layer_kv_dim)
    : types(types_), n_layer(n_layer_), n_ctx(n_ctx_), width(std::move(layer_kv_dim)), capacity(std::move(layer_capacity)) {
    check_kv_types(types, head_dim);
    if (capacity.empty()) capacity.assign(size_t(n_layer), n_ctx);
    if (width.empty()) width.assign(size_t(n_layer), kv_dim);
    size_t k_total = 0, v_total = 0;
    for (int l = 0; l < n_layer; ++l) {
        int& c = capacity[size_t(l)];
        c = std::max(0, std::min(c, n_ctx));  // 0: a layer that keeps no keys (a recurrent one, or one reading another's)
        k_bytes.push_back(kv_row_bytes(types.k, width[size_t(l)]));
        v_bytes.push_back(kv_row_bytes(types.v, width[size_t(l)]));
        k_first.push_back(k_total);
        v_first.push_back(v_total);
        k_total += size_t(c) * k_bytes.back();
        v_total += size_t(c) * v_bytes.back();
    }
    k.resize(k_total);
    v.resize(v_total);
}

void KvCache::store(int layer, int pos, const float* keys, const float* values) {
    quantize_row(tensor_type(types.k), keys, key_row(layer, pos), size_t(width[size_t(layer)]));
    quantize_row(tensor_type(types.v), values, value_row(layer, pos), size_t(width[size_t(layer)]));
}

void KvCache::load_key(int layer, int pos, int head_offset, int n, float* out) const {
    simd::dequantize_row(tensor_type(types.k), key_row(layer, pos) + key_offset(head_offset), out, size_t(n));
}

void KvCache::load_value(int layer, int pos, int head_offset, int n, float* out) const {
    simd::dequantize_row(tensor_type(types.v), value_row(layer, pos) + value_offset(head_offset), out, size_t(n));
}

uint64_t KvCache::bytes() const { return uint64_t(k.size()) + uint64_t(v.size()); }

}  // namespace rill
