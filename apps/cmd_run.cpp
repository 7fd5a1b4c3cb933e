// rill run: generate text from a prompt, streaming it to stdout, with timings on stderr.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "commands.h"
#include "model_flags.h"
#include "sampling_flags.h"
#include "session_flags.h"
#include "runtime/base/error.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/session/generate.h"
#include "runtime/text/tokenizer.h"

namespace rill::cli {
namespace {

struct RunFlags {
    ModelFlags model;
    std::string prompt;
    std::string prompt_file;
    int n_predict = 128;
    SessionFlags session;
    SamplingFlags sampling;
    bool parse_special = false;
    std::string grammar_file;
    std::string json_schema_file;
};

// The grammar --grammar or --json-schema names, or null for free text.
std::shared_ptr<const grammar::Grammar> output_grammar(const RunFlags& f) {
    std::string gbnf;
    if (!f.grammar_file.empty()) gbnf = read_text_file(f.grammar_file);
    if (!f.json_schema_file.empty()) {
        nlohmann::json schema;
        try {
            schema = nlohmann::json::parse(read_text_file(f.json_schema_file));
        } catch (const nlohmann::json::exception& e) {
            throw Error(f.json_schema_file + " is not JSON: " + e.what());
        }
        gbnf = grammar::json_schema_to_gbnf(schema);
    }
    if (gbnf.empty()) return nullptr;
    return std::make_shared<const grammar::Grammar>(grammar::parse_gbnf(gbnf));
}

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int run(const RunFlags& f) {
    const auto load_start = std::chrono::steady_clock::now();
    const auto model = load_model(f.model.path, f.model.load_options());
    const Vocab vocab = load_vocab(model->file);
    Session session(*model, f.session.options_for(*model));
    const double load_ms = ms_since(load_start);

    const std::string text = f.prompt_file.empty() ? f.prompt : read_text_file(f.prompt_file);
    std::vector<int32_t> prompt = tokenize(vocab, text, {.add_special = true, .parse_special = f.parse_special});
    if (prompt.empty()) throw Error("the prompt is empty and the model has no BOS token to start from");
    if (int(prompt.size()) >= session.n_ctx())
        throw Error("the prompt has " + std::to_string(prompt.size()) + " tokens, which leaves no room in the context of " +
                    std::to_string(session.n_ctx()) + " (raise -c)");

    const SamplingParams sampling = f.sampling.resolved();
    Sampler sampler(sampling);
    std::optional<Constraint> constraint;
    if (auto g = output_grammar(f)) constraint.emplace(vocab, std::move(g), build_vocab_trie(vocab));
    const GenerationStats stats = generate(
        session, vocab, prompt, f.n_predict, sampler,
        [](int32_t, std::string_view piece) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
            return true;
        },
        constraint ? &*constraint : nullptr);
    std::fputc('\n', stdout);
    std::fflush(stdout);

    const int decoded = std::max(0, stats.n_generated - 1);  // the first token comes from the prefill
    std::fprintf(stderr,
                 "\nrill: load %.1f ms | prompt %d tokens | time to first token %.1f ms | prefill %.1f t/s | "
                 "decode %d tokens, %.1f t/s | %s | seed %llu%s\n",
                 load_ms, stats.n_prompt, stats.prefill_ms, stats.n_prompt * 1000.0 / std::max(stats.prefill_ms, 1e-9),
                 stats.n_generated, decoded * 1000.0 / std::max(stats.decode_ms, 1e-9),
                 thread_summary(session.n_threads(), session.n_threads_batch()).c_str(),
                 (unsigned long long)sampling.seed, stats.hit_context ? " | stopped: context full" : "");
    return 0;
}

}  // namespace

Action add_run(CLI::App& app) {
    auto f = std::make_shared<RunFlags>();
    CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt, streamed to stdout as it is produced");
    cmd->footer(
        "Examples:\n"
        "  rill run -m model.gguf -p \"Once upon a time\" -n 64\n"
        "  rill run -m model.gguf -p \"\" -n 200 --temp 0      greedy, from BOS alone\n"
        "  rill run -m model.gguf -p \"A person as JSON:\" --json-schema person.json\n"
        "  rill run -m model.gguf -p \"Yes or no?\" --grammar yesno.gbnf   (llama.cpp's GBNF)\n"
        "Timings (load, time to first token, prefill and decode tokens/s) go to stderr.");
    f->model.add_to(*cmd);
    auto* prompt = cmd->add_option("-p,--prompt", f->prompt, "prompt text (empty: start from BOS alone)");
    cmd->add_option("-f,--file", f->prompt_file, "read the prompt from a file")->excludes(prompt)->check(CLI::ExistingFile);
    cmd->add_option("-n,--n-predict", f->n_predict, "tokens to generate at most")->capture_default_str()->check(CLI::Range(0, 1 << 24));
    f->sampling.add_to(*cmd);
    f->session.add_to(*cmd);
    auto* grammar = cmd->add_option("--grammar", f->grammar_file, "hold the output to a GBNF grammar (llama.cpp's format) read from FILE")
                        ->check(CLI::ExistingFile);
    cmd->add_option("--json-schema", f->json_schema_file, "hold the output to JSON that validates against the JSON Schema in FILE")
        ->check(CLI::ExistingFile)->excludes(grammar);
    cmd->add_flag("--parse-special", f->parse_special, "read control tokens written in the prompt, like <|eot_id|>, as those tokens");
    return [f] { return run(*f); };
}

}  // namespace rill::cli
