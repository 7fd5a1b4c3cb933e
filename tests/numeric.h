// Numeric helpers the tests share: seeded random inputs and log-probabilities from logits.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace rill::test {

inline std::vector<float> copy_of(std::span<const float> v) { return {v.begin(), v.end()}; }

// The largest |a[i] − b[i]|; infinity when the lengths differ.
inline double max_abs_difference(std::span<const float> a, std::span<const float> b) {
    if (a.size() != b.size()) return INFINITY;
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
    return worst;
}

// How many elements differ in any bit; every one when the lengths differ.
inline size_t bits_differing(std::span<const float> a, std::span<const float> b) {
    if (a.size() != b.size()) return std::max(a.size(), b.size());
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]);
    return n;
}

// n draws from N(0, 1), the same for the same seed.
inline std::vector<float> normal_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
}

// How many products out[t * rows + r] of weight rows w (rows × cols) and inputs x (tokens × cols)
// are farther from the exact sum than `share` of the sum of the terms' magnitudes.
inline size_t products_off(std::span<const float> w, std::span<const float> x, std::span<const float> out, size_t rows,
                           size_t cols, double share) {
    const size_t tokens = x.size() / cols;
    size_t off = 0;
    for (size_t tok = 0; tok < tokens; ++tok)
        for (size_t r = 0; r < rows; ++r) {
            double exact = 0, magnitude = 0;
            for (size_t i = 0; i < cols; ++i) {
                const double p = double(w[r * cols + i]) * double(x[tok * cols + i]);
                exact += p;
                magnitude += std::abs(p);
            }
            off += !(std::abs(out[tok * rows + r] - exact) <= share * magnitude);
        }
    return off;
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

// The largest |Δ log-prob| between the logits' log-softmax and reference log-probs of the same size
// (infinite when the sizes differ).
inline double max_logprob_distance(std::span<const float> logits, const std::vector<double>& reference) {
    const std::vector<double> ours = log_softmax(logits);
    if (ours.size() != reference.size()) return INFINITY;
    double worst = 0;
    for (size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, std::abs(ours[i] - reference[i]));
    return worst;
}

}  // namespace rill::test
