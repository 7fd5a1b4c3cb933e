// rill serve: an OpenAI-compatible HTTP server (chat, completions, embeddings, models, health) on
// cpp-httplib, with continuous batching of up to --parallel streams.
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "commands.h"
#include "model_flags.h"
#include "serve_extras.h"
#include "serve_openai.h"
#include "serve_slots.h"
#include "serve_scheduler.h"
#include "session_flags.h"
#include "runtime/base/error.h"
#include "runtime/session/constrained.h"
#include "runtime/text/tokenizer.h"

namespace rill::cli {
namespace {

using json = nlohmann::ordered_json;  // keys in the order written: requests keep a schema's property order, responses OpenAI's field order
using serve::ApiError;

struct ServeFlags {
    ModelFlags model;
    SessionFlags session;
    std::string host = "127.0.0.1";
    int port = 8080;
    int parallel = 1;
    std::string api_key;
    std::string alias;
    size_t max_body = size_t(1) << 20;
    bool verbose = false;
    bool no_cache_prompt = false;
    int prefill_chunk = 64;
    double prefill_slowdown = 2;
    int max_queue = 64;
    int cache_ram_mb = 0;
    std::string slot_save_path;
    double drain_timeout = 30;
};

// What the log line of a request reports besides method, path and status.
struct RequestStats {
    int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
    double ttft_ms = -1, decode_ms = 0;
    bool disconnected = false;
};

// Stats by request, filled by the handlers and read by the logger, which runs on the same
// connection thread after the response (streamed or not) has been written.
class RequestLog {
public:
    void record(const httplib::Request& req, const RequestStats& stats) {
        std::lock_guard lock(mutex_);
        stats_[&req] = stats;
    }
    void write(const httplib::Request& req, const httplib::Response& res, bool verbose) {
        RequestStats s;
        {
            std::lock_guard lock(mutex_);
            if (const auto it = stats_.find(&req); it != stats_.end()) {
                s = it->second;
                stats_.erase(it);
            }
        }
        std::string line = req.method + " " + req.path + " " + std::to_string(res.status);
        if (s.prompt_tokens > 0 && s.ttft_ms < 0) {
            line += " input=" + std::to_string(s.prompt_tokens) + " tokens";
        } else if (s.prompt_tokens > 0) {
            char buf[160];
            const double tps = s.completion_tokens > 1 && s.decode_ms > 0 ? (s.completion_tokens - 1) * 1000.0 / s.decode_ms : 0;
            std::snprintf(buf, sizeof buf, " prompt=%d cached=%d generated=%d ttft=%.0fms %.1f t/s", s.prompt_tokens, s.cached_tokens,
                          s.completion_tokens, s.ttft_ms, tps);
            line += buf;
        }
        if (s.disconnected) line += " client disconnected";
        if (verbose) line += " from " + req.remote_addr + " body=" + std::to_string(req.body.size()) + "B";
        std::fprintf(stderr, "%s\n", line.c_str());
    }

private:
    std::mutex mutex_;
    std::map<const httplib::Request*, RequestStats> stats_;
};

// Generated text can hold bytes that are not UTF-8 (a model may emit a lone byte token); JSON cannot,
// so they become U+FFFD instead of failing the response.
std::string dump(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(dump(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.status, serve::error_body(e)); }

std::string new_id(const char* prefix) {
    static std::atomic<uint64_t> counter{0};  // ids only need to differ within a run
    return std::string(prefix) + std::to_string(std::chrono::system_clock::now().time_since_epoch().count()) + "-" +
           std::to_string(counter.fetch_add(1));
}

class Server {
public:
    Server(const ServeFlags& flags, const Model& model, const Vocab& vocab, const SessionOptions& options, std::string id)
        : flags_(flags),
          scheduler_(model, vocab, options,
                     serve::SchedulerOptions{.n_slots = flags.parallel, .cache_prompt = !flags.no_cache_prompt,
                                             .prefill_chunk = flags.prefill_chunk, .prefill_slowdown = flags.prefill_slowdown,
                                             .max_queue = flags.max_queue,
                                             .cache_ram_bytes = uint64_t(flags.cache_ram_mb) << 20},
                     metrics_),
          served_{model, vocab, std::move(id), model.file.get_string("tokenizer.chat_template").value_or(""), scheduler_.n_ctx(),
                  build_vocab_trie(vocab)} {}

    void install(httplib::Server& http) {
        http.set_payload_max_length(flags_.max_body);
        http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
            if (flags_.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
            if (req.get_header_value("Authorization") == "Bearer " + flags_.api_key) return httplib::Server::HandlerResponse::Unhandled;
            const bool missing = !req.has_header("Authorization");
            send_error(res, ApiError{401, missing ? "Missing API key: send it as 'Authorization: Bearer KEY'" : "Incorrect API key provided",
                                     "invalid_request_error", "invalid_api_key"});
            return httplib::Server::HandlerResponse::Handled;
        });
        // Errors httplib answers itself (unknown path, body over the limit) get OpenAI's shape too.
        http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
            if (!res.body.empty()) return;
            if (res.status == 413)
                send_error(res, ApiError{413, "the request body is larger than the limit of " + std::to_string(flags_.max_body) + " bytes (--max-body)"});
            else if (res.status == 404)
                send_error(res, ApiError{404, "no route " + req.method + " " + req.path, "invalid_request_error", "not_found"});
            else
                send_error(res, ApiError{res.status, "HTTP error " + std::to_string(res.status), res.status >= 500 ? "server_error" : "invalid_request_error"});
        });
        http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            std::string what = "unknown error";
            try {
                std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            send_error(res, ApiError{500, "internal error: " + what, "server_error"});
        });
        http.set_logger([this](const httplib::Request& req, const httplib::Response& res) { log_.write(req, res, flags_.verbose); });

        http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
            const serve::SchedulerCounts c = scheduler_.counts();
            // Draining, a load balancer's health check fails so it sends new requests elsewhere.
            send_json(res, draining_ ? 503 : 200,
                      {{"status", draining_ ? "draining" : "ok"}, {"slots_idle", c.slots - c.busy}, {"slots_processing", c.busy}, {"requests_queued", c.queued}});
        });
        http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
            const serve::SchedulerCounts c = scheduler_.counts();
            serve::MetricsGauges gauges{.slots = c.slots, .busy = c.busy, .queued = c.queued, .cache_ram_bytes = c.cache_ram_bytes,
                                        .cache_ram_entries = c.cache_ram_entries, .checkpoints = c.checkpoints,
                                        .checkpoint_bytes = c.checkpoint_bytes};
            for (const serve::SlotInfo& slot : scheduler_.slots()) gauges.cached_tokens += uint64_t(slot.cached_tokens);
            res.set_content(metrics_.render(gauges), "text/plain; version=0.0.4; charset=utf-8");
        });
        http.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
            answer(res, [&] { return serve::tokenize_response(serve::parse_body(req.body), served_); });
        });
        http.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
            answer(res, [&] { return serve::detokenize_response(serve::parse_body(req.body), served_); });
        });
        http.Post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) {
            answer(res, [&] { return json{{"prompt", serve::apply_template(serve::parse_body(req.body), served_)}}; });
        });
        http.Get("/props", [this](const httplib::Request&, httplib::Response& res) { send_json(res, 200, props()); });
        http.Get("/slots", [this](const httplib::Request&, httplib::Response& res) {
            json slots = json::array();
            for (const serve::SlotInfo& s : scheduler_.slots())
                slots.push_back({{"id", s.id}, {"n_ctx", served_.n_ctx}, {"is_processing", s.busy}, {"n_cached_tokens", s.cached_tokens},
                                 {"n_prompt_tokens", s.prompt_tokens}, {"n_prompt_tokens_processed", s.prefilled}, {"n_decoded", s.generated}});
            send_json(res, 200, slots);
        });
        http.Post(R"(/slots/(\d{1,6}))", [this](const httplib::Request& req, httplib::Response& res) { slot_action(req, res); });
        http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
            send_json(res, 200, {{"object", "list"}, {"data", json::array({model_json()})}});
        });
        http.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
            if (req.matches[1] == served_.id) return send_json(res, 200, model_json());
            send_error(res, ApiError{404, "The model '" + std::string(req.matches[1]) + "' does not exist", "invalid_request_error", "model_not_found", "model"});
        });
        http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, true); });
        http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, false); });
        http.Post("/v1/embeddings", [this](const httplib::Request& req, httplib::Response& res) { embeddings(req, res); });
    }

    int n_ctx() const { return served_.n_ctx; }
    void drain() { draining_ = true; }
    // Returns once no request is queued or running, after `seconds`, or when `stop` is set. A finished
    // stream's last events are written by its connection thread after that; httplib's stop() waits
    // for the handlers, so they are not cut off.
    void wait_idle(double seconds, const std::atomic<bool>& stop) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        for (;;) {
            const serve::SchedulerCounts c = scheduler_.counts();
            if ((c.busy == 0 && c.queued == 0) || stop || std::chrono::steady_clock::now() >= deadline) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    serve::Scheduler& scheduler() { return scheduler_; }

private:
    json model_json() const {
        return {{"id", served_.id}, {"object", "model"}, {"created", 0}, {"owned_by", "rill"},
                {"meta", {{"n_ctx", served_.n_ctx}, {"n_vocab", served_.model.hp.n_vocab}, {"n_embd", served_.model.hp.n_embd}}}};
    }

    void generate(const httplib::Request& req, httplib::Response& res, bool chat) {
        serve::GenerationRequest parsed;
        try {
            const json body = serve::parse_body(req.body);
            parsed = chat ? serve::parse_chat_request(body, served_) : serve::parse_completion_request(body, served_);
        } catch (const ApiError& e) {
            return send_error(res, e);
        } catch (const std::exception& e) {  // a tokenizer or template failure
            return send_error(res, ApiError{400, e.what()});
        }
        auto job = std::make_shared<serve::Job>();
        job->prompt = std::move(parsed.prompt);
        job->settings = std::move(parsed.settings);
        job->cache_prompt = parsed.cache_prompt;
        const int prompt_tokens = int(job->prompt.size());
        if (draining_) return overloaded(res, "the server is shutting down and takes no new requests");
        if (!scheduler_.submit(job))
            return overloaded(res, "the server is busy: " + std::to_string(flags_.max_queue) + " requests are already waiting (--max-queue)");
        const std::string id = new_id(chat ? "chatcmpl-" : "cmpl-");
        const char* object = chat ? "chat.completion" : "text_completion";
        const serve::OutputOptions output = parsed.output;
        const bool logprobs = parsed.logprobs;

        if (!parsed.stream) {
            std::vector<TokenLogprob> entries;
            const std::string text = job->wait_all(&entries);
            log_.record(req, stats(*job, prompt_tokens));
            if (!job->error.empty()) return send_error(res, ApiError{500, job->error, "server_error"});
            const char* reason = finish_reason_name(job->reason);
            json choice;
            if (chat) {
                serve::ChatOutput out = serve::parse_chat_output(output, text);
                name_calls(out, output.syntax);
                if (!out.calls.empty() && job->reason == FinishReason::Stop) reason = "tool_calls";
                choice = {{"index", 0}, {"message", serve::chat_message(out)},
                          {"logprobs", logprobs ? serve::chat_logprobs(served_.vocab, entries) : json(nullptr)}, {"finish_reason", reason}};
            } else {
                choice = serve::completion_choice(text, reason);
                if (logprobs) choice["logprobs"] = serve::completion_logprobs(served_.vocab, entries, 0);
            }
            json body = serve::envelope(id, object, served_, choice);
            body["usage"] = usage(*job);
            return send_json(res, 200, body);
        }

        const char* chunk_object = chat ? "chat.completion.chunk" : "text_completion";
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider("text/event-stream", [this, job, id, chat, chunk_object, prompt_tokens, output, logprobs,
                                                               &req](size_t, httplib::DataSink& sink) {
            auto send = [&](const json& data) {
                const std::string event = "data: " + dump(data) + "\n\n";
                return sink.write(event.data(), event.size());
            };
            auto chunk = [&](json delta, const char* reason, std::vector<TokenLogprob>& entries) {
                json choice = {{"index", 0}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", reason ? json(reason) : json(nullptr)}};
                if (logprobs && !entries.empty()) {
                    choice["logprobs"] = serve::chat_logprobs(served_.vocab, entries);
                    entries.clear();
                }
                return send(serve::envelope(id, chunk_object, served_, choice));
            };
            auto gone = [&] {
                job->cancel = true;  // the client is gone: free its slot at the next step
                RequestStats s = stats(*job, prompt_tokens);
                s.disconnected = true;
                log_.record(req, s);
                return false;
            };
            serve::ChatOutputStream stream(output);
            int next_call = 0;
            bool called = false;
            size_t text_offset = 0;
            std::vector<TokenLogprob> entries;  // taken, not yet sent
            std::string piece;
            if (chat && !chunk({{"role", "assistant"}, {"content", ""}}, nullptr, entries)) return gone();
            for (bool finished = false; !finished;) {
                piece.clear();
                finished = job->take(piece, std::chrono::milliseconds(100), &entries);
                if (!chat) {
                    if (piece.empty()) continue;
                    json choice = serve::completion_choice(piece, nullptr);
                    if (logprobs) {
                        choice["logprobs"] = serve::completion_logprobs(served_.vocab, entries, text_offset);
                        for (const TokenLogprob& e : entries) text_offset += token_text(served_.vocab, e.token).size();
                        entries.clear();
                    }
                    if (!send(serve::envelope(id, chunk_object, served_, choice))) return gone();
                    continue;
                }
                serve::ChatOutput shown = stream.feed(piece);
                if (finished) serve::append(shown, stream.finish());
                name_calls(shown, output.syntax);
                called = called || !shown.calls.empty();
                for (json& delta : serve::chat_deltas(shown, next_call))
                    if (!chunk(std::move(delta), nullptr, entries)) return gone();
            }
            log_.record(req, stats(*job, prompt_tokens));
            if (!job->error.empty()) {
                send(serve::error_body(ApiError{500, job->error, "server_error"}));
            } else {
                const char* reason = finish_reason_name(job->reason);
                if (called && job->reason == FinishReason::Stop) reason = "tool_calls";
                json last;
                if (chat) {
                    last = serve::envelope(id, chunk_object, served_, {{"index", 0}, {"delta", json::object()}, {"logprobs", nullptr}, {"finish_reason", reason}});
                    if (logprobs && !entries.empty()) last["choices"][0]["logprobs"] = serve::chat_logprobs(served_.vocab, entries);
                } else {
                    last = serve::envelope(id, chunk_object, served_, serve::completion_choice("", reason));
                }
                last["usage"] = usage(*job);
                send(last);
            }
            const std::string done = "data: [DONE]\n\n";
            sink.write(done.data(), done.size());
            sink.done();
            return true;
        });
    }

    // A JSON answer from `make`, or its ApiError (a tokenizer or template failure is a 400).
    template <typename Make>
    static void answer(httplib::Response& res, Make make) {
        try {
            send_json(res, 200, make());
        } catch (const ApiError& e) {
            send_error(res, e);
        } catch (const std::exception& e) {
            send_error(res, ApiError{400, e.what()});
        }
    }

    json props() const {
        const serve::SchedulerOptions& o = scheduler_.options();
        const Vocab& vocab = served_.vocab;
        return {{"default_generation_settings", {{"n_ctx", served_.n_ctx}, {"model", served_.id}}},
                {"total_slots", o.n_slots},
                {"model_alias", served_.id},
                {"model_path", flags_.model.path},
                {"chat_template", served_.template_source},
                {"bos_token", vocab.bos >= 0 ? vocab.tokens[size_t(vocab.bos)] : ""},
                {"eos_token", vocab.eos >= 0 ? vocab.tokens[size_t(vocab.eos)] : ""},
                {"n_vocab", served_.model.hp.n_vocab},
                {"cache_prompt", o.cache_prompt},
                {"prefill_chunk", o.prefill_chunk},
                {"prefill_slowdown", o.prefill_slowdown},
                {"max_queue", o.max_queue},
                {"cache_ram_mb", flags_.cache_ram_mb},
                {"slot_save_path", flags_.slot_save_path},
                {"build_info", "rill"}};
    }

    // POST /slots/ID?action=save|restore|erase, as llama-server has it.
    void slot_action(const httplib::Request& req, httplib::Response& res) {
        const int id = std::stoi(req.matches[1]);
        const std::string action = req.get_param_value("action");
        try {
            if (action != "save" && action != "restore" && action != "erase")
                throw ApiError{400, "'action' must be save, restore or erase", "invalid_request_error", "", "action"};
            std::string path;
            if (action != "erase") {
                if (flags_.slot_save_path.empty())
                    throw ApiError{501, "this server saves no slots: start it with --slot-save-path DIR", "not_supported_error"};
                path = flags_.slot_save_path + "/" + serve::slot_filename(serve::parse_body(req.body));
            }
            json result = {{"id_slot", id}};
            const auto start = std::chrono::steady_clock::now();
            scheduler_.with_idle_slot(id, [&](Session& session, std::vector<int32_t>& cached) {
                if (action == "erase") {
                    result["n_erased"] = cached.size();
                    session.reset();
                    cached.clear();
                } else if (action == "save") {
                    result["filename"] = path.substr(flags_.slot_save_path.size() + 1);
                    result["n_saved"] = cached.size();
                    result["n_written"] = serve::save_slot_file(path, cached, session);
                } else {
                    size_t read = 0;
                    cached = serve::load_slot_file(path, session, read);
                    result["filename"] = path.substr(flags_.slot_save_path.size() + 1);
                    result["n_restored"] = cached.size();
                    result["n_read"] = read;
                }
            }).get();
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            if (action != "erase") result["timings"] = {{action + "_ms", ms}};
            send_json(res, 200, result);
        } catch (const ApiError& e) {
            send_error(res, e);
        } catch (const serve::SlotBusy& e) {
            send_error(res, ApiError{409, e.what(), "invalid_request_error", "slot_busy"});
        } catch (const serve::NoSuchSlot& e) {
            send_error(res, ApiError{404, e.what(), "invalid_request_error", "not_found"});
        } catch (const std::exception& e) {
            send_error(res, ApiError{400, e.what()});
        }
    }

    // Calls the model wrote without an id get one.
    static void name_calls(serve::ChatOutput& out, serve::ToolSyntax syntax) {
        for (serve::ToolCall& c : out.calls)
            if (c.id.empty()) c.id = serve::new_call_id(syntax);
    }

    void embeddings(const httplib::Request& req, httplib::Response& res) {
        try {
            const json body = serve::parse_body(req.body);
            bool base64 = false;
            const auto inputs = serve::parse_embedding_inputs(body, served_, base64);
            json data = json::array();
            int tokens = 0;
            for (size_t i = 0; i < inputs.size(); ++i) {
                const std::vector<float> v = scheduler_.embed(inputs[i]).get();
                tokens += int(inputs[i].size());
                data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", base64 ? json(serve::base64_floats(v)) : json(v)}});
            }
            RequestStats s;
            s.prompt_tokens = tokens;
            log_.record(req, s);
            send_json(res, 200, {{"object", "list"}, {"data", data}, {"model", served_.id}, {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
        } catch (const ApiError& e) {
            send_error(res, e);
        } catch (const std::exception& e) {
            send_error(res, ApiError{500, e.what(), "server_error"});
        }
    }

    static RequestStats stats(serve::Job& job, int prompt_tokens) {
        std::lock_guard lock(job.mutex);
        return {prompt_tokens, job.completion_tokens, job.cached_tokens, job.ttft_ms, job.decode_ms};
    }

    static json usage(serve::Job& job) {
        std::lock_guard lock(job.mutex);
        return serve::usage_json(int(job.prompt.size()), job.completion_tokens, job.cached_tokens);
    }

    // A 503 that tells the client when to come back: about the time the requests ahead of it need,
    // from the mean request time so far.
    void overloaded(httplib::Response& res, const std::string& why) {
        metrics_.request_rejected();
        const serve::SchedulerCounts c = scheduler_.counts();
        const double wait = metrics_.mean_request_seconds() * double(c.queued + 1) / double(std::max(1, c.slots));
        res.set_header("Retry-After", std::to_string(std::clamp(int(std::ceil(wait)), 1, 60)));
        send_error(res, ApiError{503, why, "server_error", "server_busy"});
    }

    const ServeFlags& flags_;
    serve::Metrics metrics_;  // before the scheduler, which feeds it
    std::atomic<bool> draining_{false};
    serve::Scheduler scheduler_;
    serve::ServedModel served_;
    RequestLog log_;
};

int serve_main(const ServeFlags& f) {
    // SIGINT and SIGTERM go to a thread that stops the server; every other thread has them blocked.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    std::fprintf(stderr, "rill serve: loading %s\n", f.model.path.c_str());
    const auto model = load_model(f.model.path, f.model.load_options());
    const Vocab vocab = load_vocab(model->file);
    std::string id = f.alias;
    if (id.empty()) {
        id = f.model.path.substr(f.model.path.find_last_of('/') + 1);
        if (id.size() > 5 && id.ends_with(".gguf")) id.resize(id.size() - 5);
    }
    const SessionOptions session_options = f.session.options_for(*model);
    Server server(f, *model, vocab, session_options, id);
    httplib::Server http;
    // Every stream and every queued request holds a connection thread until it ends, and an idle
    // keep-alive connection holds one too; a pool smaller than that would make requests wait inside
    // httplib, unseen by --max-queue, and /health and /metrics would stall under load. So: one per
    // slot and queue place, plus room for probes, refusals and idle connections.
    const int connection_threads = f.parallel + f.max_queue + 16;
    http.new_task_queue = [connection_threads] { return new httplib::ThreadPool(size_t(connection_threads)); };
    // Without it the first chunk of a stream can wait 40 ms for Nagle's algorithm.
    http.set_tcp_nodelay(true);
    server.install(http);

    int port = f.port;
    if (port == 0) {
        port = http.bind_to_any_port(f.host);
        if (port < 0) throw Error("cannot listen on " + f.host + " (any port)");
    } else if (!http.bind_to_port(f.host, port)) {
        throw Error("cannot listen on " + f.host + ":" + std::to_string(port) + " (in use, or not an address of this machine)");
    }
    std::fprintf(stderr, "rill serve: %s on http://%s:%d (model '%s', %d slot%s of %d tokens, %s)\n", model->hp.arch.c_str(), f.host.c_str(),
                 port, id.c_str(), f.parallel, f.parallel == 1 ? "" : "s", server.n_ctx(),
                 thread_summary(session_options.n_threads, session_options.n_threads_batch).c_str());
    std::fflush(stderr);

    // HTTP on its own threads; the model's work stays on this one, which loaded it (see Scheduler).
    bool ok = true;
    std::thread listener([&] {
        ok = http.listen_after_bind();
        server.scheduler().stop();
    });
    // The first SIGINT or SIGTERM drains: new requests get 503 (and /health says so, for a load
    // balancer), those in flight finish within --drain-timeout; a second signal stops at once.
    std::atomic<bool> stopping{false};
    std::thread stopper([&] {
        int signal = 0;
        sigwait(&stop_signals, &signal);
        if (stopping) return;
        std::fprintf(stderr, "rill serve: draining (at most %.0f s; signal again to stop now)\n", f.drain_timeout);
        std::fflush(stderr);
        server.drain();
        std::thread drainer([&] {
            server.wait_idle(f.drain_timeout, stopping);
            std::fprintf(stderr, "rill serve: stopping\n");
            http.stop();
        });
        sigwait(&stop_signals, &signal);
        stopping = true;
        drainer.join();
    });
    server.scheduler().run();
    listener.join();
    stopping = true;
    pthread_kill(stopper.native_handle(), SIGTERM);  // wakes the signal thread if the server ended on its own
    stopper.join();
    return ok ? 0 : 1;
}

}  // namespace

Action add_serve(CLI::App& app) {
    auto flags = std::make_shared<ServeFlags>();
    CLI::App* cmd = app.add_subcommand("serve", "serve the model over HTTP with OpenAI's API (chat, completions, embeddings)");
    cmd->footer(
        "\nEndpoints: POST /v1/chat/completions, POST /v1/completions, POST /v1/embeddings, GET /v1/models, GET /health;\n"
        "llama-server's GET /metrics (Prometheus text), /props, /slots, POST /tokenize, /detokenize, /apply-template,\n"
        "/slots/ID?action=save|restore|erase.\n"
        "Any OpenAI client works: point its base URL at http://HOST:PORT/v1 and use the model id printed at start.\n"
        "With --parallel N, up to N requests are decoded together, one pass per step; up to --max-queue more wait.\n"
        "A returning conversation reuses its slot's cached prefix (usage.prompt_tokens_details.cached_tokens says how much).\n"
        "SIGTERM drains: no new requests, those in flight finish. Run several behind nginx: scripts/serve_cluster.sh.\n"
        "Structured output: response_format (json_object, json_schema), grammar (GBNF), tools with tool_choice,\n"
        "reasoning_content for <think> templates and Gemma 4's thought channel, logprobs and top_logprobs, as OpenAI's API has them.\n"
        "Example: rill serve -m model.gguf --parallel 4 --api-key secret");
    flags->model.add_to(*cmd);
    flags->session.add_to(*cmd, "context length per request slot (default: the model's, at most 4096)");
    cmd->add_option("--host", flags->host, "address to listen on")->capture_default_str();
    cmd->add_option("--port", flags->port, "port to listen on; 0 picks a free one")->capture_default_str()->check(CLI::Range(0, 65535));
    cmd->add_option("--parallel", flags->parallel, "requests decoded together (slots); each has its own context")
        ->capture_default_str()->check(CLI::Range(1, 256));
    cmd->add_option("--api-key", flags->api_key, "require 'Authorization: Bearer KEY' on every route but /health");
    cmd->add_option("--alias", flags->alias, "the model id clients use (default: the file name without .gguf)");
    cmd->add_option("--max-body", flags->max_body, "largest request body in bytes")->capture_default_str()->check(CLI::Range(size_t(1024), size_t(1) << 30));
    cmd->add_flag("--no-cache-prompt", flags->no_cache_prompt,
                  "evaluate every prompt whole; by default a request goes to the slot whose cached tokens share the longest "
                  "prefix with it and evaluates only the rest");
    cmd->add_option("--prefill-slowdown", flags->prefill_slowdown,
                    "while a prompt is read and other streams are generating, a step may take at most this many times a "
                    "step of theirs alone: the server measures both and sizes the prompt's pieces to fit, so their time "
                    "between tokens stays bounded on any machine; larger gives the prompt its first token sooner; 0: "
                    "only --prefill-chunk bounds it")
        ->capture_default_str()
        ->check(CLI::Validator([](const std::string& text) -> std::string {
                    const double x = std::strtod(text.c_str(), nullptr);
                    return x == 0 || (x > 1 && x <= 1000) ? "" : "must be above 1 (and at most 1000), or 0 for no bound";
                }, "0 or >1"));
    cmd->add_option("--prefill-chunk", flags->prefill_chunk,
                    "at most this many prompt tokens per step while other streams are generating (the pieces "
                    "--prefill-slowdown sizes are never larger)")
        ->capture_default_str()->check(CLI::Range(1, 1 << 16));
    cmd->add_option("--max-queue", flags->max_queue,
                    "requests that may wait for a free slot; beyond them the server answers 503 with Retry-After")
        ->capture_default_str()->check(CLI::Range(0, 4096));
    cmd->add_option("--cache-ram", flags->cache_ram_mb,
                    "MB of RAM for conversations' keys and values beyond the slots: a conversation whose slot was taken "
                    "by another finds its history there when it returns (0: off)")
        ->capture_default_str()->check(CLI::Range(0, 1 << 24));
    cmd->add_option("--slot-save-path", flags->slot_save_path,
                    "folder for POST /slots/ID?action=save|restore (off without it)")->check(CLI::ExistingDirectory);
    cmd->add_option("--drain-timeout", flags->drain_timeout,
                    "seconds SIGTERM waits for requests in flight to finish before the server exits")
        ->capture_default_str()->check(CLI::Range(0.0, 86400.0));
    cmd->add_flag("-v,--verbose", flags->verbose, "log more about each request");
    return [flags] { return serve_main(*flags); };
}

}  // namespace rill::cli
