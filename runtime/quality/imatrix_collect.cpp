#include "runtime/quality/imatrix_collect.h"

#include <cmath>

#include "runtime/base/error.h"

namespace rill {

void ImatrixCollector::add(const std::string& name, int matrix, int n_matrices, const float* in, int n_tokens, int cols) {
    if (n_tokens <= 0) return;
    Sums& s = sums_[name];
    if (s.tokens.empty()) {
        s.squares.assign(size_t(n_matrices) * size_t(cols), 0.0);
        s.tokens.assign(size_t(n_matrices), 0);
    }
    if (s.squares.size() != size_t(n_matrices) * size_t(cols) || s.tokens.size() != size_t(n_matrices) || matrix < 0 || matrix >= n_matrices)
        throw Error("imatrix: " + name + " was multiplied with inputs of two shapes");
    double* squares = s.squares.data() + size_t(matrix) * size_t(cols);
    for (int t = 0; t < n_tokens; ++t) {
        const float* x = in + size_t(t) * size_t(cols);
        for (int j = 0; j < cols; ++j) {
            if (!std::isfinite(x[j])) throw Error("imatrix: " + name + " was given a non-finite input (the model's activations overflowed)");
            squares[j] += double(x[j]) * double(x[j]);
        }
    }
    s.tokens[size_t(matrix)] += n_tokens;
}

Imatrix ImatrixCollector::result(const std::vector<std::string>& datasets, int chunk_count, int chunk_size) const {
    Imatrix m;
    m.datasets = datasets;
    m.chunk_count = chunk_count;
    m.chunk_size = chunk_size;
    for (const auto& [name, s] : sums_) {
        ImatrixEntry& e = m.entries[name];
        e.sums.assign(s.squares.begin(), s.squares.end());
        e.counts = s.tokens;
    }
    return m;
}

Imatrix as_token_sums(const Imatrix& legacy, int chunk_size) {
    if (!legacy.legacy) return legacy;
    Imatrix m = legacy;
    m.legacy = false;
    m.chunk_size = chunk_size;
    for (auto& [name, e] : m.entries) {
        for (float& v : e.sums) v *= float(chunk_size);
        // Legacy files keep one ncall for the whole entry; spread it over its matrices as llama.cpp does
        // (one count, so a mixture's entry gets a single count for all experts).
        for (int64_t& c : e.counts) c *= chunk_size;
    }
    return m;
}

}  // namespace rill
