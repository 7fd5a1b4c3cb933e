// What a sequence carries from one token to the next in its recurrent layers, beside the KV cache of
// its attention layers: per Gated DeltaNet layer the convolution's window (the last conv_kernel − 1
// raw inputs of every channel, oldest first) and one state_size × state_size matrix per value head,
// in F32 as llama.cpp keeps them. Sized from the architecture description; other recurrent blocks
// (short convolutions, Mamba-2) add their parts here.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/model/architecture.h"

namespace rill {

struct RecurrentState {
    std::vector<int> slot;          // per layer: its index among the recurrent layers, or -1
    size_t conv_floats = 0;         // per recurrent layer
    size_t matrix_floats = 0;       // per recurrent layer: n_v_heads matrices of state_size rows, one per key index
    std::vector<float> conv, matrices;

    RecurrentState() = default;
    explicit RecurrentState(const Hparams& hp);

    bool empty() const { return conv.empty() && matrices.empty(); }
    float* conv_window(int layer) { return conv.data() + size_t(slot[size_t(layer)]) * conv_floats; }
    float* matrix(int layer) { return matrices.data() + size_t(slot[size_t(layer)]) * matrix_floats; }
    // A new sequence's state for one layer: zeros.
    void clear(int layer);
    uint64_t bytes() const { return uint64_t(conv.size() + matrices.size()) * sizeof(float); }
};

// Bytes of one sequence's recurrent state for this model (0 for one without recurrent layers).
uint64_t recurrent_state_bytes(const Hparams& hp);

}  // namespace rill
