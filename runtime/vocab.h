// A model's vocabulary from GGUF metadata, and the SentencePiece tokenizer over it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf.h"

namespace rill {

enum class TokenKind : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

struct Vocab {
    std::string model;  // tokenizer.ggml.model: "llama" is SentencePiece
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<TokenKind> kinds;
    std::unordered_map<std::string, int32_t> ids;  // token text to id
    int32_t bos = -1, eos = -1, eot = -1, unk = -1;
    bool add_bos = true, add_eos = false, add_space_prefix = true;
    int32_t byte_tokens[256];  // id of <0xNN>, or -1

    int32_t size() const { return int32_t(tokens.size()); }
    bool is_end_of_generation(int32_t id) const { return id == eos || id == eot; }
};

Vocab load_vocab(const GgufFile& file);

// Text to token ids. add_special adds BOS (and EOS) as the model's metadata asks.
std::vector<int32_t> tokenize(const Vocab& vocab, std::string_view text, bool add_special);

// The text of one token. `after_bos` drops the leading space SentencePiece puts on a word-initial piece,
// as decoders do for the first piece after BOS.
std::string token_text(const Vocab& vocab, int32_t id, bool after_bos = false);

}  // namespace rill
