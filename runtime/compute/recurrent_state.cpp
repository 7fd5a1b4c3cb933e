#include "runtime/compute/recurrent_state.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace rill {
namespace {

// Floats of one recurrent layer's convolution window and of its matrices, as its block kind keeps
// them: a short convolution (LFM2) only the window over n_embd channels.
std::pair<size_t, size_t> layer_floats(const Hparams& hp) {
    const SsmParams& s = hp.ssm;
    const size_t window = size_t(std::max(0, s.conv_kernel - 1));
    if (hp.family != nullptr && hp.family->short_conv) return {window * size_t(hp.n_embd), 0};
    // Mamba-2: the window over x | B | C, and a state_size row per inner channel.
    if (hp.family != nullptr && hp.family->mamba2)
        return {window * size_t(s.inner_size + 2 * s.n_k_heads * s.state_size), size_t(s.inner_size) * size_t(s.state_size)};
    return {window * size_t(s.conv_dim()), size_t(s.n_v_heads) * size_t(s.state_size) * size_t(s.state_size)};
}

}  // namespace

RecurrentState::RecurrentState(const Hparams& hp) {
    slot.assign(size_t(hp.n_layer), -1);
    int n = 0;
    for (int l = 0; l < hp.n_layer; ++l)
        if (hp.recurrent(l)) slot[size_t(l)] = n++;
    if (n == 0) return;
    std::tie(conv_floats, matrix_floats) = layer_floats(hp);
    conv.assign(conv_floats * size_t(n), 0.0f);
    matrices.assign(matrix_floats * size_t(n), 0.0f);
}

void RecurrentState::clear(int layer) {
    std::fill_n(conv_window(layer), conv_floats, 0.0f);
    std::fill_n(matrix(layer), matrix_floats, 0.0f);
}

uint64_t recurrent_state_bytes(const Hparams& hp) {
    const auto [conv, matrices] = layer_floats(hp);
    return uint64_t(conv + matrices) * sizeof(float) * uint64_t(hp.n_recurrent());
}

}  // namespace rill
