// A vocabulary's token texts as a byte trie in preorder: a node's subtree is the run of nodes after
// it up to subtree_end, so a walk that finds a prefix impossible skips every token under it at once.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rill::grammar {

struct TokenTrie {
    // Node 0 is the root (the empty prefix); nodes 1.. are in preorder, children by byte.
    std::vector<uint8_t> byte;
    std::vector<uint16_t> depth;
    std::vector<uint32_t> subtree_end;
    std::vector<uint32_t> tokens_begin;  // the tokens whose text ends at this node: ids[tokens_begin, tokens_end)
    std::vector<uint32_t> tokens_end;
    std::vector<int32_t> ids;
    size_t n_vocab = 0;
};

// `texts[id]` is token id's bytes; empty texts (control tokens, unused ids) are left out, and so is
// any text longer than 65535 bytes.
TokenTrie build_token_trie(std::span<const std::string> texts);

}  // namespace rill::grammar
