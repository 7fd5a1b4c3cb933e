#include "runtime/text/jinja/lexer.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "runtime/base/error.h"
#include "runtime/text/jinja/py_str.h"
#include "runtime/text/jinja/value.h"

namespace rill::jinja {

namespace {

std::string normalize_newlines(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (std::size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();  // Jinja's keep_trailing_newline=False
    return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
bool is_tag_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

struct Lexer {
    std::string_view s;
    std::size_t pos = 0;
    int line = 1;
    int column = 1;
    std::vector<Token> tokens;

    [[noreturn]] void fail(int at_line, int at_column, const std::string& message) const {
        throw Error(error_at(s, at_line, at_column, message));
    }

    void advance_to(std::size_t target) {
        for (; pos < target; ++pos) {
            if (s[pos] == '\n') {
                ++line;
                column = 1;
            } else if ((static_cast<unsigned char>(s[pos]) & 0xc0) != 0x80) {
                ++column;
            }
        }
    }

    bool at(std::string_view marker) const { return s.substr(pos, marker.size()) == marker; }

    Token& push(TokenKind kind, std::string text, int at_line, int at_column) {
        Token t;
        t.kind = kind;
        t.text = std::move(text);
        t.line = at_line;
        t.column = at_column;
        tokens.push_back(std::move(t));
        return tokens.back();
    }

    // What a "-" at the end of a tag does: drop all whitespace that follows.
    void skip_whitespace() {
        std::size_t p = pos;
        while (p < s.size()) {
            const std::u32string one = py::decode(s.substr(p, std::min<std::size_t>(4, s.size() - p)));
            if (one.empty() || !py::is_space(one[0])) break;
            p += py::encode(std::u32string_view(one.data(), 1)).size();
        }
        advance_to(p);
    }

    std::size_t find_tag(std::size_t from) const {
        for (std::size_t at = s.find('{', from); at != std::string_view::npos; at = s.find('{', at + 1))
            if (at + 1 < s.size() && (s[at + 1] == '{' || s[at + 1] == '%' || s[at + 1] == '#')) return at;
        return std::string_view::npos;
    }

    // lstrip_blocks: a block or comment tag alone on its line (after spaces and tabs) takes them away.
    static std::string_view lstrip_line(std::string_view text, bool line_starting) {
        const std::size_t nl = text.rfind('\n');
        const std::size_t line_start = nl == std::string_view::npos ? 0 : nl + 1;
        if (line_start == 0 && !line_starting) return text;
        if (text.find_first_not_of(" \t", line_start) != std::string_view::npos) return text;
        return text.substr(0, line_start);
    }

    void run() {
        while (pos < s.size()) {
            const std::size_t tag = find_tag(pos);
            const std::size_t text_end = tag == std::string_view::npos ? s.size() : tag;
            std::string_view text = s.substr(pos, text_end - pos);
            const bool line_starting = pos == 0 || s[pos - 1] == '\n';
            char kind = 0, sign = 0;
            if (tag != std::string_view::npos) {
                kind = s[tag + 1];
                sign = tag + 2 < s.size() && (s[tag + 2] == '-' || s[tag + 2] == '+') ? s[tag + 2] : 0;
                if (sign == '-')
                    text = text.substr(0, py::strip(text, std::nullopt, false, true).size());
                else if (sign != '+' && kind != '{')
                    text = lstrip_line(text, line_starting);
            }
            if (!text.empty()) push(TokenKind::Text, std::string(text), line, column);
            if (tag == std::string_view::npos) break;
            advance_to(tag);
            if (kind == '#')
                comment(sign);
            else if (kind != '%' || !raw_block())
                tag_tokens(kind == '%', sign);
        }
        push(TokenKind::End, "", line, column);
    }

    void comment(char sign) {
        const int at_line = line, at_column = column;
        const std::size_t body = pos + 2 + (sign ? 1 : 0);
        const std::size_t end = s.find("#}", body);
        if (end == std::string_view::npos) fail(at_line, at_column, "unterminated comment");
        const char before = end > body ? s[end - 1] : 0;
        advance_to(end + 2);
        if (before == '-')
            skip_whitespace();
        else if (before != '+' && pos < s.size() && s[pos] == '\n')
            advance_to(pos + 1);  // trim_blocks
    }

    // Where a "{% name %}"-shaped tag at `from` ends, with the sign before "%}" (0, '-' or '+').
    std::optional<std::pair<std::size_t, char>> simple_tag(std::size_t from, std::string_view name,
                                                           char* begin_sign) const {
        std::size_t p = from + 2;
        const char sign = p < s.size() && (s[p] == '-' || s[p] == '+') ? s[p] : 0;
        if (sign) ++p;
        while (p < s.size() && is_tag_space(s[p])) ++p;
        if (s.substr(p, name.size()) != name) return std::nullopt;
        p += name.size();
        if (p < s.size() && is_name_char(s[p])) return std::nullopt;
        while (p < s.size() && is_tag_space(s[p])) ++p;
        if (begin_sign) *begin_sign = sign;
        if (s.substr(p, 3) == "-%}" || s.substr(p, 3) == "+%}") return std::pair{p + 3, s[p]};
        if (s.substr(p, 2) == "%}") return std::pair{p + 2, char(0)};
        return std::nullopt;
    }

    // {% raw %}…{% endraw %}: the text between is output as it stands.
    bool raw_block() {
        const auto begin = simple_tag(pos, "raw", nullptr);
        if (!begin) return false;
        const int at_line = line, at_column = column;
        const std::size_t body = begin->first;
        for (std::size_t at = s.find("{%", body); at != std::string_view::npos; at = s.find("{%", at + 2)) {
            char end_sign = 0;
            const auto end = simple_tag(at, "endraw", &end_sign);
            if (!end) continue;
            std::string_view text = s.substr(body, at - body);
            if (begin->second == '-') text = text.substr(text.size() - py::strip(text, std::nullopt, true, false).size());
            if (end_sign == '-')
                text = text.substr(0, py::strip(text, std::nullopt, false, true).size());
            else if (end_sign != '+')
                text = lstrip_line(text, s[body - 1] == '\n');
            advance_to(body);
            if (!text.empty()) push(TokenKind::Text, std::string(text), line, column);
            advance_to(end->first);
            if (end->second == '-')
                skip_whitespace();
            else if (end->second == 0 && pos < s.size() && s[pos] == '\n')
                advance_to(pos + 1);
            return true;
        }
        fail(at_line, at_column, "unterminated raw block: no {% endraw %}");
    }

    void tag_tokens(bool block, char sign) {
        const int at_line = line, at_column = column;
        push(block ? TokenKind::BlockBegin : TokenKind::VarBegin, "", line, column);
        advance_to(pos + 2 + (sign ? 1 : 0));
        std::string open;  // brackets awaiting their close; inside them "}}" and "%}" are not the tag's end
        while (true) {
            if (pos >= s.size())
                fail(at_line, at_column, block ? "unterminated '{%' tag: no '%}'" : "unterminated '{{' tag: no '}}'");
            if (open.empty()) {
                const char* close = block ? "%}" : "}}";
                if (s.substr(pos, 3) == std::string("-") + close) {
                    push(block ? TokenKind::BlockEnd : TokenKind::VarEnd, "", line, column);
                    advance_to(pos + 3);
                    skip_whitespace();
                    return;
                }
                if (block && at("+%}")) {
                    push(TokenKind::BlockEnd, "", line, column);
                    advance_to(pos + 3);
                    return;
                }
                if (at(close)) {
                    push(block ? TokenKind::BlockEnd : TokenKind::VarEnd, "", line, column);
                    advance_to(pos + 2);
                    if (block && pos < s.size() && s[pos] == '\n') advance_to(pos + 1);  // trim_blocks
                    return;
                }
            }
            const char c = s[pos];
            if (is_tag_space(c)) {
                advance_to(pos + 1);
            } else if (c == '\'' || c == '"') {
                string_token();
            } else if (is_digit(c)) {
                number_token();
            } else if (is_name_start(c)) {
                std::size_t end = pos;
                while (end < s.size() && is_name_char(s[end])) ++end;
                push(TokenKind::Name, std::string(s.substr(pos, end - pos)), line, column);
                advance_to(end);
            } else {
                operator_token(open);
            }
        }
    }

    void operator_token(std::string& open) {
        static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        for (std::string_view op : kTwo)
            if (at(op)) {
                push(TokenKind::Op, std::string(op), line, column);
                advance_to(pos + 2);
                return;
            }
        const char c = s[pos];
        if (std::string_view("+-*/%~<>=.,:|([{)]}").find(c) == std::string_view::npos) {
            std::string shown = py::encode(py::decode(s.substr(pos, std::min<std::size_t>(4, s.size() - pos))).substr(0, 1));
            fail(line, column, "unexpected character '" + shown + "'");
        }
        if (c == '(' || c == '[' || c == '{') {
            open += c;
        } else if (c == ')' || c == ']' || c == '}') {
            const char expected = open.empty() ? 0 : (open.back() == '(' ? ')' : open.back() == '[' ? ']' : '}');
            if (c != expected)
                fail(line, column, std::string("unexpected '") + c + "'" +
                                       (expected ? std::string(", expected '") + expected + "'" : std::string()));
            open.pop_back();
        }
        push(TokenKind::Op, std::string(1, c), line, column);
        advance_to(pos + 1);
    }

    void number_token() {
        const int at_line = line, at_column = column;
        std::size_t end = pos;
        std::string digits;
        auto digit_run = [&] {
            while (end < s.size() && (is_digit(s[end]) || s[end] == '_')) {
                if (s[end] != '_') digits += s[end];
                ++end;
            }
        };
        if (s[pos] == '0' && pos + 1 < s.size() && std::string_view("xXoObB").find(s[pos + 1]) != std::string_view::npos) {
            const char base_char = static_cast<char>(s[pos + 1] | 0x20);
            const int base = base_char == 'x' ? 16 : base_char == 'o' ? 8 : 2;
            end = pos + 2;
            std::uint64_t value = 0;
            bool any = false;
            for (; end < s.size() && (is_name_char(s[end])); ++end) {
                if (s[end] == '_') continue;
                const int d = hex_value(s[end]);
                if (d < 0 || d >= base) fail(at_line, at_column, "invalid digit in a number");
                const auto digit = static_cast<std::uint64_t>(d), radix = static_cast<std::uint64_t>(base);
                if (value > (static_cast<std::uint64_t>(INT64_MAX) - digit) / radix)
                    fail(at_line, at_column, "integer literal too large");
                value = value * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
                any = true;
            }
            if (!any) fail(at_line, at_column, "invalid number");
            push(TokenKind::Int, std::string(s.substr(pos, end - pos)), at_line, at_column).int_value =
                static_cast<std::int64_t>(value);
            advance_to(end);
            return;
        }
        digit_run();
        bool is_float = false;
        // After a dot ("foo.0.1") a number is an item index, never the start of a float.
        const bool after_dot = pos > 0 && s[pos - 1] == '.';
        if (!after_dot) {
            if (end + 1 < s.size() && s[end] == '.' && is_digit(s[end + 1])) {
                digits += '.';
                ++end;
                digit_run();
                is_float = true;
            }
            if (end + 1 < s.size() && (s[end] == 'e' || s[end] == 'E')) {
                std::size_t p = end + 1;
                if (p < s.size() && (s[p] == '+' || s[p] == '-')) ++p;
                if (p < s.size() && is_digit(s[p])) {
                    digits += 'e';
                    if (s[end + 1] == '-') digits += '-';
                    end = p;
                    digit_run();
                    is_float = true;
                }
            }
        }
        Token& t = push(is_float ? TokenKind::Float : TokenKind::Int, std::string(s.substr(pos, end - pos)), at_line,
                        at_column);
        if (is_float) {
            std::from_chars(digits.data(), digits.data() + digits.size(), t.float_value);
        } else {
            if (digits.size() > 1 && digits[0] == '0' && digits.find_first_not_of('0') != std::string::npos)
                fail(at_line, at_column, "leading zeros are not allowed in an integer");  // as in Python
            const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), t.int_value);
            if (res.ec != std::errc()) fail(at_line, at_column, "integer literal too large");
        }
        advance_to(end);
    }

    void string_token() {
        const int at_line = line, at_column = column;
        const char quote = s[pos];
        std::size_t end = pos + 1;
        while (end < s.size() && s[end] != quote) end += s[end] == '\\' ? 2 : 1;
        if (end >= s.size()) fail(at_line, at_column, "unterminated string");
        push(TokenKind::String, unescape(s.substr(pos + 1, end - pos - 1), at_line, at_column), at_line, at_column);
        advance_to(end + 1);
    }

    // Python's unicode-escape decoding, which Jinja applies to string literals.
    std::string unescape(std::string_view raw, int at_line, int at_column) const {
        std::u32string out;
        const std::u32string text = py::decode(raw);
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (text[i] != '\\' || i + 1 >= text.size()) {
                out += text[i];
                continue;
            }
            const char32_t e = text[++i];
            auto hex = [&](int count) {
                char32_t v = 0;
                for (int k = 0; k < count; ++k) {
                    const int d = i + 1 < text.size() && text[i + 1] < 128 ? hex_value(static_cast<char>(text[i + 1])) : -1;
                    if (d < 0)
                        fail(at_line, at_column,
                             "truncated \\" + std::string(1, static_cast<char>(e)) + " escape in a string");
                    v = v * 16 + static_cast<char32_t>(d);
                    ++i;
                }
                return v;
            };
            switch (e) {
                case '\n': break;
                case '\\': out += U'\\'; break;
                case '\'': out += U'\''; break;
                case '"': out += U'"'; break;
                case 'a': out += U'\a'; break;
                case 'b': out += U'\b'; break;
                case 'f': out += U'\f'; break;
                case 'n': out += U'\n'; break;
                case 'r': out += U'\r'; break;
                case 't': out += U'\t'; break;
                case 'v': out += U'\v'; break;
                case 'x': out += hex(2); break;
                case 'u': out += hex(4); break;
                case 'U': {
                    const char32_t v = hex(8);
                    if (v > 0x10ffff) fail(at_line, at_column, "\\U escape out of range in a string");
                    out += v;
                    break;
                }
                case 'N': fail(at_line, at_column, "\\N{...} escapes are not supported");
                default:
                    if (e >= '0' && e <= '7') {
                        char32_t v = e - '0';
                        for (int k = 0; k < 2 && i + 1 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '7'; ++k)
                            v = v * 8 + (text[++i] - '0');
                        out += v;
                    } else {
                        out += U'\\';
                        out += e;
                    }
            }
        }
        return py::encode(out);
    }
};

}  // namespace

Lexed lex(std::string_view source) {
    Lexed out;
    out.source = normalize_newlines(source);
    Lexer lexer;
    lexer.s = out.source;
    lexer.run();
    out.tokens = std::move(lexer.tokens);
    return out;
}

std::string error_at(std::string_view source, int line, int column, const std::string& message) {
    std::size_t start = 0;
    for (int l = 1; l < line && start != std::string_view::npos; ++l) {
        start = source.find('\n', start);
        if (start != std::string_view::npos) ++start;
    }
    std::string_view text;
    if (start != std::string_view::npos) {
        const std::size_t end = source.find('\n', start);
        text = source.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    }
    // Up to 60 code points of the line around the column.
    const std::u32string chars = py::decode(text);
    const std::size_t col = static_cast<std::size_t>(std::max(column, 1) - 1);
    std::size_t from = col > 30 ? col - 30 : 0;
    while (from < chars.size() && from < col && py::is_space(chars[from])) ++from;
    std::size_t to = std::min(chars.size(), from + 60);
    while (to > from && py::is_space(chars[to - 1])) --to;
    std::string excerpt = (from > 0 ? "..." : "") + py::encode(std::u32string_view(chars).substr(from, to - from)) +
                          (to < chars.size() ? "..." : "");
    return "chat template line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message +
           " (at \"" + excerpt + "\")";
}

}  // namespace rill::jinja
