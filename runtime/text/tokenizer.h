// Text to token ids and back, for every tokenizer a GGUF vocabulary can name.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/text/vocab.h"

namespace rill {

struct TokenizeOptions {
    bool add_special = true;     // BOS/EOS (CLS/SEP for WordPiece) as the metadata asks
    bool parse_special = false;  // control tokens written in the text ("<|eot_id|>") become their ids
};

std::vector<int32_t> tokenize(const Vocab& vocab, std::string_view text, TokenizeOptions options = {});

// The bytes one token stands for. Control tokens give "" unless render_special. `after_bos` drops the
// leading space SentencePiece puts on a word-initial piece, as decoders do right after BOS.
std::string token_text(const Vocab& vocab, int32_t id, bool after_bos = false, bool render_special = false);

struct DetokenizeOptions {
    bool skip_special = true;  // drop control tokens (BOS, EOS, <|im_end|>, …)
};
std::string detokenize(const Vocab& vocab, std::span<const int32_t> ids, DetokenizeOptions options = {});

// Holds back the bytes of a UTF-8 character split across tokens until it is complete, so a stream
// never shows half a character. Bytes that can never become valid UTF-8 are passed through.
class Utf8Stream {
public:
    std::string push(std::string_view bytes);  // returns what can be shown now
    std::string flush();                       // whatever is left, complete or not
private:
    std::string pending_;
};

// Internal steps, one file each.
void tokenize_spm(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);
void tokenize_bpe(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);
void tokenize_wpm(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);
std::string bpe_token_bytes(std::string_view token);  // undoes GPT-2's byte-to-character mapping

}  // namespace rill
