// A multi-turn conversation: the history, its rendering through the model's chat template (or a
// plain fallback), and replies generated on a KV cache that keeps what earlier turns evaluated.
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/session/sampling.h"
#include "runtime/session/session.h"
#include "runtime/text/vocab.h"

namespace rill {

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

// The conversation as the model expects it: through its chat template (tokenizer.chat_template), or,
// when template_source is empty, a plain "User: …\nAssistant:" transcript. Throws rill::Error if the
// template fails.
std::string render_conversation(const std::string& template_source, const Vocab& vocab, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt);
// Where a reply in the plain transcript ends: the model starting the user's next turn.
std::vector<std::string> fallback_chat_stops();
// An assistant turn of the plain fallback transcript. The model writes its reply after "Assistant:"
// with its own leading space, so a reply sent back as it came renders to the tokens it was generated
// as (a server's next turn then reuses them from its cache) instead of gaining a second space.
std::string fallback_assistant_turn(const std::string& content);

struct ChatConfig {
    std::string template_source;  // tokenizer.chat_template; empty: the plain fallback format
    std::string system;           // system prompt, kept when old turns are dropped
    SamplingParams sampling;
    int max_reply_tokens = 1024;
};

struct ChatReply {
    std::string text;
    int prompt_tokens = 0;   // the whole rendered conversation
    int reused_tokens = 0;   // of those, already in the KV cache from earlier turns
    int generated = 0;
    int dropped_messages = 0;  // oldest turns dropped to fit the context
    double prefill_ms = 0, decode_ms = 0;
    bool cancelled = false;
    bool hit_limit = false;  // max_reply_tokens or the context ran out
};

class Chat {
public:
    Chat(Session& session, const Vocab& vocab, ChatConfig config);

    bool has_template() const { return !config_.template_source.empty(); }
    // Adds the user's message, then generates and records the reply, streaming its text through
    // on_text (whole UTF-8 characters). `cancel` stops generation at the next token.
    ChatReply send(const std::string& user, const std::function<void(std::string_view)>& on_text,
                   const std::atomic<bool>* cancel = nullptr);

    void reset();  // forget the conversation, keep the system prompt
    void set_system(std::string text);
    const std::vector<ChatMessage>& messages() const { return messages_; }
    const std::string& system() const { return config_.system; }

    nlohmann::ordered_json to_json() const;
    void from_json(const nlohmann::json& saved);  // throws rill::Error on a malformed file

    // The conversation as the model sees it, ending with the assistant's turn opened.
    std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

private:
    std::vector<ChatMessage> with_system(size_t first_turn) const;
    std::vector<int32_t> prompt_tokens(const std::vector<ChatMessage>& messages) const;

    Session& session_;
    const Vocab& vocab_;
    ChatConfig config_;
    std::vector<ChatMessage> messages_;  // user and assistant turns, oldest first
    std::vector<int32_t> cached_;        // the tokens whose keys and values the session holds
    std::vector<std::string> stops_;     // texts that end a reply in the fallback format
};

}  // namespace rill
