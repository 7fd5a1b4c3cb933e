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
    bool interleave = true;  // regroup matrix rows for the decode kernels (quant/interleave.h)
    // Called with the fraction done (0 to 1) while the file is read and prepared; returning false
    // cancels the load, which then throws rill::Error("loading cancelled").
    std::function<bool(double)> progress;
};

// Reports progress through options.progress and throws if it asks to cancel.
void report_progress(const LoadOptions& options, double fraction);

// Memory the loader fills and then only reads: writable until seal(), read-only after. It asks for
// 2 MiB pages, because decode streams every weight per token and a stream over 4 KiB pages runs at
// a third of the speed on a guest with nested paging (measured on the KVM machines this was built on).
class AnonymousMemory {
public:
    AnonymousMemory() = default;
    // Throws rill::Error naming `what` (the file it is for) when the memory cannot be had.
    AnonymousMemory(size_t size, const std::string& what);
    AnonymousMemory(AnonymousMemory&& other) noexcept;
    AnonymousMemory& operator=(AnonymousMemory&& other) noexcept;
    AnonymousMemory(const AnonymousMemory&) = delete;
    AnonymousMemory& operator=(const AnonymousMemory&) = delete;
    ~AnonymousMemory();

    uint8_t* data() const { return static_cast<uint8_t*>(addr_); }
    size_t size() const { return size_; }
    bool locked() const { return locked_; }
    bool sealed() const { return sealed_; }
    void lock();  // mlock, so the OS never pages it out; best effort, as locked() then says
    // One protection change for the whole range: changing parts of it would split the mapping, and
    // each split breaks a 2 MiB page into 4 KiB ones.
    void seal();

private:
    void release() noexcept;
    void* addr_ = nullptr;
    size_t size_ = 0;
    bool locked_ = false;
    bool sealed_ = false;
};

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
    bool locked() const { return mapped_ ? mapped_locked_ : buffer_.locked(); }
    bool empty() const { return addr_ == nullptr; }
    bool mapped() const { return mapped_; }
    // Bytes that may be rewritten in place until seal(); null for a memory-mapped file, whose pages
    // a write would copy one 4 KiB page at a time (copy what you rewrite with AnonymousMemory instead).
    uint8_t* writable(const uint8_t* p);
    void seal();
    // A mapped range that will not be read again leaves the resident set (its pages stay in the page cache).
    void forget(const uint8_t* p, size_t n);

private:
    void release() noexcept;
    void* addr_ = nullptr;
    size_t size_ = 0;
    bool mapped_ = false;
    bool mapped_locked_ = false;
    AnonymousMemory buffer_;  // the bytes, when read rather than mapped
};

}  // namespace rill
