// Chat templates: every reference case renders byte for byte as transformers does, and each Jinja feature
// behaves as Jinja2 (in Hugging Face's configuration) does.
#include "catch.h"

#include <string>

#include "runtime/text/chat_template.h"
#include "runtime/base/error.h"
#include "tests/shared_data.h"

using namespace rill;
using json = nlohmann::ordered_json;

namespace {

const json kMessages = json::parse(R"([
    {"role": "system", "content": "  Be brief.  "},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello! 你好 👋"}
])");

std::string render(const std::string& source, const json& extra = json::object(), const json& messages = kMessages) {
    ChatTemplateInput in;
    in.messages = messages;
    in.add_generation_prompt = false;
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    in.extra = extra;
    in.today = "2026-07-26";
    return render_chat_template(source, in);
}

// The message of the error rendering throws, or "" when it renders.
std::string error_of(const std::string& source, const json& extra = json::object()) {
    try {
        render(source, extra);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

namespace {

// Renders every case of the file's templates (those named `only`, if given) and counts the ones
// that render as transformers does, or fail with its message.
std::pair<int, int> check_cases(const std::string& file, const std::string& only = "") {
    const json all = json::parse(test::read_text(test::shared_path(file)));
    int cases = 0, passed = 0;
    for (const auto& [model, entry] : all.items()) {
        if (!only.empty() && model != only) continue;
        for (const auto& [name, c] : entry.at("cases").items()) {
            INFO(model << " / " << name);
            ++cases;
            ChatTemplateInput in;
            in.bos_token = "<s>";
            in.eos_token = "</s>";
            in.today = "2026-07-26";
            for (const auto& [key, value] : c.at("input").items()) {
                if (key == "messages") in.messages = value;
                else if (key == "tools") in.tools = value;
                else if (key == "add_generation_prompt") in.add_generation_prompt = value.get<bool>();
                else in.extra[key] = value;
            }
            const std::string source = entry.at("template").get<std::string>();
            if (c.contains("expected")) {
                std::string got;
                REQUIRE_NOTHROW(got = render_chat_template(source, in));
                CHECK(got == c.at("expected").get<std::string>());
                passed += got == c.at("expected").get<std::string>();
            } else {
                std::string message;
                try {
                    render_chat_template(source, in);
                } catch (const Error& e) {
                    message = e.what();
                }
                INFO("error: " << message);
                const bool matched = message.find(c.at("error").get<std::string>()) != std::string::npos;
                CHECK(matched);
                passed += matched;
            }
        }
    }
    return {cases, passed};
}

}  // namespace

TEST_CASE("every reference chat template case renders as transformers renders it", "[chat_template]") {
    const auto [cases, passed] = check_cases("chat-templates/cases.json");
    CHECK(cases == 30);
    CHECK(passed == cases);
}

TEST_CASE("Qwen3.5's template renders tools, tool results and thinking on and off as transformers does", "[chat_template]") {
    const auto [cases, passed] = check_cases("chat-templates/cases-2026.json", "Qwen3.5-4B");
    CHECK(cases == 12);
    CHECK(passed == cases);
}

TEST_CASE("Gemma 4's template renders tools, tool results, reasoning and the developer role as transformers does", "[chat_template]") {
    const auto [cases, passed] = check_cases("chat-templates/cases-2026.json", "google-gemma-4-31B-it");
    CHECK(cases == 11);
    CHECK(passed == cases);
}

TEST_CASE("LFM2.5's template renders tools, tool results and past thinking as transformers does", "[chat_template]") {
    const auto [cases, passed] = check_cases("chat-templates/cases-2026.json", "LFM2.5-Instruct");
    CHECK(cases == 8);
    CHECK(passed == cases);
}

TEST_CASE("LFM2-8B-A1B's template renders its tool list and tool responses as transformers does", "[chat_template]") {
    const auto [cases, passed] = check_cases("chat-templates/cases-2026.json", "LFM2-8B-A1B");
    CHECK(cases == 7);
    CHECK(passed == cases);
}

TEST_CASE("Nemotron Nano 2's template renders /think and /no_think, tools and a final answer as transformers does", "[chat_template]") {
    const auto [cases, passed] = check_cases("chat-templates/cases-2026.json", "NVIDIA-Nemotron-Nano-v2");
    CHECK(cases == 9);
    CHECK(passed == cases);
}

TEST_CASE("Nemotron 3 Nano's template renders tools, tool calls and truncated thinking as transformers does", "[chat_template]") {
    const auto [cases, passed] = check_cases("chat-templates/cases-2026.json", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16");
    CHECK(cases == 10);
    CHECK(passed == cases);
}

TEST_CASE("Granite 4.0's template renders tools, documents and its default system prompt as transformers does", "[chat_template]") {
    const auto [cases, passed] = check_cases("chat-templates/cases-2026.json", "ibm-granite-granite-4.0");
    CHECK(cases == 8);
    CHECK(passed == cases);
}

TEST_CASE("block tags drop the newline after them and the indentation before them", "[chat_template]") {
    CHECK(render("a\n  {% if true %}\n  b\n  {% endif %}\nc") == "a\n  b\nc");
    CHECK(render("  {# note #}\nx") == "x");
    CHECK(render("a  {{ 'v' }}  \nb") == "a  v  \nb");  // {{ }} is not a block tag
}

TEST_CASE("a minus sign in a tag strips all whitespace on that side", "[chat_template]") {
    CHECK(render("a \n {{- 'x' -}} \n b") == "axb");
    CHECK(render("a\n\n{%- if true -%}\n\n b \n\n{%- endif -%}\nc") == "abc");
    CHECK(render("x {#- gone -#}\n\n y") == "xy");
}

TEST_CASE("a plus sign keeps what trim_blocks and lstrip_blocks would remove", "[chat_template]") {
    CHECK(render("a\n  {%+ if true +%}\nb{% endif %}") == "a\n  \nb");
}

TEST_CASE("the template's one trailing newline is dropped and CRLF becomes LF", "[chat_template]") {
    CHECK(render("text\n") == "text");
    CHECK(render("text\n\n") == "text\n");
    CHECK(render("a\r\nb\r\n{% if true %}\r\nc\r\n{% endif %}\r\nd") == "a\nb\nc\nd");
}

TEST_CASE("raw blocks output their text unparsed", "[chat_template]") {
    CHECK(render("{% raw %}{{ not a tag }}{% endraw %}") == "{{ not a tag }}");
}

TEST_CASE("loop variables report the position in the loop", "[chat_template]") {
    CHECK(render("{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                 "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}") ==
          "103TrueFalse3;212FalseFalse3;321FalseTrue3;");
    CHECK(render("{% for m in messages %}{{ loop.previtem.role if loop.previtem is defined else '-' }}>"
                 "{{ loop.nextitem.role if loop.nextitem is defined else '-' }} {% endfor %}") ==
          "->user system>assistant user>- ");
    CHECK(error_of("{% for m in messages %}{{ loop.previtem.role }}{% endfor %}").find("there is no previous item") !=
          std::string::npos);
    CHECK(render("{% for i in [1, 2, 3] %}{{ loop.cycle('a', 'b') }}{% endfor %}") == "aba");
}

TEST_CASE("break leaves a loop and continue skips to the next item", "[chat_template]") {
    CHECK(render("{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}"
                 "{{ i }}{% endfor %}") == "023");
}

TEST_CASE("for-else renders when nothing is iterated, after the loop's filter", "[chat_template]") {
    CHECK(render("{% for i in [] %}x{% else %}none{% endfor %}") == "none");
    CHECK(render("{% for m in messages if m.role == 'tool' %}x{% else %}no tools{% endfor %}") == "no tools");
    CHECK(render("{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ m.role }} {% endfor %}") ==
          "1user 2assistant ");
}

TEST_CASE("a set inside a loop stays in the iteration and a namespace carries values out", "[chat_template]") {
    CHECK(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}") == "23|1");
    CHECK(render("{% set ns = namespace(total=0) %}{% for i in [1, 2, 3] %}{% set ns.total = ns.total + i %}"
                 "{% endfor %}{{ ns.total }}") == "6");
    CHECK(render("{% if true %}{% set y = 'if is no scope' %}{% endif %}{{ y }}") == "if is no scope");
}

TEST_CASE("macros take positional, keyword and default arguments", "[chat_template]") {
    const std::string macro = "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}";
    CHECK(render(macro + "{{ greet('Ann') }} {{ greet('Bob', 'Hi') }} {{ greet(greeting='Yo', name='Cy') }}") ==
          "Hello, Ann! Hi, Bob! Yo, Cy!");
    CHECK(render("{% macro f(n) %}{% if n <= 1 %}1{% else %}{{ n * f(n - 1) | int }}{% endif %}{% endmacro %}{{ f(5) }}") ==
          "120");
}

TEST_CASE("a block set captures rendered text, through its filters", "[chat_template]") {
    CHECK(render("{% set s %}  x{{ 1 + 1 }}  {% endset %}[{{ s }}]") == "[  x2  ]");
    CHECK(render("{% set s | trim | upper %}  x{{ 1 + 1 }}  {% endset %}[{{ s }}]") == "[X2]");
}

TEST_CASE("filters follow Jinja and Python string semantics", "[chat_template]") {
    CHECK(render("{{ messages[0].content | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'héllo' | upper }}|{{ 'ÀB' | lower }}") ==
          "Be brief.|a|HÉLLO|àb");
    CHECK(render("{{ \"they're here\" | title }}|{{ \"they're here\".title() }}|{{ 'hELLO' | capitalize }}") ==
          "They're Here|They'Re Here|Hello");
    CHECK(render("{{ 'a-b-c' | replace('-', '+') }}|{{ 'aaa' | replace('a', 'b', 2) }}|{{ [1, 'x'] | join(', ') }}") ==
          "a+b+c|bba|1, x");
    CHECK(render("{{ messages[2].content | length }}|{{ messages | length }}|{{ x | length }}") == "11|3|0");
    CHECK(render("{{ x | default('d') }}|{{ '' | default('d') }}|{{ '' | default('d', true) }}") == "d||d");
    CHECK(render("{{ {'b': 1, 'a': 2} | items | list }}|{{ [3, 1, 2] | first }}{{ [3, 1, 2] | last }}") ==
          "[('b', 1), ('a', 2)]|32");
    CHECK(render("{{ ['b', 'A', 'c'] | sort }}|{{ [1, 2, 1, 'a', 'A'] | unique | list }}|{{ [1, 2] | reverse | list }}") ==
          "['A', 'b', 'c']|[1, 2, 'a']|[2, 1]");
    CHECK(render("{{ '42' | int + '2.5' | float }}|{{ 'x' | int(7) }}|{{ none | string }}|{{ 'a\\nb' | indent(2) }}") ==
          "44.5|7|None|a\n  b");
}

TEST_CASE("dictsort gives a mapping's pairs by key, case-blind unless asked, or by value", "[chat_template]") {
    CHECK(render("{{ {'b': 1, 'A': 3, 'c': 2} | dictsort }}") == "[('A', 3), ('b', 1), ('c', 2)]");
    CHECK(render("{{ {'b': 1, 'A': 3} | dictsort(true) }}|{{ {'b': 1, 'a': 3} | dictsort(reverse=true) }}") ==
          "[('A', 3), ('b', 1)]|[('b', 1), ('a', 3)]");
    CHECK(render("{% for k, v in {'x': 2, 'y': 1} | dictsort(by='value') %}{{ k }}={{ v }};{% endfor %}") == "y=1;x=2;");
    CHECK_THROWS_WITH(render("{{ [1] | dictsort }}"), rill::test::contains("dictsort"));
}

TEST_CASE("select, reject and map pick items by test and attribute", "[chat_template]") {
    CHECK(render("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }}") == "['Hi']");
    CHECK(render("{{ messages | rejectattr('role', 'in', ['user', 'system']) | map(attribute='role') | join }}") ==
          "assistant");
    CHECK(render("{{ [1, 2, 3, 4] | select('odd') | list }}{{ [0, 1, '', 'a'] | reject | list }}"
                 "{{ ['a'] | map('upper') | list }}") == "[1, 3][0, '']['A']");
}

TEST_CASE("tojson writes what Python's json.dumps writes", "[chat_template]") {
    const json extra = json::parse(R"({"tool": {"name": "f", "args": {"z": 1, "a": [1.5, null, true, "é\n\"q\""]}}})");
    CHECK(render("{{ tool | tojson }}", extra) ==
          R"({"name": "f", "args": {"z": 1, "a": [1.5, null, true, "é\n\"q\""]}})");
    CHECK(render("{{ tool.args | tojson(indent=2) }}", extra) ==
          "{\n  \"z\": 1,\n  \"a\": [\n    1.5,\n    null,\n    true,\n    \"é\\n\\\"q\\\"\"\n  ]\n}");
    CHECK(render("{{ tool.args | tojson(sort_keys=true, separators=(',', ':')) }}|{{ 'é😀' | tojson(ensure_ascii=true) }}",
                 extra) == R"({"a":[1.5,null,true,"é\n\"q\""],"z":1}|"\u00e9\ud83d\ude00")");
}

TEST_CASE("str methods, indexing and slicing behave as in Python", "[chat_template]") {
    CHECK(render("{{ '  a \\t b  '.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a b c'.rsplit(' ', 1) }}") ==
          "['a', 'b']|['a', 'b', '', 'c']|['a b', 'c']");
    CHECK(render("{{ 'xxyxx'.lstrip('x') }}|{{ '\\n\\nx\\n'.strip('\\n') }}|{{ 'abc'.endswith(('x', 'c')) }}") ==
          "yxx|x|True");
    CHECK(render("{{ 'héllo'[1] }}|{{ 'héllo'[::-1] }}|{{ [1, 2, 3, 4, 5][-2:] }}|{{ [1, 2, 3, 4, 5][4:0:-2] }}") ==
          "é|olléh|[4, 5]|[5, 3]");
    CHECK(render("{{ messages[-1].role }}|{{ messages[9] is defined }}|{{ 'a</think>b'.split('</think>')[-1] }}") ==
          "assistant|False|b");
}

TEST_CASE("numbers print and divide as Python's do", "[chat_template]") {
    CHECK(render("{{ 7 / 2 }} {{ 4 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 0.1 + 0.2 }}") ==
          "3.5 2.0 3 -4 2 1024 0.30000000000000004");
    CHECK(render("{{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ -0.0 }} {{ 1 == 1.0 }} {{ true + 1 }}") ==
          "1e+16 1000000000000000.0 0.0001 1e-05 -0.0 True 2");
}

TEST_CASE("operators and literals follow Jinja's precedence and Python's truthiness", "[chat_template]") {
    CHECK(render("{{ 'a' + 'b' | upper }}|{{ messages | length - 1 }}|{{ 2 + 3 * 4 }}|{{ 'n' ~ 2 * 3 }}") == "aB|2|14|n6");
    CHECK(error_of("{{ 'n' ~ 1 + 2 }}").find("unsupported operand type(s) for +: 'str' and 'int'") != std::string::npos);
    CHECK(render("{{ 0 or 'x' }}|{{ 'a' and 'b' }}|{{ not [] }}|{{ 'y' if '' else 'n' }}|{{ 1 < 2 < 3 }}") ==
          "x|b|True|n|True");
    CHECK(render("{{ 'a' in 'cat' }}|{{ 'k' not in {'k': 1} }}|{{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }}") ==
          "True|False|True");
    CHECK(render("{{ \"tab\\there\" }}|{{ 'caf\\u00e9' }}|{{ 'x' 'y' }}|{{ [1, 'a', none, true] }}") ==
          "tab\there|café|xy|[1, 'a', None, True]");
}

TEST_CASE("tuples print and compare as Python's and can be dict keys", "[chat_template]") {
    CHECK(render("{{ (1,) }}{{ (1, 2) }}|{{ (1, 2) == [1, 2] }}|{{ {(1, 2): 'pair'}[1, 2] }}|{{ (1, 2) | tojson }}") ==
          "(1,)(1, 2)|False|pair|[1, 2]");
}

TEST_CASE("a tag that opens a body may end in a colon, as Jinja allows", "[chat_template]") {
    CHECK(render("{% if false: %}a{% elif true: %}b{% else: %}c{% endif %}{% for i in [1]: %}{{ i }}{% endfor %}") == "b1");
}

TEST_CASE("tests classify values as Jinja's do", "[chat_template]") {
    CHECK(render("{{ x is defined }}{{ x is undefined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}") ==
          "FalseTrueTrueTrueTrue");
    CHECK(render("{{ 1 is number }}{{ true is boolean }}{{ 'a' is iterable }}{{ [] is sequence }}{{ 3 is odd }}"
                 "{{ 6 is divisibleby 3 }}{{ false is false }}") == "TrueTrueTrueTrueTrueTrueTrue");
}

TEST_CASE("undefined values are falsy and print as nothing, but using them further is an error", "[chat_template]") {
    CHECK(render("[{{ nothing }}]{% if nothing %}x{% endif %}{% for i in nothing %}x{% endfor %}[{{ messages[0].nope }}]") ==
          "[][]");
    CHECK(error_of("{{ nothing.attr }}").find("'nothing' is undefined") != std::string::npos);
    CHECK(error_of("{{ messages[0].nope.deeper }}").find("'dict object' has no attribute 'nope'") != std::string::npos);
    CHECK(error_of("{{ nothing + 1 }}").find("'nothing' is undefined") != std::string::npos);
}

TEST_CASE("tools are undefined unless given, and keep their key order", "[chat_template]") {
    ChatTemplateInput in;
    CHECK(render_chat_template("{{ tools is defined }}", in) == "False");
    in.tools = json::parse(R"([{"type": "function", "function": {"name": "f", "description": "d"}}])");
    CHECK(render_chat_template("{{ tools | tojson }}", in) ==
          R"([{"type": "function", "function": {"name": "f", "description": "d"}}])");
}

TEST_CASE("strftime_now formats the given date", "[chat_template]") {
    CHECK(render("{{ strftime_now('%B %d, %Y') }}|{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%A') }}") ==
          "July 26, 2026|26 Jul 2026|Sunday");
}

TEST_CASE("raise_exception fails with TemplateError and the template's message", "[chat_template]") {
    const std::string message = error_of("{% if true %}{{ raise_exception('No system role here') }}{% endif %}");
    CHECK(message.find("TemplateError: No system role here") != std::string::npos);
    CHECK(message.find("line 1, column 17") != std::string::npos);
}

TEST_CASE("a syntax error names the line and column and quotes the line", "[chat_template]") {
    const std::string message = error_of("Hello\n{{ messages[0] + }}");
    CHECK(message.find("line 2, column 18") != std::string::npos);
    CHECK(message.find("unexpected '}}'") != std::string::npos);
    CHECK(message.find("{{ messages[0] + }}") != std::string::npos);
    CHECK(error_of("{% for m in messages %}x").find("'for' is never closed") != std::string::npos);
    CHECK(error_of("{% if x %}{% endfor %}").find("unexpected 'endfor'") != std::string::npos);
}

TEST_CASE("an unterminated tag is an error at where it opens", "[chat_template]") {
    const std::string message = error_of("ok\n  {{ messages[0].role ");
    CHECK(message.find("line 2, column 3") != std::string::npos);
    CHECK(message.find("unterminated '{{' tag") != std::string::npos);
    CHECK(error_of("{# never closed").find("unterminated comment") != std::string::npos);
    CHECK(error_of("{{ 'never closed }}").find("unterminated string") != std::string::npos);
}

TEST_CASE("an unknown filter is an error before anything renders, except under an if", "[chat_template]") {
    const std::string message = error_of("{{ raise_exception('not reached') }}\n{{ messages | shuffle }}");
    CHECK(message.find("unknown filter 'shuffle'") != std::string::npos);
    CHECK(message.find("line 2, column 15") != std::string::npos);
    CHECK(render("{% if false %}{{ messages | shuffle }}{% endif %}ok") == "ok");  // Jinja defers these
    CHECK(error_of("{{ 1 is prime }}").find("unknown test 'prime'") != std::string::npos);
}

TEST_CASE("runaway templates fail instead of crashing or hanging", "[chat_template]") {
    CHECK(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("nested too deeply") != std::string::npos);
    CHECK(error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
              .find("ran too long") != std::string::npos);
    CHECK(error_of("{% for i in range(100) %}{{ 'x' * 1000000 }}{% endfor %}").find("output longer than") !=
          std::string::npos);
    CHECK(error_of("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}")
              .find("longer than") != std::string::npos);
    CHECK(error_of("{{ range(1000000) | length }}").find("range too big") != std::string::npos);
    CHECK(error_of("{{ " + std::string(200, '(') + "1" + std::string(200, ')') + " }}").find("nested too deeply") !=
          std::string::npos);
}
