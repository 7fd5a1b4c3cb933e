// An importance matrix and llama-imatrix's two file formats (GGUF, and the legacy .dat), so that files
// interchange with llama.cpp both ways. Per weight matrix (one row per expert for a mixture's 3-D
// weights): the sum over the tokens it saw of each input column's squared activation, and that count.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rill {

struct ImatrixEntry {
    std::vector<float> sums;       // n_mat × columns, matrix (expert) by matrix
    std::vector<int64_t> counts;   // tokens per matrix; a legacy file gives one "ncall" for all
};

struct Imatrix {
    std::map<std::string, ImatrixEntry> entries;  // by weight name, e.g. "blk.0.ffn_down.weight"
    std::vector<std::string> datasets;            // the texts it was computed on
    int32_t chunk_count = 0, chunk_size = 0;
    bool legacy = false;  // read from a .dat file: sums are means times ncall

    // The per-column importance llama-quantize derives: each matrix's mean of x² (1 for a matrix that
    // saw no token); for a legacy file the stored values over ncall. Empty if the name has no entry.
    std::vector<float> importance(const std::string& name) const;
};

// GGUF: general.type "imatrix", imatrix.datasets / chunk_count / chunk_size, and per entry the F32
// tensors "<name>.in_sum2" [columns, n_mat] and "<name>.counts" [1, n_mat].
void write_imatrix_gguf(const Imatrix& m, const std::string& path);
// Legacy: int32 count, then per entry (by name) int32 length, name, int32 ncall, int32 nval and nval
// floats (mean x² times ncall, ncall = the chunks the entry saw), then int32 chunk count and the dataset.
void write_imatrix_legacy(const Imatrix& m, const std::string& path);
// Either format, told apart by content as llama.cpp does; errors name the file and what is wrong.
Imatrix read_imatrix(const std::string& path);

}  // namespace rill
