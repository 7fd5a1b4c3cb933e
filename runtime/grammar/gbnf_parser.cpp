// GBNF text to a Grammar. A hand-written recursive-descent parser; repetitions and groups become
// generated rules named after the rule they appear in, as llama.cpp names them.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>

#include "runtime/base/error.h"
#include "runtime/grammar/grammar.h"
#include "runtime/grammar/utf8_ranges.h"

namespace rill::grammar {
namespace {

using Sequence = std::vector<Element>;
using Alternatives = std::vector<Sequence>;

bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; }

class Parser {
public:
    Parser(std::string_view text, const GrammarLimits& limits) : text_(text), limits_(limits) {}

    Grammar parse() {
        skip_space();
        if (at_end()) fail("the grammar is empty; it needs at least a rule `root ::= ...`");
        while (!at_end()) {
            const size_t start = pos_;
            const std::string name = read_name();
            if (name.empty()) fail("expected a rule name");
            skip_space();
            if (text_.substr(pos_, 3) != "::=") fail("expected '::=' after the rule name '" + name + "'");
            pos_ += 3;
            const uint32_t id = rule_id(name);
            if (defined_[id]) {
                pos_ = start;
                fail("the rule '" + name + "' is defined twice");
            }
            defined_[id] = true;
            set_alternatives(id, parse_alternatives(name, 0));
            skip_space();
        }
        const auto root = names_.find("root");
        if (root == names_.end()) fail("the grammar has no rule named 'root'");
        for (size_t i = 0; i < grammar_.rules.size(); ++i)
            if (!defined_[i]) throw Error("grammar: the rule '" + grammar_.rules[i].name + "' is used but never defined");
        grammar_.root = root->second;
        check_left_recursion();
        return std::move(grammar_);
    }

private:
    [[noreturn]] void fail(const std::string& message) const {
        const size_t line = 1 + size_t(std::count(text_.begin(), text_.begin() + std::min(pos_, text_.size()), '\n'));
        throw Error("grammar line " + std::to_string(line) + ": " + message);
    }
    bool at_end() const { return pos_ >= text_.size(); }
    char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

    // Spaces, newlines and comments. A new rule is recognised by `name ::=`, so newlines need not
    // end a rule, and alternatives may continue on the next line.
    void skip_space() {
        while (!at_end()) {
            const char c = peek();
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
                ++pos_;
            } else if (c == '#') {
                while (!at_end() && peek() != '\n') ++pos_;
            } else {
                break;
            }
        }
    }

    std::string read_name() {
        const size_t start = pos_;
        while (!at_end() && is_name_char(peek())) ++pos_;
        return std::string(text_.substr(start, pos_ - start));
    }

    // Is a rule definition starting here? (then the sequence before it has ended)
    bool at_definition() const {
        size_t p = pos_;
        while (p < text_.size() && is_name_char(text_[p])) ++p;
        if (p == pos_) return false;
        while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
        return text_.substr(p, 3) == "::=";
    }

    uint32_t rule_id(const std::string& name) {
        const auto [it, inserted] = names_.emplace(name, uint32_t(grammar_.rules.size()));
        if (inserted) {
            grammar_.rules.push_back({name, {}});
            defined_.push_back(false);
        }
        return it->second;
    }

    uint32_t new_rule(const std::string& parent) {
        for (;;) {
            const std::string name = parent + "-" + std::to_string(++generated_);
            if (!names_.count(name)) {
                const uint32_t id = rule_id(name);
                defined_[id] = true;
                return id;
            }
        }
    }

    void set_alternatives(uint32_t id, const Alternatives& alternatives) {
        for (const Sequence& sequence : alternatives) {
            if (grammar_.elements.size() + sequence.size() + 1 > limits_.max_elements)
                fail("the grammar is too large (more than " + std::to_string(limits_.max_elements) + " elements)");
            grammar_.rules[id].alternatives.push_back(uint32_t(grammar_.elements.size()));
            grammar_.elements.insert(grammar_.elements.end(), sequence.begin(), sequence.end());
            grammar_.elements.push_back({ElementKind::End, 0});
        }
    }

    uint32_t byte_set(const std::bitset<256>& set) {
        std::string key(32, '\0');
        for (size_t i = 0; i < 256; ++i)
            if (set[i]) key[i / 8] = char(uint8_t(key[i / 8]) | (1u << (i % 8)));
        const auto [it, inserted] = byte_sets_.emplace(key, uint32_t(grammar_.byte_sets.size()));
        if (inserted) grammar_.byte_sets.push_back(set);
        return it->second;
    }
    Element byte(uint8_t b) {
        std::bitset<256> set;
        set[b] = true;
        return {ElementKind::Bytes, byte_set(set)};
    }

    Alternatives parse_alternatives(const std::string& rule, int depth) {
        if (depth > limits_.max_nesting) fail("groups are nested more than " + std::to_string(limits_.max_nesting) + " deep");
        Alternatives alternatives;
        alternatives.push_back(parse_sequence(rule, depth));
        skip_space();
        while (peek() == '|') {
            ++pos_;
            alternatives.push_back(parse_sequence(rule, depth));
            skip_space();
        }
        return alternatives;
    }

    Sequence parse_sequence(const std::string& rule, int depth) {
        Sequence sequence;
        size_t item_start = 0;  // where the last item began in `sequence`, for a postfix operator
        bool have_item = false;
        for (;;) {
            skip_space();
            const char c = peek();
            if (at_end() || c == '|' || c == ')') break;
            if (c == '"') {
                item_start = sequence.size();
                ++pos_;
                while (peek() != '"') {
                    if (at_end() || peek() == '\n') fail("a string literal is not closed");
                    std::string bytes;
                    append_utf8(bytes, read_char());
                    for (const char b : bytes) sequence.push_back(byte(uint8_t(b)));
                }
                ++pos_;
                have_item = sequence.size() > item_start;
                if (!have_item) continue;  // "" is the empty sequence
            } else if (c == '[') {
                item_start = sequence.size();
                ++pos_;
                sequence.push_back(parse_class(rule));
                have_item = true;
            } else if (c == '.') {
                item_start = sequence.size();
                ++pos_;
                sequence.push_back(class_element(rule, {{0, 0x10FFFF}}, false));
                have_item = true;
            } else if (c == '(') {
                item_start = sequence.size();
                ++pos_;
                const Alternatives inner = parse_alternatives(rule, depth + 1);
                if (peek() != ')') fail("a group '(' is not closed with ')'");
                ++pos_;
                const uint32_t id = new_rule(rule);
                set_alternatives(id, inner);
                sequence.push_back({ElementKind::Rule, id});
                have_item = true;
            } else if (is_name_char(c)) {
                if (at_definition()) break;
                item_start = sequence.size();
                sequence.push_back({ElementKind::Rule, rule_id(read_name())});
                have_item = true;
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (!have_item) fail(std::string("'") + c + "' must follow something to repeat");
                repeat(sequence, item_start, rule);
                have_item = false;  // x** is an error, as in llama.cpp
            } else {
                fail(std::string("unexpected character '") + c + "'");
            }
        }
        return sequence;
    }

    // The operator at pos_ applied to sequence[item_start...].
    void repeat(Sequence& sequence, size_t item_start, const std::string& rule) {
        Element item = sequence[item_start];
        if (sequence.size() - item_start > 1) {  // a literal of several bytes repeats as one rule
            const uint32_t id = new_rule(rule);
            set_alternatives(id, {Sequence(sequence.begin() + std::ptrdiff_t(item_start), sequence.end())});
            item = {ElementKind::Rule, id};
        }
        sequence.resize(item_start);
        int min = 0, max = -1;  // -1: unbounded
        const char op = peek();
        ++pos_;
        if (op == '+') min = 1;
        else if (op == '?') max = 1;
        else if (op == '{') {
            skip_space();
            min = read_count();
            skip_space();
            max = min;
            if (peek() == ',') {
                ++pos_;
                skip_space();
                max = peek() == '}' ? -1 : read_count();
                skip_space();
            }
            if (peek() != '}') fail("expected '}' to close the repetition");
            ++pos_;
            if (max >= 0 && max < min) fail("the repetition {" + std::to_string(min) + "," + std::to_string(max) + "} has its maximum below its minimum");
        }
        for (int i = 0; i < min; ++i) sequence.push_back(item);
        if (max < 0) {
            // star ::= item star | ""  (right recursion: the matcher's stacks do not grow with it)
            const uint32_t star = new_rule(rule);
            set_alternatives(star, {{item, {ElementKind::Rule, star}}, {}});
            sequence.push_back({ElementKind::Rule, star});
        } else if (max > min) {
            // up to k more: optional_k ::= item optional_(k-1) | "", so no choice is ambiguous
            uint32_t inner = new_rule(rule);
            set_alternatives(inner, {{item}, {}});
            for (int k = 2; k <= max - min; ++k) {
                const uint32_t outer = new_rule(rule);
                set_alternatives(outer, {{item, {ElementKind::Rule, inner}}, {}});
                inner = outer;
            }
            sequence.push_back({ElementKind::Rule, inner});
        }
        if (grammar_.elements.size() + sequence.size() > limits_.max_elements) fail("the grammar is too large");
    }

    int read_count() {
        if (!(peek() >= '0' && peek() <= '9')) fail("expected a number in the repetition");
        long value = 0;
        while (peek() >= '0' && peek() <= '9') {
            value = value * 10 + (peek() - '0');
            if (value > limits_.max_repetition) fail("a repetition count is above the limit of " + std::to_string(limits_.max_repetition));
            ++pos_;
        }
        return int(value);
    }

    // One character of a literal or class: UTF-8 in the text, or an escape.
    uint32_t read_char() {
        const unsigned char c = uint8_t(peek());
        if (c == '\\') {
            ++pos_;
            const char e = peek();
            if (at_end()) fail("the grammar ends inside an escape");
            ++pos_;
            switch (e) {
                case 'n': return '\n';
                case 'r': return '\r';
                case 't': return '\t';
                case 'x': return read_hex(2);
                case 'u': return read_hex(4);
                case 'U': return read_hex(8);
                default:
                    if ((e >= '!' && e <= '/') || (e >= ':' && e <= '@') || (e >= '[' && e <= '`') || (e >= '{' && e <= '~') || e == ' ') return uint8_t(e);
                    fail(std::string("unknown escape '\\") + e + "'");
            }
        }
        size_t length = 0;
        const uint32_t cp = decode_utf8(text_.substr(pos_), length);
        if (length == 0) fail("the grammar text is not valid UTF-8");
        pos_ += length;
        return cp;
    }

    uint32_t read_hex(int digits) {
        uint32_t value = 0;
        for (int i = 0; i < digits; ++i) {
            const char h = peek();
            int v = -1;
            if (h >= '0' && h <= '9') v = h - '0';
            else if (h >= 'a' && h <= 'f') v = h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') v = h - 'A' + 10;
            if (v < 0) fail("expected " + std::to_string(digits) + " hexadecimal digits in an escape");
            value = value * 16 + uint32_t(v);
            ++pos_;
        }
        if (value > 0x10FFFF) fail("the escape names no Unicode character");
        return value;
    }

    Element parse_class(const std::string& rule) {
        bool negated = false;
        if (peek() == '^') {
            negated = true;
            ++pos_;
        }
        std::vector<CodeRange> ranges;
        while (peek() != ']') {
            if (at_end()) fail("a character class '[' is not closed with ']'");
            const uint32_t lo = read_char();
            uint32_t hi = lo;
            if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
                ++pos_;
                hi = read_char();
                if (hi < lo) fail("the class range is reversed");
            }
            ranges.push_back({lo, hi});
        }
        ++pos_;
        return class_element(rule, ranges, negated);
    }

    // A set of code points as one byte element (ASCII only) or a rule of UTF-8 byte sequences.
    Element class_element(const std::string& rule, std::vector<CodeRange> ranges, bool negated) {
        ranges = normalise_ranges(std::move(ranges), negated);
        std::bitset<256> ascii;
        std::vector<std::vector<ByteRange>> sequences;
        for (const CodeRange& r : ranges) {
            for (uint32_t c = r.lo; c <= std::min<uint32_t>(r.hi, 0x7F); ++c) ascii[c] = true;
            if (r.hi >= 0x80) utf8_sequences({std::max<uint32_t>(r.lo, 0x80), r.hi}, sequences);
        }
        if (sequences.empty()) {
            if (ascii.none()) fail("the character class matches nothing");
            return {ElementKind::Bytes, byte_set(ascii)};
        }
        Alternatives alternatives;
        if (ascii.any()) alternatives.push_back({{ElementKind::Bytes, byte_set(ascii)}});
        for (const auto& seq : sequences) {
            Sequence s;
            for (const ByteRange& b : seq) {
                std::bitset<256> set;
                for (unsigned v = b.lo; v <= b.hi; ++v) set[v] = true;
                s.push_back({ElementKind::Bytes, byte_set(set)});
            }
            alternatives.push_back(std::move(s));
        }
        const uint32_t id = new_rule(rule);
        set_alternatives(id, alternatives);
        return {ElementKind::Rule, id};
    }

    // A rule that can reach itself before consuming a byte would make the matcher loop.
    void check_left_recursion() const {
        const size_t n = grammar_.rules.size();
        std::vector<bool> nullable(n, false);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (nullable[r]) continue;
                for (const uint32_t start : grammar_.rules[r].alternatives) {
                    bool all = true;
                    for (uint32_t p = start; grammar_.elements[p].kind != ElementKind::End; ++p) {
                        const Element& e = grammar_.elements[p];
                        if (e.kind == ElementKind::Bytes || !nullable[e.value]) {
                            all = false;
                            break;
                        }
                    }
                    if (all) {
                        nullable[r] = changed = true;
                        break;
                    }
                }
            }
        }
        std::vector<std::vector<uint32_t>> first_refs(n);
        for (size_t r = 0; r < n; ++r)
            for (const uint32_t start : grammar_.rules[r].alternatives)
                for (uint32_t p = start; grammar_.elements[p].kind == ElementKind::Rule; ++p) {
                    first_refs[r].push_back(grammar_.elements[p].value);
                    if (!nullable[grammar_.elements[p].value]) break;
                }
        // Iterative depth-first search for a cycle: 0 unvisited, 1 on the path, 2 done.
        std::vector<uint8_t> state(n, 0);
        for (size_t start = 0; start < n; ++start) {
            if (state[start]) continue;
            std::vector<std::pair<uint32_t, size_t>> path{{uint32_t(start), 0}};
            state[start] = 1;
            while (!path.empty()) {
                auto& [rule, next] = path.back();
                if (next == first_refs[rule].size()) {
                    state[rule] = 2;
                    path.pop_back();
                    continue;
                }
                const uint32_t to = first_refs[rule][next++];
                if (state[to] == 1) {
                    std::string cycle;
                    for (const auto& step : path) cycle += grammar_.rules[step.first].name + " -> ";
                    throw Error("grammar: the rule '" + grammar_.rules[to].name + "' is left-recursive (" + cycle + grammar_.rules[to].name +
                                " without reading a character); rewrite it with repetition, e.g. x ::= item (\",\" item)*");
                }
                if (state[to] == 0) {
                    state[to] = 1;
                    path.push_back({to, 0});
                }
            }
        }
    }

    std::string_view text_;
    const GrammarLimits& limits_;
    size_t pos_ = 0;
    Grammar grammar_;
    std::unordered_map<std::string, uint32_t> names_;
    std::vector<bool> defined_;
    std::unordered_map<std::string, uint32_t> byte_sets_;
    int generated_ = 0;
};

}  // namespace

Grammar parse_gbnf(std::string_view text, const GrammarLimits& limits) { return Parser(text, limits).parse(); }

}  // namespace rill::grammar
