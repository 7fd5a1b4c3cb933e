// The GEMV kernels built for the Neon path: NEON alone (every ARMv8-A core), byte products widened in
// SMULL.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "quant/block_layouts.h"
#include "quant/iq_grids.h"
#include "quant/interleave.h"
#include "simd/gemv.h"

namespace rill::simd::neon {
constexpr KernelPath kPath = KernelPath::Neon;
#include "lanes_neon.h"
#include "gemv_body.inl"
const GemvKernels& kernels() { return kKernels; }
}  // namespace rill::simd::neon
