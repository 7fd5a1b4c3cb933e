// rill imatrix: an importance matrix over a text, collected as llama-imatrix collects it (which
// matrices, which inputs, how chunks are cut), written in its file formats so llama-quantize and
// `rill quantize --imatrix` both read it; with --in-file only, converts or merges existing files.
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "cli_support.h"
#include "commands.h"
#include "model_flags.h"
#include "session_flags.h"
#include "runtime/base/error.h"
#include "runtime/quality/imatrix_collect.h"
#include "runtime/quality/perplexity.h"
#include "runtime/session/session.h"
#include "runtime/text/tokenizer.h"

namespace rill::cli {
namespace {

struct ImatrixFlags {
    ModelFlags model;
    std::string text_file;
    std::string out = "imatrix.gguf";
    std::string format;  // "gguf" or "dat"; empty: GGUF, with a warning when the name says otherwise
    std::vector<std::string> in_files;
    int chunks = -1;
    int skip_chunks = 0;
    int output_frequency = 10;
    bool process_output = false;
    bool no_ppl = false;
    bool json = false;
    bool show = false;
    SessionFlags session{.ctx = 512, .kv = {.both = "f32", .k = "", .v = ""}, .gemm = "onednn"};
};

// llama-imatrix leaves out products of fewer tokens than this (decode steps, tiny batches); a
// mixture's experts count whatever tokens were routed to them.
constexpr int kMinTokens = 16;

// Which matrices are collected and under what name: every "blk." weight (and output.weight with
// --process-output), a 3-D expert weight as one entry with a matrix per expert. Dense weights are
// told by their tensor's name; expert slices are views, listed here from the model.
class Collection final : public MatmulObserver {
public:
    Collection(const Model& m, bool process_output, ImatrixCollector& sink) : process_output_(process_output), sink_(sink) {
        std::unordered_set<std::string> seen;  // (name, expert) pairs already listed
        for (const LayerWeights& L : m.layers)
            for (const std::vector<Weight>* experts : {&L.gate_exps, &L.up_exps, &L.down_exps})
                for (size_t x = 0; x < experts->size(); ++x) {
                    const std::string& slice = (*experts)[x].tensor->name;
                    std::string name = slice.substr(0, slice.find('['));
                    // gemma4's fused gate|up: both halves read the same inputs; llama.cpp sees one tensor.
                    if (!seen.insert(name + "#" + std::to_string(x)).second) continue;
                    experts_[(*experts)[x].tensor] = {std::move(name), int(x), int(experts->size())};
                }
    }

    void inputs(const Weight& w, const float* in, int n_tokens) override {
        if (const auto it = experts_.find(w.tensor); it != experts_.end()) {
            sink_.add(it->second.name, it->second.matrix, it->second.n_matrices, in, n_tokens, w.cols());
            return;
        }
        const std::string& name = w.tensor->name;
        if (n_tokens < kMinTokens) return;
        if (name.rfind("blk.", 0) != 0 && !(process_output_ && name == "output.weight")) return;
        sink_.add(name, 0, 1, in, n_tokens, w.cols());
    }

private:
    struct Expert {
        std::string name;
        int matrix, n_matrices;
    };
    bool process_output_;
    ImatrixCollector& sink_;
    std::unordered_map<const GgufTensor*, Expert> experts_;
};

bool wants_dat(const ImatrixFlags& f) {
    if (f.format == "dat") return true;
    if (f.format.empty() && !(f.out.size() >= 5 && f.out.compare(f.out.size() - 5, 5, ".gguf") == 0))
        std::fprintf(stderr, "imatrix: writing GGUF to %s, whose name does not end in .gguf (--output-format dat for the legacy format)\n",
                     f.out.c_str());
    return false;
}

void save(const Imatrix& m, const std::string& path, bool dat) {
    if (dat) write_imatrix_legacy(m, path);
    else write_imatrix_gguf(m, path);
}

// The files given with --in-file, as token sums, added entry by entry.
Imatrix merged_inputs(const ImatrixFlags& f) {
    Imatrix all;
    for (const std::string& path : f.in_files) {
        const Imatrix one = as_token_sums(read_imatrix(path), f.session.ctx);
        all.chunk_size = one.chunk_size;
        all.chunk_count += one.chunk_count;
        all.datasets.insert(all.datasets.end(), one.datasets.begin(), one.datasets.end());
        for (const auto& [name, e] : one.entries) {
            auto [it, fresh] = all.entries.try_emplace(name, e);
            if (fresh) continue;
            ImatrixEntry& into = it->second;
            if (into.sums.size() != e.sums.size() || into.counts.size() != e.counts.size())
                throw Error(path + ": '" + name + "' has another shape than in the files before it");
            for (size_t i = 0; i < e.sums.size(); ++i) into.sums[i] += e.sums[i];
            for (size_t i = 0; i < e.counts.size(); ++i) into.counts[i] += e.counts[i];
        }
    }
    return all;
}

int imatrix(const ImatrixFlags& f) {
    const bool dat = wants_dat(f);
    if (f.show) {
        if (f.in_files.empty() || !f.text_file.empty()) throw CLI::ValidationError("--show", "shows --in-file files; give no -f");
        const Imatrix m = merged_inputs(f);
        for (const auto& [name, e] : m.entries)
            std::printf("%s\n", nlohmann::json{{"name", name}, {"counts", e.counts}, {"importance", m.importance(name)}}.dump().c_str());
        return 0;
    }
    if (f.text_file.empty()) {
        if (f.in_files.empty()) throw CLI::ValidationError("-f", "a text file is required (or --in-file to convert or merge files)");
        const Imatrix m = merged_inputs(f);
        save(m, f.out, dat);
        std::fprintf(stderr, "imatrix: %zu entries from %zu file(s) written to %s\n", m.entries.size(), f.in_files.size(), f.out.c_str());
        return 0;
    }
    if (!f.in_files.empty()) throw CLI::ValidationError("--in-file", "merging with a new collection is not supported; collect, then merge the files");
    const auto model = load_model(f.model.path, f.model.load_options());
    const Vocab vocab = load_vocab(model->file);
    std::vector<int32_t> tokens = tokenize(vocab, read_scoring_text(f.text_file));
    const int n_ctx = f.session.ctx;
    if (f.skip_chunks > 0) {
        if (int64_t(f.skip_chunks + 2) * n_ctx >= int64_t(tokens.size()))
            throw Error(f.text_file + ": " + std::to_string(tokens.size()) + " tokens are too few to skip " + std::to_string(f.skip_chunks) +
                        " chunks of " + std::to_string(n_ctx) + " and keep two");
        tokens.erase(tokens.begin(), tokens.begin() + ptrdiff_t(f.skip_chunks) * n_ctx);
    }
    const ChunkPlan plan = plan_chunks(tokens.size(), n_ctx, f.chunks);

    SessionOptions options = f.session.options_for(*model, false);
    options.n_ctx = plan.n_ctx;
    Session session(*model, options);
    ImatrixCollector sums;
    Collection collection(*model, f.process_output, sums);
    session.observe_matmuls(&collection);
    std::fprintf(stderr, "imatrix: %d chunks of %d tokens (%zu tokens in the text)\n", plan.n_chunk, plan.n_ctx, tokens.size());

    RunningSums nll;
    const int n_vocab = model->hp.n_vocab;
    const auto started = std::chrono::steady_clock::now();
    for (int c = 0; c < plan.n_chunk; ++c) {
        const auto begin = tokens.begin() + ptrdiff_t(c) * plan.n_ctx;
        std::vector<int32_t> chunk(begin, begin + plan.n_ctx);
        if (vocab.add_bos && vocab.bos >= 0) chunk[0] = vocab.bos;  // each chunk starts a text of its own
        session.reset();
        const std::span<const float> logits = session.eval(chunk, !f.no_ppl);
        if (!f.no_ppl)
            for (int p = plan.first; p < plan.n_ctx - 1; ++p)
                nll.add(-log_prob_of(logits.subspan(size_t(p) * size_t(n_vocab), size_t(n_vocab)), begin[p + 1]));
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::fprintf(stderr, "imatrix: chunk %d/%d, %.1f s, about %.0f s left\n", c + 1, plan.n_chunk, elapsed,
                     elapsed / (c + 1) * (plan.n_chunk - c - 1));
        if (!f.no_ppl && !f.json) {
            std::printf("[%d]%.4lf,", c + 1, perplexity_of(nll).value);
            std::fflush(stdout);
        }
        if (f.output_frequency > 0 && (c + 1) % f.output_frequency == 0 && c + 1 < plan.n_chunk)
            save(sums.result({f.text_file}, c + 1, plan.n_ctx), f.out, dat);
    }
    session.observe_matmuls(nullptr);
    const Imatrix m = sums.result({f.text_file}, plan.n_chunk, plan.n_ctx);
    save(m, f.out, dat);
    const Perplexity ppl = perplexity_of(nll);
    if (f.json) {
        nlohmann::json out{{"output", f.out}, {"format", dat ? "dat" : "gguf"}, {"entries", m.entries.size()}, {"chunks", plan.n_chunk}, {"n_ctx", plan.n_ctx}};
        if (!f.no_ppl) out["ppl"] = ppl.value;
        std::printf("%s\n", out.dump().c_str());
        return 0;
    }
    if (!f.no_ppl) std::printf("\nFinal estimate: PPL = %.4lf +/- %.5lf\n", ppl.value, ppl.uncertainty);
    std::fprintf(stderr, "imatrix: %zu entries written to %s\n", m.entries.size(), f.out.c_str());
    return 0;
}

}  // namespace

Action add_imatrix(CLI::App& app) {
    auto f = std::make_shared<ImatrixFlags>();
    CLI::App* cmd = app.add_subcommand("imatrix", "Compute an importance matrix over a text, as llama-imatrix does, for quantizing with --imatrix");
    cmd->footer(
        "For every weight matrix of the layers, the mean square of each input column over the text's tokens:\n"
        "the quantizers spend their precision where the model's inputs are large. The text is cut into chunks\n"
        "of -c tokens (512 by default), each evaluated alone with its first token replaced by BOS, as\n"
        "llama-imatrix does; stdout gets the running perplexity. The file is llama.cpp's (GGUF by default, or\n"
        "the legacy .dat), so llama-quantize reads rill's and rill quantize reads llama-imatrix's.\n"
        "  rill imatrix -m model-f16.gguf -f calibration.txt -o model.imatrix.gguf\n"
        "  rill quantize model-f16.gguf model-iq2_xxs.gguf IQ2_XXS --imatrix model.imatrix.gguf\n"
        "  rill imatrix --in-file old.dat -o old.gguf          (convert; several --in-file merge)\n"
        "  rill imatrix --in-file model.imatrix.gguf --show     (what it holds, as JSON lines)");
    cmd->add_option("-m,--model", f->model.path, "GGUF model file (not needed with --in-file alone)")->check(CLI::ExistingFile);
    cmd->add_flag("--no-mmap", f->model.no_mmap, "read the weights into memory instead of memory-mapping the file");
    cmd->add_option("-f,--file", f->text_file, "the calibration text")->check(CLI::ExistingFile);
    cmd->add_option("-o,--output", f->out, "where to write the matrix")->capture_default_str();
    cmd->add_option("--output-format", f->format, "gguf (the default) or dat (llama.cpp's legacy format)")->check(CLI::IsMember({"gguf", "dat"}));
    cmd->add_option("--in-file", f->in_files, "an imatrix file to convert, or several to merge (without -f)")->check(CLI::ExistingFile);
    cmd->add_option("--chunks", f->chunks, "use at most this many chunks (default: all)")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--chunk", f->skip_chunks, "skip this many chunks at the start of the text")->check(CLI::Range(0, 1 << 20));
    cmd->add_option("--output-frequency", f->output_frequency, "save the matrix so far every this many chunks (0: only at the end)")
        ->capture_default_str()->check(CLI::Range(0, 1 << 20));
    cmd->add_flag("--process-output", f->process_output, "also collect output.weight (llama-imatrix leaves it out by default)");
    cmd->add_flag("--no-ppl", f->no_ppl, "skip the perplexity (faster: no vocabulary projection but for the last token)");
    cmd->add_flag("--show", f->show, "print the --in-file files' entries as JSON lines: name, token counts, and the importance a quantizer takes");
    cmd->add_flag("--json", f->json, "print one JSON object describing the result instead of the running perplexity");
    f->session.add_to(*cmd, "tokens per chunk (default 512, as llama-imatrix)");
    return [f] {
        if (!f->text_file.empty() && f->model.path.empty()) throw CLI::ValidationError("-m", "a model is required to collect a matrix");
        return imatrix(*f);
    };
}

}  // namespace rill::cli
