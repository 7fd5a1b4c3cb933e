// Perplexity and KL divergence as llama-perplexity computes them (runtime/quality).
#include "catch.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "runtime/base/error.h"
#include "runtime/quality/kl_divergence.h"
#include "runtime/quality/perplexity.h"

using namespace rill;

namespace {

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("rill-quality-" + std::to_string(::getpid()) + "-" + name)).string();
}

std::vector<float> ramp_logits(int n_vocab, float slope) {
    std::vector<float> l(static_cast<size_t>(n_vocab));
    for (int i = 0; i < n_vocab; ++i) l[size_t(i)] = slope * float((i * 37) % n_vocab) / float(n_vocab);
    return l;
}

}  // namespace

TEST_CASE("a text is cut into whole chunks, the second half of each scored, as llama-perplexity does", "[quality]") {
    const ChunkPlan p = plan_chunks(257, 64, -1);
    CHECK(p.n_chunk == 4);
    CHECK(p.first == 32);
    CHECK(p.scored_per_chunk() == 31);
    CHECK(plan_chunks(257, 64, 2).n_chunk == 2);
    CHECK(plan_chunks(512 * 3 + 100, 512, -1).scored_per_chunk() == 255);
}

TEST_CASE("a text shorter than two chunks is an error naming both counts", "[quality]") {
    CHECK_THROWS_WITH(plan_chunks(127, 64, -1), rill::test::contains("127 tokens") && rill::test::contains("at least 128"));
}

TEST_CASE("a token's log-prob is its logit less the log of the summed exponentials", "[quality]") {
    const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
    const double expected = 1.0 - std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
    CHECK(std::abs(log_prob_of(logits, 0) - expected) < 1e-6);
}

TEST_CASE("perplexity is exp of the mean NLL, with llama.cpp's standard error", "[quality]") {
    RunningSums nll;
    for (const double x : {1.0, 2.0, 3.0}) nll.add(x);
    const Perplexity p = perplexity_of(nll);
    CHECK(std::abs(p.value - std::exp(2.0)) < 1e-12);
    // variance over n: 2/3; standard error sqrt(2/3 / 2)
    CHECK(std::abs(p.uncertainty - std::exp(2.0) * std::sqrt(2.0 / 3.0 / 2.0)) < 1e-12);
}

TEST_CASE("16-bit log-probs decode to within half a step of the exact ones above the 16 floor", "[quality]") {
    const int n_vocab = 1001;  // odd: the record is padded
    const std::vector<float> logits = ramp_logits(n_vocab, 24.0f);
    std::vector<uint16_t> record(record_size(n_vocab));
    CHECK(record.size() == 1006);
    const double nll = encode_log_probs(logits, 5, record);
    CHECK(std::abs(nll + log_prob_of(logits, 5)) < 1e-5);
    float scale, min_log_prob;
    std::memcpy(&scale, record.data(), 4);
    std::memcpy(&min_log_prob, record.data() + 2, 4);
    for (int i = 0; i < n_vocab; ++i) {
        const double exact = log_prob_of(logits, i);
        if (exact < min_log_prob) continue;  // clamped to the floor
        INFO(i);
        CHECK(std::abs(scale * record[size_t(4 + i)] + min_log_prob - exact) <= 0.5 * scale + 1e-5);
    }
}

TEST_CASE("a model compared with its own saved log-probs has no divergence and the same top token", "[quality]") {
    const int n_vocab = 500;
    const std::vector<float> logits = ramp_logits(n_vocab, 12.0f);
    std::vector<uint16_t> record(record_size(n_vocab));
    encode_log_probs(logits, 7, record);
    const KlToken t = compare_with_base(record, logits, 7);
    CHECK(std::abs(t.kld) < 1e-4);
    CHECK(t.same_top);
    CHECK(std::abs(t.p_diff) < 1e-4);
}

TEST_CASE("a shifted distribution has the KL divergence of exact arithmetic and a different top token", "[quality]") {
    const std::vector<float> base = {0.0f, 1.0f, 2.0f, 0.5f}, other = {0.0f, 2.5f, 1.0f, 0.5f};
    std::vector<uint16_t> record(record_size(4));
    encode_log_probs(base, 2, record);
    const KlToken t = compare_with_base(record, other, 2);
    double exact = 0;
    for (int i = 0; i < 4; ++i) {
        const double lp = log_prob_of(base, i), lq = log_prob_of(other, i);
        exact += std::exp(lp) * (lp - lq);
    }
    CHECK(std::abs(t.kld - exact) < 1e-3);
    CHECK_FALSE(t.same_top);
}

TEST_CASE("a KL base file reads back its header, tokens and records", "[quality]") {
    const std::string path = temp_path("base.kld");
    const KlBaseHeader header{8, 3, 2, {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}};
    {
        KlBaseFile f = KlBaseFile::create(path, header);
        const std::vector<uint16_t> record = {1, 2, 3, 4, 5, 6, 7, 8};
        f.write_record(record);
    }
    KlBaseFile f = KlBaseFile::open(path);
    CHECK(f.header().n_ctx == 8);
    CHECK(f.header().n_vocab == 3);
    CHECK(f.header().tokens == header.tokens);
    std::vector<uint16_t> record(record_size(3));
    f.read_record(record);
    CHECK(record == std::vector<uint16_t>{1, 2, 3, 4, 5, 6, 7, 8});
    CHECK_THROWS_WITH(f.read_record(record), rill::test::contains("ends before its last chunk"));
    std::filesystem::remove(path);
}

TEST_CASE("a file that is not a KL base, or whose header is absurd, is refused by name", "[quality][corrupt]") {
    const std::string path = temp_path("bad.kld");
    {
        std::FILE* f = std::fopen(path.c_str(), "wb");
        std::fputs("GGUF and more bytes", f);
        std::fclose(f);
    }
    CHECK_THROWS_WITH(KlBaseFile::open(path), rill::test::contains("not a KL-divergence base file"));
    {
        std::FILE* f = std::fopen(path.c_str(), "wb");
        const int32_t sizes[3] = {512, -5, 1};
        std::fwrite("_logits_", 1, 8, f);
        std::fwrite(sizes, 4, 3, f);
        std::fclose(f);
    }
    CHECK_THROWS_WITH(KlBaseFile::open(path), rill::test::contains("absurd"));
    std::filesystem::remove(path);
}

TEST_CASE("KL statistics follow llama-perplexity's percentiles and agreement rate", "[quality]") {
    KlAccumulator acc;
    for (int i = 0; i < 101; ++i) acc.add({.kld = i * 0.01, .same_top = i % 4 != 0, .p_diff = 0.0f, .nll = 1.0f, .nll_base = 1.0f});
    const KlSummary s = acc.summary();
    CHECK(s.n == 101);
    CHECK(std::abs(s.kld_mean - 0.5) < 1e-9);
    CHECK(std::abs(s.kld_percentiles[0] - 1.0) < 1e-6);   // maximum
    CHECK(std::abs(s.kld_percentiles[2] - 0.99) < 1e-6);  // 99th
    CHECK(std::abs(s.kld_percentiles[5] - 0.5) < 1e-6);   // median
    CHECK(std::abs(s.same_top - 75.0 / 101.0) < 1e-9);
}
