// A chat reply split into content, reasoning and tool calls: the same split whether the text comes
// whole or a byte at a time, markers held back only while they may still be markers.
#include <catch2/catch.hpp>

#include <string>

#include "apps/serve_tools.h"

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
