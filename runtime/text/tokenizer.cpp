// Special-token partitioning, the per-tokenizer dispatch, and decoding back to text.
#include "runtime/text/tokenizer.h"

#include <cstdio>
#include <utility>

#include "runtime/base/error.h"
#include "runtime/text/utf8.h"

namespace rill {
namespace {

constexpr std::string_view kSpmSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's visible space

// A stretch of the input: plain text to tokenize, or a special token found in it.
struct Fragment {
    int32_t token;  // -1 for text
    std::string_view text;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Splits text around special tokens, longest first, as llama.cpp does: user-defined tokens always,
// control tokens only when parse_special.
std::vector<Fragment> partition(const Vocab& vocab, std::string_view text, bool parse_special) {
    std::vector<Fragment> fragments = {{-1, text}};
    for (const int32_t id : vocab.specials) {
        const TokenKind kind = vocab.kinds[size_t(id)];
        if (!parse_special && kind != TokenKind::UserDefined) continue;
        const std::string& special = vocab.tokens[size_t(id)];
        std::vector<Fragment> next;
        for (const Fragment& f : fragments) {
            if (f.token >= 0 || f.text.find(special) == std::string_view::npos) {
                next.push_back(f);
                continue;
            }
            std::string_view rest = f.text;
            for (size_t hit; (hit = rest.find(special)) != std::string_view::npos;) {
                std::string_view before = rest.substr(0, hit);
                if (!before.empty()) next.push_back({-1, before});
                next.push_back({id, special});
                rest = rest.substr(hit + special.size());
                if (vocab.strip_right[size_t(id)])
                    while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
            }
            if (!rest.empty()) next.push_back({-1, rest});
        }
        fragments = std::move(next);
    }
    return fragments;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    size_t start = 0;
    for (size_t hit; (hit = text.find(from, start)) != std::string_view::npos; start = hit + from.size()) {
        out.append(text.substr(start, hit - start));
        out.append(to);
    }
    out.append(text.substr(start));
    return out;
}

}  // namespace

std::vector<int32_t> tokenize(const Vocab& vocab, std::string_view text, TokenizeOptions options) {
    std::vector<int32_t> out;
    if (options.add_special && vocab.add_bos && vocab.bos >= 0) out.push_back(vocab.bos);
    // SentencePiece's dummy prefix goes before text at the start and after every special token.
    bool after_special = true;
    for (const Fragment& f : partition(vocab, text, options.parse_special)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            after_special = true;
            continue;
        }
        if (f.text.empty()) continue;
        switch (vocab.kind) {
            case TokenizerKind::SentencePiece: {
                std::string escaped = vocab.add_space_prefix && after_special ? " " : "";
                escaped += f.text;
                tokenize_spm(vocab, replace_all(escaped, " ", kSpmSpace), out);
                break;
            }
            case TokenizerKind::BytePairs:
                if (vocab.escaped_spaces) tokenize_bpe(vocab, replace_all(f.text, " ", kSpmSpace), out);
                else tokenize_bpe(vocab, f.text, out);
                break;
            case TokenizerKind::WordPiece: tokenize_wpm(vocab, f.text, out); break;
        }
        after_special = false;
    }
    if (options.add_special && vocab.add_eos && vocab.eos >= 0) out.push_back(vocab.eos);
    return out;
}

std::string token_text(const Vocab& vocab, int32_t id, bool after_bos, bool render_special) {
    if (id < 0 || id >= vocab.size()) return {};
    const std::string& piece = vocab.tokens[size_t(id)];
    switch (vocab.kinds[size_t(id)]) {
        case TokenKind::Control: return render_special ? piece : std::string();
        case TokenKind::Unused: return {};
        case TokenKind::Unknown: return vocab.kind == TokenizerKind::SentencePiece ? "\xe2\x96\x85" : piece;
        case TokenKind::UserDefined: return piece;
        case TokenKind::Byte: {
            unsigned value = 0;
            if (std::sscanf(piece.c_str(), "<0x%02X>", &value) == 1) return std::string(1, char(value));
            return piece;
        }
        case TokenKind::Normal: break;
    }
    switch (vocab.kind) {
        case TokenizerKind::BytePairs: return vocab.escaped_spaces ? replace_all(piece, kSpmSpace, " ") : bpe_token_bytes(piece);
        case TokenizerKind::SentencePiece: {
            std::string text = replace_all(piece, kSpmSpace, " ");
            if (after_bos && vocab.add_space_prefix && !text.empty() && text[0] == ' ') text.erase(0, 1);
            return text;
        }
        case TokenizerKind::WordPiece: {
            // Word-initial pieces carry the visible space; continuation pieces attach to the previous one.
            return replace_all(piece, kSpmSpace, " ");
        }
    }
    return piece;
}

std::string detokenize(const Vocab& vocab, std::span<const int32_t> ids, DetokenizeOptions options) {
    std::string out;
    int32_t previous = -1;
    for (const int32_t id : ids) {
        const bool first_text = previous < 0 || previous == vocab.bos;
        out += token_text(vocab, id, first_text, !options.skip_special);
        previous = id;
    }
    if (vocab.kind == TokenizerKind::WordPiece && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
}

std::string Utf8Stream::push(std::string_view bytes) {
    pending_ += bytes;
    // Find where the last complete character ends; hold back a trailing incomplete sequence.
    size_t cut = pending_.size();
    for (size_t back = 1; back <= 4 && back <= pending_.size(); ++back) {
        const uint8_t c = uint8_t(pending_[pending_.size() - back]);
        if ((c & 0xc0) == 0x80) continue;  // continuation byte: keep looking for the lead
        const size_t need = utf8_sequence_length(c);
        if (need > back && need > 1) cut = pending_.size() - back;  // lead of a sequence not yet complete
        break;
    }
    std::string ready = pending_.substr(0, cut);
    pending_.erase(0, cut);
    return ready;
}

std::string Utf8Stream::flush() { return std::exchange(pending_, std::string()); }

}  // namespace rill
