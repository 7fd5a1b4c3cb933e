// What this machine can do, measured with rill's own kernels: read bandwidth and the float multiply-add
// peak at several thread counts, and per weight type the decode kernels' GB/s and the prompt path's
// GFLOP/s. `rill plan` turns it and a model's budget (budget.h) into predictions; it is measured once
// (under ten seconds) and cached as JSON.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/tensor_type.h"

namespace rill {

// Bumped whenever what is measured or how changes, so an old cache is measured again.
// 6: the int8 GEMM, and prompt attention on oneDNN on the avx512 path; 7: medians of rounds; 8: prompt
// probe on the calibrated backend; 9: the Q4_K and Q6_K decode kernels work across eight rows
inline constexpr int kMachineProfileVersion = 9;
// Prompt tokens per GEMM in the measurement: the default micro-batch, so dequantizing a weight panel
// is shared by as many tokens as in a real prompt.
inline constexpr int kProfileBatch = 512;
// A mixture's decode step as measured: one token times eight experts' gate and up matrices of
// kExpertRows × kExpertCols in one call, then their down matrices, kExpertCols × kExpertRows, in
// another (Qwen3-30B-A3B's shapes), every expert a different stretch of memory.
inline constexpr int kExpertRows = 768, kExpertCols = 2048, kExpertsPerCall = 8;
// The head sizes attention is measured at.
inline constexpr int kAttentionHeadDims[2] = {64, 128};
// The decode call probe (decode_call_us): matrices a tinyllama layer's size, in a run of this many.
inline constexpr int kCallProbeRows = 512, kCallProbeCols = 4096, kCallProbes = 16;

struct CacheLevel {
    int level = 0;
    std::string kind;  // "Data", "Instruction", "Unified"
    uint64_t bytes = 0;
    int shared_by = 1;  // logical CPUs sharing one instance
};

struct TypeRates {
    TensorType type;
    std::vector<double> gemv_gbps;    // one token: weight bytes per second / 1e9, per thread count
    std::vector<double> gemm_gflops;       // kProfileBatch tokens: 2·rows·cols·tokens per second / 1e9, rows of 2048
    std::vector<double> gemm_wide_gflops;  // the same with rows of 8192
    std::vector<double> expert_gemv_gbps;  // a mixture's chosen experts (kExpertRows): weight bytes per second / 1e9
};

struct MachineProfile {
    int version = kMachineProfileVersion;
    std::string cpu;     // /proc/cpuinfo's model name
    std::string kernels;  // the decode kernel path these rates were measured on
    int logical_cores = 1;
    int physical_cores = 1;
    std::vector<CacheLevel> caches;
    std::string measured_at;  // UTC, ISO 8601; "spec" for a profile made from a machine spec (machine_spec.h)
    std::string source;       // the file it was read from, when not this machine's cache (not saved)
    double measure_seconds = 0;
    std::vector<int> thread_counts;  // ascending; every per-thread vector below follows it
    std::vector<double> read_gbps;
    std::vector<double> peak_gflops;  // f32 fused multiply-add, every thread busy
    std::vector<TypeRates> types;
    // Attention, per thread count, at head sizes 64 and 128 ([0] and [1]): a decode step's cost per
    // query head and cached position (F16 cache, in cache), and a 512-token prompt's GFLOP/s.
    std::vector<double> decode_attention_ns[2];
    std::vector<double> prompt_attention_gflops[2];
    // One decode product of a kCallProbeRows × kCallProbeCols Q8_0 matrix that starts cold in memory,
    // in a run of such products over different matrices, per thread count. Beyond its bytes at the
    // streaming rate it is what a product costs a layer: the team's meeting, the prefetchers' ramp.
    std::vector<double> decode_call_us;

    // Between measured thread counts, linear; past the last, the last value.
    double read_bandwidth(int n_threads) const;
    double peak(int n_threads) const;
    // nullptr when the type was not measured.
    const TypeRates* rates_of(TensorType type) const;
    // 0 when the type was not measured.
    double gemv_gbps(TensorType type, int n_threads) const;
    double expert_gemv_gbps(TensorType type, int n_threads) const;
    // For a weight whose rows hold `cols` values (the measurement's row lengths are 2048 and 8192).
    double gemm_gflops(TensorType type, int n_threads, int cols = 2048) const;
    uint64_t last_level_cache_bytes() const;
    // Between and beyond the two measured head sizes, linear in the head size; 0 when not measured.
    double decode_attention_seconds_per_head_position(int head_dim, int n_threads) const;
    double prompt_attention_gflops_at(int head_dim, int n_threads) const;
    // What a decode product costs beyond its bytes at `type`'s streaming rate: the call probe's time
    // less its bytes at Q8_0's rate; 0 when not measured.
    double decode_call_seconds(int n_threads) const;
};

// What the machine is, without measuring: CPU name, cores, caches, kernel path.
MachineProfile describe_machine();
// Measures everything; `status` hears a short line before each step.
MachineProfile measure_machine(const std::function<void(const std::string&)>& status = {});

nlohmann::json to_json(const MachineProfile& profile);
// Throws rill::Error naming the field when the JSON is not a profile.
MachineProfile profile_from_json(const nlohmann::json& j);

// $RILL_CACHE_DIR, else $XDG_CACHE_HOME/rill, else ~/.cache/rill; then machine.json.
std::string machine_profile_path();
// The cached profile if it exists, parses, and was measured on this CPU and kernel path by this
// version of the measurement; otherwise nullopt, with the reason in *why when given.
std::optional<MachineProfile> load_machine_profile(const std::string& path, std::string* why = nullptr);
void save_machine_profile(const MachineProfile& profile, const std::string& path);

}  // namespace rill
