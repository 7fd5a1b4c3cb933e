// include/rill.h over the runtime: handles own the C++ objects, every entry point turns exceptions
// into a status and a message kept in the handle.
#include "include/rill.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/session/chat.h"
#include "runtime/session/constrained.h"
#include "runtime/session/completion.h"
#include "runtime/base/error.h"
#include "runtime/session/session.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/vocab.h"

#define RILL_EXPORT extern "C" __attribute__((visibility("default")))

struct rill_model {
    std::unique_ptr<rill::Model> model;
    rill::Vocab vocab;
    std::string template_source;
    std::string name;
    // The vocabulary's token trie for constrained output, built by the first generation that needs it.
    std::once_flag trie_once;
    std::shared_ptr<const rill::grammar::TokenTrie> trie;
    // A model is shared across threads, so each thread has its own last message.
    mutable std::mutex errors_mutex;
    mutable std::unordered_map<std::thread::id, std::string> errors;
    std::string& error() const {
        std::lock_guard lock(errors_mutex);
        return errors[std::this_thread::get_id()];  // node-based: the reference stays valid
    }
};

struct rill_session {
    rill_model* model;
    std::unique_ptr<rill::Session> session;
    uint64_t seed = 0;
    uint64_t generations = 0;  // each generate draws from its own stream: seed + how many came before
    std::atomic<bool> cancel{false};
    std::string error;
    // The context's tokens, kept in step with its position so a later prompt can reuse their prefix;
    // a state restored from bytes holds tokens the session was never told (tokens_known false).
    std::vector<int32_t> tokens;
    bool tokens_known = true;
};

namespace {

// A failure with its status; everything else thrown becomes RILL_ERR_INTERNAL.
struct Failure {
    rill_status status;
    std::string message;
};

// Runs `body`, keeping the message of whatever it throws in `error`.
template <typename Body>
rill_status guarded(std::string& error, Body&& body) {
    try {
        error.clear();
        body();
        return RILL_OK;
    } catch (const Failure& f) {
        error = f.message;
        return f.status;
    } catch (const rill::Error& e) {
        error = e.what();
        const std::string_view what = e.what();
        if (what.find("context overflow") != std::string_view::npos) return RILL_ERR_CONTEXT_FULL;
        return RILL_ERR_INVALID_ARGUMENT;
    } catch (const std::bad_alloc&) {
        error = "out of memory";
        return RILL_ERR_INTERNAL;
    } catch (const std::exception& e) {
        error = e.what();
        return RILL_ERR_INTERNAL;
    } catch (...) {
        error = "unknown internal error";
        return RILL_ERR_INTERNAL;
    }
}

void copy_message(const std::string& message, char* out, size_t size) {
    if (out == nullptr || size == 0) return;
    const size_t n = std::min(message.size(), size - 1);
    std::memcpy(out, message.data(), n);
    out[n] = '\0';
}

void require(bool ok, const char* what) {
    if (!ok) throw Failure{RILL_ERR_INVALID_ARGUMENT, what};
}

// Fills a caller's buffer of `capacity` items, or says how many it needs.
template <typename T>
void fill(const T* items, size_t n, T* out, size_t capacity, size_t* needed, bool terminate) {
    if (needed != nullptr) *needed = n;
    const size_t want = n + (terminate ? 1 : 0);
    if (capacity < want || out == nullptr)
        throw Failure{RILL_ERR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(capacity) + " items, " + std::to_string(want) + " are needed"};
    std::copy(items, items + n, out);
    if (terminate) out[n] = T{};
}

std::string_view text_view(const char* text, size_t length) { return text == nullptr ? std::string_view() : std::string_view(text, length); }

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

RILL_EXPORT const char* rill_version(void) { return "0.1.0"; }

RILL_EXPORT const char* rill_status_string(rill_status status) {
    switch (status) {
        case RILL_OK: return "ok";
        case RILL_ERR_INVALID_ARGUMENT: return "invalid argument";
        case RILL_ERR_LOAD: return "cannot load model";
        case RILL_ERR_CANCELLED: return "cancelled";
        case RILL_ERR_CONTEXT_FULL: return "context full";
        case RILL_ERR_BUFFER_TOO_SMALL: return "buffer too small";
        case RILL_ERR_TEMPLATE: return "chat template error";
        case RILL_ERR_STATE: return "bad session state";
        case RILL_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

RILL_EXPORT rill_model_params rill_model_default_params(void) { return rill_model_params{1, 0, nullptr, nullptr}; }

RILL_EXPORT rill_status rill_model_load(const char* path, const rill_model_params* params, rill_model** model, char* error,
                                        size_t error_size) {
    std::string message;
    const rill_status status = guarded(message, [&] {
        require(model != nullptr, "rill_model_load: model is NULL");
        *model = nullptr;
        require(path != nullptr, "rill_model_load: path is NULL");
        const rill_model_params p = params != nullptr ? *params : rill_model_default_params();
        rill::LoadOptions options;
        options.use_mmap = p.use_mmap != 0;
        options.lock = p.use_mlock != 0;
        if (p.progress != nullptr)
            options.progress = [&p](double fraction) { return p.progress(float(fraction), p.progress_user_data) != 0; };
        auto handle = std::make_unique<rill_model>();
        try {
            handle->model = rill::load_model(path, options);
            handle->vocab = rill::load_vocab(handle->model->file);
        } catch (const rill::Error& e) {
            const bool cancelled = std::string_view(e.what()) == "loading cancelled";
            throw Failure{cancelled ? RILL_ERR_CANCELLED : RILL_ERR_LOAD, e.what()};
        }
        handle->template_source = handle->model->file.get_string("tokenizer.chat_template").value_or("");
        handle->name = handle->model->file.get_string("general.name").value_or("");
        if (handle->name.empty()) {
            const std::string_view full(path);
            handle->name = std::string(full.substr(full.find_last_of('/') + 1));
        }
        *model = handle.release();
    });
    copy_message(message, error, error_size);
    return status;
}

RILL_EXPORT void rill_model_free(rill_model* model) { delete model; }

RILL_EXPORT const char* rill_model_error(const rill_model* model) { return model == nullptr ? "model is NULL" : model->error().c_str(); }

RILL_EXPORT int32_t rill_model_n_vocab(const rill_model* model) { return model ? model->model->hp.n_vocab : 0; }
RILL_EXPORT int32_t rill_model_n_embd(const rill_model* model) { return model ? model->model->hp.n_embd : 0; }
RILL_EXPORT int32_t rill_model_n_ctx_train(const rill_model* model) { return model ? model->model->hp.n_ctx_train : 0; }
RILL_EXPORT const char* rill_model_name(const rill_model* model) { return model ? model->name.c_str() : ""; }

RILL_EXPORT rill_status rill_tokenize(rill_model* model, const char* text, size_t length, int add_special, int parse_special,
                                      int32_t* tokens, size_t capacity, size_t* needed) {
    if (model == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    return guarded(model->error(), [&] {
        require(text != nullptr || length == 0, "rill_tokenize: text is NULL");
        const auto ids = rill::tokenize(model->vocab, text_view(text, length), {.add_special = add_special != 0, .parse_special = parse_special != 0});
        fill(ids.data(), ids.size(), tokens, capacity, needed, false);
    });
}

RILL_EXPORT rill_status rill_detokenize(rill_model* model, const int32_t* tokens, size_t n_tokens, char* text, size_t capacity,
                                        size_t* needed) {
    if (model == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    return guarded(model->error(), [&] {
        require(tokens != nullptr || n_tokens == 0, "rill_detokenize: tokens is NULL");
        for (size_t i = 0; i < n_tokens; ++i)
            require(tokens[i] >= 0 && tokens[i] < model->vocab.size(), "rill_detokenize: a token id is outside the vocabulary");
        const std::string s = rill::detokenize(model->vocab, std::span<const int32_t>(tokens, n_tokens));
        fill(s.data(), s.size(), text, capacity, needed, true);
    });
}

RILL_EXPORT rill_status rill_apply_chat_template(rill_model* model, const rill_chat_message* messages, size_t n_messages,
                                                 int add_generation_prompt, char* text, size_t capacity, size_t* needed) {
    if (model == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    return guarded(model->error(), [&] {
        require(messages != nullptr || n_messages == 0, "rill_apply_chat_template: messages is NULL");
        std::vector<rill::ChatMessage> conversation;
        for (size_t i = 0; i < n_messages; ++i) {
            require(messages[i].role != nullptr && messages[i].content != nullptr, "rill_apply_chat_template: a message has a NULL role or content");
            conversation.push_back({messages[i].role, messages[i].content});
        }
        std::string rendered;
        try {
            rendered = rill::render_conversation(model->template_source, model->vocab, conversation, add_generation_prompt != 0);
        } catch (const rill::Error& e) {
            throw Failure{RILL_ERR_TEMPLATE, e.what()};
        }
        fill(rendered.data(), rendered.size(), text, capacity, needed, true);
    });
}

namespace {
rill::KvType kv_type_of(int64_t id, const char* field) {
    switch (id) {
        case RILL_KV_F16: return rill::KvType::F16;
        case RILL_KV_F32: return rill::KvType::F32;
        case RILL_KV_BF16: return rill::KvType::BF16;
        case RILL_KV_Q8_0: return rill::KvType::Q8_0;
        case RILL_KV_Q4_0: return rill::KvType::Q4_0;
        default:
            throw Failure{RILL_ERR_INVALID_ARGUMENT, std::string("rill_session_create: ") + field + " is not a rill_kv_type (" +
                                                         std::to_string(id) + "; RILL_KV_F16, F32, BF16, Q8_0 or Q4_0)"};
    }
}
}  // namespace

RILL_EXPORT rill_session_params rill_session_default_params(void) { return rill_session_params{0, 0, RILL_KV_F16, 0, 0}; }

RILL_EXPORT rill_status rill_session_create(rill_model* model, const rill_session_params* params, rill_session** session, char* error,
                                            size_t error_size) {
    std::string message;
    const rill_status status = guarded(message, [&] {
        require(session != nullptr, "rill_session_create: session is NULL");
        *session = nullptr;
        require(model != nullptr, "rill_session_create: model is NULL");
        const rill_session_params p = params != nullptr ? *params : rill_session_default_params();
        require(p.n_ctx >= 0, "rill_session_create: n_ctx is negative");
        require(p.n_threads >= 0, "rill_session_create: n_threads is negative");
        // A C caller may store any int in the enum; in C++ reading an out-of-range enum is undefined,
        // so the bits are read as the underlying integer.
        std::underlying_type_t<rill_kv_type> kv_type;
        std::memcpy(&kv_type, &p.kv_type, sizeof kv_type);
        rill::SessionOptions options;
        options.n_ctx = p.n_ctx;
        options.n_threads = p.n_threads;
        options.kv_types = kv_type_of(int64_t(kv_type), "kv_type");
        if (p.kv_type_v != 0) options.kv_types.v = kv_type_of(int64_t(p.kv_type_v) - 1, "kv_type_v (RILL_KV_V(t))");
        auto handle = std::make_unique<rill_session>();
        handle->model = model;
        handle->session = std::make_unique<rill::Session>(*model->model, options);
        handle->seed = p.seed;
        *session = handle.release();
    });
    copy_message(message, error, error_size);
    return status;
}

RILL_EXPORT void rill_session_free(rill_session* session) { delete session; }

RILL_EXPORT const char* rill_session_error(const rill_session* session) { return session == nullptr ? "session is NULL" : session->error.c_str(); }

RILL_EXPORT int32_t rill_session_position(const rill_session* session) { return session ? session->session->position() : 0; }
RILL_EXPORT int32_t rill_session_n_ctx(const rill_session* session) { return session ? session->session->n_ctx() : 0; }

RILL_EXPORT rill_status rill_session_reset(rill_session* session) {
    if (session == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    session->session->reset();
    session->tokens.clear();
    session->tokens_known = true;
    session->error.clear();
    return RILL_OK;
}

namespace {

// Evaluates tokens and records them as the context's; if the session fails part-way, what it holds
// is no longer known token by token.
std::span<const float> eval_recorded(rill_session& s, std::span<const int32_t> tokens) {
    try {
        const auto logits = s.session->eval(tokens);
        s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
        return logits;
    } catch (...) {
        s.tokens_known = s.tokens_known && size_t(s.session->position()) == s.tokens.size();
        throw;
    }
}

// Evaluates in chunks of the session's batch so a cancel lands between them.
std::span<const float> eval_cancellable(rill_session& s, std::span<const int32_t> tokens) {
    constexpr size_t kChunk = 512;
    std::span<const float> logits;
    for (size_t start = 0; start < tokens.size(); start += kChunk) {
        if (s.cancel.load()) throw Failure{RILL_ERR_CANCELLED, "cancelled by rill_session_cancel"};
        logits = eval_recorded(s, tokens.subspan(start, std::min(kChunk, tokens.size() - start)));
    }
    return logits;
}

// Keeps the longest prefix of `tokens` the context holds (all but the last token at most: its logits
// are wanted) and forgets the rest; returns how many were kept.
size_t keep_common_prefix(rill_session& s, std::span<const int32_t> tokens) {
    size_t keep = 0;
    if (s.tokens_known)
        while (keep < s.tokens.size() && keep + 1 < tokens.size() && s.tokens[keep] == tokens[keep]) ++keep;
    keep = size_t(s.session->truncate(int(keep)));  // a sliding-window ring may not hold what the prefix needs
    s.tokens.resize(keep);
    s.tokens_known = true;
    return keep;
}

void check_fits(const rill::Session& session, size_t n_tokens) {
    if (size_t(session.position()) + n_tokens > size_t(session.n_ctx()))
        throw Failure{RILL_ERR_CONTEXT_FULL, "context overflow: " + std::to_string(session.position()) + " tokens in the context plus " +
                                                 std::to_string(n_tokens) + " new ones exceed the context size " +
                                                 std::to_string(session.n_ctx())};
}

}  // namespace

RILL_EXPORT rill_status rill_session_eval(rill_session* session, const int32_t* tokens, size_t n_tokens) {
    if (session == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    const rill_status status = guarded(session->error, [&] {
        require(tokens != nullptr && n_tokens > 0, "rill_session_eval: no tokens");
        check_fits(*session->session, n_tokens);
        eval_cancellable(*session, std::span<const int32_t>(tokens, n_tokens));
    });
    session->cancel = false;
    return status;
}

RILL_EXPORT rill_status rill_session_set_tokens(rill_session* session, const int32_t* tokens, size_t n_tokens, size_t* reused) {
    if (session == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    if (reused != nullptr) *reused = 0;
    const rill_status status = guarded(session->error, [&] {
        require(tokens != nullptr && n_tokens > 0, "rill_session_set_tokens: no tokens");
        if (n_tokens > size_t(session->session->n_ctx()))
            throw Failure{RILL_ERR_CONTEXT_FULL, std::to_string(n_tokens) + " tokens exceed the context size " + std::to_string(session->session->n_ctx())};
        const std::span<const int32_t> all(tokens, n_tokens);
        for (const int32_t t : all)  // before the context is cut
            if (t < 0 || t >= session->model->model->hp.n_vocab)
                throw Failure{RILL_ERR_INVALID_ARGUMENT, "rill_session_set_tokens: token id " + std::to_string(t) + " is outside the vocabulary"};
        const size_t keep = keep_common_prefix(*session, all);
        if (reused != nullptr) *reused = keep;
        eval_cancellable(*session, all.subspan(keep));
    });
    session->cancel = false;
    return status;
}

RILL_EXPORT rill_status rill_session_tokens(const rill_session* session, const int32_t** tokens, size_t* n_tokens) {
    if (session == nullptr || tokens == nullptr || n_tokens == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    if (!session->tokens_known) return RILL_ERR_STATE;
    *tokens = session->tokens.data();
    *n_tokens = session->tokens.size();
    return RILL_OK;
}

RILL_EXPORT rill_status rill_session_logits(rill_session* session, const float** logits, size_t* n_vocab) {
    if (session == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    return guarded(session->error, [&] {
        require(logits != nullptr && n_vocab != nullptr, "rill_session_logits: an output pointer is NULL");
        const auto last = session->session->last_logits();
        require(!last.empty(), "rill_session_logits: nothing has been evaluated yet");
        *logits = last.data();
        *n_vocab = last.size();
    });
}

RILL_EXPORT rill_generate_params rill_generate_default_params(void) {
    const rill::SamplingParams d;
    rill_generate_params p{};
    p.max_tokens = 256;
    p.temperature = d.temperature;
    p.top_k = d.top_k;
    p.top_p = d.top_p;
    p.min_p = d.min_p;
    p.repeat_penalty = d.repeat_penalty;
    p.presence_penalty = d.presence_penalty;
    p.frequency_penalty = d.frequency_penalty;
    p.penalty_last_n = d.repeat_last_n;
    return p;
}

RILL_EXPORT rill_status rill_generate(rill_session* session, const char* prompt, size_t prompt_length, const rill_generate_params* params,
                                      rill_text_fn on_text, void* user_data, rill_generate_result* result) {
    if (session == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    rill_generate_result out{};
    const rill_status status = guarded(session->error, [&] {
        require(prompt != nullptr || prompt_length == 0, "rill_generate: prompt is NULL");
        const rill_generate_params p = params != nullptr ? *params : rill_generate_default_params();
        require(p.max_tokens >= 0, "rill_generate: max_tokens is negative");
        require(p.stop != nullptr || p.n_stop == 0, "rill_generate: stop is NULL but n_stop is not 0");
        rill::Session& s = *session->session;
        const rill::Vocab& vocab = session->model->vocab;

        rill::CompletionSettings settings;
        settings.max_tokens = p.max_tokens;
        rill::SamplingParams& sp = settings.sampling;
        sp.temperature = p.temperature;
        sp.top_k = p.top_k;
        sp.top_p = p.top_p;
        sp.min_p = p.min_p;
        sp.repeat_penalty = p.repeat_penalty;
        sp.repeat_last_n = p.penalty_last_n;
        sp.presence_penalty = p.presence_penalty;
        sp.frequency_penalty = p.frequency_penalty;
        sp.seed = session->seed + session->generations++;
        for (size_t i = 0; i < p.n_stop; ++i) {
            require(p.stop[i] != nullptr, "rill_generate: a stop string is NULL");
            settings.stops.emplace_back(p.stop[i]);
        }
        require(p.grammar == nullptr || p.json_schema == nullptr, "rill_generate: give grammar or json_schema, not both");
        if (p.grammar != nullptr || p.json_schema != nullptr) {
            std::string gbnf;
            try {
                if (p.json_schema != nullptr) {
                    const auto schema = nlohmann::ordered_json::parse(p.json_schema, nullptr, false);
                    require(!schema.is_discarded(), "rill_generate: json_schema is not valid JSON");
                    gbnf = rill::grammar::json_schema_to_gbnf(schema);
                } else {
                    gbnf = p.grammar;
                }
                settings.grammar = std::make_shared<const rill::grammar::Grammar>(rill::grammar::parse_gbnf(gbnf));
            } catch (const rill::Error& e) {
                throw Failure{RILL_ERR_INVALID_ARGUMENT, std::string("rill_generate: ") + e.what()};  // names grammar or json_schema
            }
            rill_model& model = *session->model;
            std::call_once(model.trie_once, [&] { model.trie = rill::build_vocab_trie(model.vocab); });
            settings.token_trie = model.trie;
        }
        const std::string_view text = text_view(prompt, prompt_length);
        const bool whole = p.reuse_prefix != 0;  // the prompt is the whole conversation, not what follows the context
        require(!whole || !text.empty(), "rill_generate: reuse_prefix needs the whole conversation as the prompt");
        const auto tokens = text.empty() ? std::vector<int32_t>() : rill::tokenize(vocab, text, {.add_special = whole || s.position() == 0, .parse_special = true});
        std::span<const float> logits;
        size_t cached = 0;
        if (whole) {
            if (tokens.size() > size_t(s.n_ctx()))
                throw Failure{RILL_ERR_CONTEXT_FULL, "the prompt has " + std::to_string(tokens.size()) + " tokens; the context holds " + std::to_string(s.n_ctx())};
            cached = keep_common_prefix(*session, tokens);
        }
        out.cached_tokens = int32_t(cached);
        const std::span<const int32_t> to_eval = std::span<const int32_t>(tokens).subspan(cached);
        if (tokens.empty()) {
            // An empty prompt continues from the context's last token.
            logits = s.last_logits();
            require(s.position() > 0 && !logits.empty(), "rill_generate: the prompt is empty and the context holds nothing to continue");
        } else {
            check_fits(s, to_eval.size());
        }
        out.prompt_tokens = int32_t(tokens.size());

        auto start = std::chrono::steady_clock::now();
        if (!to_eval.empty()) {
            try {
                logits = eval_cancellable(*session, to_eval);
            } catch (const Failure& f) {
                if (f.status != RILL_ERR_CANCELLED) throw;
                out.finish_reason = RILL_FINISH_CANCELLED;
                return;
            }
        }
        out.prefill_ms = ms_since(start);
        start = std::chrono::steady_clock::now();
        rill::Completion completion(vocab, settings, tokens);
        std::string piece;
        bool stopped_by_caller = false;
        while (!completion.done()) {
            piece.clear();
            if (session->cancel.load() || stopped_by_caller) {
                completion.finish(rill::FinishReason::Cancelled, piece);
            } else {
                const int32_t next = completion.step(logits, piece);
                if (next >= 0) {
                    if (s.position() >= s.n_ctx()) {
                        completion.finish(rill::FinishReason::Length, piece);
                    } else {
                        const int32_t one[1] = {next};
                        logits = eval_recorded(*session, one);
                    }
                }
            }
            if (!piece.empty() && on_text != nullptr && on_text(piece.data(), piece.size(), user_data) == 0) stopped_by_caller = true;
            if (stopped_by_caller && !completion.done()) completion.finish(rill::FinishReason::Cancelled, piece);
        }
        // The last token shown goes into the context too, so a next call continues after it.
        const int32_t last = completion.unevaluated_token();
        if (last >= 0 && s.position() < s.n_ctx()) {
            const int32_t one[1] = {last};
            eval_recorded(*session, one);
        }
        out.decode_ms = ms_since(start);
        out.generated_tokens = completion.generated();
        switch (completion.reason()) {
            case rill::FinishReason::Length: out.finish_reason = RILL_FINISH_LENGTH; break;
            case rill::FinishReason::Cancelled: out.finish_reason = RILL_FINISH_CANCELLED; break;
            default: out.finish_reason = RILL_FINISH_STOP; break;
        }
    });
    session->cancel = false;
    if (result != nullptr) *result = out;
    return status;
}

RILL_EXPORT void rill_session_cancel(rill_session* session) {
    if (session != nullptr) session->cancel = true;
}

RILL_EXPORT rill_status rill_embed(rill_session* session, const char* text, size_t length, float* embedding, size_t capacity, size_t* needed) {
    if (session == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    return guarded(session->error, [&] {
        require(text != nullptr || length == 0, "rill_embed: text is NULL");
        const size_t n_embd = size_t(session->model->model->hp.n_embd);
        if (needed != nullptr) *needed = n_embd;
        if (capacity < n_embd || embedding == nullptr)
            throw Failure{RILL_ERR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(capacity) + " floats, the model's embeddings have " +
                                                         std::to_string(n_embd)};
        const auto tokens = rill::tokenize(session->model->vocab, text_view(text, length));
        require(!tokens.empty(), "rill_embed: the text gives no tokens");
        if (tokens.size() > size_t(session->session->n_ctx()))
            throw Failure{RILL_ERR_CONTEXT_FULL, "the text has " + std::to_string(tokens.size()) + " tokens, more than the context size " +
                                                     std::to_string(session->session->n_ctx())};
        session->tokens.clear();  // embed() leaves the context reset
        session->tokens_known = true;
        const auto v = session->session->embed(tokens);
        std::copy(v.begin(), v.end(), embedding);
    });
}

RILL_EXPORT rill_status rill_session_save(rill_session* session, void* buffer, size_t capacity, size_t* needed) {
    if (session == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    return guarded(session->error, [&] {
        const auto state = session->session->save_state();
        fill(state.data(), state.size(), static_cast<uint8_t*>(buffer), capacity, needed, false);
    });
}

RILL_EXPORT rill_status rill_session_restore(rill_session* session, const void* buffer, size_t size) {
    if (session == nullptr) return RILL_ERR_INVALID_ARGUMENT;
    return guarded(session->error, [&] {
        require(buffer != nullptr, "rill_session_restore: buffer is NULL");
        try {
            session->session->load_state(std::span<const uint8_t>(static_cast<const uint8_t*>(buffer), size));
        } catch (const rill::Error& e) {
            session->tokens_known = size_t(session->session->position()) == session->tokens.size();
            throw Failure{RILL_ERR_STATE, e.what()};
        }
        session->tokens.clear();  // a state carries positions, not the tokens behind them
        session->tokens_known = session->session->position() == 0;
    });
}
