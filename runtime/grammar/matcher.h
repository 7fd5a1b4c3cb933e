// Where generated text stands in a grammar, and which tokens may come next.
//
// The parse state is a set of stacks (the positions still to match, innermost first), as in a
// pushdown recogniser. Each distinct set is interned once and its successor on every byte is
// cached, so the matcher builds, lazily, the part of the grammar's automaton the text visits. A
// token mask walks the vocabulary's trie over those cached transitions: inside a JSON string the
// state stays the same from byte to byte, and the walk is array look-ups. Whole masks are cached
// per state too, so a state seen before costs nothing.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/token_trie.h"

namespace rill::grammar {

// Allowed tokens, one bit per id.
struct TokenMask {
    std::vector<uint64_t> words;
    bool test(int32_t id) const { return (words[size_t(id) >> 6] >> (id & 63)) & 1; }
};

class Matcher {
public:
    explicit Matcher(std::shared_ptr<const Grammar> grammar);

    // Moves the state past `bytes`, or returns false and leaves it as it was if they cannot follow.
    bool accept(std::string_view bytes);
    bool can_accept(std::string_view bytes);  // the same test without moving
    // The text so far is a complete sentence of the grammar (an end-of-generation token may come).
    bool accepting() const;
    // Nothing can follow: the only way on is to end.
    bool finished() const;

    // The tokens whose whole text can come next, by the trie of the vocabulary's texts.
    const TokenMask& allowed_tokens(const TokenTrie& trie);

    size_t cached_states() const { return sets_.size(); }

private:
    static constexpr uint32_t kUnknown = UINT32_MAX;
    static constexpr uint32_t kEmptyStack = UINT32_MAX - 1;  // every position matched
    static constexpr uint32_t kDead = 0;                     // the empty set: no stack survives

    struct StackNode {
        uint32_t pos;     // the element to match next
        uint32_t parent;  // the stack below, or kEmptyStack
    };
    uint32_t push(uint32_t pos, uint32_t parent);
    uint32_t continue_at(uint32_t pos, uint32_t parent);  // skips an alternative's End
    void settle(uint32_t stack, std::vector<uint32_t>& out);
    uint32_t intern(std::vector<uint32_t>& stacks);
    uint32_t step(uint32_t set, uint8_t byte);
    uint32_t after(std::string_view bytes);  // the state past `bytes` from the current one, or kDead
    void compact();  // drops every cached state but the current one

    std::shared_ptr<const Grammar> grammar_;
    std::vector<StackNode> nodes_;
    std::unordered_map<uint64_t, uint32_t> node_ids_;
    std::vector<std::vector<uint32_t>> sets_;
    std::unordered_map<std::string, uint32_t> set_ids_;
    std::vector<std::unique_ptr<std::array<uint32_t, 256>>> transitions_;
    std::unordered_map<uint32_t, TokenMask> masks_;
    uint32_t current_ = kDead;
    std::vector<uint32_t> scratch_, work_;
    std::vector<uint32_t> walk_states_;
};

}  // namespace rill::grammar
