// SentencePiece BPE: merge the adjacent pair whose merged text is the highest-scoring token;
// what no token covers falls back to byte tokens.
#include <string>

#include "runtime/text/symbol_merge.h"
#include "runtime/text/tokenizer.h"

namespace rill {

void tokenize_spm(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    std::string joined;
    const auto rank = [&](std::string_view left, std::string_view right) -> std::optional<double> {
        joined.assign(left);
        joined.append(right);
        const int32_t id = vocab.find(joined);
        if (id < 0) return std::nullopt;
        return -double(vocab.scores[size_t(id)]);  // the best score merges first
    };
    for (const std::string_view piece : merge_symbols(text, rank)) {
        if (const int32_t id = vocab.find(piece); id >= 0) {
            out.push_back(id);
            continue;
        }
        for (const char c : piece) {
            const int32_t id = vocab.byte_tokens[uint8_t(c)];
            if (id >= 0) out.push_back(id);
            else if (vocab.unk >= 0) out.push_back(vocab.unk);
        }
    }
}

}  // namespace rill
