#include "runtime/make/quantize_model.h"

#include <omp.h>

#include <cmath>
#include <vector>

#include "runtime/base/error.h"
#include "runtime/format/gguf_writer.h"
#include "quant/quantize.h"
#include "runtime/session/session.h"

namespace rill {
namespace {

constexpr size_t kChunkElements = size_t(8) << 20;  // floats converted at once: 32 MiB of scratch

bool is_float_type(TensorType t) { return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16; }

}  // namespace

void write_quantized_rows(GgufWriter& out, TensorType target, size_t n, size_t rows, const RowSource& source,
                          int threads, const std::atomic<bool>* cancel, TypeError& stats,
                          const std::function<void(size_t rows_done)>& on_rows, std::span<const float> importance,
                          size_t rows_per_matrix) {
    const size_t out_row = row_bytes(target, n);
    const size_t chunk_rows = std::max<size_t>(1, kChunkElements / n);
    std::vector<float> original(std::min(chunk_rows, rows) * n), restored(original.size());
    std::vector<uint8_t> packed(std::min(chunk_rows, rows) * out_row);
    std::vector<double> row_error(std::min(chunk_rows, rows));
    for (size_t first = 0; first < rows; first += chunk_rows) {
        if (cancel != nullptr && cancel->load()) throw Error("cancelled");
        const size_t count = std::min(chunk_rows, rows - first);
#pragma omp parallel for num_threads(threads) schedule(static)
        for (long long r = 0; r < (long long)count; ++r) {
            float* src = original.data() + size_t(r) * n;
            float* back = restored.data() + size_t(r) * n;
            uint8_t* dst = packed.data() + size_t(r) * out_row;
            source(first + size_t(r), src);
            const float* weights = importance.empty() ? nullptr : importance.data() + (first + size_t(r)) / rows_per_matrix * n;
            quantize_row(target, src, dst, n, weights);
            dequantize_row(target, dst, back, n);
            double e = 0;
            for (size_t i = 0; i < n; ++i) {
                const double d = double(back[i]) - double(src[i]);
                e += d * d;
            }
            row_error[size_t(r)] = e;
        }
        for (size_t r = 0; r < count; ++r) stats.squared_error += row_error[r];
        out.write_data(std::span(packed.data(), count * out_row));
        if (on_rows) on_rows(first + count);
    }
}

QuantizeSummary quantize_model(const GgufFile& input, const std::string& output_path, const QuantizeOptions& options) {
    QuantizeSummary summary;
    summary.bytes_in = input.file_size();
    const int threads = options.n_threads > 0 ? options.n_threads : default_thread_count();
    QuantMix mix = QuantMix::for_file(options.recipe, input, options.pure, options.importance != nullptr);
    const QuantizeImportance* imatrix = options.importance;

    GgufWriter out(output_path, input.alignment());
    for (const auto& [key, value] : input.metadata()) {
        if (key == "general.alignment") continue;  // the writer sets it
        if (key == "general.file_type") continue;
        if (options.importance && key.rfind("quantize.imatrix.", 0) == 0) continue;  // this run's, set below
        out.set_value(key, value);
    }
    out.set_u32("general.file_type", options.recipe.file_type);
    if (imatrix) {
        out.set_string("quantize.imatrix.file", imatrix->file);
        if (!imatrix->dataset.empty()) out.set_string("quantize.imatrix.dataset", imatrix->dataset);
        out.set_u32("quantize.imatrix.entries_count", uint32_t(imatrix->by_name.size()));
        if (imatrix->chunks > 0) out.set_u32("quantize.imatrix.chunks_count", uint32_t(imatrix->chunks));
    }

    std::vector<TensorType> targets;
    std::vector<const std::vector<float>*> importance;  // per tensor: its columns' importance, or null
    QuantizeProgress progress;
    for (const GgufTensor& t : input.tensors()) {
        const TensorType target = mix.choose(t);
        if (!can_quantize(target) && target != t.type)
            throw Error("cannot write tensor type " + std::string(traits(target).name));
        const std::vector<float>* found = nullptr;
        if (imatrix && target != t.type) {
            if (const auto it = imatrix->by_name.find(t.name); it != imatrix->by_name.end()) {
                const uint64_t expected = t.ne[0] * t.ne[2];
                if (it->second.size() == expected) found = &it->second;
                else if (t.name != "token_embd.weight")  // llama.cpp ignores a mismatched embedding entry
                    throw Error(imatrix->file + ": '" + t.name + "' has " + std::to_string(it->second.size()) +
                                " importance values, the tensor's rows " + std::to_string(expected) + " (an imatrix of another model?)");
            }
        }
        if (!found && target != t.type && tensor_needs_imatrix(t.name, target, options.recipe))
            throw Error("tensor " + t.name + " would be " + std::string(traits(target).name) +
                        ", which needs an importance matrix" + (imatrix ? " and " + imatrix->file + " has none for it" : ": make one with `rill imatrix` and pass --imatrix FILE"));
        // ggml's IQ2_XXS, IQ2_XS and IQ1_S quantizers cannot run without one at all (llama-quantize aborts).
        if (!found && target != t.type && needs_importance(target))
            throw Error("tensor " + t.name + " would be " + std::string(traits(target).name) +
                        ", which cannot be written without importance values for it" +
                        (imatrix ? " (" + imatrix->file + " has none: token_embd never has any; use a mix rather than --pure)" : ""));
        importance.push_back(found);
        if (tensor_is_quantizable(t) && !is_float_type(t.type) && target != t.type) summary.requantized = true;
        targets.push_back(target);
        out.add_tensor(t.name, target, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
        progress.bytes_total += t.n_bytes;
    }
    progress.tensors_total = input.tensors().size();
    out.begin_data();

    for (size_t k = 0; k < input.tensors().size(); ++k) {
        const GgufTensor& t = input.tensors()[k];
        const TensorType target = targets[k];
        TypeError& stats = summary.per_type[std::string(traits(target).name)];
        ++stats.tensors;
        stats.elements += t.n_elements;
        const size_t n = size_t(t.ne[0]);
        const size_t rows = size_t(t.n_rows());
        const size_t out_row = row_bytes(target, n);
        stats.bytes += out_row * rows;

        if (target == t.type) {  // nothing to convert: copy the bytes as they are
            out.write_data(std::span(t.data, t.n_bytes));
        } else {
            const uint64_t before = progress.bytes_done;
            write_quantized_rows(
                out, target, n, rows,
                [&](size_t row, float* dst) { dequantize_row(t.type, t.data + row * t.row_bytes(), dst, n); }, threads,
                options.cancel, stats, [&](size_t done) {
                    progress.bytes_done = before + done * t.row_bytes();
                    if (options.on_progress) options.on_progress(progress);
                },
                importance[k] ? std::span<const float>(*importance[k]) : std::span<const float>(), size_t(t.ne[1]));
            progress.bytes_done = before;
        }
        progress.bytes_done += t.n_bytes;
        ++progress.tensors_done;
        if (options.on_progress) options.on_progress(progress);
    }
    out.finish();
    summary.bytes_out = GgufFile::open(output_path).file_size();
    return summary;
}

}  // namespace rill
