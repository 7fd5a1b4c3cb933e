// Sampling: greedy is argmax, every truncation behaves as named, and a seed fixes the draw.
#include "catch.h"

#include <set>

#include "runtime/session/sampling.h"

using namespace rill;

namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f, 0.5f};

std::vector<int32_t> draws(SamplingParams p, int n) {
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) out.push_back(s.sample(kLogits));
    return out;
}

std::set<int32_t> distinct(const std::vector<int32_t>& v) { return {v.begin(), v.end()}; }

}  // namespace

TEST_CASE("temperature 0 picks the first of the largest logits", "[sampling]") {
    CHECK(draws({.temperature = 0}, 3) == std::vector<int32_t>{1, 1, 1});
    CHECK(argmax(kLogits) == 1);
}

TEST_CASE("the same seed gives the same tokens and another seed other tokens", "[sampling]") {
    const SamplingParams p{.temperature = 1.5f, .top_k = 0, .top_p = 1, .min_p = 0, .seed = 42};
    CHECK(draws(p, 64) == draws(p, 64));
    SamplingParams q = p;
    q.seed = 43;
    CHECK(draws(p, 64) != draws(q, 64));
    CHECK(distinct(draws(p, 200)).size() == kLogits.size());  // nothing truncated: every token appears
}

TEST_CASE("top-k keeps only the k most likely tokens", "[sampling]") {
    CHECK(distinct(draws({.temperature = 5, .top_k = 2, .top_p = 1, .min_p = 0, .seed = 1}, 200)) == std::set<int32_t>{1, 3});
    CHECK(distinct(draws({.temperature = 5, .top_k = 1, .top_p = 1, .min_p = 0, .seed = 1}, 50)) == std::set<int32_t>{1});
}

TEST_CASE("top-p keeps the smallest set of tokens reaching the probability", "[sampling]") {
    // Probabilities at temperature 1: tokens 1 and 3 hold ~0.33 each, token 2 ~0.12.
    CHECK(distinct(draws({.temperature = 5, .top_k = 0, .top_p = 0.6f, .min_p = 0, .seed = 3}, 200)) == std::set<int32_t>{1, 3});
    CHECK(distinct(draws({.temperature = 5, .top_k = 0, .top_p = 0.8f, .min_p = 0, .seed = 3}, 300)) ==
          std::set<int32_t>{1, 2, 3});
}

TEST_CASE("min-p drops tokens less likely than the fraction of the top one", "[sampling]") {
    // Token 2 has e^-1 ≈ 0.37 of the top probability, token 0 e^-2 ≈ 0.14.
    CHECK(distinct(draws({.temperature = 5, .top_k = 0, .top_p = 1, .min_p = 0.3f, .seed = 5}, 300)) ==
          std::set<int32_t>{1, 2, 3});
}

TEST_CASE("the repetition penalty steers greedy decoding away from recent tokens", "[sampling]") {
    Sampler s({.temperature = 0, .repeat_penalty = 2.0f, .repeat_last_n = 8});
    s.accept(1);
    CHECK(s.sample(kLogits) == 3);  // 3/2 < 3
    s.accept(3);
    CHECK(s.sample(kLogits) == 2);  // both 3s halved to 1.5 < 2
}
