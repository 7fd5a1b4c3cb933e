// The kernel paths a test walks: every path the CPU offers, or, where RILL_TEST_KERNELS names some
// (comma-separated, e.g. "neon,dotprod,i8mm"), only those of them. Under emulation (scripts/cross-arm64.sh)
// each instruction costs a hundred times its native time, so the ARM64 run walks the NEON paths and
// leaves the generic and reference paths, which are the same C++ on every machine, to the native run.
#pragma once
#include <cstdlib>
#include <string>
#include <vector>

#include "simd/gemv.h"

namespace rill::test {

inline std::vector<simd::KernelPath> kernel_paths() {
    std::vector<simd::KernelPath> paths = simd::supported_kernel_paths();
    const char* only = std::getenv("RILL_TEST_KERNELS");
    if (only == nullptr || *only == '\0') return paths;
    const std::string list = "," + std::string(only) + ",";
    std::erase_if(paths, [&](simd::KernelPath p) { return list.find("," + std::string(simd::kernel_path_name(p)) + ",") == std::string::npos; });
    return paths;
}

}  // namespace rill::test
