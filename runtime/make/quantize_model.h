// Rewrites a GGUF model with its matrices in other tensor types, streaming tensor by tensor so
// memory stays bounded; what the file says about the model is copied unchanged.
#pragma once
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "runtime/format/gguf.h"
#include "runtime/make/quant_mix.h"

namespace rill {

struct QuantizeProgress {
    size_t tensors_done = 0, tensors_total = 0;
    uint64_t bytes_done = 0, bytes_total = 0;  // of the input's tensor data
};

// An importance matrix as the quantizers take it: per weight name, each input column's importance
// (one run of columns per expert for a 3-D weight), and where it came from, recorded in the output as
// llama-quantize records it (quantize.imatrix.*).
struct QuantizeImportance {
    std::map<std::string, std::vector<float>> by_name;
    std::string file, dataset;
    int chunks = 0;
};

struct QuantizeOptions {
    QuantRecipe recipe;
    bool pure = false;  // every matrix gets recipe.base; no mix rules
    const QuantizeImportance* importance = nullptr;  // null: none (the grid types that need one refuse)
    int n_threads = 0;  // 0: every core
    const std::atomic<bool>* cancel = nullptr;
    std::function<void(const QuantizeProgress&)> on_progress;
};

struct TypeError {
    int tensors = 0;
    uint64_t elements = 0;
    uint64_t bytes = 0;
    double squared_error = 0;  // sum over elements of (dequantized - original)^2
    double rmse() const { return elements ? std::sqrt(squared_error / double(elements)) : 0.0; }
};

struct QuantizeSummary {
    uint64_t bytes_in = 0, bytes_out = 0;  // whole files
    std::map<std::string, TypeError> per_type;  // by output type
    bool requantized = false;  // some source matrices were already quantized
};

class GgufWriter;

// Produces one row of floats: row index, then n floats to fill. Called from several threads at once.
using RowSource = std::function<void(size_t row, float* out)>;

// Converts rows to `target` in bounded chunks, in parallel (each row whole on one thread, so the
// bytes do not depend on the thread count), appends them to the writer's current tensor and adds
// the round-trip error to `stats`. `on_rows` is told how many rows are done after each chunk.
// `importance`: empty, or row_length floats per matrix of rows_per_matrix rows (a 3-D weight's experts).
void write_quantized_rows(GgufWriter& out, TensorType target, size_t row_length, size_t rows, const RowSource& source,
                          int n_threads, const std::atomic<bool>* cancel, TypeError& stats,
                          const std::function<void(size_t rows_done)>& on_rows, std::span<const float> importance = {},
                          size_t rows_per_matrix = 0);

// Throws rill::Error (including when cancelled); on any error no output file is left.
QuantizeSummary quantize_model(const GgufFile& input, const std::string& output_path, const QuantizeOptions& options);

}  // namespace rill
