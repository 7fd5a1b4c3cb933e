// Choosing the next token from logits: greedy, or a seeded draw after penalties and truncations.
#pragma once
#include <cstdint>
#include <deque>
#include <random>
#include <utility>
#include <span>
#include <vector>

namespace rill {

struct SamplingParams {
    float temperature = 0.8f;  // 0 or less: greedy (argmax)
    int top_k = 40;            // 0: off
    float top_p = 0.95f;       // 1: off
    float min_p = 0.05f;       // 0: off; drops tokens below min_p × the top probability
    float repeat_penalty = 1.0f;  // 1: off; divides positive (multiplies negative) logits of recent tokens
    int repeat_last_n = 64;       // how many recent tokens the penalties look at
    // OpenAI's penalties: a recent token's logit loses presence_penalty once, plus frequency_penalty
    // for each time it occurs. 0: off.
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    uint64_t seed = 0;
};

class Sampler {
public:
    explicit Sampler(const SamplingParams& params);
    // Picks a token; `logits` is not modified.
    int32_t sample(std::span<const float> logits);
    // Records a token (prompt or generated) for the repetition penalty.
    void accept(int32_t token);

private:
    struct Candidate {
        int32_t id;
        float logit;
        float p;
    };
    float uniform();  // in [0, 1)

    SamplingParams params_;
    std::mt19937_64 rng_;
    std::deque<int32_t> recent_;
    std::vector<Candidate> candidates_;
};

int32_t argmax(std::span<const float> logits);

// A token's log-probability under the model (log-softmax of the raw logits, before any penalty,
// temperature or grammar), and the `top_n` most likely tokens' with theirs, most likely first.
struct TokenLogprob {
    int32_t token = -1;
    float logprob = 0;
    std::vector<std::pair<int32_t, float>> top;
};
TokenLogprob token_logprob(std::span<const float> logits, int32_t token, int top_n);

}  // namespace rill
