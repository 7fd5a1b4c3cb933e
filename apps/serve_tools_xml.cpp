#include "apps/serve_tools_xml.h"

#include <algorithm>
#include <set>

#include "runtime/base/error.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/grammar/regex_to_gbnf.h"

namespace rill::serve {
namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;

constexpr std::string_view kFunction = "<function=", kEnd = "</function>", kParameter = "<parameter=", kParameterEnd = "</parameter>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim_left(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    return s;
}

// The schema of `tool`'s parameter `key`, or null where the tool or the parameter is not known.
const ordered* parameter_schema(const std::vector<Tool>* tools, const std::string& tool, const std::string& key) {
    if (!tools) return nullptr;
    for (const Tool& t : *tools) {
        if (t.name != tool) continue;
        const ordered& p = t.parameters;
        if (!p.is_object() || !p.contains("properties") || !p["properties"].is_object() || !p["properties"].contains(key)) return nullptr;
        return &p["properties"][key];
    }
    return nullptr;
}

json value_of(std::string_view text, const ordered* schema) {
    if (schema && xml_value_is_text(*schema)) return std::string(text);
    if (schema) {
        // Nemotron 3's template writes a boolean or null with Python's str.
        if (text == "True") return true;
        if (text == "False") return false;
        if (text == "None") return nullptr;
    }
    const json v = json::parse(text, nullptr, false);
    if (!v.is_discarded() && (schema || !v.is_string())) return v;
    return std::string(text);
}

std::string literal(const std::string& text) { return grammar::gbnf_literal(text); }

// A bare value's grammar: its characters as they are, none of them '<'.
std::string text_value(const ordered& schema, bool& patterns) {
    if (schema.contains("const")) return literal(schema["const"].get<std::string>());
    if (schema.contains("enum")) {
        std::string alternatives;
        for (const ordered& v : schema["enum"]) alternatives += (alternatives.empty() ? "" : " | ") + literal(v.get<std::string>());
        return "(" + alternatives + ")";
    }
    if (schema.contains("pattern") && schema["pattern"].is_string()) {
        try {
            const std::string expression = grammar::regex_to_gbnf(schema["pattern"].get<std::string>());
            patterns = true;
            return "(" + expression + ")";
        } catch (const Error&) {
            // Beyond what the converter reads: any text.
        }
    }
    const auto count = [&](const char* key, int fallback) {
        const ordered v = schema.value(key, ordered());
        return v.is_number_integer() ? int(std::clamp<int64_t>(v.get<int64_t>(), 0, 1000)) : fallback;
    };
    const int low = count("minLength", 0), high = count("maxLength", -1);
    if (high >= low) return "xml-char{" + std::to_string(low) + "," + std::to_string(high) + "}";
    return "xml-char{" + std::to_string(low) + ",}";
}

}  // namespace

bool xml_value_is_text(const ordered& schema) {
    if (!schema.is_object()) return false;
    if (schema.contains("const")) return schema["const"].is_string();
    if (schema.contains("enum"))
        return schema["enum"].is_array() && !schema["enum"].empty() &&
               std::all_of(schema["enum"].begin(), schema["enum"].end(), [](const ordered& v) { return v.is_string(); });
    return schema.value("type", ordered()) == "string";
}

bool take_xml_call(std::string_view& s, std::vector<ToolCall>& calls, const std::vector<Tool>* tools) {
    s = trim_left(s);
    if (s.substr(0, kFunction.size()) != kFunction) return false;
    s.remove_prefix(kFunction.size());
    const size_t close = s.find('>');
    if (close == std::string_view::npos || close == 0) return false;
    ToolCall call;
    call.name = std::string(s.substr(0, close));
    s.remove_prefix(close + 1);
    json arguments = json::object();
    for (;;) {
        s = trim_left(s);
        if (s.substr(0, kEnd.size()) == kEnd) {
            s.remove_prefix(kEnd.size());
            break;
        }
        if (s.substr(0, kParameter.size()) != kParameter) return false;
        s.remove_prefix(kParameter.size());
        const size_t key_end = s.find('>');
        if (key_end == std::string_view::npos || key_end == 0) return false;
        const std::string key(s.substr(0, key_end));
        s.remove_prefix(key_end + 1);
        const size_t value_end = s.find(kParameterEnd);
        if (value_end == std::string_view::npos) return false;
        std::string_view value = s.substr(0, value_end);
        if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
        if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
        arguments[key] = value_of(value, parameter_schema(tools, call.name, key));
        s.remove_prefix(value_end + kParameterEnd.size());
    }
    call.arguments = arguments.dump(-1, ' ', false, json::error_handler_t::replace);
    calls.push_back(std::move(call));
    return true;
}

std::string xml_call_gbnf(const std::vector<Tool>& tools, int max_calls) {
    std::vector<std::pair<std::string, ordered>> json_values;  // the values written as JSON, one rule each
    std::string calls;
    bool patterns = false;
    for (size_t t = 0; t < tools.size(); ++t) {
        const ordered& parameters = tools[t].parameters;
        // Any parameters at all where the tool declares none.
        std::string arguments = "xml-any-parameter*";
        if (parameters.is_object() && parameters.contains("properties") && parameters["properties"].is_object()) {
            std::set<std::string> required;
            if (parameters.contains("required") && parameters["required"].is_array())
                for (const ordered& r : parameters["required"])
                    if (r.is_string()) required.insert(r.get<std::string>());
            arguments.clear();
            size_t i = 0;
            for (const auto& [key, schema] : parameters["properties"].items()) {
                std::string value;
                if (xml_value_is_text(schema)) {
                    value = text_value(schema, patterns);
                } else {
                    value = "xml-" + std::to_string(t) + "-" + std::to_string(i);
                    json_values.emplace_back(value, schema);
                }
                const std::string member = literal("<parameter=" + key + ">\n") + " " + value + " " + literal("\n</parameter>\n");
                arguments += (arguments.empty() ? "" : " ") + (required.count(key) ? member : "(" + member + ")?");
                ++i;
            }
        }
        calls += std::string(t ? " | " : "") + literal("<function=" + tools[t].name + ">\n") + " " + arguments + " " + literal("</function>");
    }
    std::string values = grammar::json_schema_rules(json_values);
    // A pattern's unanchored ends are any characters, by the rule `char`: bare text's, unless a JSON
    // value already needs JSON's.
    if (patterns && values.rfind("char ::=", 0) != 0 && values.find("\nchar ::=") == std::string::npos) values += "char ::= xml-char\n";
    const std::string more = max_calls > 1 ? " (\"\\n\" block){0," + std::to_string(max_calls - 1) + "}" : "";
    return "root ::= block" + more + "\nblock ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\ncall ::= " + calls +
           "\nxml-any-parameter ::= \"<parameter=\" [a-zA-Z0-9_]+ \">\\n\" xml-char* \"\\n</parameter>\\n\"\nxml-char ::= [^<]\n" + values;
}

}  // namespace rill::serve
