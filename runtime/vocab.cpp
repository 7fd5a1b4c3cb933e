#include "vocab.h"

#include <cstdio>
#include <queue>

#include "error.h"

namespace rill {
namespace {

constexpr std::string_view kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's visible space

int32_t optional_id(const GgufFile& f, const std::string& key, int32_t n_tokens) {
    const auto v = f.get_uint(key);
    if (!v) return -1;
    if (*v >= uint64_t(n_tokens))
        throw Error(f.name() + ": metadata '" + key + "' is " + std::to_string(*v) + ", outside the vocabulary of " +
                    std::to_string(n_tokens) + " tokens");
    return int32_t(*v);
}

size_t utf8_length(uint8_t lead) {
    if (lead < 0x80) return 1;
    if ((lead & 0xe0) == 0xc0) return 2;
    if ((lead & 0xf0) == 0xe0) return 3;
    if ((lead & 0xf8) == 0xf0) return 4;
    return 1;  // a stray continuation byte stands alone
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

// SentencePiece BPE: start from characters and repeatedly merge the adjacent pair whose merged text
// is the highest-scoring token (leftmost first on ties); what no token covers falls back to bytes.
class SpmEncoder {
public:
    SpmEncoder(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

    void encode(std::vector<int32_t>& out) {
        for (size_t i = 0; i < text_.size();) {
            const size_t len = std::min(utf8_length(uint8_t(text_[i])), text_.size() - i);
            symbols_.push_back({int(symbols_.size()) - 1, int(symbols_.size()) + 1, i, len});
            i += len;
        }
        if (symbols_.empty()) return;
        symbols_.back().next = -1;
        for (int i = 1; i < int(symbols_.size()); ++i) try_pair(i - 1, i);

        while (!queue_.empty()) {
            const Pair p = queue_.top();
            queue_.pop();
            Symbol& left = symbols_[size_t(p.left)];
            Symbol& right = symbols_[size_t(p.right)];
            // Stale entry: one side has been merged into something else since it was queued.
            if (left.len == 0 || right.len == 0 || left.len + right.len != p.len) continue;
            left.len += right.len;
            right.len = 0;
            left.next = right.next;
            if (right.next >= 0) symbols_[size_t(right.next)].prev = p.left;
            try_pair(left.prev, p.left);
            try_pair(p.left, left.next);
        }
        for (int i = 0; i >= 0; i = symbols_[size_t(i)].next) emit(symbols_[size_t(i)], out);
    }

private:
    struct Symbol {
        int prev, next;
        size_t start, len;
    };
    struct Pair {
        int left, right;
        float score;
        size_t len;
        bool operator<(const Pair& o) const { return score < o.score || (score == o.score && left > o.left); }
    };

    void try_pair(int left, int right) {
        if (left < 0 || right < 0) return;
        const Symbol& a = symbols_[size_t(left)];
        const Symbol& b = symbols_[size_t(right)];
        const auto it = vocab_.ids.find(std::string(text_.substr(a.start, a.len + b.len)));
        if (it == vocab_.ids.end()) return;
        queue_.push({left, right, vocab_.scores[size_t(it->second)], a.len + b.len});
    }

    void emit(const Symbol& s, std::vector<int32_t>& out) const {
        const auto it = vocab_.ids.find(std::string(text_.substr(s.start, s.len)));
        if (it != vocab_.ids.end()) {
            out.push_back(it->second);
            return;
        }
        for (size_t i = 0; i < s.len; ++i) {
            const int32_t id = vocab_.byte_tokens[uint8_t(text_[s.start + i])];
            if (id >= 0) out.push_back(id);
            else if (vocab_.unk >= 0) out.push_back(vocab_.unk);
        }
    }

    const Vocab& vocab_;
    std::string_view text_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Pair> queue_;
};

}  // namespace

Vocab load_vocab(const GgufFile& f) {
    Vocab v;
    v.model = f.get_string("tokenizer.ggml.model").value_or("");
    v.tokens = f.get_string_array("tokenizer.ggml.tokens");
    if (v.tokens.empty()) throw Error(f.name() + ": metadata 'tokenizer.ggml.tokens' is missing or empty");
    const int32_t n = v.size();
    v.scores = f.get_float_array("tokenizer.ggml.scores");
    if (v.scores.empty()) v.scores.assign(size_t(n), 0.0f);
    if (v.scores.size() != size_t(n))
        throw Error(f.name() + ": tokenizer.ggml.scores has " + std::to_string(v.scores.size()) + " entries for " +
                    std::to_string(n) + " tokens");
    const std::vector<int64_t> kinds = f.get_int_array("tokenizer.ggml.token_type");
    if (!kinds.empty() && kinds.size() != size_t(n))
        throw Error(f.name() + ": tokenizer.ggml.token_type has " + std::to_string(kinds.size()) + " entries for " +
                    std::to_string(n) + " tokens");
    v.kinds.assign(size_t(n), TokenKind::Normal);
    for (size_t i = 0; i < kinds.size(); ++i)
        if (kinds[i] >= 1 && kinds[i] <= 6) v.kinds[i] = TokenKind(kinds[i]);
    for (int32_t i = 0; i < n; ++i) v.ids[v.tokens[size_t(i)]] = i;  // a later duplicate wins, as in llama.cpp

    std::fill(std::begin(v.byte_tokens), std::end(v.byte_tokens), -1);
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        if (const auto it = v.ids.find(name); it != v.ids.end()) v.byte_tokens[b] = it->second;
    }
    v.bos = optional_id(f, "tokenizer.ggml.bos_token_id", n);
    v.eos = optional_id(f, "tokenizer.ggml.eos_token_id", n);
    v.eot = optional_id(f, "tokenizer.ggml.eot_token_id", n);
    v.unk = optional_id(f, "tokenizer.ggml.unknown_token_id", n);
    v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token").value_or(v.model == "llama");
    v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
    v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix").value_or(v.model == "llama");
    return v;
}

std::vector<int32_t> tokenize(const Vocab& vocab, std::string_view text, bool add_special) {
    if (vocab.model != "llama")
        throw Error("tokenizer model '" + vocab.model + "' is not supported yet (rill reads SentencePiece, \"llama\")");
    std::vector<int32_t> out;
    if (add_special && vocab.add_bos && vocab.bos >= 0) out.push_back(vocab.bos);
    if (!text.empty()) {
        std::string escaped = vocab.add_space_prefix ? " " : "";
        escaped += text;
        escaped = replace_all(escaped, " ", kSpace);
        SpmEncoder(vocab, escaped).encode(out);
    }
    if (add_special && vocab.add_eos && vocab.eos >= 0) out.push_back(vocab.eos);
    return out;
}

std::string token_text(const Vocab& vocab, int32_t id, bool after_bos) {
    if (id < 0 || id >= vocab.size()) return {};
    const std::string& piece = vocab.tokens[size_t(id)];
    switch (vocab.kinds[size_t(id)]) {
        case TokenKind::Control:
        case TokenKind::Unused: return {};
        case TokenKind::Unknown: return "\xe2\x96\x85";  // U+2585, what llama.cpp shows for <unk>
        case TokenKind::Byte: {
            unsigned value = 0;
            if (std::sscanf(piece.c_str(), "<0x%02X>", &value) == 1) return std::string(1, char(value));
            return piece;
        }
        case TokenKind::UserDefined: return piece;
        case TokenKind::Normal: break;
    }
    if (vocab.model != "llama") return piece;
    std::string text = replace_all(piece, kSpace, " ");
    if (after_bos && vocab.add_space_prefix && !text.empty() && text[0] == ' ') text.erase(0, 1);
    return text;
}

}  // namespace rill
