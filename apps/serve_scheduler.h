// The server's decode loop: a fixed set of slots, each a session that holds one request's context.
// One thread owns every slot. Each step it starts waiting requests in free slots (evaluating their
// prompts), then decodes one token for every busy slot in a single batch, so the weights are read
// once per step whatever the number of streams (continuous batching). Embeddings run on the same
// thread between steps: with all model work on one thread, OpenMP keeps one team of threads, which
// spin between parallel regions instead of sleeping (a second team makes libgomp stop spinning, and
// waking threads per region cost a fifth of single-stream decode speed here).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/session/completion.h"
#include "runtime/session/session.h"
#include "runtime/text/vocab.h"

namespace rill::serve {

// One request's generation, shared between the HTTP thread that waits on it and the scheduler.
struct Job {
    std::vector<int32_t> prompt;
    CompletionSettings settings;
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
    double ttft_ms = 0;        // from submission to the first token
    double decode_ms = 0;      // after the first token
    std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();

    // Waits up to `timeout` for new text or the end; moves the new text into `out`. Returns true
    // once finished and every piece was taken.
    bool take(std::string& out, std::chrono::milliseconds timeout, std::vector<TokenLogprob>* logprobs = nullptr);
    // Waits for the end and returns the whole text.
    std::string wait_all(std::vector<TokenLogprob>* logprobs = nullptr);
};

struct SchedulerCounts {
    int slots = 0, busy = 0, queued = 0;
};

class Scheduler {
public:
    Scheduler(const Model& model, const Vocab& vocab, const SessionOptions& options, int n_slots);
    ~Scheduler();  // unfinished jobs end as cancelled
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    // The loop; call it on the thread that should own the model's work. Returns after stop().
    void run();
    void stop();

    void submit(std::shared_ptr<Job> job);
    // A unit-length mean-pooled embedding, computed on the loop's thread between decode steps.
    std::future<std::vector<float>> embed(std::vector<int32_t> tokens);
    SchedulerCounts counts() const;
    int n_ctx() const { return n_ctx_; }

private:
    struct Slot {
        std::unique_ptr<Session> session;
        std::shared_ptr<Job> job;
        std::optional<Completion> completion;
        int32_t next = -1;  // the token to evaluate at the next step
        size_t logprobs_published = 0;
        std::chrono::steady_clock::time_point first_token;
    };
    void start(Slot& slot);           // evaluates the prompt and samples the first token
    void publish(Slot& slot, const std::string& piece);
    void finish(Slot& slot, FinishReason reason, const std::string& error = {});

    const Model& model_;
    const Vocab& vocab_;
    int n_ctx_ = 0;
    std::vector<Slot> slots_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::deque<std::packaged_task<std::vector<float>()>> embeddings_;
    std::unique_ptr<Session> embed_session_;
    int busy_ = 0;
    bool stopping_ = false;
};

}  // namespace rill::serve
