#include "runtime/compute/causal_conv.h"

#include <algorithm>

#include "runtime/compute/matmul.h"

namespace rill {

void causal_conv_step(float* u, float* window, const float* taps, int channels, int kernel, int first, int last) {
    for (int ch = first; ch < last; ++ch) {
        const float* w = taps + size_t(ch) * size_t(kernel);
        float acc = 0;
        for (int i = 0; i < kernel - 1; ++i) acc += window[size_t(i) * size_t(channels) + size_t(ch)] * w[i];
        acc += u[ch] * w[kernel - 1];
        for (int i = 0; i + 1 < kernel - 1; ++i) window[size_t(i) * size_t(channels) + size_t(ch)] = window[size_t(i + 1) * size_t(channels) + size_t(ch)];
        if (kernel > 1) window[size_t(kernel - 2) * size_t(channels) + size_t(ch)] = u[ch];
        u[ch] = acc;
    }
}

void causal_conv(float* u, int n, int channels, int kernel, const float* taps, int layer, std::span<const KvPlace> places,
                 int n_threads) {
    for (int t = 0; t < n; ++t)
        if (places[size_t(t)].pos == 0) places[size_t(t)].recurrent->clear(layer);
    const bool parallel = n_threads > 1 && size_t(n) * size_t(channels) * size_t(kernel) >= kMinParallelWork;
    constexpr int kChannelBlock = 256;
#pragma omp parallel for num_threads(n_threads) schedule(static) if (parallel)
    for (int first = 0; first < channels; first += kChannelBlock)
        for (int t = 0; t < n; ++t)
            causal_conv_step(u + size_t(t) * size_t(channels), places[size_t(t)].recurrent->conv_window(layer), taps, channels, kernel,
                             first, std::min(channels, first + kChannelBlock));
}

}  // namespace rill
