// SentencePiece BPE: start from characters and repeatedly merge the adjacent pair whose merged text
// is the highest-scoring token (leftmost first on ties); what no token covers falls back to bytes.
#include <queue>

#include "tokenizer.h"
#include "utf8.h"

namespace rill {
namespace {

class SpmEncoder {
public:
    SpmEncoder(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

    void encode(std::vector<int32_t>& out) {
        for (size_t i = 0; i < text_.size();) {
            const size_t len = std::min(utf8_sequence_length(uint8_t(text_[i])), text_.size() - i);
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
        const int32_t id = vocab_.find(text_.substr(a.start, a.len + b.len));
        if (id < 0) return;
        queue_.push({left, right, vocab_.scores[size_t(id)], a.len + b.len});
    }

    void emit(const Symbol& s, std::vector<int32_t>& out) const {
        if (const int32_t id = vocab_.find(text_.substr(s.start, s.len)); id >= 0) {
            out.push_back(id);
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

void tokenize_spm(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    SpmEncoder(vocab, text).encode(out);
}

}  // namespace rill
