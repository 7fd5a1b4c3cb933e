#include "runtime/compute/gemm_choice.h"

namespace rill {

const GemmCalibration* GemmTable::find(TensorType type) const {
    for (const GemmCalibration& c : types)
        if (c.type == type) return &c;
    return nullptr;
}

std::optional<GemmBackend> GemmTable::choice(TensorType type, int n_tokens, size_t* bucket) const {
    const GemmCalibration* c = find(type);
    if (c == nullptr || n_tokens < kCalibrationBatches[0]) return std::nullopt;
    size_t i = 0;
    while (i + 1 < kCalibrationBatches.size() && kCalibrationBatches[i + 1] <= n_tokens) ++i;
    if (bucket != nullptr) *bucket = i;
    return c->best[i];
}

}  // namespace rill
