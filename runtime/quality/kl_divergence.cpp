#include "runtime/quality/kl_divergence.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/base/error.h"

namespace rill {
namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};

// Round to nearest, ties to even, through the float's mantissa: llama.cpp's nearest_int.
int nearest_int(float x) {
    const float shifted = x + 12582912.0f;
    int32_t bits;
    std::memcpy(&bits, &shifted, 4);
    return (bits & 0x007fffff) - 0x00400000;
}

float read_float(const uint16_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
}

// ggml's percentile: linear between the two nearest sorted values.
double percentile(const std::vector<float>& sorted, float fraction) {
    if (fraction <= 0) return sorted.front();
    if (fraction >= 1) return sorted.back();
    float p = fraction * float(sorted.size() - 1);
    const size_t i = size_t(p);
    p -= float(i);
    return (1 - p) * sorted[i] + p * sorted[std::min(i + 1, sorted.size() - 1)];
}

double median(const std::vector<float>& sorted) {
    const size_t n = sorted.size();
    return n % 2 == 0 ? 0.5f * (sorted[n / 2] + sorted[n / 2 - 1]) : sorted[n / 2];
}

}  // namespace

size_t record_size(int n_vocab) { return 2 * ((size_t(n_vocab) + 1) / 2) + 4; }

double encode_log_probs(std::span<const float> logits, int32_t target, std::span<uint16_t> record) {
    float max = logits[0], min = logits[0];
    for (const float l : logits) {
        max = std::max(max, l);
        min = std::min(min, l);
    }
    min = std::max(min, max - 16);
    double sum = 0;
    for (const float l : logits) sum += std::exp(l - max);
    const float log_sum = float(std::log(sum));
    const float min_log_prob = min - max - log_sum;
    const float scale = (max - min) / 65535.f;
    std::fill(record.begin(), record.end(), uint16_t(0));
    std::memcpy(record.data(), &scale, 4);
    std::memcpy(record.data() + 2, &min_log_prob, 4);
    if (scale != 0.0f) {
        const float inverse = 1 / scale;
        for (size_t i = 0; i < logits.size(); ++i)
            record[4 + i] = logits[i] > min ? uint16_t(nearest_int(inverse * (logits[i] - min))) : 0;
    }
    return double(max + log_sum - logits[size_t(target)]);
}

KlBaseFile KlBaseFile::create(const std::string& path, const KlBaseHeader& header) {
    KlBaseFile f;
    f.path_ = path;
    f.header_ = header;
    f.file_.reset(std::fopen(path.c_str(), "wb"));
    if (!f.file_) throw Error(path + ": cannot open for writing");
    const int32_t sizes[3] = {header.n_ctx, header.n_vocab, header.n_chunk};
    if (std::fwrite(kMagic, 1, 8, f.file_.get()) != 8 || std::fwrite(sizes, 4, 3, f.file_.get()) != 3 ||
        std::fwrite(header.tokens.data(), 4, header.tokens.size(), f.file_.get()) != header.tokens.size())
        throw Error(path + ": write failed");
    return f;
}

KlBaseFile KlBaseFile::open(const std::string& path) {
    std::FILE* stream = std::fopen(path.c_str(), "rb");
    if (!stream) throw Error(path + ": cannot open");
    return read_from(stream, path);
}

KlBaseFile KlBaseFile::read_from(std::FILE* stream, const std::string& name) {
    const std::string& path = name;
    KlBaseFile f;
    f.path_ = name;
    f.file_.reset(stream);
    // The file's size bounds what the header may promise, before anything is allocated from it.
    long size = -1;
    if (std::fseek(stream, 0, SEEK_END) == 0) size = std::ftell(stream);
    if (size < 0 || std::fseek(stream, 0, SEEK_SET) != 0) throw Error(path + ": cannot read (not a regular file?)");
    char magic[8];
    int32_t sizes[3];
    if (std::fread(magic, 1, 8, f.file_.get()) != 8 || std::memcmp(magic, kMagic, 8) != 0)
        throw Error(path + ": not a KL-divergence base file (no \"_logits_\" at its start)");
    if (std::fread(sizes, 4, 3, f.file_.get()) != 3) throw Error(path + ": the header is cut short");
    KlBaseHeader& h = f.header_;
    h.n_ctx = sizes[0];
    h.n_vocab = sizes[1];
    h.n_chunk = sizes[2];
    if (h.n_ctx < 4 || h.n_ctx > (1 << 20) || h.n_vocab < 1 || h.n_vocab > (1 << 24) || h.n_chunk < 1 || h.n_chunk > (1 << 20))
        throw Error(path + ": the header's sizes are absurd (n_ctx " + std::to_string(h.n_ctx) + ", n_vocab " + std::to_string(h.n_vocab) +
                    ", n_chunk " + std::to_string(h.n_chunk) + ")");
    const uint64_t n_tokens = uint64_t(h.n_ctx) * uint64_t(h.n_chunk);
    if (n_tokens * 4 > uint64_t(size) - 20)
        throw Error(path + ": the header promises " + std::to_string(n_tokens) + " tokens, more than the file holds");
    h.tokens.resize(n_tokens);
    if (std::fread(h.tokens.data(), 4, h.tokens.size(), f.file_.get()) != h.tokens.size()) throw Error(path + ": the token list is cut short");
    for (const int32_t t : h.tokens)
        if (t < 0 || t >= h.n_vocab) throw Error(path + ": a token id (" + std::to_string(t) + ") is outside the vocabulary");
    return f;
}

void KlBaseFile::write_record(std::span<const uint16_t> record) {
    if (std::fwrite(record.data(), 2, record.size(), file_.get()) != record.size()) throw Error(path_ + ": write failed");
}

void KlBaseFile::read_record(std::span<uint16_t> record) {
    if (std::fread(record.data(), 2, record.size(), file_.get()) != record.size())
        throw Error(path_ + ": the file ends before its last chunk's log-probs (a truncated or unfinished base run?)");
}

KlToken compare_with_base(std::span<const uint16_t> base_record, std::span<const float> logits, int32_t target) {
    float max = logits[0];
    size_t top = 0;
    for (size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > max) {
            max = logits[i];
            top = i;
        }
    double sum = 0;
    for (const float l : logits) sum += std::exp(l - max);
    const float log_sum = float(std::log(sum));
    const float scale = read_float(base_record.data()), min_log_prob = read_float(base_record.data() + 2);
    const uint16_t* q = base_record.data() + 4;
    KlToken t;
    t.nll = max + log_sum - logits[size_t(target)];
    t.nll_base = -(scale * q[target] + min_log_prob);
    const float log_norm = max + log_sum;
    size_t top_base = 0;
    float top_base_log = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
        const float log_base = scale * q[i] + min_log_prob;
        if (i == 0 || log_base > top_base_log) {
            top_base_log = log_base;
            top_base = i;
        }
        if (log_base > -16.f) t.kld += std::exp(log_base) * (log_base - logits[i] + log_norm);
    }
    t.same_top = top == top_base;
    t.p_diff = std::exp(-t.nll) - std::exp(-t.nll_base);
    return t;
}

void KlAccumulator::add(const KlToken& t) {
    nll.add(t.nll);
    nll_base.add(t.nll_base);
    nll_cross += double(t.nll) * double(t.nll_base);
    kld.add(t.kld);
    const double squared = t.p_diff * t.p_diff;  // a float product, as llama.cpp squares it
    p_diff.sum += t.p_diff;
    p_diff.sum2 += squared;
    ++p_diff.n;
    p_diff2.add(squared);
    same_top += t.same_top;
    klds.push_back(float(t.kld));
    p_diffs.push_back(t.p_diff);
}

KlSummary KlAccumulator::summary() const {
    KlSummary s;
    s.n = nll.n;
    if (s.n == 0) return s;
    const double n = double(s.n);
    // llama.cpp's mean_and_uncertainty: no uncertainty below 11 values.
    const auto unc = [&](const RunningSums& r) { return s.n > 10 ? r.uncertainty() : 0.0; };
    const double u_q = unc(nll), u_b = unc(nll_base);
    const double cov = s.n < 10 ? 0.0 : (nll_cross / n - nll.mean() * nll_base.mean()) / (n - 1);
    s.ppl = {std::exp(nll.mean()), std::exp(nll.mean()) * u_q};
    s.ppl_base = {std::exp(nll_base.mean()), std::exp(nll_base.mean()) * u_b};
    s.correlation = u_q > 0 && u_b > 0 ? cov / (u_q * u_b) : 0.0;
    s.ln_ratio = nll.mean() - nll_base.mean();
    s.ln_ratio_unc = std::sqrt(std::max(0.0, u_q * u_q + u_b * u_b - 2 * cov));
    s.kld_mean = kld.mean();
    s.kld_unc = unc(kld);
    std::vector<float> k = klds, d = p_diffs;
    std::sort(k.begin(), k.end());
    std::sort(d.begin(), d.end());
    const float kld_at[] = {0.999f, 0.990f, 0.950f, 0.900f};
    s.kld_percentiles[0] = k.back();
    for (int i = 0; i < 4; ++i) s.kld_percentiles[1 + i] = percentile(k, kld_at[i]);
    s.kld_percentiles[5] = median(k);
    const float kld_low[] = {0.100f, 0.050f, 0.010f, 0.001f};
    for (int i = 0; i < 4; ++i) s.kld_percentiles[6 + i] = percentile(k, kld_low[i]);
    s.kld_percentiles[10] = k.front();
    s.dp_mean = p_diff.mean();
    s.dp_unc = unc(p_diff);
    const float dp_at[] = {0.999f, 0.990f, 0.950f, 0.900f, 0.750f};
    s.dp_percentiles[0] = d.back();
    for (int i = 0; i < 5; ++i) s.dp_percentiles[1 + i] = percentile(d, dp_at[i]);
    s.dp_percentiles[6] = median(d);
    const float dp_low[] = {0.250f, 0.100f, 0.050f, 0.010f, 0.001f};
    for (int i = 0; i < 5; ++i) s.dp_percentiles[7 + i] = percentile(d, dp_low[i]);
    s.dp_percentiles[12] = d.front();
    s.dp_rms = std::sqrt(p_diff2.mean());
    s.dp_rms_unc = s.dp_rms > 0 ? 0.5 / s.dp_rms * unc(p_diff2) : 0.0;
    s.same_top = double(same_top) / n;
    s.same_top_unc = s.n > 1 ? std::sqrt(s.same_top * (1 - s.same_top) / (n - 1)) : 0.0;
    return s;
}

}  // namespace rill
