// Collecting an importance matrix as llama-imatrix does: per weight matrix (per expert of a mixture),
// the sum over the tokens it multiplied of each input column's square, and how many tokens that was.
// The sums run in double here (llama.cpp's in float) and are stored as float, as its files hold them.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/quality/imatrix_file.h"

namespace rill {

class ImatrixCollector {
public:
    // n_tokens rows of `cols` floats went into matrix `matrix` of the n_matrices that share `name` (an
    // expert of a 3-D weight; 0 of 1 for a plain matrix). Throws Error on a non-finite input, which
    // llama.cpp also refuses, or on a shape that disagrees with the name's earlier calls.
    void add(const std::string& name, int matrix, int n_matrices, const float* in, int n_tokens, int cols);

    // The matrices seen so far, with the run's description.
    Imatrix result(const std::vector<std::string>& datasets, int chunk_count, int chunk_size) const;
    size_t size() const { return sums_.size(); }

private:
    struct Sums {
        std::vector<double> squares;   // n_matrices × cols
        std::vector<int64_t> tokens;   // per matrix
    };
    std::map<std::string, Sums> sums_;
};

// A legacy (.dat) file's entries as token sums, as llama-imatrix converts one: its per-chunk values
// and ncall times chunk_size, so a GGUF written from it gives the same importance.
Imatrix as_token_sums(const Imatrix& legacy, int chunk_size);

}  // namespace rill
