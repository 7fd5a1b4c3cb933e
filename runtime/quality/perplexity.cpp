#include "runtime/quality/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/base/error.h"

namespace rill {

ChunkPlan plan_chunks(size_t n_tokens, int n_ctx, int max_chunks) {
    if (n_ctx < 4) throw Error("perplexity: the context (" + std::to_string(n_ctx) + ") must be at least 4 tokens");
    if (n_tokens < 2 * size_t(n_ctx))
        throw Error("perplexity: the text has " + std::to_string(n_tokens) + " tokens; it needs at least " + std::to_string(2 * n_ctx) +
                    " (two chunks of " + std::to_string(n_ctx) + ")");
    ChunkPlan plan;
    plan.n_ctx = n_ctx;
    plan.n_chunk = int(n_tokens / size_t(n_ctx));
    if (max_chunks >= 0) plan.n_chunk = std::min(plan.n_chunk, max_chunks);
    plan.first = n_ctx / 2;
    return plan;
}

double log_prob_of(std::span<const float> logits, int32_t target) {
    float max = logits[0];
    for (const float l : logits) max = std::max(max, l);
    double sum = 0;
    for (const float l : logits) sum += std::exp(l - max);  // float expf, double sum, as llama.cpp
    return double(logits[size_t(target)] - max) - std::log(sum);
}

double RunningSums::uncertainty() const {
    if (n < 2) return 0.0;
    const double m = mean(), variance = sum2 / double(n) - m * m;
    return variance > 0 ? std::sqrt(variance / double(n - 1)) : 0.0;
}

Perplexity perplexity_of(const RunningSums& nll) {
    const double ppl = std::exp(nll.mean());
    return {ppl, ppl * nll.uncertainty()};
}

}  // namespace rill
