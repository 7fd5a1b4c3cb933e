// Auto's prompt backends, measured rather than assumed: per weight type, every backend that can run it
// here is timed at each of kCalibrationBatches on a 2048-square matrix at the prompt's thread count,
// and the fastest is kept (runtime/compute/gemm_choice.h); for F16 and BF16 also which form of the
// decode kernel streams faster. A model's types are measured on first use
// (about a third of a second each) and cached beside the machine profile; the cache is measured again
// when the CPU, the kernel path, oneDNN's or OpenBLAS's version, or this measurement changes.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/compute/gemm_choice.h"
#include "runtime/model/model.h"
#include "simd/gemv.h"

namespace rill {

// Bumped whenever what is measured or how changes, or a backend's kernels change enough to move the
// choice, so an old cache is measured again.
// 2: the int8 GEMM takes Q4_K; 3: the amx backend; 4: decode's F16/BF16 row form (rows_ahead);
// 5: the native Q4_K and Q6_K kernels work across eight rows (about twice and 1.2x the rate);
// 6: the F16/BF16 rows' ahead form asks 16 KiB ahead into L2 (was 8 KiB into L1)
inline constexpr int kGemmCalibrationVersion = 6;

// What a cached calibration must match to be used.
struct CalibrationKey {
    int version = kGemmCalibrationVersion;
    std::string cpu;
    int logical_cores = 0;
    std::string kernels;    // the kernel path
    std::string libraries;  // oneDNN's and OpenBLAS's versions
    bool operator==(const CalibrationKey&) const = default;
};
CalibrationKey calibration_key_here();

struct GemmCalibrationCache {
    CalibrationKey key;
    std::vector<GemmTable> tables;  // one per thread count measured
};

// The backends auto may choose from for a type on this path (bf16: oneDNN has a real bf16 matmul here).
std::vector<GemmBackend> calibration_candidates(TensorType type, simd::KernelPath path, bool bf16);
// Times every candidate at every calibrated batch size; rows × cols is the probe matrix. Where the
// type's decode kernel has two forms, times both streaming a matrix far larger than the last-level
// cache (GemmCalibration::rows_ahead).
GemmCalibration calibrate_gemm_type(TensorType type, simd::KernelPath path, int n_threads, int rows = 2048, int cols = 2048);

// The weight types a model's matrix products read (what the prompt multiplies).
std::vector<TensorType> matmul_types(const Model& model);

nlohmann::json to_json(const GemmCalibrationCache& cache);
// Throws rill::Error naming the field when the JSON is not a calibration.
GemmCalibrationCache calibration_from_json(const nlohmann::json& j);

// Beside the machine profile: $RILL_CACHE_DIR/gemm.json and so on (machine_profile_path()).
std::string gemm_calibration_path();

// The cached table for n_threads, with the types it lacks measured now (status hears a line per type)
// and saved back; a cache for another machine, kernel path or library version is replaced. A cache
// that cannot be written leaves the table good for this run (warning through status).
// With measure_missing false nothing is measured or written: the cached choices alone (for `rill info`).
std::shared_ptr<const GemmTable> obtain_gemm_table(std::span<const TensorType> types, int n_threads, const std::string& path,
                                                   const std::function<void(const std::string&)>& status = {},
                                                   bool measure_missing = true);

}  // namespace rill
