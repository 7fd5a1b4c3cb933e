#include "runtime/format/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "runtime/base/error.h"

namespace rill {
namespace {

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

std::string os_error(const std::string& path, const char* what) {
    return path + ": " + what + ": " + std::strerror(errno);
}

}  // namespace

void report_progress(const LoadOptions& options, double fraction) {
    if (options.progress && !options.progress(fraction)) throw Error("loading cancelled");
}

AnonymousMemory::AnonymousMemory(size_t size, const std::string& what) {
    if (size == 0) return;
    void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (addr == MAP_FAILED) throw Error(os_error(what, ("cannot allocate " + std::to_string(size) + " bytes for").c_str()));
    addr_ = addr;
    size_ = size;
#if defined(MADV_HUGEPAGE)
    ::madvise(addr_, size_, MADV_HUGEPAGE);  // only a hint: where transparent huge pages are off nothing changes
#endif
}

void AnonymousMemory::lock() {
    if (addr_ != nullptr && !locked_) locked_ = ::mlock(addr_, size_) == 0;
}

void AnonymousMemory::seal() {
    if (addr_ != nullptr && !sealed_) ::mprotect(addr_, size_, PROT_READ);
    sealed_ = true;
}

AnonymousMemory::AnonymousMemory(AnonymousMemory&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      locked_(std::exchange(other.locked_, false)),
      sealed_(std::exchange(other.sealed_, false)) {}

AnonymousMemory& AnonymousMemory::operator=(AnonymousMemory&& other) noexcept {
    if (this != &other) {
        release();
        addr_ = std::exchange(other.addr_, nullptr);
        size_ = std::exchange(other.size_, 0);
        locked_ = std::exchange(other.locked_, false);
        sealed_ = std::exchange(other.sealed_, false);
    }
    return *this;
}

AnonymousMemory::~AnonymousMemory() { release(); }

void AnonymousMemory::release() noexcept {
    if (addr_ != nullptr) {
        if (locked_) ::munlock(addr_, size_);
        ::munmap(addr_, size_);
    }
    addr_ = nullptr;
    size_ = 0;
    locked_ = sealed_ = false;
}

FileBytes::FileBytes(const std::string& path, const LoadOptions& options) {
    Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0) throw Error(os_error(path, "cannot open"));
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) throw Error(os_error(path, "cannot stat"));
    if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
    const size_t size = size_t(st.st_size);
    if (size == 0) throw Error(path + ": file is empty");

    if (options.use_mmap) {
        void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd, 0);
        if (addr == MAP_FAILED) throw Error(os_error(path, "cannot memory-map"));
        addr_ = addr;
        size_ = size;
        mapped_ = true;
        if (options.lock) mapped_locked_ = ::mlock(addr_, size_) == 0;
        return;
    }
    AnonymousMemory buffer(size, path);
    size_t done = 0;
    constexpr size_t kReadBytes = size_t(64) << 20;  // a progress report per this many bytes
    while (done < size) {
        report_progress(options, 0.9 * double(done) / double(size));
        const ssize_t got = ::read(file.fd, buffer.data() + done, std::min(kReadBytes, size - done));
        if (got < 0 && errno == EINTR) continue;
        if (got == 0) throw Error(path + ": file shrank while reading");
        if (got < 0) throw Error(os_error(path, "read failed"));
        done += size_t(got);
    }
    if (options.lock) buffer.lock();  // after reading: locking first would fault every page in empty
    addr_ = buffer.data();
    size_ = size;
    buffer_ = std::move(buffer);
}

uint8_t* FileBytes::writable(const uint8_t* p) {
    if (mapped_ || addr_ == nullptr || buffer_.sealed()) return nullptr;
    return const_cast<uint8_t*>(p);  // inside buffer_, which this object owns and has not sealed
}

void FileBytes::seal() { buffer_.seal(); }

void FileBytes::forget(const uint8_t* p, size_t n) {
    if (!mapped_ || mapped_locked_) return;
    const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const uintptr_t start = (uintptr_t(p) + page - 1) & ~(page - 1), end = (uintptr_t(p) + n) & ~(page - 1);
    // Only whole pages: a page shared with a neighbouring tensor would just be read back in.
    if (end > start) ::madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
}

FileBytes::FileBytes(FileBytes&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)),
      mapped_locked_(std::exchange(other.mapped_locked_, false)),
      buffer_(std::move(other.buffer_)) {}

FileBytes& FileBytes::operator=(FileBytes&& other) noexcept {
    if (this != &other) {
        release();
        addr_ = std::exchange(other.addr_, nullptr);
        size_ = std::exchange(other.size_, 0);
        mapped_ = std::exchange(other.mapped_, false);
        mapped_locked_ = std::exchange(other.mapped_locked_, false);
        buffer_ = std::move(other.buffer_);
    }
    return *this;
}

FileBytes::~FileBytes() { release(); }

void FileBytes::release() noexcept {
    if (mapped_ && addr_ != nullptr) {
        if (mapped_locked_) ::munlock(addr_, size_);
        ::munmap(addr_, size_);
    }
    buffer_ = AnonymousMemory();
    addr_ = nullptr;
    size_ = 0;
    mapped_ = mapped_locked_ = false;
}

}  // namespace rill
