// GGUF v3 writer: metadata and tensor infos first, then tensor data streamed in declaration order,
// so memory stays bounded whatever the model's size. The file appears under its name only when
// finish() succeeds; on any error, or if the writer is destroyed unfinished, nothing is left behind.
#pragma once
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "runtime/format/gguf.h"

namespace rill {

class GgufWriter {
public:
    explicit GgufWriter(std::string path, uint64_t alignment = 32);
    ~GgufWriter();
    GgufWriter(const GgufWriter&) = delete;
    GgufWriter& operator=(const GgufWriter&) = delete;

    // Metadata, in the order it should appear. Keys must be unique.
    void set_u32(const std::string& key, uint32_t v);
    void set_i32(const std::string& key, int32_t v);
    void set_f32(const std::string& key, float v);
    void set_u64(const std::string& key, uint64_t v);
    void set_bool(const std::string& key, bool v);
    void set_string(const std::string& key, const std::string& v);
    void set_strings(const std::string& key, const std::vector<std::string>& v);
    void set_f32s(const std::string& key, const std::vector<float>& v);
    void set_i32s(const std::string& key, const std::vector<int32_t>& v);
    void set_bools(const std::string& key, const std::vector<bool>& v);
    void set_value(const std::string& key, const GgufValue& v);  // a value read from another file, any type

    // Declares a tensor; ne in ggml order (ne[0] is the row length). Returns its data size in bytes.
    uint64_t add_tensor(const std::string& name, TensorType type, std::vector<uint64_t> ne);

    // Writes the header; after this, tensor data follows with write_data.
    void begin_data();
    // Appends bytes of the current tensor; a tensor may arrive in several pieces.
    void write_data(std::span<const uint8_t> bytes);
    // Checks every tensor is complete, flushes to disk and renames into place.
    void finish();

    const std::string& path() const { return path_; }

private:
    void put(const void* data, size_t n);
    template <typename T>
    void put_scalar(T v) { put(&v, sizeof v); }
    void put_string(const std::string& s);
    void begin_kv(const std::string& key, GgufType type);
    void encode_value(const GgufValue& v);
    void pad_to_alignment();
    void fail(const std::string& what);

    struct TensorInfo {
        std::string name;
        TensorType type;
        std::vector<uint64_t> ne;
        uint64_t offset, bytes;
    };

    std::string path_, temp_path_;
    uint64_t alignment_;
    FILE* file_ = nullptr;
    std::vector<uint8_t> header_;  // metadata is small: built in memory, written by begin_data
    uint64_t n_kv_ = 0;
    std::vector<std::string> keys_;
    std::vector<TensorInfo> tensors_;
    uint64_t data_size_ = 0;
    bool data_started_ = false, finished_ = false;
    size_t current_ = 0;         // tensor being written
    uint64_t current_done_ = 0;  // its bytes written so far
    uint64_t written_ = 0;       // bytes in the file so far
};

}  // namespace rill
