// Tool calls and reasoning in a chat reply: the call syntax each template family teaches its model,
// a grammar that forces a valid call (tool_choice "required" or a named function), and the parser
// that splits generated text into content, reasoning_content and tool_calls, as it streams.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace rill::serve {

// How a model writes a call, by the chat template it was trained with.
enum class ToolSyntax {
    Hermes,   // <tool_call>{"name": ..., "arguments": {...}}</tool_call> (Qwen2.5, Qwen3, Hermes 3, Granite 4.0)
    XmlFunction,  // <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call> (Qwen3.5, Qwen3-Coder, Nemotron 3)
    Llama3,   // {"name": ..., "parameters": {...}}, perhaps after <|python_tag|> (Llama 3.1 to 3.3)
    Mistral,  // [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
    Granite,  // <|tool_call|>[{"name": ..., "arguments": {...}}, ...]
    Gemma4,   // <|tool_call>call:NAME{key:<|"|>text<|"|>,n:1}<tool_call|>; thinking in <|channel>thought ... <channel|>
    Lfm2,     // <|tool_call_start|>[NAME(key="text", n=1), ...]<|tool_call_end|> (LFM2, LFM2.5)
    Nemotron,  // <TOOLCALL>[{"name": ..., "arguments": {...}}, ...]</TOOLCALL> (Nemotron Nano 2)
    Generic,  // {"tool_calls": [{"name": ..., "arguments": {...}}]}: templates that know no syntax
};
ToolSyntax tool_syntax(const std::string& template_source);
const char* tool_syntax_name(ToolSyntax syntax);

struct Tool {
    std::string name;
    nlohmann::ordered_json parameters;  // a JSON Schema for the arguments object, properties in declared order
};

struct ToolCall {
    std::string id;
    std::string name;
    std::string arguments;  // JSON text, as OpenAI sends it
};

// A grammar whose sentences are one call (or, with `parallel`, one or more) of the given tools in
// the family's syntax, each call's arguments valid for its function's parameters. Throws rill::Error
// naming the tool whose parameters cannot be a grammar.
std::string tool_call_gbnf(ToolSyntax syntax, const std::vector<Tool>& tools, bool parallel);

struct OutputOptions {
    bool tools = false;                // tools were offered: look for calls
    bool reasoning = false;            // the template knows <think> (Gemma 4: its thought channel): text inside goes to reasoning
    bool starts_in_reasoning = false;  // the prompt ends inside an open <think>
    ToolSyntax syntax = ToolSyntax::Generic;
    std::vector<Tool> callable = {};  // the tools offered: a function block's value is read by its parameter's schema
};

// Where reasoning opens and closes for a syntax: <think> and </think>, or Gemma 4's channel markers
// (the channel's name, "thought", follows the opening one).
std::string_view reasoning_open(ToolSyntax syntax);
std::string_view reasoning_close(ToolSyntax syntax);

// The prompt ends inside an open reasoning block, so the reply starts in it.
bool prompt_ends_in_reasoning(ToolSyntax syntax, std::string_view prompt);

// What can be shown of a reply so far, or all of it.
struct ChatOutput {
    std::string content;
    std::string reasoning;
    std::vector<ToolCall> calls;
};

// Fed the generated text piece by piece, returns what can be shown now: text that may still turn
// out to be a marker (<think>, </think>, a call's start) waits for the next piece, and a call is
// held whole until the reply ends, then parsed. A call that does not parse is shown as content.
class ChatOutputStream {
public:
    explicit ChatOutputStream(OutputOptions options) : options_(options), in_reasoning_(options.starts_in_reasoning) {}
    ChatOutput feed(std::string_view text);
    ChatOutput finish();

private:
    void drain(ChatOutput& out, bool final);

    OutputOptions options_;
    bool in_reasoning_;
    bool shown_content_ = false;  // content has begun: a later <think> is text (not so a Gemma 4 channel)
    bool after_reasoning_ = false;  // skip the blank lines after </think>
    bool in_channel_name_ = false;  // Gemma 4: just after <|channel>, its name not yet read
    bool reasoning_begins_ = false;  // Gemma 4: skip the space after the channel's name
    bool in_call_ = false;
    std::string pending_;
    std::string call_;
};

// Appends what `more` shows to `out`: content and reasoning joined, calls in order.
void append(ChatOutput& out, const ChatOutput& more);

// The whole reply at once, as the stream would give it.
ChatOutput parse_chat_output(const OutputOptions& options, std::string_view text);

// The calls in `text` (which starts where a call does), or false if it is not calls. With `rest`,
// text after a closed LFM2 call list (which LFM2 may write) is not calls but goes there; with
// `tools`, function blocks' values are read by their parameters' schemas.
bool parse_tool_calls(std::string_view text, std::vector<ToolCall>& calls, std::string* rest = nullptr, const std::vector<Tool>* tools = nullptr);

// An id for a call: OpenAI's call_ and 24 characters; Mistral's templates want 9 alphanumerics.
std::string new_call_id(ToolSyntax syntax);

}  // namespace rill::serve
