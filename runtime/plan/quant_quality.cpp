#include "runtime/plan/quant_quality.h"

#include <cmath>

namespace rill {

// ppl_increase: llama.cpp's tools/quantize/quantize.cpp (ggml-org/llama.cpp at 42ea59bc), the figures
// llama-quantize prints per type, measured on Llama-3-8B (F16's on Mistral-7B). IQ4_NL and IQ4_XS
// have no figure there (NaN here); they are placed by the golden weight error, between Q4_K_M and
// Q4_K_S, where their error (7.6e-2) falls between Q4_K's (7.1e-2) and Q4_0's (8.6e-2).
// weight_rel_rmse: ../shared/golden's synth-llama-A.<TYPE>.ffn_down.f32 against the F32 file's, over
// the F32 values' RMS; the _K_M mixes store that tensor one type up (Q4_K_M: Q4_K, Q5_K_M: Q5_K), and
// the files missing there (_K_S, Q3_K_L, Q3_K_S) take their base type's single-type figure where
// one exists, else NaN.
std::span<const QuantQuality> quant_quality_table() {
    constexpr double unknown = NAN;
    static const QuantQuality table[] = {
        {"F16", 0.0020, 2.0737e-04},   {"Q8_0", 0.0026, 5.3525e-03},  {"Q6_K", 0.0217, 1.7762e-02},
        {"Q5_K_M", 0.0569, 3.6077e-02}, {"Q5_K_S", 0.1049, unknown},   {"Q5_1", 0.1062, 3.7744e-02},
        {"Q5_0", 0.1316, 4.2665e-02},  {"Q4_K_M", 0.1754, 7.1189e-02}, {"IQ4_NL", unknown, 7.6160e-02},
        {"IQ4_XS", unknown, 7.6760e-02}, {"Q4_K_S", 0.2689, unknown},  {"Q4_1", 0.4511, 7.7967e-02},
        {"Q4_0", 0.4685, 8.6003e-02},  {"Q3_K_L", 0.5562, unknown},    {"Q3_K_M", 0.6569, unknown},
        {"Q3_K_S", 1.6321, unknown},   {"Q2_K", 3.5199, 2.9630e-01},
    };
    return table;
}

}  // namespace rill
