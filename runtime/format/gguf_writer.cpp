#include "runtime/format/gguf_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/base/error.h"

namespace rill {
namespace {

size_t element_size(GgufType t) {
    switch (t) {
        case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
        case GgufType::U16: case GgufType::I16: return 2;
        case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
        default: return 4;
    }
}

}  // namespace

GgufWriter::GgufWriter(std::string path, uint64_t alignment) : path_(std::move(path)), alignment_(alignment) {
    if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0) throw Error("GGUF alignment must be a power of two");
    // The temporary file sits beside the target so the final rename stays on one file system.
    temp_path_ = path_ + ".partial-" + std::to_string(::getpid());
    file_ = std::fopen(temp_path_.c_str(), "wb");
    if (file_ == nullptr) throw Error(path_ + ": cannot create: " + std::strerror(errno));
    if (alignment_ != 32) set_u32("general.alignment", uint32_t(alignment_));
}

GgufWriter::~GgufWriter() {
    if (file_ != nullptr) std::fclose(file_);
    if (!finished_) std::remove(temp_path_.c_str());
}

void GgufWriter::fail(const std::string& what) {
    const std::string reason = errno ? std::string(": ") + std::strerror(errno) : "";
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
    std::remove(temp_path_.c_str());
    throw Error(path_ + ": " + what + reason);
}

void GgufWriter::put(const void* data, size_t n) {
    if (n == 0) return;  // empty metadata or arrays may come as a null pointer
    if (!data_started_) {
        const auto* p = static_cast<const uint8_t*>(data);
        header_.insert(header_.end(), p, p + n);
        return;
    }
    if (file_ == nullptr) throw Error(path_ + ": the writer has already failed");
    errno = 0;
    if (std::fwrite(data, 1, n, file_) != n) fail("write failed (is the disk full?)");
    written_ += n;
}

void GgufWriter::put_string(const std::string& s) {
    put_scalar<uint64_t>(s.size());
    put(s.data(), s.size());
}

void GgufWriter::begin_kv(const std::string& key, GgufType type) {
    if (data_started_) throw Error(path_ + ": metadata '" + key + "' set after tensor data began");
    if (std::find(keys_.begin(), keys_.end(), key) != keys_.end())
        throw Error(path_ + ": metadata '" + key + "' set twice");
    keys_.push_back(key);
    ++n_kv_;
    put_string(key);
    put_scalar<uint32_t>(uint32_t(type));
}

void GgufWriter::set_u32(const std::string& key, uint32_t v) { begin_kv(key, GgufType::U32); put_scalar(v); }
void GgufWriter::set_i32(const std::string& key, int32_t v) { begin_kv(key, GgufType::I32); put_scalar(v); }
void GgufWriter::set_f32(const std::string& key, float v) { begin_kv(key, GgufType::F32); put_scalar(v); }
void GgufWriter::set_u64(const std::string& key, uint64_t v) { begin_kv(key, GgufType::U64); put_scalar(v); }
void GgufWriter::set_bool(const std::string& key, bool v) { begin_kv(key, GgufType::BOOL); put_scalar<uint8_t>(v); }
void GgufWriter::set_string(const std::string& key, const std::string& v) { begin_kv(key, GgufType::STRING); put_string(v); }

void GgufWriter::set_strings(const std::string& key, const std::vector<std::string>& v) {
    begin_kv(key, GgufType::ARRAY);
    put_scalar<uint32_t>(uint32_t(GgufType::STRING));
    put_scalar<uint64_t>(v.size());
    for (const std::string& s : v) put_string(s);
}

void GgufWriter::set_f32s(const std::string& key, const std::vector<float>& v) {
    begin_kv(key, GgufType::ARRAY);
    put_scalar<uint32_t>(uint32_t(GgufType::F32));
    put_scalar<uint64_t>(v.size());
    put(v.data(), v.size() * sizeof(float));
}

void GgufWriter::set_i32s(const std::string& key, const std::vector<int32_t>& v) {
    begin_kv(key, GgufType::ARRAY);
    put_scalar<uint32_t>(uint32_t(GgufType::I32));
    put_scalar<uint64_t>(v.size());
    put(v.data(), v.size() * sizeof(int32_t));
}

void GgufWriter::set_bools(const std::string& key, const std::vector<bool>& v) {
    begin_kv(key, GgufType::ARRAY);
    put_scalar<uint32_t>(uint32_t(GgufType::BOOL));
    put_scalar<uint64_t>(v.size());
    for (const bool b : v) put_scalar<uint8_t>(b ? 1 : 0);
}

void GgufWriter::encode_value(const GgufValue& v) {
    switch (v.type) {
        case GgufType::U8: put_scalar<uint8_t>(uint8_t(v.u)); break;
        case GgufType::I8: put_scalar<int8_t>(int8_t(v.i)); break;
        case GgufType::U16: put_scalar<uint16_t>(uint16_t(v.u)); break;
        case GgufType::I16: put_scalar<int16_t>(int16_t(v.i)); break;
        case GgufType::U32: put_scalar<uint32_t>(uint32_t(v.u)); break;
        case GgufType::I32: put_scalar<int32_t>(int32_t(v.i)); break;
        case GgufType::U64: put_scalar<uint64_t>(v.u); break;
        case GgufType::I64: put_scalar<int64_t>(v.i); break;
        case GgufType::F32: put_scalar<float>(float(v.f)); break;
        case GgufType::F64: put_scalar<double>(v.f); break;
        case GgufType::BOOL: put_scalar<uint8_t>(uint8_t(v.u)); break;
        case GgufType::STRING: put_string(v.str); break;
        case GgufType::ARRAY:
            put_scalar<uint32_t>(uint32_t(v.element_type));
            put_scalar<uint64_t>(v.count);
            if (v.element_type == GgufType::STRING) {
                for (const std::string& s : v.strings) put_string(s);
            } else if (v.element_type == GgufType::ARRAY) {
                for (const GgufValue& item : v.items) encode_value(item);
            } else {
                put(v.raw, v.count * element_size(v.element_type));
            }
            break;
    }
}

void GgufWriter::set_value(const std::string& key, const GgufValue& v) {
    begin_kv(key, v.type);
    encode_value(v);
}

uint64_t GgufWriter::add_tensor(const std::string& name, TensorType type, std::vector<uint64_t> ne) {
    if (data_started_) throw Error(path_ + ": tensor '" + name + "' declared after tensor data began");
    if (ne.empty() || ne.size() > 4) throw Error(path_ + ": tensor '" + name + "' must have 1 to 4 dimensions");
    for (const TensorInfo& t : tensors_)
        if (t.name == name) throw Error(path_ + ": tensor '" + name + "' declared twice");
    const TensorTypeTraits& tt = traits(type);
    if (ne[0] % tt.block_size != 0)
        throw Error(path_ + ": tensor '" + name + "' row length " + std::to_string(ne[0]) + " is not a multiple of the " +
                    std::string(tt.name) + " block size");
    uint64_t n = 1;
    for (const uint64_t d : ne) n *= d;
    const uint64_t bytes = n / tt.block_size * tt.bytes_per_block;
    const uint64_t offset = (data_size_ + alignment_ - 1) / alignment_ * alignment_;
    tensors_.push_back({name, type, std::move(ne), offset, bytes});
    data_size_ = offset + bytes;
    return bytes;
}

void GgufWriter::pad_to_alignment() {
    static const uint8_t zeros[64] = {};
    while (written_ % alignment_ != 0) put(zeros, std::min<uint64_t>(sizeof zeros, alignment_ - written_ % alignment_));
}

void GgufWriter::begin_data() {
    if (data_started_) throw Error(path_ + ": begin_data called twice");
    std::vector<uint8_t> metadata = std::move(header_);
    header_.clear();
    data_started_ = true;
    put_scalar<uint32_t>(0x46554747);  // "GGUF"
    put_scalar<uint32_t>(3);
    put_scalar<uint64_t>(tensors_.size());
    put_scalar<uint64_t>(n_kv_);
    put(metadata.data(), metadata.size());
    for (const TensorInfo& t : tensors_) {
        put_string(t.name);
        put_scalar<uint32_t>(uint32_t(t.ne.size()));
        for (const uint64_t d : t.ne) put_scalar<uint64_t>(d);
        put_scalar<uint32_t>(uint32_t(t.type));
        put_scalar<uint64_t>(t.offset);
    }
    pad_to_alignment();
    written_ = 0;  // from here on, offsets count from the data section
}

void GgufWriter::write_data(std::span<const uint8_t> bytes) {
    if (!data_started_) throw Error(path_ + ": tensor data written before begin_data");
    while (!bytes.empty()) {
        if (current_ >= tensors_.size()) throw Error(path_ + ": more tensor data than the tensors declared");
        const TensorInfo& t = tensors_[current_];
        if (current_done_ == 0) pad_to_alignment();
        const uint64_t take = std::min<uint64_t>(bytes.size(), t.bytes - current_done_);
        put(bytes.data(), size_t(take));
        bytes = bytes.subspan(size_t(take));
        current_done_ += take;
        if (current_done_ == t.bytes) {
            ++current_;
            current_done_ = 0;
        }
    }
}

void GgufWriter::finish() {
    if (!data_started_) begin_data();
    if (current_ != tensors_.size())
        throw Error(path_ + ": tensor '" + tensors_[current_].name + "' is incomplete when finishing");
    // ggml reads the data section as every tensor's size rounded up to the alignment, the last one's too:
    // without the padding after it, llama.cpp refuses a file whose last tensor is not a whole multiple.
    if (!tensors_.empty()) pad_to_alignment();
    errno = 0;
    if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0) fail("write failed (is the disk full?)");
    if (std::fclose(file_) != 0) {
        file_ = nullptr;
        fail("write failed (is the disk full?)");
    }
    file_ = nullptr;
    if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("cannot rename the finished file into place");
    finished_ = true;
}

}  // namespace rill
