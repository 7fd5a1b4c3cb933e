// How much each quantization costs in quality, from sources outside rill: the perplexity increase
// llama.cpp publishes per type, and the weight error measured on the shared golden models.
#pragma once
#include <span>

namespace rill {

struct QuantQuality {
    const char* recipe;        // a quant_mix.h recipe name
    double ppl_increase;     // over F16 on Llama-3-8B, as llama.cpp's llama-quantize lists it; NaN: not listed
    double weight_rel_rmse;  // golden synth-llama-A blk.0.ffn_down vs its F32 file over the F32 RMS; NaN: no file
};

// Best quality first.
std::span<const QuantQuality> quant_quality_table();

}  // namespace rill
