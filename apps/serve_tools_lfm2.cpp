#include "apps/serve_tools_lfm2.h"

#include <set>

#include "runtime/base/utf8.h"
#include "runtime/grammar/json_schema.h"

namespace rill::serve {
namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;

constexpr int kMaxDepth = 64;  // nesting the reader follows before it gives up

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

void skip_space(std::string_view& s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
}

bool take(std::string_view& s, char c) {
    if (s.empty() || s.front() != c) return false;
    s.remove_prefix(1);
    return true;
}

// A literal word (True, null, ...) not followed by more of a name.
bool take_word(std::string_view& s, std::string_view word) {
    if (s.substr(0, word.size()) != word || (s.size() > word.size() && is_word(s[word.size()]))) return false;
    s.remove_prefix(word.size());
    return true;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// `n` hex digits at the start of `s`, or -1.
long take_hex(std::string_view& s, size_t n) {
    if (s.size() < n) return -1;
    long v = 0;
    for (size_t i = 0; i < n; ++i) {
        const int d = hex_digit(s[i]);
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    s.remove_prefix(n);
    return v;
}

// A string in single or double quotes with Python's escapes (JSON's among them); an escape Python
// does not know keeps its backslash, as Python keeps it.
bool take_string(std::string_view& s, json& out) {
    if (s.empty() || (s.front() != '"' && s.front() != '\'')) return false;
    const char quote = s.front();
    s.remove_prefix(1);
    std::string text;
    for (;;) {
        if (s.empty()) return false;
        const char c = s.front();
        s.remove_prefix(1);
        if (c == quote) break;
        if (c != '\\') {
            text += c;
            continue;
        }
        if (s.empty()) return false;
        const char e = s.front();
        s.remove_prefix(1);
        switch (e) {
            case 'n': text += '\n'; break;
            case 't': text += '\t'; break;
            case 'r': text += '\r'; break;
            case 'b': text += '\b'; break;
            case 'f': text += '\f'; break;
            case '0': text += '\0'; break;
            case '\\': case '\'': case '"': case '/': text += e; break;
            case 'x': {
                const long v = take_hex(s, 2);
                if (v < 0) return false;
                append_utf8(text, uint32_t(v));
                break;
            }
            case 'u': {
                long v = take_hex(s, 4);
                if (v < 0) return false;
                if (v >= 0xD800 && v < 0xDC00 && s.substr(0, 2) == "\\u") {  // a surrogate pair, as JSON writes one
                    std::string_view rest = s.substr(2);
                    const long low = take_hex(rest, 4);
                    if (low >= 0xDC00 && low < 0xE000) {
                        v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
                        s = rest;
                    }
                }
                if (v >= 0xD800 && v < 0xE000) v = 0xFFFD;  // a lone surrogate is no character
                append_utf8(text, uint32_t(v));
                break;
            }
            default: text += '\\', text += e;
        }
    }
    out = std::move(text);
    return true;
}

// JSON's number syntax, read as JSON reads it.
bool take_number(std::string_view& s, json& out) {
    size_t i = 0;
    while (i < s.size() && (s[i] == '-' || s[i] == '+' || s[i] == '.' || s[i] == 'e' || s[i] == 'E' || (s[i] >= '0' && s[i] <= '9'))) ++i;
    if (i == 0) return false;
    out = json::parse(s.substr(0, i), nullptr, false);
    if (out.is_discarded() || !out.is_number()) return false;
    s.remove_prefix(i);
    return true;
}

bool take_value(std::string_view& s, json& out, int depth);

// Items between `open` and `close`, separated by commas (a trailing one allowed, as Python allows it).
template <typename Item>
bool take_items(std::string_view& s, char open, char close, Item item) {
    if (!take(s, open)) return false;
    for (;;) {
        skip_space(s);
        if (take(s, close)) return true;
        if (!item()) return false;
        skip_space(s);
        if (take(s, close)) return true;
        if (!take(s, ',')) return false;
    }
}

bool take_value(std::string_view& s, json& out, int depth) {
    if (depth > kMaxDepth || s.empty()) return false;
    if (s.front() == '[') {
        out = json::array();
        return take_items(s, '[', ']', [&] {
            json item;
            if (!take_value(s, item, depth + 1)) return false;
            out.push_back(std::move(item));
            return true;
        });
    }
    if (s.front() == '{') {
        out = json::object();
        return take_items(s, '{', '}', [&] {
            json key, value;
            if (!take_string(s, key)) return false;
            skip_space(s);
            if (!take(s, ':')) return false;
            skip_space(s);
            if (!take_value(s, value, depth + 1)) return false;
            out[key.get<std::string>()] = std::move(value);
            return true;
        });
    }
    if (take_word(s, "True") || take_word(s, "true")) return out = true, true;
    if (take_word(s, "False") || take_word(s, "false")) return out = false, true;
    if (take_word(s, "None") || take_word(s, "null")) return out = nullptr, true;
    if (s.front() == '"' || s.front() == '\'') return take_string(s, out);
    return take_number(s, out);
}

// name(key=value, ...): the name is anything up to '(' without spaces, quotes or brackets.
bool take_call(std::string_view& s, std::vector<ToolCall>& calls) {
    size_t end = 0;
    while (end < s.size() && s[end] != '(' && !is_space(s[end]) && std::string_view("\"'[](){},=<>").find(s[end]) == std::string_view::npos) ++end;
    if (end == 0 || end == s.size() || s[end] != '(') return false;
    ToolCall call;
    call.name = std::string(s.substr(0, end));
    s.remove_prefix(end);
    json arguments = json::object();
    const bool ok = take_items(s, '(', ')', [&] {
        size_t key_end = 0;
        while (key_end < s.size() && is_word(s[key_end])) ++key_end;
        if (key_end == 0) return false;
        const std::string key(s.substr(0, key_end));
        s.remove_prefix(key_end);
        skip_space(s);
        if (!take(s, '=')) return false;
        skip_space(s);
        json value;
        if (!take_value(s, value, 0)) return false;
        arguments[key] = std::move(value);
        return true;
    });
    if (!ok) return false;
    call.arguments = arguments.dump(-1, ' ', false, json::error_handler_t::replace);
    calls.push_back(std::move(call));
    return true;
}

// A value as Python would write it, with JSON's double-quoted strings (as the model writes them).
std::string python_text(const ordered& v) {
    if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
    if (v.is_null()) return "None";
    if (!v.is_object() && !v.is_array()) return v.dump(-1, ' ', false, ordered::error_handler_t::replace);
    std::string out(1, v.is_object() ? '{' : '[');
    bool first = true;
    for (const auto& [key, item] : v.items()) {
        if (!first) out += ", ";
        first = false;
        if (v.is_object()) out += ordered(key).dump(-1, ' ', false, ordered::error_handler_t::replace) + ": ";
        out += python_text(item);
    }
    return out + (v.is_object() ? '}' : ']');
}

std::string literal(const std::string& text) { return grammar::gbnf_literal(text); }

}  // namespace

bool take_pythonic_calls(std::string_view& s, std::vector<ToolCall>& calls) {
    std::vector<ToolCall> found;
    std::string_view rest = s;  // `s` moves only past a whole list
    skip_space(rest);
    const bool ok = take_items(rest, '[', ']', [&] { return take_call(rest, found); });
    if (!ok || found.empty()) return false;
    calls.insert(calls.end(), found.begin(), found.end());
    s = rest;
    return true;
}

std::string lfm2_call_gbnf(const std::vector<Tool>& tools, int max_calls) {
    // Each parameter's value is a rule of the schema grammar; lfm2-any is any JSON value.
    std::vector<std::pair<std::string, ordered>> values = {{"lfm2-any", true}};
    std::string calls, rules;
    for (size_t t = 0; t < tools.size(); ++t) {
        const ordered& parameters = tools[t].parameters;
        std::string arguments = "lfm2-pairs?";
        if (parameters.is_object() && parameters.contains("properties") && parameters["properties"].is_object()) {
            std::set<std::string> required;
            if (parameters.contains("required") && parameters["required"].is_array())
                for (const ordered& r : parameters["required"])
                    if (r.is_string()) required.insert(r.get<std::string>());
            std::vector<std::string> keys, members;
            for (const auto& [key, schema] : parameters["properties"].items()) {
                const std::string value = "lfm2-" + std::to_string(t) + "-" + std::to_string(keys.size());
                values.emplace_back(value, schema);
                keys.push_back(key);
                members.push_back(literal(key + "=") + " " + value);
            }
            // from[i]: the arguments from key i on, none written yet; the required ones are always there.
            const auto after = [&](size_t from) {
                std::string out;
                for (size_t j = from; j < keys.size(); ++j)
                    out += required.count(keys[j]) ? " \", \" " + members[j] : " (\", \" " + members[j] + ")?";
                return out;
            };
            std::string next;
            for (size_t i = keys.size(); i-- > 0;) {
                const std::string name = "lfm2-" + std::to_string(t) + "-from-" + std::to_string(i);
                std::string body = members[i] + after(i + 1);
                if (!required.count(keys[i])) body += next.empty() ? " | \"\"" : " | " + next;
                rules += name + " ::= " + body + "\n";
                next = name;
            }
            arguments = next;
        }
        calls += std::string(calls.empty() ? "" : " | ") + literal(tools[t].name + "(") + " " + arguments + " \")\"";
    }
    const std::string more = max_calls > 1 ? " (\", \" lfm2-call){0," + std::to_string(max_calls - 1) + "}" : "";
    return "root ::= \"[\" lfm2-call" + more + " \"]\"\nlfm2-call ::= " + calls + "\n" + rules +
           "lfm2-pairs ::= lfm2-key \"=\" lfm2-any (\", \" lfm2-key \"=\" lfm2-any)*\nlfm2-key ::= [a-zA-Z_] [a-zA-Z0-9_]*\n" +
           grammar::json_schema_rules(values);
}

ordered lfm2_calls_in_content(const ordered& messages) {
    ordered out = messages;
    for (ordered& m : out) {
        if (!m.is_object() || m.value("role", std::string()) != "assistant" || !m.contains("tool_calls") || !m["tool_calls"].is_array() ||
            m["tool_calls"].empty())
            continue;
        std::string content = m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
        if (content.find(kLfm2CallOpen) != std::string::npos) continue;
        std::string list;
        for (const ordered& call : m["tool_calls"]) {
            const ordered& function = call.is_object() && call.contains("function") ? call["function"] : call;
            if (!function.is_object() || !function.contains("name") || !function["name"].is_string()) continue;
            std::string arguments;
            if (function.contains("arguments") && function["arguments"].is_object())
                for (const auto& [key, value] : function["arguments"].items())
                    arguments += (arguments.empty() ? "" : ", ") + key + "=" + python_text(value);
            list += (list.empty() ? "" : ", ") + function["name"].get<std::string>() + "(" + arguments + ")";
        }
        if (list.empty()) continue;
        m["content"] = content + std::string(kLfm2CallOpen) + "[" + list + "]" + std::string(kLfm2CallClose);
    }
    return out;
}

bool is_lfm2_template(std::string_view source) {
    const bool lists = source.find("<|tool_list_start|>") != std::string_view::npos;
    return (lists && source.find("<|tool_list_end|>") != std::string_view::npos) || (!lists && source.find("List of tools: [") != std::string_view::npos);
}

}  // namespace rill::serve
