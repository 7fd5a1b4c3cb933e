// The causal depthwise convolution the recurrent blocks share (Gated DeltaNet's, LFM2's short
// convolution, Mamba-2's): each channel's output is its taps over the channel's last `kernel` inputs,
// the earlier ones kept in a window that persists from token to token (RecurrentState).
#pragma once
#include <span>

#include "runtime/compute/attention_decode.h"

namespace rill {

// One token's channels [first, last) of u (`channels` wide), convolved in place with the window
// before them: taps[c·kernel + i] multiplies the i-th oldest of the kernel inputs (ggml_ssm_conv's
// order). The window (kernel − 1 rows of `channels`, oldest first) moves on by the raw input.
void causal_conv_step(float* u, float* window, const float* taps, int channels, int kernel, int first, int last);

// Rows [0, n) of u (rows of `channels`), each at places[t] in its sequence's order, convolved in
// place through their sequences' windows of `layer`; a row at position 0 starts from a zero window.
// Channels are shared among n_threads in fixed blocks (a channel's window is its own), so the result
// does not depend on the thread count.
void causal_conv(float* u, int n, int channels, int kernel, const float* taps, int layer, std::span<const KvPlace> places,
                 int n_threads);

}  // namespace rill
