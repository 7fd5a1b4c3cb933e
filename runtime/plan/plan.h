// Predictions from a model's budget (budget.h) and the machine's measured rates (machine_profile.h):
// a decode step takes the time its weights need at the decode kernels' measured GB/s, plus the KV cache
// and small vectors at the measured read bandwidth; a prompt takes its matrix FLOPs at the prompt
// path's measured GFLOP/s for each weight type. Nothing is fitted to a model's own benchmark.
#pragma once
#include <string>

#include "runtime/plan/budget.h"
#include "runtime/plan/machine_profile.h"

namespace rill {

struct DecodeEstimate {
    int n_threads = 1;
    int position = 0;
    double seconds = 0;           // per token
    double tokens_per_second = 0;
    uint64_t bytes = 0;           // read per token (budget.h)
    double bandwidth_gbps = 0;    // measured read bandwidth at n_threads
    double ceiling_tps = 0;       // bytes ÷ bandwidth: what perfect streaming would give
    double attention_seconds = 0;  // the part spent on attention over the cached positions
    bool bandwidth_bound = true;  // the kernels reach most of the bandwidth; else their arithmetic limits
};

struct PrefillEstimate {
    int n_threads = 1;
    int n_tokens = 0;
    double seconds = 0;  // the whole prompt: time to first token
    double tokens_per_second = 0;
    double flops = 0;
    double peak_gflops = 0;  // measured f32 multiply-add peak at n_threads
    double achieved_gflops = 0;
};

DecodeEstimate predict_decode(const ModelShape& shape, const MachineProfile& profile, int n_threads, int position,
                              KvTypes kv_types = KvType::F16);
PrefillEstimate predict_prefill(const ModelShape& shape, const MachineProfile& profile, int n_threads, int n_tokens,
                                int n_batch = 512);

// The measured thread count with the best prediction; on a tie (within 2%) the fewer threads, which
// leave cores to the rest of the machine.
DecodeEstimate best_decode(const ModelShape& shape, const MachineProfile& profile, int position, KvTypes kv_types = KvType::F16);
PrefillEstimate best_prefill(const ModelShape& shape, const MachineProfile& profile, int n_tokens, int n_batch = 512);

struct ThreadPlan {
    int decode = 1;
    int prefill = 1;
};
ThreadPlan plan_threads(const ModelShape& shape, const MachineProfile& profile);

}  // namespace rill
