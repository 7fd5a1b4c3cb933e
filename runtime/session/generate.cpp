#include "runtime/session/generate.h"

#include <chrono>

#include "runtime/text/tokenizer.h"

namespace rill {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

GenerationStats generate(Session& session, const Vocab& vocab, std::span<const int32_t> prompt, int n_predict,
                         Sampler& sampler, const TokenCallback& on_token, Constraint* constraint) {
    GenerationStats stats;
    stats.n_prompt = int(prompt.size());
    for (const int32_t t : prompt) sampler.accept(t);

    auto start = std::chrono::steady_clock::now();
    std::span<const float> logits = session.eval(prompt);
    stats.prefill_ms = ms_since(start);

    int32_t previous = prompt.empty() ? -1 : prompt.back();
    Utf8Stream text;
    start = std::chrono::steady_clock::now();
    while (stats.n_generated < n_predict) {
        const int32_t token = constraint ? constraint->sample(sampler, logits) : sampler.sample(logits);
        sampler.accept(token);
        ++stats.n_generated;
        if (vocab.is_end_of_generation(token)) {
            stats.hit_end = true;
            break;
        }
        const bool after_bos = previous == vocab.bos && vocab.bos >= 0;
        if (constraint) constraint->accept(token);
        if (!on_token(token, text.push(token_text(vocab, token, after_bos)))) break;
        previous = token;
        if (constraint && constraint->finished()) {
            stats.hit_end = true;
            break;
        }
        if (stats.n_generated == n_predict) break;
        if (session.position() >= session.n_ctx()) {
            stats.hit_context = true;
            break;
        }
        const int32_t next[1] = {token};
        logits = session.eval(next);
    }
    stats.decode_ms = ms_since(start);
    if (const std::string rest = text.flush(); !rest.empty()) on_token(-1, rest);
    return stats;
}

}  // namespace rill
