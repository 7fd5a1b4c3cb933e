#include "machine_threads.h"

#include <unistd.h>

#include <cstdio>

#include "runtime/plan/budget.h"
#include "runtime/base/error.h"
#include "runtime/plan/plan.h"
#include "runtime/session/session.h"

namespace rill::cli {

MachineProfile obtain_machine_profile(bool remeasure) {
    const std::string path = machine_profile_path();
    std::string why;
    if (!remeasure)
        if (auto cached = load_machine_profile(path, &why)) return *cached;
    const bool tty = ::isatty(STDERR_FILENO);
    std::fprintf(stderr, "measuring this machine (under 10 s, once; cached in %s)%s%s\n", path.c_str(),
                 why.empty() || remeasure ? "" : ": ", remeasure ? "" : why.c_str());
    MachineProfile profile = measure_machine([&](const std::string& step) {
        if (tty) std::fprintf(stderr, "\r  %s\033[K", step.c_str());
    });
    if (tty) std::fprintf(stderr, "\r\033[K");
    try {
        save_machine_profile(profile, path);
    } catch (const Error& e) {
        std::fprintf(stderr, "warning: %s; the profile is used for this run only\n", e.what());
    }
    return profile;
}

ThreadChoice choose_threads(const Model& model, int threads_flag) {
    if (threads_flag > 0) return {threads_flag, threads_flag, "-t"};
    std::string why;
    const auto profile = load_machine_profile(machine_profile_path(), &why);
    if (!profile) {
        const int all = default_thread_count();
        return {all, all, "every core (no machine profile: `rill plan -m MODEL` measures one)"};
    }
    const ThreadPlan plan = plan_threads(shape_of(model), *profile);
    return {plan.decode, plan.prefill, "machine profile " + machine_profile_path()};
}

}  // namespace rill::cli
