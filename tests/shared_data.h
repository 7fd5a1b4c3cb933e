// Where the reference data in ../shared lives, and small readers for it.
#pragma once
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace rill::test {

inline std::string shared_dir() {
    if (const char* env = std::getenv("RILL_SHARED")) return env;
    return RILL_SHARED_DIR;
}

inline std::string shared_path(const std::string& relative) { return shared_dir() + "/" + relative; }

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline std::vector<float> read_f32(const std::string& path) {
    const std::string bytes = read_text(path);
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
}

inline std::vector<int> parse_ints(const std::string& text) {
    std::vector<int> out;
    std::istringstream in(text);
    for (int x; in >> x;) out.push_back(x);
    return out;
}

}  // namespace rill::test
