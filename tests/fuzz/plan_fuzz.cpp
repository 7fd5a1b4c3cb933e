// The planner's files on untrusted input: a machine profile (machine.json), a prompt-backend
// calibration (gemm.json) and a machine spec (`rill plan --machine`), all JSON a user may edit or
// download. Each is read as all three; errors are rill::Errors, and whatever reads must predict
// without crashing or hanging.
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/base/error.h"
#include "runtime/plan/gemm_calibration.h"
#include "runtime/plan/machine_spec.h"
#include "runtime/plan/plan.h"

namespace {

// A small dense model's shape, to predict with whatever profile was read.
const rill::ModelShape& shape() {
    static const rill::ModelShape s = rill::shape_of_preset(*rill::find_preset("tiny"), *rill::find_recipe("Q4_K_M"));
    return s;
}

void predict_with(const rill::MachineProfile& p) {
    for (const int t : p.thread_counts) {
        (void)rill::predict_decode(shape(), p, t, 100);
        (void)rill::predict_prefill(shape(), p, t, 600, 512);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const nlohmann::json j = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), nullptr, false);
    if (j.is_discarded()) return 0;
    try {
        predict_with(rill::profile_from_json(j));
    } catch (const rill::Error&) {
    }
    try {
        predict_with(rill::profile_from_spec(j));
    } catch (const rill::Error&) {
    }
    try {
        const rill::GemmCalibrationCache cache = rill::calibration_from_json(j);
        for (const rill::GemmTable& t : cache.tables)
            for (const int n : {1, 16, 100, 512, 100000}) (void)t.choice(rill::TensorType::Q4_K, n);
    } catch (const rill::Error&) {
    }
    return 0;
}
