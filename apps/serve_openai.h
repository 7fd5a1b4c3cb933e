// OpenAI's API shapes for rill serve: requests checked and turned into generation settings, responses
// and stream chunks built, and errors in OpenAI's {"error": {...}} form with their HTTP status.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve_tools.h"
#include "runtime/grammar/token_trie.h"
#include "runtime/session/completion.h"
#include "runtime/model/model.h"
#include "runtime/text/vocab.h"

namespace rill::serve {

// A request the server refuses: thrown by the parsers, answered as OpenAI answers.
struct ApiError {
    int status;
    std::string message;
    std::string type;
    std::string code;   // empty: null
    std::string param;  // empty: null

    ApiError(int status_, std::string message_, std::string type_ = "invalid_request_error", std::string code_ = {},
             std::string param_ = {})
        : status(status_), message(std::move(message_)), type(std::move(type_)), code(std::move(code_)), param(std::move(param_)) {}
};
nlohmann::ordered_json error_body(const ApiError& e);

// What the server serves: the model, its name in the API, and how its conversations are rendered.
struct ServedModel {
    const Model& model;
    const Vocab& vocab;
    std::string id;
    std::string template_source;
    int n_ctx = 0;  // per request
    std::shared_ptr<const grammar::TokenTrie> token_trie;  // for grammars; built once
};

struct GenerationRequest {
    std::vector<int32_t> prompt;
    CompletionSettings settings;  // a grammar from response_format, grammar, json_schema or a forced tool call
    bool stream = false;
    bool logprobs = false;  // settings.top_logprobs says how many alternatives
    bool cache_prompt = true;  // llama-server's field: false evaluates the whole prompt, reusing nothing
    OutputOptions output;   // chat: how the reply splits into content, reasoning and tool calls
};

// A request body as sent: JSON, or an ApiError quoting the parser.
nlohmann::ordered_json parse_body(const std::string& body);

// Parse /v1/chat/completions and /v1/completions bodies. Throw ApiError naming the bad field, an
// unknown model (404), or a prompt the context cannot hold.
GenerationRequest parse_chat_request(const nlohmann::ordered_json& body, const ServedModel& served);
// The prompt text a chat request's messages (and tools, template kwargs) render to, as
// /v1/chat/completions would evaluate it: llama-server's /apply-template.
std::string apply_template(const nlohmann::ordered_json& body, const ServedModel& served);
GenerationRequest parse_completion_request(const nlohmann::ordered_json& body, const ServedModel& served);

// /v1/embeddings: the inputs as token lists (a string or an array of strings).
std::vector<std::vector<int32_t>> parse_embedding_inputs(const nlohmann::ordered_json& body, const ServedModel& served, bool& base64);

// The model named in a request: must be the one served.
void check_model(const nlohmann::ordered_json& body, const ServedModel& served);

// OpenAI's usage object; cached_tokens: prompt tokens whose keys and values came from a slot's cache.
nlohmann::ordered_json usage_json(int prompt_tokens, int completion_tokens, int cached_tokens);
// A reply's message: content (null when only calls), reasoning_content when there was reasoning,
// tool_calls when there were calls.
nlohmann::ordered_json chat_message(const ChatOutput& output);
// One choice of a completions response or chunk.
nlohmann::ordered_json completion_choice(const std::string& text, const char* finish_reason);
// The deltas a streamed piece of a reply becomes: reasoning, content, then each call as OpenAI
// streams one (index, id, type and name first, then the arguments). `next_call` numbers the calls.
std::vector<nlohmann::ordered_json> chat_deltas(const ChatOutput& piece, int& next_call);
// Log-probabilities as the chat API returns them ({"content": [...]}) and as completions do.
nlohmann::ordered_json chat_logprobs(const Vocab& vocab, std::span<const TokenLogprob> entries);
nlohmann::ordered_json completion_logprobs(const Vocab& vocab, std::span<const TokenLogprob> entries, size_t text_offset);
// The envelope: id, object, created, model, choices.
nlohmann::ordered_json envelope(const std::string& id, const char* object, const ServedModel& served, nlohmann::ordered_json choice);

// Float32 values as base64 of their little-endian bytes (the embeddings' "base64" encoding).
std::string base64_floats(const std::vector<float>& values);

}  // namespace rill::serve
