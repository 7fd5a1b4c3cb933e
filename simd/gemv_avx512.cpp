// The GEMV kernels built for the Avx512 path. Code generation for the instruction set is switched on
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

// GCC 12's 512-bit casts and conversions pass an undefined vector as an unused source and warn that
// it is uninitialized wherever they are inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,bmi2,avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi2,avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16")
#endif

namespace rill::simd::avx512 {
constexpr KernelPath kPath = KernelPath::Avx512;
#define RILL_LANES_VNNI 1
#define RILL_LANES_AVX512 1  // 512-bit forms of the kernels that gain from them (Q8_0, Q4_K, Q6_K and MXFP4 groups, F16/BF16 rows)
#include "lanes_avx2.h"
#include "gemv_body.inl"
const GemvKernels& kernels() { return kKernels; }
}  // namespace rill::simd::avx512

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
