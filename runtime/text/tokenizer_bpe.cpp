// Byte-level BPE (GPT-2 style): pre-tokenize into words, map each byte to a printable character,
// then merge adjacent symbols by merge rank (lowest first, leftmost on ties) until none applies.
#include <array>
#include <unordered_map>

#include "runtime/base/error.h"
#include "runtime/text/pretokenize.h"
#include "runtime/text/symbol_merge.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/utf8.h"

namespace rill {
namespace {

// GPT-2's reversible byte-to-character table: printable bytes stand for themselves, the others take
// the code points from 256 upwards in byte order.
struct ByteMap {
    std::array<std::string, 256> to_text;
    std::unordered_map<uint32_t, uint8_t> to_byte;
    ByteMap() {
        uint32_t next = 256;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
            const uint32_t cp = printable ? b : next++;
            append_utf8(to_text[b], cp);
            to_byte[cp] = uint8_t(b);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap map;
    return map;
}

// Replaces bytes that are not valid UTF-8 with U+FFFD, as llama.cpp does before splitting.
std::string valid_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        const uint8_t lead = uint8_t(text[i]);
        size_t len = utf8_sequence_length(lead);
        bool ok = (lead < 0x80) || (len > 1 && i + len <= text.size());
        for (size_t k = 1; ok && k < len; ++k) ok = (uint8_t(text[i + k]) & 0xc0) == 0x80;
        if (ok && len > 1) {
            size_t j = i;
            const uint32_t cp = next_code_point(text, j);
            // Overlong forms, surrogates and values past U+10FFFF are not UTF-8 either.
            ok = !(cp < (len == 2 ? 0x80u : len == 3 ? 0x800u : 0x10000u)) && !(cp >= 0xd800 && cp <= 0xdfff) && cp <= 0x10ffff;
        }
        if (ok) {
            out.append(text.substr(i, len));
            i += len;
        } else {
            out += "\xef\xbf\xbd";
            ++i;
        }
    }
    return out;
}

bool all_newlines(std::string_view word) { return word.find_first_not_of('\n') == std::string_view::npos; }

// Merges one pre-tokenized, byte-mapped word by merge rank and appends its tokens.
void encode_word(const Vocab& vocab, std::string_view word, std::vector<int32_t>& out) {
    if (vocab.ignore_merges || (vocab.escaped_spaces && all_newlines(word))) {
        if (const int32_t id = vocab.find(word); id >= 0) {
            out.push_back(id);
            return;
        }
    }
    std::string key;
    const auto rank = [&](std::string_view left, std::string_view right) -> std::optional<double> {
        key.assign(left);
        key += ' ';
        key.append(right);
        const auto it = vocab.merge_ranks.find(key);
        if (it == vocab.merge_ranks.end()) return std::nullopt;
        return double(it->second);
    };
    for (const std::string_view piece : merge_symbols(word, rank)) {
        if (const int32_t id = vocab.find(piece); id >= 0) {
            out.push_back(id);
            continue;
        }
        // No token for the merged text: fall back to single-byte tokens, skipping any that are missing.
        for (const char c : piece) {
            const int32_t id = vocab.escaped_spaces ? vocab.byte_tokens[uint8_t(c)] : vocab.find(std::string_view(&c, 1));
            if (id >= 0) out.push_back(id);
        }
    }
}

}  // namespace

void tokenize_bpe(const Vocab& vocab, std::string_view raw, std::vector<int32_t>& out) {
    const std::string text = valid_utf8(raw);
    const ByteMap& map = byte_map();
    // Running text repeats its words: encode each distinct word once.
    std::unordered_map<std::string, std::vector<int32_t>> cache;
    std::string mapped;
    for (const std::string_view word : vocab.pre_tokenizer->split(text)) {
        mapped.clear();
        if (vocab.escaped_spaces) mapped = word;  // merges and tokens are raw UTF-8
        else
            for (const char c : word) mapped += map.to_text[uint8_t(c)];
        auto [it, fresh] = cache.try_emplace(mapped);
        if (fresh) encode_word(vocab, mapped, it->second);
        out.insert(out.end(), it->second.begin(), it->second.end());
    }
}

std::string bpe_token_bytes(std::string_view token) {
    const ByteMap& map = byte_map();
    std::string out;
    for (size_t i = 0; i < token.size();) {
        const size_t start = i;
        const uint32_t cp = next_code_point(token, i);
        const auto it = map.to_byte.find(cp);
        if (it != map.to_byte.end()) out += char(it->second);
        else out.append(token.substr(start, i - start));  // not a mapped byte: keep the text as it is
    }
    return out;
}

}  // namespace rill
