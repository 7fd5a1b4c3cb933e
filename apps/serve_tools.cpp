#include "serve_tools.h"

#include <algorithm>
#include <random>
#include <utility>

#include "apps/serve_tools_gemma4.h"
#include "apps/serve_tools_lfm2.h"
#include "apps/serve_tools_xml.h"
#include "runtime/base/error.h"
#include "runtime/grammar/json_schema.h"

namespace rill::serve {
namespace {

using nlohmann::json;

// A forced reply holds at most this many calls, so it ends even where the model would not stop.
constexpr int kMaxParallelCalls = 8;

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
// Gemma 4 thinks in a channel: <|channel>thought, the reasoning, <channel|>.
constexpr std::string_view kChannelOpen = "<|channel>";
constexpr std::string_view kChannelClose = "<channel|>";
constexpr std::string_view kThoughtChannel = "thought";
constexpr std::string_view kNemotronCallOpen = "<TOOLCALL>", kNemotronCallClose = "</TOOLCALL>";
constexpr std::string_view kXmlCallOpen = "<tool_call>";
// Where a call can begin, in every family's syntax. Llama 3's bare JSON and the generic form begin
// with '{' or '[' at the start of the reply, which feed() watches for apart from these.
constexpr std::string_view kCallMarkers[] = {kXmlCallOpen, "[TOOL_CALLS]", "<|tool_call|>", "<|python_tag|>", kGemma4CallOpen, kLfm2CallOpen,
                                             kNemotronCallOpen};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim_left(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    return s;
}

// The longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_suffix(std::string_view text, std::string_view marker) {
    for (size_t n = std::min(marker.size() - 1, text.size()); n > 0; --n)
        if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
    return 0;
}

// Where the JSON value at the start of `s` ends (strings and nesting respected), or npos.
size_t json_value_end(std::string_view s) {
    if (s.empty()) return std::string_view::npos;
    if (s[0] != '{' && s[0] != '[') {
        size_t i = 0;
        if (s[0] == '"') {
            for (i = 1; i < s.size(); ++i) {
                if (s[i] == '\\') ++i;
                else if (s[i] == '"') return i + 1;
            }
            return std::string_view::npos;
        }
        while (i < s.size() && !is_space(s[i]) && s[i] != ',' && s[i] != ']' && s[i] != '}' && s[i] != ';') ++i;
        return i;
    }
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '{' || c == '[') ++depth;
        else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
    }
    return std::string_view::npos;
}

// One call object in any family's spelling: name with arguments or parameters (an object, or a
// string holding one), or OpenAI's own {"function": {...}} shape.
bool read_call(const json& v, std::vector<ToolCall>& calls) {
    if (!v.is_object()) return false;
    if (v.contains("function") && v["function"].is_object()) return read_call(v["function"], calls);
    if (!v.contains("name") || !v["name"].is_string()) return false;
    json arguments = json::object();
    for (const char* key : {"arguments", "parameters"}) {
        if (!v.contains(key)) continue;
        arguments = v[key];
        if (arguments.is_string()) {
            arguments = json::parse(arguments.get<std::string>(), nullptr, false);
            if (arguments.is_discarded()) return false;
        }
        break;
    }
    if (!arguments.is_object()) return false;
    ToolCall call;
    call.name = v["name"].get<std::string>();
    call.arguments = arguments.dump(-1, ' ', false, json::error_handler_t::replace);
    if (v.contains("id") && v["id"].is_string()) call.id = v["id"].get<std::string>();
    calls.push_back(std::move(call));
    return true;
}

// A call, a list of calls, or the generic {"tool_calls": [...]}.
bool read_calls(const json& v, std::vector<ToolCall>& calls) {
    if (v.is_object() && v.contains("tool_calls") && v["tool_calls"].is_array()) return read_calls(v["tool_calls"], calls);
    if (v.is_object() && v.contains("tool_call")) return read_call(v["tool_call"], calls);
    if (v.is_array()) {
        if (v.empty()) return false;
        for (const json& c : v)
            if (!read_call(c, calls)) return false;
        return true;
    }
    return read_call(v, calls);
}

// Reads JSON calls from the start of `s`, moving past them.
bool take_json_calls(std::string_view& s, std::vector<ToolCall>& calls) {
    s = trim_left(s);
    const size_t end = json_value_end(s);
    if (end == std::string_view::npos) return false;
    const json v = json::parse(s.substr(0, end), nullptr, false);
    if (v.is_discarded() || !read_calls(v, calls)) return false;
    s.remove_prefix(end);
    return true;
}

// Ordered, so a call is written name first, as every family's template shows it.
using ordered = nlohmann::ordered_json;

ordered call_schema(ToolSyntax syntax, const std::vector<Tool>& tools) {
    const char* arguments = syntax == ToolSyntax::Llama3 ? "parameters" : "arguments";
    ordered alternatives = ordered::array();
    for (const Tool& tool : tools) {
        const ordered parameters = tool.parameters.is_object() ? tool.parameters : ordered{{"type", "object"}};
        ordered properties = ordered::object();
        properties["name"] = {{"const", tool.name}};
        properties[arguments] = parameters;
        alternatives.push_back({{"type", "object"}, {"properties", properties}, {"required", {"name", arguments}}, {"additionalProperties", false}});
    }
    return alternatives.size() == 1 ? alternatives[0] : ordered{{"anyOf", alternatives}};
}

std::string rename_root(const std::string& gbnf, const std::string& name) {
    std::string out = gbnf;
    if (out.rfind("root ::=", 0) == 0) return name + out.substr(4);
    const size_t at = out.find("\nroot ::=");
    if (at == std::string::npos) throw Error("internal: the schema grammar has no root rule");
    return out.replace(at + 1, 4, name);
}

}  // namespace

std::string_view reasoning_open(ToolSyntax syntax) { return syntax == ToolSyntax::Gemma4 ? kChannelOpen : kThinkOpen; }
std::string_view reasoning_close(ToolSyntax syntax) { return syntax == ToolSyntax::Gemma4 ? kChannelClose : kThinkClose; }

bool prompt_ends_in_reasoning(ToolSyntax syntax, std::string_view prompt) {
    const size_t open = prompt.rfind(reasoning_open(syntax));
    if (open == std::string_view::npos) return false;
    const size_t close = prompt.rfind(reasoning_close(syntax));
    return close == std::string_view::npos || close < open;
}

ToolSyntax tool_syntax(const std::string& source) {
    if (source.find(std::string(kGemma4CallOpen) + "call:") != std::string::npos) return ToolSyntax::Gemma4;
    if (is_lfm2_template(source)) return ToolSyntax::Lfm2;
    if (source.find(kNemotronCallOpen) != std::string::npos) return ToolSyntax::Nemotron;
    if (source.find("<tool_call>") != std::string::npos && source.find("<function=") != std::string::npos) return ToolSyntax::XmlFunction;
    if (source.find("<tool_call>") != std::string::npos) return ToolSyntax::Hermes;
    if (source.find("[TOOL_CALLS]") != std::string::npos) return ToolSyntax::Mistral;
    if (source.find("<|tool_call|>") != std::string::npos) return ToolSyntax::Granite;
    if (source.find("<|python_tag|>") != std::string::npos || source.find("\"parameters\": dictionary of argument name") != std::string::npos)
        return ToolSyntax::Llama3;
    return ToolSyntax::Generic;
}

const char* tool_syntax_name(ToolSyntax syntax) {
    switch (syntax) {
        case ToolSyntax::Hermes: return "hermes";
        case ToolSyntax::XmlFunction: return "xml-function";
        case ToolSyntax::Llama3: return "llama3";
        case ToolSyntax::Mistral: return "mistral";
        case ToolSyntax::Granite: return "granite";
        case ToolSyntax::Gemma4: return "gemma4";
        case ToolSyntax::Lfm2: return "lfm2";
        case ToolSyntax::Nemotron: return "nemotron";
        case ToolSyntax::Generic: break;
    }
    return "generic";
}

std::string tool_call_gbnf(ToolSyntax syntax, const std::vector<Tool>& tools, bool parallel) {
    if (tools.empty()) throw Error("no tools to call");
    const ordered call = call_schema(syntax, tools);
    switch (syntax) {
        case ToolSyntax::Hermes: {
            const std::string payload = rename_root(grammar::json_schema_to_gbnf(call), "call");
            return std::string("root ::= block") + (parallel ? " (\"\\n\" block){0," + std::to_string(kMaxParallelCalls - 1) + "}" : "") +
                   "\nblock ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\n" + payload;
        }
        case ToolSyntax::XmlFunction: return xml_call_gbnf(tools, parallel ? kMaxParallelCalls : 1);
        case ToolSyntax::Gemma4: return gemma4_call_gbnf(tools, parallel ? kMaxParallelCalls : 1);
        case ToolSyntax::Lfm2: return lfm2_call_gbnf(tools, parallel ? kMaxParallelCalls : 1);
        case ToolSyntax::Llama3:
            // Llama 3.1's template teaches one call per reply.
            return grammar::json_schema_to_gbnf(call);
        case ToolSyntax::Mistral:
        case ToolSyntax::Granite:
        case ToolSyntax::Nemotron: {
            // The marker is a control token in these vocabularies, which a grammar over text cannot
            // produce; the list alone parses the same.
            ordered list = {{"type", "array"}, {"items", call}, {"minItems", 1}, {"maxItems", parallel ? kMaxParallelCalls : 1}};
            return grammar::json_schema_to_gbnf(list);
        }
        case ToolSyntax::Generic: {
            ordered list = {{"type", "array"}, {"items", call}, {"minItems", 1}, {"maxItems", parallel ? kMaxParallelCalls : 1}};
            return grammar::json_schema_to_gbnf(ordered{{"type", "object"}, {"properties", {{"tool_calls", list}}}, {"required", {"tool_calls"}}});
        }
    }
    return {};
}

bool parse_tool_calls(std::string_view text, std::vector<ToolCall>& calls, std::string* rest, const std::vector<Tool>* tools) {
    std::vector<ToolCall> found;
    std::string_view s = trim_left(text);
    if (s.empty()) return false;
    bool closed_list = false;  // an LFM2 list just ended at its closing marker: text may follow
    while (!(s = trim_left(s)).empty()) {
        const bool after_list = std::exchange(closed_list, false);
        if (s.substr(0, 11) == "<tool_call>") {
            s.remove_prefix(11);
            if (trim_left(s).substr(0, 10) == "<function=") {
                if (!take_xml_call(s, found, tools)) return false;
            } else if (!take_json_calls(s, found)) {
                return false;
            }
            s = trim_left(s);
            if (s.substr(0, 12) == "</tool_call>") s.remove_prefix(12);
            else if (!s.empty()) return false;
        } else if (s.substr(0, kGemma4CallOpen.size()) == kGemma4CallOpen) {
            s.remove_prefix(kGemma4CallOpen.size());
            if (!take_gemma4_call(s, found)) return false;
            s = trim_left(s);
            if (s.substr(0, kGemma4CallClose.size()) == kGemma4CallClose) s.remove_prefix(kGemma4CallClose.size());
            else if (!s.empty()) return false;
        } else if (s.substr(0, kLfm2CallOpen.size()) == kLfm2CallOpen) {
            // Pythonic calls, or JSON ones where the system prompt asked for JSON.
            s.remove_prefix(kLfm2CallOpen.size());
            if (!take_pythonic_calls(s, found) && !take_json_calls(s, found)) return false;
            s = trim_left(s);
            if (s.substr(0, kLfm2CallClose.size()) == kLfm2CallClose) s.remove_prefix(kLfm2CallClose.size()), closed_list = true;
            else if (!s.empty()) return false;
        } else if (s.substr(0, kNemotronCallOpen.size()) == kNemotronCallOpen) {
            s.remove_prefix(kNemotronCallOpen.size());
            if (!take_json_calls(s, found)) return false;
            s = trim_left(s);
            if (s.substr(0, kNemotronCallClose.size()) == kNemotronCallClose) s.remove_prefix(kNemotronCallClose.size());
            else if (!s.empty()) return false;
        } else if (s.substr(0, 12) == "[TOOL_CALLS]") {
            s.remove_prefix(12);
            if (!take_json_calls(s, found)) return false;
        } else if (s.substr(0, 13) == "<|tool_call|>") {
            s.remove_prefix(13);
            if (!take_json_calls(s, found)) return false;
        } else if (s.substr(0, 14) == "<|python_tag|>") {
            s.remove_prefix(14);
            if (!take_json_calls(s, found)) return false;
        } else if (s[0] == '{' || s[0] == '[') {
            // A bare list of Pythonic calls is LFM2's, forced without its markers.
            if (!take_json_calls(s, found) && !(s[0] == '[' && take_pythonic_calls(s, found))) return false;
        } else if (s[0] == ';' || s[0] == ',') {
            s.remove_prefix(1);  // Llama 3's calls, one after another
        } else if (s.substr(0, 10) == "<|eom_id|>" || s.substr(0, 10) == "<|eot_id|>") {
            s.remove_prefix(10);
        } else if (after_list && rest) {
            *rest = std::string(s);
            break;
        } else {
            return false;
        }
    }
    if (found.empty()) return false;
    calls.insert(calls.end(), found.begin(), found.end());
    return true;
}

ChatOutput ChatOutputStream::feed(std::string_view text) {
    pending_ += text;
    ChatOutput out;
    drain(out, false);
    return out;
}

ChatOutput ChatOutputStream::finish() {
    ChatOutput out;
    drain(out, true);
    if (in_call_) {
        std::string rest;
        if (parse_tool_calls(call_, out.calls, &rest, &options_.callable)) out.content += rest;
        else out.content += call_;
        call_.clear();
        in_call_ = false;
    }
    return out;
}

void ChatOutputStream::drain(ChatOutput& out, bool final) {
    const std::string_view open = reasoning_open(options_.syntax), close = reasoning_close(options_.syntax);
    // Gemma 4's channel markers are found anywhere in the content, and a stray end marker is dropped.
    const bool channels = options_.reasoning && options_.syntax == ToolSyntax::Gemma4;
    for (;;) {
        if (in_call_) {
            call_ += pending_;
            pending_.clear();
            return;
        }
        if (in_channel_name_) {
            // The thought channel opens reasoning; the marker of any other is dropped.
            if (std::string_view(pending_).substr(0, kThoughtChannel.size()) == kThoughtChannel) {
                pending_.erase(0, kThoughtChannel.size());
                in_channel_name_ = false;
                in_reasoning_ = reasoning_begins_ = true;
                continue;
            }
            if (!final && kThoughtChannel.substr(0, pending_.size()) == pending_) return;  // may still be its name
            in_channel_name_ = false;
            continue;
        }
        if (in_reasoning_) {
            if (reasoning_begins_) {
                pending_.erase(0, pending_.size() - trim_left(pending_).size());
                if (pending_.empty()) return;
                reasoning_begins_ = false;
            }
            const size_t end = pending_.find(close);
            // Qwen3.5's and Nemotron 3's reasoning also ends where a call begins, as llama.cpp reads them.
            const bool calls_end_it = options_.tools && options_.syntax == ToolSyntax::XmlFunction;
            if (const size_t call = calls_end_it ? pending_.find(kXmlCallOpen) : std::string::npos; call < end) {
                out.reasoning.append(pending_, 0, call);
                pending_.erase(0, call);
                in_reasoning_ = false;
                in_call_ = true;
                continue;
            }
            if (end != std::string::npos) {
                out.reasoning.append(pending_, 0, end);
                pending_.erase(0, end + close.size());
                in_reasoning_ = false;
                after_reasoning_ = true;
                continue;
            }
            const size_t hold = final ? 0 : std::max(partial_suffix(pending_, close), calls_end_it ? partial_suffix(pending_, kXmlCallOpen) : 0);
            out.reasoning.append(pending_, 0, pending_.size() - hold);
            pending_.erase(0, pending_.size() - hold);
            return;
        }
        if (!shown_content_) {
            // Before any content: blank lines after the reasoning, its opening marker, or a bare JSON call.
            const size_t blank = pending_.size() - trim_left(pending_).size();
            if (blank == pending_.size()) {
                // Only spaces so far: dropped after the reasoning; otherwise content, once nothing else can follow.
                if (after_reasoning_) pending_.clear();
                else if (final) out.content += std::exchange(pending_, {});
                return;
            }
            if (after_reasoning_) pending_.erase(0, blank);
            const std::string_view rest = std::string_view(pending_).substr(after_reasoning_ ? 0 : blank);
            if (options_.reasoning && rest.substr(0, open.size()) == open) {
                pending_.erase(0, size_t(rest.data() - pending_.data()) + open.size());
                (channels ? in_channel_name_ : in_reasoning_) = true;
                continue;
            }
            if (options_.reasoning && !final && open.substr(0, rest.size()) == rest) return;  // may become the marker
            if (options_.tools && (rest[0] == '{' || rest[0] == '[')) {
                in_call_ = true;
                continue;
            }
            shown_content_ = true;
        }
        // The markers content can hold: where calls begin, and Gemma 4's channels.
        std::vector<std::string_view> markers;
        if (options_.tools) markers.assign(std::begin(kCallMarkers), std::end(kCallMarkers));
        if (channels) markers.insert(markers.end(), {open, close});
        size_t first = std::string::npos;
        std::string_view marker;
        for (const std::string_view m : markers)
            if (const size_t at = pending_.find(m); at < first) first = at, marker = m;
        if (first != std::string::npos) {
            out.content.append(pending_, 0, first);
            pending_.erase(0, first);
            if (channels && (marker == open || marker == close)) {
                pending_.erase(0, marker.size());
                in_channel_name_ = marker == open;
            } else {
                in_call_ = true;
            }
            continue;
        }
        size_t hold = 0;
        if (!final)
            for (const std::string_view m : markers) hold = std::max(hold, partial_suffix(pending_, m));
        out.content.append(pending_, 0, pending_.size() - hold);
        pending_.erase(0, pending_.size() - hold);
        return;
    }
}

ChatOutput parse_chat_output(const OutputOptions& options, std::string_view text) {
    ChatOutputStream stream(options);
    ChatOutput all = stream.feed(text);
    append(all, stream.finish());
    return all;
}

void append(ChatOutput& out, const ChatOutput& more) {
    out.content += more.content;
    out.reasoning += more.reasoning;
    out.calls.insert(out.calls.end(), more.calls.begin(), more.calls.end());
}

std::string new_call_id(ToolSyntax syntax) {
    static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    const bool mistral = syntax == ToolSyntax::Mistral;
    std::string id = mistral ? "" : "call_";
    for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlphabet[rng() % (sizeof kAlphabet - 1)];
    return id;
}

}  // namespace rill::serve
