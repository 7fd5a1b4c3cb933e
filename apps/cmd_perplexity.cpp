// rill perplexity: a model's perplexity over a text, and its KL divergence from a base model's
// predictions, computed and printed as llama-perplexity does, so the numbers compare with llama.cpp's.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "commands.h"
#include "model_flags.h"
#include "session_flags.h"
#include "runtime/base/error.h"
#include "runtime/quality/kl_divergence.h"
#include "runtime/quality/perplexity.h"
#include "runtime/session/session.h"
#include "runtime/text/tokenizer.h"

namespace rill::cli {
namespace {

struct PerplexityFlags {
    ModelFlags model;
    std::string text_file;
    int chunks = -1;
    std::string kl_base;
    bool kl = false;
    bool json = false;
    // llama.cpp's 512 tokens per chunk; exact keys and values, and float32 prompt products (auto would take
    // bfloat16 inputs where the CPU has them, 0.1 off in log-prob): a measurement of the weights, not of rill's rounding.
    SessionFlags session{.ctx = 512, .kv = {.both = "f32", .k = "", .v = ""}, .gemm = "onednn"};
};

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void print_kl_row(int chunk, const KlAccumulator& acc) {
    const KlSummary s = acc.summary();
    std::printf("%4d    %9.4lf ± %9.4lf    %10.5lf ± %10.5lf    %10.5lf ± %10.5lf    %6.3lf ± %6.3lf %%    %6.3lf ± %6.3lf %%\n", chunk + 1,
                s.ppl.value, s.ppl.uncertainty, s.ln_ratio, s.ln_ratio_unc, s.kld_mean, s.kld_unc, 100 * s.dp_rms, 100 * s.dp_rms_unc,
                100 * s.same_top, 100 * s.same_top_unc);
    std::fflush(stdout);
}

void print_kl_summary(const KlSummary& s) {
    std::printf("\n====== Perplexity statistics ======\n");
    std::printf("Mean PPL(Q)                   : %10.6lf ± %10.6lf\n", s.ppl.value, s.ppl.uncertainty);
    std::printf("Mean PPL(base)                : %10.6lf ± %10.6lf\n", s.ppl_base.value, s.ppl_base.uncertainty);
    std::printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2lf%%\n", 100 * s.correlation);
    std::printf("Mean ln(PPL(Q)/PPL(base))     : %10.6lf ± %10.6lf\n", s.ln_ratio, s.ln_ratio_unc);
    std::printf("Mean PPL(Q)/PPL(base)         : %10.6lf ± %10.6lf\n", std::exp(s.ln_ratio), std::exp(s.ln_ratio) * s.ln_ratio_unc);
    std::printf("\n====== KL divergence statistics ======\n");
    std::printf("Mean    KLD: %10.6lf ± %10.6lf\n", s.kld_mean, s.kld_unc);
    const char* kld_names[] = {"Maximum", "99.9%  ", "99.0%  ", "95.0%  ", "90.0%  ", "Median ", "10.0%  ", " 5.0%  ", " 1.0%  ", " 0.1%  ", "Minimum"};
    for (int i = 0; i < 11; ++i) std::printf("%s KLD: %10.6f\n", kld_names[i], s.kld_percentiles[i]);
    std::printf("\n====== Token probability statistics ======\n");
    std::printf("Mean    Δp: %6.3lf ± %5.3lf %%\n", 100 * s.dp_mean, 100 * s.dp_unc);
    const char* dp_names[] = {"Maximum", "99.9%  ", "99.0%  ", "95.0%  ", "90.0%  ", "75.0%  ", "Median ",
                              "25.0%  ", "10.0%  ", " 5.0%  ", " 1.0%  ", " 0.1%  ", "Minimum"};
    for (int i = 0; i < 13; ++i) std::printf("%s Δp: %6.3lf%%\n", dp_names[i], 100 * s.dp_percentiles[i]);
    std::printf("RMS Δp    : %6.3lf ± %5.3lf %%\n", 100 * s.dp_rms, 100 * s.dp_rms_unc);
    std::printf("Same top p: %6.3lf ± %5.3lf %%\n", 100 * s.same_top, 100 * s.same_top_unc);
}

nlohmann::json kl_json(const KlSummary& s) {
    return {{"tokens", s.n},
            {"ppl", s.ppl.value},
            {"ppl_uncertainty", s.ppl.uncertainty},
            {"ppl_base", s.ppl_base.value},
            {"ln_ppl_ratio", s.ln_ratio},
            {"ln_ppl_ratio_uncertainty", s.ln_ratio_unc},
            {"kld_mean", s.kld_mean},
            {"kld_uncertainty", s.kld_unc},
            {"kld_max", s.kld_percentiles[0]},
            {"kld_99_9", s.kld_percentiles[1]},
            {"kld_99", s.kld_percentiles[2]},
            {"kld_95", s.kld_percentiles[3]},
            {"kld_median", s.kld_percentiles[5]},
            {"same_top", s.same_top},
            {"delta_p_mean", s.dp_mean},
            {"delta_p_rms", s.dp_rms}};
}

int perplexity(const PerplexityFlags& f) {
    if (f.kl && !f.text_file.empty()) throw CLI::ValidationError("-f", "--kl-divergence reads its tokens from the base file; give no -f");
    if (!f.kl && f.text_file.empty()) throw CLI::ValidationError("-f", "a text file is required (or --kl-divergence with a base file)");
    if (f.kl && f.kl_base.empty()) throw CLI::ValidationError("--kl-divergence", "needs --kl-divergence-base FILE, written by an earlier run");
    const auto model = load_model(f.model.path, f.model.load_options());
    const Vocab vocab = load_vocab(model->file);
    const int n_vocab = model->hp.n_vocab;

    std::vector<int32_t> tokens;
    KlBaseFile base;
    ChunkPlan plan;
    if (f.kl) {
        base = KlBaseFile::open(f.kl_base);
        const KlBaseHeader& h = base.header();
        if (h.n_vocab != n_vocab)
            throw Error(f.kl_base + ": its vocabulary has " + std::to_string(h.n_vocab) + " tokens, the model's " + std::to_string(n_vocab));
        tokens = h.tokens;
        plan = plan_chunks(tokens.size(), h.n_ctx, f.chunks);
    } else {
        tokens = tokenize(vocab, read_scoring_text(f.text_file));
        plan = plan_chunks(tokens.size(), f.session.ctx, f.chunks);
        if (!f.kl_base.empty()) {
            KlBaseHeader h{plan.n_ctx, n_vocab, plan.n_chunk, {tokens.begin(), tokens.begin() + ptrdiff_t(plan.n_chunk) * plan.n_ctx}};
            base = KlBaseFile::create(f.kl_base, h);
        }
    }

    SessionOptions options = f.session.options_for(*model, false);
    options.n_ctx = plan.n_ctx;
    Session session(*model, options);
    std::fprintf(stderr, "perplexity: %d chunks of %d tokens, %d scored in each (%zu tokens in the text)\n", plan.n_chunk, plan.n_ctx,
                 plan.scored_per_chunk(), tokens.size());

    RunningSums nll;
    KlAccumulator kl;
    std::vector<uint16_t> record(record_size(n_vocab));
    const auto started = std::chrono::steady_clock::now();
    for (int c = 0; c < plan.n_chunk; ++c) {
        const auto begin = tokens.begin() + ptrdiff_t(c) * plan.n_ctx;
        std::vector<int32_t> chunk(begin, begin + plan.n_ctx);
        if (vocab.add_bos && vocab.bos >= 0) chunk[0] = vocab.bos;  // each chunk starts a text of its own
        session.reset();
        const std::span<const float> logits = session.eval(chunk, true);
        for (int p = plan.first; p < plan.n_ctx - 1; ++p) {
            const std::span<const float> row = logits.subspan(size_t(p) * size_t(n_vocab), size_t(n_vocab));
            const int32_t target = begin[p + 1];  // the text's token, not the BOS put in its place
            if (f.kl) {
                base.read_record(record);
                kl.add(compare_with_base(record, row, target));
            } else if (!f.kl_base.empty()) {
                nll.add(encode_log_probs(row, target, record));
                base.write_record(record);
            } else {
                nll.add(-log_prob_of(row, target));
            }
        }
        if (c == 0) {
            const double per_chunk = seconds_since(started);
            std::fprintf(stderr, "perplexity: %.2f s per chunk, about %.0f s for all\n", per_chunk, per_chunk * plan.n_chunk);
            if (f.kl && !f.json)
                std::printf("chunk             PPL          ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p\n");
        }
        if (f.json) continue;
        if (f.kl) {
            print_kl_row(c, kl);
        } else {
            std::printf("[%d]%.4lf,", c + 1, perplexity_of(nll).value);
            std::fflush(stdout);
        }
    }
    if (f.kl) {
        const KlSummary s = kl.summary();
        if (f.json) {
            std::printf("%s\n", kl_json(s).dump().c_str());
        } else if (s.n >= 100) {
            print_kl_summary(s);
        }
        return 0;
    }
    const Perplexity ppl = perplexity_of(nll);
    if (f.json) {
        std::printf("%s\n", nlohmann::json{{"chunks", plan.n_chunk}, {"n_ctx", plan.n_ctx}, {"tokens", nll.n},
                                           {"ppl", ppl.value}, {"ppl_uncertainty", ppl.uncertainty}}
                                .dump()
                                .c_str());
    } else {
        std::printf("\n");
        std::fprintf(stderr, "Final estimate: PPL = %.4lf +/- %.5lf\n", ppl.value, ppl.uncertainty);
    }
    return 0;
}

}  // namespace

Action add_perplexity(CLI::App& app) {
    auto f = std::make_shared<PerplexityFlags>();
    CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity over a text, and KL divergence from a base model, as llama-perplexity computes them");
    cmd->footer(
        "The text is cut into chunks of -c tokens (512 by default; leftovers are dropped), each evaluated alone\n"
        "with its first token replaced by BOS; the second half of each chunk is scored, as llama-perplexity does,\n"
        "so the numbers compare with llama.cpp's. stdout gets the running estimate after each chunk, stderr the\n"
        "final \"PPL = X +/- Y\".\n"
        "Comparing a quantized model with its full-precision one:\n"
        "  rill perplexity -m model-f16.gguf -f wiki.test.raw --kl-divergence-base f16.kld\n"
        "  rill perplexity -m model-q4_k_m.gguf --kl-divergence-base f16.kld --kl-divergence\n"
        "The base file is llama.cpp's format: llama-perplexity can read rill's and the other way round.");
    f->model.add_to(*cmd);
    cmd->add_option("-f,--file", f->text_file, "the text to score")->check(CLI::ExistingFile);
    cmd->add_option("--chunks", f->chunks, "score at most this many chunks (default: all)")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--kl-divergence-base", f->kl_base,
                    "with -f: also save every scored position's log-probs here; with --kl-divergence: compare with them");
    cmd->add_flag("--kl-divergence", f->kl, "compare with the base file's log-probs (KL divergence, top-token agreement, Δp)");
    cmd->add_flag("--json", f->json, "print one JSON object with the results instead of the text report");
    f->session.add_to(*cmd, "tokens per chunk (default 512, as llama-perplexity)");
    return [f] { return perplexity(*f); };
}

}  // namespace rill::cli
