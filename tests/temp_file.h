// A file name in the temporary directory that no other test process uses: ctest runs each case as its
// own process, in parallel, so a fixed name lets one case delete or rewrite another's file mid-read.
#pragma once
#include <filesystem>
#include <string>
#include <unistd.h>

namespace rill::test {

inline std::string temp_file(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("rill-" + std::to_string(::getpid()) + "-" + name)).string();
}

}  // namespace rill::test
