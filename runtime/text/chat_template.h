// Renders a Hugging Face chat template (the Jinja source in a model's tokenizer config) into prompt text,
// byte for byte as transformers' apply_chat_template does.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace rill {

struct ChatTemplateInput {
    // Ordered JSON keeps keys in the order given, as Python's dicts do, so tojson writes them that way.
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    nlohmann::ordered_json tools;  // null: not passed, so the template sees `tools` undefined
    bool add_generation_prompt = true;
    std::string bos_token;
    std::string eos_token;
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // more top-level names; they win over the above
    std::string today;  // "YYYY-MM-DD", the date strftime_now() formats; empty: the real local date and time
};

// Throws rill::Error: for a syntax or runtime error, naming the template line and column and quoting the
// line; for raise_exception("msg") in the template, with "TemplateError: msg" in the message.
std::string render_chat_template(const std::string& source, const ChatTemplateInput& input);

}  // namespace rill
