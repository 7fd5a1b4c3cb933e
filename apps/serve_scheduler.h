// The server's decode loop: a fixed set of slots, each a session that holds one request's context.
// One thread owns every slot. Each step it starts waiting requests in free slots, then runs one pass
// over the weights holding one token for every stream that is generating and a piece of the prompt
// of each stream still reading one (continuous batching with chunked prefill). Every row of a pass
// takes the decode kernels, so a stream's tokens do not depend on who shares its passes, on how its
// prompt was split, or on how much of it came from the cache.
// A slot keeps the tokens of its last request after it ends; a new request goes to the free slot whose
// tokens share the longest prefix with its prompt and evaluates only the rest (prompt reuse).
// Embeddings and slot actions run on the same thread between steps: with all model work on one
// thread, OpenMP keeps one team of threads, which spin between parallel regions instead of sleeping
// (a second team makes libgomp stop spinning, and waking threads per region cost a fifth of
// single-stream decode speed here).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "serve_metrics.h"
#include "serve_prefill_pacer.h"
#include "serve_prefix_cache.h"
#include "runtime/base/error.h"
#include "runtime/session/completion.h"
#include "runtime/session/session.h"
#include "runtime/text/vocab.h"

namespace rill::serve {

// One request's generation, shared between the HTTP thread that waits on it and the scheduler.
struct Job {
    std::vector<int32_t> prompt;
    CompletionSettings settings;
    bool cache_prompt = true;         // may reuse a slot's cached prefix
    std::atomic<bool> cancel{false};  // the client went away: the scheduler frees the slot at its next step

    // Written by the scheduler under `mutex`, read by the HTTP thread.
    std::mutex mutex;
    std::condition_variable changed;
    std::string text;          // generated text not yet taken by take()
    std::vector<TokenLogprob> logprobs;  // the generated tokens' log-probabilities not yet taken (when asked for)
    bool finished = false;
    FinishReason reason = FinishReason::None;
    std::string error;         // set when the generation failed
    int completion_tokens = 0;
    int cached_tokens = 0;     // prompt tokens whose keys and values came from the slot's cache
    int slot = -1;
    double ttft_ms = 0;        // from submission to the first token
    double decode_ms = 0;      // after the first token
    std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();

    // Waits up to `timeout` for new text or the end; moves the new text into `out`. Returns true
    // once finished and every piece was taken.
    bool take(std::string& out, std::chrono::milliseconds timeout, std::vector<TokenLogprob>* logprobs = nullptr);
    // Waits for the end and returns the whole text.
    std::string wait_all(std::vector<TokenLogprob>* logprobs = nullptr);
};

// with_idle_slot's refusals: the slot is serving a request (a 409 to the client), or there is no such slot (404).
struct SlotBusy : Error {
    using Error::Error;
};
struct NoSuchSlot : Error {
    using Error::Error;
};

struct SchedulerOptions {
    int n_slots = 1;
    bool cache_prompt = true;  // false: every request evaluates its whole prompt (--no-cache-prompt)
    int prefill_chunk = 64;    // at most this many prompt tokens per pass while other streams are generating
    double prefill_slowdown = 2;  // and only as many as keep that pass within this many times a pass without them (0: no bound)
    int max_queue = 64;        // requests that may wait for a slot; submit() refuses more
    uint64_t cache_ram_bytes = 0;  // conversations' states kept beyond the slots (--cache-ram); 0: none
};

struct SchedulerCounts {
    int slots = 0, busy = 0, queued = 0;
    uint64_t cache_ram_bytes = 0;  // held by --cache-ram's conversations
    int cache_ram_entries = 0;
    uint64_t checkpoints = 0, checkpoint_bytes = 0;  // the slots' recurrent-state checkpoints
};

// A slot as /slots shows it.
struct SlotInfo {
    int id = 0;
    bool busy = false;
    int cached_tokens = 0;   // tokens whose keys and values it holds
    int prompt_tokens = 0;   // of the request it serves (0 when idle)
    int prefilled = 0;       // prompt tokens in its cache so far
    int generated = 0;
};

class Scheduler {
public:
    Scheduler(const Model& model, const Vocab& vocab, const SessionOptions& session, const SchedulerOptions& options, Metrics& metrics);
    ~Scheduler();  // unfinished jobs end as cancelled
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // The loop; call it on the thread that should own the model's work. Returns after stop().
    void run();
    void stop();

    // Queues a job; false if --max-queue jobs are already waiting (the job is left untouched).
    bool submit(std::shared_ptr<Job> job);
    // A unit-length mean-pooled embedding, computed on the loop's thread between decode steps.
    std::future<std::vector<float>> embed(std::vector<int32_t> tokens);
    // Runs `action` on the loop's thread with slot `id`'s session and cached tokens while the slot is
    // idle; the future throws rill::Error if there is no such slot or it is serving a request.
    std::future<void> with_idle_slot(int id, std::function<void(Session&, std::vector<int32_t>& cached)> action);
    SchedulerCounts counts() const;
    std::vector<SlotInfo> slots() const;
    int n_ctx() const { return n_ctx_; }
    const SchedulerOptions& options() const { return options_; }

private:
    struct Slot {
        int id = 0;
        std::unique_ptr<Session> session;
        std::vector<int32_t> cached;  // the tokens at the session's positions 0 .. position()
        uint64_t last_used = 0;       // admission counter, for least-recently-used ties
        std::shared_ptr<Job> job;
        size_t prefilled = 0;         // prompt tokens in the cache so far
        std::optional<Completion> completion;  // set once the prompt is read
        int32_t next = -1;            // the token to evaluate at the next step
        size_t logprobs_published = 0;
        std::chrono::steady_clock::time_point first_token, last_token;
    };
    Slot* choose_slot(const Job& job);  // under mutex_
    void begin(Slot& slot);            // reuses the cached prefix
    void first_token(Slot& slot);      // the prompt is read: samples the first token
    void step();                       // one pass: decode rows and prompt pieces
    void publish(Slot& slot, const std::string& piece);
    void finish(Slot& slot, FinishReason reason, const std::string& error = {});
    void update_info(const Slot& slot);
    void update_checkpoint_gauges();

    const Model& model_;
    const Vocab& vocab_;
    SchedulerOptions options_;
    Metrics& metrics_;
    int n_ctx_ = 0, n_batch_ = 0;
    std::vector<Slot> slots_;
    uint64_t admissions_ = 0;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::deque<std::function<void()>> tasks_;  // embeddings and slot actions
    std::vector<SlotInfo> info_;               // under mutex_
    std::unique_ptr<Session> embed_session_;
    std::optional<PrefixCache> prefix_cache_;  // only the loop's thread touches it
    PrefillPacer pacer_;                       // likewise
    int busy_ = 0;
    uint64_t checkpoints_ = 0, checkpoint_bytes_ = 0;  // over the slots, under mutex_ for counts()
    uint64_t cache_ram_bytes_ = 0;  // prefix_cache_'s size, under mutex_ for counts()
    int cache_ram_entries_ = 0;
    bool stopping_ = false;
};

}  // namespace rill::serve
