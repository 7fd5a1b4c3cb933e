#include "runtime/format/gguf.h"

#include <cstring>
#include <limits>
#include <utility>

#include "runtime/base/error.h"

namespace rill {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian uint32
constexpr int kMaxArrayDepth = 4;        // nested arrays deeper than this are not in any real file
constexpr uint64_t kMaxDims = 4;

// A bounds-checked cursor over the header: every read names what it was reading.
class Reader {
public:
    Reader(std::span<const uint8_t> bytes, const std::string& file) : bytes_(bytes), file_(file) {}

    [[noreturn]] void fail(const std::string& what) const { throw Error(file_ + ": " + what); }

    void need(uint64_t n, const std::string& what) const {
        if (n > remaining())
            fail("truncated file: " + what + " at byte " + std::to_string(pos_) + " needs " + std::to_string(n) +
                 " bytes but only " + std::to_string(remaining()) + " remain");
    }

    template <typename T>
    T read(const std::string& what) {
        need(sizeof(T), what);
        T value;
        std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return value;
    }

    std::string read_string(const std::string& what) {
        const uint64_t length = read<uint64_t>(what + " length");
        if (length > remaining())
            fail(what + ": string length " + std::to_string(length) + " exceeds the " + std::to_string(remaining()) +
                 " bytes left in the file");
        std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), size_t(length));
        pos_ += length;
        return s;
    }

    const uint8_t* take(uint64_t n, const std::string& what) {
        need(n, what);
        const uint8_t* p = bytes_.data() + pos_;
        pos_ += n;
        return p;
    }

    uint64_t remaining() const { return bytes_.size() - pos_; }
    uint64_t pos() const { return pos_; }

private:
    std::span<const uint8_t> bytes_;
    const std::string& file_;
    uint64_t pos_ = 0;
};

// Smallest encoding of a value of this type, to bound element counts by the bytes left.
uint64_t min_encoded_size(GgufType type) {
    switch (type) {
        case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
        case GgufType::U16: case GgufType::I16: return 2;
        case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
        case GgufType::U64: case GgufType::I64: case GgufType::F64: case GgufType::STRING: return 8;
        case GgufType::ARRAY: return 12;
    }
    return 1;
}

bool is_known(uint32_t type) { return type <= uint32_t(GgufType::F64); }

GgufValue read_value(Reader& r, GgufType type, const std::string& what, int depth) {
    GgufValue v;
    v.type = type;
    switch (type) {
        case GgufType::U8: v.u = r.read<uint8_t>(what); break;
        case GgufType::I8: v.i = r.read<int8_t>(what); break;
        case GgufType::U16: v.u = r.read<uint16_t>(what); break;
        case GgufType::I16: v.i = r.read<int16_t>(what); break;
        case GgufType::U32: v.u = r.read<uint32_t>(what); break;
        case GgufType::I32: v.i = r.read<int32_t>(what); break;
        case GgufType::U64: v.u = r.read<uint64_t>(what); break;
        case GgufType::I64: v.i = r.read<int64_t>(what); break;
        case GgufType::F32: v.f = r.read<float>(what); break;
        case GgufType::F64: v.f = r.read<double>(what); break;
        case GgufType::BOOL: {
            const uint8_t b = r.read<uint8_t>(what);
            if (b > 1) r.fail(what + ": bool value " + std::to_string(b) + " is neither 0 nor 1");
            v.u = b;
            break;
        }
        case GgufType::STRING: v.str = r.read_string(what); break;
        case GgufType::ARRAY: {
            if (depth >= kMaxArrayDepth) r.fail(what + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
            const uint32_t element = r.read<uint32_t>(what + " element type");
            if (!is_known(element)) r.fail(what + ": unknown array element type " + std::to_string(element));
            v.element_type = GgufType(element);
            const uint64_t count = r.read<uint64_t>(what + " element count");
            if (count > r.remaining() / min_encoded_size(v.element_type))
                r.fail(what + ": array of " + std::to_string(count) + " elements cannot fit in the " +
                       std::to_string(r.remaining()) + " bytes left in the file");
            v.count = count;
            if (v.element_type == GgufType::STRING) {
                v.strings.reserve(size_t(count));
                for (uint64_t k = 0; k < count; ++k) v.strings.push_back(r.read_string(what));
            } else if (v.element_type == GgufType::ARRAY) {
                v.items.reserve(size_t(count));
                for (uint64_t k = 0; k < count; ++k) v.items.push_back(read_value(r, v.element_type, what, depth + 1));
            } else {
                if (v.element_type == GgufType::BOOL) {
                    const uint8_t* p = r.take(count, what);
                    for (uint64_t k = 0; k < count; ++k)
                        if (p[k] > 1) r.fail(what + ": bool element " + std::to_string(k) + " is neither 0 nor 1");
                    v.raw = p;
                } else {
                    v.raw = r.take(count * min_encoded_size(v.element_type), what);
                }
            }
            break;
        }
    }
    return v;
}

std::string shape_string(const GgufTensor& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

}  // namespace

double gguf_array_number(const GgufValue& a, uint64_t k) {
    const uint8_t* p = a.raw + k * min_encoded_size(a.element_type);
    auto load = [p](auto zero) {
        decltype(zero) x;
        std::memcpy(&x, p, sizeof x);
        return double(x);
    };
    switch (a.element_type) {
        case GgufType::U8: case GgufType::BOOL: return load(uint8_t{});
        case GgufType::I8: return load(int8_t{});
        case GgufType::U16: return load(uint16_t{});
        case GgufType::I16: return load(int16_t{});
        case GgufType::U32: return load(uint32_t{});
        case GgufType::I32: return load(int32_t{});
        case GgufType::U64: return load(uint64_t{});
        case GgufType::I64: return load(int64_t{});
        case GgufType::F32: return load(float{});
        case GgufType::F64: return load(double{});
        default: return 0;
    }
}

std::string_view gguf_type_name(GgufType type) {
    static constexpr std::string_view names[] = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                 "bool", "string", "array", "u64", "i64", "f64"};
    return uint32_t(type) < std::size(names) ? names[uint32_t(type)] : "unknown";
}

GgufFile GgufFile::open(const std::string& path, const LoadOptions& options) {
    FileBytes storage(path, options);
    GgufFile file = parse(storage.bytes(), path);
    file.storage_ = std::move(storage);
    return file;
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes, std::string name) {
    GgufFile g;
    g.name_ = std::move(name);
    g.file_size_ = bytes.size();
    Reader r(bytes, g.name_);

    const uint32_t magic = r.read<uint32_t>("magic");
    if (magic != kMagic) r.fail("not a GGUF file (magic bytes are not \"GGUF\")");
    g.version_ = r.read<uint32_t>("version");
    if (g.version_ != 2 && g.version_ != 3)
        r.fail("unsupported GGUF version " + std::to_string(g.version_) + " (rill reads versions 2 and 3)");
    const uint64_t n_tensors = r.read<uint64_t>("tensor count");
    const uint64_t n_kv = r.read<uint64_t>("metadata count");
    // The smallest tensor info is 24 bytes and the smallest key-value 13: bound counts before allocating.
    if (n_tensors > r.remaining() / 24)
        r.fail("tensor count " + std::to_string(n_tensors) + " cannot fit in a file of " + std::to_string(bytes.size()) +
               " bytes");
    if (n_kv > r.remaining() / 13)
        r.fail("metadata count " + std::to_string(n_kv) + " cannot fit in a file of " + std::to_string(bytes.size()) +
               " bytes");

    g.metadata_.reserve(size_t(n_kv));
    for (uint64_t k = 0; k < n_kv; ++k) {
        std::string key = r.read_string("metadata key #" + std::to_string(k));
        const std::string what = "metadata '" + key + "'";
        const uint32_t type = r.read<uint32_t>(what + " type");
        if (!is_known(type)) r.fail(what + ": unknown value type " + std::to_string(type));
        GgufValue value = read_value(r, GgufType(type), what, 0);
        if (!g.metadata_index_.emplace(key, g.metadata_.size()).second) r.fail(what + ": key appears twice");
        g.metadata_.emplace_back(std::move(key), std::move(value));
    }

    if (const GgufValue* a = g.find("general.alignment")) {
        if (a->type != GgufType::U32) r.fail("metadata 'general.alignment' must be u32, not " +
                                             std::string(gguf_type_name(a->type)));
        if (a->u == 0 || (a->u & (a->u - 1)) != 0)
            r.fail("metadata 'general.alignment' is " + std::to_string(a->u) + ", not a power of two");
        g.alignment_ = a->u;
    }

    g.tensors_.reserve(size_t(n_tensors));
    for (uint64_t k = 0; k < n_tensors; ++k) {
        GgufTensor t;
        t.name = r.read_string("tensor #" + std::to_string(k) + " name");
        const std::string what = "tensor '" + t.name + "'";
        t.n_dims = r.read<uint32_t>(what + " dimension count");
        if (t.n_dims == 0 || t.n_dims > kMaxDims)
            r.fail(what + ": " + std::to_string(t.n_dims) + " dimensions (must be 1 to 4)");
        for (uint32_t d = 0; d < t.n_dims; ++d) t.ne[d] = r.read<uint64_t>(what + " dimension");
        const uint32_t type_id = r.read<uint32_t>(what + " type");
        t.offset = r.read<uint64_t>(what + " offset");

        const TensorTypeTraits* traits = find_tensor_type(type_id);
        if (traits == nullptr) {
            const auto known = ggml_type_name(type_id);
            r.fail(what + ": " + (known ? "tensor type " + std::string(*known) + " is not supported by rill"
                                        : "unknown tensor type id " + std::to_string(type_id)));
        }
        t.type = traits->type;

        uint64_t n = 1;
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            if (t.ne[d] == 0) r.fail(what + ": dimension " + std::to_string(d) + " is zero");
            if (__builtin_mul_overflow(n, t.ne[d], &n) || n > uint64_t(std::numeric_limits<int64_t>::max()))
                r.fail(what + ": shape " + shape_string(t) + " has more elements than fit in 63 bits");
        }
        t.n_elements = n;
        if (t.ne[0] % traits->block_size != 0)
            r.fail(what + ": row length " + std::to_string(t.ne[0]) + " is not a multiple of the " +
                   std::string(traits->name) + " block size " + std::to_string(traits->block_size));
        if (__builtin_mul_overflow(n / traits->block_size, uint64_t(traits->bytes_per_block), &t.n_bytes))
            r.fail(what + ": shape " + shape_string(t) + " needs more bytes than fit in 64 bits");
        if (t.offset % g.alignment_ != 0)
            r.fail(what + ": data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                   std::to_string(g.alignment_));
        if (!g.tensor_index_.emplace(t.name, g.tensors_.size()).second) r.fail(what + ": name appears twice");
        g.tensors_.push_back(std::move(t));
    }

    // The data section starts at the next multiple of the alignment after the header.
    const uint64_t header_end = r.pos();
    g.data_offset_ = (header_end + g.alignment_ - 1) / g.alignment_ * g.alignment_;
    if (g.data_offset_ > bytes.size() && !g.tensors_.empty())
        r.fail("truncated file: the data section would start at byte " + std::to_string(g.data_offset_) +
               " but the file has " + std::to_string(bytes.size()) + " bytes");
    const uint64_t data_size = g.data_offset_ <= bytes.size() ? bytes.size() - g.data_offset_ : 0;
    for (GgufTensor& t : g.tensors_) {
        if (t.offset > data_size || t.n_bytes > data_size - t.offset)
            r.fail("tensor '" + t.name + "': data at offset " + std::to_string(t.offset) + " of " +
                   std::to_string(t.n_bytes) + " bytes runs past the end of the file (data section is " +
                   std::to_string(data_size) + " bytes)");
        t.data = bytes.data() + g.data_offset_ + t.offset;
    }
    return g;
}

const GgufValue* GgufFile::find(std::string_view key) const {
    const auto it = metadata_index_.find(std::string(key));
    return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

namespace {

[[noreturn]] void wrong_type(const std::string& file, std::string_view key, const char* expected, GgufType actual) {
    throw Error(file + ": metadata '" + std::string(key) + "' should be " + expected + " but is " +
                std::string(gguf_type_name(actual)));
}

bool is_unsigned(GgufType t) { return t == GgufType::U8 || t == GgufType::U16 || t == GgufType::U32 || t == GgufType::U64; }
bool is_signed(GgufType t) { return t == GgufType::I8 || t == GgufType::I16 || t == GgufType::I32 || t == GgufType::I64; }
bool is_float(GgufType t) { return t == GgufType::F32 || t == GgufType::F64; }

}  // namespace

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (is_unsigned(v->type)) return v->u;
    if (is_signed(v->type) && v->i >= 0) return uint64_t(v->i);
    if (is_signed(v->type)) throw Error(name_ + ": metadata '" + std::string(key) + "' is negative (" + std::to_string(v->i) + ")");
    wrong_type(name_, key, "an integer", v->type);
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (is_float(v->type)) return v->f;
    if (is_unsigned(v->type)) return double(v->u);
    if (is_signed(v->type)) return double(v->i);
    wrong_type(name_, key, "a number", v->type);
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != GgufType::BOOL) wrong_type(name_, key, "a bool", v->type);
    return v->u != 0;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->type != GgufType::STRING) wrong_type(name_, key, "a string", v->type);
    return v->str;
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return {};
    if (v->type != GgufType::ARRAY || v->element_type != GgufType::STRING) wrong_type(name_, key, "an array of strings", v->type);
    return v->strings;
}

std::vector<float> GgufFile::get_float_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return {};
    if (v->type != GgufType::ARRAY || !is_float(v->element_type)) wrong_type(name_, key, "an array of floats", v->type);
    std::vector<float> out(size_t(v->count));
    for (uint64_t k = 0; k < v->count; ++k) out[k] = float(gguf_array_number(*v, k));
    return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (v == nullptr) return {};
    if (v->type != GgufType::ARRAY || !(is_signed(v->element_type) || is_unsigned(v->element_type) || v->element_type == GgufType::BOOL))
        wrong_type(name_, key, "an array of integers", v->type);
    std::vector<int64_t> out(size_t(v->count));
    for (uint64_t k = 0; k < v->count; ++k) {
        if (v->element_type == GgufType::U64) {
            uint64_t x;
            std::memcpy(&x, v->raw + 8 * k, 8);
            out[k] = int64_t(x);
        } else if (v->element_type == GgufType::I64) {
            std::memcpy(&out[k], v->raw + 8 * k, 8);
        } else {
            out[k] = int64_t(gguf_array_number(*v, k));
        }
    }
    return out;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(std::string(name));
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::move_tensor_data(const GgufTensor& t, const uint8_t* data) {
    const uintptr_t at = uintptr_t(&t), first = uintptr_t(tensors_.data());
    if (at < first || at >= first + tensors_.size() * sizeof(GgufTensor))
        throw Error(name_ + ": tensor '" + t.name + "' is not one of this file's");
    tensors_[(at - first) / sizeof(GgufTensor)].data = data;
}

}  // namespace rill
