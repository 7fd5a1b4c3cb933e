// The rill CLI's subcommands: each registers its flags on the app and runs when chosen.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace rill::cli {

// A subcommand's action, run after parsing succeeded.
using Action = std::function<int()>;

Action add_run(CLI::App& app);
Action add_eval(CLI::App& app);
Action add_info(CLI::App& app);
Action add_tokenize(CLI::App& app);
Action add_detokenize(CLI::App& app);
Action add_chat(CLI::App& app);
Action add_template(CLI::App& app);
Action add_quantize(CLI::App& app);
Action add_synth(CLI::App& app);
Action add_bench(CLI::App& app);
Action add_serve(CLI::App& app);
Action add_plan(CLI::App& app);
Action add_perplexity(CLI::App& app);
Action add_imatrix(CLI::App& app);

}  // namespace rill::cli
