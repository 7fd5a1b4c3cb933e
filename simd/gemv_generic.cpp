// The GEMV kernels in portable C++: the path for any CPU, and the reference the vector paths
// are tested against.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "quant/block_layouts.h"
#include "quant/iq_grids.h"
#include "quant/interleave.h"
#include "simd/gemv.h"

namespace rill::simd::generic {
constexpr KernelPath kPath = KernelPath::Generic;
#include "lanes_generic.h"
#include "gemv_body.inl"
const GemvKernels& kernels() { return kKernels; }
}  // namespace rill::simd::generic
