#include "runtime/session/constrained.h"

#include <bit>
#include <limits>
#include <string>

#include "runtime/base/error.h"
#include "runtime/text/tokenizer.h"

namespace rill {

std::shared_ptr<const grammar::TokenTrie> build_vocab_trie(const Vocab& vocab) {
    std::vector<std::string> texts(size_t(vocab.size()));
    for (int32_t id = 0; id < vocab.size(); ++id) {
        const TokenKind kind = vocab.kinds[size_t(id)];
        if (kind == TokenKind::Control || kind == TokenKind::Unknown || kind == TokenKind::Unused) continue;
        texts[size_t(id)] = token_text(vocab, id);
    }
    return std::make_shared<const grammar::TokenTrie>(grammar::build_token_trie(texts));
}

Constraint::Constraint(const Vocab& vocab, std::shared_ptr<const grammar::Grammar> grammar, std::shared_ptr<const grammar::TokenTrie> trie)
    : vocab_(vocab), trie_(std::move(trie)), matcher_(std::move(grammar)) {}

bool Constraint::allows(int32_t token) {
    if (vocab_.is_end_of_generation(token)) return matcher_.accepting();
    if (token < 0 || size_t(token) >= trie_->n_vocab) return false;
    const std::string text = token_text(vocab_, token);
    return !text.empty() && matcher_.can_accept(text);
}

int32_t Constraint::sample(Sampler& sampler, std::span<const float> logits) {
    const int32_t first = sampler.sample(logits);
    if (allows(first)) return first;
    const grammar::TokenMask& mask = matcher_.allowed_tokens(*trie_);
    const bool accepting = matcher_.accepting();
    masked_.assign(logits.size(), -std::numeric_limits<float>::infinity());
    bool any = false;
    // The allowed ids straight from the mask's set bits; end-of-generation tokens (never in the trie)
    // only once the text is complete.
    for (size_t w = 0; w < mask.words.size(); ++w)
        for (uint64_t bits = mask.words[w]; bits != 0; bits &= bits - 1) {
            const size_t id = w * 64 + size_t(std::countr_zero(bits));
            if (id >= logits.size()) break;
            masked_[id] = logits[id];
            any = true;
        }
    for (const int32_t id : vocab_.end_of_generation) {
        if (id < 0 || size_t(id) >= logits.size()) continue;
        masked_[size_t(id)] = accepting ? logits[size_t(id)] : -std::numeric_limits<float>::infinity();
        any = any || accepting;
    }
    if (!any) throw Error("the grammar allows no token of this vocabulary here");
    return sampler.sample(masked_);
}

void Constraint::accept(int32_t token) {
    if (vocab_.is_end_of_generation(token)) return;
    if (!matcher_.accept(token_text(vocab_, token))) throw Error("token " + std::to_string(token) + " does not fit the grammar");
}

}  // namespace rill
