// GGUF v2/v3 reader. Every field is validated before use; tensors are views into the file's bytes.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/format/file_bytes.h"
#include "quant/tensor_type.h"

namespace rill {

enum class GgufType : uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
    STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};

std::string_view gguf_type_name(GgufType type);

struct GgufValue {
    GgufType type = GgufType::U8;
    uint64_t u = 0;  // unsigned integers and bool
    int64_t i = 0;   // signed integers
    double f = 0;    // floats
    std::string str;
    // Arrays: numbers stay as raw little-endian bytes in the file (decoded on request, so a huge
    // array costs no memory), strings are copied, nested arrays are parsed.
    GgufType element_type = GgufType::U8;
    uint64_t count = 0;
    const uint8_t* raw = nullptr;
    std::vector<std::string> strings;
    std::vector<GgufValue> items;
};

// Element k of a numeric array, converted.
double gguf_array_number(const GgufValue& array, uint64_t k);

struct GgufTensor {
    std::string name;
    TensorType type;
    uint32_t n_dims = 0;
    std::array<uint64_t, 4> ne{1, 1, 1, 1};  // ggml order: ne[0] is the row length
    uint64_t offset = 0;                      // from the start of the data section
    uint64_t n_elements = 0;
    uint64_t n_bytes = 0;
    const uint8_t* data = nullptr;

    uint64_t n_rows() const { return n_elements / ne[0]; }
    size_t row_bytes() const { return size_t(n_bytes / n_rows()); }
};

class GgufFile {
public:
    // Parses bytes that stay owned by the caller; `name` labels error messages.
    static GgufFile parse(std::span<const uint8_t> bytes, std::string name);
    // Maps (or reads) the file and parses it; the result owns the bytes.
    static GgufFile open(const std::string& path, const LoadOptions& options = {});

    const std::string& name() const { return name_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t file_size() const { return file_size_; }
    uint64_t data_offset() const { return data_offset_; }
    bool locked() const { return storage_.locked(); }

    const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
    const GgufValue* find(std::string_view key) const;
    std::optional<uint64_t> get_uint(std::string_view key) const;
    std::optional<double> get_float(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::string> get_string(std::string_view key) const;
    std::vector<std::string> get_string_array(std::string_view key) const;  // empty if absent
    std::vector<float> get_float_array(std::string_view key) const;         // empty if absent
    std::vector<int64_t> get_int_array(std::string_view key) const;         // empty if absent; bools as 0/1

    const std::vector<GgufTensor>& tensors() const { return tensors_; }
    const GgufTensor* find_tensor(std::string_view name) const;

    // Load-time relayouts of tensor bytes. Bytes read into memory are rewritten in place until seal():
    // writable_data gives them (null when the bytes are mapped, or belong to the caller: parse()).
    // A mapped file's tensors are rewritten in a copy instead, since writing a private mapping copies
    // it 4 KiB page by page: move_tensor_data points the tensor at its copy, and forget releases the
    // mapped pages nothing reads any more.
    bool mapped() const { return storage_.mapped(); }
    uint8_t* writable_data(const GgufTensor& t) { return storage_.writable(t.data); }
    void move_tensor_data(const GgufTensor& t, const uint8_t* data);
    void forget(const uint8_t* p, size_t n) { storage_.forget(p, n); }
    void seal() { storage_.seal(); }

private:
    std::string name_;
    FileBytes storage_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t file_size_ = 0;
    uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, GgufValue>> metadata_;
    std::unordered_map<std::string, size_t> metadata_index_;
    std::vector<GgufTensor> tensors_;
    std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace rill
