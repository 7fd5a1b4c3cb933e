// One interface for the prompt's matrix products: C = A · Bᵀ on float32, where A is a batch of
// activations and B a panel of weight rows dequantized into scratch. Each backend lives in its own
// file (gemm_onednn.cpp, gemm_openblas.cpp); the native backend is the decode kernels themselves,
// run over the batch without dequantizing (matmul.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace rill {

// Auto chooses per weight type and batch size from measurements (matmul.cpp's choose_gemm).
// OnednnBf16 rounds activations and dequantized weights to bfloat16 and multiplies them with oneDNN,
// accumulating in float32: twice the float32 rate on AVX-512 BF16, more with AMX.
// Int8 repacks Q4_0, Q8_0 and Q4_K panels to bytes and multiplies them against 8-bit activations with VNNI's
// integer dot products (simd/gemm_q8.h); other types go to the native kernels.
enum class GemmBackend { Auto, Native, Onednn, Openblas, OnednnBf16, Int8, Amx };
inline constexpr int kGemmBackendCount = 7;

std::string_view gemm_backend_name(GemmBackend backend);
// "auto", "native", "onednn", "openblas", "onednn-bf16", "int8" or "amx"; throws rill::Error naming the choices on anything else.
GemmBackend parse_gemm_backend(std::string_view name);

// c[i][j] = sum over p of a[i][p] * b[j][p], for i < m, j < n, p < k. a is m rows of k floats,
// b is n rows of k floats; rows of a, b and c are lda, ldb and ldc floats apart (0: k, k and n).
// Runs on the calling thread alone when called inside a parallel region whose task has set
// omp_set_num_threads(1), so a team of threads can each multiply its own panel, and a panel's result
// never depends on the team's size.
struct GemmShape {
    int m = 0, n = 0, k = 0, ldc = 0;
    int lda = 0, ldb = 0;
    int row_a() const { return lda > 0 ? lda : k; }
    int row_b() const { return ldb > 0 ? ldb : k; }
    int row_c() const { return ldc > 0 ? ldc : n; }
};

void openblas_gemm(const GemmShape& shape, const float* a, const float* b, float* c);
// The libraries' versions (OpenBLAS's whole configuration line), for calibration caches that must
// notice an upgrade.
std::string openblas_version();
std::string onednn_version();

// oneDNN needs an engine and a primitive per shape. They are created on first use and kept, one set
// per thread, so no lock is taken and each primitive stays on the thread that made it.
struct OnednnGemm;
struct OnednnGemmDeleter {
    void operator()(OnednnGemm* p) const;
};
using OnednnGemmPtr = std::unique_ptr<OnednnGemm, OnednnGemmDeleter>;

OnednnGemmPtr make_onednn_gemm(int n_threads);
void onednn_gemm(OnednnGemm& state, int thread, const GemmShape& shape, const float* a, const float* b, float* c);
// The same with a and b in bfloat16 (lda and ldb count bfloat16 values); c stays float32. Throws
// rill::Error where oneDNN has no bf16 matmul for the CPU.
void onednn_gemm_bf16(OnednnGemm& state, int thread, const GemmShape& shape, const uint16_t* a, const uint16_t* b, float* c);
// Whether oneDNN has a bf16 matmul here that is not its reference loop: not on CPUs without AVX-512
// (oneDNN 2.6), nor where ONEDNN_MAX_CPU_ISA holds it below AVX-512.
bool onednn_has_bf16(OnednnGemm& state);
// oneDNN's name for the implementation it picked for this shape (e.g. "brg:avx512_core_bf16").
std::string onednn_kernel_name(OnednnGemm& state, int thread, const GemmShape& shape, bool bf16);

}  // namespace rill
