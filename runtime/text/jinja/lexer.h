// Splits a Jinja template into text and tag tokens. The whitespace rules Hugging Face renders with
// (trim_blocks, lstrip_blocks, {%- -%} markers, no trailing newline) are applied here, so the parser
// and the evaluator never see them.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rill::jinja {

enum class TokenKind {
    Text,        // literal template text, already trimmed
    BlockBegin,  // {%
    BlockEnd,    // %}
    VarBegin,    // {{
    VarEnd,      // }}
    Name,
    String,  // text holds the decoded value
    Int,
    Float,
    Op,  // text holds the operator: + - * / // % ** ~ == != < <= > >= = . , : | ( ) [ ] { }
    End,
};

struct Token {
    TokenKind kind = TokenKind::End;
    std::string text;
    std::int64_t int_value = 0;
    double float_value = 0;
    int line = 1;
    int column = 1;  // in code points, from 1
};

struct Lexed {
    std::string source;  // newlines normalized to \n, one trailing newline dropped, as Jinja does
    std::vector<Token> tokens;  // ends with an End token
};

// Throws rill::Error (with the position) on an unterminated tag, comment or string, or a stray character.
Lexed lex(std::string_view source);

// A one-line message naming the position and quoting the template line around it.
std::string error_at(std::string_view source, int line, int column, const std::string& message);

}  // namespace rill::jinja
