// rill plan: will a model fit, how fast will it decode, how long until the first token, and which
// quantization to pick, from the model's byte and FLOP budget and this machine's measured rates.
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli_support.h"
#include "commands.h"
#include "kv_flags.h"
#include "machine_threads.h"
#include "runtime/plan/machine_spec.h"
#include "runtime/plan/budget.h"
#include "runtime/base/error.h"
#include "runtime/plan/plan.h"
#include "runtime/plan/quant_quality.h"

namespace rill::cli {
namespace {

using ordered_json = nlohmann::ordered_json;

struct PlanFlags {
    std::string model_path;
    std::string preset;
    std::string type;
    int ctx = 0;
    int prompt = 512;
    int threads = 0;
    KvFlags kv;
    int ubatch = 512;
    double fit_gb = 0;
    double target_tps = 0;
    bool json = false;
    bool remeasure = false;
    std::string machine;  // --machine FILE: predict for that machine instead of this one
};

std::string format(const char* fmt, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, value);
    return buf;
}

std::string gb(uint64_t bytes) {
    return bytes >= 1000000000ull ? format("%.2f GB", double(bytes) / 1e9) : format("%.0f MB", double(bytes) / 1e6);
}

std::string quality_label(double ppl) { return std::isnan(ppl) ? "not listed" : format("%+.4f", ppl); }
std::string rmse_label(double rmse) { return std::isnan(rmse) ? "-" : format("%.2f%%", 100 * rmse); }

// JSON has no NaN: a figure nobody published is null.
ordered_json number_or_null(double x) { return std::isnan(x) ? ordered_json(nullptr) : ordered_json(x); }

std::string threads_label(int n) { return std::to_string(n) + (n == 1 ? " thread" : " threads"); }

// What the plan is about: a file's tensors, or a preset's in a recipe's mix.
struct Subject {
    std::string label;
    ModelShape shape;
};

// The file or preset, read once however many types are planned.
struct Source {
    std::string name;              // the path or the preset's name
    std::unique_ptr<Model> model;  // -m: only its shapes and types are read
    std::optional<SynthPreset> preset;
};

Source open_source(const PlanFlags& f) {
    if (f.model_path.empty()) return {f.preset, nullptr, find_preset(f.preset)};
    LoadOptions options;
    options.interleave = false;  // only shapes and types are read
    return {f.model_path, load_model(f.model_path, options), std::nullopt};
}

Subject subject_for(const Source& source, const std::string& type) {
    if (source.model) {
        const Model* model = source.model.get();
        ModelShape shape = shape_of(*model);
        if (type.empty()) return {source.name, shape};
        // The file requantized in the recipe's mix, tensor by tensor, as `rill quantize` would.
        const auto recipe = find_recipe(type);
        QuantMix mix = QuantMix::for_file(*recipe, model->file, false);
        for (TensorShape& t : shape.tensors) {
            const GgufTensor* g = model->file.find_tensor(t.name);
            t.type = mix.choose(*g);
            t.bytes = row_bytes(t.type, t.row_length) * t.rows;
        }
        return {source.name + " as " + type, shape};
    }
    return {source.name + " " + type, shape_of_preset(*source.preset, *find_recipe(type))};
}

int context_for(const PlanFlags& f, const ModelShape& shape) { return f.ctx > 0 ? f.ctx : default_context(shape.hp); }

struct Prediction {
    MemoryNeeds memory;
    DecodeEstimate decode, decode_full;  // at the start and at the end of the context
    PrefillEstimate prefill;
    std::string kv_types;  // "f16", or "q8_0 K / f16 V"
};

Prediction predict(const PlanFlags& f, const ModelShape& shape, const MachineProfile& profile) {
    const KvTypes kv = f.kv.types();
    check_kv_types(kv, shape.hp.head_dim);
    const int ctx = context_for(f, shape);
    Prediction p;
    p.kv_types = kv_types_label(kv);
    p.decode = f.threads > 0 ? predict_decode(shape, profile, f.threads, 0, kv) : best_decode(shape, profile, 0, kv);
    p.decode_full = predict_decode(shape, profile, p.decode.n_threads, ctx, kv);
    const int prompt = std::min(f.prompt, ctx);
    p.prefill = f.threads > 0 ? predict_prefill(shape, profile, f.threads, prompt, f.ubatch)
                              : best_prefill(shape, profile, prompt, f.ubatch);
    p.memory = memory_needs(shape, ctx, f.ubatch, std::max(p.decode.n_threads, p.prefill.n_threads), kv);
    return p;
}

std::string decode_reason(const DecodeEstimate& d) {
    const double share = d.tokens_per_second / d.ceiling_tps;
    return (d.bandwidth_bound ? "memory bandwidth: " : "kernel arithmetic: ") + gb(d.bytes) + " per token at " +
           format("%.1f GB/s", d.bandwidth_gbps) + " allows at most " + format("%.1f t/s", d.ceiling_tps) +
           "; the kernels reach " + format("%.0f%%", 100 * share);
}

std::string prefill_reason(const PrefillEstimate& p) {
    return "compute: " + format("%.1f GFLOP", p.flops / 1e9) + " at " + format("%.0f GFLOP/s", p.achieved_gflops) + " (" +
           format("%.0f%%", 100 * p.achieved_gflops / p.peak_gflops) + " of the measured " +
           format("%.0f GFLOP/s", p.peak_gflops) + " f32 peak)";
}

ordered_json machine_json(const MachineProfile& m) {
    return {{"cpu", m.cpu},
            {"physical_cores", m.physical_cores},
            {"logical_cores", m.logical_cores},
            {"kernels", m.kernels},
            {"profile", m.source.empty() ? machine_profile_path() : m.source},
            {"measured_at", m.measured_at}};
}

ordered_json prediction_json(const Prediction& p, const ModelShape& shape, int ctx) {
    return {{"n_params", shape.n_params()},
            {"memory",
             {{"context", ctx},
              {"weights_bytes", p.memory.weights},
              {"kv_cache_bytes", p.memory.kv_cache},
              {"kv_type", p.kv_types},
              {"scratch_bytes", p.memory.scratch},
              {"recurrent_state_bytes", p.memory.recurrent_state},
              {"mapped_table_bytes", p.memory.mapped_tables},
              {"total_bytes", p.memory.total()}}},
            {"decode",
             {{"threads", p.decode.n_threads},
              {"tokens_per_second", p.decode.tokens_per_second},
              {"tokens_per_second_at_full_context", p.decode_full.tokens_per_second},
              {"attention_share_at_full_context", p.decode_full.attention_seconds / p.decode_full.seconds},
              {"bytes_per_token", p.decode.bytes},
              {"bandwidth_gbps", p.decode.bandwidth_gbps},
              {"ceiling_tokens_per_second", p.decode.ceiling_tps},
              {"bound", p.decode.bandwidth_bound ? "bandwidth" : "compute"}}},
            {"prefill",
             {{"threads", p.prefill.n_threads},
              {"prompt_tokens", p.prefill.n_tokens},
              {"time_to_first_token_s", p.prefill.seconds},
              {"tokens_per_second", p.prefill.tokens_per_second},
              {"flops", p.prefill.flops},
              {"achieved_gflops", p.prefill.achieved_gflops},
              {"peak_gflops", p.prefill.peak_gflops},
              {"bound", "compute"}}}};
}

void print_machine(const MachineProfile& m) {
    const uint64_t llc = m.last_level_cache_bytes();
    std::printf("machine      %s: %d cores (%d threads)%s, %s kernels\n", m.cpu.c_str(), m.physical_cores, m.logical_cores,
                llc > 0 ? (", last-level cache " + std::to_string(llc >> 20) + " MiB").c_str() : "", m.kernels.c_str());
    std::string bw;
    for (size_t i = 0; i < m.thread_counts.size(); ++i)
        bw += (i ? ", " : "") + format("%.1f", m.read_gbps[i]) + " GB/s at " + std::to_string(m.thread_counts[i]);
    std::printf("             read bandwidth %s; profile %s (%s)\n", bw.c_str(),
                (m.source.empty() ? machine_profile_path() : m.source).c_str(), m.measured_at.c_str());
}

int plan_one(const PlanFlags& f, const Source& source, const MachineProfile& profile) {
    const Subject s = subject_for(source, f.type);
    const int ctx = context_for(f, s.shape);
    const Prediction p = predict(f, s.shape, profile);
    if (f.json) {
        ordered_json j = {{"model", s.label}, {"machine", machine_json(profile)}};
        j.update(prediction_json(p, s.shape, ctx));
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    const KvTypes kv = f.kv.types();
    std::printf("model        %s: %.2f B parameters\n", s.label.c_str(), double(s.shape.n_params()) / 1e9);
    print_machine(profile);
    std::printf("\nmemory at a %d-token context (%s KV cache)\n", ctx, f.kv.label().c_str());
    std::printf("  weights    %s\n", gb(p.memory.weights).c_str());
    std::printf("  KV cache   %s (%s per token)\n", gb(p.memory.kv_cache).c_str(),
                format("%.0f KB", double(kv_bytes_per_token(s.shape.hp, kv)) / 1e3).c_str());
    if (p.memory.recurrent_state > 0)
        std::printf("  recurrent  %s (%d recurrent layers' state, the same at any context)\n", gb(p.memory.recurrent_state).c_str(),
                    s.shape.hp.n_recurrent());
    if (p.memory.mapped_tables > 0)
        std::printf("  PLE table  %s, not counted: read from the mapped file a row per token (resident with --no-mmap)\n",
                    gb(p.memory.mapped_tables).c_str());
    std::printf("  scratch    %s (activations, logits, attention and GEMM buffers)\n", gb(p.memory.scratch).c_str());
    std::printf("  total      %s\n", gb(p.memory.total()).c_str());
    std::printf("\ndecode       %.1f tokens/s with %s (%.1f t/s at the full context)\n", p.decode.tokens_per_second,
                threads_label(p.decode.n_threads).c_str(), p.decode_full.tokens_per_second);
    std::printf("             bound by %s\n", decode_reason(p.decode).c_str());
    if (p.decode_full.attention_seconds > 0.1 * p.decode_full.seconds)
        std::printf("             at the full context, attention over %d positions takes %.0f%% of each step\n", ctx,
                    100 * p.decode_full.attention_seconds / p.decode_full.seconds);
    std::printf("first token  %.2f s for a %d-token prompt (%.0f t/s) with %s\n", p.prefill.seconds, p.prefill.n_tokens,
                p.prefill.tokens_per_second, threads_label(p.prefill.n_threads).c_str());
    std::printf("             bound by %s\n", prefill_reason(p.prefill).c_str());
    return 0;
}

struct FitRow {
    const QuantQuality* quality;
    Prediction prediction;
    bool fits = false, fast_enough = true;
};

int plan_fit(const PlanFlags& f, const Source& source, const MachineProfile& profile) {
    const uint64_t budget = uint64_t(f.fit_gb * 1e9);
    std::vector<FitRow> rows;
    int ctx = 0;  // the same for every type: it depends on the hyperparameters only
    for (const QuantQuality& q : quant_quality_table()) {
        const Subject s = subject_for(source, q.recipe);
        ctx = context_for(f, s.shape);
        FitRow row{&q, predict(f, s.shape, profile)};
        row.fits = row.prediction.memory.total() <= budget;
        row.fast_enough = f.target_tps <= 0 || row.prediction.decode.tokens_per_second >= f.target_tps;
        rows.push_back(row);
    }
    // The table is ordered best quality first: the first row meeting both limits wins.
    const FitRow* choice = nullptr;
    for (const FitRow& r : rows)
        if (r.fits && r.fast_enough) {
            choice = &r;
            break;
        }
    const std::string& what = source.name;
    std::string why;
    if (choice != nullptr) {
        const Prediction& p = choice->prediction;
        why = std::string(choice->quality->recipe) + ": the highest-quality type whose weights, " + std::to_string(ctx) +
              "-token KV cache and scratch (" + gb(p.memory.total()) + ") fit in " + format("%g GB", f.fit_gb) +
              (f.target_tps > 0 ? " and that decodes at least " + format("%g t/s", f.target_tps) : "") + " (predicted " +
              format("%.1f t/s", p.decode.tokens_per_second) + "; " + quality_label(choice->quality->ppl_increase) +
              " perplexity on Llama-3-8B per llama.cpp)";
    } else {
        why = "nothing fits: the smallest type needs " + gb(rows.back().prediction.memory.total()) +
              (f.target_tps > 0 ? " or none reaches " + format("%g t/s", f.target_tps) : "");
    }
    if (f.json) {
        ordered_json list = ordered_json::array();
        for (const FitRow& r : rows) {
            const Prediction& p = r.prediction;
            list.push_back({{"type", r.quality->recipe},
                            {"weights_bytes", p.memory.weights},
                            {"total_bytes", p.memory.total()},
                            {"decode_tokens_per_second", p.decode.tokens_per_second},
                            {"decode_threads", p.decode.n_threads},
                            {"time_to_first_token_s", p.prefill.seconds},
                            {"ppl_increase_llama3_8b", number_or_null(r.quality->ppl_increase)},
                            {"golden_weight_rel_rmse", number_or_null(r.quality->weight_rel_rmse)},
                            {"fits", r.fits},
                            {"meets_target", r.fast_enough}});
        }
        const ordered_json j = {{"model", what},
                                {"machine", machine_json(profile)},
                                {"ram_gb", f.fit_gb},
                                {"target_tps", f.target_tps},
                                {"context", ctx},
                                {"types", list},
                                {"recommended", choice ? ordered_json(choice->quality->recipe) : ordered_json(nullptr)},
                                {"reason", why}};
        std::printf("%s\n", j.dump(2).c_str());
        return choice ? 0 : 1;
    }
    std::printf("model        %s, %d-token context (%s KV cache), %d-token prompt\n", what.c_str(), ctx, f.kv.label().c_str(),
                std::min(f.prompt, ctx));
    print_machine(profile);
    std::printf("\n| type   |  weights |    needs | decode t/s | first token | ppl +Δ (Llama-3-8B) | weight RMSE | fits |\n");
    std::printf("| ------ | -------: | -------: | ---------: | ----------: | ------------------: | ----------: | ---- |\n");
    for (const FitRow& r : rows) {
        const Prediction& p = r.prediction;
        std::printf("| %-6s | %8s | %8s | %10.1f | %9.2f s | %19s | %11s | %-4s |\n", r.quality->recipe,
                    gb(p.memory.weights).c_str(), gb(p.memory.total()).c_str(), p.decode.tokens_per_second,
                    p.prefill.seconds, quality_label(r.quality->ppl_increase).c_str(), rmse_label(r.quality->weight_rel_rmse).c_str(),
                    !r.fits ? "no" : !r.fast_enough ? "slow" : "yes");
    }
    std::printf("\nrecommended  %s\n", why.c_str());
    std::printf("\nppl +Δ: perplexity increase over F16 that llama.cpp's llama-quantize lists for Llama-3-8B (F16's: Mistral-7B);\n"
                "weight RMSE: error of the golden synth-llama-A blk.0.ffn_down against its F32 file, relative to its RMS.\n"
                "Rows are in quality order; IQ4_NL and IQ4_XS, unlisted by llama.cpp, are placed by the weight error.\n");
    return choice ? 0 : 1;
}

// `rill plan --remeasure` alone: the machine's figures, nothing about a model.
int show_machine(const PlanFlags& f) {
    const MachineProfile profile = obtain_machine_profile(true);
    if (f.json) {
        std::printf("%s\n", to_json(profile).dump(2).c_str());
        return 0;
    }
    print_machine(profile);
    std::printf("             f32 FMA peak");
    for (size_t i = 0; i < profile.thread_counts.size(); ++i)
        std::printf("%s %.0f GFLOP/s at %d", i ? "," : "", profile.peak_gflops[i], profile.thread_counts[i]);
    const int all = profile.thread_counts.back();
    std::printf("\n\n| type   | decode GB/s at %2d | experts GB/s at %2d | prompt GFLOP/s at %2d |\n"
                "| ------ | ---------------: | -----------------: | -------------------: |\n", all, all, all);
    for (const TypeRates& r : profile.types)
        std::printf("| %-6s | %16.1f | %18.1f | %20.0f |\n", std::string(traits(r.type).name).c_str(), profile.gemv_gbps(r.type, all),
                    profile.expert_gemv_gbps(r.type, all), profile.gemm_gflops(r.type, all));
    std::printf("\nmeasured in %.1f s\n", profile.measure_seconds);
    return 0;
}

int plan(const PlanFlags& f) {
    if (f.remeasure && f.model_path.empty() && f.preset.empty()) return show_machine(f);
    if (f.model_path.empty() == f.preset.empty())
        throw CLI::ValidationError("-m/--preset", "give exactly one of -m MODEL or --preset NAME");
    if (!f.preset.empty() && !find_preset(f.preset)) {
        std::vector<std::string> names;
        for (const SynthPreset& p : synth_presets()) names.push_back(p.name);
        throw CLI::ValidationError("--preset", "unknown preset '" + f.preset + "' (known: " + join_names(names) + ")");
    }
    if (!f.type.empty() && !find_recipe(f.type))
        throw CLI::ValidationError("--type", "unknown type '" + f.type + "' (known: " + join_names(recipe_names()) + ")");
    if (f.fit_gb <= 0 && !f.preset.empty() && f.type.empty())
        throw CLI::ValidationError("--type", "a preset needs --type TYPE (or --fit RAM_GB to compare every type)");
    if (f.target_tps > 0 && f.fit_gb <= 0) throw CLI::ValidationError("--target-tps", "only applies with --fit RAM_GB");
    if (!f.machine.empty() && f.remeasure) throw CLI::ValidationError("--machine", "predicts for another machine; --remeasure measures this one");
    // The note goes to stderr, so --json stays clean.
    const MachineProfile profile = !f.machine.empty() ? profile_from_file(f.machine) : obtain_machine_profile(f.remeasure);
    const Source source = open_source(f);
    return f.fit_gb > 0 ? plan_fit(f, source, profile) : plan_one(f, source, profile);
}

}  // namespace

Action add_plan(CLI::App& app) {
    auto f = std::make_shared<PlanFlags>();
    CLI::App* cmd = app.add_subcommand(
        "plan", "Predict memory, decode speed and time to first token on this machine, and pick a quantization");
    cmd->footer(
        "Examples:\n"
        "  rill plan -m model.gguf                           memory, tokens/s and time to first token\n"
        "  rill plan --preset llama-3.1-8b --type Q4_K_M --ctx 8192 --prompt 2000\n"
        "  rill plan --preset llama-3.1-8b --fit 8           which quantization fits in 8 GB, and how fast\n"
        "  rill plan --preset qwen2.5-7b --fit 16 --target-tps 10 --json\n"
        "  rill plan --remeasure                             measure this machine again and show its figures\n"
        "  rill plan --preset llama-3.1-8b --type Q4_K_M --machine server.json   for a machine you do not own\n"
        "How: decode reads every weight once per token, so its speed is the bytes per token over the speed\n"
        "at which rill's kernels stream each weight type; a prompt is compute: its FLOPs over the measured\n"
        "GEMM rate. The rates come from a profile of this machine measured once (under 10 s) and cached;\n"
        "--remeasure refreshes it. Presets: see `rill synth --list`.");
    cmd->add_option("-m,--model", f->model_path, "GGUF model file")->check(CLI::ExistingFile);
    cmd->add_option("--preset", f->preset, "a known model's shape instead of a file (rill synth --list)");
    cmd->add_option("--type", f->type, "quantization type for --preset (e.g. Q4_K_M), or to re-plan -m's file as");
    cmd->add_option("-c,--ctx-size,--ctx", f->ctx, "context length (default: the model's, at most 4096)")
        ->check(CLI::Range(1, 1 << 24));
    cmd->add_option("-p,--prompt", f->prompt, "prompt length for the time to first token")
        ->capture_default_str()->check(CLI::Range(1, 1 << 24));
    cmd->add_option("-t,--threads", f->threads, "predict at this thread count (default: the best one)")->check(CLI::Range(1, 1024));
    f->kv.add_to(*cmd);
    cmd->add_option("--ubatch", f->ubatch, "prompt tokens per forward pass")->capture_default_str()->check(CLI::Range(1, 1 << 16));
    cmd->add_option("--fit", f->fit_gb, "RAM in GB (1e9 bytes) the model may use: list every type, recommend one")
        ->check(CLI::Range(0.001, 1e6));
    cmd->add_option("--target-tps", f->target_tps, "with --fit: also require this decode speed")->check(CLI::Range(0.001, 1e6));
    cmd->add_flag("--json", f->json, "print JSON instead of text");
    cmd->add_flag("--remeasure", f->remeasure, "measure this machine again and refresh the cached profile");
    cmd->add_option("--machine", f->machine,
                    "predict for another machine: a profile from `rill plan --remeasure --json` run there, or a spec "
                    "{\"cores\", \"read_gbps\", \"peak_gflops\": {\"f32\", \"bf16\", \"int8\"}, \"kernels\"} (README, Planning)")
        ->check(CLI::ExistingFile);
    return [f] { return plan(*f); };
}

}  // namespace rill::cli
