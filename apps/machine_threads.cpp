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

std::shared_ptr<const GemmTable> calibrated_gemm_table(const Model& model, int n_threads) {
    const bool tty = ::isatty(STDERR_FILENO);
    bool shown = false;
    auto table = obtain_gemm_table(matmul_types(model), n_threads, gemm_calibration_path(), [&](const std::string& line) {
        if (line.rfind("warning:", 0) == 0) {
            std::fprintf(stderr, "%s%s\n", shown ? "\r\033[K" : "", line.c_str());
            shown = false;
        } else if (tty) {
            std::fprintf(stderr, "\r%s\033[K", line.c_str());
            shown = true;
        }
    });
    if (shown) std::fprintf(stderr, "\r\033[K");
    return table;
}

nlohmann::ordered_json gemm_choices_json(const Model& model, const SessionOptions& options, int n_tokens) {
    const simd::KernelPath path = options.kernels ? *options.kernels : simd::default_kernel_path();
    const OnednnGemmPtr onednn = make_onednn_gemm(1);
    const bool bf16 = onednn_has_bf16(*onednn);
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const TensorType type : matmul_types(model)) {
        const GemmBackend b = choose_gemm(options.gemm, type, n_tokens, kGemmMinTokens, path, bf16, options.gemm_table.get());
        std::string precision, kernel, why;
        switch (b) {
            case GemmBackend::Native:
                precision = type == TensorType::F32 || type == TensorType::F16 || type == TensorType::BF16 ? "float32 activations"
                                                                                                          : "8-bit activations";
                kernel = "rill " + std::string(simd::kernel_path_name(path)) + " decode kernels";
                break;
            case GemmBackend::Int8:
                precision = "8-bit activations";
                kernel = "rill int8 GEMM (AVX-512 VNNI)";
                break;
            case GemmBackend::Amx:
                precision = "bfloat16 weights and activations, float32 sums";
                kernel = "rill AMX bf16 tiles";
                break;
            case GemmBackend::OnednnBf16:
            case GemmBackend::Onednn: {
                const bool half = b == GemmBackend::OnednnBf16;
                precision = half ? "bfloat16 weights and activations, float32 sums" : "float32";
                kernel = "oneDNN " + onednn_kernel_name(*onednn, 0, GemmShape{n_tokens, 256, 2048}, half);
                break;
            }
            case GemmBackend::Openblas:
                precision = "float32";
                kernel = "OpenBLAS sgemm";
                break;
            case GemmBackend::Auto: break;
        }
        size_t bucket = 0;
        const GemmCalibration* measured = options.gemm_table ? options.gemm_table->find(type) : nullptr;
        const auto calibrated = options.gemm_table ? options.gemm_table->choice(type, n_tokens, &bucket) : std::nullopt;
        if (options.gemm != GemmBackend::Auto) why = "forced by --gemm";
        else if (n_tokens < kGemmMinTokens) why = "batch under " + std::to_string(kGemmMinTokens) + " tokens: the decode kernels";
        else if (measured && calibrated && *calibrated == b)
            why = "calibrated: fastest of " + std::to_string(measured->candidates[bucket]) + " backends at " +
                  std::to_string(kCalibrationBatches[bucket]) + " tokens (" + std::to_string(int(measured->gflops[bucket] + 0.5)) +
                  " GFLOP/s, " + std::to_string(options.gemm_table->n_threads) + " threads)";
        else why = "rule: no calibration for this type here";
        out.push_back({{"type", std::string(traits(type).name)}, {"tokens", n_tokens}, {"backend", std::string(gemm_backend_name(b))},
                       {"precision", precision}, {"kernel", kernel}, {"why", why}});
    }
    return out;
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
