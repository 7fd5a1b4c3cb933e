// Builds the IQ3 search tables. ggml sorts all grid points by (distance, index) for every off-grid
// level vector and keeps the leading shells; since that order is total, finding the shell distances
// first and then collecting each shell's points in index order gives the same lists without a sort.
#include "iq3_neighbours.h"

#include <cstddef>
#include <stdexcept>

#include "iq_grids.h"

namespace rill {
namespace {

constexpr int kLevelVectors = 1 << 12;  // 4 elements × 3 bits

// The lattice value 2l+1 of element e of a packed level vector.
int odd_value(uint16_t levels, int e) { return 2 * ((levels >> (3 * e)) & 7) + 1; }

IQ3Lattice build(const uint16_t* levels, int size, int shells) {
    IQ3Lattice lattice;
    lattice.size = size;
    lattice.levels = levels;
    lattice.points.resize(size_t(size));
    lattice.map.assign(kLevelVectors, -1);
    for (int j = 0; j < size; ++j) {
        for (int e = 0; e < 4; ++e) lattice.points[size_t(j)][size_t(e)] = float(odd_value(levels[j], e));
        lattice.map[levels[j]] = j;
    }

    std::vector<int> dist2(static_cast<size_t>(size));
    std::vector<int> shell_dist(static_cast<size_t>(shells));
    for (int u = 0; u < kLevelVectors; ++u) {
        if (lattice.map[size_t(u)] >= 0) continue;
        for (int j = 0; j < size; ++j) {
            int d2 = 0;
            for (int e = 0; e < 4; ++e) {
                const int diff = odd_value(levels[j], e) - odd_value(uint16_t(u), e);
                d2 += diff * diff;
            }
            dist2[size_t(j)] = d2;
        }
        // The `shells` smallest distinct distances, ascending (fewer if the grid has fewer).
        int found = 0;
        for (int j = 0; j < size; ++j) {
            const int d2 = dist2[size_t(j)];
            int pos = 0;
            while (pos < found && shell_dist[size_t(pos)] < d2) ++pos;
            if (pos < found && shell_dist[size_t(pos)] == d2) continue;
            if (pos == shells) continue;
            if (found < shells) ++found;
            for (int k = found - 1; k > pos; --k) shell_dist[size_t(k)] = shell_dist[size_t(k - 1)];
            shell_dist[size_t(pos)] = d2;
        }
        const size_t start = lattice.neighbours.size();
        lattice.map[size_t(u)] = -int32_t(start) - 1;
        lattice.neighbours.push_back(0);
        for (int s = 0; s < found; ++s)
            for (int j = 0; j < size; ++j)
                if (dist2[size_t(j)] == shell_dist[size_t(s)]) lattice.neighbours.push_back(uint16_t(j));
        lattice.neighbours[start] = uint16_t(lattice.neighbours.size() - start - 1);
    }
    return lattice;
}

}  // namespace

const IQ3Lattice& iq3_lattice(int grid_size) {
    // Two distance shells for the 256-point grid, three for the 512-point one, as ggml keeps. Each
    // table is built only when its format is first quantized.
    if (grid_size == 256) {
        static const IQ3Lattice lattice = build(kIQ3XXSLevels, 256, 2);
        return lattice;
    }
    if (grid_size == 512) {
        static const IQ3Lattice lattice = build(kIQ3SLevels, 512, 3);
        return lattice;
    }
    throw std::invalid_argument("iq3_lattice: grid size must be 256 or 512");
}

}  // namespace rill
