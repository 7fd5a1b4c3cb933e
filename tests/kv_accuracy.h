// How far a KV cache type moves a model's next-token log-probs: the largest |Δ log-prob| over the
// vocabulary after a 200-token prompt, against the same model, kernel path and prompt with an F16
// cache. Shared by the accuracy test and tools/kv_accuracy (which prints the README's table).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "numeric.h"
#include "runtime/session/session.h"

namespace rill::test {

inline constexpr int kKvAccuracyPromptLength = 200;

// The golden prompt (24 ids, BOS first) extended to 200 tokens by a fixed pattern that does not depend
// on any model or kernel path: token i = 1 + (37 i + 11) mod (n_vocab - 1).
inline std::vector<int32_t> kv_accuracy_prompt(std::vector<int32_t> golden, int n_vocab) {
    for (int i = int(golden.size()); i < kKvAccuracyPromptLength; ++i) golden.push_back(int32_t(1 + (37 * i + 11) % (n_vocab - 1)));
    return golden;
}

// The golden prompt extended to 200 tokens by the model's own greedy choices, made on the exact path
// (reference kernels, F32 cache) so the prompt is the same whichever path is measured afterwards.
inline std::vector<int32_t> kv_accuracy_prompt_greedy(const Model& model, std::vector<int32_t> golden) {
    Session session(model, SessionOptions{.n_ctx = 256, .n_threads = 2, .kv_types = KvType::F32, .kernels = simd::KernelPath::Reference});
    std::span<const float> logits = session.eval(golden);
    while (int(golden.size()) < kKvAccuracyPromptLength) {
        golden.push_back(int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()));
        logits = session.eval(std::span<const int32_t>(&golden.back(), 1));
    }
    return golden;
}

// The last token's log-probs. token_by_token: every token a decode step (the decode kernels read the
// cache); otherwise the prompt is one batch (batch attention dequantizes the cache). The batch's
// products are float32 (OpenBLAS): the bf16 backend's rounding would be measured with the cache's.
inline std::vector<double> kv_logprobs(const Model& model, KvTypes types, simd::KernelPath path, std::span<const int32_t> prompt,
                                       bool token_by_token) {
    Session session(model, SessionOptions{.n_ctx = 256, .n_threads = 2, .kv_types = types, .kernels = path, .gemm = GemmBackend::Openblas});
    std::span<const float> logits;
    if (token_by_token)
        for (const int32_t& t : prompt) logits = session.eval(std::span<const int32_t>(&t, 1));
    else
        logits = session.eval(prompt);
    return log_softmax(logits);
}

inline double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

}  // namespace rill::test
