// The GEMV kernels built for the NeonI8mm path: NEON with the int8 matrix extension (ARMv8.6-A i8mm:
// Graviton 3, Neoverse V1/N2, Apple M2 on, Snapdragon X), unsigned-by-signed byte products in USDOT as
// x86 forms them.
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
#pragma clang attribute push(__attribute__((target("arch=armv8.2-a+dotprod+i8mm"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod+i8mm")
#endif

namespace rill::simd::neon_i8mm {
constexpr KernelPath kPath = KernelPath::NeonI8mm;
#define RILL_LANES_I8MM 1
#include "lanes_neon.h"
#include "gemv_body.inl"
const GemvKernels& kernels() { return kKernels; }
}  // namespace rill::simd::neon_i8mm

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
