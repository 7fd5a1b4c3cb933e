// LFM2's call syntax (LFM2, LFM2.5, LFM2-8B-A1B): <|tool_call_start|>[name(key=value, ...), ...]<|tool_call_end|>,
// Pythonic calls whose values are Python literals (strings in either quote, True, False, None) or JSON's
// (true, false, null), as llama.cpp reads them. The model may write text after the closing marker.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "apps/serve_tools.h"

namespace rill::serve {

inline constexpr std::string_view kLfm2CallOpen = "<|tool_call_start|>";
inline constexpr std::string_view kLfm2CallClose = "<|tool_call_end|>";

// Reads "[f(a=1), g()]" from the start of `s`, moving past it, and adds the calls with their
// arguments as JSON. False if it is not such a list.
bool take_pythonic_calls(std::string_view& s, std::vector<ToolCall>& calls);

// A grammar for a list of one call (or up to `max_calls`) in LFM2's syntax, without the markers
// (control tokens, which a grammar over text cannot write; the list alone parses the same): each
// tool's name, its parameters in declared order (the required ones always there), each value JSON
// valid for its schema, which the Pythonic reader also reads.
std::string lfm2_call_gbnf(const std::vector<Tool>& tools, int max_calls);

// LFM2's templates render only an assistant turn's content, so its calls would vanish from the
// history; each assistant turn with tool_calls gets them written after its content in the model's
// own syntax, unless the content already holds them.
nlohmann::ordered_json lfm2_calls_in_content(const nlohmann::ordered_json& messages);

// LFM2's templates: the tool list between <|tool_list_start|> and <|tool_list_end|> (LFM2), or
// after a plain "List of tools: [" (LFM2.5), as llama.cpp tells them apart.
bool is_lfm2_template(std::string_view source);

}  // namespace rill::serve
