#include "runtime/session/sampling.h"

#include <algorithm>
#include <cmath>

namespace rill {

int32_t argmax(std::span<const float> logits) {
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TokenLogprob token_logprob(std::span<const float> logits, int32_t token, int top_n) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (const float l : logits) sum += std::exp(double(l) - max);
    const double log_z = max + std::log(sum);
    TokenLogprob out;
    out.token = token;
    out.logprob = float(double(logits[size_t(token)]) - log_z);
    const size_t n = std::min(size_t(std::max(top_n, 0)), logits.size());
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    std::partial_sort(ids.begin(), ids.begin() + ptrdiff_t(n), ids.end(), [&](int32_t a, int32_t b) {
        return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
    });
    for (size_t i = 0; i < n; ++i) out.top.emplace_back(ids[i], float(double(logits[size_t(ids[i])]) - log_z));
    return out;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

void Sampler::accept(int32_t token) {
    if (params_.repeat_last_n <= 0) return;
    recent_.push_back(token);
    if (recent_.size() > size_t(params_.repeat_last_n)) recent_.pop_front();
}

float Sampler::uniform() { return float(rng_() >> 40) * 0x1.0p-24f; }

int32_t Sampler::sample(std::span<const float> logits) {
    candidates_.clear();
    for (size_t i = 0; i < logits.size(); ++i) candidates_.push_back({int32_t(i), logits[i], 0.0f});

    if (params_.repeat_penalty != 1.0f || params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) {
        std::vector<int32_t> seen(recent_.begin(), recent_.end());
        std::sort(seen.begin(), seen.end());
        for (size_t i = 0; i < seen.size();) {
            const int32_t id = seen[i];
            size_t count = 0;
            for (; i < seen.size() && seen[i] == id; ++i) ++count;
            if (id < 0 || size_t(id) >= candidates_.size()) continue;
            float& l = candidates_[size_t(id)].logit;
            if (params_.repeat_penalty != 1.0f) l = l > 0 ? l / params_.repeat_penalty : l * params_.repeat_penalty;
            l -= params_.presence_penalty + float(count) * params_.frequency_penalty;
        }
    }
    // Greedy: the first of the largest logits (ties go to the lower id).
    if (params_.temperature <= 0.0f) {
        return std::max_element(candidates_.begin(), candidates_.end(),
                                [](const Candidate& a, const Candidate& b) { return a.logit < b.logit; })->id;
    }

    // Sort by logit, ties by id, so every truncation below is deterministic.
    auto by_logit = [](const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); };
    size_t n = candidates_.size();
    if (params_.top_k > 0 && size_t(params_.top_k) < n) {
        std::partial_sort(candidates_.begin(), candidates_.begin() + params_.top_k, candidates_.end(), by_logit);
        n = size_t(params_.top_k);
    } else {
        std::sort(candidates_.begin(), candidates_.end(), by_logit);
    }

    auto normalise = [&](float temperature) {
        const float max = candidates_[0].logit;
        double sum = 0;
        for (size_t i = 0; i < n; ++i) {
            candidates_[i].p = std::exp((candidates_[i].logit - max) / temperature);
            sum += candidates_[i].p;
        }
        for (size_t i = 0; i < n; ++i) candidates_[i].p = float(candidates_[i].p / sum);
    };
    normalise(1.0f);
    if (params_.top_p < 1.0f) {
        double cumulative = 0;
        size_t keep = n;
        for (size_t i = 0; i < n; ++i) {
            cumulative += candidates_[i].p;
            if (cumulative >= params_.top_p) {
                keep = i + 1;
                break;
            }
        }
        n = keep;
    }
    if (params_.min_p > 0.0f) {
        const float threshold = candidates_[0].p * params_.min_p;
        size_t keep = 1;
        while (keep < n && candidates_[keep].p >= threshold) ++keep;
        n = keep;
    }
    normalise(params_.temperature);

    const float r = uniform();
    double cumulative = 0;
    for (size_t i = 0; i < n; ++i) {
        cumulative += candidates_[i].p;
        if (r < cumulative) return candidates_[i].id;
    }
    return candidates_[n - 1].id;
}

}  // namespace rill
