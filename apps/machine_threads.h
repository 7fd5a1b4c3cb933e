// The machine profile as the CLI uses it: `rill plan` measures it when missing; run, chat, bench and
// serve only read the cache, so they never stall for ten seconds on a first start.
#pragma once
#include <optional>
#include <string>

#include "runtime/plan/machine_profile.h"
#include "runtime/model/model.h"

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

}  // namespace rill::cli
