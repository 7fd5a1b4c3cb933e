// The machine's float32 multiply-add peak, measured: independent fused multiply-adds in registers on
// every thread, at the widest vector this CPU has. Prompt processing is compute-bound, so `rill bench`
// sets its FLOP/s against this figure.
#pragma once

namespace rill::simd {

// GFLOP/s (a multiply-add counts as two) with n_threads threads; takes about a quarter of a second.
double measure_peak_gflops(int n_threads);

}  // namespace rill::simd
