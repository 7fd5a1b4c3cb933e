// The GEMV kernels built for the Sse41 path. Code generation for the instruction set is switched on
// for this file's own functions only (a target pragma, not a -m flag), so inline library code it
// shares with other files is never compiled for a CPU that may lack the instructions.
#include <immintrin.h>

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
#pragma clang attribute push(__attribute__((target("sse4.1,ssse3"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("sse4.1,ssse3")
#endif

namespace rill::simd::sse41 {
constexpr KernelPath kPath = KernelPath::Sse41;

#include "lanes_generic.h"
#include "gemv_body.inl"
const GemvKernels& kernels() { return kKernels; }
}  // namespace rill::simd::sse41

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
