#include "runtime/session/constrained.h"

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
    for (size_t id = 0; id < logits.size(); ++id) {
        const bool ok = vocab_.is_end_of_generation(int32_t(id)) ? accepting : id < trie_->n_vocab && mask.test(int32_t(id));
        if (ok) {
            masked_[id] = logits[id];
            any = true;
        }
    }
    if (!any) throw Error("the grammar allows no token of this vocabulary here");
    return sampler.sample(masked_);
}

void Constraint::accept(int32_t token, std::string_view text) {
    if (vocab_.is_end_of_generation(token)) return;
    if (!matcher_.accept(text)) throw Error("token " + std::to_string(token) + " does not fit the grammar");
}

}  // namespace rill
