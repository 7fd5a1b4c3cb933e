// The GEMV kernels built for the NeonDotprod path: NEON with the dot-product extension (ARMv8.2-A
// dotprod: Cortex-A55/A76 on, Apple M1 on, Graviton 2 on), byte products in SDOT.
// Code generation for the extension is switched on for this file's own functions only (a target
// pragma), so inline code it shares with other files never runs on a core without it.
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

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("arch=armv8.2-a+dotprod"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")
#endif

namespace rill::simd::neon_dotprod {
constexpr KernelPath kPath = KernelPath::NeonDotprod;
#define RILL_LANES_DOTPROD 1
#include "lanes_neon.h"
#include "gemv_body.inl"
const GemvKernels& kernels() { return kKernels; }
}  // namespace rill::simd::neon_dotprod

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
