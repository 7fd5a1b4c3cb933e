#include "apps/serve_tools_gemma4.h"

#include <algorithm>
#include <set>

#include "runtime/base/error.h"
#include "runtime/grammar/regex_to_gbnf.h"
#include "runtime/text/jinja/py_str.h"

namespace rill::serve {
namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;

constexpr std::string_view kQuote = "<|\"|>";  // Gemma 4's string quote, one token in its vocabulary
constexpr int kMaxDepth = 64;                   // nesting the reader follows before it gives up

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

void skip_space(std::string_view& s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
}

std::string_view trimmed(std::string_view s) {
    skip_space(s);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

bool take(std::string_view& s, std::string_view word) {
    if (s.substr(0, word.size()) != word) return false;
    s.remove_prefix(word.size());
    return true;
}

bool take_value(std::string_view& s, json& out, int depth);

bool take_string(std::string_view& s, json& out) {
    if (!take(s, kQuote)) return false;
    const size_t end = s.find(kQuote);
    if (end == std::string_view::npos) return false;
    out = std::string(s.substr(0, end));
    s.remove_prefix(end + kQuote.size());
    return true;
}

// JSON's number syntax, read as JSON reads it.
bool take_number(std::string_view& s, json& out) {
    size_t i = 0;
    const auto digits = [&] {
        const size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
        return i > start;
    };
    if (i < s.size() && s[i] == '-') ++i;
    if (!digits()) return false;
    if (i < s.size() && s[i] == '.') {
        ++i;
        if (!digits()) return false;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        if (!digits()) return false;
    }
    out = json::parse(s.substr(0, i), nullptr, false);
    if (out.is_discarded()) return false;  // leading zeros, as JSON has it
    s.remove_prefix(i);
    return true;
}

// Items of a list or a dict between `open` and `close`, separated by commas; `item` reads one.
template <typename Item>
bool take_items(std::string_view& s, char open, char close, Item item) {
    if (s.empty() || s.front() != open) return false;
    s.remove_prefix(1);
    skip_space(s);
    if (!s.empty() && s.front() == close) {
        s.remove_prefix(1);
        return true;
    }
    for (;;) {
        if (!item()) return false;
        skip_space(s);
        if (s.empty()) return false;
        const char c = s.front();
        s.remove_prefix(1);
        if (c == close) return true;
        if (c != ',') return false;
        skip_space(s);
    }
}

// A key is bare (anything up to ':' but '}'), or quoted as a string.
bool take_key(std::string_view& s, std::string& key) {
    if (s.substr(0, kQuote.size()) == kQuote) {
        json quoted;
        if (!take_string(s, quoted)) return false;
        key = quoted.get<std::string>();
        skip_space(s);
        return take(s, ":");
    }
    const size_t end = s.find_first_of(":}");
    if (end == std::string_view::npos || s[end] != ':') return false;
    key = std::string(trimmed(s.substr(0, end)));
    s.remove_prefix(end + 1);
    return !key.empty();
}

bool take_dict(std::string_view& s, json& out, int depth) {
    out = json::object();
    return take_items(s, '{', '}', [&] {
        std::string key;
        json value;
        if (!take_key(s, key)) return false;
        skip_space(s);
        if (!take_value(s, value, depth + 1)) return false;
        out[key] = std::move(value);
        return true;
    });
}

bool take_value(std::string_view& s, json& out, int depth) {
    if (depth > kMaxDepth || s.empty()) return false;
    if (s.front() == '{') return take_dict(s, out, depth);
    if (s.front() == '[') {
        out = json::array();
        return take_items(s, '[', ']', [&] {
            json item;
            if (!take_value(s, item, depth + 1)) return false;
            out.push_back(std::move(item));
            return true;
        });
    }
    if (take(s, "true")) return out = true, true;
    if (take(s, "false")) return out = false, true;
    if (take(s, "null")) return out = nullptr, true;
    if (s.substr(0, kQuote.size()) == kQuote) return take_string(s, out);
    return take_number(s, out);
}

// --- the forced call's grammar ---

std::string literal(std::string_view text) { return ordered(std::string(text)).dump(); }

// Keys as dictsort orders them: case-blind, ties in the order given.
std::vector<std::string> sorted_keys(const ordered& object) {
    std::vector<std::string> keys;
    for (const auto& [key, _] : object.items()) keys.push_back(key);
    std::stable_sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) { return jinja::py::lower(a) < jinja::py::lower(b); });
    return keys;
}

// A JSON value as the template writes it (format_argument without key quotes).
std::string gemma_text(const ordered& v) {
    if (v.is_string()) return std::string(kQuote) + v.get<std::string>() + std::string(kQuote);
    if (!v.is_object() && !v.is_array()) return v.dump();
    std::string out(1, v.is_object() ? '{' : '[');
    if (v.is_object()) {
        for (const std::string& key : sorted_keys(v)) {
            if (out.size() > 1) out += ',';
            out.append(key).append(":").append(gemma_text(v[key]));
        }
    } else {
        for (const ordered& item : v) {
            if (out.size() > 1) out += ',';
            out += gemma_text(item);
        }
    }
    out += v.is_object() ? '}' : ']';
    return out;
}

constexpr const char* kGenericRules =
    "gemma-value ::= gemma-string | gemma-dict | gemma-list | gemma-number | \"true\" | \"false\" | \"null\"\n"
    "gemma-string ::= \"<|\\\"|>\" gemma-char* \"<|\\\"|>\"\n"
    "gemma-char ::= [^<] | \"<\" [^|]\n"
    "gemma-dict ::= \"{\" (gemma-key \":\" gemma-value (\",\" gemma-key \":\" gemma-value)*)? \"}\"\n"
    "gemma-key ::= [a-zA-Z0-9_.-]+\n"
    "gemma-list ::= \"[\" (gemma-value (\",\" gemma-value)*)? \"]\"\n"
    "gemma-int ::= \"-\"? (\"0\" | [1-9] [0-9]{0,15})\n"
    "gemma-number ::= gemma-int (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?\n";

struct Rules {
    std::string text;
    int count = 0;
    bool patterns = false;  // a pattern's unanchored ends use the rule `char`
    std::string add(const std::string& body) {
        const std::string name = "gemma-" + std::to_string(count++);
        text += name + " ::= " + body + "\n";
        return name;
    }
};

std::string value_expr(const ordered& schema, Rules& rules, int depth);

// The inside of {...} for an object schema with properties: keys sorted, required ones always present.
// starts[i] is "the members from key i on, none written yet", as a rule of its own (no deep groups).
std::string members_expr(const ordered& schema, Rules& rules, int depth) {
    const ordered& properties = schema["properties"];
    std::set<std::string> required;
    if (schema.contains("required") && schema["required"].is_array())
        for (const ordered& r : schema["required"])
            if (r.is_string()) required.insert(r.get<std::string>());
    const std::vector<std::string> keys = sorted_keys(properties);
    if (keys.empty()) return "";
    std::vector<std::string> members;
    for (const std::string& key : keys) members.push_back(literal(key + ":") + " " + rules.add(value_expr(properties[key], rules, depth + 1)));
    const auto after = [&](size_t from) {
        std::string out;
        for (size_t j = from; j < keys.size(); ++j)
            out += required.count(keys[j]) ? " \",\" " + members[j] : " (\",\" " + members[j] + ")?";
        return out;
    };
    std::string next;  // the rule for the members from i + 1 on
    for (size_t i = keys.size(); i-- > 0;) {
        const std::string here = members[i] + after(i + 1);
        if (required.count(keys[i])) next = rules.add(here);
        else next = rules.add(here + (next.empty() ? " | \"\"" : " | " + next));
    }
    return next;
}

std::string value_expr(const ordered& schema, Rules& rules, int depth) {
    if (depth > 16 || !schema.is_object()) return "gemma-value";
    if (schema.contains("const")) return literal(gemma_text(schema["const"]));
    std::string alternatives;
    const auto either = [&](const std::string& expr) { alternatives += (alternatives.empty() ? "" : " | ") + expr; };
    if (schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty()) {
        for (const ordered& v : schema["enum"]) either(literal(gemma_text(v)));
        return "(" + alternatives + ")";
    }
    for (const char* key : {"anyOf", "oneOf"})
        if (schema.contains(key) && schema[key].is_array() && !schema[key].empty()) {
            for (const ordered& option : schema[key]) either(value_expr(option, rules, depth + 1));
            return "(" + alternatives + ")";
        }
    const ordered type = schema.value("type", ordered());
    if (type.is_array() && !type.empty()) {
        for (const ordered& t : type) {
            ordered one = schema;
            one["type"] = t;
            either(value_expr(one, rules, depth + 1));
        }
        return "(" + alternatives + ")";
    }
    const std::string name = type.is_string() ? type.get<std::string>() : "";
    const auto count = [&](const char* key, int fallback) {
        const ordered v = schema.value(key, ordered());
        return v.is_number_integer() ? int(std::clamp<int64_t>(v.get<int64_t>(), 0, 1000)) : fallback;
    };
    if (name == "string" && schema.contains("pattern") && schema["pattern"].is_string()) {
        // The pattern over the string's characters (written raw between the quotes, not JSON-escaped).
        try {
            const std::string expression = grammar::regex_to_gbnf(schema["pattern"].get<std::string>());
            rules.patterns = true;
            return literal(kQuote) + " (" + expression + ") " + literal(kQuote);
        } catch (const Error&) {
            // Beyond what the converter reads: any string.
        }
    }
    if (name == "string") {
        const int low = count("minLength", 0), high = count("maxLength", -1);
        const std::string chars = high >= low ? "gemma-char{" + std::to_string(low) + "," + std::to_string(high) + "}"
                                              : low > 0 ? "gemma-char{" + std::to_string(low) + ",}" : "gemma-char*";
        return literal(kQuote) + " " + chars + " " + literal(kQuote);
    }
    if (name == "integer") return "gemma-int";
    if (name == "number") return "gemma-number";
    if (name == "boolean") return "(\"true\" | \"false\")";
    if (name == "null") return "\"null\"";
    if (name == "array") {
        const std::string item = rules.add(schema.contains("items") ? value_expr(schema["items"], rules, depth + 1) : "gemma-value");
        const std::string more = item + " (\",\" " + item + ")*";
        return "\"[\" " + (count("minItems", 0) > 0 ? more : "(" + more + ")?") + " \"]\"";
    }
    if ((name == "object" || name.empty()) && schema.contains("properties") && schema["properties"].is_object()) {
        const std::string members = members_expr(schema, rules, depth);
        return "\"{\" " + (members.empty() ? "" : members + " ") + "\"}\"";
    }
    if (name == "object") return "gemma-dict";
    return "gemma-value";
}

}  // namespace

bool take_gemma4_call(std::string_view& s, std::vector<ToolCall>& calls) {
    skip_space(s);
    if (!take(s, "call:")) return false;
    const size_t open = s.find('{');
    if (open == std::string_view::npos) return false;
    const std::string_view name = trimmed(s.substr(0, open));
    if (name.empty() || std::any_of(name.begin(), name.end(), [](char c) { return is_space(c) || c == '<' || c == '}'; })) return false;
    s.remove_prefix(open);
    json arguments;
    if (!take_dict(s, arguments, 0)) return false;
    ToolCall call;
    call.name = std::string(name);
    call.arguments = arguments.dump(-1, ' ', false, json::error_handler_t::replace);
    calls.push_back(std::move(call));
    return true;
}

std::string gemma4_call_gbnf(const std::vector<Tool>& tools, int max_calls) {
    Rules rules;
    std::string alternatives;
    for (const Tool& tool : tools) {
        const ordered& parameters = tool.parameters;
        std::string arguments = "gemma-dict";
        if (parameters.is_object() && parameters.contains("properties") && parameters["properties"].is_object()) {
            const std::string members = members_expr(parameters, rules, 0);
            arguments = "\"{\" " + (members.empty() ? "" : members + " ") + "\"}\"";
        }
        alternatives += (alternatives.empty() ? "" : " | ") + literal(tool.name) + " " + arguments;
    }
    const std::string repeat = max_calls > 1 ? "{1," + std::to_string(max_calls) + "}" : "";
    return "root ::= gemma-call" + repeat + "\ngemma-call ::= " + literal(std::string(kGemma4CallOpen) + "call:") + " (" + alternatives + ") " +
           literal(kGemma4CallClose) + "\n" + rules.text + kGenericRules + (rules.patterns ? "char ::= gemma-char\n" : "");
}

bool gemma4_template_reads_tool_messages(std::string_view source) {
    return source.find("{#- OpenAI Chat Completions:") != std::string_view::npos;
}

ordered gemma4_tool_responses(const ordered& messages) {
    const auto role = [](const ordered& m) { return m.is_object() ? m.value("role", std::string()) : std::string(); };
    const auto has_calls = [](const ordered& m) { return m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty(); };
    ordered out = ordered::array();
    for (size_t i = 0; i < messages.size();) {
        const ordered& m = messages[i++];
        if (role(m) != "assistant" || !has_calls(m)) {
            out.push_back(m);
            continue;
        }
        ordered turn = {{"role", "assistant"}, {"tool_calls", m["tool_calls"]}};
        ordered responses = ordered::array();
        for (; i < messages.size() && role(messages[i]) == "tool"; ++i) {
            const ordered& result = messages[i];
            ordered response = result.value("content", ordered());
            if (response.is_string()) {
                ordered parsed = ordered::parse(response.get<std::string>(), nullptr, false);
                if (!parsed.is_discarded()) response = std::move(parsed);
            }
            std::string name;
            if (responses.size() < turn["tool_calls"].size()) {
                const ordered& call = turn["tool_calls"][responses.size()];
                if (call.is_object() && call.contains("function") && call["function"].is_object())
                    name = call["function"].value("name", std::string());
            }
            if (name.empty()) name = result.value("tool_call_id", std::string());
            responses.push_back({{"name", name}, {"response", std::move(response)}});
        }
        if (!responses.empty()) turn["tool_responses"] = std::move(responses);
        if (i < messages.size() && role(messages[i]) == "assistant" && !has_calls(messages[i])) {
            const ordered content = messages[i].value("content", ordered());
            if ((content.is_string() && !content.get<std::string>().empty()) || (content.is_array() && !content.empty())) {
                turn["content"] = content;
                ++i;
            }
        }
        out.push_back(std::move(turn));
    }
    return out;
}

}  // namespace rill::serve
