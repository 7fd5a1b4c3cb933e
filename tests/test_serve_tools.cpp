// A chat reply split into content, reasoning and tool calls: the same split whether the text comes
// whole or a byte at a time, markers held back only while they may still be markers.
#include "catch.h"

#include <string>

#include "apps/serve_tools.h"
#include "apps/serve_tools_gemma4.h"
#include "apps/serve_tools_lfm2.h"
#include "runtime/format/gguf.h"
#include "runtime/grammar/grammar.h"
#include "runtime/grammar/matcher.h"
#include "runtime/text/chat_template.h"
#include "shared_data.h"

using namespace rill::serve;

namespace {

ChatOutput byte_by_byte(const OutputOptions& options, const std::string& text) {
    ChatOutputStream stream(options);
    ChatOutput all;
    for (const char c : text) append(all, stream.feed(std::string(1, c)));
    append(all, stream.finish());
    return all;
}

void check_same(const OutputOptions& options, const std::string& text) {
    const ChatOutput whole = parse_chat_output(options, text);
    const ChatOutput bytes = byte_by_byte(options, text);
    INFO(text);
    CHECK(whole.content == bytes.content);
    CHECK(whole.reasoning == bytes.reasoning);
    REQUIRE(whole.calls.size() == bytes.calls.size());
    for (size_t i = 0; i < whole.calls.size(); ++i) {
        CHECK(whole.calls[i].name == bytes.calls[i].name);
        CHECK(whole.calls[i].arguments == bytes.calls[i].arguments);
    }
}

const OutputOptions kTools{.tools = true, .reasoning = true, .starts_in_reasoning = false, .syntax = ToolSyntax::Hermes};

}  // namespace

TEST_CASE("a reply fed a byte at a time splits exactly as the whole reply does", "[serve_tools]") {
    for (const char* text : {"plain text", "<think>a</think>\n\nb", "<thin>not a tag", "x <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
                             "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}}]", "{\"name\": \"f\", \"parameters\": {}}", "<tool_call>broken",
                             "  leading spaces", "a < b and c [ d"})
        check_same(kTools, text);
}

TEST_CASE("calls in each family's syntax parse to name and arguments", "[serve_tools]") {
    std::vector<ToolCall> calls;
    REQUIRE(parse_tool_calls("<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>", calls));
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].name == "a");
    CHECK(calls[0].arguments == "{\"x\":1}");
    CHECK(calls[1].name == "b");
    calls.clear();
    REQUIRE(parse_tool_calls("<|python_tag|>{\"name\": \"c\", \"parameters\": {\"q\": \"s\"}}; {\"name\": \"d\", \"parameters\": {}}", calls));
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].arguments == "{\"q\":\"s\"}");
    calls.clear();
    REQUIRE(parse_tool_calls("[TOOL_CALLS][{\"name\": \"e\", \"arguments\": \"{\\\"k\\\": true}\", \"id\": \"abcdefghi\"}]", calls));
    CHECK(calls[0].arguments == "{\"k\":true}");
    CHECK(calls[0].id == "abcdefghi");
    calls.clear();
    REQUIRE(parse_tool_calls("<|tool_call|>[{\"name\": \"g\", \"arguments\": {}}]", calls));
    CHECK(calls[0].name == "g");
    calls.clear();
    REQUIRE(parse_tool_calls("{\"tool_calls\": [{\"name\": \"h\", \"arguments\": {}}]}", calls));
    CHECK(calls[0].name == "h");
}

TEST_CASE("text that is not a call does not parse as one", "[serve_tools]") {
    std::vector<ToolCall> calls;
    CHECK_FALSE(parse_tool_calls("{\"answer\": 42}", calls));
    CHECK_FALSE(parse_tool_calls("<tool_call>{\"name\": 3}</tool_call>", calls));
    CHECK_FALSE(parse_tool_calls("[]", calls));
    CHECK_FALSE(parse_tool_calls("<tool_call>{\"name\": \"f\", \"arguments\": {}} trailing", calls));
    CHECK(calls.empty());
}

TEST_CASE("a JSON answer without tools offered stays content", "[serve_tools]") {
    const ChatOutput out = parse_chat_output({.tools = false}, "{\"name\": \"f\", \"arguments\": {}}");
    CHECK(out.calls.empty());
    CHECK(out.content == "{\"name\": \"f\", \"arguments\": {}}");
}

TEST_CASE("a reply that starts inside <think> has its reasoning up to </think>", "[serve_tools]") {
    const ChatOutput out = parse_chat_output({.reasoning = true, .starts_in_reasoning = true}, "step one\nstep two</think>\n\nAnswer.");
    CHECK(out.reasoning == "step one\nstep two");
    CHECK(out.content == "Answer.");
    const ChatOutput unfinished = parse_chat_output({.reasoning = true, .starts_in_reasoning = true}, "still thinking");
    CHECK(unfinished.reasoning == "still thinking");
    CHECK(unfinished.content.empty());
}

TEST_CASE("a forced call's grammar per family names the function and holds its arguments to the schema", "[serve_tools]") {
    const std::vector<Tool> tools = {{"f", nlohmann::ordered_json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})")}};
    for (const ToolSyntax syntax : {ToolSyntax::Hermes, ToolSyntax::Llama3, ToolSyntax::Mistral, ToolSyntax::Granite, ToolSyntax::Generic}) {
        const std::string gbnf = tool_call_gbnf(syntax, tools, true);
        INFO(tool_syntax_name(syntax) << ": " << gbnf);
        CHECK(gbnf.find("\\\"f\\\"") != std::string::npos);
        CHECK(gbnf.rfind("root ::=", 0) == 0);
    }
}

// Qwen3.5's template (chat-templates/cases-2026.json) teaches calls as XML-like function blocks.
TEST_CASE("Qwen3.5's function blocks parse to a call whose arguments are JSON, after its reasoning", "[serve_tools]") {
    const OutputOptions options{.tools = true, .reasoning = true, .starts_in_reasoning = true, .syntax = ToolSyntax::XmlFunction};
    const std::string reply = "The user wants the weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n"
                              "</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=units>\n{\"t\": \"C\"}\n</parameter>\n"
                              "</function>\n</tool_call>";
    const ChatOutput out = parse_chat_output(options, reply);
    CHECK(out.reasoning == "The user wants the weather.\n");
    CHECK(out.content.empty());
    REQUIRE(out.calls.size() == 1);
    CHECK(out.calls[0].name == "get_weather");
    CHECK(out.calls[0].arguments == R"({"city":"Oslo","days":3,"units":{"t":"C"}})");
    check_same(options, reply);
}

TEST_CASE("a template that writes function blocks is recognised as Qwen3.5's syntax", "[serve_tools]") {
    CHECK(tool_syntax("{{- '<tool_call>\\n<function=' + tool_call.name + '>\\n' }}") == ToolSyntax::XmlFunction);
    CHECK(tool_syntax("<tool_call>\\n{{ tool_call | tojson }}") == ToolSyntax::Hermes);
}

TEST_CASE("a forced call in Qwen3.5's syntax accepts a function block with the tool's parameters", "[serve_tools]") {
    const std::vector<Tool> tools = {{"get_weather", nlohmann::ordered_json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}}})")}};
    const auto grammar = std::make_shared<const rill::grammar::Grammar>(rill::grammar::parse_gbnf(tool_call_gbnf(ToolSyntax::XmlFunction, tools, false)));
    rill::grammar::Matcher good(grammar);
    CHECK(good.accept("<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>"));
    CHECK(good.accepting());
    rill::grammar::Matcher bad(grammar);
    CHECK_FALSE(bad.accept("<tool_call>\n<function=get_time>"));
}

TEST_CASE("a forced function block writes the tool's parameters in order, bare text or JSON as their schemas ask", "[serve_tools]") {
    const std::vector<Tool> tools = {
        {"get_weather", nlohmann::ordered_json::parse(R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
            "unit": {"enum": ["c", "f"]}, "days": {"type": "integer", "minimum": 1}, "zone": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "required": ["deep"]}, "either": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            "required": ["city", "zone"]})")},
        {"free", nlohmann::ordered_json::parse(R"({"type": "object"})")}};
    const auto grammar = std::make_shared<const rill::grammar::Grammar>(rill::grammar::parse_gbnf(tool_call_gbnf(ToolSyntax::XmlFunction, tools, true)));
    const auto accepts = [&](const std::string& text) {
        rill::grammar::Matcher m(grammar);
        return m.accept(text) && m.accepting();
    };
    const auto block = [](const std::string& name, const std::vector<std::pair<std::string, std::string>>& args) {
        std::string out = "<tool_call>\n<function=" + name + ">\n";
        for (const auto& [key, value] : args) out += "<parameter=" + key + ">\n" + value + "\n</parameter>\n";
        return out + "</function>\n</tool_call>";
    };
    const std::string full = block("get_weather", {{"city", "New York"}, {"unit", "f"}, {"days", "3"}, {"zone", "EST"}, {"opts", "{\"deep\": true}"}, {"either", "null"}});
    CHECK(accepts(block("get_weather", {{"city", "123"}, {"zone", "CET"}})));
    CHECK(accepts(full + "\n" + block("free", {{"any_key", "any text"}})));
    CHECK_FALSE(accepts(block("get_weather", {{"zone", "CET"}, {"city", "Oslo"}})));  // not in declared order
    CHECK_FALSE(accepts(block("get_weather", {{"city", "Oslo"}})));                   // zone is required
    CHECK_FALSE(accepts(block("get_weather", {{"city", "a very long city name"}, {"zone", "CET"}})));
    CHECK_FALSE(accepts(block("get_weather", {{"city", "Oslo"}, {"unit", "k"}, {"zone", "CET"}})));
    CHECK_FALSE(accepts(block("get_weather", {{"city", "Oslo"}, {"days", "0"}, {"zone", "CET"}})));
    CHECK_FALSE(accepts(block("get_weather", {{"city", "Oslo"}, {"zone", "cet"}})));
    CHECK_FALSE(accepts(block("get_weather", {{"city", "Oslo"}, {"zone", "CET"}, {"opts", "{}"}})));
    // Read with the tools' schemas, a bare string stays text however it looks, and the rest is JSON
    // (Python's True, False and None too, as Nemotron 3's template writes them); without, it is a guess.
    const OutputOptions options{.tools = true, .syntax = ToolSyntax::XmlFunction, .callable = tools};
    const std::string reply = block("get_weather", {{"city", "123"}, {"unit", "c"}, {"zone", "UTC"}, {"opts", "{\"deep\": True}"}, {"either", "\"x\""}}) +
                              block("get_weather", {{"city", "null"}, {"days", "2"}, {"opts", "{\"deep\": false}"}, {"either", "None"}, {"extra", "7"}});
    const ChatOutput out = parse_chat_output(options, reply);
    REQUIRE(out.calls.size() == 2);
    CHECK(out.calls[0].arguments == R"({"city":"123","either":"x","opts":"{\"deep\": True}","unit":"c","zone":"UTC"})");
    CHECK(out.calls[1].arguments == R"({"city":"null","days":2,"either":null,"extra":7,"opts":{"deep":false}})");
    check_same(options, reply);
    std::vector<ToolCall> guessed;
    REQUIRE(parse_tool_calls(block("get_weather", {{"city", "123"}}), guessed));
    CHECK(guessed[0].arguments == R"({"city":123})");
}

// Gemma 4's template (chat-templates/cases-2026.json) teaches <|tool_call>call:NAME{...}<tool_call|> with
// its own value notation, and thinks in a channel: <|channel>thought, the reasoning, <channel|>.
const OutputOptions kGemma4{.tools = true, .reasoning = true, .starts_in_reasoning = false, .syntax = ToolSyntax::Gemma4};

TEST_CASE("Gemma 4's template is recognised by its call marker, and its reasoning by its channel", "[serve_tools]") {
    CHECK(tool_syntax("{{- '<|tool_call>call:' + function['name'] + '{' -}}") == ToolSyntax::Gemma4);
    CHECK(std::string(tool_syntax_name(ToolSyntax::Gemma4)) == "gemma4");
    CHECK(reasoning_open(ToolSyntax::Gemma4) == "<|channel>");
    CHECK(reasoning_close(ToolSyntax::Hermes) == "</think>");
    // With thinking off the generation prompt closes an empty thought; with it on the reply opens one.
    CHECK_FALSE(prompt_ends_in_reasoning(ToolSyntax::Gemma4, "<|turn>model\n<|channel>thought\n<channel|>"));
    CHECK(prompt_ends_in_reasoning(ToolSyntax::Gemma4, "<|turn>model\n<|channel>thought\n"));
    CHECK(prompt_ends_in_reasoning(ToolSyntax::Hermes, "<|im_start|>assistant\n<think>\n"));
}

TEST_CASE("Gemma 4's calls parse strings, numbers, booleans, null, lists and dicts to JSON arguments", "[serve_tools]") {
    std::vector<ToolCall> calls;
    REQUIRE(parse_tool_calls("<|tool_call>call:get_time{city:<|\"|>San Francisco<|\"|>}<tool_call|>", calls));
    CHECK(calls[0].name == "get_time");
    CHECK(calls[0].arguments == R"({"city":"San Francisco"})");
    calls.clear();
    REQUIRE(parse_tool_calls("<|tool_call>call:f{a:-7,b:3.14,c:true,d:false,e:null,f:1.5e10,g:[<|\"|>x, y<|\"|>,2],"
                             "h:{theme:<|\"|>dark<|\"|>,count:3},i:[],j:{}}<tool_call|>", calls));
    CHECK(calls[0].arguments == R"({"a":-7,"b":3.14,"c":true,"d":false,"e":null,"f":15000000000.0,"g":["x, y",2],"h":{"count":3,"theme":"dark"},"i":[],"j":{}})");
    calls.clear();
    // Several calls one after another, an empty one, and spaces between items.
    REQUIRE(parse_tool_calls("<|tool_call>call:a{}<tool_call|><|tool_call>call:b{ x: 1, y : <|\"|>{not: a dict}<|\"|> }<tool_call|>", calls));
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].arguments == "{}");
    CHECK(calls[1].arguments == R"({"x":1,"y":"{not: a dict}"})");
    calls.clear();
    for (const char* bad : {"<|tool_call>call:f{a:<|\"|>open}<tool_call|>", "<|tool_call>call:{a:1}<tool_call|>", "<|tool_call>f{a:1}<tool_call|>",
                            "<|tool_call>call:f{a:01}<tool_call|>", "<|tool_call>call:f{a:1} then text", "<|tool_call>call:f{:1}<tool_call|>",
                            "<|tool_call>call:f{a:[1,}<tool_call|>"}) {
        INFO(bad);
        CHECK_FALSE(parse_tool_calls(bad, calls));
    }
    CHECK(calls.empty());
}

TEST_CASE("Gemma 4's thought channel goes to reasoning, content and calls after it", "[serve_tools]") {
    const std::string reply = "<|channel>thought\nThe user wants the time.\n<channel|>Let me check.<|tool_call>call:get_time{zone:<|\"|>CET<|\"|>}<tool_call|>";
    const ChatOutput out = parse_chat_output(kGemma4, reply);
    CHECK(out.reasoning == "The user wants the time.\n");
    CHECK(out.content == "Let me check.");
    REQUIRE(out.calls.size() == 1);
    CHECK(out.calls[0].arguments == R"({"zone":"CET"})");
    check_same(kGemma4, reply);
    // As llama.cpp reads Gemma 4: an empty thought, stray channel markers and a trailing empty thought leave the content alone.
    for (const char* text : {"<|channel>thought\n<channel|>Hello, world!", "<|channel>thought<channel|>Hello, world!",
                             "<|channel><|channel>thought\n<channel|>Hello, world!", "Hello, world!<|channel>thought\n<channel|><channel|>"}) {
        INFO(text);
        const ChatOutput plain = parse_chat_output(kGemma4, text);
        CHECK(plain.content == "Hello, world!");
        CHECK(plain.reasoning.empty());
        check_same(kGemma4, text);
    }
    // Another model's <think> is text to Gemma 4, and Gemma 4's channel is text to the others.
    CHECK(parse_chat_output(kGemma4, "<think>x</think>y").content == "<think>x</think>y");
    CHECK(parse_chat_output(kTools, "<|channel>thought\nx<channel|>y").content == "<|channel>thought\nx<channel|>y");
    for (const char* text : {"<|channel>though", "<|channel>final\nanswer", "a <|tool_call>call:f{", "<|tool_call>call:f{a:1}<tool_call|>",
                             "<|channel>thought\n\n  deep<channel|>\n\nanswer<|channel>thought\nmore<channel|> end", "x <|tool_call"})
        check_same(kGemma4, text);
}

TEST_CASE("a forced call in Gemma 4's syntax follows the tool's parameters in the template's order", "[serve_tools]") {
    const std::vector<Tool> tools = {
        {"get_weather", nlohmann::ordered_json::parse(R"({"type": "object", "properties": {"unit": {"type": "string", "enum": ["c", "f"]},
            "city": {"type": "string", "maxLength": 20}, "days": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
            "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "required": ["deep"]}}, "required": ["city"]})")},
        {"ping", nlohmann::ordered_json::parse(R"({"type": "object", "properties": {}})")},
        {"set", nlohmann::ordered_json::parse(R"({"properties": {"zone": {"type": "string", "pattern": "^[A-Z]{3}$"}, "mode": {"enum": [1, {"k": ["v"]}, null]},
            "fixed": {"const": "on"}}, "required": ["zone", "mode", "fixed"]})")}};
    const auto grammar = std::make_shared<const rill::grammar::Grammar>(rill::grammar::parse_gbnf(tool_call_gbnf(ToolSyntax::Gemma4, tools, true)));
    const auto accepts = [&](const std::string& text) {
        rill::grammar::Matcher m(grammar);
        return m.accept(text) && m.accepting();
    };
    CHECK(accepts("<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>}<tool_call|>"));
    CHECK(accepts("<|tool_call>call:get_weather{city:<|\"|>a < b<|\"|>,days:-3,opts:{deep:true},tags:[<|\"|>x<|\"|>],unit:<|\"|>c<|\"|>}<tool_call|>"
                  "<|tool_call>call:ping{}<tool_call|>"));
    CHECK_FALSE(accepts("<|tool_call>call:get_weather{days:3}<tool_call|>"));                              // city is required
    CHECK_FALSE(accepts("<|tool_call>call:get_weather{unit:<|\"|>c<|\"|>,city:<|\"|>Oslo<|\"|>}<tool_call|>"));  // not in sorted order
    CHECK_FALSE(accepts("<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>,unit:<|\"|>k<|\"|>}<tool_call|>"));  // not in the enum
    CHECK_FALSE(accepts("<|tool_call>call:get_weather{city:<|\"|>Oslo<|\"|>,days:1.5}<tool_call|>"));
    CHECK_FALSE(accepts("<|tool_call>call:get_time{}<tool_call|>"));
    CHECK(accepts("<|tool_call>call:set{fixed:<|\"|>on<|\"|>,mode:{k:[<|\"|>v<|\"|>]},zone:<|\"|>CET<|\"|>}<tool_call|>"));
    CHECK(accepts("<|tool_call>call:set{fixed:<|\"|>on<|\"|>,mode:null,zone:<|\"|>UTC<|\"|>}<tool_call|>"));
    CHECK_FALSE(accepts("<|tool_call>call:set{fixed:<|\"|>on<|\"|>,mode:2,zone:<|\"|>UTC<|\"|>}<tool_call|>"));
    CHECK_FALSE(accepts("<|tool_call>call:set{fixed:<|\"|>on<|\"|>,mode:1,zone:<|\"|>utc<|\"|>}<tool_call|>"));
    // What the grammar writes, the parser reads.
    std::vector<ToolCall> calls;
    REQUIRE(parse_tool_calls("<|tool_call>call:get_weather{city:<|\"|>a < b<|\"|>,days:-3,opts:{deep:true}}<tool_call|>", calls));
    CHECK(calls[0].arguments == R"({"city":"a < b","days":-3,"opts":{"deep":true}})");
    const auto one = std::make_shared<const rill::grammar::Grammar>(rill::grammar::parse_gbnf(tool_call_gbnf(ToolSyntax::Gemma4, tools, false)));
    rill::grammar::Matcher single(one);
    CHECK_FALSE(single.accept("<|tool_call>call:ping{}<tool_call|><|tool_call>"));
}

// The template in llama.cpp's Gemma 4 vocabulary file is one of the first: it reads tool results only
// from the assistant turn's tool_responses. The expected text is Jinja2's rendering of the messages
// as llama.cpp converts them (tests/tools/hf_render.py).
TEST_CASE("for Gemma 4's first templates, tool results move into the assistant turn that called, as llama.cpp does", "[serve_tools]") {
    const auto source = rill::GgufFile::open(rill::test::shared_path("vocab/ggml-vocab-gemma-4.gguf")).get_string("tokenizer.chat_template");
    REQUIRE(source);
    CHECK(tool_syntax(*source) == ToolSyntax::Gemma4);
    CHECK_FALSE(gemma4_template_reads_tool_messages(*source));
    const auto messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"},
        {"role": "assistant", "content": "It is 21."},
        {"role": "user", "content": "And now?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "get_time", "arguments": {}}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "14:05"}])");
    const auto converted = gemma4_tool_responses(messages);
    REQUIRE(converted.size() == 4);
    CHECK(converted[1]["tool_responses"] == nlohmann::ordered_json::parse(R"([{"name": "get_weather", "response": {"temp": 21}}])"));
    CHECK(converted[1]["content"] == "It is 21.");
    CHECK(converted[3]["tool_responses"][0]["response"] == "14:05");
    rill::ChatTemplateInput input;
    input.messages = converted;
    input.add_generation_prompt = true;
    input.bos_token = "<bos>";
    CHECK(rill::render_chat_template(*source, input) ==
          "<bos><|turn>user\nWeather in Paris?<turn|>\n<|turn>model\n<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"
          "<|tool_response>response:get_weather{temp:21}<tool_response|>It is 21.<turn|>\n<|turn>user\nAnd now?<turn|>\n<|turn>model\n"
          "<|tool_call>call:get_time{}<tool_call|><|tool_response>response:get_time{value:<|\"|>14:05<|\"|>}<tool_response|><|channel>thought\n<channel|>");
    // The current template scans the "tool" messages itself.
    const auto cases = nlohmann::json::parse(rill::test::read_text(rill::test::shared_path("chat-templates/cases-2026.json")));
    CHECK(gemma4_template_reads_tool_messages(cases["google-gemma-4-31B-it"]["template"].get<std::string>()));
}

// The 2026 hybrid families (chat-templates/cases-2026.json): LFM2 writes Pythonic calls between its own
// markers, Nemotron Nano 2 a JSON list in <TOOLCALL>, Nemotron 3 Qwen3.5's function blocks and Granite
// 4.0 Hermes' JSON in <tool_call>; the Nemotrons think in <think>, their generation prompt opening it.
namespace {

std::string template_of(const std::string& model) {
    static const auto cases = nlohmann::json::parse(rill::test::read_text(rill::test::shared_path("chat-templates/cases-2026.json")));
    return cases.at(model).at("template").get<std::string>();
}

const OutputOptions kLfm2{.tools = true, .reasoning = true, .starts_in_reasoning = false, .syntax = ToolSyntax::Lfm2};
const OutputOptions kNemotron{.tools = true, .reasoning = true, .starts_in_reasoning = true, .syntax = ToolSyntax::Nemotron};

}  // namespace

TEST_CASE("LFM2's, Nemotron's and Granite 4.0's templates are recognised by the call syntax they teach", "[serve_tools]") {
    CHECK(tool_syntax(template_of("LFM2.5-Instruct")) == ToolSyntax::Lfm2);
    CHECK(tool_syntax(template_of("LFM2-8B-A1B")) == ToolSyntax::Lfm2);
    CHECK(tool_syntax(template_of("NVIDIA-Nemotron-Nano-v2")) == ToolSyntax::Nemotron);
    CHECK(tool_syntax(template_of("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")) == ToolSyntax::XmlFunction);
    CHECK(tool_syntax(template_of("ibm-granite-granite-4.0")) == ToolSyntax::Hermes);
    CHECK(std::string(tool_syntax_name(ToolSyntax::Lfm2)) == "lfm2");
    CHECK(std::string(tool_syntax_name(ToolSyntax::Nemotron)) == "nemotron");
    // Both Nemotrons' generation prompts open <think> unless thinking is off.
    CHECK(prompt_ends_in_reasoning(ToolSyntax::Nemotron, "<SPECIAL_11>Assistant\n<think>\n"));
    CHECK_FALSE(prompt_ends_in_reasoning(ToolSyntax::Nemotron, "<SPECIAL_11>Assistant\n<think></think>"));
}

TEST_CASE("LFM2's Pythonic calls parse strings, numbers, Python's and JSON's literals, lists and dicts to JSON arguments", "[serve_tools]") {
    std::vector<ToolCall> calls;
    REQUIRE(parse_tool_calls("<|tool_call_start|>[get_weather(city=\"Zürich\", unit='celsius')]<|tool_call_end|>", calls));
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].name == "get_weather");
    CHECK(calls[0].arguments == R"({"city":"Zürich","unit":"celsius"})");
    calls.clear();
    REQUIRE(parse_tool_calls("<|tool_call_start|>[f(a=-7, b=3.5e2, c=True, d=False, e=None, g=true, h=null, i=[1, 'x', [], {}],"
                             " j={'k': \"v\", \"n\": {'deep': False}}, s='it\\'s \"q\"\\n\\u00fc\\ud83d\\ude00\\x41\\d'), g()]<|tool_call_end|>", calls));
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].arguments == R"({"a":-7,"b":350.0,"c":true,"d":false,"e":null,"g":true,"h":null,"i":[1,"x",[],{}],"j":{"k":"v","n":{"deep":false}},"s":"it's \"q\"\nü😀A\\d"})");
    CHECK(calls[1].name == "g");
    CHECK(calls[1].arguments == "{}");
    calls.clear();
    // JSON calls between the markers (the system prompt may ask for JSON), and the bare list a forced call writes.
    REQUIRE(parse_tool_calls("<|tool_call_start|>[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]<|tool_call_end|>", calls));
    CHECK(calls[0].arguments == R"({"a":1})");
    REQUIRE(parse_tool_calls("[ f( a = 1 , ), g(b=[2,]) ]", calls));
    REQUIRE(calls.size() == 3);
    CHECK(calls[2].arguments == R"({"b":[2]})");
    calls.clear();
    for (const char* bad : {"<|tool_call_start|>[f(a=1]<|tool_call_end|>", "<|tool_call_start|>[(a=1)]<|tool_call_end|>", "<|tool_call_start|>[f(1)]",
                            "<|tool_call_start|>[f(a=x)]", "<|tool_call_start|>[f(a='open)]", "<|tool_call_start|>[]<|tool_call_end|>",
                            "<|tool_call_start|>[f(a=Truex)]", "<|tool_call_start|>[f(a={1: 2})]", "<|tool_call_start|>[f(a=01)]", "[f a=1]"}) {
        INFO(bad);
        CHECK_FALSE(parse_tool_calls(bad, calls));
    }
    CHECK(calls.empty());
}

TEST_CASE("LFM2's reply splits into content, calls and the text after them, streamed too", "[serve_tools]") {
    const std::string reply = "Let me check.<|tool_call_start|>[get_candidate_status(candidate_id=\"12345\")]<|tool_call_end|>Checking the status now.";
    const ChatOutput out = parse_chat_output(kLfm2, reply);
    CHECK(out.content == "Let me check.Checking the status now.");
    REQUIRE(out.calls.size() == 1);
    CHECK(out.calls[0].arguments == R"({"candidate_id":"12345"})");
    check_same(kLfm2, reply);
    // Text after a call that did not close is not a call.
    const ChatOutput open = parse_chat_output(kLfm2, "<|tool_call_start|>[f()] and more");
    CHECK(open.calls.empty());
    CHECK(open.content == "<|tool_call_start|>[f()] and more");
    for (const char* text : {"<think>plan</think>\n\n<|tool_call_start|>[f(a=1)]<|tool_call_end|>", "x <|tool_call_sta", "[f(a='x')]",
                             "<|tool_call_start|>[f(a=1)]<|tool_call_end|><|tool_call_start|>[g()]<|tool_call_end|>", "a [b] c"})
        check_same(kLfm2, text);
}

TEST_CASE("a forced call in LFM2's syntax writes the tool's parameters in order, values valid for their schemas", "[serve_tools]") {
    const std::vector<Tool> tools = {
        {"get_weather", nlohmann::ordered_json::parse(R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
            "unit": {"enum": ["c", "f"]}, "days": {"type": "integer", "minimum": 1}, "zone": {"type": "string", "pattern": "^[A-Z]{3}$"}},
            "required": ["city", "zone"]})")},
        {"ping", nlohmann::ordered_json::parse(R"({"type": "object", "properties": {}})")},
        {"free", nlohmann::ordered_json::parse(R"({"type": "object"})")}};
    const auto grammar = std::make_shared<const rill::grammar::Grammar>(rill::grammar::parse_gbnf(tool_call_gbnf(ToolSyntax::Lfm2, tools, true)));
    const auto accepts = [&](const std::string& text) {
        rill::grammar::Matcher m(grammar);
        return m.accept(text) && m.accepting();
    };
    CHECK(accepts("[get_weather(city=\"Oslo\", zone=\"CET\")]"));
    CHECK(accepts("[get_weather(city=\"Oslo\", unit=\"f\", days=3, zone=\"UTC\"), ping(), free(a=[1, 2], b={\"k\": null})]"));
    CHECK_FALSE(accepts("[get_weather(zone=\"CET\", city=\"Oslo\")]"));     // not in declared order
    CHECK_FALSE(accepts("[get_weather(city=\"Oslo\")]"));                   // zone is required
    CHECK_FALSE(accepts("[get_weather(city=\"Oslo\", unit=\"k\", zone=\"CET\")]"));
    CHECK_FALSE(accepts("[get_weather(city=\"Oslo\", days=0, zone=\"CET\")]"));
    CHECK_FALSE(accepts("[get_weather(city=\"Oslo\", zone=\"cet\")]"));
    CHECK_FALSE(accepts("[get_time()]"));
    // What the grammar writes, the parser reads.
    std::vector<ToolCall> calls;
    REQUIRE(parse_tool_calls("[get_weather(city=\"a \\\"b\\\"\", days=3, zone=\"UTC\"), free(b={\"k\": null})]", calls));
    CHECK(calls[0].arguments == R"({"city":"a \"b\"","days":3,"zone":"UTC"})");
    CHECK(calls[1].arguments == R"({"b":{"k":null}})");
    const auto one = std::make_shared<const rill::grammar::Grammar>(rill::grammar::parse_gbnf(tool_call_gbnf(ToolSyntax::Lfm2, tools, false)));
    rill::grammar::Matcher single(one);
    CHECK_FALSE(single.accept("[ping(), "));
}

// LFM2's templates render only content (tool_call_native_content in cases-2026.json shows the calls there).
TEST_CASE("an LFM2 assistant turn's calls are written into its content as the model writes them, and render as Hugging Face's native case", "[serve_tools]") {
    const auto cases = nlohmann::ordered_json::parse(rill::test::read_text(rill::test::shared_path("chat-templates/cases-2026.json")));
    for (const char* model : {"LFM2.5-Instruct", "LFM2-8B-A1B"}) {
        INFO(model);
        const auto& entry = cases[model];
        const auto& native = entry["cases"]["tool_call_native_content"];
        rill::ChatTemplateInput input;
        input.messages = lfm2_calls_in_content(entry["cases"]["tool_call_result"]["input"]["messages"]);
        input.tools = native["input"]["tools"];
        input.add_generation_prompt = true;
        input.bos_token = "<s>";
        CHECK(rill::render_chat_template(entry["template"].get<std::string>(), input) == native["expected"].get<std::string>());
    }
    const auto messages = nlohmann::ordered_json::parse(R"([{"role": "assistant", "content": "On it.", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": {"s": "x\"y", "n": 1.5, "b": true, "z": null, "l": [false, {"k": "v"}]}}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": {}}}]},
        {"role": "assistant", "content": "<|tool_call_start|>[h()]<|tool_call_end|>", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "h", "arguments": {}}}]}])");
    const auto written = lfm2_calls_in_content(messages);
    CHECK(written[0]["content"] == "On it.<|tool_call_start|>[f(s=\"x\\\"y\", n=1.5, b=True, z=None, l=[False, {\"k\": \"v\"}]), g()]<|tool_call_end|>");
    CHECK(written[1]["content"] == "<|tool_call_start|>[h()]<|tool_call_end|>");
    // What is written parses back to the same calls.
    std::vector<ToolCall> calls;
    REQUIRE(parse_tool_calls(written[0]["content"].get<std::string>().substr(6), calls));
    CHECK(calls[0].arguments == R"({"b":true,"l":[false,{"k":"v"}],"n":1.5,"s":"x\"y","z":null})");
}

TEST_CASE("Nemotron Nano 2's reply starts in its reasoning and calls in a JSON list inside <TOOLCALL>, streamed too", "[serve_tools]") {
    const std::string reply = "The user wants two things.\n</think>\n\nSure.\n<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}, "
                              "{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]</TOOLCALL>";
    const ChatOutput out = parse_chat_output(kNemotron, reply);
    CHECK(out.reasoning == "The user wants two things.\n");
    CHECK(out.content == "Sure.\n");
    REQUIRE(out.calls.size() == 2);
    CHECK(out.calls[1].name == "get_time");
    CHECK(out.calls[1].arguments == R"({"zone":"CET"})");
    check_same(kNemotron, reply);
    std::vector<ToolCall> calls;
    CHECK(parse_tool_calls("<TOOLCALL>[{\"name\": \"f\", \"arguments\": {}}]", calls));  // the closing marker may be cut off
    CHECK_FALSE(parse_tool_calls("<TOOLCALL>[{\"name\": \"f\", \"arguments\": {}}]</TOOLCALL> then text", calls));
    for (const char* text : {"a</think>b<TOOLCALL>[{\"name\": \"f\", \"arguments\": {}}]</TOOLCALL>", "</think><TOOLCALL", "x</thi", "<TOOLCALL>broken"})
        check_same(kNemotron, text);
    const std::vector<Tool> tools = {{"f", nlohmann::ordered_json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})")}};
    const auto grammar = std::make_shared<const rill::grammar::Grammar>(rill::grammar::parse_gbnf(tool_call_gbnf(ToolSyntax::Nemotron, tools, true)));
    rill::grammar::Matcher m(grammar);
    CHECK(m.accept("[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]"));
    CHECK(m.accepting());
}

TEST_CASE("Nemotron 3's reasoning ends at </think> or where its first function block begins", "[serve_tools]") {
    const OutputOptions options{.tools = true, .reasoning = true, .starts_in_reasoning = true, .syntax = ToolSyntax::XmlFunction};
    const std::string block = "<tool_call>\n<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n</function>\n</tool_call>\n";
    for (const std::string& reply : {"Need the time.\n</think>\n" + block, "Need the time.\n" + block}) {
        INFO(reply);
        const ChatOutput out = parse_chat_output(options, reply);
        CHECK(out.reasoning == "Need the time.\n");
        CHECK(out.content.empty());
        REQUIRE(out.calls.size() == 1);
        CHECK(out.calls[0].arguments == R"({"zone":"CET"})");
        check_same(options, reply);
    }
    // Without tools a <tool_call> in the reasoning is only text.
    const ChatOutput prose = parse_chat_output({.reasoning = true, .starts_in_reasoning = true, .syntax = ToolSyntax::XmlFunction}, "use <tool_call> here</think>ok");
    CHECK(prose.reasoning == "use <tool_call> here");
    CHECK(prose.content == "ok");
}

TEST_CASE("Granite 4.0's calls are Hermes' JSON in <tool_call>, after content", "[serve_tools]") {
    const OutputOptions options{.tools = true, .reasoning = false, .starts_in_reasoning = false, .syntax = ToolSyntax::Hermes};
    const std::string reply = "I'll look it up.\n<tool_call>\n{\"name\": \"search_web\", \"arguments\": {\"query\": \"café\", \"max_results\": 3}}\n</tool_call>\n"
                              "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>";
    const ChatOutput out = parse_chat_output(options, reply);
    CHECK(out.content == "I'll look it up.\n");
    REQUIRE(out.calls.size() == 2);
    CHECK(out.calls[0].arguments == R"({"max_results":3,"query":"café"})");
    check_same(options, reply);
}
