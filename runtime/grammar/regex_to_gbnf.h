// A JSON Schema `pattern` (an ECMAScript regular expression) as a GBNF expression over the string's
// JSON-encoded content: characters JSON must escape are written escaped, and classes never produce
// a raw quote, backslash or control character. Supported: literals, escapes (\d \w \s and their
// negations, \t \n \r \xHH \uHHHH, escaped punctuation), classes, ., groups (also (?:...) and
// named), alternation, * + ? {m,n} (lazy forms match the same strings), ^ and $ at the ends. An
// unanchored side matches any characters there, as JSON Schema specifies. Refused with an Error:
// lookaround, backreferences, \b, Unicode property escapes.
#pragma once
#include <string>

namespace rill::grammar {

// Uses the rule `char` (one JSON string character) for unanchored ends.
std::string regex_to_gbnf(const std::string& pattern);

}  // namespace rill::grammar
