// The machine profile as the CLI uses it: `rill plan` measures it when missing; run, chat, bench and
// serve only read the cache, so they never stall for ten seconds on a first start.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/plan/gemm_calibration.h"
#include "runtime/plan/machine_profile.h"
#include "runtime/model/model.h"
#include "runtime/session/session.h"

namespace rill::cli {

// The cached profile, or one measured now (progress on stderr) and cached; with remeasure, always new.
MachineProfile obtain_machine_profile(bool remeasure);

struct ThreadChoice {
    int decode = 1;
    int prefill = 1;
    std::string source;  // how they were chosen, for the banner and --verbose
};

// -t N for both phases when given; else the plan's counts for this model from the cached profile; else
// every core.
ThreadChoice choose_threads(const Model& model, int threads_flag);

// Auto's measured prompt backends for the model's weight types at n_threads: cached, or calibrated
// now (a third of a second per type, progress on a terminal's stderr) and cached.
std::shared_ptr<const GemmTable> calibrated_gemm_table(const Model& model, int n_threads);

// How each of the model's weight types is multiplied in a batch of n_tokens under these options:
// backend, precision, the kernel (oneDNN's own name for its implementation), and why it was chosen.
nlohmann::ordered_json gemm_choices_json(const Model& model, const SessionOptions& options, int n_tokens);

}  // namespace rill::cli
