#include <stdexcept>

#include "simd/gemm_q8.h"

namespace rill::simd {

namespace avx512 {
void q8_gemm(const uint8_t*, size_t, size_t, float, bool, const uint8_t*, size_t, int, float*, size_t);
void q8_pack(TensorType, const uint8_t* const*, size_t, size_t, uint8_t*);
}

bool q8_gemm_supports(TensorType type) { return type == TensorType::Q4_0 || type == TensorType::Q8_0 || type == TensorType::Q4_K; }

float q8_zero_point(TensorType type) { return type == TensorType::Q4_0 ? 8.0f : type == TensorType::Q8_0 ? 128.0f : 0.0f; }

bool q8_has_mins(TensorType type) { return type == TensorType::Q4_K; }

size_t q8_panel_bytes(size_t n_rows, size_t cols) {
    const size_t blocks = (n_rows + kQ8PanelRows - 1) / kQ8PanelRows;
    return blocks * (cols / 32) * kQ8PanelBlockBytes;
}

void pack_q8_panel(TensorType type, const uint8_t* const* rows, size_t n_rows, size_t cols, uint8_t* out) {
    if (!q8_gemm_supports(type)) throw std::invalid_argument("pack_q8_panel: unsupported type");
#if defined(__x86_64__)
    // The layout is the AVX-512 kernel's own, so is the packer; no other path runs the kernel.
    if (cpu_supports(KernelPath::Avx512)) return avx512::q8_pack(type, rows, n_rows, cols, out);
#endif
    throw std::invalid_argument("pack_q8_panel: the int8 GEMM needs AVX-512 VNNI");
}

Q8GemmFn q8_gemm_kernel(KernelPath path) {
#if defined(__x86_64__)
    if (path == KernelPath::Avx512) return avx512::q8_gemm;
#endif
    (void)path;
    return nullptr;
}

}  // namespace rill::simd
