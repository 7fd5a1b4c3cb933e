// rill quantize: write a model's matrices in another tensor type, or one of llama.cpp's mixes.
#include <atomic>
#include <cstdio>
#include <memory>

#include "cli_support.h"
#include "commands.h"
#include "progress.h"
#include "runtime/base/error.h"
#include "runtime/make/quantize_model.h"
#include "runtime/quality/imatrix_file.h"

namespace rill::cli {
namespace {

struct QuantizeFlags {
    std::string input, output, type, imatrix;
    bool pure = false;
    int threads = 0;
};

int quantize(const QuantizeFlags& f) {
    const auto recipe = find_recipe(f.type);
    if (!recipe) {
        const std::string names = join_names(recipe_names());
        throw CLI::ValidationError("TYPE", "'" + f.type + "' is not a quantization type (choose from " + names + ")");
    }
    if (f.input == f.output) throw CLI::ValidationError("OUT", "the output must not overwrite the input");
    const GgufFile input = GgufFile::open(f.input);

    // Ctrl-C stops at the next chunk; the writer then removes its temporary file.
    const std::atomic<bool>& cancel_requested = interrupt_flag(true);

    // llama-quantize's reading of either imatrix format: each entry's mean square per column.
    QuantizeImportance importance;
    if (!f.imatrix.empty()) {
        const Imatrix m = read_imatrix(f.imatrix);
        for (const auto& [name, entry] : m.entries) importance.by_name[name] = m.importance(name);
        importance.file = f.imatrix;
        importance.dataset = m.datasets.empty() ? "" : m.datasets.front();
        importance.chunks = m.chunk_count;
        std::fprintf(stderr, "imatrix: %zu entries from %s (%d chunks)\n", m.entries.size(), f.imatrix.c_str(), m.chunk_count);
    }

    ProgressBar bar("quantizing");
    QuantizeOptions options;
    options.recipe = *recipe;
    options.pure = f.pure;
    options.importance = f.imatrix.empty() ? nullptr : &importance;
    options.n_threads = f.threads;
    options.cancel = &cancel_requested;
    options.on_progress = [&](const QuantizeProgress& p) {
        bar.update(p.bytes_total ? double(p.bytes_done) / double(p.bytes_total) : 1.0,
                   std::to_string(p.tensors_done) + "/" + std::to_string(p.tensors_total) + " tensors, " +
                       gigabytes(p.bytes_done) + " of " + gigabytes(p.bytes_total));
    };
    QuantizeSummary summary;
    try {
        summary = quantize_model(input, f.output, options);
    } catch (const Error& e) {
        bar.done();
        if (cancel_requested.load()) throw Error("interrupted: no output file was written");
        throw;
    }
    bar.done();
    if (summary.requantized)
        std::fprintf(stderr, "warning: some matrices were already quantized; quantizing them again loses more quality "
                             "than starting from F32, F16 or BF16\n");
    std::printf("%s -> %s (%s%s)\n", f.input.c_str(), f.output.c_str(), recipe->name.c_str(), f.pure ? ", pure" : "");
    std::printf("size: %s -> %s (%.1f%%)\n", gigabytes(summary.bytes_in).c_str(), gigabytes(summary.bytes_out).c_str(),
                100.0 * double(summary.bytes_out) / double(std::max<uint64_t>(summary.bytes_in, 1)));
    std::printf("%-8s %8s %14s %12s %12s\n", "type", "tensors", "elements", "size", "RMSE");
    for (const auto& [name, e] : summary.per_type)
        std::printf("%-8s %8d %14llu %12s %12.3e\n", name.c_str(), e.tensors, (unsigned long long)e.elements,
                    gigabytes(e.bytes).c_str(), e.rmse());
    return 0;
}

}  // namespace

Action add_quantize(CLI::App& app) {
    auto f = std::make_shared<QuantizeFlags>();
    CLI::App* cmd = app.add_subcommand("quantize", "Quantize a model to a tensor type or one of llama.cpp's mixes");
    cmd->footer("Examples:\n  rill quantize model-f16.gguf model-q4_k_m.gguf Q4_K_M\n"
                "  rill quantize model-f16.gguf model-q8_0.gguf Q8_0 --pure\n"
                "  rill imatrix -m model-f16.gguf -f calibration.txt -o model.imatrix.gguf\n"
                "  rill quantize model-f16.gguf model-iq2_m.gguf IQ2_M --imatrix model.imatrix.gguf\n"
                "Types: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K\n"
                "IQ4_NL IQ4_XS IQ3_M IQ3_S IQ3_XS IQ3_XXS IQ2_M IQ2_S IQ2_XS IQ2_XXS IQ1_M IQ1_S MXFP4_MOE TQ1_0 TQ2_0.\n"
                "The mixes give attn_v, ffn_down and the output matrix more bits, as llama.cpp does. With --imatrix every\n"
                "type that can use one does (the bytes are llama-quantize's with the same file); IQ1_S, IQ1_M, IQ2_XXS,\n"
                "IQ2_XS, IQ2_S, IQ3_XXS and Q2_K_S need one.");
    cmd->add_option("IN", f->input, "the model to read (F32, F16 or BF16 is best)")->required()->check(CLI::ExistingFile);
    cmd->add_option("OUT", f->output, "the file to write; it appears only when complete")->required();
    cmd->add_option("TYPE", f->type, "the type or mix, e.g. Q4_K_M")->required();
    cmd->add_flag("--pure", f->pure, "give every matrix the one type (no mix rules)");
    cmd->add_option("--imatrix", f->imatrix, "an importance matrix (rill imatrix or llama-imatrix; GGUF or .dat)")->check(CLI::ExistingFile);
    cmd->add_option("-t,--threads", f->threads, "threads (default: every core)")->check(CLI::Range(1, 1024));
    return [f] { return quantize(*f); };
}

}  // namespace rill::cli
