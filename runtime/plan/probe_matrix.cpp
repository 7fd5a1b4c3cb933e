#include "runtime/plan/probe_matrix.h"

#include <cstring>

#include "quant/interleave.h"

namespace rill {

uint64_t splitmix(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void fill_weights(std::vector<uint8_t>& bytes, uint64_t seed) {
    for (size_t i = 0; i < bytes.size(); i += 8) {
        const uint64_t z = (splitmix(seed) & 0x3b3b3b3b3b3b3b3bull) | 0x3030303030303030ull;
        std::memcpy(&bytes[i], &z, std::min<size_t>(8, bytes.size() - i));
    }
}

TestMatrix make_matrix(TensorType type, const std::vector<uint8_t>& bytes, int rows, int cols, size_t offset) {
    TestMatrix m;
    GgufTensor& t = m.tensor;
    t.name = "probe";
    t.type = type;
    t.n_dims = 2;
    t.ne = {uint64_t(cols), uint64_t(rows), 1, 1};
    t.n_elements = uint64_t(cols) * uint64_t(rows);
    t.n_bytes = row_bytes(type, size_t(cols)) * size_t(rows);
    t.data = bytes.data() + offset;
    m.weight.interleaved = can_interleave(type) && rows >= int(kInterleave);
    m.weight.tensor = &m.tensor;
    return m;
}

}  // namespace rill
