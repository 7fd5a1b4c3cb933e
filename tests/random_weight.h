// A weight matrix of seeded random rows in one type, laid out as the model loader leaves it
// (interleaved where the type has group kernels), with its exactly dequantized values.
#pragma once
#include <cstdint>
#include <vector>

#include "numeric.h"
#include "quant/interleave.h"
#include "quant/quantize.h"
#include "runtime/model/model.h"
#include "sample_blocks.h"

namespace rill::test {

struct RandomWeight {
    std::vector<uint8_t> bytes;
    std::vector<float> values;  // rows × cols, dequantized by the scalar reference
    GgufTensor tensor;
    Weight weight;

    // Row r is random_row(type, cols, first_seed + r): quantized from normal_floats(cols, first_seed + r)
    // where rill quantizes the type.
    RandomWeight(TensorType type, size_t rows, size_t cols, uint32_t first_seed)
        : bytes(row_bytes(type, cols) * rows), values(rows * cols) {
        const size_t stride = row_bytes(type, cols);
        for (size_t r = 0; r < rows; ++r) {
            random_row(type, cols, first_seed + uint32_t(r), bytes.data() + r * stride);
            dequantize_row(type, bytes.data() + r * stride, values.data() + r * cols, cols);
        }
        tensor.type = type;
        tensor.n_dims = 2;
        tensor.ne = {cols, rows, 1, 1};
        tensor.n_elements = cols * rows;
        tensor.n_bytes = bytes.size();
        tensor.data = bytes.data();
        weight.tensor = &tensor;
        if (can_interleave(type)) {
            interleave_rows(type, bytes.data(), rows, stride);
            weight.interleaved = true;
        }
    }
    RandomWeight(const RandomWeight&) = delete;  // tensor and weight point into this object
    RandomWeight& operator=(const RandomWeight&) = delete;
};

}  // namespace rill::test
