// The regular expression is read by recursive descent and written out as GBNF as it is read. The
// string it describes is a decoded JSON string; the grammar describes its encoded form, so every
// character is emitted as JSON writes it (raw where JSON allows, escaped where it must be).
#include "runtime/grammar/regex_to_gbnf.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "runtime/base/error.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/grammar/utf8_ranges.h"

namespace rill::grammar {
namespace {

constexpr int kMaxNesting = 64;
constexpr int kMaxRepeat = 1000;

// How JSON writes one character inside a string.
std::string json_encoded(uint32_t cp) {
    switch (cp) {
        case '"': return "\\\"";
        case '\\': return "\\\\";
        case '\b': return "\\b";
        case '\f': return "\\f";
        case '\n': return "\\n";
        case '\r': return "\\r";
        case '\t': return "\\t";
        default: break;
    }
    if (cp < 0x20 || cp == 0x7F) {
        char buffer[8];
        std::snprintf(buffer, sizeof buffer, "\\u%04x", unsigned(cp));
        return buffer;
    }
    std::string out;
    append_utf8(out, cp);
    return out;
}

bool must_escape(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\' || cp == 0x7F; }

std::string class_escape(uint32_t cp) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "\\U%08X", unsigned(cp));
    return buffer;
}

// A set of characters as a GBNF expression: one class for what JSON writes raw, and a literal
// alternative for each character it must escape.
std::string char_set(const std::vector<CodeRange>& ranges) {
    // The characters JSON must escape, in order; what lies between them is written raw.
    static constexpr CodeRange kEscaped[] = {{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}};
    std::string raw, escaped;
    for (const CodeRange& r : ranges) {
        uint32_t lo = r.lo;
        for (const CodeRange& e : kEscaped) {
            if (lo > r.hi) break;
            if (e.hi < lo) continue;
            if (lo < e.lo) {
                const uint32_t hi = std::min(r.hi, e.lo - 1);
                raw += class_escape(lo) + (hi > lo ? "-" + class_escape(hi) : "");
                lo = hi + 1;
            }
            for (; lo <= std::min(r.hi, e.hi); ++lo) escaped += (escaped.empty() ? "" : " | ") + gbnf_literal(json_encoded(lo));
        }
        if (lo <= r.hi) raw += class_escape(lo) + (r.hi > lo ? "-" + class_escape(r.hi) : "");
    }
    std::vector<std::string> parts;
    if (!raw.empty()) parts.push_back("[" + raw + "]");
    if (!escaped.empty()) parts.push_back(escaped);
    if (parts.empty()) throw Error("the pattern has a character class that matches nothing");
    return parts.size() == 1 ? parts[0] : "(" + parts[0] + " | " + parts[1] + ")";
}

const std::vector<CodeRange> kDigit = {{'0', '9'}};
const std::vector<CodeRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CodeRange> kSpace = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                                       {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const std::vector<CodeRange> kLineEnds = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

class RegexReader {
public:
    explicit RegexReader(std::string_view pattern) : text_(pattern) {}

    std::string convert() {
        std::vector<std::string> alternatives;
        do {
            bool anchored_start = false, anchored_end = false;
            if (peek() == '^') {
                ++pos_;
                anchored_start = true;
            }
            std::string body = sequence(0, &anchored_end);
            if (!anchored_start) body = "char* " + body;
            if (!anchored_end) body += " char*";
            alternatives.push_back(body);
        } while (take('|'));
        if (!at_end()) fail("unexpected ')'");
        return join(alternatives);
    }

private:
    [[noreturn]] void fail(const std::string& message) const {
        throw Error(message + " at offset " + std::to_string(pos_) + " of the pattern");
    }
    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }
    bool take(char c) {
        if (peek() != c) return false;
        ++pos_;
        return true;
    }
    static std::string join(const std::vector<std::string>& alternatives) {
        if (alternatives.size() == 1) return "(" + alternatives[0] + ")";
        std::string out = "(";
        for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : "") + alternatives[i];
        return out + ")";
    }

    std::string alternation(int depth) {
        if (depth > kMaxNesting) fail("the pattern nests groups too deeply");
        std::vector<std::string> alternatives;
        do alternatives.push_back(sequence(depth, nullptr));
        while (take('|'));
        return join(alternatives);
    }

    // Terms up to '|', ')' or the end. `end_anchor` is set where a top-level '$' closes it.
    std::string sequence(int depth, bool* end_anchor) {
        std::string out;
        while (!at_end() && peek() != '|' && peek() != ')') {
            if (peek() == '$') {
                ++pos_;
                if (!end_anchor || !(at_end() || peek() == '|')) fail("'$' is supported only at the end of the pattern");
                *end_anchor = true;
                break;
            }
            if (peek() == '^') fail("'^' is supported only at the start of the pattern");
            std::string atom = this->atom(depth);
            atom += quantifier();
            out += (out.empty() ? "" : " ") + atom;
        }
        return out.empty() ? "\"\"" : out;
    }

    std::string quantifier() {
        std::string q;
        if (take('*')) q = "*";
        else if (take('+')) q = "+";
        else if (take('?')) q = "?";
        else if (peek() == '{') {
            const size_t start = pos_++;
            const int lo = number();
            int hi = lo;
            if (lo < 0) {
                // A '{' that opens no quantifier is a literal brace in ECMAScript's web syntax; refused
                // here so a typo is not silently read as text.
                pos_ = start;
                fail("'{' must open a quantifier {m}, {m,} or {m,n}");
            }
            if (take(',')) hi = peek() == '}' ? -1 : number();
            if (!take('}')) fail("a quantifier is missing its '}'");
            if (lo > kMaxRepeat || hi > kMaxRepeat) fail("a quantifier bound above " + std::to_string(kMaxRepeat));
            if (hi >= 0 && hi < lo) fail("a quantifier {m,n} with n below m");
            q = "{" + std::to_string(lo) + (hi == lo ? "" : hi < 0 ? "," : "," + std::to_string(hi)) + "}";
        } else {
            return q;
        }
        take('?');  // lazy: the same strings match
        if (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{') fail("a quantifier follows a quantifier");
        return q;
    }

    int number() {
        int value = -1;
        while (peek() >= '0' && peek() <= '9') {
            value = (value < 0 ? 0 : value) * 10 + (peek() - '0');
            if (value > 1000000) fail("a quantifier bound is too large");
            ++pos_;
        }
        return value;
    }

    std::string atom(int depth) {
        const char c = peek();
        if (c == '*' || c == '+' || c == '?' || c == '{') fail(std::string("'") + c + "' has nothing to repeat");
        if (c == '(') {
            ++pos_;
            if (take('?')) {
                if (take(':')) {
                } else if (peek() == '<' && pos_ + 1 < text_.size() && text_[pos_ + 1] != '=' && text_[pos_ + 1] != '!') {
                    while (!at_end() && peek() != '>') ++pos_;
                    if (!take('>')) fail("a named group is missing its '>'");
                } else {
                    fail("lookahead, lookbehind and other (?...) groups are not supported");
                }
            }
            std::string inner = alternation(depth + 1);
            if (!take(')')) fail("a group is missing its ')'");
            return inner;
        }
        if (c == '[') return char_set(bracket_class());
        if (c == '.') {
            ++pos_;
            return char_set(normalise_ranges(kLineEnds, true));
        }
        if (c == '\\') {
            ++pos_;
            std::vector<CodeRange> ranges;
            if (class_escape_ranges(ranges)) return char_set(ranges);
            return gbnf_literal(json_encoded(escaped_char()));
        }
        return gbnf_literal(json_encoded(literal_char()));
    }

    uint32_t literal_char() {
        size_t length = 0;
        const uint32_t cp = decode_utf8(text_.substr(pos_), length);
        if (length == 0) fail("the pattern is not valid UTF-8");
        pos_ += length;
        return cp;
    }

    // After a backslash: \d \w \s and their negations, as ranges. False for a single-character escape.
    bool class_escape_ranges(std::vector<CodeRange>& out) {
        const char e = peek();
        const std::vector<CodeRange>* set = nullptr;
        switch (e) {
            case 'd': case 'D': set = &kDigit; break;
            case 'w': case 'W': set = &kWord; break;
            case 's': case 'S': set = &kSpace; break;
            default: return false;
        }
        ++pos_;
        out = normalise_ranges(*set, e >= 'A' && e <= 'Z');
        return true;
    }

    // After a backslash, one character.
    uint32_t escaped_char() {
        if (at_end()) fail("the pattern ends inside an escape");
        const char e = text_[pos_++];
        switch (e) {
            case 't': return '\t';
            case 'n': return '\n';
            case 'r': return '\r';
            case 'f': return '\f';
            case 'v': return '\v';
            case '0': return 0;
            case 'x': return hex(2);
            case 'u':
                if (take('{')) fail("\\u{...} needs the 'u' flag, which JSON Schema patterns do not have");
                return hex(4);
            case 'b': case 'B': fail("word boundaries (\\b, \\B) are not supported");
            case 'p': case 'P': fail("Unicode property escapes (\\p, \\P) are not supported");
            case 'k': fail("backreferences are not supported");
            case 'c': fail("control escapes (\\cX) are not supported");
            default: break;
        }
        if (e >= '1' && e <= '9') fail("backreferences are not supported");
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) fail(std::string("unknown escape '\\") + e + "'");
        --pos_;
        return literal_char();
    }

    uint32_t hex(int digits) {
        uint32_t value = 0;
        for (int i = 0; i < digits; ++i) {
            const char h = peek();
            const int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (v < 0) fail("expected " + std::to_string(digits) + " hexadecimal digits in an escape");
            value = value * 16 + uint32_t(v);
            ++pos_;
        }
        if (value >= 0xD800 && value <= 0xDFFF) fail("surrogate code points cannot be matched");
        return value;
    }

    std::vector<CodeRange> bracket_class() {
        ++pos_;  // '['
        const bool negated = take('^');
        std::vector<CodeRange> ranges;
        bool first = true;
        while (true) {
            if (at_end()) fail("a character class is missing its ']'");
            if (peek() == ']' && !first) break;
            if (peek() == ']' && first) {
                // ECMAScript: [] matches nothing and [^] anything; both are rare and read as errors here.
                fail("an empty character class");
            }
            first = false;
            uint32_t lo;
            if (peek() == '\\') {
                ++pos_;
                std::vector<CodeRange> set;
                if (class_escape_ranges(set)) {
                    ranges.insert(ranges.end(), set.begin(), set.end());
                    continue;
                }
                lo = peek() == 'b' ? (++pos_, uint32_t('\b')) : escaped_char();
            } else {
                lo = literal_char();
            }
            uint32_t hi = lo;
            if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
                ++pos_;
                if (peek() == '\\') {
                    ++pos_;
                    std::vector<CodeRange> set;
                    if (class_escape_ranges(set)) fail("a range cannot end in a class escape");
                    hi = peek() == 'b' ? (++pos_, uint32_t('\b')) : escaped_char();
                } else {
                    hi = literal_char();
                }
                if (hi < lo) fail("a character range out of order");
            }
            ranges.push_back({lo, hi});
        }
        ++pos_;  // ']'
        return normalise_ranges(ranges, negated);
    }

    std::string_view text_;
    size_t pos_ = 0;
};

}  // namespace

std::string regex_to_gbnf(const std::string& pattern) { return RegexReader(pattern).convert(); }

}  // namespace rill::grammar
