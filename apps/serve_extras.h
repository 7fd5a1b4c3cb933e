// llama-server's endpoints beyond OpenAI's API, as apps and tools that speak to llama-server call
// them: /tokenize, /detokenize and the file names /slots takes. Apart from HTTP, so the request fuzz
// harness runs the same code.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "serve_openai.h"

namespace rill::serve {

// POST /tokenize {"content", "add_special" (false), "parse_special" (true), "with_pieces" (false)}:
// {"tokens": [id, …]}, or with pieces [{"id", "piece"}, …] (a piece that is not valid UTF-8 is its bytes).
nlohmann::ordered_json tokenize_response(const nlohmann::ordered_json& body, const ServedModel& served);
// POST /detokenize {"tokens": [id, …]}: {"content": text}; an id outside the vocabulary is a 400.
nlohmann::ordered_json detokenize_response(const nlohmann::ordered_json& body, const ServedModel& served);
// The "filename" of a slot save or restore: a plain name (letters, digits, '.', '_', '-', not
// starting with '.'), so a client cannot reach outside --slot-save-path. ApiError 400 otherwise.
std::string slot_filename(const nlohmann::ordered_json& body);

}  // namespace rill::serve
