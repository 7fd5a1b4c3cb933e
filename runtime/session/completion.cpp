#include "runtime/session/completion.h"

#include <algorithm>

#include "runtime/base/error.h"

namespace rill {

const char* finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::Stop: return "stop";
        case FinishReason::Length: return "length";
        case FinishReason::Cancelled: return "cancelled";
        case FinishReason::None: break;
    }
    return "none";
}

size_t stop_prefix_length(std::string_view text, const std::vector<std::string>& stops) {
    size_t hold = 0;
    for (const std::string& stop : stops) {
        if (stop.empty()) continue;
        for (size_t n = std::min(stop.size() - 1, text.size()); n > hold; --n)
            if (text.substr(text.size() - n) == std::string_view(stop).substr(0, n)) {
                hold = n;
                break;
            }
    }
    return hold;
}

Completion::Completion(const Vocab& vocab, CompletionSettings settings, std::span<const int32_t> prompt)
    : vocab_(vocab), settings_(std::move(settings)), sampler_(settings_.sampling), previous_(prompt.empty() ? -1 : prompt.back()) {
    std::erase_if(settings_.stops, [](const std::string& s) { return s.empty(); });
    for (const int32_t t : prompt) sampler_.accept(t);
    if (settings_.max_tokens <= 0) reason_ = FinishReason::Length;
    if (settings_.grammar) {
        if (!settings_.token_trie) settings_.token_trie = build_vocab_trie(vocab_);
        constraint_.emplace(vocab_, settings_.grammar, settings_.token_trie);
    }
}

int32_t Completion::step(std::span<const float> logits, std::string& text) {
    if (done()) return -1;
    int32_t token;
    try {
        token = constraint_ ? constraint_->sample(sampler_, logits) : sampler_.sample(logits);
    } catch (const Error& e) {
        error_ = e.what();
        finish(FinishReason::Stop, text);
        return -1;
    }
    sampler_.accept(token);
    ++generated_;
    if (!settings_.ignore_eos && vocab_.is_end_of_generation(token)) {
        finish(FinishReason::Stop, text);
        return -1;
    }
    const bool after_bos = previous_ == vocab_.bos && vocab_.bos >= 0;
    previous_ = token;
    if (settings_.top_logprobs >= 0) logprobs_.push_back(token_logprob(logits, token, settings_.top_logprobs));
    if (constraint_) constraint_->accept(token);
    pending_ += utf8_.push(token_text(vocab_, token, after_bos));
    size_t first_stop = std::string::npos;
    for (const std::string& stop : settings_.stops) first_stop = std::min(first_stop, pending_.find(stop));
    if (first_stop != std::string::npos) {
        text.append(pending_, 0, first_stop);
        pending_.clear();
        reason_ = FinishReason::Stop;
        unevaluated_ = token;
        return -1;
    }
    const size_t showable = pending_.size() - stop_prefix_length(pending_, settings_.stops);
    text.append(pending_, 0, showable);
    pending_.erase(0, showable);
    // A grammar that allows nothing more has ended the text: that is a stop, like an end-of-turn token.
    const bool complete = constraint_ && constraint_->finished();
    if (complete || generated_ >= settings_.max_tokens) {
        finish(complete ? FinishReason::Stop : FinishReason::Length, text);
        unevaluated_ = token;
        return -1;
    }
    return token;
}

void Completion::finish(FinishReason reason, std::string& text) {
    if (done()) return;
    pending_ += utf8_.flush();
    text += pending_;
    pending_.clear();
    reason_ = reason;
}

}  // namespace rill
