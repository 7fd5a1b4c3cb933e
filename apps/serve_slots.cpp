#include "serve_slots.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "runtime/base/error.h"

namespace rill::serve {
namespace {

constexpr char kMagic[8] = {'R', 'I', 'L', 'L', 'S', 'L', 'O', 'T'};
constexpr uint32_t kVersion = 1;

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
    uint8_t b[4];
    std::memcpy(b, &v, 4);
    out.insert(out.end(), b, b + 4);
}

uint32_t get_u32(const std::vector<uint8_t>& in, size_t at) {
    uint32_t v;
    std::memcpy(&v, &in[at], 4);
    return v;
}

}  // namespace

size_t save_slot_file(const std::string& path, const std::vector<int32_t>& tokens, const Session& session) {
    std::vector<uint8_t> bytes(kMagic, kMagic + 8);
    put_u32(bytes, kVersion);
    put_u32(bytes, uint32_t(tokens.size()));
    for (const int32_t t : tokens) put_u32(bytes, uint32_t(t));
    const std::vector<uint8_t> state = session.save_state();
    bytes.insert(bytes.end(), state.begin(), state.end());
    const std::string temporary = path + ".partial";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        out.flush();
        if (!out) {
            std::remove(temporary.c_str());
            throw Error("cannot write " + temporary);
        }
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
        std::remove(temporary.c_str());
        throw Error("cannot rename " + temporary + " to " + path);
    }
    return bytes.size();
}

std::vector<int32_t> load_slot_file(const std::string& path, Session& session, size_t& bytes_read) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("no slot file " + path);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes_read = bytes.size();
    if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, 8) != 0) throw Error(path + " is not a rill slot file");
    if (get_u32(bytes, 8) != kVersion) throw Error(path + " is a slot file of version " + std::to_string(get_u32(bytes, 8)) + "; this rill reads version 1");
    const uint64_t n = get_u32(bytes, 12);
    if (n > uint64_t(session.n_ctx()) || bytes.size() < 16 + 4 * n)
        throw Error(path + " holds " + std::to_string(n) + " tokens, more than it has bytes for or this slot's context of " +
                    std::to_string(session.n_ctx()));
    std::vector<int32_t> tokens(n);
    for (size_t i = 0; i < n; ++i) {
        tokens[i] = int32_t(get_u32(bytes, 16 + 4 * i));
        if (tokens[i] < 0 || tokens[i] >= session.model().hp.n_vocab) throw Error(path + " holds a token id outside the vocabulary");
    }
    try {
        session.load_state(std::span<const uint8_t>(bytes).subspan(16 + 4 * n));
    } catch (const Error& e) {
        session.reset();
        throw Error(path + ": " + e.what());
    }
    if (size_t(session.position()) != tokens.size()) {
        session.reset();
        throw Error(path + " holds " + std::to_string(tokens.size()) + " tokens but a context of " + std::to_string(session.position()));
    }
    return tokens;
}

}  // namespace rill::serve
