// One check several backends' tests share: a prompt's logits must not depend on the thread count.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/model/model.h"
#include "runtime/session/session.h"

namespace rill::test {

// A fixed prompt of n tokens from a 512-token vocabulary.
inline std::vector<int32_t> spread_prompt(int n) {
    std::vector<int32_t> prompt;
    for (int i = 0; i < n; ++i) prompt.push_back(int32_t((i * 37 + 11) % 512));
    return prompt;
}

// Whether the prompt's last logits through this GEMM backend are the same bits at 1 and 2 threads.
inline bool same_logits_at_1_and_2_threads(const Model& model, const std::vector<int32_t>& prompt, GemmBackend backend) {
    Session one(model, SessionOptions{.n_threads = 1, .gemm = backend});
    Session two(model, SessionOptions{.n_threads = 2, .gemm = backend});
    const auto l1 = one.eval(prompt, true);
    const std::vector<float> a(l1.begin(), l1.end());
    const auto l2 = two.eval(prompt, true);
    return a.size() == l2.size() && std::memcmp(a.data(), l2.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace rill::test
