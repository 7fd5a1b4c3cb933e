// rill: run GGUF language models on the CPU.
#include <cstdio>
#include <new>
#include <vector>

#include "commands.h"
#include "kv_flags.h"
#include "runtime/base/error.h"

int main(int argc, char** argv) {
    CLI::App app{"rill: run GGUF language models on the CPU.\n"
                 "Weights stay quantized; prompts run as one batch, tokens stream as they are generated.",
                 "rill"};
    app.require_subcommand(1, 1);
    app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string(e.what()) + "\n"; });
    app.footer("Run 'rill COMMAND --help' for a command's flags, e.g. 'rill run --help'.");

    const std::pair<const char*, rill::cli::Action> commands[] = {
        {"run", rill::cli::add_run(app)},
        {"eval", rill::cli::add_eval(app)},
        {"info", rill::cli::add_info(app)},
        {"tokenize", rill::cli::add_tokenize(app)},
        {"detokenize", rill::cli::add_detokenize(app)},
        {"chat", rill::cli::add_chat(app)},
        {"template", rill::cli::add_template(app)},
        {"quantize", rill::cli::add_quantize(app)},
        {"synth", rill::cli::add_synth(app)},
        {"bench", rill::cli::add_bench(app)},
        {"serve", rill::cli::add_serve(app)},
        {"plan", rill::cli::add_plan(app)},
        {"perplexity", rill::cli::add_perplexity(app)},
        {"imatrix", rill::cli::add_imatrix(app)},
    };

    try {
        std::vector<const char*> args(argv, argv + argc);
        for (const char*& a : args) a = rill::cli::spell_out_kv_flag(a);
        app.parse(int(args.size()), args.data());
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "rill: error: %s (see 'rill --help')\n", e.what());
        return 2;
    }
    try {
        for (const auto& [name, action] : commands)
            if (app.got_subcommand(name)) return action();
        return 2;
    } catch (const CLI::ParseError& e) {  // a flag value the command itself rejected
        std::fprintf(stderr, "rill: error: %s\n", e.what());
        return 2;
    } catch (const rill::Error& e) {
        std::fprintf(stderr, "rill: error: %s\n", e.what());
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "rill: error: out of memory\n");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rill: error: %s\n", e.what());
    }
    return 1;
}
