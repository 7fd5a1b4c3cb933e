// Builds the IQ2/IQ1 search tables. ggml sorts the whole grid by distance for every off-grid level
// vector (about 14 s for the 2048-point grid); the lists only need the nearest few distance shells
// in (distance, index) order, so here each vector's distances are counted into a histogram and the
// grid is scanned once more to drop each point into its shell's slot. Same lists, far less work.
#include "iq_neighbours.h"

#include <array>
#include <stdexcept>
#include <vector>

#include "iq_grids.h"

namespace rill {
namespace {

// Squared distances between level vectors are sums over elements of (a - b)^2; ggml measures on the
// odd lattice 2 * level + 1, which multiplies every distance by 4 and so orders them the same.
// Four elements' levels fit in a byte, so the distance between two level vectors is the sum of two
// lookups in a 256 x 256 table of 4-element distances. At most 8 * 3^2 = 72.
constexpr int kMaxDistance = 72;

std::vector<uint8_t> half_distances() {
    std::vector<uint8_t> table(256 * 256);
    for (int a = 0; a < 256; ++a) {
        for (int b = 0; b < 256; ++b) {
            int sum = 0;
            for (int k = 0; k < 4; ++k) {
                const int diff = ((a >> 2 * k) & 3) - ((b >> 2 * k) & 3);
                sum += diff * diff;
            }
            table[size_t(a * 256 + b)] = uint8_t(sum);
        }
    }
    return table;
}

struct OwnedTables {
    std::vector<uint64_t> grid;
    std::vector<int32_t> map;
    std::vector<uint16_t> neighbours;
    IQ2SearchTables view;
};

OwnedTables build(std::span<const uint16_t> levels, int shells_wanted) {
    OwnedTables t;
    const size_t n = levels.size();

    t.grid.resize(n);
    for (size_t g = 0; g < n; ++g) {
        uint64_t bytes = 0;
        for (int k = 0; k < 8; ++k) bytes |= uint64_t(2 * ((levels[g] >> 2 * k) & 3) + 1) << (8 * k);
        t.grid[g] = bytes;
    }

    t.map.assign(kIQ2MapSize, -1);
    for (size_t g = 0; g < n; ++g) t.map[levels[g]] = int32_t(g);

    const std::vector<uint8_t> halves = half_distances();
    std::vector<uint8_t> low(n), high(n), dist(n);
    for (size_t g = 0; g < n; ++g) {
        low[g] = uint8_t(levels[g] & 0xff);
        high[g] = uint8_t(levels[g] >> 8);
    }

    // Lists are laid out in increasing order of the packed vector, as ggml's prefix sum does.
    t.neighbours.reserve(kIQ2MapSize * 16);
    for (size_t v = 0; v < kIQ2MapSize; ++v) {
        if (t.map[v] >= 0) continue;
        const uint8_t* row_low = &halves[(v & 0xff) * 256];
        const uint8_t* row_high = &halves[(v >> 8) * 256];
        std::array<uint32_t, kMaxDistance + 1> count{};
        for (size_t g = 0; g < n; ++g) {
            const uint8_t d = uint8_t(row_low[low[g]] + row_high[high[g]]);
            dist[g] = d;
            ++count[d];
        }
        // The first `shells_wanted` occupied distances; each gets a slot range in list order.
        std::array<int32_t, kMaxDistance + 1> slot;
        slot.fill(-1);
        uint32_t total = 0;
        int shells = 0;
        for (int d = 0; d <= kMaxDistance && shells < shells_wanted; ++d) {
            if (count[size_t(d)] == 0) continue;
            slot[size_t(d)] = int32_t(total);
            total += count[size_t(d)];
            ++shells;
        }
        const size_t at = t.neighbours.size();
        t.map[v] = -int32_t(at) - 1;
        t.neighbours.resize(at + 1 + total);
        t.neighbours[at] = uint16_t(total);
        uint16_t* list = t.neighbours.data() + at + 1;
        for (size_t g = 0; g < n; ++g) {
            const int32_t s = slot[dist[g]];
            if (s < 0) continue;
            list[s] = uint16_t(g);
            ++slot[dist[g]];
        }
    }
    t.neighbours.shrink_to_fit();
    t.view = IQ2SearchTables{t.grid, t.map, t.neighbours};
    return t;
}

}  // namespace

const IQ2SearchTables& iq2_search_tables(TensorType type) {
    // Each grid's tables are built the first time a quantizer of its type runs.
    switch (type) {
        case TensorType::IQ2_XXS: {
            static const OwnedTables tables = build(kIQ2XXSLevels, 2);
            return tables.view;
        }
        case TensorType::IQ2_XS: {
            static const OwnedTables tables = build(kIQ2XSLevels, 2);
            return tables.view;
        }
        case TensorType::IQ2_S: {
            static const OwnedTables tables = build(kIQ2SLevels, 1);
            return tables.view;
        }
        case TensorType::IQ1_S:
        case TensorType::IQ1_M: {
            static const OwnedTables tables = build(kIQ1SLevels, 3);
            return tables.view;
        }
        default:
            throw std::invalid_argument("iq2_search_tables: not an IQ2/IQ1 type");
    }
}

}  // namespace rill
