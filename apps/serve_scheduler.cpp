#include "serve_scheduler.h"

#include <algorithm>

#include "runtime/base/error.h"

namespace rill::serve {
namespace {

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

bool Job::take(std::string& out, std::chrono::milliseconds timeout, std::vector<TokenLogprob>* taken) {
    std::unique_lock lock(mutex);
    changed.wait_for(lock, timeout, [&] { return finished || !text.empty(); });
    out += text;
    text.clear();
    if (taken) taken->insert(taken->end(), std::make_move_iterator(logprobs.begin()), std::make_move_iterator(logprobs.end()));
    logprobs.clear();
    return finished;
}

std::string Job::wait_all(std::vector<TokenLogprob>* taken) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return finished; });
    if (taken) *taken = std::move(logprobs);
    return std::move(text);
}

Scheduler::Scheduler(const Model& model, const Vocab& vocab, const SessionOptions& options, int n_slots)
    : model_(model), vocab_(vocab) {
    if (n_slots < 1) throw Error("the server needs at least one slot (--parallel)");
    for (int i = 0; i < n_slots; ++i) {
        Slot slot;
        slot.session = std::make_unique<Session>(model, options);
        slots_.push_back(std::move(slot));
    }
    n_ctx_ = slots_[0].session->n_ctx();
    embed_session_ = std::make_unique<Session>(model, options);
}

void Scheduler::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
}

std::future<std::vector<float>> Scheduler::embed(std::vector<int32_t> tokens) {
    std::packaged_task<std::vector<float>()> task([this, tokens = std::move(tokens)] { return embed_session_->embed(tokens); });
    auto result = task.get_future();
    {
        std::lock_guard lock(mutex_);
        embeddings_.push_back(std::move(task));
    }
    wake_.notify_all();
    return result;
}

Scheduler::~Scheduler() {
    for (auto& task : embeddings_) task();  // nothing may wait forever on a future
    for (Slot& slot : slots_)
        if (slot.job) finish(slot, FinishReason::Cancelled);
    for (const auto& job : queue_) {
        std::lock_guard lock(job->mutex);
        job->finished = true;
        job->reason = FinishReason::Cancelled;
        job->changed.notify_all();
    }
}

void Scheduler::submit(std::shared_ptr<Job> job) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(job));
    }
    wake_.notify_all();
}

SchedulerCounts Scheduler::counts() const {
    std::lock_guard lock(mutex_);
    return {int(slots_.size()), busy_, int(queue_.size())};
}

void Scheduler::publish(Slot& slot, const std::string& piece) {
    if (!slot.completion) return;
    const std::vector<TokenLogprob>& logprobs = slot.completion->logprobs();
    if (piece.empty() && slot.logprobs_published == logprobs.size()) return;
    std::lock_guard lock(slot.job->mutex);
    slot.job->text += piece;
    slot.job->logprobs.insert(slot.job->logprobs.end(), logprobs.begin() + ptrdiff_t(slot.logprobs_published), logprobs.end());
    slot.logprobs_published = logprobs.size();
    slot.job->changed.notify_all();
}

void Scheduler::finish(Slot& slot, FinishReason reason, const std::string& error) {
    std::string rest;
    if (slot.completion) slot.completion->finish(reason, rest);
    Job& job = *slot.job;
    {
        std::lock_guard lock(job.mutex);
        job.text += rest;
        if (slot.completion) {
            const auto& logprobs = slot.completion->logprobs();
            job.logprobs.insert(job.logprobs.end(), logprobs.begin() + ptrdiff_t(slot.logprobs_published), logprobs.end());
        }
        job.finished = true;
        job.reason = slot.completion ? slot.completion->reason() : reason;
        job.error = !error.empty() || !slot.completion ? error : slot.completion->error();
        job.completion_tokens = slot.completion ? slot.completion->generated() : 0;
        if (slot.completion && slot.completion->generated() > 0)
            job.decode_ms = ms_between(slot.first_token, std::chrono::steady_clock::now());
        job.changed.notify_all();
    }
    slot.job.reset();
    slot.completion.reset();
    slot.next = -1;
    slot.logprobs_published = 0;
    std::lock_guard lock(mutex_);
    --busy_;
}

void Scheduler::start(Slot& slot) {
    Job& job = *slot.job;
    Session& session = *slot.session;
    session.reset();
    if (job.prompt.empty() || job.prompt.size() >= size_t(session.n_ctx()))
        return finish(slot, FinishReason::Length,
                      "the prompt has " + std::to_string(job.prompt.size()) + " tokens; the context holds " + std::to_string(session.n_ctx()));
    // The prompt in pieces, so a client that leaves during a long prompt frees the slot early.
    constexpr size_t kPiece = 512;
    std::span<const float> logits;
    const std::span<const int32_t> prompt(job.prompt);
    for (size_t at = 0; at < prompt.size(); at += kPiece) {
        if (job.cancel) return finish(slot, FinishReason::Cancelled);
        logits = session.eval(prompt.subspan(at, std::min(kPiece, prompt.size() - at)));
    }
    slot.completion.emplace(vocab_, job.settings, prompt);
    std::string piece;
    slot.next = slot.completion->step(logits, piece);
    slot.first_token = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(job.mutex);
        job.ttft_ms = ms_between(job.submitted, slot.first_token);
    }
    publish(slot, piece);
    if (slot.completion->done()) finish(slot, slot.completion->reason());
}

void Scheduler::run() {
    std::vector<Session*> batch;
    std::vector<int32_t> tokens;
    std::vector<Slot*> members;
    for (;;) {
        std::vector<Slot*> starting;
        std::deque<std::packaged_task<std::vector<float>()>> embeddings;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || busy_ > 0 || !queue_.empty() || !embeddings_.empty(); });
            if (stopping_) return;
            embeddings.swap(embeddings_);
            for (Slot& slot : slots_) {
                if (slot.job || queue_.empty()) continue;
                slot.job = std::move(queue_.front());
                queue_.pop_front();
                ++busy_;
                starting.push_back(&slot);
            }
        }
        for (auto& task : embeddings) task();  // a throw is kept in the future
        for (Slot* slot : starting) {
            try {
                start(*slot);
            } catch (const std::exception& e) {
                finish(*slot, FinishReason::Stop, e.what());
            }
        }

        batch.clear();
        tokens.clear();
        members.clear();
        for (Slot& slot : slots_) {
            if (!slot.job || slot.next < 0) continue;
            if (slot.job->cancel) {
                finish(slot, FinishReason::Cancelled);
                continue;
            }
            if (slot.session->position() >= slot.session->n_ctx()) {
                finish(slot, FinishReason::Length);
                continue;
            }
            batch.push_back(slot.session.get());
            tokens.push_back(slot.next);
            members.push_back(&slot);
        }
        if (batch.empty()) continue;
        try {
            Session::eval_together(batch, tokens);
        } catch (const std::exception& e) {
            for (Slot* slot : members) finish(*slot, FinishReason::Stop, e.what());
            continue;
        }
        std::string piece;
        for (Slot* slot : members) {
            piece.clear();
            slot->next = slot->completion->step(slot->session->last_logits(), piece);
            publish(*slot, piece);
            if (slot->completion->done()) finish(*slot, slot->completion->reason());
        }
    }
}

}  // namespace rill::serve
