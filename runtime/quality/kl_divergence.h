// KL divergence of a model's next-token distributions from a base model's, in llama-perplexity's way:
// a run of the base model saves its log-probs at every scored position (--kl-divergence-base), a run of
// the other model on the same tokens compares against them (--kl-divergence). The file is llama.cpp's
// format, so either program can write the base and either can compare.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/quality/perplexity.h"

namespace rill {

// One scored position's log-probs in 16 bits each: a float scale and a float minimum (log-probs more
// than 16 below the top one are clamped to it), then n_vocab levels, padded to an even count. Returns
// the record (2 * ((n_vocab + 1) / 2) + 4 uint16) and the NLL of `target` from the exact logits.
double encode_log_probs(std::span<const float> logits, int32_t target, std::span<uint16_t> record);
size_t record_size(int n_vocab);

// The base file: "_logits_", int32 n_ctx, n_vocab, n_chunk, the n_chunk·n_ctx tokens, then one record
// per scored position, chunk by chunk.
struct KlBaseHeader {
    int n_ctx = 0, n_vocab = 0, n_chunk = 0;
    std::vector<int32_t> tokens;
};
class KlBaseFile {
public:
    static KlBaseFile create(const std::string& path, const KlBaseHeader& header);
    static KlBaseFile open(const std::string& path);  // reads and checks the header
    // The same from an open stream (taking it over); `name` is what errors call it.
    static KlBaseFile read_from(std::FILE* stream, const std::string& name);
    const KlBaseHeader& header() const { return header_; }
    void write_record(std::span<const uint16_t> record);
    void read_record(std::span<uint16_t> record);  // an error naming the file if it ends early

private:
    std::string path_;
    std::unique_ptr<FILE, int (*)(FILE*)> file_{nullptr, &std::fclose};
    KlBaseHeader header_;
};

// One position compared: KL(base ‖ model) over the base tokens above e^-16, whether the top tokens agree,
// and the target's probability under the model minus under the base.
struct KlToken {
    double kld = 0;
    bool same_top = false;
    float p_diff = 0;
    float nll = 0, nll_base = 0;
};
KlToken compare_with_base(std::span<const uint16_t> base_record, std::span<const float> logits, int32_t target);

// Everything llama-perplexity prints after a --kl-divergence run.
struct KlSummary {
    size_t n = 0;
    Perplexity ppl, ppl_base;
    double correlation = 0;             // of the per-token ln PPL of the model and the base
    double ln_ratio = 0, ln_ratio_unc = 0;  // mean ln(PPL(Q)/PPL(base))
    double kld_mean = 0, kld_unc = 0;
    // 0: maximum, then 99.9, 99, 95, 90 %, median, 10, 5, 1, 0.1 %, minimum
    double kld_percentiles[11] = {};
    double dp_mean = 0, dp_unc = 0, dp_rms = 0, dp_rms_unc = 0;
    // 0: maximum, then 99.9, 99, 95, 90, 75 %, median, 25, 10, 5, 1, 0.1 %, minimum
    double dp_percentiles[13] = {};
    double same_top = 0, same_top_unc = 0;
};
struct KlAccumulator {
    RunningSums nll, nll_base, kld, p_diff, p_diff2;
    double nll_cross = 0;  // sum of nll · nll_base
    size_t same_top = 0;
    std::vector<float> klds, p_diffs;
    void add(const KlToken& t);
    KlSummary summary() const;
};

}  // namespace rill
