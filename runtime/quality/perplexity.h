// Perplexity in llama-perplexity's way, so that a number here is comparable with one from llama.cpp:
// the same cut of the token stream into chunks, the same positions scored, the same log-softmax.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace rill {

// Chunks of n_ctx tokens (leftovers dropped), each evaluated alone from position 0 with its first token
// replaced by BOS; the logits at positions first = n_ctx/2 .. n_ctx-2 score the token after them, so
// each chunk scores n_ctx - 1 - n_ctx/2 tokens (255 of 512), every one with at least half a context
// before it.
struct ChunkPlan {
    int n_ctx = 0;
    int n_chunk = 0;
    int first = 0;
    int scored_per_chunk() const { return n_ctx - 1 - first; }
};

// Throws Error when the text has fewer than 2 * n_ctx tokens (llama.cpp's minimum) or n_ctx < 4;
// max_chunks < 0 means all.
ChunkPlan plan_chunks(size_t n_tokens, int n_ctx, int max_chunks);

// log p(target) from a row of logits: the float maximum, a double sum of expf(l - max).
double log_prob_of(std::span<const float> logits, int32_t target);

// Sums of a value and its square; mean and the standard error of the mean as llama.cpp reports them.
struct RunningSums {
    double sum = 0, sum2 = 0;
    size_t n = 0;
    void add(double x) {
        sum += x;
        sum2 += x * x;
        ++n;
    }
    double mean() const { return n ? sum / double(n) : 0.0; }
    // sqrt(variance / (n - 1)), 0 below 2 values or when rounding makes the variance negative.
    double uncertainty() const;
};

// exp(mean NLL) and its uncertainty exp(m)·sqrt(var / (n - 1)): llama-perplexity's final estimate.
struct Perplexity {
    double value = 0, uncertainty = 0;
};
Perplexity perplexity_of(const RunningSums& nll);

}  // namespace rill
