#include "runtime/grammar/token_trie.h"

#include <algorithm>
#include <numeric>
#include <string_view>

namespace rill::grammar {

TokenTrie build_token_trie(std::span<const std::string> texts) {
    TokenTrie trie;
    trie.n_vocab = texts.size();
    std::vector<int32_t> order;
    for (size_t i = 0; i < texts.size(); ++i)
        if (!texts[i].empty() && texts[i].size() <= 65535) order.push_back(int32_t(i));
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return texts[size_t(a)] < texts[size_t(b)]; });
    trie.ids = order;

    auto add_node = [&](uint8_t b, uint16_t d) {
        trie.byte.push_back(b);
        trie.depth.push_back(d);
        trie.subtree_end.push_back(0);
        trie.tokens_begin.push_back(0);
        trie.tokens_end.push_back(0);
        return uint32_t(trie.byte.size() - 1);
    };
    add_node(0, 0);
    std::vector<uint32_t> path{0};  // path[d]: the node of the previous text's first d bytes
    std::string_view previous;
    for (size_t k = 0; k < order.size(); ++k) {
        const std::string_view text = texts[size_t(order[k])];
        size_t common = 0;
        while (common < text.size() && common < previous.size() && text[common] == previous[common]) ++common;
        while (path.size() > common + 1) {
            trie.subtree_end[path.back()] = uint32_t(trie.byte.size());
            path.pop_back();
        }
        for (size_t d = common; d < text.size(); ++d) path.push_back(add_node(uint8_t(text[d]), uint16_t(d + 1)));
        const uint32_t node = path.back();
        if (trie.tokens_end[node] == 0 || trie.tokens_end[node] != k) trie.tokens_begin[node] = uint32_t(k);
        trie.tokens_end[node] = uint32_t(k + 1);
        previous = text;
    }
    while (!path.empty()) {
        trie.subtree_end[path.back()] = uint32_t(trie.byte.size());
        path.pop_back();
    }
    return trie;
}

}  // namespace rill::grammar
