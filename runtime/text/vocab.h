// A model's vocabulary from GGUF metadata: tokens, their kinds, merges, special ids and flags.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/format/gguf.h"
#include "runtime/text/pretokenize.h"

namespace rill {

enum class TokenKind : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// tokenizer.ggml.model: "llama" is SentencePiece, "gpt2" byte-level BPE, "bert" WordPiece; "gemma4" is BPE over
// SentencePiece-style text (spaces written as U+2581, byte tokens <0xNN>), see Vocab::escaped_spaces.
enum class TokenizerKind { SentencePiece, BytePairs, WordPiece };

struct Vocab {
    TokenizerKind kind = TokenizerKind::SentencePiece;
    std::string model;  // as in the file
    std::string pre;    // tokenizer.ggml.pre: which pre-tokenizer splits text before BPE
    std::shared_ptr<const PreTokenizer> pre_tokenizer;  // BPE only
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<TokenKind> kinds;
    std::vector<bool> strip_right;  // whitespace after this special token is dropped (Phi-3's tokens)
    std::unordered_map<std::string, int32_t> ids;           // token text to id
    std::unordered_map<std::string, int32_t> merge_ranks;   // "left right" to its merge priority (BPE)
    std::vector<int32_t> specials;  // control, user-defined and unknown tokens, longest text first
    std::vector<int32_t> end_of_generation;  // EOS, EOT and every token that ends a turn
    int32_t bos = -1, eos = -1, eot = -1, unk = -1, sep = -1, cls = -1, pad = -1;
    bool add_bos = false, add_eos = false, add_space_prefix = false;
    bool ignore_merges = false;  // Llama 3: a word that is a whole token is taken as is, before any merge
    // Gemma 4: BPE merges raw UTF-8 (no GPT-2 byte mapping) with spaces written as U+2581, a run of newlines
    // that is a token is taken whole, and what no token covers falls back to the <0xNN> byte tokens.
    bool escaped_spaces = false;
    int32_t byte_tokens[256];    // SentencePiece and Gemma 4: id of <0xNN>, or -1
    size_t longest_token = 0;    // in bytes

    int32_t size() const { return int32_t(tokens.size()); }
    int32_t find(std::string_view text) const;  // -1 if absent
    bool is_end_of_generation(int32_t id) const;
    bool is_special(int32_t id) const {
        const TokenKind k = kinds[size_t(id)];
        return k == TokenKind::Control || k == TokenKind::UserDefined || k == TokenKind::Unknown;
    }
};

Vocab load_vocab(const GgufFile& file);

}  // namespace rill
