// The OpenBLAS backend: one sgemm per panel. Debian's OpenMP build of OpenBLAS sees that it is called
// inside a parallel region and runs on the calling thread, so it never oversubscribes the cores.
#include <cblas.h>

#include "runtime/compute/gemm.h"

namespace rill {

void openblas_gemm(const GemmShape& s, const float* a, const float* b, float* c) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.m, s.n, s.k, 1.0f, a, s.row_a(), b, s.row_b(), 0.0f, c, s.row_c());
}

std::string openblas_version() { return openblas_get_config(); }

}  // namespace rill
