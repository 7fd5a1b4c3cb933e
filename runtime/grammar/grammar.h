// A context-free grammar over bytes, parsed from llama.cpp's GBNF. Character classes are compiled to
// UTF-8 byte sequences, so the matcher works byte by byte: a token that ends inside a character, or a
// byte-level BPE piece that splits one, is matched exactly as far as its bytes go.
#pragma once
#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rill::grammar {

enum class ElementKind : uint8_t {
    Bytes,  // one byte from byte_sets[value]
    Rule,   // the rule rules[value]
    End,    // the end of an alternative
};

struct Element {
    ElementKind kind;
    uint32_t value;
};

struct Rule {
    std::string name;
    std::vector<uint32_t> alternatives;  // where each alternative starts in Grammar::elements
};

// Every alternative is a run of elements ending in End. Repetitions, groups and multi-byte
// character classes have become rules of their own, so each element is one byte or one rule.
struct Grammar {
    std::vector<Element> elements;
    std::vector<std::bitset<256>> byte_sets;
    std::vector<Rule> rules;
    uint32_t root = 0;
};

struct GrammarLimits {
    size_t max_elements = size_t(1) << 20;
    int max_repetition = 1000;  // the largest bound of x{m,n}
    int max_nesting = 64;       // parentheses inside parentheses
};

// Parses GBNF text (llama.cpp's grammar format: `name ::= alternatives`, "literals", [classes],
// ., (groups), * + ? {m,n}, # comments). The start rule is `root`. Throws rill::Error naming the
// line and what is wrong: syntax, undefined rules, left recursion, limits.
Grammar parse_gbnf(std::string_view text, const GrammarLimits& limits = {});

}  // namespace rill::grammar
