// Search tables for the IQ2 and IQ1 quantizers, whose grid points are 8 values of 3 levels each.
// The quantizers round a group of 8 to levels on their own and then need to know whether that level
// vector is a grid point, and if not, which grid points to try instead. ggml builds these tables at
// init time (iq2xs_init_impl); the quantizers' ties are decided by the order of the candidates, so
// the tables here hold the same entries in the same order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "tensor_type.h"

namespace rill {

// Level vectors are packed 2 bits per element, element 0 lowest. The map covers every packing up
// to all-2s (0xaaaa) plus one, as ggml's does, so it also holds entries for some vectors with a
// level 3 in them, which no quantizer asks for.
inline constexpr size_t kIQ2MapSize = 43692;

struct IQ2SearchTables {
    // Per grid index, 8 bytes (element 0 lowest) on the odd lattice 2 * level + 1, i.e. 1, 3, 5:
    // the quantizers fit scales against these, not against the dequantized values.
    std::span<const uint64_t> grid;
    // Per packed level vector: its grid index when it is a grid point, otherwise -(offset + 1) of
    // its candidate list in `neighbours`.
    std::span<const int32_t> map;
    // Candidate lists back to back, each a count followed by that many grid indices: every grid
    // point in the nearest few distinct squared-distance shells around the vector (3 shells for
    // the IQ1 grid, 1 for IQ2_S, 2 for IQ2_XXS and IQ2_XS), by distance and then index.
    std::span<const uint16_t> neighbours;

    int grid_index(uint16_t packed) const { return map[packed]; }

    // The candidates of an off-grid vector (grid_index(packed) < 0).
    std::span<const uint16_t> neighbours_of(uint16_t packed) const {
        const size_t at = size_t(-(map[packed] + 1));
        return neighbours.subspan(at + 1, neighbours[at]);
    }
};

// The tables for IQ2_XXS (256 points), IQ2_XS (512), IQ2_S (1024), or IQ1_S and IQ1_M (one shared
// 2048-point grid). Built on first use (a fraction of a second for the largest), then immutable and
// shared by all threads. Any other type is a programming error and aborts.
const IQ2SearchTables& iq2_search_tables(TensorType type);

}  // namespace rill
