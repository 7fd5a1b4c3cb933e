// Sampling held to a grammar: only tokens that keep the text inside it can be chosen, and an
// end-of-generation token only once the text is a complete sentence.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/matcher.h"
#include "runtime/grammar/token_trie.h"
#include "runtime/session/sampling.h"
#include "runtime/text/vocab.h"

namespace rill {

// The trie of every token's text as generation shows it (control and unknown tokens left out).
// Built once per vocabulary and shared by every constrained stream.
std::shared_ptr<const grammar::TokenTrie> build_vocab_trie(const Vocab& vocab);

class Constraint {
public:
    Constraint(const Vocab& vocab, std::shared_ptr<const grammar::Grammar> grammar, std::shared_ptr<const grammar::TokenTrie> trie);

    // Draws from the sampler as usual and keeps the token if the grammar allows it; otherwise draws
    // again from the logits with every disallowed token removed. Without truncation (top-k, top-p,
    // min-p) the two draws together follow the distribution over the allowed tokens exactly, and the
    // mask is built only when the first draw misses. Throws an Error if the grammar allows nothing.
    int32_t sample(Sampler& sampler, std::span<const float> logits);
    // Moves the grammar past a chosen token (its text as the trie has it).
    void accept(int32_t token);
    // Nothing more can follow: the stream should end here.
    bool finished() const { return matcher_.finished(); }

private:
    bool allows(int32_t token);

    const Vocab& vocab_;
    std::shared_ptr<const grammar::TokenTrie> trie_;
    grammar::Matcher matcher_;
    std::vector<float> masked_;
};

}  // namespace rill
