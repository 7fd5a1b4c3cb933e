#include "runtime/session/chat.h"

#include <chrono>

#include "runtime/text/chat_template.h"
#include "runtime/session/completion.h"
#include "runtime/base/error.h"
#include "runtime/text/tokenizer.h"

namespace rill {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Chat::Chat(Session& session, const Vocab& vocab, ChatConfig config)
    : session_(session), vocab_(vocab), config_(std::move(config)) {
    if (!has_template()) stops_ = fallback_chat_stops();
}

std::vector<ChatMessage> Chat::with_system(size_t first_turn) const {
    std::vector<ChatMessage> all;
    if (!config_.system.empty()) all.push_back({"system", config_.system});
    all.insert(all.end(), messages_.begin() + long(first_turn), messages_.end());
    return all;
}

std::string render_conversation(const std::string& template_source, const Vocab& vocab, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt) {
    if (!template_source.empty()) {
        ChatTemplateInput input;
        input.messages = nlohmann::json::array();
        for (const ChatMessage& m : messages) input.messages.push_back({{"role", m.role}, {"content", m.content}});
        input.add_generation_prompt = add_generation_prompt;
        input.bos_token = vocab.bos >= 0 ? vocab.tokens[size_t(vocab.bos)] : "";
        input.eos_token = vocab.eos >= 0 ? vocab.tokens[size_t(vocab.eos)] : "";
        return render_chat_template(template_source, input);
    }
    // Plain fallback for models without a template: a transcript the model continues.
    std::string text;
    for (const ChatMessage& m : messages) {
        if (m.role == "system") text += m.content + "\n\n";
        else if (m.role == "user") text += "User: " + m.content + "\n";
        else text += fallback_assistant_turn(m.content);
    }
    if (add_generation_prompt) text += "Assistant:";
    return text;
}

std::string fallback_assistant_turn(const std::string& content) {
    return "Assistant:" + std::string(content.empty() || content[0] == ' ' ? "" : " ") + content + "\n";
}

std::vector<std::string> fallback_chat_stops() { return {"\nUser:", "\nuser:"}; }

std::string Chat::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
    return render_conversation(config_.template_source, vocab_, messages, add_generation_prompt);
}

std::vector<int32_t> Chat::prompt_tokens(const std::vector<ChatMessage>& messages) const {
    const std::string text = render(messages, true);
    // Templates write their own BOS as text; add one only where the model wants it and it is missing.
    std::vector<int32_t> ids = tokenize(vocab_, text, {.add_special = false, .parse_special = has_template()});
    if (vocab_.add_bos && vocab_.bos >= 0 && (ids.empty() || ids.front() != vocab_.bos)) ids.insert(ids.begin(), vocab_.bos);
    return ids;
}

ChatReply Chat::send(const std::string& user, const std::function<void(std::string_view)>& on_text,
                     const std::atomic<bool>* cancel) {
    ChatReply reply;
    messages_.push_back({"user", user});

    // Drop the oldest turns until the conversation and room for a reply fit the context.
    const int reserve = std::min(config_.max_reply_tokens, std::max(1, session_.n_ctx() / 4));
    size_t first_turn = 0;
    std::vector<int32_t> prompt = prompt_tokens(with_system(first_turn));
    while (int(prompt.size()) + reserve > session_.n_ctx() && first_turn + 1 < messages_.size()) {
        ++first_turn;
        // Never start the kept history on an assistant turn.
        while (first_turn + 1 < messages_.size() && messages_[first_turn].role != "user") ++first_turn;
        prompt = prompt_tokens(with_system(first_turn));
    }
    if (prompt.empty()) {
        messages_.pop_back();
        throw Error("the chat template rendered the conversation as no tokens at all");
    }
    if (int(prompt.size()) >= session_.n_ctx()) {
        messages_.pop_back();
        throw Error("the message needs " + std::to_string(prompt.size()) + " tokens, more than the context of " +
                    std::to_string(session_.n_ctx()) + " holds (raise -c)");
    }
    if (first_turn > 0) {
        messages_.erase(messages_.begin(), messages_.begin() + long(first_turn));
        reply.dropped_messages = int(first_turn);
    }
    reply.prompt_tokens = int(prompt.size());

    // Reuse the cached prefix; re-evaluate at least the last prompt token to get its logits.
    size_t common = 0;
    while (common < cached_.size() && common < prompt.size() && cached_[common] == prompt[common]) ++common;
    common = std::min(common, prompt.size() - 1);
    common = size_t(session_.truncate(int(common)));
    cached_.assign(prompt.begin(), prompt.begin() + long(common));
    reply.reused_tokens = int(common);

    auto start = std::chrono::steady_clock::now();
    const std::span<const int32_t> fresh(prompt.data() + common, prompt.size() - common);
    // Message boundaries are where the next turn's prompt can part from this one: a model with
    // recurrent layers keeps its state just before the prompt's last token (which is always read
    // again for its logits) and at the reply's end, and returns there instead of reading the
    // conversation again.
    const bool split = !session_.recurrent_state().empty() && fresh.size() > 1;
    if (split) {
        session_.eval(fresh.first(fresh.size() - 1));
        session_.checkpoint();
    }
    std::span<const float> logits = session_.eval(split ? fresh.last(1) : fresh);
    cached_.insert(cached_.end(), fresh.begin(), fresh.end());
    reply.prefill_ms = ms_since(start);

    Sampler sampler(config_.sampling);
    for (const int32_t t : prompt) sampler.accept(t);
    Utf8Stream utf8;
    size_t shown = 0;  // bytes of reply.text already passed to on_text
    bool stopped = false;
    start = std::chrono::steady_clock::now();
    while (!stopped) {
        if (cancel != nullptr && cancel->load()) {
            reply.cancelled = true;
            break;
        }
        const int32_t token = sampler.sample(logits);
        sampler.accept(token);
        if (vocab_.is_end_of_generation(token)) break;
        ++reply.generated;
        reply.text += utf8.push(token_text(vocab_, token));
        for (const std::string& stop : stops_) {
            if (const size_t at = reply.text.find(stop); at != std::string::npos) {
                reply.text.resize(at);
                stopped = true;
            }
        }
        const size_t showable = stopped ? reply.text.size() : reply.text.size() - stop_prefix_length(reply.text, stops_);
        if (shown == 0)  // the reply is shown, and kept, without the space a model may open it with
            while (shown < showable && reply.text[shown] == ' ') ++shown;
        if (showable > shown) {
            on_text(std::string_view(reply.text).substr(shown, showable - shown));
            shown = showable;
        }
        if (stopped) break;
        if (reply.generated >= config_.max_reply_tokens || session_.position() >= session_.n_ctx()) {
            reply.hit_limit = true;
            break;
        }
        const int32_t next[1] = {token};
        logits = session_.eval(next);
        cached_.push_back(token);
    }
    if (!stopped) {
        reply.text += utf8.flush();
        if (reply.text.size() > shown) on_text(std::string_view(reply.text).substr(shown));
    }
    reply.decode_ms = ms_since(start);
    session_.checkpoint();
    // Trim the whitespace a model often ends a turn with, so the next rendering starts cleanly.
    while (!reply.text.empty() && (reply.text.back() == ' ' || reply.text.back() == '\n')) reply.text.pop_back();
    size_t lead = 0;
    while (lead < reply.text.size() && reply.text[lead] == ' ') ++lead;
    reply.text.erase(0, lead);
    messages_.push_back({"assistant", reply.text});
    return reply;
}

void Chat::reset() {
    messages_.clear();
}

void Chat::set_system(std::string text) { config_.system = std::move(text); }

nlohmann::ordered_json Chat::to_json() const {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    for (const ChatMessage& m : messages_) messages.push_back({{"role", m.role}, {"content", m.content}});
    nlohmann::ordered_json saved;
    saved["system"] = config_.system;
    saved["messages"] = messages;
    return saved;
}

void Chat::from_json(const nlohmann::json& saved) {
    if (!saved.is_object() || !saved.contains("messages") || !saved["messages"].is_array())
        throw Error("a saved chat is a JSON object with a \"messages\" array");
    std::vector<ChatMessage> loaded;
    for (const auto& m : saved["messages"]) {
        if (!m.is_object() || !m.contains("role") || !m.contains("content") || !m["role"].is_string() ||
            !m["content"].is_string())
            throw Error("every saved message needs string \"role\" and \"content\"");
        const std::string role = m["role"];
        if (role != "user" && role != "assistant") throw Error("saved message role '" + role + "' is not user or assistant");
        loaded.push_back({role, m["content"]});
    }
    if (saved.contains("system") && saved["system"].is_string()) config_.system = saved["system"];
    messages_ = std::move(loaded);
}

}  // namespace rill
