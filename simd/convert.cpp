#include "convert.h"

#include "gemv.h"
#include "quant/fp16.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define RILL_X86 1
#endif

namespace rill::simd {
namespace {

#ifdef RILL_X86
// F16C's conversion is exact for every half value, subnormals and NaNs included.
__attribute__((target("avx2,f16c"))) void f16_to_f32_f16c(const uint16_t* in, float* out, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
    for (; i < n; ++i) out[i] = f16_to_f32(in[i]);
}
#endif

}  // namespace

void f16_to_f32_row(const uint16_t* in, float* out, size_t n) {
#ifdef RILL_X86
    // The AVX2 path requires F16C too (gemv.cpp's cpu_supports).
    if (cpu_supports(KernelPath::Avx2)) return f16_to_f32_f16c(in, out, n);
#endif
    for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

}  // namespace rill::simd
