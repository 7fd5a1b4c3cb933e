// A whole file's bytes in memory: memory-mapped (the default), or read into anonymous memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace rill {

struct LoadOptions {
    bool use_mmap = true;  // false: read into anonymous memory, like llama.cpp's --no-mmap
    bool lock = false;     // mlock the bytes so they are never paged out
    bool interleave = true;  // regroup Q4_0/Q8_0 matrix rows for the decode kernels (quant/interleave.h)
    // Called with the fraction done (0 to 1) while the file is read and prepared; returning false
    // cancels the load, which then throws rill::Error("loading cancelled").
    std::function<bool(double)> progress;
};

// Reports progress through options.progress and throws if it asks to cancel.
void report_progress(const LoadOptions& options, double fraction);

// Owns a read-only view of a file's bytes; releases the mapping or buffer on destruction.
class FileBytes {
public:
    FileBytes() = default;
    FileBytes(const std::string& path, const LoadOptions& options);
    FileBytes(FileBytes&& other) noexcept;
    FileBytes& operator=(FileBytes&& other) noexcept;
    FileBytes(const FileBytes&) = delete;
    FileBytes& operator=(const FileBytes&) = delete;
    ~FileBytes();

    std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(addr_), size_}; }
    bool locked() const { return locked_; }
    bool empty() const { return addr_ == nullptr; }
    // Opens a range for writing (a private mapping: written pages stop being the file's) until seal().
    uint8_t* writable(const uint8_t* p, size_t n);
    void seal();

private:
    void release() noexcept;
    void* addr_ = nullptr;
    size_t size_ = 0;
    bool locked_ = false;
    bool writable_until_sealed_ = false;  // read into anonymous memory and not sealed yet
};

}  // namespace rill
