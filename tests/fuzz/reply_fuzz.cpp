// libFuzzer harness: a model's reply text through the parser that splits it into content, reasoning
// and tool calls (apps/serve_tools.h), for every call syntax (Gemma 4's channels and calls, LFM2's
// Pythonic calls and Nemotron's <TOOLCALL> lists included). Generated text is not trusted: whatever
// the bytes, parsing must not crash, and the reply fed a byte at a time must split exactly as the
// whole reply does (what a streaming client sees is what a non-streaming one gets).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "apps/serve_tools.h"

using namespace rill::serve;

namespace {

bool same(const ChatOutput& a, const ChatOutput& b) {
    if (a.content != b.content || a.reasoning != b.reasoning || a.calls.size() != b.calls.size()) return false;
    for (size_t i = 0; i < a.calls.size(); ++i)
        if (a.calls[i].name != b.calls[i].name || a.calls[i].arguments != b.calls[i].arguments) return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    // The first byte picks the syntax and the options; the rest is the reply.
    const uint8_t pick = data[0];
    const std::string_view reply(reinterpret_cast<const char*>(data + 1), size - 1);
    constexpr ToolSyntax kSyntaxes[] = {ToolSyntax::Hermes, ToolSyntax::XmlFunction, ToolSyntax::Llama3, ToolSyntax::Mistral, ToolSyntax::Granite,
                                        ToolSyntax::Generic, ToolSyntax::Gemma4, ToolSyntax::Lfm2, ToolSyntax::Nemotron};
    // Bits 0-2 and 6-7 pick the syntax, 3 tools, 4 reasoning, 4 and 5 together a reply that starts in it.
    const OutputOptions options{.tools = (pick & 8) != 0, .reasoning = (pick & 16) != 0, .starts_in_reasoning = (pick & 48) == 48,
                                .syntax = kSyntaxes[((pick & 7) | (pick >> 6) << 3) % 9]};
    const ChatOutput whole = parse_chat_output(options, reply);
    ChatOutputStream stream(options);
    ChatOutput pieces;
    for (const char c : reply) append(pieces, stream.feed(std::string_view(&c, 1)));
    append(pieces, stream.finish());
    if (!same(whole, pieces)) std::abort();
    return 0;
}
