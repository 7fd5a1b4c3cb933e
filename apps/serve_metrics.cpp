#include "serve_metrics.h"

#include <cstdio>

namespace rill::serve {
namespace {

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

void line(std::string& out, const std::string& name, const char* help, const char* type, double value) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + number(value) + "\n";
}

void histogram(std::string& out, const std::string& name, const char* help, const Histogram& h) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
    for (size_t i = 0; i < h.bounds.size(); ++i) {
        char bound[32];
        std::snprintf(bound, sizeof bound, "%g", h.bounds[i]);
        out += name + "_bucket{le=\"" + bound + "\"} " + std::to_string(h.counts[i]) + "\n";
    }
    out += name + "_bucket{le=\"+Inf\"} " + std::to_string(h.count) + "\n";
    out += name + "_sum " + number(h.sum) + "\n";
    out += name + "_count " + std::to_string(h.count) + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds) : bounds(std::move(upper_bounds)), counts(bounds.size(), 0) {}

void Histogram::observe(double seconds) {
    for (size_t i = 0; i < bounds.size(); ++i)
        if (seconds <= bounds[i]) ++counts[i];
    sum += seconds;
    ++count;
}

// Time to first token spans a cached prompt (milliseconds) to a long one on a laptop (minutes);
// inter-token latency a fast small model to a large one under load.
Metrics::Metrics()
    : ttft_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}),
      itl_({0.005, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5}) {}

void Metrics::request_finished(int prompt_tokens, int cached_tokens, int generated_tokens) {
    std::lock_guard lock(mutex_);
    ++requests_;
    prompt_tokens_ += uint64_t(prompt_tokens);
    cached_tokens_ += uint64_t(cached_tokens);
    generated_tokens_ += uint64_t(generated_tokens);
}

void Metrics::request_rejected() {
    std::lock_guard lock(mutex_);
    ++rejected_;
}

void Metrics::first_token(double seconds) {
    std::lock_guard lock(mutex_);
    ttft_.observe(seconds);
}

void Metrics::inter_token(double seconds) {
    std::lock_guard lock(mutex_);
    itl_.observe(seconds);
}

void Metrics::prompt_evaluated(int tokens) {
    std::lock_guard lock(mutex_);
    evaluated_tokens_ += uint64_t(tokens);
}

void Metrics::request_seconds(double seconds) {
    std::lock_guard lock(mutex_);
    request_seconds_ += seconds;
}

double Metrics::mean_request_seconds() const {
    std::lock_guard lock(mutex_);
    return requests_ == 0 ? 0 : request_seconds_ / double(requests_);
}

std::string Metrics::render(const MetricsGauges& g) const {
    std::lock_guard lock(mutex_);
    std::string out;
    line(out, "rill_requests_total", "Generation requests finished (chat and completions).", "counter", double(requests_));
    line(out, "rill_requests_rejected_total", "Requests refused with 503: the queue was full or the server was draining.", "counter", double(rejected_));
    line(out, "rill_prompt_tokens_total", "Prompt tokens of finished requests.", "counter", double(prompt_tokens_));
    line(out, "rill_prompt_tokens_cached_total", "Prompt tokens whose keys and values were reused from a slot's cache.", "counter", double(cached_tokens_));
    line(out, "rill_prompt_tokens_evaluated_total", "Prompt tokens run through the model.", "counter", double(evaluated_tokens_));
    line(out, "rill_generated_tokens_total", "Tokens generated.", "counter", double(generated_tokens_));
    line(out, "rill_queue_depth", "Requests waiting for a slot.", "gauge", g.queued);
    line(out, "rill_slots_total", "Slots (--parallel).", "gauge", g.slots);
    line(out, "rill_slots_busy", "Slots serving a request.", "gauge", g.busy);
    line(out, "rill_slot_cached_tokens", "Tokens whose keys and values the slots hold for reuse.", "gauge", double(g.cached_tokens));
    line(out, "rill_cache_ram_bytes", "Bytes of conversations' keys and values kept in RAM beyond the slots (--cache-ram).", "gauge", double(g.cache_ram_bytes));
    line(out, "rill_cache_ram_conversations", "Conversations kept in RAM beyond the slots (--cache-ram).", "gauge", g.cache_ram_entries);
    line(out, "rill_recurrent_checkpoints", "Recurrent-layer state checkpoints the slots keep at message boundaries (models with recurrent layers).", "gauge", double(g.checkpoints));
    line(out, "rill_recurrent_checkpoint_bytes", "Bytes of those checkpoints.", "gauge", double(g.checkpoint_bytes));
    histogram(out, "rill_time_to_first_token_seconds", "From a request's arrival to its first token.", ttft_);
    histogram(out, "rill_inter_token_latency_seconds", "Between consecutive tokens of a stream.", itl_);
    return out;
}

}  // namespace rill::serve
