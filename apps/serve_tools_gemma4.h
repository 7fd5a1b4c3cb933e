// Gemma 4's call syntax: <|tool_call>call:NAME{key:value,...}<tool_call|>, values in the model's own
// notation: strings between <|"|> quotes, bare keys, numbers, true, false, null, {...} and [...].
// Its template writes keys sorted (dictsort) with no spaces; the reader also takes spaces between items.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "apps/serve_tools.h"

namespace rill::serve {

inline constexpr std::string_view kGemma4CallOpen = "<|tool_call>";
inline constexpr std::string_view kGemma4CallClose = "<tool_call|>";

// Reads "call:NAME{...}" from the start of `s` (just after <|tool_call>), moving past it, and adds
// the call with its arguments as JSON. False if it is not one.
bool take_gemma4_call(std::string_view& s, std::vector<ToolCall>& calls);

// A grammar for one call (or up to `max_calls`) in Gemma 4's syntax: each tool's name, then its
// parameters' keys in the template's order (sorted, case-blind), the required ones always there,
// each value written as its schema asks where the schema says (type, enum, const, properties, items,
// anyOf), any value otherwise.
std::string gemma4_call_gbnf(const std::vector<Tool>& tools, int max_calls);

// Gemma 4's first templates (those without the "OpenAI Chat Completions" scan for role "tool") read a
// call's results from the assistant turn that made it, as tool_responses [{name, response}], and write
// other "tool" messages as a turn of a role the model does not know. For them, as llama.cpp does, each
// assistant turn with calls takes the "tool" messages after it (content parsed as JSON where it is
// JSON, named by the call at the same place, else by tool_call_id) and the plain assistant answer
// after those, if any.
bool gemma4_template_reads_tool_messages(std::string_view template_source);
nlohmann::ordered_json gemma4_tool_responses(const nlohmann::ordered_json& messages);

}  // namespace rill::serve
