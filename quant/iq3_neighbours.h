// The search tables behind the IQ3_XXS and IQ3_S quantizers. A quantizer rounds each value of a
// 4-value group to a level 0..7 on the odd lattice 2l+1; the group's level vector (3 bits per
// element, element 0 lowest: the same packing as kIQ3XXSLevels / kIQ3SLevels) is either a grid point
// or not. If not, the quantizer tries the grid points in the few nearest distance shells around it.
// ggml builds these tables at init (iq3xs_init_impl); the quantizers' tie-breaking depends on the
// order of every candidate list, so ours hold the same entries in the same order.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace rill {

struct IQ3Lattice {
    int size = 0;                      // grid points: 256 (IQ3_XXS) or 512 (IQ3_S)
    const uint16_t* levels = nullptr;  // kIQ3XXSLevels or kIQ3SLevels: each point's packed levels
    // Per grid point, its four lattice values 2l+1 as floats (what the neighbour search scales).
    std::vector<std::array<float, 4>> points;
    // Per level vector (4096 of them): the grid index if it is a grid point, otherwise -(o + 1) where o
    // is the offset of its candidate list in `neighbours` (ggml's kmap encoding).
    std::vector<int32_t> map;
    // Candidate lists, each [count, index...], the indices ordered by (squared distance, index) and
    // covering every grid point in the nearest 2 (IQ3_XXS) or 3 (IQ3_S) distinct distances.
    std::vector<uint16_t> neighbours;

    // The candidate list of an off-grid level vector u (map[u] < 0): its count, then the indices.
    const uint16_t* candidates(uint16_t u) const { return neighbours.data() + (-map[u] - 1); }
};

// The tables for grid size 256 or 512, built on first use (a few milliseconds) and then shared.
const IQ3Lattice& iq3_lattice(int grid_size);

}  // namespace rill
