#include "serve_scheduler.h"

#include <algorithm>

#include "runtime/base/error.h"

namespace rill::serve {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

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

Scheduler::Scheduler(const Model& model, const Vocab& vocab, const SessionOptions& session, const SchedulerOptions& options, Metrics& metrics)
    : model_(model), vocab_(vocab), options_(options), metrics_(metrics) {
    if (options.n_slots < 1) throw Error("the server needs at least one slot (--parallel)");
    if (options.prefill_chunk < 1) throw Error("--prefill-chunk must be at least 1 token");
    if (options.prefill_slowdown != 0 && options.prefill_slowdown <= 1) throw Error("--prefill-slowdown must be above 1, or 0 for no bound");
    pacer_.slowdown = options.prefill_slowdown;
    pacer_.max_piece = options.prefill_chunk;
    for (int i = 0; i < options.n_slots; ++i) {
        Slot slot;
        slot.id = i;
        slot.session = std::make_unique<Session>(model, session);
        slots_.push_back(std::move(slot));
        info_.push_back(SlotInfo{.id = i});
    }
    n_ctx_ = slots_[0].session->n_ctx();
    n_batch_ = std::max(1, session.n_batch);
    embed_session_ = std::make_unique<Session>(model, session);
    if (options.cache_ram_bytes > 0) prefix_cache_.emplace(options.cache_ram_bytes);
}

void Scheduler::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
}

std::future<std::vector<float>> Scheduler::embed(std::vector<int32_t> tokens) {
    auto task = std::make_shared<std::packaged_task<std::vector<float>()>>([this, tokens = std::move(tokens)] { return embed_session_->embed(tokens); });
    auto result = task->get_future();
    {
        std::lock_guard lock(mutex_);
        tasks_.push_back([task] { (*task)(); });
    }
    wake_.notify_all();
    return result;
}

std::future<void> Scheduler::with_idle_slot(int id, std::function<void(Session&, std::vector<int32_t>&)> action) {
    auto task = std::make_shared<std::packaged_task<void()>>([this, id, action = std::move(action)] {
        if (id < 0 || id >= int(slots_.size()))
            throw NoSuchSlot("there is no slot " + std::to_string(id) + " (the server has " + std::to_string(slots_.size()) + ")");
        Slot& slot = slots_[size_t(id)];
        if (slot.job) throw SlotBusy("slot " + std::to_string(id) + " is serving a request");
        action(*slot.session, slot.cached);
        if (size_t(slot.session->position()) != slot.cached.size()) {  // an action must leave them in step
            slot.session->reset();
            slot.cached.clear();
        }
        update_info(slot);
        update_checkpoint_gauges();
    });
    auto result = task->get_future();
    {
        std::lock_guard lock(mutex_);
        tasks_.push_back([task] { (*task)(); });
    }
    wake_.notify_all();
    return result;
}

Scheduler::~Scheduler() {
    for (auto& task : tasks_) task();  // nothing may wait forever on a future
    for (Slot& slot : slots_)
        if (slot.job) finish(slot, FinishReason::Cancelled);
    for (const auto& job : queue_) {
        std::lock_guard lock(job->mutex);
        job->finished = true;
        job->reason = FinishReason::Cancelled;
        job->changed.notify_all();
    }
}

bool Scheduler::submit(std::shared_ptr<Job> job) {
    {
        std::lock_guard lock(mutex_);
        if (int(queue_.size()) >= options_.max_queue) return false;
        queue_.push_back(std::move(job));
    }
    wake_.notify_all();
    return true;
}

SchedulerCounts Scheduler::counts() const {
    std::lock_guard lock(mutex_);
    return {int(slots_.size()), busy_, int(queue_.size()), cache_ram_bytes_, cache_ram_entries_, checkpoints_, checkpoint_bytes_};
}

std::vector<SlotInfo> Scheduler::slots() const {
    std::lock_guard lock(mutex_);
    return info_;
}

void Scheduler::update_info(const Slot& slot) {
    SlotInfo info{.id = slot.id, .busy = bool(slot.job), .cached_tokens = int(slot.cached.size())};
    if (slot.job) {
        info.prompt_tokens = int(slot.job->prompt.size());
        info.prefilled = int(slot.prefilled);
        info.generated = slot.completion ? slot.completion->generated() : 0;
    }
    std::lock_guard lock(mutex_);
    info_[size_t(slot.id)] = info;
}

// The slots' recurrent checkpoints for /metrics: summed only where they change (a checkpoint taken,
// a request begun, a slot action), not at every step.
void Scheduler::update_checkpoint_gauges() {
    uint64_t checkpoints = 0, checkpoint_bytes = 0;
    for (const Slot& s : slots_) {
        checkpoints += s.session->checkpoint_count();
        checkpoint_bytes += s.session->checkpoint_bytes();
    }
    std::lock_guard lock(mutex_);
    checkpoints_ = checkpoints;
    checkpoint_bytes_ = checkpoint_bytes;
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
    // Before the prompt's last token (step()) and at the reply's end are the message boundaries a
    // next turn may part at: a model with recurrent layers keeps its state there
    // (Session::checkpoint), so that turn reads only what is new.
    if (slot.completion) {
        slot.session->checkpoint();
        update_checkpoint_gauges();
    }
    Job& job = *slot.job;
    const auto now = Clock::now();
    // The metrics first: once the job is marked finished its client may have its reply and scrape
    // /metrics, which must already count it.
    const int generated = slot.completion ? slot.completion->generated() : 0;
    metrics_.request_finished(int(job.prompt.size()), job.cached_tokens, generated);
    metrics_.request_seconds(ms_between(job.submitted, now) / 1000.0);
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
        job.completion_tokens = generated;
        if (generated > 0) job.decode_ms = ms_between(slot.first_token, now);
        job.changed.notify_all();
    }
    slot.job.reset();
    slot.completion.reset();
    slot.next = -1;
    slot.prefilled = 0;
    slot.logprobs_published = 0;
    update_info(slot);
    std::lock_guard lock(mutex_);
    --busy_;
}

// The free slot whose cached tokens share the longest prefix with the job's prompt; among equals
// (no reuse at all, most often), the one used least recently, so recent conversations stay cached.
// A prefix counts only where it is at least half the prompt or half of what the slot holds (the
// rule llama-server uses): a few shared tokens (a BOS, a template's header) are not worth evicting
// another conversation for.
Scheduler::Slot* Scheduler::choose_slot(const Job& job) {
    Slot* best = nullptr;
    size_t best_prefix = 0;
    for (Slot& slot : slots_) {
        if (slot.job) continue;
        size_t prefix = options_.cache_prompt && job.cache_prompt ? common_prefix(slot.cached, job.prompt) : 0;
        if (2 * prefix < job.prompt.size() && 2 * prefix < slot.cached.size()) prefix = 0;
        if (!best || prefix > best_prefix || (prefix == best_prefix && slot.last_used < best->last_used)) {
            best = &slot;
            best_prefix = prefix;
        }
    }
    return best;
}

void Scheduler::begin(Slot& slot) {
    Job& job = *slot.job;
    Session& session = *slot.session;
    if (job.prompt.empty() || job.prompt.size() >= size_t(n_ctx_))
        return finish(slot, FinishReason::Length,
                      "the prompt has " + std::to_string(job.prompt.size()) + " tokens; the context holds " + std::to_string(n_ctx_));
    const bool reuse = options_.cache_prompt && job.cache_prompt;
    size_t keep = reuse ? common_prefix(slot.cached, job.prompt) : 0;
    if (reuse && prefix_cache_) {
        // The slot's conversation goes to RAM before another takes its place; a conversation that
        // had lost its slot comes back from there.
        if (keep < slot.cached.size()) prefix_cache_->put(slot.cached, session.save_state());
        size_t stored = 0;
        if (const PrefixCache::Entry* entry = prefix_cache_->find(job.prompt, keep, stored)) {
            try {
                session.load_state(entry->state);
                slot.cached = entry->tokens;
                keep = stored;
            } catch (const Error&) {  // cannot happen for a state this server saved; start afresh
                session.reset();
                slot.cached.clear();
                keep = 0;
            }
        }
        std::lock_guard lock(mutex_);
        cache_ram_bytes_ = prefix_cache_->bytes();
        cache_ram_entries_ = int(prefix_cache_->size());
    }
    keep = std::min(keep, job.prompt.size() - 1);  // the last prompt token is evaluated again: its logits start the reply
    keep = size_t(session.truncate(int(keep)));     // a sliding-window ring may not hold what the prefix needs
    slot.cached.resize(keep);
    slot.prefilled = keep;
    {
        std::lock_guard lock(job.mutex);
        job.cached_tokens = int(keep);
        job.slot = slot.id;
    }
    update_info(slot);
    update_checkpoint_gauges();  // truncate and load_state may have dropped some
}

void Scheduler::first_token(Slot& slot) {
    Job& job = *slot.job;
    slot.completion.emplace(vocab_, job.settings, job.prompt);
    std::string piece;
    slot.next = slot.completion->step(slot.session->last_logits(), piece);
    slot.first_token = slot.last_token = Clock::now();
    {
        std::lock_guard lock(job.mutex);
        job.ttft_ms = ms_between(job.submitted, slot.first_token);
    }
    metrics_.first_token(job.ttft_ms / 1000.0);
    publish(slot, piece);
    if (slot.completion->done()) finish(slot, slot.completion->reason());
}

void Scheduler::step() {
    std::vector<BatchPiece> pieces;
    std::vector<Slot*> members;
    std::vector<Slot*> reading;  // slots still reading their prompts, least left to read first
    for (Slot& slot : slots_) {
        if (!slot.job) continue;
        if (slot.job->cancel) {
            finish(slot, FinishReason::Cancelled);
            continue;
        }
        if (!slot.completion) {
            reading.push_back(&slot);
            continue;
        }
        if (slot.session->position() >= n_ctx_) {
            finish(slot, FinishReason::Length);
            continue;
        }
        pieces.push_back({slot.session.get(), std::span<const int32_t>(&slot.next, 1), true});
        members.push_back(&slot);
    }
    // A short prompt (a returning conversation's new turn) goes before a long one still being read, so
    // it does not wait minutes behind a paste; among equals, the older request first.
    const auto left = [](const Slot* slot) { return slot->job->prompt.size() - slot->prefilled; };
    std::sort(reading.begin(), reading.end(), [&](const Slot* a, const Slot* b) {
        return left(a) != left(b) ? left(a) < left(b) : a->job->submitted < b->job->submitted;
    });
    // While streams are generating, a pass takes only as many prompt tokens as keep it within
    // --prefill-slowdown times a pass of theirs alone (and --prefill-chunk at most), which bounds how
    // much a long prompt delays their next token; with none generating, prompts go at full pieces.
    const size_t decoding = members.size();
    size_t budget = pieces.empty() ? size_t(n_batch_) : size_t(prefill_piece(pacer_, int(decoding)));
    for (Slot* slot : reading) {
        if (budget == 0) break;
        const std::span<const int32_t> prompt(slot->job->prompt);
        size_t n = std::min({budget, prompt.size() - slot->prefilled, size_t(n_batch_)});
        // A model with recurrent layers stops a piece before the prompt's last token and keeps its
        // state there: the same prompt again (a regenerate) re-reads only that token, whose logits
        // start the reply. Every row takes the decode kernels, so the split changes no result.
        if (!slot->session->recurrent_state().empty() && slot->prefilled < prompt.size() - 1)
            n = std::min(n, prompt.size() - 1 - slot->prefilled);
        pieces.push_back({slot->session.get(), prompt.subspan(slot->prefilled, n), slot->prefilled + n == prompt.size()});
        members.push_back(slot);
        budget -= n;
    }
    if (pieces.empty()) return;
    size_t prompt_tokens = 0;
    for (size_t i = decoding; i < pieces.size(); ++i) prompt_tokens += pieces[i].tokens.size();
    const auto started = Clock::now();
    try {
        Session::eval_batch(pieces);
    } catch (const std::exception& e) {
        for (Slot* slot : members) {
            slot->session->reset();  // its cache no longer matches its tokens
            slot->cached.clear();
            finish(*slot, FinishReason::Stop, e.what());
        }
        return;
    }
    const auto now = Clock::now();
    observe_step(pacer_, int(decoding), int(prompt_tokens), ms_between(started, now));
    std::string piece;
    for (size_t i = 0; i < members.size(); ++i) {
        Slot& slot = *members[i];
        slot.cached.insert(slot.cached.end(), pieces[i].tokens.begin(), pieces[i].tokens.end());
        if (i >= decoding) {
            slot.prefilled += pieces[i].tokens.size();
            metrics_.prompt_evaluated(int(pieces[i].tokens.size()));
            if (slot.prefilled + 1 == slot.job->prompt.size()) {
                slot.session->checkpoint();
                update_checkpoint_gauges();
            }
            if (slot.prefilled == slot.job->prompt.size()) first_token(slot);  // which may finish the job
            else update_info(slot);
            continue;
        }
        metrics_.inter_token(ms_between(slot.last_token, now) / 1000.0);
        slot.last_token = now;
        piece.clear();
        slot.next = slot.completion->step(slot.session->last_logits(), piece);
        publish(slot, piece);
        if (slot.completion->done()) finish(slot, slot.completion->reason());
        else update_info(slot);
    }
}

void Scheduler::run() {
    for (;;) {
        std::vector<Slot*> starting;
        std::deque<std::function<void()>> tasks;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || busy_ > 0 || !queue_.empty() || !tasks_.empty(); });
            if (stopping_) return;
            tasks.swap(tasks_);
            while (!queue_.empty()) {
                Slot* slot = choose_slot(*queue_.front());
                if (!slot) break;
                slot->job = std::move(queue_.front());
                slot->last_used = ++admissions_;
                queue_.pop_front();
                ++busy_;
                starting.push_back(slot);
            }
        }
        for (auto& task : tasks) task();  // a throw is kept in the task's future
        for (Slot* slot : starting) begin(*slot);
        step();
    }
}

}  // namespace rill::serve
