#include "serve_openai.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "apps/serve_tools_gemma4.h"
#include "apps/serve_tools_lfm2.h"
#include "runtime/base/error.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/session/chat.h"
#include "runtime/text/chat_template.h"
#include "runtime/text/tokenizer.h"

namespace rill::serve {
namespace {

using json = nlohmann::ordered_json;  // keys in the order written: requests keep a schema's property order, responses OpenAI's field order

ApiError bad_field(const std::string& param, const std::string& message) {
    return ApiError{400, message, "invalid_request_error", "", param};
}

// A bound as a person writes it: 20, not 20.0.
std::string bound_text(double v) { return v == double(int64_t(v)) ? std::to_string(int64_t(v)) : json(v).dump(); }

// An optional number within [lo, hi].
template <typename T>
void read_number(const json& body, const char* key, T& out, double lo, double hi) {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) return;
    if (!it->is_number()) throw bad_field(key, std::string("'") + key + "' must be a number");
    const double v = it->get<double>();
    if (!(v >= lo && v <= hi))
        throw bad_field(key, std::string("'") + key + "' is " + it->dump() + "; it must be between " + bound_text(lo) + " and " + bound_text(hi));
    if constexpr (std::is_integral_v<T>) {
        if (!it->is_number_integer()) throw bad_field(key, std::string("'") + key + "' must be an integer");
        out = T(it->get<int64_t>());
    } else {
        out = T(v);
    }
}

// An optional true or false; absent or null keeps `otherwise`.
bool read_bool(const json& body, const char* key, bool otherwise) {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) return otherwise;
    if (!it->is_boolean()) throw bad_field(key, std::string("'") + key + "' must be true or false");
    return it->get<bool>();
}

// Sampling, length and stop settings common to both generation endpoints.
GenerationRequest common_settings(const json& body, const ServedModel& served) {
    GenerationRequest r;
    SamplingParams& s = r.settings.sampling;
    // llama-server's defaults where OpenAI's would make a small local model ramble: a mild
    // temperature with top-k and min-p on.
    read_number(body, "temperature", s.temperature, 0.0, 2.0);
    read_number(body, "top_p", s.top_p, 0.0, 1.0);
    read_number(body, "top_k", s.top_k, 0.0, 1 << 30);
    read_number(body, "min_p", s.min_p, 0.0, 1.0);
    read_number(body, "presence_penalty", s.presence_penalty, -2.0, 2.0);
    read_number(body, "frequency_penalty", s.frequency_penalty, -2.0, 2.0);
    read_number(body, "repeat_penalty", s.repeat_penalty, 0.0, 100.0);
    int64_t seed = -1;
    read_number(body, "seed", seed, -9.2e18, 9.2e18);
    s.seed = seed >= 0 ? uint64_t(seed) : std::random_device{}();
    r.settings.max_tokens = 0;  // until the context is full
    read_number(body, "max_tokens", r.settings.max_tokens, 1, 1 << 30);
    read_number(body, "max_completion_tokens", r.settings.max_tokens, 1, 1 << 30);
    int n = 1;
    read_number(body, "n", n, 1, 128);
    if (n != 1) throw bad_field("n", "only n = 1 is supported");
    if (const auto it = body.find("stop"); it != body.end() && !it->is_null()) {
        if (it->is_string()) {
            r.settings.stops.push_back(it->get<std::string>());
        } else if (it->is_array() && it->size() <= 4) {
            for (const json& v : *it) {
                if (!v.is_string()) throw bad_field("stop", "'stop' must be a string or an array of up to 4 strings");
                r.settings.stops.push_back(v.get<std::string>());
            }
        } else {
            throw bad_field("stop", "'stop' must be a string or an array of up to 4 strings");
        }
    }
    // llama-server's extension, for benchmarks that need a fixed number of tokens.
    r.settings.ignore_eos = read_bool(body, "ignore_eos", r.settings.ignore_eos);
    r.stream = read_bool(body, "stream", r.stream);
    r.cache_prompt = read_bool(body, "cache_prompt", r.cache_prompt);
    (void)served;
    return r;
}

// The prompt must leave room for at least one generated token; max_tokens is cut to what remains.
void fit_prompt(GenerationRequest& r, const ServedModel& served, const char* what) {
    if (r.prompt.empty()) throw bad_field("", std::string("the ") + what + " gives no tokens");
    const int room = served.n_ctx - int(r.prompt.size());
    if (room < 1)
        throw ApiError{400,
                       "This model's maximum context length is " + std::to_string(served.n_ctx) + " tokens. However, your " + what + " resulted in " +
                           std::to_string(r.prompt.size()) + " tokens. Please reduce the length of the " + what + ".",
                       "invalid_request_error", "context_length_exceeded", what == std::string("messages") ? "messages" : "prompt"};
    if (r.settings.max_tokens == 0 || r.settings.max_tokens > room) r.settings.max_tokens = room;
}

std::string content_text(const json& content, size_t index) {
    if (content.is_string()) return content.get<std::string>();
    const std::string where = "messages[" + std::to_string(index) + "].content";
    if (content.is_null()) return "";
    if (!content.is_array()) throw bad_field(where, "'" + where + "' must be a string or an array of text parts");
    std::string text;
    for (const json& part : content) {
        // json::value() throws when the field has another type, so each field's type is checked first.
        if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") || !part["text"].is_string())
            throw bad_field(where, "'" + where + "' has a part that is not {\"type\": \"text\", \"text\": ...}; only text is supported");
        text += part["text"].get<std::string>();
    }
    return text;
}

// A grammar's text compiled, or a 400 naming the field it came from.
std::shared_ptr<const grammar::Grammar> compile_grammar(const std::string& gbnf, const std::string& field) {
    try {
        return std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(gbnf));
    } catch (const Error& e) {
        throw bad_field(field, "'" + field + "' is not a grammar rill can use: " + e.what());
    }
}

std::string schema_gbnf(const json& schema, const std::string& field) {
    if (!schema.is_object() && !schema.is_boolean()) throw bad_field(field, "'" + field + "' must be a JSON Schema object");
    try {
        return grammar::json_schema_to_gbnf(schema);
    } catch (const Error& e) {
        throw bad_field(field, "'" + field + "': " + e.what());
    }
}

// What the output must be from response_format or llama-server's grammar and json_schema fields:
// a grammar's text, or empty for free text. `field` is set to the field it came from.
std::string output_gbnf(const json& body, std::string& field) {
    std::string gbnf;
    auto claim = [&](const std::string& name) {
        if (!field.empty()) throw bad_field(name, "'" + name + "' cannot be combined with '" + field + "'");
        field = name;
    };
    if (const auto it = body.find("response_format"); it != body.end() && !it->is_null()) {
        if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string())
            throw bad_field("response_format", "'response_format' must be an object with a 'type'");
        const std::string type = (*it)["type"].get<std::string>();
        if (type == "json_object") {
            claim("response_format");
            gbnf = grammar::json_object_gbnf();
        } else if (type == "json_schema") {
            claim("response_format");
            const auto spec = it->find("json_schema");
            if (spec == it->end() || !spec->is_object() || !spec->contains("schema"))
                throw bad_field("response_format.json_schema", "'response_format.json_schema' must be an object with a 'schema'");
            gbnf = schema_gbnf((*spec)["schema"], "response_format.json_schema.schema");
        } else if (type != "text") {
            throw bad_field("response_format.type", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", not \"" + type + "\"");
        }
    }
    if (const auto it = body.find("json_schema"); it != body.end() && !it->is_null()) {
        claim("json_schema");
        gbnf = schema_gbnf(*it, "json_schema");
    }
    if (const auto it = body.find("grammar"); it != body.end() && !it->is_null()) {
        if (!it->is_string()) throw bad_field("grammar", "'grammar' must be a string of GBNF");
        claim("grammar");
        gbnf = it->get<std::string>();
    }
    return gbnf;
}

// logprobs: for chat true or false, with top_logprobs up to 20 alternatives; for completions the number of
// alternatives itself (OpenAI allows 5, llama-server more; up to 20 here).
void read_logprobs(const json& body, GenerationRequest& r, bool chat) {
    const auto it = body.find("logprobs");
    if (chat) {
        r.logprobs = read_bool(body, "logprobs", false);
        int top = 0;
        read_number(body, "top_logprobs", top, 0, 20);
        if (!r.logprobs && body.contains("top_logprobs") && !body["top_logprobs"].is_null())
            throw bad_field("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
        if (r.logprobs) r.settings.top_logprobs = top;
    } else if (it != body.end() && !it->is_null()) {
        int top = 0;
        read_number(body, "logprobs", top, 0, 20);
        r.logprobs = true;
        r.settings.top_logprobs = top;
    }
}

// A message's tool_calls as the template expects them: arguments as objects where they parse.
json template_tool_calls(const json& calls, const std::string& where) {
    if (!calls.is_array()) throw bad_field(where, "'" + where + "' must be an array");
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        const json& c = calls[i];
        const std::string at = where + "[" + std::to_string(i) + "]";
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
            !c["function"]["name"].is_string())
            throw bad_field(at, "'" + at + "' must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
        json call = c;
        json function = c["function"];
        if (function.contains("arguments") && function["arguments"].is_string()) {
            json parsed = json::parse(function["arguments"].get<std::string>(), nullptr, false);
            if (!parsed.is_discarded()) function["arguments"] = parsed;  // templates write arguments | tojson
        }
        call["function"] = function;
        out.push_back(std::move(call));
    }
    return out;
}

struct ToolRequest {
    json tools;                // as the template receives them; null when none
    std::vector<Tool> callable;
    std::string choice = "auto";  // auto, none, required, or "function" for a named one
    bool parallel = true;
};

ToolRequest read_tools(const json& body) {
    ToolRequest t;
    const auto it = body.find("tools");
    if (it != body.end() && !it->is_null()) {
        if (!it->is_array()) throw bad_field("tools", "'tools' must be an array of {\"type\": \"function\", \"function\": {...}}");
        for (size_t i = 0; i < it->size(); ++i) {
            const json& tool = (*it)[i];
            const std::string at = "tools[" + std::to_string(i) + "]";
            if (!tool.is_object() || !tool.contains("type") || tool["type"] != "function")
                throw bad_field(at + ".type", "'" + at + ".type' must be \"function\"");
            if (!tool.contains("function") || !tool["function"].is_object() || !tool["function"].contains("name") || !tool["function"]["name"].is_string())
                throw bad_field(at + ".function", "'" + at + ".function' must be an object with a string 'name'");
            const json& function = tool["function"];
            Tool callable{function["name"].get<std::string>(), json{{"type", "object"}}};
            if (function.contains("parameters") && !function["parameters"].is_null()) {
                if (!function["parameters"].is_object()) throw bad_field(at + ".function.parameters", "'" + at + ".function.parameters' must be a JSON Schema object");
                callable.parameters = function["parameters"];
            }
            t.callable.push_back(std::move(callable));
        }
        if (!t.callable.empty()) t.tools = *it;
    }
    if (const auto c = body.find("tool_choice"); c != body.end() && !c->is_null()) {
        if (c->is_string()) {
            t.choice = c->get<std::string>();
            if (t.choice != "auto" && t.choice != "none" && t.choice != "required")
                throw bad_field("tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
        } else if (c->is_object() && c->contains("function") && (*c)["function"].is_object() && (*c)["function"].contains("name") &&
                   (*c)["function"]["name"].is_string()) {
            const std::string name = (*c)["function"]["name"].get<std::string>();
            const auto named = std::find_if(t.callable.begin(), t.callable.end(), [&](const Tool& tool) { return tool.name == name; });
            if (named == t.callable.end()) throw bad_field("tool_choice", "'tool_choice' names the function '" + name + "', which is not in 'tools'");
            t.callable = {*named};
            t.choice = "function";
        } else {
            throw bad_field("tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
        }
        if (t.choice != "auto" && t.choice != "none" && t.callable.empty())
            throw bad_field("tool_choice", "'tool_choice' asks for a call but 'tools' is empty");
    }
    t.parallel = read_bool(body, "parallel_tool_calls", true);
    if (t.choice == "none") t.tools = nullptr;
    return t;
}

// The plain transcript for models without a template, with tools described in words.
std::string fallback_transcript(const json& messages, const json& tools) {
    std::string text;
    if (!tools.is_null()) {
        text += "You can call these functions. To call them, reply with only {\"tool_calls\": [{\"name\": ..., \"arguments\": {...}}]}.\n";
        for (const json& tool : tools) text += tool["function"].dump() + "\n";
        text += "\n";
    }
    for (const json& m : messages) {
        const std::string role = m["role"].get<std::string>();
        const std::string content = m["content"].is_string() ? m["content"].get<std::string>() : "";
        if (role == "system") text += content + "\n\n";
        else if (role == "user") text += "User: " + content + "\n";
        else if (role == "tool") text += "Tool result: " + content + "\n";
        else if (m.contains("tool_calls")) text += "Assistant: " + json{{"tool_calls", m["tool_calls"]}}.dump() + "\n";
        else text += fallback_assistant_turn(content);
    }
    return text + "Assistant:";
}

}  // namespace

json error_body(const ApiError& e) {
    return {{"error",
             {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? json(nullptr) : json(e.param)},
              {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

json parse_body(const std::string& body) {
    try {
        return json::parse(body);
    } catch (const json::exception& e) {  // a syntax error, or a number too large for a double (out_of_range)
        throw ApiError{400, std::string("the request body is not valid JSON: ") + e.what()};
    }
}

void check_model(const json& body, const ServedModel& served) {
    const auto it = body.find("model");
    if (it == body.end() || !it->is_string()) throw bad_field("model", "'model' is required and must be a string");
    if (it->get<std::string>() != served.id)
        throw ApiError{404, "The model '" + it->get<std::string>() + "' does not exist; this server serves '" + served.id + "'",
                       "invalid_request_error", "model_not_found", "model"};
}

namespace {

// A chat request's conversation as the model reads it: the template's text and the tools offered.
struct RenderedChat {
    std::string text;
    ToolRequest tools;
    bool templated = false;  // false: the plain transcript for models without a template
};

RenderedChat render_chat(const json& body, const ServedModel& served) {
    if (!body.is_object()) throw bad_field("", "the request body must be a JSON object");
    const auto it = body.find("messages");
    if (it == body.end() || !it->is_array() || it->empty()) throw bad_field("messages", "'messages' must be a non-empty array");
    json messages = json::array();
    for (size_t i = 0; i < it->size(); ++i) {
        const json& m = (*it)[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) throw bad_field(at, at + " needs a string 'role'");
        const std::string role = m["role"].get<std::string>();
        if (role != "system" && role != "user" && role != "assistant" && role != "developer" && role != "tool")
            throw bad_field(at + ".role", "role '" + role + "' is not one of system, developer, user, assistant, tool");
        json message = {{"role", role == "developer" ? "system" : role}};
        const json content = m.contains("content") ? m["content"] : json(nullptr);
        const bool calls = role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null();
        // Null content (an assistant turn of calls only) is given to the template as "", as llama.cpp
        // does: templates such as Qwen3's test `'</think>' in message.content`, which fails on None.
        message["content"] = content_text(content, i);
        if (calls) message["tool_calls"] = template_tool_calls(m["tool_calls"], at + ".tool_calls");
        if (role == "tool") {
            for (const char* key : {"tool_call_id", "name"})
                if (m.contains(key) && !m[key].is_null()) {
                    if (!m[key].is_string()) throw bad_field(at + "." + key, "'" + at + "." + key + "' must be a string");
                    message[key] = m[key];
                }
        }
        messages.push_back(std::move(message));
    }
    RenderedChat chat;
    chat.tools = read_tools(body);
    json kwargs = json::object();
    if (const auto k = body.find("chat_template_kwargs"); k != body.end() && !k->is_null()) {
        if (!k->is_object()) throw bad_field("chat_template_kwargs", "'chat_template_kwargs' must be an object");
        kwargs = *k;
    }
    if (const auto e = body.find("reasoning_effort"); e != body.end() && !e->is_null()) {
        if (!e->is_string()) throw bad_field("reasoning_effort", "'reasoning_effort' must be a string such as \"low\", \"medium\" or \"high\"");
        if (!kwargs.contains("reasoning_effort")) kwargs["reasoning_effort"] = *e;
    }
    if (served.template_source.empty()) {
        chat.text = fallback_transcript(messages, chat.tools.tools);
        return chat;
    }
    if (tool_syntax(served.template_source) == ToolSyntax::Gemma4 && !gemma4_template_reads_tool_messages(served.template_source))
        messages = gemma4_tool_responses(messages);
    // LFM2's templates render an assistant turn's content only: its calls go into the content, in its syntax.
    if (tool_syntax(served.template_source) == ToolSyntax::Lfm2) messages = lfm2_calls_in_content(messages);
    ChatTemplateInput input;
    input.messages = messages;
    input.tools = chat.tools.tools;
    input.add_generation_prompt = true;
    input.bos_token = served.vocab.bos >= 0 ? served.vocab.tokens[size_t(served.vocab.bos)] : "";
    input.eos_token = served.vocab.eos >= 0 ? served.vocab.tokens[size_t(served.vocab.eos)] : "";
    input.extra = kwargs;
    try {
        chat.text = render_chat_template(served.template_source, input);
    } catch (const Error& e) {
        throw ApiError{400, std::string("the chat template cannot render these messages: ") + e.what(), "invalid_request_error", "", "messages"};
    }
    // Gemma 4's template writes no model turn after a turn that holds calls, their results and text; as
    // llama.cpp does, one is opened, so the model does not go on in a closed turn.
    if (tool_syntax(served.template_source) == ToolSyntax::Gemma4 && chat.text.ends_with("<turn|>\n")) chat.text += "<|turn>model\n";
    // The BOS (and EOS) the tokenizer adds stand for those the template writes as text, as llama.cpp has it;
    // kept, a prompt would start with two (Gemma's and Llama 3's templates write one).
    if (served.vocab.add_bos && !input.bos_token.empty() && chat.text.starts_with(input.bos_token)) chat.text.erase(0, input.bos_token.size());
    if (served.vocab.add_eos && !input.eos_token.empty() && chat.text.ends_with(input.eos_token))
        chat.text.resize(chat.text.size() - input.eos_token.size());
    chat.templated = true;
    return chat;
}

}  // namespace

std::string apply_template(const json& body, const ServedModel& served) { return render_chat(body, served).text; }

GenerationRequest parse_chat_request(const json& body, const ServedModel& served) {
    if (!body.is_object()) throw bad_field("", "the request body must be a JSON object");
    check_model(body, served);
    RenderedChat chat = render_chat(body, served);
    const ToolRequest& tools = chat.tools;
    GenerationRequest r = common_settings(body, served);
    read_logprobs(body, r, true);
    std::string field;
    std::string gbnf = output_gbnf(body, field);
    const ToolSyntax syntax = served.template_source.empty() ? ToolSyntax::Generic : tool_syntax(served.template_source);
    if (tools.choice == "required" || tools.choice == "function") {
        if (!field.empty()) throw bad_field("tool_choice", "a required tool call cannot be combined with '" + field + "'");
        field = "tools";
        try {
            gbnf = tool_call_gbnf(syntax, tools.callable, tools.parallel && tools.choice == "required");
        } catch (const Error& e) {
            throw bad_field("tools", std::string("'tools': ") + e.what());
        }
    }
    if (!gbnf.empty()) {
        r.settings.grammar = compile_grammar(gbnf, field);
        r.settings.token_trie = served.token_trie;
    }
    // A forced call's grammar holds no reasoning: where the generation prompt opens it (Nemotron's and
    // Qwen3.5's <think>), it is closed first, as these templates close it themselves when thinking is
    // off. (A grammar or schema of the client's own is left to say where the reply starts.)
    const bool opens_reasoning = served.template_source.find(reasoning_open(syntax)) != std::string::npos;
    if (field == "tools" && opens_reasoning && prompt_ends_in_reasoning(syntax, chat.text)) chat.text += reasoning_close(syntax);
    if (!chat.templated)
        for (const std::string& stop : fallback_chat_stops()) r.settings.stops.push_back(stop);
    r.prompt = tokenize(served.vocab, chat.text, {.add_special = true, .parse_special = chat.templated});
    r.output.tools = !tools.tools.is_null();
    r.output.syntax = syntax;
    r.output.callable = tools.callable;
    r.output.reasoning = opens_reasoning;
    r.output.starts_in_reasoning = r.output.reasoning && prompt_ends_in_reasoning(syntax, chat.text);
    fit_prompt(r, served, "messages");
    return r;
}

GenerationRequest parse_completion_request(const json& body, const ServedModel& served) {
    if (!body.is_object()) throw bad_field("", "the request body must be a JSON object");
    check_model(body, served);
    const auto it = body.find("prompt");
    std::string prompt;
    if (it != body.end() && it->is_string()) prompt = it->get<std::string>();
    else if (it != body.end() && it->is_array() && it->size() == 1 && (*it)[0].is_string()) prompt = (*it)[0].get<std::string>();
    else throw bad_field("prompt", "'prompt' must be a string (or an array of one string)");
    if (read_bool(body, "echo", false)) throw bad_field("echo", "'echo' is not supported");
    GenerationRequest r = common_settings(body, served);
    read_logprobs(body, r, false);
    std::string field;
    if (const std::string gbnf = output_gbnf(body, field); !gbnf.empty()) {
        r.settings.grammar = compile_grammar(gbnf, field);
        r.settings.token_trie = served.token_trie;
    }
    r.prompt = tokenize(served.vocab, prompt, {.add_special = true, .parse_special = false});
    fit_prompt(r, served, "prompt");
    return r;
}

std::vector<std::vector<int32_t>> parse_embedding_inputs(const json& body, const ServedModel& served, bool& base64) {
    if (!body.is_object()) throw bad_field("", "the request body must be a JSON object");
    check_model(body, served);
    std::string format = "float";
    if (const auto it = body.find("encoding_format"); it != body.end() && !it->is_null())
        format = it->is_string() ? it->get<std::string>() : "";  // json::value() would throw on another type
    if (format != "float" && format != "base64") throw bad_field("encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
    base64 = format == "base64";
    const auto it = body.find("input");
    std::vector<std::string> texts;
    if (it != body.end() && it->is_string()) texts.push_back(it->get<std::string>());
    else if (it != body.end() && it->is_array() && !it->empty() && it->size() <= 2048)
        for (const json& v : *it) {
            if (!v.is_string()) throw bad_field("input", "'input' must be a string or an array of strings");
            texts.push_back(v.get<std::string>());
        }
    else throw bad_field("input", "'input' must be a string or a non-empty array of at most 2048 strings");
    std::vector<std::vector<int32_t>> out;
    for (size_t i = 0; i < texts.size(); ++i) {
        out.push_back(tokenize(served.vocab, texts[i]));
        if (out.back().empty()) throw bad_field("input", "input " + std::to_string(i) + " gives no tokens");
        if (out.back().size() > size_t(served.n_ctx))
            throw ApiError{400,
                           "input " + std::to_string(i) + " has " + std::to_string(out.back().size()) + " tokens; this model's maximum context length is " +
                               std::to_string(served.n_ctx),
                           "invalid_request_error", "context_length_exceeded", "input"};
    }
    return out;
}

json usage_json(int prompt_tokens, int completion_tokens, int cached_tokens) {
    return {{"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

json chat_message(const ChatOutput& output) {
    json message = {{"role", "assistant"}};
    message["content"] = output.calls.empty() || !output.content.empty() ? json(output.content) : json(nullptr);
    if (!output.reasoning.empty()) message["reasoning_content"] = output.reasoning;
    if (!output.calls.empty()) {
        json calls = json::array();
        for (const ToolCall& c : output.calls)
            calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
        message["tool_calls"] = calls;
    }
    message["refusal"] = nullptr;
    return message;
}

std::vector<json> chat_deltas(const ChatOutput& piece, int& next_call) {
    std::vector<json> out;
    if (!piece.reasoning.empty()) out.push_back({{"reasoning_content", piece.reasoning}});
    if (!piece.content.empty()) out.push_back({{"content", piece.content}});
    for (const ToolCall& c : piece.calls) {
        const int index = next_call++;
        out.push_back({{"tool_calls", json::array({{{"index", index}, {"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", ""}}}}})}});
        out.push_back({{"tool_calls", json::array({{{"index", index}, {"function", {{"arguments", c.arguments}}}}})}});
    }
    return out;
}

namespace {

json utf8_bytes(const std::string& text) {
    json bytes = json::array();
    for (const char c : text) bytes.push_back(int(uint8_t(c)));
    return bytes;
}

}  // namespace

json chat_logprobs(const Vocab& vocab, std::span<const TokenLogprob> entries) {
    json content = json::array();
    for (const TokenLogprob& e : entries) {
        const std::string text = token_text(vocab, e.token);
        json top = json::array();
        for (const auto& [id, logprob] : e.top) {
            const std::string t = token_text(vocab, id);
            top.push_back({{"token", t}, {"logprob", logprob}, {"bytes", utf8_bytes(t)}});
        }
        content.push_back({{"token", text}, {"logprob", e.logprob}, {"bytes", utf8_bytes(text)}, {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
}

json completion_logprobs(const Vocab& vocab, std::span<const TokenLogprob> entries, size_t text_offset) {
    json tokens = json::array(), logprobs = json::array(), top = json::array(), offsets = json::array();
    for (const TokenLogprob& e : entries) {
        const std::string text = token_text(vocab, e.token);
        tokens.push_back(text);
        logprobs.push_back(e.logprob);
        json alternatives = json::object();
        for (const auto& [id, logprob] : e.top) alternatives[token_text(vocab, id)] = logprob;
        top.push_back(alternatives);
        offsets.push_back(text_offset);
        text_offset += text.size();
    }
    return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json completion_choice(const std::string& text, const char* finish_reason) {
    return {{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish_reason ? json(finish_reason) : json(nullptr)}};
}

json envelope(const std::string& id, const char* object, const ServedModel& served, json choice) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return {{"id", id},
            {"object", object},
            {"created", std::chrono::duration_cast<std::chrono::seconds>(now).count()},
            {"model", served.id},
            {"system_fingerprint", "rill-0.1.0"},
            {"choices", choice.is_null() ? json::array() : json::array({std::move(choice)})}};
}

std::string base64_floats(const std::vector<float>& values) {
    static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string bytes(values.size() * 4, '\0');
    std::memcpy(bytes.data(), values.data(), bytes.size());  // x86 and Arm Linux are little-endian
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t n = std::min<size_t>(3, bytes.size() - i);
        uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
        if (n > 1) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
        if (n > 2) v |= uint32_t(uint8_t(bytes[i + 2]));
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
        out += n > 1 ? kAlphabet[(v >> 6) & 63] : '=';
        out += n > 2 ? kAlphabet[v & 63] : '=';
    }
    return out;
}

}  // namespace rill::serve
