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

FileBytes::FileBytes(const std::string& path, const LoadOptions& options) {
    Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0) throw Error(os_error(path, "cannot open"));
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) throw Error(os_error(path, "cannot stat"));
    if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
    size_ = size_t(st.st_size);
    if (size_ == 0) throw Error(path + ": file is empty");

    if (options.use_mmap) {
        addr_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd, 0);
        if (addr_ == MAP_FAILED) {
            addr_ = nullptr;
            throw Error(os_error(path, "cannot memory-map"));
        }
    } else {
        addr_ = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (addr_ == MAP_FAILED) {
            addr_ = nullptr;
            throw Error(os_error(path, "cannot allocate memory for"));
        }
#if defined(MADV_HUGEPAGE)
        // Decode streams every weight per token: with 2 MiB pages it takes 512 times fewer TLB
        // misses. Only a hint; where transparent huge pages are off nothing changes.
        ::madvise(addr_, size_, MADV_HUGEPAGE);
#endif
        size_t done = 0;
        constexpr size_t kReadBytes = size_t(64) << 20;  // a progress report per this many bytes
        while (done < size_) {
            try {
                report_progress(options, 0.9 * double(done) / double(size_));
            } catch (...) {
                release();
                throw;
            }
            const ssize_t got = ::read(file.fd, static_cast<char*>(addr_) + done, std::min(kReadBytes, size_ - done));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                const std::string message = got == 0 ? path + ": file shrank while reading" : os_error(path, "read failed");
                release();
                throw Error(message);
            }
            done += size_t(got);
        }
        // Stays writable until seal(): protecting it now and opening a tensor's pages later would
        // split the mapping at every tensor edge, and each split breaks a 2 MiB page into 4 KiB ones.
        writable_until_sealed_ = true;
    }
    if (options.lock) locked_ = ::mlock(addr_, size_) == 0;
}

void report_progress(const LoadOptions& options, double fraction) {
    if (options.progress && !options.progress(fraction)) throw Error("loading cancelled");
}

uint8_t* FileBytes::writable(const uint8_t* p, size_t n) {
    if (writable_until_sealed_) return const_cast<uint8_t*>(p);
    const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const uintptr_t start = uintptr_t(p) & ~(page - 1), end = uintptr_t(p) + n;
    if (::mprotect(reinterpret_cast<void*>(start), end - start, PROT_READ | PROT_WRITE) != 0)
        throw Error(std::string("cannot make model memory writable: ") + std::strerror(errno));
    return const_cast<uint8_t*>(p);
}

void FileBytes::seal() {
    if (addr_ != nullptr) ::mprotect(addr_, size_, PROT_READ);
    writable_until_sealed_ = false;
}

FileBytes::FileBytes(FileBytes&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      locked_(std::exchange(other.locked_, false)),
      writable_until_sealed_(std::exchange(other.writable_until_sealed_, false)) {}

FileBytes& FileBytes::operator=(FileBytes&& other) noexcept {
    if (this != &other) {
        release();
        addr_ = std::exchange(other.addr_, nullptr);
        size_ = std::exchange(other.size_, 0);
        locked_ = std::exchange(other.locked_, false);
        writable_until_sealed_ = std::exchange(other.writable_until_sealed_, false);
    }
    return *this;
}

FileBytes::~FileBytes() { release(); }

void FileBytes::release() noexcept {
    if (addr_ != nullptr) {
        if (locked_) ::munlock(addr_, size_);
        ::munmap(addr_, size_);
    }
    addr_ = nullptr;
    size_ = 0;
    locked_ = false;
    writable_until_sealed_ = false;
}

}  // namespace rill
