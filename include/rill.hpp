// A header-only C++17 layer over rill.h: handles that free themselves, errors as exceptions,
// std::string and std::vector in place of caller-sized buffers. It adds no behaviour of its own, so
// everything rill.h says about threads and lifetimes holds here too.
#ifndef RILL_HPP
#define RILL_HPP

#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rill.h"

namespace rill::api {

class Error : public std::runtime_error {
public:
    Error(rill_status status, const std::string& message)
        : std::runtime_error(message.empty() ? rill_status_string(status) : message), status_(status) {}
    rill_status status() const noexcept { return status_; }

private:
    rill_status status_;
};

namespace detail {

// Calls `call(capacity, needed)` and, while the library asks for more room, grows `buffer` to what
// it says and calls again. `extra` is the NUL a text result needs beyond the count in *needed.
template <typename Buffer, typename Call>
rill_status fill(Buffer& buffer, size_t extra, Call&& call) {
    for (;;) {
        size_t needed = 0;
        const rill_status status = call(buffer.data(), buffer.size(), &needed);
        if (status != RILL_ERR_BUFFER_TOO_SMALL || needed + extra <= buffer.size()) {
            if (status == RILL_OK) buffer.resize(needed);
            return status;
        }
        buffer.resize(needed + extra);
    }
}

// A C callback cannot unwind through the library, so a callback's exception is parked here, the
// call is stopped through the callback's return value, and the exception is rethrown afterwards.
struct Parked {
    std::exception_ptr error;
    void rethrow() {
        if (error) std::rethrow_exception(std::exchange(error, nullptr));
    }
};

}  // namespace detail

class Model {
public:
    explicit Model(const std::string& path, rill_model_params params = rill_model_default_params()) { load(path, params); }

    // `progress` gets the fraction loaded; returning false cancels the load (Error with RILL_ERR_CANCELLED).
    Model(const std::string& path, std::function<bool(float)> progress, rill_model_params params = rill_model_default_params()) {
        if (!progress) {
            load(path, params);
            return;
        }
        struct Context {
            std::function<bool(float)>* progress;
            detail::Parked parked;
        } context{&progress, {}};
        params.progress = [](float fraction, void* user) -> int {
            auto* c = static_cast<Context*>(user);
            try {
                return (*c->progress)(fraction) ? 1 : 0;
            } catch (...) {
                c->parked.error = std::current_exception();
                return 0;
            }
        };
        params.progress_user_data = &context;
        try {
            load(path, params);
        } catch (const Error&) {
            context.parked.rethrow();
            throw;
        }
    }

    Model(Model&& other) noexcept : model_(std::exchange(other.model_, nullptr)) {}
    Model& operator=(Model&& other) noexcept {
        if (this != &other) {
            rill_model_free(model_);
            model_ = std::exchange(other.model_, nullptr);
        }
        return *this;
    }
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;
    ~Model() { rill_model_free(model_); }

    rill_model* get() const noexcept { return model_; }

    int32_t n_vocab() const { return rill_model_n_vocab(model_); }
    int32_t n_embd() const { return rill_model_n_embd(model_); }
    int32_t n_ctx_train() const { return rill_model_n_ctx_train(model_); }
    std::string name() const { return rill_model_name(model_); }

    // Not const: like the C calls, these record their error in the model handle.
    std::vector<int32_t> tokenize(std::string_view text, bool add_special = true, bool parse_special = false) {
        std::vector<int32_t> tokens(text.size() + 2);  // enough for most text; fill() grows it otherwise
        check(detail::fill(tokens, 0, [&](int32_t* out, size_t capacity, size_t* needed) {
            return rill_tokenize(model_, text.data(), text.size(), add_special, parse_special, out, capacity, needed);
        }));
        return tokens;
    }

    std::string detokenize(const std::vector<int32_t>& tokens) {
        std::string text(tokens.size() * 8 + 1, '\0');
        check(detail::fill(text, 1, [&](char* out, size_t capacity, size_t* needed) {
            return rill_detokenize(model_, tokens.data(), tokens.size(), out, capacity, needed);
        }));
        return text;
    }

    // Each message is (role, content).
    std::string apply_chat_template(const std::vector<std::pair<std::string, std::string>>& messages, bool add_generation_prompt = true) {
        std::vector<rill_chat_message> c_messages;
        size_t size = 256;
        for (const auto& [role, content] : messages) {
            c_messages.push_back({role.c_str(), content.c_str()});
            size += role.size() + content.size() + 32;
        }
        std::string text(size, '\0');
        check(detail::fill(text, 1, [&](char* out, size_t capacity, size_t* needed) {
            return rill_apply_chat_template(model_, c_messages.data(), c_messages.size(), add_generation_prompt, out, capacity, needed);
        }));
        return text;
    }

private:
    void load(const std::string& path, const rill_model_params& params) {
        char message[512] = "";
        const rill_status status = rill_model_load(path.c_str(), &params, &model_, message, sizeof message);
        if (status != RILL_OK) throw Error(status, message);
    }

    void check(rill_status status) const {
        if (status != RILL_OK) throw Error(status, rill_model_error(model_));
    }

    rill_model* model_ = nullptr;
};

// A session refers to its model: the Model must outlive it.
class Session {
public:
    explicit Session(Model& model, rill_session_params params = rill_session_default_params()) : model_(model.get()) {
        char message[512] = "";
        const rill_status status = rill_session_create(model_, &params, &session_, message, sizeof message);
        if (status != RILL_OK) throw Error(status, message);
    }

    Session(Session&& other) noexcept
        : model_(std::exchange(other.model_, nullptr)), session_(std::exchange(other.session_, nullptr)) {}
    Session& operator=(Session&& other) noexcept {
        if (this != &other) {
            rill_session_free(session_);
            model_ = std::exchange(other.model_, nullptr);
            session_ = std::exchange(other.session_, nullptr);
        }
        return *this;
    }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    ~Session() { rill_session_free(session_); }

    rill_session* get() const noexcept { return session_; }

    int32_t position() const { return rill_session_position(session_); }
    int32_t n_ctx() const { return rill_session_n_ctx(session_); }
    void reset() { check(rill_session_reset(session_)); }

    // Safe from any thread while another runs generate() or eval().
    void cancel() noexcept { rill_session_cancel(session_); }

    // `on_text` gets each piece as it is decoded; returning false stops generation (finish_reason
    // RILL_FINISH_CANCELLED). A cancelled generation is a normal result, not an Error.
    rill_generate_result generate(std::string_view prompt, const rill_generate_params& params,
                                  std::function<bool(std::string_view)> on_text = {}) {
        struct Context {
            std::function<bool(std::string_view)>* on_text;
            detail::Parked parked;
        } context{&on_text, {}};
        const rill_text_fn trampoline = [](const char* text, size_t length, void* user) -> int {
            auto* c = static_cast<Context*>(user);
            try {
                return (*c->on_text)(std::string_view(text, length)) ? 1 : 0;
            } catch (...) {
                c->parked.error = std::current_exception();
                return 0;
            }
        };
        rill_generate_result result{};
        const rill_status status =
            rill_generate(session_, prompt.data(), prompt.size(), &params, on_text ? trampoline : nullptr, &context, &result);
        context.parked.rethrow();
        check(status);
        return result;
    }

    void eval(const std::vector<int32_t>& tokens) { check(rill_session_eval(session_, tokens.data(), tokens.size())); }
    // The context becomes exactly `tokens`, reusing the prefix it holds; returns how many were reused.
    size_t set_tokens(const std::vector<int32_t>& tokens) {
        size_t reused = 0;
        check(rill_session_set_tokens(session_, tokens.data(), tokens.size(), &reused));
        return reused;
    }
    std::vector<int32_t> tokens() const {
        const int32_t* data = nullptr;
        size_t n = 0;
        check(rill_session_tokens(session_, &data, &n));
        return std::vector<int32_t>(data, data + n);
    }

    // A copy, since the library's pointer only lasts until the next call on the session.
    std::vector<float> logits() {
        const float* data = nullptr;
        size_t n = 0;
        check(rill_session_logits(session_, &data, &n));
        return std::vector<float>(data, data + n);
    }

    // Resets the session: the library uses the context as scratch.
    std::vector<float> embed(std::string_view text) {
        std::vector<float> embedding(size_t(rill_model_n_embd(model_)));
        check(detail::fill(embedding, 0, [&](float* out, size_t capacity, size_t* needed) {
            return rill_embed(session_, text.data(), text.size(), out, capacity, needed);
        }));
        return embedding;
    }

    std::vector<uint8_t> save() {
        std::vector<uint8_t> state;
        check(detail::fill(state, 0, [&](uint8_t* out, size_t capacity, size_t* needed) {
            return rill_session_save(session_, out, capacity, needed);
        }));
        return state;
    }

    void restore(const std::vector<uint8_t>& state) { check(rill_session_restore(session_, state.data(), state.size())); }

private:
    void check(rill_status status) const {
        if (status != RILL_OK) throw Error(status, rill_session_error(session_));
    }

    rill_model* model_ = nullptr;
    rill_session* session_ = nullptr;
};

}  // namespace rill::api

#endif  // RILL_HPP
