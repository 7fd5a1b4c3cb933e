// Constrained decoding: GBNF parses as llama.cpp reads it, the matcher follows text byte by byte,
// token masks allow exactly the tokens that can come next, and JSON Schema becomes a grammar whose
// sentences validate.
#include "catch.h"

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/error.h"
#include "runtime/grammar/grammar.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/grammar/matcher.h"
#include "runtime/grammar/regex_to_gbnf.h"
#include "runtime/grammar/token_trie.h"

using namespace rill;
using namespace rill::grammar;
using nlohmann::json;

namespace {

std::shared_ptr<const Grammar> compile(const std::string& gbnf) { return std::make_shared<const Grammar>(parse_gbnf(gbnf)); }

// The whole text is a sentence of the grammar.
bool matches(const std::shared_ptr<const Grammar>& g, const std::string& text) {
    Matcher m(g);
    return m.accept(text) && m.accepting();
}
bool matches(const std::string& gbnf, const std::string& text) { return matches(compile(gbnf), text); }

std::shared_ptr<const Grammar> schema_grammar(const json& schema) { return compile(json_schema_to_gbnf(schema)); }

std::string parse_error(const std::string& gbnf) {
    try {
        parse_gbnf(gbnf);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

std::string schema_error(const json& schema) {
    try {
        json_schema_to_gbnf(schema);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

std::vector<int32_t> allowed(Matcher& m, const TokenTrie& trie) {
    const TokenMask& mask = m.allowed_tokens(trie);
    std::vector<int32_t> out;
    for (size_t id = 0; id < trie.n_vocab; ++id)
        if (mask.test(int32_t(id))) out.push_back(int32_t(id));
    return out;
}

}  // namespace

TEST_CASE("a literal grammar matches exactly its text", "[grammar]") {
    CHECK(matches(R"(root ::= "yes")", "yes"));
    CHECK_FALSE(matches(R"(root ::= "yes")", "ye"));
    CHECK_FALSE(matches(R"(root ::= "yes")", "yess"));
}

TEST_CASE("alternatives, groups and repetitions read as llama.cpp reads them", "[grammar]") {
    const auto g = compile(R"(
        root ::= greeting (", " name)* "!"?
        greeting ::= "hi" | "hello"
        name ::= [a-z]+ )");
    CHECK(matches(g, "hi"));
    CHECK(matches(g, "hello, ann, bob!"));
    CHECK_FALSE(matches(g, "hello, !"));
    CHECK_FALSE(matches(g, "hey"));
}

TEST_CASE("bounded repetition allows between m and n copies", "[grammar]") {
    const auto g = compile(R"(root ::= [0-9]{2,4} "x"{3} "y"{1,})");
    CHECK(matches(g, "12xxxy"));
    CHECK(matches(g, "1234xxxyyy"));
    CHECK_FALSE(matches(g, "1xxxy"));
    CHECK_FALSE(matches(g, "12345xxxy"));
    CHECK_FALSE(matches(g, "12xxy"));
    CHECK_FALSE(matches(g, "12xxx"));
}

TEST_CASE("a rule may be empty and comments and escapes are understood", "[grammar]") {
    const auto g = compile("# a comment\nroot ::= opt \"\\n\\t\\x41\\u00e9\" # trailing\nopt ::= | \"a\"\n");
    CHECK(matches(g, "\n\tA\xC3\xA9"));
    CHECK(matches(g, "a\n\tA\xC3\xA9"));
}

TEST_CASE("character classes match whole UTF-8 characters, a byte at a time", "[grammar]") {
    const auto g = compile(R"(root ::= [α-ω]+)");
    CHECK(matches(g, "αβγ"));
    CHECK_FALSE(matches(g, "abc"));
    Matcher m(g);
    CHECK(m.accept("\xCE"));  // the first byte of α: a token may end mid-character
    CHECK_FALSE(m.accepting());
    CHECK_FALSE(m.can_accept("a"));
    CHECK(m.accept("\xB1"));
    CHECK(m.accepting());
}

TEST_CASE("a negated class matches any other character, multi-byte ones too", "[grammar]") {
    const auto g = compile(R"(root ::= [^"\\]*)");
    CHECK(matches(g, "plain text, ü and 日本 and 😀"));
    CHECK_FALSE(matches(g, "a\"b"));
    CHECK_FALSE(matches(g, "\xFF"));  // not UTF-8
}

TEST_CASE("a dot is any one character", "[grammar]") {
    CHECK(matches(R"(root ::= "<" . ">")", "<€>"));
    CHECK_FALSE(matches(R"(root ::= "<" . ">")", "<ab>"));
}

TEST_CASE("a rejected byte leaves the matcher where it was", "[grammar]") {
    Matcher m(compile(R"(root ::= "ab" | "ac")"));
    CHECK(m.accept("a"));
    CHECK_FALSE(m.accept("x"));
    CHECK(m.accept("c"));
    CHECK(m.accepting());
    CHECK(m.finished());
}

TEST_CASE("parse errors name the line and what is wrong", "[grammar]") {
    CHECK(parse_error("root ::= foo") == "grammar: the rule 'foo' is used but never defined");
    CHECK(parse_error("other ::= \"a\"") == "grammar line 1: the grammar has no rule named 'root'");
    CHECK_THAT(parse_error("root ::= \"a\"\nroot ::= \"b\""), rill::test::contains("line 2") && rill::test::contains("defined twice"));
    CHECK_THAT(parse_error("root ::= \"abc"), rill::test::contains("line 1"));
    CHECK_THAT(parse_error("root ::= [a-"), rill::test::contains("line 1"));
    CHECK_THAT(parse_error("root ::= \"\\q\""), rill::test::contains("unknown escape"));
    CHECK_THAT(parse_error("root ::= \"a\"{5000}"), rill::test::contains("1000"));
    CHECK_THAT(parse_error(""), rill::test::contains("empty"));
}

TEST_CASE("left recursion is refused, also through a rule that can be empty", "[grammar]") {
    CHECK_THAT(parse_error("root ::= root \"a\" | \"a\""), rill::test::contains("left-recursive"));
    CHECK_THAT(parse_error("root ::= e root \"a\" | \"b\"\ne ::= \"x\"?"), rill::test::contains("left-recursive"));
    CHECK(parse_error("root ::= \"a\" root | \"a\"").empty());  // right recursion is fine
}

TEST_CASE("deeply nested and huge grammars are refused, not crashed on", "[grammar]") {
    CHECK_THAT(parse_error("root ::= " + std::string(10000, '(') + "\"a\"" + std::string(10000, ')')), rill::test::contains("nest"));
    std::string many = "root ::= ";
    for (int i = 0; i < 300000; ++i) many += "\"abcd\" ";
    CHECK_THAT(parse_error(many), rill::test::contains("elements"));
}

TEST_CASE("a token mask allows exactly the tokens whose whole text can come next", "[grammar]") {
    const std::vector<std::string> vocab = {"", "{", "\"", "a", "ab", "\"a", "}", " ", "\xCE", "\xB1", "\xCE\xB1\xCE", "b}"};
    const TokenTrie trie = build_token_trie(vocab);
    Matcher m(compile(R"(root ::= "{" "\"" [aα]* "\"" "}")"));
    CHECK(allowed(m, trie) == std::vector<int32_t>{1});
    REQUIRE(m.accept("{\""));
    // "a", "\"" to close, the first byte of α, and α plus the first byte of another α.
    CHECK(allowed(m, trie) == std::vector<int32_t>{2, 3, 8, 10});
    REQUIRE(m.accept("\xCE"));
    CHECK(allowed(m, trie) == std::vector<int32_t>{9});
}

TEST_CASE("a mask asked twice in one state is the same", "[grammar]") {
    const std::vector<std::string> vocab = {"a", "b", "ab"};
    const TokenTrie trie = build_token_trie(vocab);
    Matcher m(compile(R"(root ::= "a" "b"*)"));
    CHECK(allowed(m, trie) == std::vector<int32_t>{0, 2});
    CHECK(allowed(m, trie) == std::vector<int32_t>{0, 2});
}

TEST_CASE("a schema with required and optional properties accepts what validates and nothing else", "[grammar][schema]") {
    const auto g = schema_grammar(json::parse(R"({
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name"]})"));
    CHECK(matches(g, R"({"name": "ann"})"));
    CHECK(matches(g, R"({"name":"ann","age":41})"));
    CHECK(matches(g, R"({ "name": "b\"ob\u00e9", "age": -3, "tags": ["x", "y"] })"));
    CHECK(matches(g, R"({"name": "ann", "tags": []})"));
    CHECK_FALSE(matches(g, R"({"age": 41})"));
    CHECK_FALSE(matches(g, R"({"name": 5})"));
    CHECK_FALSE(matches(g, R"({"name": "ann", "age": 4.5})"));
    CHECK_FALSE(matches(g, R"({"name": "ann", "other": 1})"));
    CHECK_FALSE(matches(g, R"( {"name": "ann"})"));  // no space before the value
}

TEST_CASE("several schemas in one grammar each get the rule they are named by, references resolved in their own schema", "[grammar][schema]") {
    using ordered = nlohmann::ordered_json;
    const std::string rules = json_schema_rules({{"first", ordered::parse(R"({"type": "integer", "minimum": 1})")},
                                                 {"second", ordered::parse(R"({"$ref": "#/$defs/s", "$defs": {"s": {"type": "string", "maxLength": 2}}})")},
                                                 {"third", ordered::parse(R"({"type": "array", "items": {"$ref": "#/$defs/s"}, "$defs": {"s": {"type": "boolean"}}})")}});
    CHECK(rules.find("root ::=") == std::string::npos);
    const auto g = compile("root ::= first \" \" second \" \" third\n" + rules);
    CHECK(matches(g, R"(7 "ab" [true,false])"));
    CHECK_FALSE(matches(g, R"(0 "ab" [true])"));
    CHECK_FALSE(matches(g, R"(7 "abc" [true])"));
    CHECK_FALSE(matches(g, R"(7 "ab" ["x"])"));
}

TEST_CASE("enum and const allow only the listed values", "[grammar][schema]") {
    const auto g = schema_grammar(json::parse(R"({"enum": ["red", 3, null, {"a": [1]}]})"));
    CHECK(matches(g, R"("red")"));
    CHECK(matches(g, "3"));
    CHECK(matches(g, "null"));
    CHECK(matches(g, R"({"a":[1]})"));
    CHECK_FALSE(matches(g, R"("blue")"));
    CHECK(matches(schema_grammar(json::parse(R"({"const": "x"})")), R"("x")"));
}

TEST_CASE("integer bounds are enforced digit by digit", "[grammar][schema]") {
    const auto g = schema_grammar(json::parse(R"({"type": "integer", "minimum": -12, "maximum": 305})"));
    for (const char* ok : {"-12", "-1", "0", "7", "99", "100", "305"}) CHECK(matches(g, ok));
    for (const char* bad : {"-13", "306", "1000", "007", "-0x"}) CHECK_FALSE(matches(g, bad));
    const auto exclusive = schema_grammar(json::parse(R"({"type": "integer", "exclusiveMinimum": 0})"));
    CHECK(matches(exclusive, "1"));
    CHECK(matches(exclusive, "123456"));
    CHECK_FALSE(matches(exclusive, "0"));
    CHECK_FALSE(matches(exclusive, "-1"));
}

TEST_CASE("string lengths count characters, escapes as one", "[grammar][schema]") {
    const auto g = schema_grammar(json::parse(R"({"type": "string", "minLength": 2, "maxLength": 3})"));
    CHECK(matches(g, R"("ab")"));
    CHECK(matches(g, R"("a\nü")"));
    CHECK_FALSE(matches(g, R"("a")"));
    CHECK_FALSE(matches(g, R"("abcd")"));
}

TEST_CASE("arrays keep to minItems, maxItems and prefixItems", "[grammar][schema]") {
    const auto g = schema_grammar(json::parse(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2})"));
    CHECK(matches(g, "[true]"));
    CHECK(matches(g, "[true, false]"));
    CHECK_FALSE(matches(g, "[]"));
    CHECK_FALSE(matches(g, "[true,true,true]"));
    const auto tuple = schema_grammar(json::parse(R"({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": false})"));
    CHECK(matches(tuple, R"([1, "a"])"));
    CHECK_FALSE(matches(tuple, R"(["a", 1])"));
}

TEST_CASE("anyOf, $ref and recursive definitions become alternatives and rules", "[grammar][schema]") {
    const auto g = schema_grammar(json::parse(R"({
        "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
                           "required": ["v", "next"]}},
        "$ref": "#/$defs/node"})"));
    CHECK(matches(g, R"({"v": 1, "next": {"v": 2, "next": null}})"));
    CHECK_FALSE(matches(g, R"({"v": 1, "next": {"v": 2}})"));
}

TEST_CASE("string formats date, time, date-time and uuid are checked", "[grammar][schema]") {
    CHECK(matches(schema_grammar({{"type", "string"}, {"format", "date"}}), R"("2026-02-28")"));
    CHECK_FALSE(matches(schema_grammar({{"type", "string"}, {"format", "date"}}), R"("2026-02-30")"));
    CHECK(matches(schema_grammar({{"type", "string"}, {"format", "date-time"}}), R"("2026-12-03T16:45:00Z")"));
    CHECK(matches(schema_grammar({{"type", "string"}, {"format", "uuid"}}), R"("123e4567-e89b-12d3-a456-426614174000")"));
}

TEST_CASE("a string pattern is a regular expression over the decoded text", "[grammar][schema]") {
    const auto email = schema_grammar({{"type", "string"}, {"pattern", "^[a-z]+@[a-z]+\\.(com|org)$"}});
    CHECK(matches(email, R"("ann@example.org")"));
    CHECK_FALSE(matches(email, R"("ann@example.net")"));
    CHECK_FALSE(matches(email, R"("x ann@example.org")"));
    const auto unanchored = schema_grammar({{"type", "string"}, {"pattern", "\\d{3}"}});
    CHECK(matches(unanchored, R"("abc 123 def")"));
    CHECK_FALSE(matches(unanchored, R"("abc 12 def")"));
    const auto quote = schema_grammar({{"type", "string"}, {"pattern", "^[\"x]+$"}});
    CHECK(matches(quote, R"("x\"x")"));  // a quote in the class is written escaped
}

TEST_CASE("regular expressions a grammar cannot express are refused by name", "[grammar][schema]") {
    for (const char* p : {"(?=a)", "(a)\\1", "\\bword", "\\p{L}"}) CHECK_THROWS_AS(regex_to_gbnf(p), Error);
    CHECK_THAT(schema_error({{"type", "string"}, {"pattern", "(?!x)"}}), rill::test::contains("'pattern'") && rill::test::contains("lookahead"));
}

TEST_CASE("schema keywords a grammar cannot enforce are refused, naming the keyword and where", "[grammar][schema]") {
    CHECK(schema_error(json::parse(R"({"type": "object", "properties": {"xs": {"type": "array", "uniqueItems": true}}})")) ==
          "json_schema: 'uniqueItems' is not supported (at /properties/xs)");
    CHECK_THAT(schema_error(json::parse(R"({"not": {"type": "string"}})")), rill::test::contains("'not'"));
    CHECK_THAT(schema_error(json::parse(R"({"type": "integer", "multipleOf": 3})")), rill::test::contains("'multipleOf'"));
    CHECK_THAT(schema_error(json::parse(R"({"type": "teapot"})")), rill::test::contains("teapot"));
    CHECK_THAT(schema_error(json::parse(R"({"$ref": "https://example.com/x.json"})")), rill::test::contains("$ref"));
    CHECK_THAT(schema_error(json::parse(R"({"$ref": "#/nowhere"})")), rill::test::contains("#/nowhere"));
    CHECK_THAT(schema_error(json::parse(R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})")), rill::test::contains("a '$ref' leads back"));
}

TEST_CASE("annotations are ignored and an empty schema is any JSON value", "[grammar][schema]") {
    const auto g = schema_grammar(json::parse(R"({"title": "x", "description": "anything", "examples": [1]})"));
    CHECK(matches(g, R"({"a": [1, 2.5e3, "x", null, true]})"));
    CHECK(matches(g, "false"));
    CHECK_FALSE(matches(g, "{"));
}

TEST_CASE("json_object allows any object and nothing else", "[grammar][schema]") {
    const auto g = compile(json_object_gbnf());
    CHECK(matches(g, R"({"k": {"n": [1, {}]}})"));
    CHECK(matches(g, "{}"));
    CHECK_FALSE(matches(g, "[1]"));
    CHECK_FALSE(matches(g, "\"s\""));
}
