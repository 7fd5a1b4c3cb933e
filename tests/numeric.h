// Numeric helpers the tests share: seeded random inputs and log-probabilities from logits.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace rill::test {

// n draws from N(0, 1), the same for the same seed.
inline std::vector<float> normal_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
}

// log-softmax in double, as the golden references are written.
inline std::vector<double> log_softmax(std::span<const float> logits) {
    double max = logits[0];
    for (const float x : logits) max = std::max<double>(max, x);
    double sum = 0;
    for (const float x : logits) sum += std::exp(double(x) - max);
    const double log_sum = max + std::log(sum);
    std::vector<double> out;
    for (const float x : logits) out.push_back(double(x) - log_sum);
    return out;
}

}  // namespace rill::test
