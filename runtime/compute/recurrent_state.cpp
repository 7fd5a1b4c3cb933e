#include "runtime/compute/recurrent_state.h"

#include <algorithm>

namespace rill {

RecurrentState::RecurrentState(const Hparams& hp) {
    const SsmParams& s = hp.ssm;
    slot.assign(size_t(hp.n_layer), -1);
    int n = 0;
    for (int l = 0; l < hp.n_layer; ++l)
        if (hp.recurrent(l)) slot[size_t(l)] = n++;
    if (n == 0) return;
    conv_floats = size_t(s.conv_kernel - 1) * size_t(s.conv_dim());
    matrix_floats = size_t(s.n_v_heads) * size_t(s.state_size) * size_t(s.state_size);
    conv.assign(conv_floats * size_t(n), 0.0f);
    matrices.assign(matrix_floats * size_t(n), 0.0f);
}

void RecurrentState::clear(int layer) {
    std::fill_n(conv_window(layer), conv_floats, 0.0f);
    std::fill_n(matrix(layer), matrix_floats, 0.0f);
}

uint64_t recurrent_state_bytes(const Hparams& hp) {
    const SsmParams& s = hp.ssm;
    const uint64_t per_layer = (uint64_t(s.conv_kernel > 0 ? s.conv_kernel - 1 : 0) * uint64_t(s.conv_dim()) +
                                uint64_t(s.n_v_heads) * uint64_t(s.state_size) * uint64_t(s.state_size)) * sizeof(float);
    return per_layer * uint64_t(hp.n_recurrent());
}

}  // namespace rill
