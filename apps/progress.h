// A one-line progress bar on stderr: redrawn in place on a terminal, a line every 10% otherwise.
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace rill::cli {

class ProgressBar {
public:
    explicit ProgressBar(std::string label) : label_(std::move(label)), tty_(::isatty(STDERR_FILENO)) {}

    // `detail` is shown after the bar, e.g. "12/291 tensors".
    void update(double fraction, const std::string& detail) {
        const auto now = std::chrono::steady_clock::now();
        const int decile = int(fraction * 10);
        if (tty_) {
            if (fraction < 1.0 && now - last_ < std::chrono::milliseconds(100)) return;
            constexpr int kWidth = 30;
            const int filled = int(fraction * kWidth);
            std::string bar(size_t(filled), '=');
            if (filled < kWidth) bar += '>' + std::string(size_t(kWidth - filled - 1), ' ');
            std::fprintf(stderr, "\r%s [%s] %3.0f%% %s\033[K", label_.c_str(), bar.c_str(), fraction * 100, detail.c_str());
        } else {
            if (decile <= last_decile_) return;
            std::fprintf(stderr, "%s %3d%% %s\n", label_.c_str(), decile * 10, detail.c_str());
        }
        std::fflush(stderr);
        last_ = now;
        last_decile_ = decile;
    }
    void done() {
        if (tty_) std::fprintf(stderr, "\n");
    }

private:
    std::string label_;
    bool tty_;
    std::chrono::steady_clock::time_point last_{};
    int last_decile_ = -1;
};

inline std::string gigabytes(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GB", double(bytes) / 1e9);
    return buf;
}

}  // namespace rill::cli
