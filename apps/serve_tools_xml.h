// The function-block call syntax (Qwen3.5, Qwen3-Coder, Nemotron 3): <tool_call>, <function=NAME>, then
// per argument <parameter=KEY>, the value on its own lines, </parameter>, then </function></tool_call>.
// The templates write a string value bare and others as JSON (Qwen3.5: tojson) or Python's str
// (Nemotron 3: True, None), so a value is read by its parameter's schema where the tool is known.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "apps/serve_tools.h"

namespace rill::serve {

// A parameter whose value is written bare: a string type, a string const, or an enum of strings.
bool xml_value_is_text(const nlohmann::ordered_json& schema);

// Reads <function=NAME> ... </function> from the start of `s` (just after <tool_call>), moving past
// it, and adds the call. A value is text where its parameter (in `tools`, if given) is written bare,
// JSON where the schema says otherwise (Python's True, False and None read as JSON's), and without a
// schema JSON where it is a number, object, array, true, false or null, text otherwise.
bool take_xml_call(std::string_view& s, std::vector<ToolCall>& calls, const std::vector<Tool>* tools);

// A grammar for one block (or up to `max_calls`, a newline between): each tool's name and its
// parameters in declared order, the required ones always there; a bare value follows its schema's
// enum, const, pattern and lengths without '<', the others are JSON valid for their schemas.
std::string xml_call_gbnf(const std::vector<Tool>& tools, int max_calls);

}  // namespace rill::serve
