// rill synth: a random-weight model with a real model's exact shapes, for benchmarks without downloads.
#include <atomic>
#include <cstdio>
#include <memory>

#include "cli_support.h"
#include "commands.h"
#include "progress.h"
#include "runtime/base/error.h"
#include "runtime/make/synth.h"

namespace rill::cli {
namespace {

struct SynthFlags {
    std::string preset, type = "Q4_K_M", vocab, output;
    uint64_t seed = 1;
    int threads = 0;
    bool list = false;
};

void list_presets() {
    const char* types[] = {"Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "F16"};
    std::printf("%-16s %-6s %10s", "preset", "arch", "params");
    for (const char* t : types) std::printf(" %9s", t);
    std::printf("  (file sizes in GB)  source\n");
    for (const SynthPreset& p : synth_presets()) {
        std::printf("%-16s %-6s %9.2fB", p.name.c_str(), p.arch.c_str(), double(synth_parameter_count(p)) / 1e9);
        for (const char* t : types) std::printf(" %9.2f", double(synth_weight_bytes(p, *find_recipe(t))) / 1e9);
        std::printf("  %s\n", p.source);
    }
}

int synth(const SynthFlags& f) {
    if (f.list) {
        list_presets();
        return 0;
    }
    if (f.preset.empty() || f.output.empty()) throw CLI::ValidationError("--preset/-o", "both are required (or use --list)");
    const auto preset = find_preset(f.preset);
    if (!preset) {
        std::string names;
        for (const SynthPreset& p : synth_presets()) names += (names.empty() ? "" : ", ") + p.name;
        throw CLI::ValidationError("--preset", "'" + f.preset + "' is not a preset (choose from " + names + ")");
    }
    const auto recipe = find_recipe(f.type);
    if (!recipe) {
        const std::string names = join_names(recipe_names());
        throw CLI::ValidationError("--type", "'" + f.type + "' is not a quantization type (choose from " + names + ")");
    }
    // Ctrl-C stops at the next chunk; the writer then removes its temporary file.
    const std::atomic<bool>& cancel_requested = interrupt_flag(true);

    ProgressBar bar("synthesizing " + preset->name + " " + recipe->name);
    SynthOptions options;
    options.preset = *preset;
    options.recipe = *recipe;
    options.vocab_path = f.vocab;
    options.seed = f.seed;
    options.n_threads = f.threads;
    options.cancel = &cancel_requested;
    options.on_progress = [&](const QuantizeProgress& p) {
        bar.update(p.bytes_total ? double(p.bytes_done) / double(p.bytes_total) : 1.0,
                   std::to_string(p.tensors_done) + "/" + std::to_string(p.tensors_total) + " tensors");
    };
    QuantizeSummary summary;
    try {
        summary = synthesize_model(f.output, options);
    } catch (const Error&) {
        bar.done();
        if (cancel_requested.load()) throw Error("interrupted: no output file was written");
        throw;
    }
    bar.done();
    std::printf("%s: %s %s, %.2fB parameters, %s, seed %llu\n", f.output.c_str(), preset->name.c_str(), recipe->name.c_str(),
                double(synth_parameter_count(*preset)) / 1e9, gigabytes(summary.bytes_out).c_str(), (unsigned long long)f.seed);
    return 0;
}

}  // namespace

Action add_synth(CLI::App& app) {
    auto f = std::make_shared<SynthFlags>();
    CLI::App* cmd = app.add_subcommand("synth", "Write a random-weight model shaped exactly like a real one (for benchmarks)");
    cmd->footer("Examples:\n  rill synth --list\n"
                "  rill synth --preset llama-3.1-8b --type Q4_K_M --vocab ggml-vocab-llama-bpe.gguf -o llama8b-q4km.gguf\n"
                "Same seed, same bytes. The text it generates is noise; its speed is the real model's.");
    cmd->add_flag("--list", f->list, "list the presets with parameter counts and file sizes");
    cmd->add_option("--preset", f->preset, "the model to imitate (see --list)");
    cmd->add_option("--type", f->type, "tensor type or mix")->capture_default_str();
    cmd->add_option("--vocab", f->vocab, "copy the tokenizer from this GGUF (its size must match)")->check(CLI::ExistingFile);
    cmd->add_option("--seed", f->seed, "random seed")->capture_default_str();
    cmd->add_option("-o,--output", f->output, "the file to write; it appears only when complete");
    cmd->add_option("-t,--threads", f->threads, "threads (default: every core)")->check(CLI::Range(1, 1024));
    return [f] { return synth(*f); };
}

}  // namespace rill::cli
