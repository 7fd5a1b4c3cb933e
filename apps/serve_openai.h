// OpenAI's API shapes for rill serve: requests checked and turned into generation settings, responses
// and stream chunks built, and errors in OpenAI's {"error": {...}} form with their HTTP status.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
nlohmann::json error_body(const ApiError& e);

// What the server serves: the model, its name in the API, and how its conversations are rendered.
struct ServedModel {
    const Model& model;
    const Vocab& vocab;
    std::string id;
    std::string template_source;
    int n_ctx = 0;  // per request
};

struct GenerationRequest {
    std::vector<int32_t> prompt;
    CompletionSettings settings;
    bool stream = false;
};

// A request body as sent: JSON, or an ApiError quoting the parser.
nlohmann::json parse_body(const std::string& body);

// Parse /v1/chat/completions and /v1/completions bodies. Throw ApiError naming the bad field, an
// unknown model (404), or a prompt the context cannot hold.
GenerationRequest parse_chat_request(const nlohmann::json& body, const ServedModel& served);
GenerationRequest parse_completion_request(const nlohmann::json& body, const ServedModel& served);

// /v1/embeddings: the inputs as token lists (a string or an array of strings).
std::vector<std::vector<int32_t>> parse_embedding_inputs(const nlohmann::json& body, const ServedModel& served, bool& base64);

// The model named in a request: must be the one served.
void check_model(const nlohmann::json& body, const ServedModel& served);

nlohmann::json usage_json(int prompt_tokens, int completion_tokens);
// One choice of a response (non-streamed) or of a chunk (streamed: a delta with the new text).
nlohmann::json chat_choice(const std::string& text, const char* finish_reason, bool chunk, bool first_chunk);
nlohmann::json completion_choice(const std::string& text, const char* finish_reason);
// The envelope: id, object, created, model, choices.
nlohmann::json envelope(const std::string& id, const char* object, const ServedModel& served, nlohmann::json choice);

// Float32 values as base64 of their little-endian bytes (the embeddings' "base64" encoding).
std::string base64_floats(const std::vector<float>& values);

}  // namespace rill::serve
