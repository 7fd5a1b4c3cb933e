// One stream of generated text, advanced a token at a time by whoever owns its session: the C API's
// generate loop, or the server's scheduler, which steps many of them in one batch.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/session/constrained.h"
#include "runtime/session/sampling.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/vocab.h"

namespace rill {

enum class FinishReason { None, Stop, Length, Cancelled };
const char* finish_reason_name(FinishReason reason);  // OpenAI's words: "stop", "length", "cancelled"

struct CompletionSettings {
    SamplingParams sampling;
    int max_tokens = 256;
    std::vector<std::string> stops;  // generation ends before the first of these texts; it is not shown
    bool ignore_eos = false;         // benchmarks: end-of-generation tokens do not end the stream
    // Output held to a grammar (null: free text), matched over the vocabulary's token trie.
    std::shared_ptr<const grammar::Grammar> grammar;
    std::shared_ptr<const grammar::TokenTrie> token_trie;
    int top_logprobs = -1;  // -1: no log-probabilities; 0 to 20: the sampled token's and this many alternatives'
};

class Completion {
public:
    // `last_prompt_token`: the token before the first generated one (-1 if none), so a word-initial
    // SentencePiece space right after BOS is dropped as decoders do.
    Completion(const Vocab& vocab, CompletionSettings settings, std::span<const int32_t> prompt);

    // Picks the next token from its logits and appends the text that can be shown now to `text`
    // (whole UTF-8 characters, held back while it might be the start of a stop string). Returns the
    // token to evaluate next, or -1 once finished (end-of-generation token, stop string, max_tokens).
    int32_t step(std::span<const float> logits, std::string& text);
    // Ends the stream early (the context is full, or the client went away) and appends the text held back.
    void finish(FinishReason reason, std::string& text);

    bool done() const { return reason_ != FinishReason::None; }
    FinishReason reason() const { return reason_; }
    int generated() const { return generated_; }
    // The token step() sampled but did not return because the stream ended on max_tokens or a stop
    // string: its text was shown, so an owner that continues the context evaluates it. -1 otherwise.
    int32_t unevaluated_token() const { return unevaluated_; }
    // One entry per generated token that shows text (end-of-generation tokens have none), when
    // top_logprobs >= 0.
    const std::vector<TokenLogprob>& logprobs() const { return logprobs_; }
    // Why a grammar ended the stream early: it allowed no token of the vocabulary. Empty otherwise.
    const std::string& error() const { return error_; }

private:
    const Vocab& vocab_;
    CompletionSettings settings_;
    Sampler sampler_;
    std::optional<Constraint> constraint_;
    std::vector<TokenLogprob> logprobs_;
    std::string error_;
    Utf8Stream utf8_;
    std::string pending_;  // decoded text not yet shown: it may begin a stop string
    int32_t previous_;
    int generated_ = 0;
    int32_t unevaluated_ = -1;
    FinishReason reason_ = FinishReason::None;
};

// The longest suffix of `text` that is a proper prefix of one of the stop strings: text that must
// wait for the next token before it can be shown.
size_t stop_prefix_length(std::string_view text, const std::vector<std::string>& stops);

}  // namespace rill
