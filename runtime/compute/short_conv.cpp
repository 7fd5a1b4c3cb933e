#include "runtime/compute/short_conv.h"

#include "runtime/compute/causal_conv.h"

namespace rill {

void short_conv(const Hparams& hp, const LayerWeights& L, int layer, const float* xn, int n, std::span<const KvPlace> places,
                float* out, MatmulScratch& mm, ShortConvScratch& s) {
    const size_t E = size_t(hp.n_embd), rows = size_t(n);
    s.bcx.resize(rows * 3 * E);
    s.u.resize(rows * E);
    matmul(L.ssm_in, xn, s.bcx.data(), n, mm);
    for (size_t t = 0; t < rows; ++t) {
        const float* b = &s.bcx[t * 3 * E];
        const float* v = b + 2 * E;
        float* u = &s.u[t * E];
        for (size_t i = 0; i < E; ++i) u[i] = b[i] * v[i];
    }
    causal_conv(s.u.data(), n, int(E), hp.ssm.conv_kernel, reinterpret_cast<const float*>(L.ssm_conv.tensor->data), layer, places,
                mm.n_threads);
    for (size_t t = 0; t < rows; ++t) {
        const float* c = &s.bcx[t * 3 * E] + E;
        float* y = &s.u[t * E];
        for (size_t i = 0; i < E; ++i) y[i] *= c[i];
    }
    matmul(L.ssm_out, s.u.data(), out, n, mm);
}

}  // namespace rill
