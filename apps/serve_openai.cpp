#include "serve_openai.h"

#include <chrono>
#include <cstring>
#include <random>

#include "runtime/session/chat.h"
#include "runtime/base/error.h"
#include "runtime/text/tokenizer.h"

namespace rill::serve {
namespace {

using nlohmann::json;

ApiError bad_field(const std::string& param, const std::string& message) {
    return ApiError{400, message, "invalid_request_error", "", param};
}

// An optional number within [lo, hi].
template <typename T>
void read_number(const json& body, const char* key, T& out, double lo, double hi) {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) return;
    if (!it->is_number()) throw bad_field(key, std::string("'") + key + "' must be a number");
    const double v = it->get<double>();
    if (!(v >= lo && v <= hi))
        throw bad_field(key, std::string("'") + key + "' is " + it->dump() + "; it must be between " + json(lo).dump() + " and " + json(hi).dump());
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

GenerationRequest parse_chat_request(const json& body, const ServedModel& served) {
    if (!body.is_object()) throw bad_field("", "the request body must be a JSON object");
    check_model(body, served);
    const auto it = body.find("messages");
    if (it == body.end() || !it->is_array() || it->empty()) throw bad_field("messages", "'messages' must be a non-empty array");
    std::vector<ChatMessage> messages;
    for (size_t i = 0; i < it->size(); ++i) {
        const json& m = (*it)[i];
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
            throw bad_field("messages[" + std::to_string(i) + "]", "messages[" + std::to_string(i) + "] needs a string 'role'");
        const std::string role = m["role"].get<std::string>();
        if (role != "system" && role != "user" && role != "assistant" && role != "developer")
            throw bad_field("messages[" + std::to_string(i) + "].role", "role '" + role + "' is not one of system, developer, user, assistant");
        messages.push_back({role == "developer" ? "system" : role, content_text(m.contains("content") ? m["content"] : json(nullptr), i)});
    }
    GenerationRequest r = common_settings(body, served);
    std::string text;
    try {
        text = render_conversation(served.template_source, served.vocab, messages, true);
    } catch (const Error& e) {
        throw ApiError{400, std::string("the chat template cannot render these messages: ") + e.what(), "invalid_request_error", "", "messages"};
    }
    r.prompt = tokenize(served.vocab, text, {.add_special = true, .parse_special = !served.template_source.empty()});
    if (served.template_source.empty())
        for (const std::string& stop : fallback_chat_stops()) r.settings.stops.push_back(stop);
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

json usage_json(int prompt_tokens, int completion_tokens) {
    return {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}, {"total_tokens", prompt_tokens + completion_tokens}};
}

json chat_choice(const std::string& text, const char* finish_reason, bool chunk, bool first_chunk) {
    json choice = {{"index", 0}};
    if (chunk) {
        json delta = json::object();
        if (first_chunk) delta["role"] = "assistant";
        if (!text.empty() || first_chunk) delta["content"] = text;
        choice["delta"] = delta;
    } else {
        choice["message"] = {{"role", "assistant"}, {"content", text}};
    }
    choice["logprobs"] = nullptr;
    choice["finish_reason"] = finish_reason ? json(finish_reason) : json(nullptr);
    return choice;
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
