// Comparing with what llama.cpp wrote (scripts/ggml_reference.sh): tensor bytes by hash, log-probs by
// their largest difference.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rill::test {

// FNV-1a 64 as hex, as the reference tool's tensor-hashes writes it.
inline std::string fnv1a64(const uint8_t* p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
    return text;
}

// Largest |a − b| over the tokens where llama.cpp's probability did not underflow (null there).
inline double logprob_distance(const std::vector<double>& ours, const nlohmann::json& llama) {
    double worst = 0;
    for (size_t i = 0; i < ours.size(); ++i)
        if (!llama[i].is_null()) worst = std::max(worst, std::abs(ours[i] - llama[i].get<double>()));
    return worst;
}

}  // namespace rill::test
