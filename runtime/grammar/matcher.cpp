#include "runtime/grammar/matcher.h"

#include <algorithm>
#include <cstring>

#include "runtime/base/error.h"

namespace rill::grammar {
namespace {

// Past these the cache is rebuilt from the current state; a grammar that needs more within one
// step is too ambiguous to follow and is refused.
constexpr size_t kCompactSets = 8192;
constexpr size_t kCompactNodes = size_t(1) << 20;
constexpr size_t kMaxSets = size_t(1) << 18;
constexpr size_t kMaxStacks = 4096;    // parse stacks alive at once
constexpr size_t kMaxExpansion = 1 << 16;  // positions visited to settle one stack

[[noreturn]] void too_ambiguous() {
    throw Error("the grammar is too ambiguous to follow: more than " + std::to_string(kMaxStacks) +
                " parses are alive at once; make its alternatives start differently");
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
    std::vector<uint32_t> empty;
    intern(empty);  // set 0: dead
    std::vector<uint32_t> start;
    for (const uint32_t alt : grammar_->rules[grammar_->root].alternatives) settle(continue_at(alt, kEmptyStack), start);
    current_ = intern(start);
}

uint32_t Matcher::push(uint32_t pos, uint32_t parent) {
    const uint64_t key = (uint64_t(pos) << 32) | parent;
    const auto [it, inserted] = node_ids_.emplace(key, uint32_t(nodes_.size()));
    if (inserted) nodes_.push_back({pos, parent});
    return it->second;
}

uint32_t Matcher::continue_at(uint32_t pos, uint32_t parent) {
    return grammar_->elements[pos].kind == ElementKind::End ? parent : push(pos, parent);
}

// Expands rule references at the top of `stack` until every stack in `out` has a byte to match
// on top (or is empty: the grammar is complete). Left recursion is refused by the parser, so this ends.
void Matcher::settle(uint32_t stack, std::vector<uint32_t>& out) {
    work_.clear();
    work_.push_back(stack);
    size_t visited = 0;
    while (!work_.empty()) {
        const uint32_t s = work_.back();
        work_.pop_back();
        if (++visited > kMaxExpansion) too_ambiguous();
        if (s == kEmptyStack) {
            out.push_back(s);
            continue;
        }
        const StackNode node = nodes_[s];
        const Element& e = grammar_->elements[node.pos];
        if (e.kind == ElementKind::Bytes) {
            out.push_back(s);
            continue;
        }
        const uint32_t rest = continue_at(node.pos + 1, node.parent);
        for (const uint32_t alt : grammar_->rules[e.value].alternatives) work_.push_back(continue_at(alt, rest));
    }
    if (out.size() > kMaxStacks) too_ambiguous();
}

uint32_t Matcher::intern(std::vector<uint32_t>& stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    if (stacks.size() > kMaxStacks) too_ambiguous();
    std::string key(stacks.size() * sizeof(uint32_t), '\0');
    if (!stacks.empty()) std::memcpy(key.data(), stacks.data(), key.size());
    const auto [it, inserted] = set_ids_.emplace(std::move(key), uint32_t(sets_.size()));
    if (inserted) {
        if (sets_.size() >= kMaxSets) throw Error("the grammar needs more than " + std::to_string(kMaxSets) + " parse states for one token");
        sets_.push_back(stacks);
        transitions_.emplace_back();
    }
    return it->second;
}

uint32_t Matcher::step(uint32_t set, uint8_t byte) {
    if (set == kDead) return kDead;
    if (transitions_[set] && (*transitions_[set])[byte] != kUnknown) return (*transitions_[set])[byte];
    scratch_.clear();
    for (const uint32_t s : sets_[set]) {
        if (s == kEmptyStack) continue;
        const StackNode node = nodes_[s];
        const Element& e = grammar_->elements[node.pos];
        if (grammar_->byte_sets[e.value][byte]) settle(continue_at(node.pos + 1, node.parent), scratch_);
    }
    std::vector<uint32_t> next = scratch_;
    const uint32_t id = intern(next);
    if (!transitions_[set]) {
        transitions_[set] = std::make_unique<std::array<uint32_t, 256>>();
        transitions_[set]->fill(kUnknown);
    }
    (*transitions_[set])[byte] = id;
    return id;
}

uint32_t Matcher::after(std::string_view bytes) {
    uint32_t s = current_;
    for (const char b : bytes) {
        s = step(s, uint8_t(b));
        if (s == kDead) return kDead;
    }
    return s;
}

bool Matcher::can_accept(std::string_view bytes) { return after(bytes) != kDead; }

bool Matcher::accept(std::string_view bytes) {
    const uint32_t s = after(bytes);
    if (s == kDead) return false;
    current_ = s;
    if (sets_.size() > kCompactSets || nodes_.size() > kCompactNodes) compact();
    return true;
}

bool Matcher::accepting() const {
    const auto& stacks = sets_[current_];
    return std::binary_search(stacks.begin(), stacks.end(), kEmptyStack);
}

bool Matcher::finished() const { return sets_[current_].size() == 1 && sets_[current_][0] == kEmptyStack; }

void Matcher::compact() {
    // Copy the current stacks' nodes into fresh tables; everything cached goes.
    std::vector<StackNode> old_nodes = std::move(nodes_);
    const std::vector<uint32_t> old_stacks = sets_[current_];
    nodes_.clear();
    node_ids_.clear();
    sets_.clear();
    set_ids_.clear();
    transitions_.clear();
    masks_.clear();
    std::vector<uint32_t> empty;
    intern(empty);
    std::unordered_map<uint32_t, uint32_t> moved;
    // Copies a stack bottom-up so parents exist before their children.
    auto copy = [&](uint32_t s) {
        std::vector<uint32_t> chain;
        for (uint32_t t = s; t != kEmptyStack && !moved.count(t); t = old_nodes[t].parent) chain.push_back(t);
        for (size_t i = chain.size(); i-- > 0;) {
            const StackNode& n = old_nodes[chain[i]];
            const uint32_t parent = n.parent == kEmptyStack ? kEmptyStack : moved.at(n.parent);
            moved[chain[i]] = push(n.pos, parent);
        }
        return s == kEmptyStack ? kEmptyStack : moved.at(s);
    };
    std::vector<uint32_t> stacks;
    for (const uint32_t s : old_stacks) stacks.push_back(copy(s));
    current_ = intern(stacks);
}

const TokenMask& Matcher::allowed_tokens(const TokenTrie& trie) {
    if (const auto it = masks_.find(current_); it != masks_.end()) return it->second;
    if (masks_.size() >= 64) masks_.clear();
    TokenMask mask;
    mask.words.assign((trie.n_vocab + 63) / 64, 0);
    // One walk over the trie in preorder: walk_states_[d] is the state after the current node's
    // first d bytes; a dead state skips the node's whole subtree.
    walk_states_.assign(1, current_);
    const size_t n = trie.byte.size();
    for (size_t i = 1; i < n;) {
        const size_t d = trie.depth[i];
        const uint32_t s = step(walk_states_[d - 1], trie.byte[i]);
        if (s == kDead) {
            i = trie.subtree_end[i];
            continue;
        }
        if (walk_states_.size() <= d) walk_states_.resize(d + 1);
        walk_states_[d] = s;
        for (uint32_t k = trie.tokens_begin[i]; k < trie.tokens_end[i]; ++k) {
            const int32_t id = trie.ids[k];
            mask.words[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
        }
        ++i;
    }
    return masks_.emplace(current_, std::move(mask)).first->second;
}

}  // namespace rill::grammar
