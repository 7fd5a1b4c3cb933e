// What /metrics reports: counters and latency histograms the scheduler and the HTTP handlers feed,
// rendered in Prometheus's text exposition format (version 0.0.4).
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace rill::serve {

// Cumulative buckets with fixed upper bounds in seconds, as Prometheus histograms are.
struct Histogram {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // one per bound; observations above the last are only in `count`
    double sum = 0;
    uint64_t count = 0;

    explicit Histogram(std::vector<double> upper_bounds);
    void observe(double seconds);
};

// Gauges sampled when /metrics is scraped.
struct MetricsGauges {
    int slots = 0, busy = 0, queued = 0;
    uint64_t cached_tokens = 0;  // tokens whose keys and values the slots hold
    uint64_t cache_ram_bytes = 0;  // --cache-ram's conversations
    int cache_ram_entries = 0;
    uint64_t checkpoints = 0, checkpoint_bytes = 0;  // recurrent-state checkpoints the slots keep
};

class Metrics {
public:
    Metrics();
    void request_finished(int prompt_tokens, int cached_tokens, int generated_tokens);
    void request_rejected();  // a 503: the queue was full, or the server was draining
    void first_token(double seconds);
    void inter_token(double seconds);
    void prompt_evaluated(int tokens);
    // Mean seconds a request spent from submission to its end (0 before the first).
    double mean_request_seconds() const;
    void request_seconds(double seconds);
    std::string render(const MetricsGauges& gauges) const;

private:
    mutable std::mutex mutex_;
    uint64_t requests_ = 0, rejected_ = 0, prompt_tokens_ = 0, cached_tokens_ = 0, evaluated_tokens_ = 0, generated_tokens_ = 0;
    double request_seconds_ = 0;
    Histogram ttft_, itl_;
};

}  // namespace rill::serve
