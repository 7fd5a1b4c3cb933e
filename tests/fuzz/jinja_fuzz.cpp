// libFuzzer harness: a chat template and the conversation it renders, as a model file from a stranger
// and a request from the network bring them.
// Input: the template source, a NUL byte, then the input as JSON in the reference cases' shape
// ({"messages": ..., "tools": ..., "add_generation_prompt": ..., any other name}). Without a NUL the
// whole input is the template, rendered for a fixed two-turn conversation.
// The only acceptable outcomes are text or a rill::Error; a crash, hang, leak or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/text/chat_template.h"
#include "runtime/base/error.h"

using nlohmann::ordered_json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view all(reinterpret_cast<const char*>(data), size);
    const size_t nul = all.find('\0');
    rill::ChatTemplateInput input;
    input.bos_token = "<s>";
    input.eos_token = "</s>";
    input.today = "2026-07-26";  // the clock must not change what an input does
    input.messages = ordered_json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}});
    if (nul != std::string_view::npos) {
        // Any JSON at all reaches the template: messages may be a number, tools a string.
        ordered_json given = ordered_json::parse(all.substr(nul + 1), nullptr, /*allow_exceptions=*/false);
        if (given.is_object()) {
            for (auto& [key, value] : given.items()) {
                if (key == "messages") input.messages = value;
                else if (key == "tools") input.tools = value;
                else if (key == "add_generation_prompt") input.add_generation_prompt = value.is_boolean() ? value.get<bool>() : !value.is_null();
                else input.extra[key] = value;
            }
        } else if (!given.is_discarded()) {
            input.messages = std::move(given);
        }
    }
    try {
        (void)rill::render_chat_template(std::string(all.substr(0, nul)), input);
    } catch (const rill::Error&) {
    }
    return 0;
}
