// Auto's choice of prompt backend as measured on this machine (runtime/plan/gemm_calibration.h), not
// assumed: per weight type, the fastest backend at each of a few batch sizes.
#pragma once
#include <array>
#include <optional>
#include <vector>

#include "quant/tensor_type.h"
#include "runtime/compute/gemm.h"

namespace rill {

// The batch sizes calibrated; a batch takes the choice of the largest of them it reaches.
inline constexpr std::array<int, 5> kCalibrationBatches = {16, 32, 64, 128, 512};

struct GemmCalibration {
    TensorType type;
    std::array<GemmBackend, kCalibrationBatches.size()> best;  // per batch size
    std::array<double, kCalibrationBatches.size()> gflops;     // the winner's rate there
    std::array<int, kCalibrationBatches.size()> candidates;    // how many backends were timed there
    // Decode: the row kernel that asks for weights ahead (simd::GemvKernels::f16_ahead) streamed the
    // type faster from memory here; false where the type has one form.
    bool rows_ahead = false;
};

struct GemmTable {
    int n_threads = 0;  // the thread count the backends were timed at
    std::vector<GemmCalibration> types;

    const GemmCalibration* find(TensorType type) const;
    // The backend measured fastest at the largest calibrated batch size not above n_tokens, and that
    // size's index; nullopt when the type was not measured or n_tokens is below the smallest size.
    std::optional<GemmBackend> choice(TensorType type, int n_tokens, size_t* bucket = nullptr) const;
};

}  // namespace rill
